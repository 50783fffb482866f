"""The tables of force elements, loads, motors, bushings and per-DOF joint properties:
plain NumPy arrays in SI units and radians (usdphys.usd.reader.elements fills them from a stage).

Units (docs/forces.md has the table): lengths in metres, masses in kilograms, forces in
newtons, torques in N m; every angle, angular speed, per-degree stiffness or damping is in
radians. Time-function outputs carry the stage-unit conversion in their ``scale`` column.
Quaternions are (x, y, z, w) as everywhere in the host code (usdphys.math3d).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from usdphys.types.enums import MotorMode, Resolve
from usdphys.types.laws import PackedLaws, pack_laws
from usdphys.types.timefunc import PackedTimeFunctions

PER_DEG_TO_PER_RAD = 180.0 / math.pi  # (x per degree) * this = x per radian
DEG = math.pi / 180.0

RESOLVE_WORLD, RESOLVE_BODY0, RESOLVE_BODY1 = Resolve.WORLD, Resolve.BODY0, Resolve.BODY1
RESOLVE_IDS = {"world": RESOLVE_WORLD, "body0": RESOLVE_BODY0, "body1": RESOLVE_BODY1}
MODE_POSITION, MODE_VELOCITY, MODE_FORCE = MotorMode.POSITION, MotorMode.VELOCITY, MotorMode.FORCE
MODE_IDS = {"position": MODE_POSITION, "velocity": MODE_VELOCITY, "force": MODE_FORCE}


@dataclass(frozen=True)
class Units:
    meters_per_unit: float = 1.0
    kilograms_per_unit: float = 1.0
    time_codes_per_second: float = 24.0
    held: bool = False  # stage time-sample interpolation is "held" (else linear)

    @property
    def length(self) -> float:
        return self.meters_per_unit

    @property
    def mass(self) -> float:
        return self.kilograms_per_unit

    @property
    def force(self) -> float:
        return self.kilograms_per_unit * self.meters_per_unit

    @property
    def torque(self) -> float:
        return self.kilograms_per_unit * self.meters_per_unit ** 2


def _i(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.int32)


def _f(*shape: int) -> np.ndarray:
    return np.zeros(shape or (0,), dtype=np.float64)


@dataclass
class SpringDampers:
    """MbdSpringDamper. Law row e of ``laws`` (types.laws.pack_laws layout) has x = L (m),
    k N/m, c N s/m, x0 = restLength m, preload N, curves/map in N over m and m/s."""

    paths: list[str] = field(default_factory=list)
    body0: np.ndarray = field(default_factory=_i)
    body1: np.ndarray = field(default_factory=_i)
    local_pos0: np.ndarray = field(default_factory=lambda: _f(0, 3))  # m, body0 prim frame
    local_pos1: np.ndarray = field(default_factory=lambda: _f(0, 3))
    laws: PackedLaws = field(default_factory=lambda: pack_laws([]))
    min_length: np.ndarray = field(default_factory=_f)  # m; NaN = no stop
    max_length: np.ndarray = field(default_factory=_f)  # m; NaN = no stop
    spring_mass: np.ndarray = field(default_factory=_f)  # kg
    spring_mass_fraction: np.ndarray = field(default_factory=_f)  # 0 at p0, 1 at p1

    def __len__(self) -> int:
        return len(self.paths)


@dataclass
class AxialSpringDampers:
    """MbdAxialSpringDamper (Exudyn LinearSpringDamper); SI."""

    paths: list[str] = field(default_factory=list)
    body0: np.ndarray = field(default_factory=_i)
    body1: np.ndarray = field(default_factory=_i)
    local_pos0: np.ndarray = field(default_factory=lambda: _f(0, 3))
    local_pos1: np.ndarray = field(default_factory=lambda: _f(0, 3))
    axis: np.ndarray = field(default_factory=lambda: _f(0, 3))  # unit, body0 prim frame
    stiffness: np.ndarray = field(default_factory=_f)  # N/m
    damping: np.ndarray = field(default_factory=_f)  # N s/m
    offset: np.ndarray = field(default_factory=_f)  # m
    velocity_offset: np.ndarray = field(default_factory=_f)  # m/s
    force: np.ndarray = field(default_factory=_f)  # N
    active: np.ndarray = field(default_factory=_i)  # 1 / 0
    user_law: list[str] = field(default_factory=list)  # mbd:userLaw per element ("" = linear law)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass
class RotationalSpringDampers:
    """MbdRotationalSpringDamper. Law rows: x = theta (rad), k N m/rad, c N m s/rad,
    x0 = restAngle rad, preload N m, curve abscissae rad and rad/s."""

    paths: list[str] = field(default_factory=list)
    body0: np.ndarray = field(default_factory=_i)
    body1: np.ndarray = field(default_factory=_i)
    local_pos0: np.ndarray = field(default_factory=lambda: _f(0, 3))
    local_rot0: np.ndarray = field(default_factory=lambda: _f(0, 4))  # xyzw
    local_pos1: np.ndarray = field(default_factory=lambda: _f(0, 3))
    local_rot1: np.ndarray = field(default_factory=lambda: _f(0, 4))
    laws: PackedLaws = field(default_factory=lambda: pack_laws([]))
    user_law: list[str] = field(default_factory=list)  # mbd:userLaw per element ("" = packed law)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass
class Loads:
    """MbdForce (``torque = 0``) and MbdTorque (``torque = 1``) rows.

    Vector at time t (SI, axes named by ``resolve_in``):
        (u[vector_fn[e, 0]](t), u[vector_fn[e, 1]](t), u[vector_fn[e, 2]](t)) * u[scale_fn[e]](t)
    with u = timefunc.eval_time_function on Elements.functions. body1 receives it (a force at
    local_pos1), body0 (-1 = world) the opposite (a force at the same world point)."""

    paths: list[str] = field(default_factory=list)
    torque: np.ndarray = field(default_factory=_i)
    body0: np.ndarray = field(default_factory=_i)
    body1: np.ndarray = field(default_factory=_i)
    local_pos1: np.ndarray = field(default_factory=lambda: _f(0, 3))  # m, body1 prim frame (0 for torques)
    resolve_in: np.ndarray = field(default_factory=_i)  # RESOLVE_WORLD / BODY0 / BODY1
    # xyzw; for RESOLVE_WORLD rows the vector is rotated by it (identity unless resolveIn
    # named a static body, whose fixed axes are folded in here)
    world_rot: np.ndarray = field(default_factory=lambda: _f(0, 4))
    vector_fn: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int32))
    scale_fn: np.ndarray = field(default_factory=_i)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass
class Motors:
    """MbdMotor. u = eval_time_function(t, fn[e], ...) is SI: m, m/s or N (linear DOF);
    rad, rad/s or N m (angular DOF); du/dt from eval_time_function_dt."""

    paths: list[str] = field(default_factory=list)
    joint_paths: list[str] = field(default_factory=list)
    joint: np.ndarray = field(default_factory=_i)  # joint_index(path), or -1
    dof: list[str] = field(default_factory=list)  # NewtonJointAPI token
    angular: np.ndarray = field(default_factory=_i)
    mode: np.ndarray = field(default_factory=_i)  # MODE_POSITION / VELOCITY / FORCE
    fn: np.ndarray = field(default_factory=_i)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass
class Bushings:
    """MbdBushingAPI on joints; linear N/m, N s/m; angular N m/rad, N m s/rad."""

    joint_paths: list[str] = field(default_factory=list)
    joint: np.ndarray = field(default_factory=_i)
    linear_stiffness: np.ndarray = field(default_factory=_f)
    linear_damping: np.ndarray = field(default_factory=_f)
    angular_stiffness: np.ndarray = field(default_factory=_f)
    angular_damping: np.ndarray = field(default_factory=_f)
    free_linear_stiffness: np.ndarray = field(default_factory=_f)
    free_linear_damping: np.ndarray = field(default_factory=_f)
    free_angular_stiffness: np.ndarray = field(default_factory=_f)
    free_angular_damping: np.ndarray = field(default_factory=_f)

    def __len__(self) -> int:
        return len(self.joint_paths)


@dataclass
class JointDofProperties:
    """NewtonJointAPI (and MuJoCo's joint spring), one row per (joint, DOF); both the per-DOF
    array form and the scalar newton-usd-schemas form (broadcast; ``scalar_form`` = 1). SI / radians:
    armature kg or kg m^2; efforts N or N m; viscous N s/m or N m s/rad."""

    joint_paths: list[str] = field(default_factory=list)
    joint: np.ndarray = field(default_factory=_i)
    dof: list[str] = field(default_factory=list)
    angular: np.ndarray = field(default_factory=_i)
    armature: np.ndarray = field(default_factory=_f)
    static_friction: np.ndarray = field(default_factory=_f)
    dynamic_friction: np.ndarray = field(default_factory=_f)
    viscous_damping: np.ndarray = field(default_factory=_f)
    scalar_form: np.ndarray = field(default_factory=_i)
    # newton-usd-schemas' scalar form only (defaults elsewhere): the DOF's speed bound (m/s or
    # rad/s; inf: none), soft limits (stiffness N/m or N m/rad, inf: hard limit; damping
    # N s/m or N m s/rad, acting only beyond the limit)
    velocity_limit: np.ndarray = field(default_factory=_f)
    limit_stiffness: np.ndarray = field(default_factory=_f)
    limit_damping: np.ndarray = field(default_factory=_f)
    # a joint spring on the DOF (MuJoCo's mjc:stiffness / mjc:springref): f = -k (q - q_ref)
    spring_stiffness: np.ndarray = field(default_factory=_f)
    spring_reference: np.ndarray = field(default_factory=_f)

    def __len__(self) -> int:
        return len(self.joint_paths)


@dataclass
class Couplings:
    """Joint couplings (NewtonMimicAPI, MuJoCo's joint equality): the follower DOF's coordinate
    q_f = coef0 + coef1 q_l, q_l the leader's. coef0 in m or rad (the follower's unit)."""

    paths: list[str] = field(default_factory=list)  # follower joint
    joint: np.ndarray = field(default_factory=_i)
    dof: list[str] = field(default_factory=list)
    leader_paths: list[str] = field(default_factory=list)
    leader: np.ndarray = field(default_factory=_i)
    leader_dof: list[str] = field(default_factory=list)
    coef0: np.ndarray = field(default_factory=_f)
    coef1: np.ndarray = field(default_factory=_f)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass
class Elements:
    units: Units
    spring_dampers: SpringDampers
    axial_spring_dampers: AxialSpringDampers
    rotational_spring_dampers: RotationalSpringDampers
    loads: Loads
    motors: Motors
    bushings: Bushings
    joint_dofs: JointDofProperties
    functions: PackedTimeFunctions  # shared by loads and motors
    couplings: Couplings = field(default_factory=Couplings)
