"""UsdPhysics joints (and our composite joints) -> Model joint rows, SI and radians.

Each joint becomes locked DOFs, limits and drives in joint-frame coordinates (TransX..RotZ
order). usd-core's parser already resolves joint types, limits, drives and the two local
frames; this module converts units and maps them onto the solver's row layout. Composite
joints (MbdRevoluteSphericalJoint, MbdRevoluteTranslationalJoint) reach usd-core as generic
joints and are recognised here by prim type. A spherical joint's cone limits become one
swing row (Model.joint_cone). Breakable joints are not simulated: named in a warning, never
dropped silently.
"""
from __future__ import annotations

import math

import numpy as np
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError
from usdphys.math3d import quat_mul, quat_rotate
from usdphys.types.model import COMPOSITE_REVOLUTE_SPHERICAL, COMPOSITE_REVOLUTE_TRANSLATIONAL, Model
from usdphys.types.params import add_source
from usdphys.usd.gfconv import quat_xyzw, unit_quat_xyzw, vec3
from usdphys.usd.reader.shapes import AXIS_INDEX
from usdphys.usd.tokens import Tokens

DEG = math.pi / 180.0

_COMPOSITE_TYPES = {
    Tokens.MbdRevoluteSphericalJoint: COMPOSITE_REVOLUTE_SPHERICAL,
    Tokens.MbdRevoluteTranslationalJoint: COMPOSITE_REVOLUTE_TRANSLATIONAL,
}

# usd-core's D6 DOF names -> the solver's joint DOF row
_DOF_INDEX = {"TransX": 0, "TransY": 1, "TransZ": 2, "RotX": 3, "RotY": 4, "RotZ": 5}


def read_joints(stage: Usd.Stage, by_type: dict, model: Model, index: dict, mpu: float, kpu: float,
                warner) -> None:
    """Add every enabled joint of usd-core's parse (``by_type``: desc kind -> (path, desc)
    pairs) to ``model``, sorted by kind then path so joint rows are reproducible."""
    for kind in sorted(k for k in by_type if k.endswith("Joint")):
        for p, d in sorted(by_type[kind], key=lambda it: str(it[0])):
            _read_joint(stage, model, index, kind, p, d, mpu, kpu, warner)


def _side(index, body_path, pos, rot, mpu):
    """(body index, frame pos, frame rot) for one side of a joint.

    usd-core's parser gives the frame in the body's (unscaled) prim frame when the side is a
    simulated body, and already in WORLD coordinates when it is the world, a static body or
    any other prim (it folds that prim's transform in).
    """
    key = str(body_path) if body_path and not body_path.isEmpty else ""
    return index.get(key, -1), pos * mpu, rot


def _static_side(stage, joint_prim, side: int, pos, rot, mpu):
    """A world side's frame again, in double precision, when the joint targets a static prim.

    usd-core folds the prim's transform into the frame in single precision (its GfVec3f /
    GfQuatf descriptors); a fixed ground authored static instead of kinematic would then move
    joint frames by ~1e-7. Folded here from the authored values, the frame is what a kinematic
    body at the same pose gives. Unchanged when nothing static is targeted."""
    rel = joint_prim.GetRelationship(f"physics:body{side}") if joint_prim else None
    targets = rel.GetTargets() if rel else []
    target = joint_prim.GetStage().GetPrimAtPath(targets[0]) if targets else None
    if not target or not target.IsA(UsdGeom.Xformable):
        return pos, rot
    lp = joint_prim.GetAttribute(f"physics:localPos{side}").Get()
    lr = joint_prim.GetAttribute(f"physics:localRot{side}").Get()
    m = UsdGeom.Xformable(target).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    p = m.Transform(Gf.Vec3d(*(lp if lp is not None else (0.0, 0.0, 0.0))))
    frame_rot = unit_quat_xyzw(Gf.Matrix4d(m).RemoveScaleShear().ExtractRotationQuat())
    local_rot = unit_quat_xyzw(lr) if lr is not None else np.array([0.0, 0.0, 0.0, 1.0])
    return vec3(p) * mpu, quat_mul(frame_rot, local_rot)


def _composite_distance(prim, model: Model, b0, p0, r0, b1, p1, r1, composite: int, mpu: float) -> float:
    """mbd:distance (stage units -> m) or, unauthored, its value in the initial configuration."""
    attr = prim.GetAttribute(Tokens.mbdDistance) if prim else None
    if attr and attr.HasAuthoredValue():
        v = attr.Get()
        if v is None or not math.isfinite(float(v)):
            raise UsdphysError(f"{prim.GetPath()}: {Tokens.mbdDistance} = {v}: expected a finite number")
        return float(v) * mpu

    def world(b, p, r):
        if b < 0:
            return np.asarray(p, float), np.asarray(r, float)
        return model.body_pos[0, b] + quat_rotate(model.body_rot[0, b], p), quat_mul(model.body_rot[0, b], r)

    P0, _ = world(b0, p0, r0)
    P1, Q1 = world(b1, p1, r1)
    if composite == COMPOSITE_REVOLUTE_SPHERICAL:
        return float(np.linalg.norm(P1 - P0))
    return float(np.dot(P1 - P0, quat_rotate(Q1, np.array([1.0, 0.0, 0.0]))))


def _axis_index(desc) -> int:
    """0, 1, 2 for a joint descriptor's axis token X, Y, Z."""
    return AXIS_INDEX[str(desc.axis).split(".")[-1]]


def _read_joint(stage, model, index, kind, path, d, mpu, kpu, warner):
    prim = stage.GetPrimAtPath(path)
    tname = str(prim.GetTypeName()) if prim else ""
    if not d.jointEnabled:
        return  # disabled joints are authored intent: simply not simulated
    if kind in ("CustomJoint",):
        warner(path, "joint", f"custom joint type {tname or '?'} is not simulated; ignored")
        return
    for i, (pos, rot) in enumerate(((d.localPose0Position, d.localPose0Orientation),
                                    (d.localPose1Position, d.localPose1Orientation))):
        # a NaN / inf (or a float overflow of a huge value) would reach the solver as a NaN state
        if not np.all(np.isfinite(vec3(pos))):
            raise UsdphysError(f"{path}: physics:localPos{i} = {tuple(pos)}: expected finite numbers")
        if not np.all(np.isfinite(quat_xyzw(rot))):
            raise UsdphysError(f"{path}: physics:localRot{i} = {rot}: expected finite numbers")
    b0, p0, r0 = _side(index, d.body0, vec3(d.localPose0Position), unit_quat_xyzw(d.localPose0Orientation), mpu)
    b1, p1, r1 = _side(index, d.body1, vec3(d.localPose1Position), unit_quat_xyzw(d.localPose1Orientation), mpu)
    if b0 < 0:
        p0, r0 = _static_side(stage, prim, 0, p0, r0, mpu)
    if b1 < 0:
        p1, r1 = _static_side(stage, prim, 1, p1, r1, mpu)
    if b0 < 0 and b1 < 0:
        warner(path, "joint", "joint connects no simulated (dynamic or kinematic) body; ignored")
        return
    kinematic = [str(d.body0 if i == 0 else d.body1) for i, b in enumerate((b0, b1))
                 if b >= 0 and model.body_kinematic[b]]
    if kinematic and all(b < 0 or model.body_kinematic[b] for b in (b0, b1)):
        # no impulse moves either side (a MuJoCo mocap body fixed to the world): the joint cannot
        # act, and its rows would only report how far the float32 frames disagree
        warner(path, "joint", f"joint connects no dynamic body (kinematic {' and '.join(kinematic)}"
                              f"{'' if len(kinematic) == 2 else ' and the world'}): it cannot act; ignored")
        return
    if math.isfinite(d.breakForce) or math.isfinite(d.breakTorque):
        warner(path, "break", "breakForce / breakTorque (breakable joints) not simulated; the joint never breaks")

    locked = np.zeros(6, bool)
    lower = np.full(6, -np.inf)
    upper = np.full(6, np.inf)
    k = np.zeros(6)
    c = np.zeros(6)
    tp = np.zeros(6)
    tv = np.zeros(6)
    fmax = np.full(6, np.inf)
    accel = np.zeros(6, bool)
    ang_unit_force = kpu * mpu * mpu  # stage torque unit in N m
    lin_unit_force = kpu * mpu  # stage force unit in N

    sources = []  # (attribute, parameter, dof or None, scale): per-world parameter provenance

    def set_drive(dof, drv, instance):
        if drv is None or not drv.enabled:
            return
        if dof >= 3:  # angular: per degree -> per radian
            gain = (1.0 if drv.acceleration else ang_unit_force) / DEG
            target, force = DEG, ang_unit_force
        else:
            gain = 1.0 if drv.acceleration else lin_unit_force / mpu
            target, force = mpu, lin_unit_force
        k[dof] = drv.stiffness * gain
        c[dof] = drv.damping * gain
        tp[dof] = drv.targetPosition * target
        tv[dof] = drv.targetVelocity * target
        fmax[dof] = drv.forceLimit * force
        if drv.acceleration:
            accel[dof] = True
        if k[dof] < 0 or c[dof] < 0:
            raise UsdphysError(f"{path}: drive stiffness and damping must be >= 0")
        for attr, name, scale in (("stiffness", "drive_stiffness", gain), ("damping", "drive_damping", gain),
                                  ("targetPosition", "drive_target_pos", target),
                                  ("targetVelocity", "drive_target_vel", target), ("maxForce", "drive_max_force", force)):
            sources.append((f"drive:{instance}:physics:{attr}", f"joint.{name}", dof, scale))

    def set_limit(dof, lim, unit, attrs):
        lo = lim.lower
        hi = lim.upper
        if math.isfinite(lo) and math.isfinite(hi) and lo > hi:  # UsdPhysics: low > high locks the DOF
            locked[dof] = True
            return
        if math.isfinite(lo):
            lower[dof] = lo * unit
            sources.append((attrs[0], "joint.lower", dof, unit))
        if math.isfinite(hi):
            upper[dof] = hi * unit
            sources.append((attrs[1], "joint.upper", dof, unit))

    if tname in _COMPOSITE_TYPES:
        comp = _COMPOSITE_TYPES[tname]
        dist = _composite_distance(prim, model, b0, p0, r0, b1, p1, r1, comp, mpu)
        label = "revolute-spherical" if comp == COMPOSITE_REVOLUTE_SPHERICAL else "revolute-translational"
        model.add_joint(str(path), b0, b1, p0, r0, p1, r1, kind=label, composite=comp, composite_distance=dist)
        return
    is_distance = False
    dmin = dmax = np.nan
    cone_axis, cone = 0, (np.inf, np.inf)
    label = kind.replace("Joint", "").lower() or "generic"
    if kind == "FixedJoint":
        locked[:] = True
    elif kind in ("RevoluteJoint", "PrismaticJoint"):
        ax = _axis_index(d)
        if kind == "RevoluteJoint":
            locked[:3] = True
            locked[3:] = True
            locked[3 + ax] = False
            dof, unit = 3 + ax, DEG
        else:
            locked[:] = True
            locked[ax] = False
            dof, unit = ax, mpu
        set_limit(dof, d.limit, unit, ("physics:lowerLimit", "physics:upperLimit"))
        set_drive(dof, d.drive, "angular" if kind == "RevoluteJoint" else "linear")
    elif kind == "SphericalJoint":
        locked[:3] = True
        cone_axis = _axis_index(d)
        if d.limit.enabled:  # usd-core: both cone angles >= 0
            cone = (d.limit.lower * DEG, d.limit.upper * DEG)
            sources += [("physics:coneAngle0Limit", "joint.cone", 0, DEG), ("physics:coneAngle1Limit", "joint.cone", 1, DEG)]
        else:  # one angle an angle, the other negative (open) or infinite: usd-core leaves the cone off
            angles = (float(d.limit.lower), float(d.limit.upper))
            given = [k for k in (0, 1) if 0.0 <= angles[k] < np.inf]
            if len(given) == 1:
                other = 1 - given[0]
                warner(path, "cone", f"physics:coneAngle{given[0]}Limit is authored but physics:coneAngle{other}Limit "
                                     f"is {angles[other]:g} (UsdPhysics limits the cone only when both are finite and "
                                     ">= 0); the joint swings freely")
    elif kind == "DistanceJoint":
        is_distance = True
        if d.minEnabled and d.limit.lower >= 0:
            dmin = d.limit.lower * mpu
            sources.append(("physics:minDistance", "joint.min_distance", None, mpu))
        if d.maxEnabled and d.limit.upper >= 0:
            dmax = d.limit.upper * mpu
            sources.append(("physics:maxDistance", "joint.max_distance", None, mpu))
        if not (np.isfinite(dmin) or np.isfinite(dmax)):
            warner(path, "distance", "distance joint with neither min nor max distance authored constrains nothing")
    elif kind == "D6Joint":
        label = "generic"
        for pair in d.jointLimits:
            name = str(pair.first).split(".")[-1]
            if name not in _DOF_INDEX:
                warner(path, f"limit-{name}", f"limit on DOF '{name}' is not supported; ignored")
                continue
            dof = _DOF_INDEX[name]
            set_limit(dof, pair.second, DEG if dof >= 3 else mpu, (f"limit:{name}:physics:low", f"limit:{name}:physics:high"))
        for pair in d.jointDrives:
            name = str(pair.first).split(".")[-1]
            if name not in _DOF_INDEX:
                warner(path, f"drive-{name}", f"drive on DOF '{name}' is not supported; ignored")
                continue
            set_drive(_DOF_INDEX[name], pair.second, name)
        free_rot = int(np.sum(~locked[3:]))
        rot_limited = any(np.isfinite(lower[3 + a]) or np.isfinite(upper[3 + a]) for a in range(3) if not locked[3 + a])
        middle_reach = not (np.isfinite(lower[4]) and np.isfinite(upper[4]) and max(-lower[4], upper[4]) < np.pi / 2)
        if free_rot == 3 and middle_reach and any(np.isfinite(v) for v in (lower[3], upper[3], lower[5], upper[5])):
            warner(path, "rotlimit", "rotX / rotZ limits on a joint with three free rotations are angles of the "
                                     "x-y-z sequence, undefined where rotY reaches +-90 deg (its range allows it): "
                                     "limit rotY inside (-90, 90) deg")
    else:
        warner(path, "joint", f"joint type {kind} is not simulated; ignored")
        return
    model.add_joint(str(path), b0, b1, p0, r0, p1, r1, locked=locked, lower=lower, upper=upper, kind=label,
                    drive_stiffness=k, drive_damping=c, drive_target_pos=tp, drive_target_vel=tv,
                    drive_max_force=fmax, drive_accel=accel, dist_min=dmin, dist_max=dmax,
                    is_distance=is_distance, cone_axis=cone_axis, cone=cone)
    for attr, name, dof, scale in sources:
        add_source(model, str(path), attr, name, (str(path),) if dof is None else (str(path), dof), scale)
