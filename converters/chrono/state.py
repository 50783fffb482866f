"""The one conversion-state object every concept module writes through.

It holds the stage, the parsed documents, the angle unit, the body map and the warnings, and
the small readers with semantics (rotations, axes, body references, named items, data files,
curves) so that every module reports errors and warnings the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, Vt

from usdphys import math3d as m3
from usdphys.errors import warn as _log_warning

from . import frames as F
from .yamlio import Doc, format_path

RAD2DEG = 180.0 / math.pi
DEG2RAD = math.pi / 180.0


# -- USD value helpers ----------------------------------------------------------------------------
def v3d(v) -> Gf.Vec3d:
    return Gf.Vec3d(*(float(x) for x in v))


def v3f(v) -> Gf.Vec3f:
    return Gf.Vec3f(*(float(x) for x in v))


def qd(q) -> Gf.Quatd:
    """(x, y, z, w) -> GfQuatd (scalar first): the USD edge of the quaternion order."""
    return Gf.Quatd(float(q[3]), Gf.Vec3d(float(q[0]), float(q[1]), float(q[2])))


def qf(q) -> Gf.Quatf:
    return Gf.Quatf(float(q[3]), Gf.Vec3f(float(q[0]), float(q[1]), float(q[2])))


def set_attr(prim: Usd.Prim, name: str, value) -> None:
    attr = prim.GetAttribute(name)
    if not attr.IsValid():  # a typo here is a bug in the converter, not bad input
        raise RuntimeError(f"{prim.GetPath()}: schema has no attribute {name}")
    attr.Set(value)


def set_rel(prim: Usd.Prim, name: str, target: Sdf.Path | None) -> None:
    rel = prim.GetRelationship(name)
    if not rel.IsValid():
        rel = prim.CreateRelationship(name)
    rel.SetTargets([target] if target is not None else [])


# -- bodies and names -----------------------------------------------------------------------------
@dataclass
class Body:
    name: str
    path: Sdf.Path
    pos: np.ndarray
    rot: np.ndarray  # quaternion (x, y, z, w), body reference frame in the model frame
    com_pos: np.ndarray
    com_rot: np.ndarray
    fixed: bool
    index: int
    materials: dict = field(default_factory=dict)  # material name -> UsdShade.Material path

    @property
    def R(self) -> np.ndarray:
        return m3.quat_to_matrix(self.rot)

    def local_point(self, p_world) -> np.ndarray:
        return self.R.T @ (np.asarray(p_world, float) - self.pos)

    def local_rot(self, r_world: np.ndarray) -> np.ndarray:
        return m3.quat_mul(m3.quat_conj(self.rot), m3.quat_from_matrix(r_world))


class Names:
    """Valid, unique prim names per parent scope (deterministic: order of appearance)."""

    def __init__(self):
        self.used: dict[str, set] = {}

    def make(self, parent: Sdf.Path | str, name: str) -> str:
        base = Tf.MakeValidIdentifier(str(name)) if name else "_"
        used = self.used.setdefault(str(parent), set())
        cand, k = base, 1
        while cand in used:
            cand = f"{base}_{k}"
            k += 1
        used.add(cand)
        return cand


# -- the state ------------------------------------------------------------------------------------
@dataclass
class ConversionState:
    warnings: list = field(default_factory=list)
    names: Names = field(default_factory=Names)
    # simulation settings gathered from the simulation / solver files (None: not given)
    sim: dict = field(default_factory=lambda: {"gravity": None, "time_step": None, "end_time": None,
                                               "contact_method": None})
    sim_doc: Doc | None = None  # any simulation file: the scene gets MbdSimulationAPI
    mbs_doc: Doc | None = None  # the MBS simulation file: base of a RELATIVE data_path
    extra_layer_data: dict = field(default_factory=dict)
    doc: Doc | None = None  # the document being written (the model file, or the simulation file)
    model: dict = field(default_factory=dict)
    deg: bool = True  # model.angle_degrees
    stage: Usd.Stage | None = None
    root: Sdf.Path | None = None
    bodies: dict[str, Body] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        _log_warning(message)

    def warn_unknown(self, doc: Doc, unknown: list) -> None:
        """Say what keys the schema does not know mean for the conversion."""
        for path, message in unknown:
            if path[:2] == ("model", "FEA") or path[:2] == ("model", "FEA_beams"):
                self.warn(f"{doc.where(path)}: {format_path(path)}: FEA content is not converted "
                          "(usdphys converts rigid multibody models only)")
            elif path[:2] == ("model", "load_controllers"):
                names = [c.get("name", "?") for c in doc.data["model"]["load_controllers"] or []
                         if isinstance(c, dict)]
                self.warn(f"{doc.where(path)}: {format_path(path)}: external load controllers "
                          f"({', '.join(map(str, names))}) are implemented by the host program; not converted")
            elif path == ("precice_adapter_config",):
                self.warn(f"{doc.where(path)}: precice_adapter_config: preCICE co-simulation settings are not "
                          "converted")
            elif path[:2] == ("model", "bodies") and path[-1] in ("lin_vel", "ang_vel") and len(path) == 4:
                pass  # said more precisely by bodies.convert_bodies()
            else:
                self.warn(message)

    # -- prims ----------------------------------------------------------------------------------
    def scope(self, *names: str) -> Sdf.Path:
        path = self.root
        for n in names:
            path = path.AppendChild(n)
            if not self.stage.GetPrimAtPath(path):
                UsdGeom.Scope.Define(self.stage, path)
        return path

    def item_prim(self, scope: Sdf.Path, name: str, type_name: str, ypath: tuple) -> Usd.Prim:
        """Define a prim for a named YAML item; customData.chronoSource points back at its line."""
        prim = self.stage.DefinePrim(scope.AppendChild(self.names.make(scope, name)), type_name)
        prim.SetDisplayName(str(name))
        prim.SetCustomDataByKey("chronoSource", f"{self.doc.path.name}:{self.doc.line(ypath)}")
        return prim

    # -- small readers with semantics -----------------------------------------------------------
    def rotation(self, value, ypath: tuple) -> np.ndarray:
        """A YAML orientation (Cardan angles, or Chrono's scalar-first quaternion) -> (x, y, z, w)."""
        if len(value) == 3:
            return F.euler_zyx(value, self.deg)
        q = np.asarray(value, float)[[1, 2, 3, 0]]
        n = float(np.linalg.norm(q))
        if n < 1e-12:
            raise self.doc.error(ypath, "quaternion has zero length")
        if abs(n - 1.0) > 1e-3:
            self.warn(self.doc.warning_text(ypath, f"quaternion length {n:.6g} is not 1 (Chrono does not "
                                                    "normalise it); normalised"))
        return q / n

    def axis(self, item: dict, key: str, ypath: tuple) -> np.ndarray:
        if key not in item:
            raise self.doc.error(ypath + (key,), "missing required field")
        a = np.asarray(item[key], float)
        if np.linalg.norm(a) < 1e-12:
            raise self.doc.error(ypath + (key,), "axis has zero length")
        return a / np.linalg.norm(a)

    def body_ref(self, item: dict, key: str, ypath: tuple) -> Body:
        name = item[key]
        if name not in self.bodies:
            raise self.doc.error(ypath + (key,), f"no body named {name!r} in model.bodies")
        return self.bodies[name]

    def two_bodies(self, item: dict, ypath: tuple) -> tuple[Body, Body]:
        b1 = self.body_ref(item, "body1", ypath)
        b2 = self.body_ref(item, "body2", ypath)
        if b1 is b2:
            raise self.doc.error(ypath + ("body2",), f"body1 and body2 are the same body {b1.name!r}")
        return b1, b2

    def items(self, key: str):
        """(index, item, YAML path) of model.<key>, refusing duplicate names."""
        seen: dict[str, int] = {}
        for i, item in enumerate(self.model.get(key) or []):
            ypath = ("model", key, i)
            name = item["name"]
            if name in seen:
                raise self.doc.error(ypath + ("name",), f"duplicate name {name!r} in model.{key} "
                                                         f"(first at line {self.doc.line(('model', key, seen[name]))})")
            seen[name] = i
            yield i, item, ypath

    def data_file(self, filename: str, ypath: tuple) -> Path:
        dp = self.model.get("data_path")
        if dp and str(dp["type"]).upper() == "RELATIVE":
            base = (self.mbs_doc.path.parent if self.mbs_doc is not None else self.doc.path.parent)
            p = base / dp.get("root", ".") / filename
        else:
            p = Path(filename)  # ABSOLUTE: as written (a relative one is relative to the working folder)
        if not p.is_file():
            mode = "RELATIVE" if dp and str(dp["type"]).upper() == "RELATIVE" else "ABSOLUTE"
            raise self.doc.error(ypath, f"file not found: {p} (data_path {mode})")
        return p

    def curve(self, pairs, yp: tuple, xscale: float = 1.0) -> Vt.Vec2dArray:
        xs = [float(p[0]) for p in pairs]
        if any(b <= a for a, b in zip(xs, xs[1:])):
            raise self.doc.error(yp, "abscissae must be strictly ascending")
        return Vt.Vec2dArray([Gf.Vec2d(float(p[0]) * xscale, float(p[1])) for p in pairs])
