"""Force elements, loads, motors, bushings and joint friction in the solver.

Everything that is not an ideal joint becomes either a **row** of the solver's constraint-row
table (docs/solver.md) or an explicit **load** in the predictor:

| element | row kind | mode / law |
|---|---|---|
| MbdSpringDamper (TSDA) | ROW_DIST | MODE_LAW, linear law or packed curves / map; stops: ROW_DIST lower / upper |
| MbdAxialSpringDamper | ROW_LIN along the axis (frame 0 = body0) | MODE_LAW, linear law (or the user law) |
| MbdRotationalSpringDamper | ROW_TWIST about Z | MODE_LAW, linear law or packed curves (unwrapped angle) |
| MbdBushingAPI | the joint's locked rows, extra rows on free DOFs | MODE_LAW, linear law about 0 |
| MbdMotor position / velocity | ROW_LIN / ROW_TWIST on the DOF | MODE_EQUAL, value u(t+h) / integral of u |
| MbdMotor force | same | MODE_LAW, LAW_EFFORT: fixed impulse h u(t) |
| NewtonJointAPI armature | DOF row | MODE_LAW, LAW_ARMATURE: impulse -a (qdot+ - qdot-) |
| NewtonJointAPI viscous damping | DOF row | MODE_LAW, linear law (k = 0, c = viscous) |
| NewtonJointAPI static / dynamic friction | DOF row | MODE_FRICTION: qdot = 0 with a bounded impulse |
| NewtonJointAPI velocityLimit | DOF row, twice | MODE_LOWER / MODE_UPPER with a moving bound: q_{n+1} within q_n +- h v_max |
| NewtonJointAPI limitStiffness / limitDamping | the joint's limit rows | MODE_LAW, LAW_LIMIT_LOWER / UPPER: spring-damper beyond the limit |
| MuJoCo joint spring (mjc:stiffness, springref) | DOF row | MODE_LAW, linear law (k, x0 = springref) |
| NewtonMimicAPI (MuJoCo joint equality) | follower DOF row + leader DOF row | MODE_EQUAL with a partner: q_f - coef1 q_l = coef0; the leader's row is MODE_CARRIER |
| MbdForce / MbdTorque | none | explicit impulse h F(t_n) in the predictor |

**Law rows** (MODE_LAW) carry a scalar generalised force f(g, gdot) along the row (positive:
increases g). The impulse of step n is the trapezoidal average of the force at the two half
steps, ``h/2 (f_{n-1/2} + f_{n+1/2})`` with ``f_{n+1/2} = f((g_n + g_{n+1})/2, (g_{n+1} - g_n)/h)``
solved implicitly inside the solver's Newton iteration (``f_{n-1/2}`` is kept per world and
row). That is symmetric in time (no energy drift for a linear spring), second order, and
unconditionally stable for any stiffness (bushings at 1e7 N/m and dt = 1e-3). Nonlinear
laws (curves, maps, a user law) are evaluated exactly at every Newton iterate; only the
Newton matrix uses their slopes at the step start (simplified Newton).

This module holds the Warp data (``ElementData`` model side, ``ElementState`` per world), the
law / load / time-function evaluation, and the host-side builder. The per-row glue that needs
the solver's own structs is in ``step.py`` ("force elements" section).
"""
from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from usdphys.types.enums import RowLaw, RowMode, RowMotor

from usdphys.errors import UsdphysError, warn
from usdphys.types.laws import LINE_EPS, PackedLaws
from usdphys.solver.laws import spring_damper_law
from usdphys.types.model import dof_row as model_dof_row
from usdphys.types.model import MODE_EQUAL, MODE_FRICTION, MODE_LAW, MODE_LOWER, MODE_UPPER, ROW_DIST, ROW_LIN, ROW_PERP, ROW_POINT, ROW_TWIST, Model, RowTable
from usdphys.math3d import quat_between, quat_conj
from usdphys.types.timefunc import PackedTimeFunctions
from usdphys.solver.timefunc import eval_time_function

wp.set_module_options({"enable_backward": False})

# law and motor kind of a row (short names for the shared enums)
LAW_NONE, LAW_LINEAR, LAW_PACKED, LAW_USER = RowLaw.NONE, RowLaw.LINEAR, RowLaw.PACKED, RowLaw.USER
LAW_ARMATURE, LAW_EFFORT = RowLaw.ARMATURE, RowLaw.EFFORT
LAW_LIMIT_LOWER, LAW_LIMIT_UPPER = RowLaw.LIMIT_LOWER, RowLaw.LIMIT_UPPER
MOTOR_NONE, MOTOR_POSITION, MOTOR_VELOCITY, MOTOR_FORCE = RowMotor.NONE, RowMotor.POSITION, RowMotor.VELOCITY, RowMotor.FORCE

# A friction DOF whose speed is below this (m/s or rad/s) at t = 0 starts sticking.
STICK_SPEED = 1.0e-9
MODE_CARRIER = RowMode.CARRIER

W_LAW_ARMATURE = wp.constant(int(LAW_ARMATURE))
W_LAW_LIMIT_LOWER = wp.constant(int(LAW_LIMIT_LOWER))
W_LAW_LIMIT_UPPER = wp.constant(int(LAW_LIMIT_UPPER))
W_LAW_PACKED = wp.constant(int(LAW_PACKED))
W_LAW_USER = wp.constant(int(LAW_USER))
W_LAW_EFFORT = wp.constant(int(LAW_EFFORT))
W_MOTOR_POSITION = wp.constant(int(MOTOR_POSITION))
W_MOTOR_VELOCITY = wp.constant(int(MOTOR_VELOCITY))
W_LINE_EPS = wp.constant(wp.float64(LINE_EPS))
W_STICK_SPEED = wp.constant(wp.float64(STICK_SPEED))


# ----------------------------------------------------------------------------------------
# User laws: Warp functions named by the elements (mbd:userLaw), compiled into the kernel
# ----------------------------------------------------------------------------------------
@wp.func
def default_axial_force_law(t: wp.float64, dx: wp.float64, dv: wp.float64, k: wp.float64, d: wp.float64,
                            offset: wp.float64) -> wp.float64:
    """Exudyn LinearSpringDamper: k (dx - offset) + d dv (dv already minus velocityOffset)."""
    return k * (dx - offset) + d * dv


def _law_end():
    def user_law_none(which: int, t: wp.float64, x: wp.float64, v: wp.float64, k: wp.float64, d: wp.float64,
                      offset: wp.float64) -> wp.float64:
        return default_axial_force_law(t, x, v, k, d, offset)

    return wp.func(user_law_none)


def _law_branch(name: str, law: wp.Function, rest: wp.Function) -> wp.Function:
    """user law `which`: law when which == 0, else rest(which - 1): a chain Warp inlines."""
    def branch(which: int, t: wp.float64, x: wp.float64, v: wp.float64, k: wp.float64, d: wp.float64,
               offset: wp.float64) -> wp.float64:
        if which == 0:
            return law(t, x, v, k, d, offset)
        return rest(which - 1, t, x, v, k, d, offset)

    # a unique key per chain link: Warp would otherwise take links of different law sets for
    # overloads of one function
    branch.__name__ = branch.__qualname__ = name
    return wp.func(branch)


_NO_LAWS = _law_end()
_DISPATCH: dict[tuple, wp.Function] = {(): _NO_LAWS}
# The dispatch the law rows call, user_law(which, t, x, xdot, k, d, offset): rebound by
# install_user_laws. Warp resolves this name when it generates the kernel code and hashes what
# it resolved, so each set of laws is one cached module variant.
user_law = _NO_LAWS


def check_user_law(name: str, fn) -> wp.Function:
    """A user law must be a @wp.func of 6 wp.float64 arguments (t, x, xdot, k, d, offset)."""
    if not isinstance(fn, wp.Function):
        raise UsdphysError(f"law '{name}' must be a Warp function (@wp.func), got {type(fn).__name__}")
    params = list(inspect.signature(fn.func).parameters)
    if len(params) != 6:
        raise UsdphysError(f"law '{name}' ({fn.key}) must take (t, displacement, velocity, stiffness, damping, "
                           f"offset): 6 arguments, got {len(params)} ({', '.join(params)})")
    for arg, typ in fn.input_types.items():
        if typ is not wp.float64:
            raise UsdphysError(f"law '{name}' ({fn.key}): argument '{arg}' must be wp.float64")
    return fn


def warp_functions(namespace: dict) -> dict:
    """The @wp.func values of a namespace (a laws module's globals) by name."""
    return {name: fn for name, fn in namespace.items() if isinstance(fn, wp.Function)}


def law_dispatch(laws: tuple) -> wp.Function:
    """The dispatch for a tuple of user laws (index i calls laws[i]), built once per tuple."""
    laws = tuple(laws)
    if laws not in _DISPATCH:
        tag = hashlib.sha1(repr([(f.module.name, f.key) for f in laws]).encode()).hexdigest()[:12]
        fn = _NO_LAWS
        for i in reversed(range(len(laws))):
            fn = _law_branch(f"user_law_{tag}_{i}", laws[i], fn)
        _DISPATCH[laws] = fn
    return _DISPATCH[laws]


def install_user_laws(laws: tuple = ()) -> bool:
    """Compile `laws` (a tuple of checked @wp.func, rows call them by index) into the solver's
    kernels on the next launch; True when that changes the kernels (a rebuild, or a cached
    variant when this set was built before)."""
    global user_law
    fn = law_dispatch(laws)
    if fn is user_law:
        return False
    user_law = fn
    for name in (__name__, "usdphys.solver.step"):
        wp.get_module(name).mark_modified()
    return True


# ----------------------------------------------------------------------------------------
# Warp data
# ----------------------------------------------------------------------------------------
@wp.struct
class ElementData:
    """Model-side element data; per-row arrays are indexed like the solver's rows."""

    law: wp.array(dtype=wp.int32)  # LAW_* of MODE_LAW rows
    lawidx: wp.array(dtype=wp.int32)  # row of the packed law table (LAW_PACKED) / user law index (LAW_USER)
    preload: wp.array(dtype=wp.float64)  # P of linear / axial laws
    fn: wp.array(dtype=wp.int32)  # time function of motor rows (-1: none)
    motor: wp.array(dtype=wp.int32)  # MOTOR_*
    fstatic: wp.array2d(dtype=wp.float64)  # [world, row] friction rows: static effort (N or N m)
    fdynamic: wp.array2d(dtype=wp.float64)  # [world, row] friction rows: dynamic effort
    couple: wp.array(dtype=wp.int32)  # friction row -> row of a motor driving the same DOF, else -1
    moving: wp.array(dtype=wp.int32)  # 1: a limit row whose bound moves: q_n + h value (velocity limit)
    law_i: wp.array2d(dtype=wp.int32)
    law_f: wp.array2d(dtype=wp.float64)
    law_data: wp.array(dtype=wp.float64)
    tf_kinds: wp.array2d(dtype=wp.int32)
    tf_params: wp.array2d(dtype=wp.float64)
    tf_data: wp.array(dtype=wp.float64)
    n_loads: int
    load_torque: wp.array(dtype=wp.int32)
    load_b0: wp.array(dtype=wp.int32)
    load_b1: wp.array(dtype=wp.int32)
    load_p1: wp.array(dtype=wp.vec3d)  # application point in body1's COM frame
    load_frame: wp.array(dtype=wp.int32)  # body whose axes the vector is in (-1: world)
    load_rot: wp.array(dtype=wp.quatd)  # extra rotation: world vector = R(frame) load_rot v
    load_fn: wp.array2d(dtype=wp.int32)  # (x, y, z, scale) time functions
    n_motors: int
    motor_row: wp.array(dtype=wp.int32)


@wp.struct
class ElementState:
    """Per-world element state: [world, row] (and [world])."""

    rval: wp.array2d(dtype=wp.float64)  # value of every hard row this step (motors: u(t+h))
    fprev: wp.array2d(dtype=wp.float64)  # law rows: f at the previous half step
    gun: wp.array2d(dtype=wp.float64)  # law rows: g_n, unwrapped (multi-turn) for twist rows
    gdot: wp.array2d(dtype=wp.float64)  # law rows: gdot at the previous half step
    sfac: wp.array2d(dtype=wp.float64)  # law rows: residual scale s = 1 / (h k/4 + c/2)
    cfac: wp.array2d(dtype=wp.float64)  # law rows: impulse error -> position error (convergence)
    qref: wp.array2d(dtype=wp.float64)  # velocity motors: integrated reference position
    lmax: wp.array2d(dtype=wp.float64)  # friction rows: impulse bound this step
    stick: wp.array2d(dtype=wp.int32)  # friction rows: 1 while the DOF sticks
    tnow: wp.array(dtype=wp.float64)  # time at the step start
    hnow: wp.array(dtype=wp.float64)  # the step (after a step that was not committed: that try's)
    # the last committed step: the half-step velocities (and law rows' fprev) are of its interval,
    # so a step of another size kicks over (hlast + h) / 2 (step.kick_span)
    hlast: wp.array(dtype=wp.float64)
    # the kick span of the latest try (after a commit: the committed step's): impulses / hkick
    # are forces, and the warm-start impulses are in its units
    hkick: wp.array(dtype=wp.float64)
    min_newton: wp.array(dtype=wp.int32)  # Newton updates required before the stopping test
    # twist rows: the unwrapped (multi-turn) joint coordinate qc and the wrapped angle qg it was
    # last measured at; qc follows the motion continuously, so limits compare with the true angle
    qc: wp.array2d(dtype=wp.float64)
    qg: wp.array2d(dtype=wp.float64)
    # rows on the middle angle of a three-rotation joint's x-y-z sequence (step.is_middle_twist;
    # their qc is that angle itself): the first angle, followed through the sequence's lock,
    # which tells the branch the middle angle is on
    qb: wp.array2d(dtype=wp.float64)


# ----------------------------------------------------------------------------------------
# Warp functions
# ----------------------------------------------------------------------------------------
@wp.func
def time_fn(el: ElementData, fn: int, t: wp.float64) -> wp.float64:
    return eval_time_function(t, wp.int32(fn), el.tf_kinds, el.tf_params, el.tf_data)


@wp.func
def time_fn_integral(el: ElementData, fn: int, t: wp.float64, h: wp.float64) -> wp.float64:
    """Integral of u over [t, t + h] by Simpson's rule (exact for cubics and for linear
    pieces that do not straddle a data point)."""
    acc = wp.float64(0.0)
    for j in range(3):  # one call site: the evaluator is inlined once (compile time)
        wgt = wp.float64(1.0)
        if j == 1:
            wgt = wp.float64(4.0)
        acc = acc + wgt * time_fn(el, fn, t + wp.float64(0.5) * wp.float64(j) * h)
    return h / wp.float64(6.0) * acc


@wp.func
def law_force(el: ElementData, i: int, k: wp.float64, c: wp.float64, x0: wp.float64, v0: wp.float64,
              g: wp.float64, gd: wp.float64, t: wp.float64, slopes: int):
    """(f, df/dg, df/dgdot) of law row i at (g, gdot); f along +g. slopes = 0 skips the
    finite differences of a user law (its slopes are only needed for the Newton matrix)."""
    law = el.law[i]
    if law == W_LAW_PACKED:
        return spring_damper_law(g, gd, el.lawidx[i], el.law_i, el.law_f, el.law_data)
    P = el.preload[i]
    if law == W_LAW_USER:
        u = el.lawidx[i]  # which user law
        f = P - user_law(u, t, g, gd - v0, k, c, x0)
        dfg = wp.float64(0.0)
        dfv = wp.float64(0.0)
        if slopes != 0:
            eg = wp.float64(1.0e-7) * wp.max(wp.float64(1.0), wp.abs(g))
            ev = wp.float64(1.0e-7) * wp.max(wp.float64(1.0), wp.abs(gd))
            dfg = (P - user_law(u, t, g + eg, gd - v0, k, c, x0) - f) / eg
            dfv = (P - user_law(u, t, g, gd + ev - v0, k, c, x0) - f) / ev
        return f, dfg, dfv
    if law == W_LAW_LIMIT_LOWER or law == W_LAW_LIMIT_UPPER:
        # acts only beyond the limit; the Newton matrix always takes the engaged slopes (an
        # upper bound of the true ones: the simplified Newton iteration still contracts)
        f = wp.float64(0.0)
        pen = g - x0
        if (law == W_LAW_LIMIT_LOWER and pen < wp.float64(0.0)) or (law == W_LAW_LIMIT_UPPER and pen > wp.float64(0.0)):
            f = -k * pen - c * gd
        return f, -k, -c
    return P - k * (g - x0) - c * (gd - v0), -k, -c


@wp.func
def body_pose(pos: wp.array2d(dtype=wp.vec3d), rot: wp.array2d(dtype=wp.quatd), w: int, b: int):
    if b < 0:
        return wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0)), wp.quatd(
            wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    return pos[w, b], rot[w, b]


@wp.func
def apply_loads(el: ElementData, pos: wp.array2d(dtype=wp.vec3d), rot: wp.array2d(dtype=wp.quatd),
                inv_mass: wp.array(dtype=wp.float64), vstar: wp.array2d(dtype=wp.vec3d),
                mom: wp.array2d(dtype=wp.vec3d), w: int, t: wp.float64, scale: wp.float64):
    """Add the impulse scale * F(t) of every MbdForce / MbdTorque at the current poses to the
    bodies' predicted velocities and world angular momenta (scale = h in a step)."""
    for e in range(el.n_loads):
        v = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
        s = scale
        for c in range(4):  # one call site: the evaluator is inlined once (compile time)
            u = time_fn(el, int(el.load_fn[e, c]), t)
            if c < 3:
                v[c] = u
            else:
                s = s * u
        v = v * s
        xf, qf = body_pose(pos, rot, w, int(el.load_frame[e]))
        v = wp.quat_rotate(qf * el.load_rot[e], v)
        b0 = int(el.load_b0[e])
        b1 = int(el.load_b1[e])
        x1, q1 = body_pose(pos, rot, w, b1)
        if el.load_torque[e] != 0:
            if b1 >= 0:
                mom[w, b1] = mom[w, b1] + v
            if b0 >= 0:
                mom[w, b0] = mom[w, b0] - v
        else:
            P = x1 + wp.quat_rotate(q1, el.load_p1[e])
            if b1 >= 0:
                vstar[w, b1] = vstar[w, b1] + inv_mass[b1] * v
                mom[w, b1] = mom[w, b1] + wp.cross(P - x1, v)
            if b0 >= 0:
                x0, q0 = body_pose(pos, rot, w, b0)
                vstar[w, b0] = vstar[w, b0] - inv_mass[b0] * v
                mom[w, b0] = mom[w, b0] - wp.cross(P - x0, v)


# ----------------------------------------------------------------------------------------
# Host side: element tables -> rows + Warp data
# ----------------------------------------------------------------------------------------
_COLS = ("source", "kind", "axis", "mode", "value", "b0", "b1", "p0", "q0", "p1", "q1", "stiffness", "damping",
         "target_vel", "max_force", "accel")
_EXTRA = ("law", "lawidx", "preload", "fn", "motor", "fstatic", "fdynamic", "couple", "moving", "partner", "ratio")
_IDENT = np.array([0.0, 0.0, 0.0, 1.0])
_X_AXIS = np.array([1.0, 0.0, 0.0])
_Z_AXIS = np.array([0.0, 0.0, 1.0])  # half a turn about Z takes +X to -X


@dataclass
class ElementRows:
    """The solver's full row table (joint rows, bushings applied, then element rows) with the
    element columns, the loads, the time functions and the laws, all in SI / COM frames."""

    rows: RowTable
    names: list[str]  # per row: the prim path it came from (messages)
    extra: dict[str, np.ndarray]  # per row: _EXTRA columns
    laws: PackedLaws
    functions: PackedTimeFunctions
    loads: dict[str, np.ndarray]
    motor_rows: np.ndarray  # (M,) row of each motor
    motor_paths: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return self.rows.count


class _Rows:
    """Row list under construction (tuples in RowTable column order + extra columns)."""

    def __init__(self, table: RowTable, names: list[str]):
        self.items: list[dict] = []
        for r in range(table.count):
            d = {c: getattr(table, c)[r] for c in _COLS}
            d.update(law=LAW_NONE, lawidx=-1, preload=0.0, fn=-1, motor=MOTOR_NONE, fstatic=0.0, fdynamic=0.0,
                     couple=-1, moving=0, partner=-1, name=names[r], ratio=0.0)
            self.items.append(d)

    def add(self, name, kind, axis, mode, b0, b1, p0, q0, p1, q1, value=0.0, k=0.0, c=0.0, tv=0.0, **extra) -> int:
        d = dict(source=-1, kind=kind, axis=axis, mode=mode, value=float(value), b0=int(b0), b1=int(b1),
                 p0=np.asarray(p0, float), q0=np.asarray(q0, float), p1=np.asarray(p1, float),
                 q1=np.asarray(q1, float), stiffness=float(k), damping=float(c), target_vel=float(tv),
                 max_force=np.inf, accel=0, law=LAW_NONE, lawidx=-1, preload=0.0, fn=-1, motor=MOTOR_NONE,
                 fstatic=0.0, fdynamic=0.0, couple=-1, moving=0, partner=-1, ratio=0.0, name=str(name))
        d.update(extra)
        self.items.append(d)
        return len(self.items) - 1

    def table(self) -> tuple[RowTable, list[str], dict[str, np.ndarray]]:
        n = len(self.items)

        def col(c, dtype=float, shape=()):
            return np.asarray([it[c] for it in self.items], dtype=dtype).reshape((n,) + shape)

        t = RowTable(source=col("source", np.int32), kind=col("kind", np.int32), axis=col("axis", np.int32),
                     mode=col("mode", np.int32), value=col("value"), b0=col("b0", np.int32), b1=col("b1", np.int32),
                     p0=col("p0", shape=(3,)), q0=col("q0", shape=(4,)), p1=col("p1", shape=(3,)),
                     q1=col("q1", shape=(4,)), stiffness=col("stiffness"), damping=col("damping"),
                     target_vel=col("target_vel"), max_force=col("max_force"), accel=col("accel", np.int32))
        extra = {c: col(c, np.int32 if c in ("law", "lawidx", "fn", "motor", "couple", "moving", "partner") else float) for c in _EXTRA}
        return t, [it["name"] for it in self.items], extra


def _merge_laws(parts: list[PackedLaws]) -> tuple[PackedLaws, list[int]]:
    """Concatenate packed law tables; returns the merged table and each part's first row."""
    li, lf, data, starts = [], [], [], []
    n_rows, n_data = 0, 0
    for p in parts:
        starts.append(n_rows)
        a = np.array(p.law_i, dtype=np.int32).reshape(-1, 7)
        a[:, [0, 2, 4]] += n_data
        li.append(a)
        lf.append(np.asarray(p.law_f, float).reshape(-1, 4))
        data.append(np.asarray(p.data, float))
        n_rows += a.shape[0]
        n_data += len(p.data)
    return PackedLaws(np.concatenate(li) if li else np.zeros((0, 7), np.int32),
                      np.concatenate(lf) if lf else np.zeros((0, 4)),
                      np.concatenate(data) if data else np.zeros(1)), starts


def _law_is_linear(laws: PackedLaws, e: int) -> bool:
    return int(laws.law_i[e, 1]) == 0 and int(laws.law_i[e, 3]) == 0 and int(laws.law_i[e, 5]) == 0


def _dof_index(model: Model, j: int, token: str, where: str) -> int:
    """Model DOF index (0..5) of a NewtonJointAPI / MbdMotor DOF token on joint j."""
    locked = np.asarray(model.joint_locked[j], bool)
    if token in ("angle", "distance"):
        rng = range(3, 6) if token == "angle" else range(3)
        free = [d for d in rng if not locked[d]]
        if len(free) != 1:
            raise UsdphysError(f"{where}: DOF '{token}' needs a joint with exactly one free "
                               f"{'rotation' if token == 'angle' else 'translation'}; "
                               f"{model.joint_paths[j]} has {len(free)}")
        return free[0]
    names = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
    if token not in names:
        raise UsdphysError(f"{where}: unknown DOF '{token}'")
    return names.index(token)


def build_element_rows(model: Model, table: RowTable, law_names: dict[str, int] | None = None) -> ElementRows:
    """Joint rows from Model.constraint_rows() + the model's elements -> the solver's rows.
    law_names: user law name -> index in the installed dispatch (install_user_laws)."""
    law_names = law_names or {}

    def user_index(path: str, name: str) -> int:
        if name not in law_names:
            given = ", ".join(sorted(law_names)) or "none"
            raise UsdphysError(f"{path}: mbd:userLaw = '{name}' is not a law given to the simulation "
                               f"(given: {given}; Python: simulate(laws={{...}}), CLI: --laws MODULE)")
        return law_names[name]
    names = [model.joint_paths[int(s)] if 0 <= int(s) < model.joint_count else "?" for s in table.source]
    rl = _Rows(table, names)
    el = model.elements
    empty_fns = PackedTimeFunctions(np.zeros((0, 4), np.int32), np.zeros((0, 8)), np.zeros(1))
    if el is None:
        t, nm, ex = rl.table()
        return ElementRows(t, nm, ex, _merge_laws([])[0], empty_fns, _no_loads(), np.zeros(0, np.int32))

    def jframes(j):
        b0, b1 = int(model.joint_body0[j]), int(model.joint_body1[j])
        p0, q0 = model.frame_in_com(b0, model.joint_pos0[j], model.joint_rot0[j])
        p1, q1 = model.frame_in_com(b1, model.joint_pos1[j], model.joint_rot1[j])
        return b0, b1, p0, q0, p1, q1

    def dof_row(j, d):
        return model_dof_row(model.joint_locked[j], d)

    # -- bushings: the joint's locked (equality) rows become implicit spring-dampers
    bu = el.bushings
    keep = np.ones(len(rl.items), bool)
    for e in range(len(bu)):
        j = int(bu.joint[e])
        if j < 0:
            warn(f"{bu.joint_paths[e]}: MbdBushingAPI on a joint that is not simulated; ignored")
            continue
        for r, it in enumerate(rl.items):
            if it["source"] != j or it["mode"] != MODE_EQUAL:
                continue
            angular = it["kind"] in (ROW_PERP, ROW_TWIST)
            k = bu.angular_stiffness[e] if angular else bu.linear_stiffness[e]
            c = bu.angular_damping[e] if angular else bu.linear_damping[e]
            if k == 0 and c == 0:
                keep[r] = False  # "0 = free"
                continue
            it.update(mode=MODE_LAW, law=LAW_LINEAR, value=0.0, stiffness=float(k), damping=float(c),
                      target_vel=0.0, preload=0.0)
        if model.joint_is_distance[j] or model.joint_composite[j]:
            continue
        b0, b1, p0, q0, p1, q1 = jframes(j)
        for d in range(6):
            if model.joint_locked[j, d]:
                continue
            k = bu.free_angular_stiffness[e] if d >= 3 else bu.free_linear_stiffness[e]
            c = bu.free_angular_damping[e] if d >= 3 else bu.free_linear_damping[e]
            if k > 0 or c > 0:
                kind, axis = dof_row(j, d)
                rl.add(bu.joint_paths[e], kind, axis, MODE_LAW, b0, b1, p0, q0, p1, q1, 0.0, k, c, law=LAW_LINEAR)
    rl.items = [it for it, k in zip(rl.items, list(keep) + [True] * (len(rl.items) - len(keep))) if k]

    # -- laws of TSDAs and RSDAs in one packed table
    sd, ax, rs = el.spring_dampers, el.axial_spring_dampers, el.rotational_spring_dampers
    laws, (sd0, rs0) = _merge_laws([sd.laws, rs.laws])

    # -- point-to-point spring-dampers
    for e in range(len(sd)):
        b0, b1 = int(sd.body0[e]), int(sd.body1[e])
        if b0 < 0 and b1 < 0:
            continue
        p0, _ = model.frame_in_com(b0, sd.local_pos0[e], _IDENT)
        p1, _ = model.frame_in_com(b1, sd.local_pos1[e], _IDENT)
        li = sd0 + e
        k, c, x0, P = (float(v) for v in laws.law_f[li])
        if _law_is_linear(laws, li):
            rl.add(sd.paths[e], ROW_DIST, 0, MODE_LAW, b0, b1, p0, _IDENT, p1, _IDENT, x0, k, c, law=LAW_LINEAR,
                   preload=P)
        else:
            rl.add(sd.paths[e], ROW_DIST, 0, MODE_LAW, b0, b1, p0, _IDENT, p1, _IDENT, x0, k, c, law=LAW_PACKED,
                   lawidx=li, preload=P)
        # Multibody.jl Spring(m, lengthfraction): a particle kinematically on the line, exact:
        # three armature rows along the world axes on the point (1 - lam) P0 + lam P1 carry
        # its inertia (impulse -m (rdot+ - rdot-) per axis) and its weight (P = m g_k)
        ms, lam = float(sd.spring_mass[e]), float(sd.spring_mass_fraction[e])
        if ms > 0:
            for k in range(3):
                rl.add(sd.paths[e], ROW_POINT, k, MODE_LAW, b0, b1, p0, _IDENT, p1, _IDENT, lam, 0.0, ms,
                       law=LAW_ARMATURE, preload=ms * float(model.gravity[k]))
        if np.isfinite(sd.min_length[e]):
            rl.add(sd.paths[e], ROW_DIST, 0, MODE_LOWER, b0, b1, p0, _IDENT, p1, _IDENT, sd.min_length[e])
        if np.isfinite(sd.max_length[e]):
            rl.add(sd.paths[e], ROW_DIST, 0, MODE_UPPER, b0, b1, p0, _IDENT, p1, _IDENT, sd.max_length[e])

    # -- axial spring-dampers: a linear row along the axis fixed in body0
    for e in range(len(ax)):
        b0, b1 = int(ax.body0[e]), int(ax.body1[e])
        if not ax.active[e] or (b0 < 0 and b1 < 0):
            continue
        p0, q0 = model.frame_in_com(b0, ax.local_pos0[e], quat_between(_X_AXIS, np.asarray(ax.axis[e], float), half_turn_axis=_Z_AXIS))
        p1, _ = model.frame_in_com(b1, ax.local_pos1[e], _IDENT)
        name = ax.user_law[e] if e < len(ax.user_law) else ""
        law, which = LAW_LINEAR, -1
        if name:
            law, which = LAW_USER, user_index(ax.paths[e], name)
        rl.add(ax.paths[e], ROW_LIN, 0, MODE_LAW, b0, b1, p0, q0, p1, _IDENT, ax.offset[e], ax.stiffness[e],
               ax.damping[e], ax.velocity_offset[e], law=law, lawidx=which, preload=-ax.force[e])

    # -- rotational spring-dampers: twist about Z of the two frames, unwrapped per world
    for e in range(len(rs)):
        b0, b1 = int(rs.body0[e]), int(rs.body1[e])
        if b0 < 0 and b1 < 0:
            continue
        p0, q0 = model.frame_in_com(b0, rs.local_pos0[e], rs.local_rot0[e])
        p1, q1 = model.frame_in_com(b1, rs.local_pos1[e], rs.local_rot1[e])
        li = rs0 + e
        k, c, x0, P = (float(v) for v in laws.law_f[li])
        law = LAW_LINEAR if _law_is_linear(laws, li) else LAW_PACKED
        name = rs.user_law[e] if e < len(rs.user_law) else ""
        if name:
            law, li = LAW_USER, user_index(rs.paths[e], name)
        rl.add(rs.paths[e], ROW_TWIST, 2, MODE_LAW, b0, b1, p0, q0, p1, q1, x0, k, c, law=law, lawidx=li,
               preload=P)

    # -- motors (rows on the joint's DOF)
    mo = el.motors
    motor_rows, motor_paths = [], []
    driven: dict[tuple[int, int], int] = {}
    from usdphys.types.elements import MODE_FORCE as EM_FORCE, MODE_POSITION as EM_POSITION

    for e in range(len(mo)):
        j = int(mo.joint[e])
        if j < 0:
            warn(f"{mo.paths[e]}: its joint {mo.joint_paths[e]} is not simulated (disabled, or it connects no "
                 "simulated body); the motor is ignored")
            continue
        d = _dof_index(model, j, mo.dof[e], f"{mo.paths[e]}: mbd:dof")
        if model.joint_locked[j, d] or model.joint_is_distance[j] or model.joint_composite[j]:
            raise UsdphysError(f"{mo.paths[e]}: mbd:dof = '{mo.dof[e]}' is not a free DOF of {mo.joint_paths[e]}")
        kind, axis = dof_row(j, d)
        b0, b1, p0, q0, p1, q1 = jframes(j)
        if mo.mode[e] == EM_FORCE:
            r = rl.add(mo.paths[e], kind, axis, MODE_LAW, b0, b1, p0, q0, p1, q1, law=LAW_EFFORT,
                       fn=int(mo.fn[e]), motor=MOTOR_FORCE)
        else:
            mk = MOTOR_POSITION if mo.mode[e] == EM_POSITION else MOTOR_VELOCITY
            r = rl.add(mo.paths[e], kind, axis, MODE_EQUAL, b0, b1, p0, q0, p1, q1, fn=int(mo.fn[e]), motor=mk)
            if (j, d) in driven:
                raise UsdphysError(f"{mo.paths[e]}: DOF '{mo.dof[e]}' of {mo.joint_paths[e]} is already driven by "
                                   f"{rl.items[driven[(j, d)]]['name']}")
            driven[(j, d)] = r
        motor_rows.append(r)
        motor_paths.append(mo.paths[e])

    # -- NewtonJointAPI: armature, viscous damping, friction per DOF
    jd = el.joint_dofs
    for e in range(len(jd)):
        j = int(jd.joint[e])
        if j < 0:
            warn(f"{jd.joint_paths[e]}: NewtonJointAPI on a joint that is not simulated; ignored")
            continue
        where = f"{jd.joint_paths[e]}: newton:dofs"
        d = _dof_index(model, j, jd.dof[e], where)
        if model.joint_locked[j, d] or model.joint_is_distance[j] or model.joint_composite[j]:
            warn(f"{where}: '{jd.dof[e]}' is locked by the joint; its armature / friction / damping has no effect")
            continue
        kind, axis = dof_row(j, d)
        b0, b1, p0, q0, p1, q1 = jframes(j)
        name = jd.joint_paths[e]
        if jd.armature[e] > 0:
            rl.add(name, kind, axis, MODE_LAW, b0, b1, p0, q0, p1, q1, 0.0, 0.0, jd.armature[e], law=LAW_ARMATURE)
        if jd.viscous_damping[e] > 0:
            rl.add(name, kind, axis, MODE_LAW, b0, b1, p0, q0, p1, q1, 0.0, 0.0, jd.viscous_damping[e],
                   law=LAW_LINEAR)
        if jd.static_friction[e] > 0 or jd.dynamic_friction[e] > 0:
            rl.add(name, kind, axis, MODE_FRICTION, b0, b1, p0, q0, p1, q1, fstatic=float(jd.static_friction[e]),
                   fdynamic=float(jd.dynamic_friction[e]), couple=driven.get((j, d), -1))
        if jd.spring_stiffness[e] > 0:  # joint spring about its reference coordinate
            rl.add(name, kind, axis, MODE_LAW, b0, b1, p0, q0, p1, q1, jd.spring_reference[e], jd.spring_stiffness[e],
                   0.0, law=LAW_LINEAR)
        vmax = float(jd.velocity_limit[e])
        if np.isfinite(vmax):  # |qdot| <= vmax over every step: two limit rows whose bounds move with q
            rl.add(name, kind, axis, MODE_LOWER, b0, b1, p0, q0, p1, q1, -vmax, moving=1)
            rl.add(name, kind, axis, MODE_UPPER, b0, b1, p0, q0, p1, q1, vmax, moving=1)
        if np.isfinite(jd.limit_stiffness[e]):  # soft limits: the joint's limit rows become one-sided laws
            for it in rl.items:
                if it["source"] == j and it["kind"] == kind and it["axis"] == axis and it["mode"] in (MODE_LOWER, MODE_UPPER):
                    law = LAW_LIMIT_LOWER if it["mode"] == MODE_LOWER else LAW_LIMIT_UPPER
                    it.update(mode=MODE_LAW, law=law, stiffness=float(jd.limit_stiffness[e]),
                              damping=float(jd.limit_damping[e]), target_vel=0.0, preload=0.0)

    # -- joint couplings: q_f - coef1 q_l = coef0, one equal row on the follower's DOF whose
    # partner (a carrier row on the leader's DOF) brings the leader's Jacobian
    cp = el.couplings
    for e in range(len(cp)):
        j, lj = int(cp.joint[e]), int(cp.leader[e])
        if j < 0 or lj < 0:
            warn(f"{cp.paths[e]}: its coupling to {cp.leader_paths[e]} involves a joint that is not simulated; ignored")
            continue
        if j == lj:
            raise UsdphysError(f"{cp.paths[e]}: the joint is coupled to itself (newton:mimicJoint)")
        d = _dof_index(model, j, cp.dof[e], f"{cp.paths[e]}: NewtonMimicAPI")
        dl = _dof_index(model, lj, cp.leader_dof[e], f"{cp.leader_paths[e]}: NewtonMimicAPI leader")
        if any(model.joint_locked[jj, dd] or model.joint_is_distance[jj] or model.joint_composite[jj]
               for jj, dd in ((j, d), (lj, dl))):
            warn(f"{cp.paths[e]}: its coupling to {cp.leader_paths[e]} names a DOF the joints lock; ignored")
            continue
        kind, axis = dof_row(j, d)
        r = rl.add(cp.paths[e], kind, axis, MODE_EQUAL, *jframes(j), value=float(cp.coef0[e]),
                   ratio=-float(cp.coef1[e]))
        kind, axis = dof_row(lj, dl)
        rl.items[r]["partner"] = rl.add(cp.leader_paths[e], kind, axis, MODE_CARRIER, *jframes(lj))

    t, nm, ex = rl.table()  # (the bushing filter ran before any row index was taken)
    return ElementRows(t, nm, ex, laws, el.functions, _loads(model, el.loads), np.asarray(motor_rows, np.int32),
                       motor_paths)


def _no_loads() -> dict[str, np.ndarray]:
    return dict(torque=np.zeros(0, np.int32), b0=np.zeros(0, np.int32), b1=np.zeros(0, np.int32),
                p1=np.zeros((0, 3)), frame=np.zeros(0, np.int32), rot=np.zeros((0, 4)),
                fn=np.zeros((0, 4), np.int32))


def _loads(model: Model, lo) -> dict[str, np.ndarray]:
    from usdphys.types.elements import RESOLVE_BODY0, RESOLVE_BODY1

    out = {k: [] for k in ("torque", "b0", "b1", "p1", "frame", "rot", "fn")}
    for e in range(len(lo)):
        b0, b1 = int(lo.body0[e]), int(lo.body1[e])
        if b1 < 0 and b0 < 0:
            continue  # acts on static bodies only: nothing moves
        p1, _ = model.frame_in_com(b1, lo.local_pos1[e], _IDENT)
        res = int(lo.resolve_in[e])
        frame = {RESOLVE_BODY0: b0, RESOLVE_BODY1: b1}.get(res, -1)
        # world vector = R_com(frame) * conj(com_rot) * v  (the body PRIM axes), or world_rot * v
        rot = quat_conj(model.body_com_rot[frame]) if frame >= 0 else np.asarray(lo.world_rot[e], float)
        out["torque"].append(int(lo.torque[e]))
        out["b0"].append(b0)
        out["b1"].append(b1)
        out["p1"].append(p1)
        out["frame"].append(frame)
        out["rot"].append(rot)
        out["fn"].append(list(lo.vector_fn[e]) + [int(lo.scale_fn[e])])
    n = len(out["b0"])
    return dict(torque=np.asarray(out["torque"], np.int32), b0=np.asarray(out["b0"], np.int32),
                b1=np.asarray(out["b1"], np.int32), p1=np.asarray(out["p1"], float).reshape(n, 3),
                frame=np.asarray(out["frame"], np.int32), rot=np.asarray(out["rot"], float).reshape(n, 4),
                fn=np.asarray(out["fn"], np.int32).reshape(n, 4))


def _pad(a: np.ndarray, n: int) -> np.ndarray:
    a = np.asarray(a)
    if a.shape[0] >= n and a.shape[0] > 0:
        return a
    out = np.zeros((max(n, 1),) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def element_data(er: ElementRows, device) -> ElementData:
    """Upload the element columns, laws, functions and loads (arrays padded to >= 1 row)."""
    R = max(er.count, 1)
    d = ElementData()

    def arr(a, dtype, n=None):
        a = _pad(np.ascontiguousarray(a), n if n is not None else 1)
        np_dtype = np.int32 if dtype in (wp.int32,) else np.float64
        return wp.array(a.astype(np_dtype), dtype=dtype, device=device)

    ex = er.extra
    d.law = arr(ex["law"], wp.int32, R)
    d.lawidx = arr(ex["lawidx"], wp.int32, R)
    d.preload = arr(ex["preload"], wp.float64, R)
    d.fn = arr(ex["fn"], wp.int32, R)
    d.motor = arr(ex["motor"], wp.int32, R)
    # [world, row]: one row here; usdphys.solver.io widens them to every world (per-world values)
    d.fstatic = arr(ex["fstatic"], wp.float64, R).reshape((1, R))
    d.fdynamic = arr(ex["fdynamic"], wp.float64, R).reshape((1, R))
    d.couple = arr(ex["couple"], wp.int32, R)
    d.moving = arr(ex["moving"], wp.int32, R)
    d.law_i = arr(np.asarray(er.laws.law_i, np.int32).reshape(-1, 7), wp.int32)
    d.law_f = arr(np.asarray(er.laws.law_f, float).reshape(-1, 4), wp.float64)
    d.law_data = arr(er.laws.data, wp.float64)
    fns = er.functions
    kinds = np.asarray(fns.kinds, np.int32).reshape(-1, 4)
    params = np.asarray(fns.params, float).reshape(-1, 8)
    d.tf_kinds = arr(kinds, wp.int32)
    d.tf_params = arr(params, wp.float64)
    d.tf_data = arr(fns.data, wp.float64)
    lo = er.loads
    d.n_loads = int(lo["b0"].shape[0])
    d.load_torque = arr(lo["torque"], wp.int32)
    d.load_b0 = arr(lo["b0"], wp.int32)
    d.load_b1 = arr(lo["b1"], wp.int32)
    d.load_p1 = arr(lo["p1"], wp.vec3d)
    d.load_frame = arr(lo["frame"], wp.int32)
    rot = _pad(lo["rot"], 1)
    if lo["rot"].shape[0] == 0:
        rot[:] = _IDENT
    d.load_rot = wp.array(rot, dtype=wp.quatd, device=device)
    d.load_fn = arr(lo["fn"], wp.int32)
    d.n_motors = int(er.motor_rows.shape[0])
    d.motor_row = arr(er.motor_rows, wp.int32)
    return d


def element_state(worlds: int, rows: int, device, zeros=None) -> ElementState:
    """Zeroed element state; zeros(shape, dtype) allocates the [world, row] arrays (io.world_zeros:
    the memory layout; None: plain wp.zeros)."""
    s = ElementState()
    R = max(rows, 1)
    if zeros is None:
        def zeros(shape, dtype):
            return wp.zeros(shape, dtype=dtype, device=device)
    for name in ("rval", "fprev", "gun", "gdot", "sfac", "cfac", "qref", "lmax", "qc", "qg", "qb"):
        setattr(s, name, zeros((worlds, R), wp.float64))
    s.stick = zeros((worlds, R), wp.int32)
    s.tnow = wp.zeros(worlds, dtype=wp.float64, device=device)
    s.hnow = wp.zeros(worlds, dtype=wp.float64, device=device)
    s.hlast = wp.zeros(worlds, dtype=wp.float64, device=device)
    s.hkick = wp.zeros(worlds, dtype=wp.float64, device=device)
    s.min_newton = wp.zeros(worlds, dtype=wp.int32, device=device)
    return s


def has_elements(er: ElementRows) -> bool:
    return bool(er.loads["b0"].shape[0]) or bool(np.any(er.extra["law"] != LAW_NONE)) or bool(
        np.any(er.extra["motor"] != MOTOR_NONE)) or bool(np.any(er.rows.mode == MODE_FRICTION))


