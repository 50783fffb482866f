"""Read the Mbd* force elements, loads, motors, bushings and NewtonJointAPI joint
properties of a USD stage into plain NumPy tables, in SI units and radians.

The stage reader (usdphys.usd.reader) calls

    elements = read_elements(stage, body_index, joint_index=None, body_scale=None)

with ``body_index(path: str) -> int`` (the solver's body row; -1 = the world / a static
body; it may raise KeyError for a prim it does not simulate) and, optionally,
``joint_index(path: str) -> int`` (row of a PhysicsJoint; default: -1 everywhere, the joint
stays named by its path) and ``body_scale(path: str) -> (sx, sy, sz)`` (the body prim's
world scale; local attachment points are authored in the scaled prim frame, so they are
multiplied by it, exactly like a joint's localPos). Empty body relationships are -1
without a call. A relationship to a body the solver treats as static (body_index -> -1)
is folded into the world: its attachment points, axes and frames are transformed by that
prim's world transform here, so every row with body -1 is in world coordinates.

Units (docs/forces.md has the table): lengths x metersPerUnit, masses x kilogramsPerUnit,
forces x kpu*mpu, torques x kpu*mpu^2; every angle, angular speed, per-degree stiffness or
damping is converted to radians (stiffness per degree x 180/pi = per radian). Time-function
outputs carry the conversion in their ``scale`` column, so the solver gets SI from
``eval_time_function`` directly. Quaternions are (x, y, z, w) as in usdphys.math3d.

Bad values raise UsdphysError naming the prim path and the attribute.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError, warn
from usdphys.types.elements import (
    DEG, MODE_FORCE, MODE_IDS, PER_DEG_TO_PER_RAD, RESOLVE_BODY0, RESOLVE_BODY1, RESOLVE_IDS, RESOLVE_WORLD, AxialSpringDampers, Bushings, Couplings, Elements, JointDofProperties,
    Loads, Motors, RotationalSpringDampers, SpringDampers, Units,
)
from usdphys.types.laws import ScalarLaw, pack_laws
from usdphys.types.timefunc import TimeFunction, TimeFunctionTable
from usdphys.math3d import quat_mul, quat_rotate
from usdphys.usd.check import (
    LIMIT_DOFS, NEWTON_DAMPING, NEWTON_FRICTION, NEWTON_LIMIT_DAMPING, NEWTON_LIMIT_STIFFNESS, NEWTON_MIMIC_API,
    NEWTON_MIMIC_COEF0, NEWTON_MIMIC_COEF1, NEWTON_MIMIC_ENABLED, NEWTON_MIMIC_JOINT, NEWTON_SCALAR_ONLY,
    NEWTON_VELOCITY_LIMIT,
    has_api, has_newton_joint_api, valid_dofs_for_joint,
)
from usdphys.usd.reader.mujoco import MJC_POLY_COEFS, MJC_STIFFNESS, mujoco_joint_spring
from usdphys.usd.gfconv import quat_xyzw, vec3
from usdphys.usd.tokens import Tokens

ANGULAR_DOFS = (Tokens.angle, Tokens.rotX, Tokens.rotY, Tokens.rotZ)
ALL_DOFS = (Tokens.distance, Tokens.angle) + tuple(LIMIT_DOFS)
_FUNCTION_TYPES = (Tokens.constant, Tokens.polynomial, Tokens.sine, Tokens.ramp, Tokens.data)

BodyIndex = Callable[[str], int]


def stage_units(stage: Usd.Stage) -> Units:
    return Units(
        meters_per_unit=float(UsdGeom.GetStageMetersPerUnit(stage)),
        kilograms_per_unit=float(UsdPhysics.GetStageKilogramsPerUnit(stage)),
        time_codes_per_second=float(stage.GetTimeCodesPerSecond()),
        held=stage.GetInterpolationType() == Usd.InterpolationTypeHeld,
    )


# ----------------------------------------------------------------------------------------
# Attribute helpers
# ----------------------------------------------------------------------------------------
def _where(prim: Usd.Prim, name: str) -> str:
    return f"{prim.GetPath()}: {name}"


def _scalar(prim: Usd.Prim, name: str, default: float = 0.0) -> float:
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr else None
    if value is None:
        return default
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsdphysError(f"{_where(prim, name)} = {value!r}: expected a number") from None
    if not math.isfinite(v):
        raise UsdphysError(f"{_where(prim, name)} = {v}: must be finite")
    return v


def _optional(prim: Usd.Prim, name: str) -> float:
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        return math.nan
    return _scalar(prim, name)


def _vec(prim: Usd.Prim, name: str, n: int = 3, default=None) -> np.ndarray:
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr else None
    if value is None:
        return np.zeros(n) if default is None else np.asarray(default, dtype=np.float64)
    v = np.array([float(x) for x in value], dtype=np.float64)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise UsdphysError(f"{_where(prim, name)} = {tuple(value)}: expected {n} finite numbers")
    return v


def _quat(prim: Usd.Prim, name: str) -> np.ndarray:
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr else None
    if value is None:
        return np.array([0.0, 0.0, 0.0, 1.0])
    q = quat_xyzw(value)
    norm = float(np.linalg.norm(q))
    if not np.all(np.isfinite(q)) or norm == 0.0:
        raise UsdphysError(f"{_where(prim, name)}: quaternion {tuple(q)} is zero or not finite")
    return q / norm


def _array(prim: Usd.Prim, name: str) -> np.ndarray:
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr else None
    if value is None:
        return np.zeros(0)
    arr = np.array([tuple(v) if hasattr(v, "__len__") else v for v in value], dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise UsdphysError(f"{_where(prim, name)}: values must be finite")
    return arr


def _token(prim: Usd.Prim, name: str, allowed: Sequence[str], default: str) -> str:
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr else None
    if value is None:
        return default
    if value not in allowed:
        raise UsdphysError(f"{_where(prim, name)} = '{value}': expected one of: {', '.join(allowed)}")
    return str(value)


def _target(prim: Usd.Prim, name: str) -> Optional[Usd.Prim]:
    rel = prim.GetRelationship(name)
    targets = rel.GetTargets() if rel else []
    if not targets:
        return None
    if len(targets) > 1:
        raise UsdphysError(f"{_where(prim, name)} has {len(targets)} targets; expected at most one")
    target = prim.GetStage().GetPrimAtPath(targets[0])
    if not target:
        raise UsdphysError(f"{_where(prim, name)} points at {targets[0]}, which does not exist")
    return target


def _sampled(attr: Usd.Attribute, units: Units) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(seconds, values) when the attribute has time samples, else None."""
    codes = attr.GetTimeSamples() if attr else []
    if not codes:
        return None
    times = np.array(codes, dtype=np.float64) / units.time_codes_per_second
    values = [attr.Get(c) for c in codes]
    return times, np.array([tuple(v) if hasattr(v, "__len__") else v for v in values], dtype=np.float64)


# ----------------------------------------------------------------------------------------
# Reader
# ----------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, stage: Usd.Stage, body_index: BodyIndex, joint_index, body_scale):
        self.stage = stage
        self.units = stage_units(stage)
        self.body_index = body_index
        self.joint_index = joint_index
        self.body_scale = body_scale
        self.functions = TimeFunctionTable()
        self.static: dict[str, Gf.Matrix4d] = {}  # world transforms of static bodies met

    # -- shared pieces -------------------------------------------------------------------
    def body(self, prim: Usd.Prim, name: str) -> tuple[int, Optional[str]]:
        target = _target(prim, name)
        if target is None:
            return -1, None
        path = str(target.GetPath())
        if not target.HasAPI(UsdPhysics.RigidBodyAPI):
            raise UsdphysError(f"{_where(prim, name)} points at {path}, which is not a rigid body (PhysicsRigidBodyAPI)")
        try:
            index = int(self.body_index(path))
        except KeyError:
            raise UsdphysError(f"{_where(prim, name)} points at {path}, which the model does not simulate") from None
        if index < 0:
            self.static[path] = UsdGeom.Xformable(target).ComputeLocalToWorldTransform(Usd.TimeCode.Default()) \
                if target.IsA(UsdGeom.Xformable) else Gf.Matrix4d(1.0)
        return index, path

    def point(self, prim: Usd.Prim, name: str, body_path: Optional[str]) -> np.ndarray:
        """Attachment point in metres: in the body prim frame (times body_scale) for a
        simulated body, in WORLD coordinates for a static body (index -1 with a target)."""
        p = _vec(prim, name)
        if body_path in self.static:
            return vec3(self.static[body_path].Transform(Gf.Vec3d(*p))) * self.units.length
        p = p * self.units.length
        if body_path is not None and self.body_scale is not None:
            p = p * np.asarray(self.body_scale(body_path), dtype=np.float64)
        return p

    def static_rotation(self, body_path: Optional[str]) -> np.ndarray:
        """xyzw rotation of a static body's prim frame in the world; identity otherwise."""
        if body_path not in self.static:
            return np.array([0.0, 0.0, 0.0, 1.0])
        m = Gf.Matrix4d(self.static[body_path]).RemoveScaleShear()
        return quat_xyzw(m.ExtractRotationQuat())

    def joint(self, path: str) -> int:
        return int(self.joint_index(path)) if self.joint_index is not None else -1

    def function(self, spec: TimeFunction) -> int:
        try:
            return self.functions.add(spec)
        except UsdphysError as exc:
            raise UsdphysError(str(exc)) from None

    def time_function_api(self, prim: Usd.Prim, scale: float) -> Optional[int]:
        if not prim.HasAPI(Tokens.MbdTimeFunctionAPI):
            return None
        kind = _token(prim, Tokens.mbdFunctionType, _FUNCTION_TYPES, Tokens.constant)
        data = _array(prim, Tokens.mbdFunctionData).reshape(-1, 2)
        spec = TimeFunction(
            type=kind,
            value=_scalar(prim, Tokens.mbdFunctionValue),
            coefficients=_array(prim, Tokens.mbdFunctionCoefficients).tolist(),
            amplitude=_scalar(prim, Tokens.mbdFunctionAmplitude),
            frequency=_scalar(prim, Tokens.mbdFunctionFrequency),
            phase=_scalar(prim, Tokens.mbdFunctionPhase),
            shift=_scalar(prim, Tokens.mbdFunctionShift),
            slope=_scalar(prim, Tokens.mbdFunctionSlope),
            intercept=_scalar(prim, Tokens.mbdFunctionIntercept),
            data=[tuple(r) for r in data],
            repeat=bool(prim.GetAttribute(Tokens.mbdFunctionRepeat).Get()),
            repeatStart=_scalar(prim, Tokens.mbdFunctionRepeatStart),
            repeatWidth=_scalar(prim, Tokens.mbdFunctionRepeatWidth, 1.0),
            repeatShift=_scalar(prim, Tokens.mbdFunctionRepeatShift),
            scale=scale,
            label=f"{prim.GetPath()}: {Tokens.MbdTimeFunctionAPI}",
        )
        return self.function(spec)

    def scalar_signal(self, prim: Usd.Prim, name: str, scale: float) -> int:
        """A double attribute as a time function: its time samples, else its value."""
        attr = prim.GetAttribute(name)
        samples = _sampled(attr, self.units)
        label = _where(prim, name)
        if samples is None:
            return self.function(TimeFunction.constant_value(_scalar(prim, name), scale=scale, label=label))
        times, values = samples
        if not np.all(np.isfinite(values)):
            raise UsdphysError(f"{label}: time samples must be finite")
        return self.function(TimeFunction.from_samples(times, values, held=self.units.held, scale=scale, label=label))

    def vector_signal(self, prim: Usd.Prim, name: str, scale: float) -> list[int]:
        attr = prim.GetAttribute(name)
        samples = _sampled(attr, self.units)
        label = _where(prim, name)
        if samples is None:
            v = _vec(prim, name)
            return [self.function(TimeFunction.constant_value(v[i], scale=scale, label=label)) for i in range(3)]
        times, values = samples
        if values.ndim != 2 or values.shape[1] != 3 or not np.all(np.isfinite(values)):
            raise UsdphysError(f"{label}: time samples must be finite 3-vectors")
        return [self.function(TimeFunction.from_samples(times, values[:, i], held=self.units.held, scale=scale, label=label)) for i in range(3)]

    def curve(self, prim: Usd.Prim, name: str, sx: float, sy: float) -> list[tuple[float, float]]:
        pts = _array(prim, name).reshape(-1, 2)
        if np.any(np.diff(pts[:, 0]) <= 0):
            raise UsdphysError(f"{_where(prim, name)}: abscissae must be strictly ascending")
        return [(float(x) * sx, float(y) * sy) for x, y in pts]

    # -- elements ------------------------------------------------------------------------
    def spring_dampers(self, prims: list[Usd.Prim]) -> SpringDampers:
        u = self.units
        out = SpringDampers()
        laws, b0, b1, p0, p1, lo, hi, sm, sf = [], [], [], [], [], [], [], [], []
        for prim in prims:
            i0, path0 = self.body(prim, Tokens.mbdBody0)
            i1, path1 = self.body(prim, Tokens.mbdBody1)
            if path0 is None and path1 is None:
                raise UsdphysError(f"{prim.GetPath()}: MbdSpringDamper connects no body: set mbd:body0 and/or mbd:body1")
            defo = _array(prim, Tokens.mbdForceMapDeformation)
            vel = _array(prim, Tokens.mbdForceMapVelocity)
            vals = _array(prim, Tokens.mbdForceMapValues)
            if (len(defo) or len(vel) or len(vals)) and (len(vals) != len(defo) * len(vel) or not len(vals)):
                raise UsdphysError(f"{_where(prim, Tokens.mbdForceMapValues)} has {len(vals)} values; expected len(forceMapVelocity) x len(forceMapDeformation) = {len(vel)} x {len(defo)}")
            for name, arr in ((Tokens.mbdForceMapDeformation, defo), (Tokens.mbdForceMapVelocity, vel)):
                if np.any(np.diff(arr) <= 0):
                    raise UsdphysError(f"{_where(prim, name)} must be strictly ascending")
            law = ScalarLaw(
                k=_scalar(prim, Tokens.mbdStiffness) * u.mass,  # force/distance: kpu
                c=_scalar(prim, Tokens.mbdDamping) * u.mass,
                x0=_scalar(prim, Tokens.mbdRestLength) * u.length,
                preload=_scalar(prim, Tokens.mbdPreload) * u.force,
                spring_curve=self.curve(prim, Tokens.mbdSpringForceCurve, u.length, u.force),
                damping_curve=self.curve(prim, Tokens.mbdDampingForceCurve, u.length, u.force),
                map_deformation=(defo * u.length).tolist(),
                map_velocity=(vel * u.length).tolist(),
                map_values=(vals * u.force).tolist(),
                label=str(prim.GetPath()),
            )
            mn, mx = _optional(prim, Tokens.mbdMinLength), _optional(prim, Tokens.mbdMaxLength)
            if mn > mx:
                raise UsdphysError(f"{prim.GetPath()}: mbd:minLength {mn} exceeds mbd:maxLength {mx}")
            mass = _scalar(prim, Tokens.mbdSpringMass)
            frac = _scalar(prim, Tokens.mbdSpringMassFraction, 0.5)
            if mass < 0:
                raise UsdphysError(f"{_where(prim, Tokens.mbdSpringMass)} = {mass}: must be >= 0")
            if not 0.0 <= frac <= 1.0:
                raise UsdphysError(f"{_where(prim, Tokens.mbdSpringMassFraction)} = {frac}: must be in [0, 1]")
            out.paths.append(str(prim.GetPath()))
            laws.append(law)
            b0.append(i0)
            b1.append(i1)
            p0.append(self.point(prim, Tokens.mbdLocalPos0, path0))
            p1.append(self.point(prim, Tokens.mbdLocalPos1, path1))
            lo.append(mn * u.length)
            hi.append(mx * u.length)
            sm.append(mass * u.mass)
            sf.append(frac)
        n = len(out.paths)
        out.body0, out.body1 = np.array(b0, np.int32), np.array(b1, np.int32)
        out.local_pos0, out.local_pos1 = np.array(p0).reshape(n, 3), np.array(p1).reshape(n, 3)
        out.laws = pack_laws(laws)
        out.min_length, out.max_length = np.array(lo, float), np.array(hi, float)
        out.spring_mass, out.spring_mass_fraction = np.array(sm, float), np.array(sf, float)
        return out

    def axial(self, prims: list[Usd.Prim]) -> AxialSpringDampers:
        u = self.units
        out = AxialSpringDampers()
        rows = []
        for prim in prims:
            i0, path0 = self.body(prim, Tokens.mbdBody0)
            i1, path1 = self.body(prim, Tokens.mbdBody1)
            if path0 is None and path1 is None:
                raise UsdphysError(f"{prim.GetPath()}: MbdAxialSpringDamper connects no body: set mbd:body0 and/or mbd:body1")
            axis = _vec(prim, Tokens.mbdAxis, default=(1.0, 0.0, 0.0))
            norm = float(np.linalg.norm(axis))
            if norm == 0.0:
                raise UsdphysError(f"{_where(prim, Tokens.mbdAxis)} is the zero vector")
            active = prim.GetAttribute(Tokens.mbdActive).Get()
            out.paths.append(str(prim.GetPath()))
            out.user_law.append(_user_law(prim))
            rows.append((
                i0, i1, self.point(prim, Tokens.mbdLocalPos0, path0), self.point(prim, Tokens.mbdLocalPos1, path1),
                quat_rotate(self.static_rotation(path0), axis / norm),
                _scalar(prim, Tokens.mbdStiffness) * u.mass, _scalar(prim, Tokens.mbdDamping) * u.mass,
                _scalar(prim, Tokens.mbdOffset) * u.length, _scalar(prim, Tokens.mbdVelocityOffset) * u.length,
                _scalar(prim, Tokens.mbdForce) * u.force, 0 if active is False else 1,
            ))
        n = len(rows)
        cols = list(zip(*rows)) if rows else [()] * 11
        out.body0, out.body1 = np.array(cols[0], np.int32), np.array(cols[1], np.int32)
        out.local_pos0, out.local_pos1 = np.array(cols[2]).reshape(n, 3), np.array(cols[3]).reshape(n, 3)
        out.axis = np.array(cols[4]).reshape(n, 3)
        out.stiffness, out.damping = np.array(cols[5], float), np.array(cols[6], float)
        out.offset, out.velocity_offset = np.array(cols[7], float), np.array(cols[8], float)
        out.force, out.active = np.array(cols[9], float), np.array(cols[10], np.int32)
        return out

    def rotational(self, prims: list[Usd.Prim]) -> RotationalSpringDampers:
        u = self.units
        out = RotationalSpringDampers()
        laws, b0, b1, p0, r0, p1, r1 = [], [], [], [], [], [], []
        for prim in prims:
            i0, path0 = self.body(prim, Tokens.mbdBody0)
            i1, path1 = self.body(prim, Tokens.mbdBody1)
            if path0 is None and path1 is None:
                raise UsdphysError(f"{prim.GetPath()}: MbdRotationalSpringDamper connects no body: set mbd:body0 and/or mbd:body1")
            laws.append(ScalarLaw(
                k=_scalar(prim, Tokens.mbdStiffness) * u.torque * PER_DEG_TO_PER_RAD,
                c=_scalar(prim, Tokens.mbdDamping) * u.torque * PER_DEG_TO_PER_RAD,
                x0=_scalar(prim, Tokens.mbdRestAngle) * DEG,
                preload=_scalar(prim, Tokens.mbdPreload) * u.torque,
                spring_curve=self.curve(prim, Tokens.mbdSpringTorqueCurve, DEG, u.torque),
                damping_curve=self.curve(prim, Tokens.mbdDampingTorqueCurve, DEG, u.torque),
                label=str(prim.GetPath()),
            ))
            out.paths.append(str(prim.GetPath()))
            out.user_law.append(_user_law(prim))
            b0.append(i0)
            b1.append(i1)
            p0.append(self.point(prim, Tokens.mbdLocalPos0, path0))
            p1.append(self.point(prim, Tokens.mbdLocalPos1, path1))
            r0.append(quat_mul(self.static_rotation(path0), _quat(prim, Tokens.mbdLocalRot0)))
            r1.append(quat_mul(self.static_rotation(path1), _quat(prim, Tokens.mbdLocalRot1)))
        n = len(out.paths)
        out.body0, out.body1 = np.array(b0, np.int32), np.array(b1, np.int32)
        out.local_pos0, out.local_pos1 = np.array(p0).reshape(n, 3), np.array(p1).reshape(n, 3)
        out.local_rot0, out.local_rot1 = np.array(r0).reshape(n, 4), np.array(r1).reshape(n, 4)
        out.laws = pack_laws(laws)
        return out

    def loads(self, prims: list[Usd.Prim]) -> Loads:
        u = self.units
        out = Loads()
        torque, b0, b1, p1, res, vfn, sfn, rot = [], [], [], [], [], [], [], []
        for prim in prims:
            is_torque = prim.GetTypeName() == Tokens.MbdTorque
            i0, path0 = self.body(prim, Tokens.mbdBody0)
            i1, path1 = self.body(prim, Tokens.mbdBody1)
            if path1 is None:
                raise UsdphysError(f"{_where(prim, Tokens.mbdBody1)}: {prim.GetTypeName()} needs the body it acts on")
            name = Tokens.mbdTorque if is_torque else Tokens.mbdForce
            out.paths.append(str(prim.GetPath()))
            torque.append(1 if is_torque else 0)
            b0.append(i0)
            b1.append(i1)
            p1.append(np.zeros(3) if is_torque else self.point(prim, Tokens.mbdLocalPos1, path1))
            resolve = RESOLVE_IDS[_token(prim, Tokens.mbdResolveIn, tuple(RESOLVE_IDS), Tokens.world)]
            frame_body = {RESOLVE_BODY0: path0, RESOLVE_BODY1: path1}.get(resolve)
            if frame_body in self.static:  # axes of a static body: fixed, so world axes + rotation
                resolve = RESOLVE_WORLD
            res.append(resolve)
            rot.append(self.static_rotation(frame_body))
            vfn.append(self.vector_signal(prim, name, u.torque if is_torque else u.force))
            s = self.time_function_api(prim, 1.0)
            sfn.append(s if s is not None else self.function(TimeFunction.constant_value(1.0, label=str(prim.GetPath()))))
        n = len(out.paths)
        out.torque, out.body0, out.body1 = np.array(torque, np.int32), np.array(b0, np.int32), np.array(b1, np.int32)
        out.local_pos1 = np.array(p1).reshape(n, 3)
        out.resolve_in = np.array(res, np.int32)
        out.world_rot = np.array(rot, float).reshape(n, 4)
        out.vector_fn = np.array(vfn, np.int32).reshape(n, 3)
        out.scale_fn = np.array(sfn, np.int32)
        return out

    def motors(self, prims: list[Usd.Prim]) -> Motors:
        u = self.units
        out = Motors()
        jidx, ang, mode, fns = [], [], [], []
        for prim in prims:
            joint = _target(prim, Tokens.mbdJoint)
            if joint is None:
                raise UsdphysError(f"{_where(prim, Tokens.mbdJoint)}: MbdMotor needs the joint whose DOF it drives")
            if not joint.IsA(UsdPhysics.Joint):
                raise UsdphysError(f"{_where(prim, Tokens.mbdJoint)} points at {joint.GetPath()}, which is not a PhysicsJoint")
            dof = _token(prim, Tokens.mbdDof, ALL_DOFS, Tokens.angle)
            allowed = valid_dofs_for_joint(joint)
            if dof not in allowed:
                raise UsdphysError(f"{_where(prim, Tokens.mbdDof)} = '{dof}' is not a DOF of {joint.GetPath()} ({joint.GetTypeName()}); expected one of: {', '.join(allowed) or 'none'}")
            m = MODE_IDS[_token(prim, Tokens.mbdMode, tuple(MODE_IDS), Tokens.velocity)]
            angular = dof in ANGULAR_DOFS
            if m == MODE_FORCE:
                scale = u.torque if angular else u.force
            else:
                scale = DEG if angular else u.length
            fn = self.time_function_api(prim, scale)
            if fn is None:
                fn = self.scalar_signal(prim, Tokens.mbdTarget, scale)
            out.paths.append(str(prim.GetPath()))
            out.joint_paths.append(str(joint.GetPath()))
            out.dof.append(dof)
            jidx.append(self.joint(str(joint.GetPath())))
            ang.append(1 if angular else 0)
            mode.append(m)
            fns.append(fn)
        out.joint, out.angular = np.array(jidx, np.int32), np.array(ang, np.int32)
        out.mode, out.fn = np.array(mode, np.int32), np.array(fns, np.int32)
        return out

    def bushings(self, prims: list[Usd.Prim]) -> Bushings:
        u = self.units
        out = Bushings()
        lin, ang = u.mass, u.torque * PER_DEG_TO_PER_RAD
        names = {  # field -> (attribute, factor)
            "linear_stiffness": (Tokens.mbdBushingLinearStiffness, lin),
            "linear_damping": (Tokens.mbdBushingLinearDamping, lin),
            "angular_stiffness": (Tokens.mbdBushingAngularStiffness, ang),
            "angular_damping": (Tokens.mbdBushingAngularDamping, ang),
            "free_linear_stiffness": (Tokens.mbdBushingFreeLinearStiffness, lin),
            "free_linear_damping": (Tokens.mbdBushingFreeLinearDamping, lin),
            "free_angular_stiffness": (Tokens.mbdBushingFreeAngularStiffness, ang),
            "free_angular_damping": (Tokens.mbdBushingFreeAngularDamping, ang),
        }
        cols: dict[str, list[float]] = {k: [] for k in names}
        jidx = []
        for prim in prims:
            if not prim.IsA(UsdPhysics.Joint):
                raise UsdphysError(f"{prim.GetPath()}: MbdBushingAPI applies only to PhysicsJoint prims")
            for field_name, (attr, factor) in names.items():
                v = _scalar(prim, attr)
                if v < 0:
                    raise UsdphysError(f"{_where(prim, attr)} = {v}: must be >= 0")
                cols[field_name].append(v * factor)
            out.joint_paths.append(str(prim.GetPath()))
            jidx.append(self.joint(str(prim.GetPath())))
        out.joint = np.array(jidx, np.int32)
        for k, v in cols.items():
            setattr(out, k, np.array(v, float))
        return out

    def joint_dofs(self, prims: list[Usd.Prim]) -> JointDofProperties:
        out = JointDofProperties()
        rows = []
        for prim in prims:
            if not prim.IsA(UsdPhysics.Joint):
                raise UsdphysError(f"{prim.GetPath()}: NewtonJointAPI applies only to PhysicsJoint prims")
            rows.extend(self._newton(prim))
        u = self.units
        names = ("joint", "angular", "armature", "static_friction", "dynamic_friction", "viscous_damping", "scalar_form",
                 "velocity_limit", "limit_stiffness", "limit_damping", "spring_stiffness", "spring_reference")
        cols: dict[str, list] = {k: [] for k in names}
        for path, jidx, dof, arm, st, dyn, visc, scalar, extra in rows:
            angular = dof in ANGULAR_DOFS
            effort = u.torque if angular else u.force
            # per unit of the DOF's coordinate: degrees (-> radians) or stage lengths (-> metres)
            per_q = u.torque * PER_DEG_TO_PER_RAD if angular else u.mass
            q_unit = DEG if angular else u.length
            out.joint_paths.append(path)
            out.dof.append(dof)
            cols["joint"].append(jidx)
            cols["angular"].append(1 if angular else 0)
            cols["armature"].append(arm * (u.torque if angular else u.mass))
            cols["static_friction"].append(st * effort)
            cols["dynamic_friction"].append(dyn * effort)
            cols["viscous_damping"].append(visc * per_q)
            cols["scalar_form"].append(scalar)
            vlim, lk, lc, sk, sref = extra
            cols["velocity_limit"].append(vlim * q_unit)
            cols["limit_stiffness"].append(lk * per_q)
            cols["limit_damping"].append(lc * per_q)
            cols["spring_stiffness"].append(sk * per_q)
            cols["spring_reference"].append(sref * q_unit)
        for name, vals in cols.items():
            setattr(out, name, np.array(vals, dtype=np.int32 if name in ("joint", "angular", "scalar_form") else np.float64))
        return out

    def _scalar_extras(self, prim: Usd.Prim) -> tuple:
        """(velocity limit, limit stiffness, limit damping, spring stiffness, spring reference)
        authored on a joint, in the stage's units per DEGREE for angular DOFs (as NewtonJointAPI
        writes them): velocityLimit inf = none; limitStiffness inf = a hard limit (also for
        -inf, "the engine's default": usdphys' limits are hard); a finite limitStiffness makes
        the limit a spring-damper acting only beyond it (limitDamping -inf = 0)."""
        def authored(name):
            attr = prim.GetAttribute(name)
            if not attr or not attr.HasAuthoredValue():
                return None
            v = attr.Get()
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise UsdphysError(f"{_where(prim, name)} = {v!r}: expected a number") from None
            if math.isnan(v):
                raise UsdphysError(f"{_where(prim, name)} = nan: expected a number")
            return v

        vlim = authored(NEWTON_VELOCITY_LIMIT)
        if vlim is None:
            vlim = math.inf
        elif not vlim > 0:
            raise UsdphysError(f"{_where(prim, NEWTON_VELOCITY_LIMIT)} = {vlim:g}: expected a speed > 0 (inf: no limit)")
        lk = authored(NEWTON_LIMIT_STIFFNESS)
        lk = math.inf if lk is None or lk == -math.inf else lk
        if lk < 0:
            raise UsdphysError(f"{_where(prim, NEWTON_LIMIT_STIFFNESS)} = {lk:g}: expected >= 0, inf (hard limit) "
                               "or -inf (the engine's default: hard here)")
        lc = authored(NEWTON_LIMIT_DAMPING)
        lc = 0.0 if lc is None or lc == -math.inf else lc
        if not (0 <= lc < math.inf):
            raise UsdphysError(f"{_where(prim, NEWTON_LIMIT_DAMPING)} = {lc:g}: expected a finite value >= 0 "
                               "(or -inf: the engine's default, 0 here)")
        sk, sref = mujoco_joint_spring(prim, _scalar)
        return vlim, lk, lc, sk, sref

    def _newton(self, prim: Usd.Prim) -> list[tuple]:
        path = str(prim.GetPath())
        jidx = self.joint(path)
        names = (Tokens.newtonArmature, Tokens.newtonStaticFrictionEffort, Tokens.newtonDynamicFrictionEffort, Tokens.newtonViscousDamping)
        # Authored values only: under newton-usd-schemas' definition an unauthored
        # newton:armature has a float fallback, which must not read as the scalar form.
        raw = {n: (prim.GetAttribute(n).Get() if prim.GetAttribute(n).HasAuthoredValue() else None) for n in names}
        scalar_names = [n for n in names if isinstance(raw[n], (int, float))]
        extra = {n: prim.GetAttribute(n) for n in _SCALAR_ONLY}
        scalar_names += [n for n, a in extra.items() if a and a.HasAuthoredValue()]
        extras = self._scalar_extras(prim)
        if scalar_names or not has_newton_joint_api(prim):
            # newton-usd-schemas form (or only MuJoCo's joint spring): broadcast to every DOF
            # the joint leaves free
            def val(name: str) -> float:
                v = _scalar(prim, name)
                if v < 0:
                    raise UsdphysError(f"{_where(prim, name)} = {v}: must be >= 0")
                return v
            arm = val(Tokens.newtonArmature) if Tokens.newtonArmature in scalar_names else 0.0
            friction = val(NEWTON_FRICTION) if NEWTON_FRICTION in scalar_names else 0.0
            dyn = val(Tokens.newtonDynamicFrictionEffort) if Tokens.newtonDynamicFrictionEffort in scalar_names else friction
            st = val(Tokens.newtonStaticFrictionEffort) if Tokens.newtonStaticFrictionEffort in scalar_names else dyn
            damping = val(NEWTON_DAMPING) if NEWTON_DAMPING in scalar_names else 0.0
            visc = val(Tokens.newtonViscousDamping) if Tokens.newtonViscousDamping in scalar_names else damping
            if dyn > st:
                raise UsdphysError(f"{path}: newton:dynamicFrictionEffort {dyn} exceeds newton:staticFrictionEffort {st} (scalar form)")
            return [(path, jidx, dof, arm, st, dyn, visc, 1, extras) for dof in free_dofs(prim)]
        dofs = [str(t) for t in (prim.GetAttribute(Tokens.newtonDofs).Get() or [])]
        allowed = valid_dofs_for_joint(prim)
        for dof in dofs:
            if dof not in allowed:
                raise UsdphysError(f"{_where(prim, Tokens.newtonDofs)}: '{dof}' is not a DOF of a {prim.GetTypeName()}; expected one of: {', '.join(allowed) or 'none'}")
        if len(set(dofs)) != len(dofs):
            raise UsdphysError(f"{_where(prim, Tokens.newtonDofs)}: a DOF is named more than once: {dofs}")
        arrays = {}
        for name in names:
            vals = [float(v) for v in (raw[name] or [])]
            if vals and len(vals) != len(dofs):
                raise UsdphysError(f"{_where(prim, name)} has {len(vals)} values but newton:dofs has {len(dofs)}")
            for i, v in enumerate(vals):
                if not math.isfinite(v) or v < 0:
                    raise UsdphysError(f"{_where(prim, name)}[{i}] ({dofs[i]}) = {v}: must be a finite value >= 0")
            arrays[name] = vals or None
        zeros = [0.0] * len(dofs)
        arm = arrays[Tokens.newtonArmature] or zeros
        dyn = arrays[Tokens.newtonDynamicFrictionEffort] or zeros
        st = arrays[Tokens.newtonStaticFrictionEffort] or dyn  # only dynamic authored: static = dynamic
        visc = arrays[Tokens.newtonViscousDamping] or zeros
        for i, (s, d) in enumerate(zip(st, dyn)):
            if d > s:
                raise UsdphysError(f"{_where(prim, Tokens.newtonDynamicFrictionEffort)}[{i}] ({dofs[i]}) = {d} exceeds newton:staticFrictionEffort[{i}] = {s}")
        rows = [(path, jidx, dofs[i], arm[i], st[i], dyn[i], visc[i], 0, extras) for i in range(len(dofs))]
        if extras[3] > 0:  # MuJoCo's joint spring beside the per-DOF form: on every free DOF
            listed = set(dofs)
            rows += [(path, jidx, dof, 0.0, 0.0, 0.0, 0.0, 0, extras) for dof in free_dofs(prim) if dof not in listed]
        return rows


    def couplings(self, prims: list[Usd.Prim]) -> Couplings:
        """NewtonMimicAPI on 1-DOF joints: follower = coef0 + coef1 * leader, coef0 in the
        follower's units (degrees or stage lengths), coef1 between the joints' coordinates in
        radians and stage lengths. A relationship that leads nowhere usable is a warning (the
        coupling is dropped)."""
        out = Couplings()
        for prim in prims:
            path = str(prim.GetPath())
            attr = prim.GetAttribute(NEWTON_MIMIC_ENABLED)
            if attr and attr.HasAuthoredValue() and not attr.Get():
                continue  # authored off: the joint moves on its own
            rel = prim.GetRelationship(NEWTON_MIMIC_JOINT)
            targets = rel.GetTargets() if rel else []
            leader = prim.GetStage().GetPrimAtPath(targets[0]) if len(targets) == 1 else None
            if not leader or not leader.IsA(UsdPhysics.Joint):
                what = ("has no target" if not targets else f"has {len(targets)} targets" if len(targets) > 1
                        else f"targets {targets[0]}, which is not a PhysicsJoint")
                warn(f"{_where(prim, NEWTON_MIMIC_JOINT)} {what}; the coupling is ignored (the joint moves on its own)")
                continue
            dofs, ldofs = free_dofs(prim), free_dofs(leader)
            if len(dofs) != 1 or len(ldofs) != 1:
                warn(f"{path}: NewtonMimicAPI couples 1-DOF joints only ({path} has {len(dofs)} DOFs, {leader.GetPath()} "
                     f"{len(ldofs)}); the coupling is ignored")
                continue
            angular, langular = dofs[0] in ANGULAR_DOFS, ldofs[0] in ANGULAR_DOFS
            coef0 = _scalar(prim, NEWTON_MIMIC_COEF0, 0.0)
            coef1 = _scalar(prim, NEWTON_MIMIC_COEF1, 1.0)
            higher = [n for n in MJC_POLY_COEFS if _scalar(prim, n, 0.0) != 0.0]
            if higher:
                warn(f"{path}: the joint coupling's terms {', '.join(higher)} are not simulated; "
                     "the coupling is linear (newton:mimicCoef0 + newton:mimicCoef1 * leader)")
            out.paths.append(path)
            out.dof.append(dofs[0])
            out.leader_paths.append(str(leader.GetPath()))
            out.leader_dof.append(ldofs[0])
            out.joint = np.append(out.joint, self.joint(path)).astype(np.int32)
            out.leader = np.append(out.leader, self.joint(str(leader.GetPath()))).astype(np.int32)
            out.coef0 = np.append(out.coef0, coef0 * (DEG if angular else self.units.length))
            # coef1 relates the joints' own coordinates (radians, stage lengths), as Newton's importer
            # and MuJoCo's polycoef read it: dimensionless between joints of one kind, radians per
            # stage length where a hinge follows a slide (a gymnasium kitchen knob and its burner)
            follower_unit = 1.0 if angular else self.units.length
            leader_unit = 1.0 if langular else self.units.length
            out.coef1 = np.append(out.coef1, coef1 * follower_unit / leader_unit)
        return out


def free_dofs(joint: Usd.Prim) -> tuple[str, ...]:
    """DOF tokens a joint leaves free: its typed DOFs, or for a generic/other joint the six
    LimitAPI names minus those locked by a PhysicsLimitAPI with low > high."""
    allowed = valid_dofs_for_joint(joint)
    if tuple(allowed) != tuple(LIMIT_DOFS):
        return tuple(allowed)
    free = []
    for dof in LIMIT_DOFS:
        limit = UsdPhysics.LimitAPI(joint, dof)
        if joint.HasAPI(UsdPhysics.LimitAPI, dof):
            lo, hi = limit.GetLowAttr().Get(), limit.GetHighAttr().Get()
            if lo is not None and hi is not None and lo > hi:
                continue
        free.append(dof)
    return tuple(free)


# newton-usd-schemas' scalar attributes (newton:armature shares our per-DOF name)
_SCALAR_ONLY = NEWTON_SCALAR_ONLY
_SCALAR_NEWTON = (Tokens.newtonArmature,) + _SCALAR_ONLY
# joints read for their per-DOF properties even without NewtonJointAPI
_DOF_ATTRIBUTES = _SCALAR_NEWTON + (MJC_STIFFNESS,)


def _user_law(prim: Usd.Prim) -> str:
    """mbd:userLaw: the name of a law the simulation supplies ("" = the element's own law)."""
    value = prim.GetAttribute(Tokens.mbdUserLaw).Get()
    return str(value).strip() if value else ""


_ELEMENT_TYPES = (Tokens.MbdSpringDamper, Tokens.MbdAxialSpringDamper, Tokens.MbdRotationalSpringDamper, Tokens.MbdForce, Tokens.MbdTorque, Tokens.MbdMotor)


def read_elements(
    stage: Usd.Stage,
    body_index: BodyIndex,
    joint_index: Optional[Callable[[str], int]] = None,
    body_scale: Optional[Callable[[str], Sequence[float]]] = None,
) -> Elements:
    """Every Mbd* element, bushing and NewtonJointAPI joint of the stage as SI tables."""
    reader = _Reader(stage, body_index, joint_index, body_scale)
    by_type: dict[str, list[Usd.Prim]] = {t: [] for t in _ELEMENT_TYPES}
    bushing_joints, newton_joints, mimic_joints = [], [], []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        t = prim.GetTypeName()
        if t in by_type:
            by_type[t].append(prim)
        applied = prim.GetAppliedSchemas()
        if Tokens.MbdBushingAPI in applied:
            bushing_joints.append(prim)
        if has_newton_joint_api(prim) or (prim.IsA(UsdPhysics.Joint) and any(
                prim.GetAttribute(n) and prim.GetAttribute(n).HasAuthoredValue() for n in _DOF_ATTRIBUTES)):
            newton_joints.append(prim)  # scalar newton-usd-schemas attributes count without the API too
        if prim.IsA(UsdPhysics.Joint) and (has_api(prim, NEWTON_MIMIC_API) or prim.HasRelationship(NEWTON_MIMIC_JOINT)):
            mimic_joints.append(prim)
    spring_dampers = reader.spring_dampers(by_type[Tokens.MbdSpringDamper])
    axial = reader.axial(by_type[Tokens.MbdAxialSpringDamper])
    rotational = reader.rotational(by_type[Tokens.MbdRotationalSpringDamper])
    loads = reader.loads(by_type[Tokens.MbdForce] + by_type[Tokens.MbdTorque])
    motors = reader.motors(by_type[Tokens.MbdMotor])
    bushings = reader.bushings(bushing_joints)
    joint_dofs = reader.joint_dofs(newton_joints)
    return Elements(
        units=reader.units,
        spring_dampers=spring_dampers,
        axial_spring_dampers=axial,
        rotational_spring_dampers=rotational,
        loads=loads,
        motors=motors,
        bushings=bushings,
        joint_dofs=joint_dofs,
        functions=reader.functions.pack(),
        couplings=reader.couplings(mimic_joints),
    )
