"""What `usdphys render` draws, as plain NumPy: triangle meshes and their poses per frame.

usdphys.usd.scene fills a ``RenderScene`` from a result layer (or any stage with time samples);
usdphys.render draws it. The tessellators below turn UsdGeom's implicit shapes into triangles
in the prim's own frame (axis tokens as UsdGeom: the shape's main axis along X, Y or Z).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Segments around a circle and rings from pole to pole: smooth enough at a few hundred pixels,
# few enough that a strip of frames draws in well under a second.
SEGMENTS = 24
RINGS = 12


@dataclass
class SceneMesh:
    """One drawable prim: triangles in the prim's local frame (stage units)."""

    path: str
    vertices: np.ndarray  # (V, 3)
    faces: np.ndarray  # (T, 3) int
    color: np.ndarray  # (3,) RGB in [0, 1]
    moving: bool  # under a body that has time samples (framing uses these)


@dataclass
class RenderScene:
    """meshes and their local-to-world affine maps per frame, column convention
    (world = M[:3, :3] @ local + M[:3, 3]), stage units."""

    meshes: list[SceneMesh]
    transforms: np.ndarray  # (F, M, 4, 4)
    time_codes: np.ndarray  # (F,)
    times: np.ndarray  # (F,) seconds
    up_axis: int  # 0, 1, 2 = X, Y, Z (UsdGeom upAxis: Y or Z)
    meters_per_unit: float = 1.0
    source: str = ""
    skipped: list[str] = field(default_factory=list)  # prims of a kind not drawn (warned)

    def world_vertices(self, frame: int, mesh: int) -> np.ndarray:
        m = self.transforms[frame, mesh]
        return self.meshes[mesh].vertices @ m[:3, :3].T + m[:3, 3]


def _axis_frame(axis: int) -> np.ndarray:
    """Rotation taking the canonical +Z main axis to the given axis (columns: images of x, y, z)."""
    return np.eye(3)[:, [(axis + 1) % 3, (axis + 2) % 3, axis]]


def _revolve(profile: np.ndarray, axis: int, segments: int = SEGMENTS):
    """Surface of revolution of (radius, z) profile points about the main axis; a profile
    point with radius 0 becomes a single pole vertex. Returns (vertices, faces)."""
    ang = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    verts, rings = [], []
    for r, z in profile:
        start = len(verts)
        if r <= 0.0:
            verts.append((0.0, 0.0, z))
            rings.append([start] * segments)
        else:
            verts.extend((r * np.cos(a), r * np.sin(a), z) for a in ang)
            rings.append(list(range(start, start + segments)))
    faces = []
    for a, b in zip(rings[:-1], rings[1:]):
        for s in range(segments):
            t = (s + 1) % segments
            if a[s] != a[t]:
                faces.append((a[s], a[t], b[t]))
            if b[s] != b[t]:
                faces.append((a[s], b[t], b[s]))
    v = np.asarray(verts, float) @ _axis_frame(axis).T
    return v, np.asarray(faces, np.int64).reshape(-1, 3)


def sphere(radius: float):
    th = np.linspace(0.0, np.pi, RINGS + 1)
    ring = radius * np.sin(th)
    ring[[0, -1]] = 0.0  # poles exactly (sin(pi) is 1e-16, a ring with a hole)
    return _revolve(np.stack([ring, -radius * np.cos(th)], 1), 2)


def capsule(radius: float, height: float, axis: int):
    """UsdGeom.Capsule: a cylinder of `height` along the axis with hemispherical caps."""
    th = np.linspace(0.0, 0.5 * np.pi, RINGS // 2 + 1)
    low = np.stack([radius * np.sin(th), -0.5 * height - radius * np.cos(th)], 1)
    high = np.stack([radius * np.sin(th[::-1]), 0.5 * height + radius * np.cos(th[::-1])], 1)
    return _revolve(np.concatenate([low, high]), axis)


def cylinder(radius: float, height: float, axis: int):
    h = 0.5 * height
    return _revolve(np.array([(0.0, -h), (radius, -h), (radius, h), (0.0, h)]), axis)


def cone(radius: float, height: float, axis: int):
    """UsdGeom.Cone: base of `radius` at -height/2, apex at +height/2."""
    h = 0.5 * height
    return _revolve(np.array([(0.0, -h), (radius, -h), (0.0, h)]), axis)


def box(size) -> tuple[np.ndarray, np.ndarray]:
    """A box of edge lengths `size` (3,), centred (UsdGeom.Cube: size, size, size)."""
    h = 0.5 * np.broadcast_to(np.asarray(size, float), (3,))
    corners = np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * h
    quads = ((0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3))
    faces = [(q[0], q[1], q[2]) for q in quads] + [(q[0], q[2], q[3]) for q in quads]
    return corners, np.asarray(faces, np.int64)


def plane(width: float, length: float, axis: int):
    """UsdGeom.Plane: a width x length rectangle whose normal is `axis`."""
    w, l = 0.5 * width, 0.5 * length
    v = np.array([(-w, -l, 0.0), (w, -l, 0.0), (w, l, 0.0), (-w, l, 0.0)]) @ _axis_frame(axis).T
    return v, np.array([(0, 1, 2), (0, 2, 3)], np.int64)


def triangulate(counts, indices) -> np.ndarray:
    """Polygon faces (faceVertexCounts, faceVertexIndices) -> triangles as fans."""
    counts = np.asarray(counts, np.int64)
    indices = np.asarray(indices, np.int64)
    out, k = [], 0
    for n in counts:
        poly = indices[k:k + n]
        out.extend((poly[0], poly[i], poly[i + 1]) for i in range(1, n - 1))
        k += n
    return np.asarray(out, np.int64).reshape(-1, 3)
