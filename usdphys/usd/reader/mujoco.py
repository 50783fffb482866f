"""What mujoco-usd-converter writes beside UsdPhysics (`mjc:*` attributes, Mjc* prims).

Scene flags, joint springs, and the MuJoCo prims usdphys does not simulate (named once).

MuJoCo's scene-wide switches, as mujoco-usd-converter writes them on the PhysicsScene.
A converted MJCF model keeps `<option><flag .../></option>` as `mjc:flag:<name>` attributes
(MjcSceneAPI). Where a flag turns off something the model would otherwise simulate, the
stage's author meant the model without it: dm_control's cart-pole, for one, disables contact,
and its rails overlap the cart. The flags that map are honoured; any other one authored false
is named once in a warning, never dropped silently.
"""
from __future__ import annotations

import math

from pxr import Usd, UsdPhysics

from usdphys.errors import UsdphysError, warn

FLAG_PREFIX = "mjc:flag:"
# flags whose "false" usdphys honours (all default to true in MuJoCo)
HONOURED = ("contact", "gravity", "limit")


def disabled_flags(scene: Usd.Prim | None) -> set[str]:
    """Names of the MuJoCo flags authored false on the scene prim (e.g. {"contact"})."""
    if scene is None or not scene:
        return set()
    off = set()
    for attr in scene.GetAttributes():
        name = attr.GetName()
        if name.startswith(FLAG_PREFIX) and attr.HasAuthoredValue() and attr.Get() is False:
            off.add(name[len(FLAG_PREFIX):])
    ignored = sorted(off - set(HONOURED))
    if ignored:
        warn(f"{scene.GetPath()}: MuJoCo flags authored off are not simulated that way: "
             + ", ".join(FLAG_PREFIX + n for n in ignored) + " (usdphys honours " + ", ".join(HONOURED) + ")")
    return off


# ---------------------------------------------------------------------------- joints
# MjcJointAPI's spring: f = -mjc:stiffness (q - mjc:springref), stiffness in MuJoCo's units
# (N m / rad, N / m), springref in the model's angle unit (mjc:compiler:angle on the scene,
# degrees unless "radian") and measured, like every MuJoCo joint value, from mjc:ref.
MJC_STIFFNESS = "mjc:stiffness"
MJC_SPRINGREF = "mjc:springref"
MJC_REF = "mjc:ref"
MJC_ANGLE = "mjc:compiler:angle"
# MjcEqualityJointAPI's polynomial terms beyond NewtonMimicAPI's linear coupling
MJC_POLY_COEFS = ("mjc:coef2", "mjc:coef3", "mjc:coef4")
_DEG = math.pi / 180.0


def _compiler_degrees(stage: Usd.Stage) -> bool:
    """MuJoCo's compiler angle unit as the converter keeps it on the PhysicsScene (degrees
    unless authored "radian"); the scene sits at the root or one level below it."""
    for top in stage.GetPseudoRoot().GetChildren():
        for prim in [top] + list(top.GetChildren()):
            if prim.IsA(UsdPhysics.Scene):
                attr = prim.GetAttribute(MJC_ANGLE)
                if attr and attr.HasAuthoredValue():
                    return str(attr.Get()) != "radian"
                return True
    return True


def mujoco_joint_spring(joint: Usd.Prim, scalar) -> tuple[float, float]:
    """(stiffness, reference) of a converted MJCF joint's spring, in the NewtonJointAPI
    convention (per DEGREE and degrees for a revolute joint, stage units for a prismatic one);
    (0, 0) when none. ``scalar(prim, name)`` reads a finite number (one-line error otherwise)."""
    attr = joint.GetAttribute(MJC_STIFFNESS)
    if not attr or not attr.HasAuthoredValue():
        return 0.0, 0.0
    k = scalar(joint, MJC_STIFFNESS)
    if k < 0:
        raise UsdphysError(f"{joint.GetPath()}: {MJC_STIFFNESS} = {k:g}: expected >= 0")
    if k == 0:
        return 0.0, 0.0
    ref = scalar(joint, MJC_SPRINGREF) - scalar(joint, MJC_REF)
    if joint.IsA(UsdPhysics.RevoluteJoint):
        if not _compiler_degrees(joint.GetStage()):
            ref /= _DEG
        return k * _DEG, ref
    if joint.IsA(UsdPhysics.PrismaticJoint):
        return k, ref
    warn(f"{joint.GetPath()}: {MJC_STIFFNESS} on a {joint.GetTypeName()} is not simulated (only hinge and slide "
         "joint springs are); ignored")
    return 0.0, 0.0


# ---------------------------------------------------------------------------- not simulated
_UNSIMULATED = {"MjcTendon": "tendons", "MjcActuator": "actuators"}
# MuJoCo's soft-constraint parameters: limits, equalities and contacts are rigid here
_SOFTNESS = ("mjc:solref", "mjc:solimp", "mjc:solreflimit", "mjc:solimplimit", "mjc:solreffriction",
             "mjc:solimpfriction")


def _short(path: str, keep: int = 2) -> str:
    parts = path.strip("/").split("/")
    return path if len(parts) <= keep else ".../" + "/".join(parts[-keep:])


def name_unsimulated(stage: Usd.Stage) -> None:
    """One warning per kind of MuJoCo prim usdphys does not simulate (tendons, actuators), and
    one for the prims that author MuJoCo's constraint softness: how many, the first few paths."""
    found: dict[str, list[str]] = {}
    soft: list[str] = []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        kind = _UNSIMULATED.get(prim.GetTypeName())
        if kind:
            found.setdefault(kind, []).append(str(prim.GetPath()))
        if any(prim.GetAttribute(name).HasAuthoredValue() for name in _SOFTNESS if prim.HasAttribute(name)):
            soft.append(str(prim.GetPath()))
    source = stage.GetRootLayer().identifier
    for kind, paths in sorted(found.items()):
        warn(f"{source}: {len(paths)} MuJoCo {kind} ({_shown(paths)}) are not simulated; the model runs without them")
    if soft:
        warn(f"{source}: {len(soft)} prims author MuJoCo constraint softness (mjc:solref / mjc:solimp: "
             f"{_shown(soft)}); usdphys keeps joint limits, equalities and hard contacts rigid")


def _shown(paths: list[str]) -> str:
    return ", ".join(_short(p) for p in paths[:3]) + (", ..." if len(paths) > 3 else "")
