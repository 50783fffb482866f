"""SNAP assembly (OpenPLX Physics3D) on a USD stage.

The USD reading (docs/assembly.md has the long form):

* a *system* is a UsdGeom.Xform prim that is not inside a rigid body; a *body* is a prim
  with PhysicsRigidBodyAPI; a *frame* is any Xformable prim (its local transform is its
  authored xformOps, at the earliest time code); top-level systems are root systems,
  whose frame is the world's: they are never placed;
* a body or system is *undefined* when no xformOpOrder is authored on it (an authored
  empty xformOpOrder means "identity, on purpose");
* every enabled PhysicsJoint is a *mate* with two connector frames: with MbdMateAPI, the
  MbdMateConnector prims named by mbd:connector0 / mbd:connector1 (owned by their parent
  prim); without it, localPos0/localRot0 in body0 and localPos1/localRot1 in body1 (no
  body: a frame in world coordinates). A mate is at rest when its two frames coincide;
  SNAP makes them coincide exactly (for a revolute or prismatic joint too: the free
  coordinate is left at 0);
* for each mate, G is the closest common ancestor of the two owners; a side whose path
  below G holds exactly one undefined transform, while the other side holds none, solves
  it with the SNAP transform S = N^-1 A P^-1; when no mate can progress, the first
  undefined transform of the first waiting mate is forced to the identity (redundancy);
  bodies left undefined are reported as unresolved, never guessed.

Only this module (with the reader, recorder and converters) imports pxr.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError
from usdphys.math3d import polar_matrix, quat_from_matrix, quat_normalized, quat_to_matrix
from usdphys.usd import articulation
from usdphys.usd.gfconv import matrix_from_gf, matrix_to_gf, quat_to_gf, quat_xyzw, transform_fault
from usdphys.usd.stage import compose, copy_stage_metadata, new_layer_over, open_stage, tf_message
from usdphys.usd.tokens import Tokens

MATE_API = Tokens.MbdMateAPI
CONNECTOR_TYPE = Tokens.MbdMateConnector
TIME = Usd.TimeCode.EarliestTime()

# A normal whose component orthogonal to the main axis is below this fraction of its
# length (sine of the angle between them) is parallel to it: the frame is undefined.
PARALLEL_TOL = 1e-6
# S is written as translate + orient when it is a rotation to this tolerance.
RIGID_TOL = 1e-9
# Closing mates (both sides already defined) must coincide to these tolerances. Plain
# PhysicsJoint frames are float32 (relative precision ~6e-8), hence not tighter.
POSITION_TOL = 1e-6  # plus 1e-6 times the largest coordinate involved
ANGLE_TOL_DEG = 1e-4
# Joint types whose rest state is not "frames coincide": never used to place anything.
NOT_AT_REST_WHEN_COINCIDENT = {
    "PhysicsDistanceJoint": "a distance joint holds a distance, not coincident frames",
    Tokens.MbdRevoluteSphericalJoint: "a revolute-spherical joint holds a distance",
    Tokens.MbdRevoluteTranslationalJoint: "a revolute-translational joint holds an offset",
}


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------
@dataclass
class Placement:
    """A transform SNAP authored: `transform` is the prim's local 4x4 (column vectors)."""

    path: str
    transform: np.ndarray
    mate: str | None  # the joint that placed it; None when forced to the identity
    forced: bool = False


@dataclass
class MateCheck:
    """A mate whose two frames did not coincide after assembly (user-defined transforms)."""

    joint: str
    position_error: float  # stage units
    angle_error_deg: float


@dataclass
class AssemblyReport:
    placed: list[Placement] = field(default_factory=list)  # in dependency order
    unresolved: list[str] = field(default_factory=list)  # undefined bodies SNAP could not place
    joint_frames: list[str] = field(default_factory=list)  # joints whose localPos/Rot were authored
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (joint, why)
    unsatisfied: list[MateCheck] = field(default_factory=list)
    mates: int = 0  # mates considered for snapping

    @property
    def snapped(self) -> list[Placement]:
        return [p for p in self.placed if not p.forced]

    @property
    def forced_identity(self) -> list[str]:
        return [p.path for p in self.placed if p.forced]

    @property
    def complete(self) -> bool:
        """Nothing unresolved and every mate at rest."""
        return not self.unresolved and not self.unsatisfied

    def summary(self) -> str:
        lines = []
        for p in self.placed:
            if p.forced:
                lines.append(f"identity {p.path}  (forced: redundant transforms)")
            else:
                t = p.transform[:3, 3]
                lines.append(
                    f"placed   {p.path}  by {p.mate}  at ({t[0]:.6g}, {t[1]:.6g}, {t[2]:.6g})"
                )
        for path in self.unresolved:
            lines.append(f"UNRESOLVED {path}  (undefined transform, no mate places it)")
        for c in self.unsatisfied:
            lines.append(
                f"UNSATISFIED {c.joint}  (frames apart by {c.position_error:.3g} and "
                f"{c.angle_error_deg:.3g} deg)"
            )
        for joint, why in self.ignored:
            lines.append(f"ignored  {joint}  ({why})")
        for joint in self.joint_frames:
            lines.append(f"frames   {joint}  (localPos/localRot from its connectors)")
        n_forced = len(self.forced_identity)
        lines.append(
            f"{self.mates} mate(s): {len(self.placed) - n_forced} placed, {n_forced} forced to "
            f"identity, {len(self.unresolved)} unresolved, {len(self.unsatisfied)} unsatisfied"
        )
        return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Small linear algebra (column vectors, 4x4 homogeneous, float64)
# --------------------------------------------------------------------------------------
def _frame(rot: np.ndarray, pos) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = pos
    return m


def _gf_rotation(q) -> np.ndarray:
    """Rotation matrix of an authored Gf quaternion, normalised first (ValueError if zero)."""
    return quat_to_matrix(quat_normalized(quat_xyzw(q)))


def _rotation_part(m: np.ndarray) -> np.ndarray:
    """Nearest rotation to the 3x3 block (removes scale and shear)."""
    return polar_matrix(m[:3, :3])


def _rotation_angle_deg(r: np.ndarray) -> float:
    x, y, z, w = quat_from_matrix(r)
    return math.degrees(2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w)))


def _is_rigid(m: np.ndarray) -> bool:
    r = m[:3, :3]
    return (
        np.allclose(r.T @ r, np.eye(3), rtol=0, atol=RIGID_TOL)
        and np.linalg.det(r) > 0
        and np.allclose(m[3], [0, 0, 0, 1], rtol=0, atol=RIGID_TOL)
    )


def _inv(m: np.ndarray, what: str) -> np.ndarray:
    if abs(np.linalg.det(m[:3, :3])) < 1e-12:
        raise UsdphysError(f"{what}: transform is singular (zero scale?); SNAP cannot invert it")
    return np.linalg.inv(m)


# Joint frame = connector frame @ permutation that puts the joint's physics:axis on the
# connector's main axis (Z); cyclic, so right-handed.
_AXIS_PERMUTATION = {
    "Z": np.eye(3),
    "X": np.array([[0.0, 1, 0], [0, 0, 1], [1, 0, 0]]),  # joint X = conn Z, Y = conn X, Z = conn Y
    "Y": np.array([[0.0, 0, 1], [1, 0, 0], [0, 1, 0]]),  # joint Y = conn Z, Z = conn X, X = conn Y
}
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------
MAX_COORDINATE = 1e12  # stage units: a connector's position or direction


def _fmt(v) -> str:
    return "(" + ", ".join(f"{float(x):g}" for x in v) + ")"


def _vec(attr: Usd.Attribute, prim_path, name: str) -> np.ndarray:
    value = attr.Get(TIME) if attr else None
    if value is None:
        raise UsdphysError(f"{prim_path}: {name} has no value")
    v = np.array(value, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise UsdphysError(f"{prim_path}: {name} = {value} must be 3 finite numbers")
    # Beyond this, products of positions overflow or lose every digit of a joint's offset.
    if np.max(np.abs(v)) > MAX_COORDINATE:
        raise UsdphysError(f"{prim_path}: {name} = {value} is out of range (each value at most "
                           f"{MAX_COORDINATE:g} in magnitude)")
    return v


def connector_frame(prim: Usd.Prim) -> np.ndarray:
    """4x4 frame of an MbdMateConnector in its owner's (parent's) coordinates.

    Origin at mbd:position; Z along mbd:mainAxis; X along mbd:normal made orthogonal to Z;
    Y = Z x X. An unauthored normal defaults to the owner's X axis, or its Y axis when the
    main axis is within 30 degrees of X.
    """
    path = prim.GetPath()
    if prim.GetTypeName() != CONNECTOR_TYPE:
        raise UsdphysError(f"{path}: expected an {CONNECTOR_TYPE} prim, found '{prim.GetTypeName() or 'untyped'}'")
    pos = _vec(prim.GetAttribute(Tokens.mbdPosition), path, Tokens.mbdPosition)
    main = _vec(prim.GetAttribute(Tokens.mbdMainAxis), path, Tokens.mbdMainAxis)
    n_main = np.linalg.norm(main)
    if n_main < 1e-12:
        raise UsdphysError(f"{path}: mbd:mainAxis is zero; a connector needs a main axis direction")
    z = main / n_main
    normal_attr = prim.GetAttribute(Tokens.mbdNormal)
    if normal_attr and normal_attr.HasAuthoredValue():
        normal = _vec(normal_attr, path, Tokens.mbdNormal)
        n_norm = np.linalg.norm(normal)
        if n_norm < 1e-12:
            raise UsdphysError(f"{path}: mbd:normal is zero; give a direction not parallel to mbd:mainAxis")
        ortho = normal - np.dot(normal, z) * z
        if np.linalg.norm(ortho) < PARALLEL_TOL * n_norm:
            raise UsdphysError(
                f"{path}: mbd:normal {_fmt(normal)} is parallel to mbd:mainAxis {_fmt(main)}; "
                "the normal must have a component orthogonal to the main axis"
            )
    else:
        normal = np.array([1.0, 0, 0]) if abs(z[0]) < math.cos(math.radians(30)) else np.array([0.0, 1, 0])
        ortho = normal - np.dot(normal, z) * z
    x = ortho / np.linalg.norm(ortho)
    y = np.cross(z, x)
    return _frame(np.column_stack([x, y, z]), pos)


def _is_body(prim: Usd.Prim) -> bool:
    return prim.HasAPI(UsdPhysics.RigidBodyAPI)


def _body_of(prim: Usd.Prim) -> Usd.Prim | None:
    """Nearest rigid body at or above prim (None: world-static)."""
    p = prim
    while p and not p.IsPseudoRoot():
        if _is_body(p):
            return p
        p = p.GetParent()
    return None


@dataclass
class _End:
    owner: Sdf.Path  # prim whose coordinates `local` is in ("/" = world)
    local: np.ndarray  # joint frame in owner's coordinates
    body: Sdf.Path | None  # rigid body carrying it; None = world-static
    label: str  # for messages


@dataclass
class _Mate:
    joint: Sdf.Path
    kind: str  # fixed | revolute | prismatic | spherical | generic
    axis: str
    a: _End
    b: _End
    snaps: bool
    connectors: tuple[Sdf.Path, Sdf.Path] | None  # MbdMateAPI joints


def _joint_kind(prim: Usd.Prim) -> tuple[str, str]:
    for schema, kind in (
        (UsdPhysics.FixedJoint, "fixed"),
        (UsdPhysics.RevoluteJoint, "revolute"),
        (UsdPhysics.PrismaticJoint, "prismatic"),
        (UsdPhysics.SphericalJoint, "spherical"),
    ):
        if prim.IsA(schema):
            axis = "Z"
            if kind != "fixed":
                axis = str(schema(prim).GetAxisAttr().Get() or "X")
                if axis not in _AXIS_INDEX:
                    raise UsdphysError(f"{prim.GetPath()}: physics:axis = '{axis}', expected X, Y or Z")
            return kind, axis
    return "generic", "Z"


def _single_target(rel: Usd.Relationship, joint_path, name: str) -> Sdf.Path | None:
    targets = rel.GetForwardedTargets() if rel else []
    if len(targets) > 1:
        raise UsdphysError(f"{joint_path}: {name} has {len(targets)} targets; expected at most one")
    return targets[0] if targets else None


class _Assembler:
    def __init__(self, stage: Usd.Stage):
        self.stage = stage
        self.solved: dict[Sdf.Path, np.ndarray] = {}
        self._local: dict[Sdf.Path, np.ndarray] = {}
        self._sides_cache: dict[Sdf.Path, tuple] = {}
        self.report = AssemblyReport()
        self.mates: list[_Mate] = []
        self._read_mates()

    # ---- frames -----------------------------------------------------------------------
    def _prim(self, path: Sdf.Path) -> Usd.Prim:
        return self.stage.GetPrimAtPath(path)

    def is_snappable(self, path: Sdf.Path) -> bool:
        """A body, or a system (Xform not inside a body) below a root system.

        Root systems (top-level Xforms that are not bodies) are the model being
        instantiated: their frame is the world's, they are never placed.
        """
        prim = self._prim(path)
        if _is_body(prim):
            return True
        if path.GetParentPath() == Sdf.Path.absoluteRootPath:
            return False
        return prim.IsA(UsdGeom.Xform) and _body_of(prim) is None

    def undefined(self, path: Sdf.Path) -> bool:
        if path in self.solved:
            return False
        prim = self._prim(path)
        if not self.is_snappable(path):
            return False
        return not UsdGeom.Xformable(prim).GetXformOpOrderAttr().HasAuthoredValue()

    def local(self, path: Sdf.Path) -> np.ndarray:
        if path in self.solved:
            return self.solved[path]
        if path not in self._local:
            prim = self._prim(path)
            fault = transform_fault(prim, TIME, ancestors=False)
            if fault:
                raise UsdphysError(fault)
            m = matrix_from_gf(UsdGeom.Xformable(prim).GetLocalTransformation(TIME))
            if not np.all(np.isfinite(m)):
                raise UsdphysError(f"{path}: its transform overflows (xformOp values too large)")
            self._local[path] = m
        return self._local[path]

    def chain(self, owner: Sdf.Path, ancestor: Sdf.Path) -> list[Sdf.Path]:
        """Frames from owner up to (not including) ancestor, nearest first."""
        out = []
        p = owner
        while p != ancestor:
            prim = self._prim(p)
            if prim.IsA(UsdGeom.Xformable):
                if UsdGeom.Xformable(prim).GetResetXformStack():
                    raise UsdphysError(
                        f"{p}: resets the transform stack (!resetXformStack!) between a mate "
                        f"connector and {ancestor}; SNAP does not support that"
                    )
                out.append(p)
            p = p.GetParentPath()
        return out

    def world(self, path: Sdf.Path) -> np.ndarray:
        m = np.eye(4)
        p = path
        while p != Sdf.Path.absoluteRootPath:
            prim = self._prim(p)
            if prim.IsA(UsdGeom.Xformable):
                m = self.local(p) @ m
                if UsdGeom.Xformable(prim).GetResetXformStack():
                    break
            p = p.GetParentPath()
        return m

    def _product(self, frames: list[Sdf.Path]) -> np.ndarray:
        """L(f_k) ... L(f_1) for frames [f_1 .. f_k] (nearest first)."""
        m = np.eye(4)
        for f in frames:
            m = self.local(f) @ m
        return m

    # ---- mates ------------------------------------------------------------------------
    def _connector_end(self, joint: Usd.Prim, i: int, axis: str) -> tuple[_End, Sdf.Path]:
        jp = joint.GetPath()
        rel_name = (Tokens.mbdConnector0, Tokens.mbdConnector1)[i]
        target = _single_target(joint.GetRelationship(rel_name), jp, rel_name)
        if target is None:
            raise UsdphysError(f"{jp}: {MATE_API} is applied but {rel_name} names no connector")
        conn = self._prim(target)
        if not conn:
            raise UsdphysError(f"{jp}: {rel_name} targets {target}, which does not exist")
        if conn.GetTypeName() != CONNECTOR_TYPE:
            raise UsdphysError(
                f"{jp}: {rel_name} targets {target}, a '{conn.GetTypeName() or 'untyped'}' prim; "
                f"expected an {CONNECTOR_TYPE}"
            )
        frame = connector_frame(conn)
        owner = conn.GetParent()
        body = _body_of(owner)
        body_name = f"physics:body{i}"
        declared = _single_target(joint.GetRelationship(body_name), jp, body_name)
        if body is not None and declared != body.GetPath():
            raise UsdphysError(
                f"{jp}: {rel_name} {target} belongs to rigid body {body.GetPath()} but {body_name} "
                f"is {'empty' if declared is None else declared}; set {body_name} = <{body.GetPath()}>"
            )
        if body is None and declared is not None and not owner.GetPath().HasPrefix(declared):
            raise UsdphysError(
                f"{jp}: {rel_name} {target} is world-static (owned by system {owner.GetPath()}) "
                f"but {body_name} is {declared}; leave {body_name} empty"
            )
        frame[:3, :3] = frame[:3, :3] @ _AXIS_PERMUTATION[axis]
        return _End(owner.GetPath(), frame, body.GetPath() if body else None, str(target)), target

    def _plain_end(self, joint: UsdPhysics.Joint, i: int) -> _End:
        prim = joint.GetPrim()
        jp = prim.GetPath()
        body_name = f"physics:body{i}"
        rel = joint.GetBody0Rel() if i == 0 else joint.GetBody1Rel()
        target = _single_target(rel, jp, body_name)
        pos_attr = joint.GetLocalPos0Attr() if i == 0 else joint.GetLocalPos1Attr()
        rot_attr = joint.GetLocalRot0Attr() if i == 0 else joint.GetLocalRot1Attr()
        pos = pos_attr.Get(TIME)
        rot = rot_attr.Get(TIME)
        pos = np.zeros(3) if pos is None else np.array(pos, dtype=float)
        if rot is None:
            r = np.eye(3)
        else:
            try:
                r = _gf_rotation(rot)
            except ValueError:
                raise UsdphysError(f"{jp}: physics:localRot{i} is not a valid rotation quaternion") from None
        if not np.all(np.isfinite(pos)):
            raise UsdphysError(f"{jp}: physics:localPos{i} must be finite")
        if target is None:
            return _End(Sdf.Path.absoluteRootPath, _frame(r, pos), None, f"{jp} (world frame {i})")
        owner = self._prim(target)
        if not owner or not owner.IsA(UsdGeom.Xformable):
            raise UsdphysError(f"{jp}: {body_name} targets {target}, which is not an existing Xformable prim")
        body = _body_of(owner)
        return _End(target, _frame(r, pos), body.GetPath() if body else None, f"{jp} (frame {i} in {target})")

    def _read_mates(self) -> None:
        for prim in self.stage.Traverse():
            has_mate_api = MATE_API in prim.GetAppliedSchemas()
            if not prim.IsA(UsdPhysics.Joint):
                if has_mate_api:
                    raise UsdphysError(f"{prim.GetPath()}: {MATE_API} applies to PhysicsJoint prims only")
                continue
            jp = prim.GetPath()
            kind, axis = _joint_kind(prim)
            joint = UsdPhysics.Joint(prim)
            if has_mate_api:
                a, ca = self._connector_end(prim, 0, axis)
                b, cb = self._connector_end(prim, 1, axis)
                connectors = (ca, cb)
            else:
                try:
                    a, b = self._plain_end(joint, 0), self._plain_end(joint, 1)
                except UsdphysError as exc:
                    # A plain joint's own problems are `usdphys check`'s business: it just
                    # cannot place anything (listed as ignored, never silently).
                    self.report.ignored.append((str(jp), f"unusable frames: {exc}"))
                    continue
                connectors = None
            why = None
            enabled = joint.GetJointEnabledAttr().Get()
            if enabled is False:
                why = "joint disabled"
            elif prim.GetTypeName() in NOT_AT_REST_WHEN_COINCIDENT:
                why = NOT_AT_REST_WHEN_COINCIDENT[prim.GetTypeName()]
            elif a.body is None and b.body is None:
                why = "both connectors are world-static"
            if why:
                self.report.ignored.append((str(jp), why))
            self.mates.append(_Mate(jp, kind, axis, a, b, why is None, connectors))
        self.report.mates = sum(m.snaps for m in self.mates)

    # ---- SNAP -------------------------------------------------------------------------
    def _sides(self, mate: _Mate):
        """(G, frames from connector0's owner to G, frames from connector1's owner to G)."""
        if mate.joint not in self._sides_cache:
            g = mate.a.owner.GetCommonPrefix(mate.b.owner)
            self._sides_cache[mate.joint] = (g, self.chain(mate.a.owner, g), self.chain(mate.b.owner, g))
        return self._sides_cache[mate.joint]

    def _in_g(self, end: _End, frames: list[Sdf.Path]) -> np.ndarray:
        return self._product(frames) @ end.local

    def _snap(self, mate: _Mate, end: _End, frames, other: _End, other_frames) -> None:
        c = next(f for f in frames if self.undefined(f))
        j = frames.index(c)
        p = self._product(frames[:j]) @ end.local
        n = self._product(frames[j + 1:])
        target = self._in_g(other, other_frames)
        s = _inv(n, f"{mate.joint}: frames above {c}") @ target @ _inv(p, f"{mate.joint}: frames below {c}")
        self.solved[c] = s
        self.report.placed.append(Placement(str(c), s, str(mate.joint)))

    def _force_identity(self, path: Sdf.Path) -> None:
        self.solved[path] = np.eye(4)
        self.report.placed.append(Placement(str(path), np.eye(4), None, forced=True))

    def solve(self) -> AssemblyReport:
        waiting = [m for m in self.mates if m.snaps]
        while waiting:
            used = []
            for mate in waiting:
                _, fa, fb = self._sides(mate)
                ua = [f for f in fa if self.undefined(f)]
                ub = [f for f in fb if self.undefined(f)]
                if len(ua) == 1 and not ub:
                    self._snap(mate, mate.a, fa, mate.b, fb)
                elif not ua and len(ub) == 1:
                    self._snap(mate, mate.b, fb, mate.a, fa)
                elif ua or ub:
                    continue
                used.append(mate)
            if used:
                waiting = [m for m in waiting if m not in used]
                continue
            # No mate could progress: the transforms are redundant; force the first
            # undefined one of the first waiting mate (connector0's side first).
            _, fa, fb = self._sides(waiting[0])
            self._force_identity(next(f for f in fa + fb if self.undefined(f)))
        self._check_mates()
        self._find_unresolved()
        return self.report

    def _check_mates(self) -> None:
        for mate in self.mates:
            if not mate.snaps:
                continue
            _, fa, fb = self._sides(mate)
            ta, tb = self._in_g(mate.a, fa), self._in_g(mate.b, fb)
            rel = _inv(ta, f"{mate.joint}: frame 0") @ tb
            r = _rotation_part(rel)
            d = rel[:3, 3]
            k = _AXIS_INDEX[mate.axis]
            if mate.kind == "revolute":
                pos_err = float(np.linalg.norm(d))
                ang = math.degrees(math.acos(min(1.0, max(-1.0, float(r[k, k])))))
            elif mate.kind == "prismatic":
                pos_err = float(np.linalg.norm(np.delete(d, k)))
                ang = _rotation_angle_deg(r)
            elif mate.kind == "spherical":
                pos_err, ang = float(np.linalg.norm(d)), 0.0
            else:
                pos_err, ang = float(np.linalg.norm(d)), _rotation_angle_deg(r)
            scale = max(1.0, float(np.abs(ta[:3, 3]).max()), float(np.abs(tb[:3, 3]).max()))
            if pos_err > POSITION_TOL * (1 + scale) or ang > ANGLE_TOL_DEG:
                self.report.unsatisfied.append(MateCheck(str(mate.joint), pos_err, ang))

    def _find_unresolved(self) -> None:
        for prim in self.stage.Traverse():
            if _is_body(prim) and prim.IsA(UsdGeom.Xformable) and self.undefined(prim.GetPath()):
                self.report.unresolved.append(str(prim.GetPath()))

    # ---- joint frames from connectors -------------------------------------------------
    def joint_frames(self) -> list[tuple[Usd.Prim, int, np.ndarray, np.ndarray]]:
        """(joint, i, localPos, localRot 3x3) for each side of each MbdMateAPI joint."""
        out = []
        for mate in self.mates:
            if mate.connectors is None:
                continue
            joint = self._prim(mate.joint)
            for i, end in ((0, mate.a), (1, mate.b)):
                declared = _single_target(joint.GetRelationship(f"physics:body{i}"), mate.joint, f"physics:body{i}")
                frame = self.world(end.owner) @ end.local
                if declared is not None:
                    frame = _inv(self.world(declared), f"{declared}") @ frame
                out.append((joint, i, frame[:3, 3].copy(), _rotation_part(frame)))
        return out

    def stale_joint_frames(self) -> list[str]:
        stale = []
        for joint, i, pos, rot in self.joint_frames():
            j = UsdPhysics.Joint(joint)
            p = (j.GetLocalPos0Attr() if i == 0 else j.GetLocalPos1Attr()).Get(TIME)
            q = (j.GetLocalRot0Attr() if i == 0 else j.GetLocalRot1Attr()).Get(TIME)
            p = np.zeros(3) if p is None else np.array(p, dtype=float)
            r = np.eye(3) if q is None else _gf_rotation(q)
            tol = 1e-6 * max(1.0, float(np.abs(pos).max()))
            if np.abs(p - pos).max() > tol or np.abs(r - rot).max() > 1e-6:
                stale.append(str(joint.GetPath()))
        return sorted(set(stale))

    # ---- authoring --------------------------------------------------------------------
    def author(self) -> None:
        for placement in self.report.placed:  # check all before writing anything
            if self._prim(Sdf.Path(placement.path)).IsInstanceProxy():
                raise UsdphysError(
                    f"{placement.path}: inside an instance (instanceable prim); SNAP cannot author "
                    "its transform. Author xformOpOrder on it in the asset or make the instance "
                    "non-instanceable"
                )
        for placement in self.report.placed:
            self._author_xform(Sdf.Path(placement.path), placement.transform)
        done = []
        for joint, i, pos, rot in self.joint_frames():
            j = UsdPhysics.Joint(joint)
            (j.GetLocalPos0Attr() if i == 0 else j.GetLocalPos1Attr()).Set(Gf.Vec3f(*pos.tolist()))
            (j.GetLocalRot0Attr() if i == 0 else j.GetLocalRot1Attr()).Set(quat_to_gf(quat_from_matrix(rot), Gf.Quatf))
            if str(joint.GetPath()) not in done:
                done.append(str(joint.GetPath()))
        self.report.joint_frames = done
        # Verify: an edit target weaker than existing opinions would silently lose ours.
        for placement in self.report.placed:
            xf = UsdGeom.Xformable(self._prim(Sdf.Path(placement.path)))
            got = matrix_from_gf(xf.GetLocalTransformation(TIME))
            if not np.allclose(got, placement.transform, rtol=0, atol=1e-9 * max(1.0, np.abs(placement.transform).max())):
                raise UsdphysError(
                    f"{placement.path}: the transform SNAP authored does not take effect; the edit "
                    f"target {self.stage.GetEditTarget().GetLayer().identifier} is weaker than an "
                    "existing opinion"
                )

    def _author_xform(self, path: Sdf.Path, m: np.ndarray) -> None:
        prim = self._prim(path)
        xf = UsdGeom.Xformable(prim)
        precision = UsdGeom.XformOp.PrecisionDouble
        if _is_rigid(m):
            suffix = "snap" if prim.HasAttribute("xformOp:translate") or prim.HasAttribute("xformOp:orient") else ""
            xf.AddTranslateOp(precision, suffix).Set(Gf.Vec3d(*m[:3, 3].tolist()))
            xf.AddOrientOp(precision, suffix).Set(quat_to_gf(quat_from_matrix(m[:3, :3]), Gf.Quatd))
        else:
            suffix = "snap" if prim.HasAttribute("xformOp:transform") else ""
            xf.AddTransformOp(precision, suffix).Set(matrix_to_gf(m))


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------
def plan(stage: Usd.Stage) -> AssemblyReport:
    """What assemble() would do, authoring nothing."""
    return _Assembler(stage).solve()


def assemble(stage: Usd.Stage) -> AssemblyReport:
    """Run SNAP on the stage and author the result in its current edit target (in memory).

    Authors xformOps (translate + orient) on every body / system SNAP placed or forced to
    the identity, and physics:localPos/localRot on every MbdMateAPI joint. Bad connectors
    raise UsdphysError before anything is authored. Unresolved bodies and unsatisfied
    mates are reported, not raised: check `report.complete`.
    """
    assembler = _Assembler(stage)
    report = assembler.solve()
    assembler.author()
    return report


def needs_assembly(stage: Usd.Stage) -> bool:
    """True when assemble() would place a transform or correct a connector joint's frames.

    False for stages without undefined transforms on any mate's path and whose MbdMateAPI
    joints already carry the frames their connectors give (e.g. an `assemble` output).
    Raises UsdphysError for bad connectors, like assemble().
    """
    assembler = _Assembler(stage)
    report = assembler.solve()
    return bool(report.placed) or bool(assembler.stale_joint_frames())


def assemble_in_session(stage: Usd.Stage) -> Sdf.Layer | None:
    """SNAP-assemble a stage that uses mate connectors, in its session layer (input untouched).

    Only stages with MbdMateAPI joints are assembled: a plain UsdPhysics stage simulates as
    authored. Returns the session layer holding the solved transforms (a result layer
    carries them), or None. Unresolved bodies are never guessed: that is an error.
    """
    if not any(p.HasAPI(MATE_API) for p in stage.Traverse(Usd.PrimDefaultPredicate)):
        return None
    if not needs_assembly(stage):
        return None
    session = stage.GetSessionLayer()
    previous = stage.GetEditTarget()
    stage.SetEditTarget(Usd.EditTarget(session))
    try:
        report = assemble(stage)
    finally:
        stage.SetEditTarget(previous)
    if not report.complete:
        # One line: the problems only (the full report is what `usdphys assemble` prints).
        problems = [" ".join(line.split()) for line in report.summary().splitlines()
                    if line.startswith(("UNRESOLVED", "UNSATISFIED"))] or ["see the report"]
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise UsdphysError(
            "the stage uses mate connectors but SNAP could not place everything: " + "; ".join(problems[:3]) + more
            + "; run `usdphys assemble` to see the report, then fix the mates or author the transforms"
        )
    return session


def assemble_to_layer(input_path: str | os.PathLike, output_path: str | os.PathLike,
                      allow_missing: bool = False) -> tuple[Sdf.Layer, AssemblyReport]:
    """SNAP-assemble a USD file into a new layer meant to be written at output_path.

    The layer sublayers the input (by a path relative to output_path's folder), repeats the
    input's stage metadata and holds only what SNAP authored: xformOps of the bodies /
    systems it placed or forced to the identity, and localPos / localRot of joints that use
    mate connectors; plus the articulation markup Newton's importer needs
    (usdphys.usd.articulation). Nothing is written; the input never is. Check `report.complete`.
    A missing sublayer, reference, payload or asset is an error unless allow_missing.
    """
    inp = Path(input_path)
    input_stage = open_stage(inp, allow_missing=allow_missing)  # holds the input layer open while we compose over it
    in_layer = input_stage.GetRootLayer()
    work = Sdf.Layer.CreateAnonymous("assembled.usda")
    # An anonymous layer has no folder: it names the input by its identifier while in memory.
    work.subLayerPaths = [in_layer.identifier]
    copy_stage_metadata(in_layer, work)
    try:
        stage = compose(work)  # what is missing was reported by open_stage
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{inp}: USD could not compose the stage ({tf_message(exc)})") from None
    stage.SetEditTarget(Usd.EditTarget(work))
    report = assemble(stage)
    # Tree markup for importers that need articulations (Newton); our reader ignores it.
    articulation.author(stage)

    final = new_layer_over(inp, output_path, "assembled.usda")
    sublayers = list(final.subLayerPaths)
    final.TransferContent(work)
    final.subLayerPaths = sublayers
    final.documentation = (
        f"SNAP assembly of {sublayers[0]} by `usdphys assemble`: transforms of bodies and "
        "systems placed from mate connectors, and joint frames computed from connectors."
    )
    return final, report


__all__ = [
    "AssemblyReport",
    "MateCheck",
    "Placement",
    "assemble",
    "assemble_in_session",
    "assemble_to_layer",
    "connector_frame",
    "needs_assembly",
    "plan",
]
