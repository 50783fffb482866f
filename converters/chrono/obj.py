"""A small Wavefront OBJ reader: `v` and `f` lines (plus `o` / `g` groups), polygons fanned
into triangles. Texture / normal indices (v/vt/vn) and negative (relative) indices are accepted;
everything else (vn, vt, usemtl, s, l, ...) is ignored."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from usdphys.errors import UsdphysError


@dataclass
class ObjGroup:
    name: str
    triangles: list = field(default_factory=list)  # (i, j, k) indices into ObjMesh.points


@dataclass
class ObjMesh:
    points: list = field(default_factory=list)
    groups: list = field(default_factory=list)

    @property
    def triangles(self) -> list:
        return [t for g in self.groups for t in g.triangles]


def read_obj(path: str | Path) -> ObjMesh:
    path = Path(path)
    mesh = ObjMesh()
    current = ObjGroup("default")
    mesh.groups.append(current)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsdphysError(f"{path}: cannot read OBJ file: {exc}") from None
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        tag = parts[0]
        try:
            if tag == "v":
                mesh.points.append((float(parts[1]), float(parts[2]), float(parts[3])))
            elif tag in ("o", "g"):
                name = " ".join(parts[1:]) or f"group{len(mesh.groups)}"
                if current.triangles or current.name != "default":
                    current = ObjGroup(name)
                    mesh.groups.append(current)
                else:
                    current.name = name
            elif tag == "f":
                idx = []
                for p in parts[1:]:
                    i = int(p.split("/")[0])
                    i = i - 1 if i > 0 else len(mesh.points) + i
                    if not 0 <= i < len(mesh.points):
                        raise ValueError(f"vertex index {p} out of range")
                    idx.append(i)
                if len(idx) < 3:
                    raise ValueError("a face needs at least 3 vertices")
                for k in range(1, len(idx) - 1):
                    current.triangles.append((idx[0], idx[k], idx[k + 1]))
        except (ValueError, IndexError) as exc:
            raise UsdphysError(f"{path}:{n}: bad OBJ line {line.strip()!r}: {exc}") from None
    mesh.groups = [g for g in mesh.groups if g.triangles]
    if not mesh.points or not mesh.groups:
        raise UsdphysError(f"{path}: OBJ file has no faces")
    return mesh
