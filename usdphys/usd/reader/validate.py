"""Values no simulation can start from, refused before anything is read; relationships that
lead nowhere usable, named with what was decided.

usd-core's UsdPhysics parser passes NaN and inf through (a NaN centre of mass, gravity
direction or transform matrix reaches the solver as a NaN state, or silently as "not set"), and
turns a relationship to a missing or wrong prim into "the world" without a word. This pass runs
first and, for the prims the simulation reads (rigid bodies, colliders, joints, the scene, and
the ancestors of bodies and colliders whose transforms they inherit):

- one-line errors (usdphys.errors.UsdphysError) naming prim and attribute for NaN or inf in a
  transform op, a zero scale, a zero or singular orient / transform, a zero or non-finite
  principalAxes or joint-frame quaternion, a negative or non-finite mass or density, a
  negative or non-finite inertia, a non-finite centre of mass,
  velocity, gravity, joint frame, limit or drive value, a collider size that is not positive;
- a warning for principal moments that break the triangle inequality (no rigid body has them,
  yet shipped models do, and the motion stays well posed: simulated as given);
- one warning per relationship (physics:body0 / body1 of a joint) that has several targets, a
  missing target, or a target that is neither a rigid body nor a transformable prim, saying
  what usdphys does with that side.

UsdPhysics' own "not set" sentinels stay valid: a centre of mass of (-inf, -inf, -inf), a
gravity magnitude below zero (-inf by default), a zero diagonal inertia or mass (computed from
the colliders), open limits at +-inf.
"""
from __future__ import annotations

import math

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError, warn
from usdphys.usd.gfconv import transform_fault

_REL_TOL = 1e-6  # the triangle inequality of principal moments, relative (float32 authoring)
_SHAPE_SIZES = {"radius": 0.0, "size": 0.0, "height": None}  # name -> must exceed (None: >= 0)
_NUMERIC_TYPES = {Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Double, Sdf.ValueTypeNames.Half}


def _numbers(value) -> list[float]:
    """Every number of a Gf value (scalar, vector, quaternion, matrix) as floats."""
    if isinstance(value, (Gf.Quatf, Gf.Quatd, Gf.Quath)):
        return [float(value.GetReal())] + [float(x) for x in value.GetImaginary()]
    if isinstance(value, (Gf.Matrix4d, Gf.Matrix4f, Gf.Matrix3d, Gf.Matrix3f, Gf.Matrix2d, Gf.Matrix2f)):
        n = 4 if isinstance(value, (Gf.Matrix4d, Gf.Matrix4f)) else 3 if isinstance(value, (Gf.Matrix3d, Gf.Matrix3f)) else 2
        return [float(value[i][j]) for i in range(n) for j in range(n)]
    if hasattr(value, "__len__"):
        return [float(x) for x in value]
    return [float(value)]


def _shown(value) -> str:
    nums = _numbers(value)
    return f"{nums[0]:g}" if len(nums) == 1 else "(" + ", ".join(f"{x:g}" for x in nums) + ")"


def _authored(prim: Usd.Prim, name: str):
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        return None
    return attr.Get()


def _fail(prim, name, value, expected: str):
    raise UsdphysError(f"{prim.GetPath()}: {name} = {_shown(value)}: expected {expected}")


def _finite(prim, name, expected="finite numbers"):
    value = _authored(prim, name)
    if value is not None and not all(math.isfinite(x) for x in _numbers(value)):
        _fail(prim, name, value, expected)
    return value


def _quaternion(prim, name):
    value = _finite(prim, name, "a finite, non-zero quaternion")
    if value is not None and not any(x != 0.0 for x in _numbers(value)):
        _fail(prim, name, value, "a finite, non-zero quaternion")


def _not_nan(prim, name):
    value = _authored(prim, name)
    if value is not None and any(math.isnan(x) for x in _numbers(value)):
        _fail(prim, name, value, "a number (inf: no bound)")
    return value


# ---------------------------------------------------------------------------- transforms
def check_transforms(prim: Usd.Prim) -> None:
    """Every xformOp of one prim: finite (gfconv.transform_fault); scales non-zero; orients and
    matrices invertible. Named as prim.op, like transform_fault."""
    fault = transform_fault(prim, ancestors=False)
    if fault:
        raise UsdphysError(fault)
    for op in UsdGeom.Xformable(prim).GetOrderedXformOps():
        value = op.Get(Usd.TimeCode.Default())
        kind = op.GetOpType()
        if value is None or kind not in (UsdGeom.XformOp.TypeScale, UsdGeom.XformOp.TypeOrient,
                                         UsdGeom.XformOp.TypeTransform):
            continue
        nums = _numbers(value)
        where = f"{prim.GetPath()}.{op.GetOpName()} = {_shown(value)}: expected "
        if kind == UsdGeom.XformOp.TypeScale and any(x == 0.0 for x in nums):
            raise UsdphysError(where + "non-zero scale factors (a zero scale collapses the prim)")
        if kind == UsdGeom.XformOp.TypeOrient and not any(x != 0.0 for x in nums):
            raise UsdphysError(where + "a non-zero quaternion")
        if kind == UsdGeom.XformOp.TypeTransform:
            if not abs(float(np.linalg.det(np.array(nums, float).reshape(4, 4)[:3, :3]))) > 0.0:
                raise UsdphysError(where + "an invertible matrix (its 3x3 part is singular)")


def _with_ancestors(stage: Usd.Stage, paths) -> list[Usd.Prim]:
    seen, out = set(), []
    for path in paths:
        prim = stage.GetPrimAtPath(str(path))
        chain = []
        while prim and prim.IsValid() and not prim.IsPseudoRoot() and str(prim.GetPath()) not in seen:
            seen.add(str(prim.GetPath()))
            chain.append(prim)
            prim = prim.GetParent()
        out.extend(chain)
    return out


# ---------------------------------------------------------------------------- mass, motion
def check_mass(prim: Usd.Prim) -> None:
    """MassAPI values on a body or collider, and a body's initial velocities."""
    for name in ("physics:mass", "physics:density"):
        value = _authored(prim, name)
        if value is not None and not (math.isfinite(value) and value >= 0):
            _fail(prim, name, value, "a finite value >= 0 (0: computed from the colliders)")
    com = _authored(prim, "physics:centerOfMass")
    if com is not None:
        nums = _numbers(com)
        if not (all(math.isfinite(x) for x in nums) or all(x == -math.inf for x in nums)):
            _fail(prim, "physics:centerOfMass", com, "finite numbers ((-inf, -inf, -inf): not set)")
    inertia = _authored(prim, "physics:diagonalInertia")
    if inertia is not None:
        d = _numbers(inertia)
        if not all(math.isfinite(x) and x >= 0 for x in d):
            _fail(prim, "physics:diagonalInertia", inertia, "finite moments >= 0 ((0, 0, 0): computed)")
        if any(x > 0 for x in d) and any(d[i] > (d[(i + 1) % 3] + d[(i + 2) % 3]) * (1 + _REL_TOL) for i in range(3)):
            # no rigid body has these moments, but models in the wild do (a Chrono example:
            # (0.2, 0.2, 0.534)) and the equations of motion stay well posed: named, then simulated
            warn(f"{prim.GetPath()}: physics:diagonalInertia = {_shown(inertia)} breaks the triangle inequality "
                 "(each principal moment at most the sum of the other two): no rigid body has these moments; "
                 "simulated as given")
    _quaternion(prim, "physics:principalAxes")
    _finite(prim, "physics:velocity")
    _finite(prim, "physics:angularVelocity")


def check_shape(prim: Usd.Prim) -> None:
    """The size of a collider primitive: finite and positive (a height may be 0)."""
    for name, floor in _SHAPE_SIZES.items():
        value = _authored(prim, name)
        if value is None or not isinstance(value, (int, float)):
            continue
        ok = math.isfinite(value) and (value >= 0 if floor is None else value > floor)
        if not ok:
            _fail(prim, name, value, "a finite size >= 0" if floor is None else "a finite size > 0")


# ---------------------------------------------------------------------------- joints
_DRIVE_NON_NEGATIVE = ("stiffness", "damping", "maxForce")


def check_joint(prim: Usd.Prim) -> None:
    """Joint frames finite, limits and drive values numbers (NaN is no bound and no target)."""
    for i in (0, 1):
        _finite(prim, f"physics:localPos{i}")
        _quaternion(prim, f"physics:localRot{i}")
    for name in ("physics:lowerLimit", "physics:upperLimit", "physics:minDistance", "physics:maxDistance",
                 "physics:coneAngle0Limit", "physics:coneAngle1Limit"):
        _not_nan(prim, name)
    for attr in prim.GetAttributes():
        name = attr.GetName()
        parts = name.split(":")
        if len(parts) != 4 or parts[0] not in ("limit", "drive") or parts[2] != "physics":
            continue
        if attr.GetTypeName().scalarType not in _NUMERIC_TYPES:
            continue  # drive:<dof>:physics:type is a token ("force" / "acceleration")
        value = _not_nan(prim, name)
        if value is None or parts[0] != "drive":
            continue
        if parts[3] in _DRIVE_NON_NEGATIVE and not value >= 0:
            _fail(prim, name, value, "a value >= 0")
        if parts[3] in ("stiffness", "damping", "targetPosition", "targetVelocity") and not math.isfinite(value):
            _fail(prim, name, value, "a finite number")


def check_joint_relationships(stage: Usd.Stage, prim: Usd.Prim, bodies: set[str]) -> None:
    """One warning per physics:body0 / body1 that usd-core resolves to the world for a reason
    the author may not mean: several targets, a missing prim, a prim that is not transformable,
    or a transformable prim that is not a body and not an ancestor of the other side."""
    sides = []
    for i in (0, 1):
        rel = prim.GetRelationship(f"physics:body{i}")
        sides.append(rel.GetTargets() if rel else [])
    for i, targets in enumerate(sides):
        name = f"physics:body{i}"
        if len(targets) > 1:
            warn(f"{prim.GetPath()}: {name} has {len(targets)} targets; usd-core uses the first "
                 f"({targets[0]}) and ignores the rest")
        if not targets:
            continue
        target = stage.GetPrimAtPath(targets[0])
        if not target:
            warn(f"{prim.GetPath()}: {name} targets {targets[0]}, which does not exist: that side is the world")
        elif not target.IsA(UsdGeom.Xformable):
            warn(f"{prim.GetPath()}: {name} targets {targets[0]} (a {target.GetTypeName() or 'typeless prim'}), "
                 "which is neither a rigid body nor transformable: that side is the world")
        elif str(target.GetPath()) not in bodies and not _body_or_collider(target):
            other = sides[1 - i][0] if sides[1 - i] else None
            if other is None or not str(other).startswith(str(target.GetPath()) + "/"):
                warn(f"{prim.GetPath()}: {name} targets {targets[0]}, which is not a rigid body: that side is "
                     "fixed in the world at that prim's pose")


def _body_or_collider(prim: Usd.Prim) -> bool:
    """A rigid body (static ones too), a collider, or a prim inside a rigid body."""
    while prim and not prim.IsPseudoRoot():
        if prim.HasAPI(UsdPhysics.RigidBodyAPI) or prim.HasAPI(UsdPhysics.CollisionAPI):
            return True
        prim = prim.GetParent()
    return False


# ---------------------------------------------------------------------------- the stage
def check_scene(prim: Usd.Prim) -> None:
    _finite(prim, "physics:gravityDirection")
    value = _authored(prim, "physics:gravityMagnitude")
    if value is not None and (math.isnan(value) or value == math.inf):
        _fail(prim, "physics:gravityMagnitude", value, "a finite value (below 0: standard gravity)")


def validate_stage(stage: Usd.Stage, by_type: dict) -> None:
    """Run every check over what usd-core's parse (``by_type``: desc kind -> (path, desc)
    pairs) names: scenes, bodies, colliders, joints, and the prims whose transforms they inherit."""
    bodies = [str(p) for p, _ in by_type.get("RigidBody", [])]
    colliders = [str(p) for kind, items in by_type.items() if kind.endswith("Shape") for p, _ in items]
    for path, _ in by_type.get("Scene", []):
        check_scene(stage.GetPrimAtPath(str(path)))
    for prim in _with_ancestors(stage, bodies + colliders):
        if prim.IsA(UsdGeom.Xformable):
            check_transforms(prim)
    for path in bodies + colliders:
        prim = stage.GetPrimAtPath(path)
        check_mass(prim)
    for path in colliders:
        check_shape(stage.GetPrimAtPath(path))
    body_set = set(bodies)
    for kind, items in sorted(by_type.items()):
        if not kind.endswith("Joint"):
            continue
        for path, _ in items:
            prim = stage.GetPrimAtPath(str(path))
            check_joint(prim)
            check_joint_relationships(stage, prim, body_set)
