"""A result layer (or any stage with time samples) -> usdphys.types.scene.RenderScene.

Which prims are drawn (``geometry``):
  visual     every visible UsdGeom shape of purpose default or render
  collision  every prim with PhysicsCollisionAPI (visible or not)
  auto       visual when the stage has any visual shape, else collision
Sphere, Cube, Capsule, Cylinder, Cone, Plane and Mesh are tessellated in the prim's frame;
other geometry (points, curves, NURBS) is named once in a warning and not drawn. Poses come
from UsdGeom.XformCache at each chosen time code, so the authored scale and every parent
transform are included exactly as usdview would show them.
"""
from __future__ import annotations

import os

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError, warn
from usdphys.types import scene as tess
from usdphys.types.scene import RenderScene, SceneMesh
from usdphys.usd.gfconv import matrix_from_gf
from usdphys.usd.reader.shapes import AXIS_INDEX

GEOMETRY_CHOICES = ("auto", "visual", "collision")
_STATIC_GREY = np.array([0.62, 0.62, 0.62])
# Body colours when the stage authors no displayColor (matplotlib's tab10, without its red:
# tests and users can author red to pick one body out).
_PALETTE = np.array([(0.12, 0.47, 0.71), (1.0, 0.5, 0.05), (0.17, 0.63, 0.17), (0.58, 0.4, 0.74),
                     (0.55, 0.34, 0.29), (0.89, 0.47, 0.76), (0.5, 0.5, 0.5), (0.74, 0.74, 0.13),
                     (0.09, 0.75, 0.81)])


def _tessellate(prim: Usd.Prim):
    """(vertices, faces) of a drawable prim in its own frame, or None for other kinds."""
    path = prim.GetPath().pathString

    def get(name, default):
        a = prim.GetAttribute(name)
        v = a.Get() if a and a.HasValue() else None
        v = default if v is None else v
        if isinstance(v, str):
            return v
        if not np.all(np.isfinite(np.asarray(v, float))):
            raise UsdphysError(f"{path}: {name} = {v} is not finite; cannot draw it")
        return v

    def axis():
        token = str(get("axis", "Z"))
        if token not in AXIS_INDEX:
            raise UsdphysError(f"{path}: axis = {token!r}; expected X, Y or Z")
        return AXIS_INDEX[token]

    if prim.IsA(UsdGeom.Sphere):
        return tess.sphere(float(get("radius", 1.0)))
    if prim.IsA(UsdGeom.Cube):
        return tess.box(float(get("size", 2.0)))
    if prim.IsA(UsdGeom.Capsule):
        return tess.capsule(float(get("radius", 0.5)), float(get("height", 1.0)), axis())
    if prim.IsA(UsdGeom.Cylinder):
        return tess.cylinder(float(get("radius", 1.0)), float(get("height", 2.0)), axis())
    if prim.IsA(UsdGeom.Cone):
        return tess.cone(float(get("radius", 1.0)), float(get("height", 2.0)), axis())
    if prim.IsA(UsdGeom.Plane):
        return tess.plane(float(get("width", 2.0)), float(get("length", 2.0)), axis())
    if prim.IsA(UsdGeom.Mesh):
        mesh = UsdGeom.Mesh(prim)
        pts = mesh.GetPointsAttr().Get()
        counts = mesh.GetFaceVertexCountsAttr().Get()
        idx = mesh.GetFaceVertexIndicesAttr().Get()
        if pts is None or counts is None or idx is None:
            raise UsdphysError(f"{path}: a Mesh without points, faceVertexCounts or faceVertexIndices; cannot draw it")
        v = np.asarray(pts, float).reshape(-1, 3)
        faces = tess.triangulate(counts, idx)
        if len(faces) and (faces.max() >= len(v) or faces.min() < 0) or int(np.sum(counts)) != len(idx):
            raise UsdphysError(f"{path}: faceVertexIndices do not match its points and faceVertexCounts")
        return v, faces
    return None


def _color(prim: Usd.Prim, body_rank: int | None) -> np.ndarray:
    pv = UsdGeom.PrimvarsAPI(prim).GetPrimvar("displayColor")
    if pv and pv.HasAuthoredValue():
        val = pv.Get()
        if val is not None and len(val) > 0:
            c = np.asarray(val, float).reshape(-1, 3).mean(0)
            if np.all(np.isfinite(c)):
                return np.clip(c, 0.0, 1.0)
    return _STATIC_GREY if body_rank is None else _PALETTE[body_rank % len(_PALETTE)]


def _owner_body(prim: Usd.Prim) -> Usd.Prim | None:
    p = prim
    while p and not p.IsPseudoRoot():
        if p.HasAPI(UsdPhysics.RigidBodyAPI):
            return p
        p = p.GetParent()
    return None


def _visual(prim: Usd.Prim) -> bool:
    img = UsdGeom.Imageable(prim)
    if img.ComputeVisibility(Usd.TimeCode.Default()) == UsdGeom.Tokens.invisible:
        return False
    return img.ComputePurpose() in (UsdGeom.Tokens.default_, UsdGeom.Tokens.render)


def frame_codes(stage: Usd.Stage) -> np.ndarray:
    """The time codes a result holds: start..end in whole frames (one code when it has none)."""
    start, end = stage.GetStartTimeCode(), stage.GetEndTimeCode()
    if not stage.HasAuthoredTimeCodeRange() or end < start:
        return np.array([0.0])
    return np.arange(float(start), float(end) + 0.5)


def read_render_scene(stage_or_path, frames=None, geometry: str = "auto") -> RenderScene:
    """Meshes and their poses at `frames` (time codes; None: all of the stage's frames)."""
    from usdphys.usd.stage import open_stage

    if geometry not in GEOMETRY_CHOICES:
        raise UsdphysError(f"geometry must be one of {', '.join(GEOMETRY_CHOICES)}, got {geometry!r}")
    if isinstance(stage_or_path, (str, os.PathLike)):
        source = os.fspath(stage_or_path)
        stage = open_stage(source)
    else:
        stage = stage_or_path
        source = stage.GetRootLayer().identifier
    codes = frame_codes(stage)
    if frames is not None:
        frames = np.asarray(list(frames), float).reshape(-1)
        if len(frames) == 0:
            raise UsdphysError(f"{source}: no frames chosen")
        bad = [f for f in frames if not (codes[0] <= f <= codes[-1])]
        if bad:
            raise UsdphysError(f"{source}: frame {bad[0]:g} is outside the result's frames "
                               f"{codes[0]:g}..{codes[-1]:g}")
        codes = frames
    tcps = float(stage.GetTimeCodesPerSecond()) or 1.0

    prims = list(stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)))
    candidates = {"visual": [], "collision": []}
    for prim in prims:
        if prim.IsA(UsdGeom.Gprim) and _visual(prim):
            candidates["visual"].append(prim)
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            candidates["collision"].append(prim)
    if geometry == "auto":
        geometry = "visual" if candidates["visual"] else "collision"
    chosen = candidates[geometry]

    body_rank: dict[str, int] = {}
    meshes, kept, skipped = [], [], []
    for prim in chosen:
        shape = _tessellate(prim)
        if shape is None:
            skipped.append(prim.GetPath().pathString)
            continue
        body = _owner_body(prim)
        rank = None
        if body is not None:
            rank = body_rank.setdefault(body.GetPath().pathString, len(body_rank))
        v, f = shape
        meshes.append(SceneMesh(prim.GetPath().pathString, v, f, _color(prim, rank), moving=False))
        kept.append(prim)
    if skipped:
        warn(f"{source}: {len(skipped)} prim(s) of a kind render does not draw (e.g. {skipped[0]}); left out")
    if not meshes:
        raise UsdphysError(f"{source}: nothing to draw: no {geometry} geometry (Sphere, Cube, Capsule, Cylinder, "
                           "Cone, Plane or Mesh)")

    transforms = np.zeros((len(codes), len(meshes), 4, 4))
    for i, code in enumerate(codes):
        cache = UsdGeom.XformCache(Usd.TimeCode(float(code)))
        for m, prim in enumerate(kept):
            transforms[i, m] = matrix_from_gf(cache.GetLocalToWorldTransform(prim))
    if not np.all(np.isfinite(transforms)):
        raise UsdphysError(f"{source}: a drawn prim has a non-finite transform at some chosen frame")
    # A mesh moves when any frame's pose differs from the first (1e-12 relative: not round-off).
    scale = max(1.0, float(np.max(np.abs(transforms))))
    for m, mesh in enumerate(meshes):
        mesh.moving = bool(np.max(np.abs(transforms[:, m] - transforms[:1, m])) > 1e-12 * scale)
    up = UsdGeom.GetStageUpAxis(stage)
    return RenderScene(meshes=meshes, transforms=transforms, time_codes=np.asarray(codes, float),
                       times=np.asarray(codes, float) / tcps, up_axis=2 if up == UsdGeom.Tokens.z else 1,
                       meters_per_unit=float(UsdGeom.GetStageMetersPerUnit(stage)), source=source,
                       skipped=skipped)
