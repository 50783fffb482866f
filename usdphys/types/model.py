"""The one Model type handed from the reader to the solver: flat numpy arrays, SI units.

Everything here is in SI (metres, kilograms, seconds, radians), world axes as in the stage
(the stage's up axis only decides the default gravity direction). Quaternions are stored
scalar-LAST, (x, y, z, w), like Warp and SciPy.

Bodies (B of them) are the simulated rigid bodies (dynamic or kinematic). Anything static
(static bodies, colliders without a body, the stage itself) is "the world", index -1.
A body's *prim frame* is its USD prim's world transform without scale; its *COM frame* sits
at the centre of mass with axes along the principal axes of inertia (the solver works in
COM frames; `body_com_pos` / `body_com_rot` give the COM frame inside the prim frame).

Joints (J of them) are described per degree of freedom in the joint's frame 0 (on body0):
DOF order transX, transY, transZ, rotX, rotY, rotZ. A DOF is locked, limited, driven or
free. `constraint_rows()` turns joints into the generic constraint-row table the solver
consumes; motors, bushings and contact add rows of the same kinds, and
force elements go into a parallel force table evaluated in the solver's predictor.

Per-world data (the initial state) has a leading world axis W; the model description is
shared by all worlds, except the values of the parameters in usdphys.types.params, which
``set_parameter`` may give per world (``world_parameters``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from usdphys.math3d import quat_conj, quat_mul, quat_rotate
from usdphys.types.enums import Composite, RowKind, RowMode

DOF_NAMES = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")

# short names for the enum members, as the row-building code below uses them
ROW_LIN, ROW_PERP, ROW_TWIST, ROW_DIST, ROW_LIN1 = RowKind.LIN, RowKind.PERP, RowKind.TWIST, RowKind.DIST, RowKind.LIN1
ROW_CROSS = RowKind.CROSS
ROW_POINT = RowKind.POINT
ROW_SWING = RowKind.SWING
ROW_KIND_NAMES = ("linear", "perpendicular", "twist", "distance", "linear1", "point", "cross", "swing")
MODE_EQUAL, MODE_LOWER, MODE_UPPER, MODE_SOFT = RowMode.EQUAL, RowMode.LOWER, RowMode.UPPER, RowMode.SOFT
MODE_LAW, MODE_FRICTION = RowMode.LAW, RowMode.FRICTION
COMPOSITE_NONE = Composite.NONE
COMPOSITE_REVOLUTE_SPHERICAL = Composite.REVOLUTE_SPHERICAL
COMPOSITE_REVOLUTE_TRANSLATIONAL = Composite.REVOLUTE_TRANSLATIONAL


@dataclass
class RowTable:
    """Generic constraint rows (R of them), shared by all worlds.

    Each row relates frame 0 (p0, q0 in body0's COM frame, or in the world when b0 = -1)
    and frame 1 (on b1). See ROW_* kinds and MODE_* modes. For MODE_SOFT rows: stiffness
    and damping (SI, per radian for angular rows), `value` is the target position,
    `target_vel` the target velocity, `max_force` the force / torque bound, `accel` = 1
    scales stiffness and damping by the row's effective mass (UsdPhysics acceleration drive).
    """

    source: np.ndarray  # (R,) index of the joint (or other element) the row came from
    kind: np.ndarray  # (R,) ROW_*
    axis: np.ndarray  # (R,) axis index (ROW_PERP: 3 a + b)
    mode: np.ndarray  # (R,) MODE_*
    value: np.ndarray  # (R,)
    b0: np.ndarray  # (R,) body index or -1
    b1: np.ndarray
    p0: np.ndarray  # (R, 3)
    q0: np.ndarray  # (R, 4) xyzw
    p1: np.ndarray
    q1: np.ndarray
    stiffness: np.ndarray  # (R,)
    damping: np.ndarray
    target_vel: np.ndarray
    max_force: np.ndarray
    accel: np.ndarray  # (R,) int

    @property
    def count(self) -> int:
        return int(self.kind.shape[0])


# the Model's per-joint arrays (row j of each is joint j): what dropping or reordering joints touches
PER_JOINT_ARRAYS = ("joint_body0", "joint_body1", "joint_pos0", "joint_rot0", "joint_pos1", "joint_rot1",
                    "joint_locked", "joint_lower", "joint_upper", "joint_drive_stiffness", "joint_drive_damping",
                    "joint_drive_target_pos", "joint_drive_target_vel", "joint_drive_max_force", "joint_drive_accel",
                    "joint_dist_min", "joint_dist_max", "joint_is_distance", "joint_composite",
                    "joint_composite_distance", "joint_anchor_offset", "joint_cone_axis", "joint_cone")


@dataclass
class Model:
    """Bodies, joints and gravity in SI units; initial state with a world axis."""

    body_paths: list[str] = field(default_factory=list)
    body_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (B,) kg
    body_inertia: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # principal, kg m^2
    body_com_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # in prim frame, m
    body_com_rot: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))  # principal axes, xyzw
    body_kinematic: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # (B,)
    # initial state of the PRIM frame, per world: (W, B, ...). Velocities are world-frame:
    # linear velocity of the centre of mass (m/s), angular velocity (rad/s).
    body_pos: np.ndarray = field(default_factory=lambda: np.zeros((1, 0, 3)))
    body_rot: np.ndarray = field(default_factory=lambda: np.zeros((1, 0, 4)))
    body_lin_vel: np.ndarray = field(default_factory=lambda: np.zeros((1, 0, 3)))
    body_ang_vel: np.ndarray = field(default_factory=lambda: np.zeros((1, 0, 3)))
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))

    joint_paths: list[str] = field(default_factory=list)
    joint_type: list[str] = field(default_factory=list)  # for messages
    joint_body0: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # -1: world
    joint_body1: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    # joint frames in the body's PRIM frame (world frame when the body is -1), SI
    joint_pos0: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    joint_rot0: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    joint_pos1: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    joint_rot1: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    joint_locked: np.ndarray = field(default_factory=lambda: np.zeros((0, 6), bool))
    joint_lower: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))  # -inf: none (m / rad)
    joint_upper: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))  # +inf: none
    joint_drive_stiffness: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))  # SI, per rad
    joint_drive_damping: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    joint_drive_target_pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    joint_drive_target_vel: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    joint_drive_max_force: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    joint_drive_accel: np.ndarray = field(default_factory=lambda: np.zeros((0, 6), bool))
    # distance joints: |P1 - P0| in [min, max]; nan = no bound on that side
    joint_dist_min: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_dist_max: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_is_distance: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    # composite joints (COMPOSITE_*) and their distance (m)
    joint_composite: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    joint_composite_distance: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # a Cardan joint (one rotation i locked) whose two hinges are apart, as MJCF writes two hinges
    # at different points of one body: frame 1's origin (on the second hinge) seen from frame 0's
    # (on the first) along e0[i+1], e1[i+2] and e0[i+1] x e1[i+2], constant as the joint moves
    # (all zero: one anchor)
    joint_anchor_offset: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    # spherical joints' cone limits: e1[axis] stays within an elliptical cone about e0[axis] of
    # semi-angles (towards e0[axis+1], towards e0[axis+2]) in rad (UsdPhysics coneAngle0Limit,
    # coneAngle1Limit); inf: no cone
    joint_cone_axis: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    joint_cone: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    # force elements, loads, motors, bushings, NewtonJointAPI (usdphys.types.elements.Elements, SI,
    # points in body PRIM frames); None: none. The solver turns them into rows / loads
    # (usdphys.solver.forces). Shared by all worlds.
    elements: object = None

    # contact (usdphys.solver.contact, docs/contact.md): collision shapes
    # (usdphys.types.shapes.ShapeTable, poses in the body PRIM frames) or None; "nsc" (hard) or
    # "smc" (compliant); body pairs that never collide (None: every pair joined by a joint,
    # the UsdPhysics default physics:collisionEnabled = false). Shared by all worlds.
    shapes: object = None
    contact_method: str = "nsc"
    contact_exclude: list | None = None

    # per-world parameters (usdphys.types.params): name -> (W, ...) SI values; a name not here is
    # the Model's own value in every world. Set with set_parameter, read with parameter.
    world_parameters: dict = field(default_factory=dict)
    # where parameter entries came from in the stage: "prim path.attribute" -> params.ParamSource
    # (filled by the reader; a study maps attribute overrides through it)
    param_sources: dict = field(default_factory=dict)

    # stage facts the recorder needs
    meters_per_unit: float = 1.0
    kilograms_per_unit: float = 1.0
    source: str = ""  # file or stage identifier, for messages

    # ---------------------------------------------------------------- construction
    @property
    def body_count(self) -> int:
        return len(self.body_paths)

    @property
    def joint_count(self) -> int:
        return len(self.joint_paths)

    @property
    def world_count(self) -> int:
        return int(self.body_pos.shape[0])

    def add_body(self, path, mass, inertia, pos, rot=(0, 0, 0, 1), lin_vel=(0, 0, 0), ang_vel=(0, 0, 0),
                 com_pos=(0, 0, 0), com_rot=(0, 0, 0, 1), kinematic=False) -> int:
        """Append one body (single-world models); returns its index. SI units, xyzw."""
        if self.world_count != 1:
            raise ValueError("add_body works on single-world models; call replicate() afterwards")
        cat = np.concatenate
        self.body_paths.append(str(path))
        self.body_mass = cat([self.body_mass, [float(mass)]])
        self.body_inertia = cat([self.body_inertia.reshape(-1, 3), [np.asarray(inertia, float)]])
        self.body_com_pos = cat([self.body_com_pos.reshape(-1, 3), [np.asarray(com_pos, float)]])
        self.body_com_rot = cat([self.body_com_rot.reshape(-1, 4), [_unit(com_rot)]])
        self.body_kinematic = cat([self.body_kinematic, [bool(kinematic)]])
        self.body_pos = cat([self.body_pos, np.asarray(pos, float).reshape(1, 1, 3)], axis=1)
        self.body_rot = cat([self.body_rot, _unit(rot).reshape(1, 1, 4)], axis=1)
        self.body_lin_vel = cat([self.body_lin_vel, np.asarray(lin_vel, float).reshape(1, 1, 3)], axis=1)
        self.body_ang_vel = cat([self.body_ang_vel, np.asarray(ang_vel, float).reshape(1, 1, 3)], axis=1)
        return self.body_count - 1

    def add_joint(self, path, body0, body1, pos0=(0, 0, 0), rot0=(0, 0, 0, 1), pos1=(0, 0, 0),
                  rot1=(0, 0, 0, 1), locked=(False,) * 6, lower=None, upper=None, kind="joint",
                  drive_stiffness=None, drive_damping=None, drive_target_pos=None,
                  drive_target_vel=None, drive_max_force=None, drive_accel=None,
                  dist_min=np.nan, dist_max=np.nan, is_distance=False, composite=COMPOSITE_NONE,
                  composite_distance=0.0, anchor_offset=(0.0, 0.0, 0.0), cone_axis=0,
                  cone=(np.inf, np.inf)) -> int:
        """Append one joint; per-DOF arrays are length 6 (transX..rotZ), SI / radians."""
        def six(v, default):
            return np.full(6, default, float) if v is None else np.asarray(v, float).reshape(6)

        cat = np.concatenate
        self.joint_paths.append(str(path))
        self.joint_type.append(kind)
        self.joint_body0 = cat([self.joint_body0, [int(body0)]]).astype(int)
        self.joint_body1 = cat([self.joint_body1, [int(body1)]]).astype(int)
        self.joint_pos0 = cat([self.joint_pos0.reshape(-1, 3), [np.asarray(pos0, float)]])
        self.joint_rot0 = cat([self.joint_rot0.reshape(-1, 4), [_unit(rot0)]])
        self.joint_pos1 = cat([self.joint_pos1.reshape(-1, 3), [np.asarray(pos1, float)]])
        self.joint_rot1 = cat([self.joint_rot1.reshape(-1, 4), [_unit(rot1)]])
        self.joint_locked = cat([self.joint_locked.reshape(-1, 6), [np.asarray(locked, bool)]])
        self.joint_lower = cat([self.joint_lower.reshape(-1, 6), [six(lower, -np.inf)]])
        self.joint_upper = cat([self.joint_upper.reshape(-1, 6), [six(upper, np.inf)]])
        self.joint_drive_stiffness = cat([self.joint_drive_stiffness.reshape(-1, 6), [six(drive_stiffness, 0)]])
        self.joint_drive_damping = cat([self.joint_drive_damping.reshape(-1, 6), [six(drive_damping, 0)]])
        self.joint_drive_target_pos = cat([self.joint_drive_target_pos.reshape(-1, 6), [six(drive_target_pos, 0)]])
        self.joint_drive_target_vel = cat([self.joint_drive_target_vel.reshape(-1, 6), [six(drive_target_vel, 0)]])
        self.joint_drive_max_force = cat([self.joint_drive_max_force.reshape(-1, 6), [six(drive_max_force, np.inf)]])
        self.joint_drive_accel = cat([self.joint_drive_accel.reshape(-1, 6),
                                      [np.zeros(6, bool) if drive_accel is None else np.asarray(drive_accel, bool)]])
        self.joint_dist_min = cat([self.joint_dist_min, [float(dist_min)]])
        self.joint_dist_max = cat([self.joint_dist_max, [float(dist_max)]])
        self.joint_is_distance = cat([self.joint_is_distance, [bool(is_distance)]])
        self.joint_composite = cat([self.joint_composite, [int(composite)]]).astype(int)
        self.joint_composite_distance = cat([self.joint_composite_distance, [float(composite_distance)]])
        self.joint_anchor_offset = cat([self.joint_anchor_offset.reshape(-1, 3), [np.asarray(anchor_offset, float)]])
        self.joint_cone_axis = cat([self.joint_cone_axis, [int(cone_axis)]]).astype(int)
        self.joint_cone = cat([self.joint_cone.reshape(-1, 2), [np.asarray(cone, float)]])
        return self.joint_count - 1

    def replicate(self, worlds: int) -> "Model":
        """The same model with the initial state tiled to `worlds` worlds (edit per world after)."""
        if worlds < 1:
            raise ValueError("worlds must be >= 1")
        import copy

        out = copy.copy(self)
        for name in ("body_pos", "body_rot", "body_lin_vel", "body_ang_vel"):
            arr = getattr(self, name)
            setattr(out, name, np.repeat(arr[:1], worlds, axis=0).copy())
        # per-world parameters follow the state: world 0's values in every world
        out.world_parameters = {k: np.repeat(v[:1], worlds, axis=0) for k, v in self.world_parameters.items()}
        return out

    # ---------------------------------------------------------------- per-world parameters
    def set_parameter(self, name: str, values, index=None) -> None:
        """Per-world values of a parameter (usdphys.types.params.PARAMETERS), SI: `values` is
        (W, ...) or one value for every world; `index` picks an entry (int or prim path; for
        per-DOF arrays a (joint, dof) tuple, dof an int or 'rotZ'...)."""
        from usdphys.types.params import set_parameter

        set_parameter(self, name, values, index)

    def parameter(self, name: str) -> np.ndarray:
        """(W, ...) values of a parameter each world simulates."""
        from usdphys.types.params import parameter

        return parameter(self, name)

    def world(self, w: int) -> "Model":
        """World w alone: a single-world Model with its initial state and parameters."""
        from usdphys.types.params import world_model

        return world_model(self, w)

    # ---------------------------------------------------------------- frames
    def com_state(self):
        """Initial COM-frame state per world: (pos, rot, lin_vel, ang_vel), each (W, B, k)."""
        rot = quat_mul(self.body_rot, self.body_com_rot[None])
        pos = self.body_pos + quat_rotate(self.body_rot, self.body_com_pos[None])
        return pos, rot, self.body_lin_vel.copy(), self.body_ang_vel.copy()

    def prim_from_com(self, com_pos: np.ndarray, com_rot: np.ndarray):
        """COM-frame poses (..., B, 3/4) -> prim-frame poses (inverse of com_state)."""
        rot = quat_mul(com_rot, quat_conj(self.body_com_rot))
        pos = com_pos - quat_rotate(rot, self.body_com_pos)
        return pos, rot

    def frame_in_com(self, body: int, pos, rot):
        """A frame given in body's prim frame (pos, rot xyzw) re-expressed in its COM frame, the
        frame the solver works in; body < 0 (the world) returns the frame unchanged."""
        if body < 0:
            return np.asarray(pos, float), _unit(rot)
        cpos, crot = self.body_com_pos[body], self.body_com_rot[body]
        inv = quat_conj(crot)
        return quat_rotate(inv, np.asarray(pos, float) - cpos), quat_mul(inv, _unit(rot))

    # ---------------------------------------------------------------- rows
    def constraint_rows(self) -> RowTable:
        """The generic constraint-row table for every joint (see docs/solver.md)."""
        rows: list[tuple] = []
        for j in range(self.joint_count):
            b0, b1 = int(self.joint_body0[j]), int(self.joint_body1[j])
            p0, q0 = self.frame_in_com(b0, self.joint_pos0[j], self.joint_rot0[j])
            p1, q1 = self.frame_in_com(b1, self.joint_pos1[j], self.joint_rot1[j])

            def add(kind, axis, mode, value=0.0, k=0.0, c=0.0, tv=0.0, fmax=np.inf, accel=0):
                rows.append((j, kind, axis, mode, value, b0, b1, p0, q0, p1, q1, k, c, tv, fmax, accel))

            comp = int(self.joint_composite[j]) if j < len(self.joint_composite) else COMPOSITE_NONE
            if comp == COMPOSITE_REVOLUTE_SPHERICAL:
                add(ROW_LIN, 2, MODE_EQUAL)
                add(ROW_DIST, 0, MODE_EQUAL, self.joint_composite_distance[j])
                continue
            if comp == COMPOSITE_REVOLUTE_TRANSLATIONAL:
                add(ROW_PERP, 3 * 2 + 0, MODE_EQUAL)
                add(ROW_PERP, 3 * 2 + 1, MODE_EQUAL)
                add(ROW_LIN, 2, MODE_EQUAL)
                add(ROW_LIN1, 0, MODE_EQUAL, self.joint_composite_distance[j])
                continue
            if self.joint_is_distance[j]:
                lo, hi = self.joint_dist_min[j], self.joint_dist_max[j]
                if np.isfinite(lo) and np.isfinite(hi) and lo >= hi:
                    add(ROW_DIST, 0, MODE_EQUAL, lo)
                else:
                    if np.isfinite(lo):
                        add(ROW_DIST, 0, MODE_LOWER, lo)
                    if np.isfinite(hi):
                        add(ROW_DIST, 0, MODE_UPPER, hi)
                continue
            locked = self.joint_locked[j]
            free_rot = [a for a in range(3) if not locked[3 + a]]
            lock_rot = [a for a in range(3) if locked[3 + a]]
            offset = self.joint_anchor_offset[j] if j < len(self.joint_anchor_offset) else np.zeros(3)
            if np.any(offset != 0) and all(locked[:3]) and len(lock_rot) == 1:
                # hinges apart: frame 1's origin keeps its place in the frame that turns with the
                # first hinge, whose axes are e0[first], e1[second] and their cross product (the
                # Cardan row below keeps e0[first] and e1[second] perpendicular)
                first, second = (lock_rot[0] + 1) % 3, (lock_rot[0] + 2) % 3
                add(ROW_LIN, first, MODE_EQUAL, offset[0])
                add(ROW_LIN1, second, MODE_EQUAL, offset[1])
                add(ROW_CROSS, 3 * first + second, MODE_EQUAL, offset[2])
            else:
                for a in range(3):  # translations along frame-0 axes
                    if locked[a]:
                        add(ROW_LIN, a, MODE_EQUAL)
            # locked rotations: keep axes of the two frames perpendicular (exact Jacobians)
            if len(lock_rot) == 3:
                for a, b in ((0, 1), (0, 2), (1, 2)):
                    add(ROW_PERP, 3 * a + b, MODE_EQUAL)
            elif len(lock_rot) == 2:
                k = free_rot[0]
                for i in lock_rot:
                    add(ROW_PERP, 3 * k + i, MODE_EQUAL)
            elif len(lock_rot) == 1:
                i = lock_rot[0]  # Cardan: e0[i+1] stays perpendicular to e1[i+2]
                add(ROW_PERP, 3 * ((i + 1) % 3) + (i + 2) % 3, MODE_EQUAL)
            for d in range(6):
                if locked[d]:
                    continue
                kind, axis = dof_row(locked, d)
                lo, hi = self.joint_lower[j, d], self.joint_upper[j, d]
                if np.isfinite(lo):
                    add(kind, axis, MODE_LOWER, lo)
                if np.isfinite(hi):
                    add(kind, axis, MODE_UPPER, hi)
                k, c = self.joint_drive_stiffness[j, d], self.joint_drive_damping[j, d]
                if k > 0 or c > 0:
                    add(kind, axis, MODE_SOFT, self.joint_drive_target_pos[j, d], k, c,
                        self.joint_drive_target_vel[j, d], self.joint_drive_max_force[j, d],
                        int(self.joint_drive_accel[j, d]))
            if j < len(self.joint_cone):
                for kind, axis, mode, value in cone_rows(int(self.joint_cone_axis[j]), *self.joint_cone[j]):
                    add(kind, axis, mode, value)
        n = len(rows)
        cols = list(zip(*rows)) if n else [[] for _ in range(16)]

        def arr(i, dtype=float, shape=()):
            return np.asarray(cols[i], dtype=dtype).reshape((n,) + shape)

        return RowTable(
            source=arr(0, np.int32), kind=arr(1, np.int32), axis=arr(2, np.int32), mode=arr(3, np.int32),
            value=arr(4), b0=arr(5, np.int32), b1=arr(6, np.int32), p0=arr(7, shape=(3,)),
            q0=arr(8, shape=(4,)), p1=arr(9, shape=(3,)), q1=arr(10, shape=(4,)), stiffness=arr(11),
            damping=arr(12), target_vel=arr(13), max_force=arr(14), accel=arr(15, np.int32),
        )


def cone_rows(a: int, toward_next: float, toward_second: float) -> list[tuple]:
    """(kind, axis, mode, value) rows holding e1[a] within the elliptical cone about e0[a] of
    semi-angles toward e0[a+1] and e0[a+2] (rad; inf: open). One swing row (axis a) bounds the
    tilt by the smaller side (its value); the kernel weighs the tilt towards the other by the
    ratio of the two sides (swing_sides, held per world: step.row_form, mathx.swing_angle), so
    which side is the smaller is a value, not the row's structure. A semi-angle of 0 is a flat
    cone: a perpendicular row keeps e1[a] out of that direction, and the swing row bounds the
    tilt the other way alone."""
    lo, hi = float(toward_next), float(toward_second)
    if min(lo, hi) >= np.pi:  # the swing never exceeds 180 deg
        return []
    rows = []
    if lo == 0.0:
        rows.append((ROW_PERP, 3 * ((a + 1) % 3) + a, MODE_EQUAL, 0.0))
    if hi == 0.0:
        rows.append((ROW_PERP, 3 * ((a + 2) % 3) + a, MODE_EQUAL, 0.0))
    if lo == 0.0 and hi == 0.0:
        return rows
    return rows + [(ROW_SWING, a, MODE_UPPER, float(np.min(swing_sides((lo, hi)))))]


def swing_sides(cone) -> np.ndarray:
    """The two sides a swing row (cone_rows) weighs the tilt by, for cone semi-angles (..., 2):
    each semi-angle, inf for a flat side (0: its perpendicular row holds it, and the swing row
    bounds the other way alone)."""
    cone = np.asarray(cone, float)
    return np.where(cone == 0.0, np.inf, cone)


def dof_row(locked, d: int) -> tuple[int, int]:
    """(row kind, axis) that measures free DOF d of a joint whose locked DOFs are `locked`.

    Translations are measured along e0[d], rotations as the twist about e0[d - 3], except the
    second axis of a Cardan (universal) joint: with exactly one rotation i locked, the joint
    rotates about e0[i+1] and then about e1[i+2] (the perpendicular row keeps those two axes at
    90 deg), so that angle is measured about e1[i+2] (TWIST axis + 3). Both angles are then exact
    at any deflection; measured about e0 instead, the second would be singular when the first
    reaches +-90 deg. Three free rotations are the angles of the x-y-z sequence (TWIST axis + 6),
    as MuJoCo's three hinges in one body and Newton's D6: exact, except that the x and z angles
    are undefined where the y angle reaches +-90 deg (gimbal lock).
    """
    if d < 3:
        return ROW_LIN, d
    a = d - 3
    lock_rot = [r for r in range(3) if locked[3 + r]]
    if not lock_rot:
        return ROW_TWIST, a + 6
    if len(lock_rot) == 1 and a == (lock_rot[0] + 2) % 3:
        return ROW_TWIST, a + 3
    return ROW_TWIST, a


def _unit(q) -> np.ndarray:
    q = np.asarray(q, float).reshape(4)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError(f"quaternion {q} has no direction")
    return q / n
