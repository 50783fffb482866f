"""The time-stepping kernel: one thread per world advances a chunk of output frames.

Each substep (docs/solver.md has the derivation):
  1. predictor: v* = v + h g; world angular momentum L = R I R^T w;
  2. constraint rows evaluated ONCE at the step start x_n: g_n, Jacobian G, W = M^-1 G^T,
     A = G M^-1 G^T (+ drive compliance), factorised by LDL^T (pivot-safe);
  3. SHAKE-like Newton iteration on the impulses lam: every iterate moves the bodies
     exactly (x+ = x + h (v* + dv(lam)); rotation = free-rigid-body midpoint step of the
     momentum L + dL(lam)) and re-evaluates g(x+); lam -= A^-1 g(x+) / h until |g| < tol;
  4. inequality rows (limits) and force-bounded drives by an active-set loop;
  5. commit positions and the velocities that produced them (v+ = dx/h: no drift, no
     separate velocity projection).

Loops over rows and bodies on the hot path are written
    i = int(-1)
    while i < n - 1:
        i += 1
        ...
instead of `for i in range(n)`: Warp indexes arrays Python-style (a[-1] is the last entry), so
every access tests its index for a negative value and wraps it, a few integer operations, which
the C++ compiler drops only where it can prove the index >= 0. It cannot through Warp's range()
iterator; it can for a counter that starts at -1 and only counts up (`continue` stays safe: the
count is at the loop's top). A loop over 500 rows ran 2.2 ns an iteration with range() and 0.8
with the counter; chain-100's step 112 -> 103 us with the step's row and body loops so written
(an earlier rewrite as `i = 0; while i < n` measured nothing on a noisier machine, docs/solver.md).
"""
from __future__ import annotations

import warp as wp

from usdphys.solver.contact import ContactModel, ContactState, contact_begin, contact_end, contact_kick, contact_solve
from usdphys.solver.forces import (
    W_LAW_ARMATURE,
    W_LAW_EFFORT,
    W_LINE_EPS,
    W_MOTOR_POSITION,
    W_MOTOR_VELOCITY,
    W_STICK_SPEED,
    ElementData,
    ElementState,
    apply_loads,
    law_force,
    time_fn,
    time_fn_integral,
)
from usdphys.solver.outputs import FrameOutput, record_derived, save_prev
from usdphys.solver.ldl import FACTOR_TOL, RANK_TOL, RowPattern, ldl_factor, ldl_solve
from usdphys.types.rowgraph import COUPLED
from usdphys.solver.mathx import (
    MODE_EQUAL,
    MODE_FRICTION,
    MODE_LAW,
    MODE_LOWER,
    MODE_SOFT,
    MODE_UPPER,
    ROW_DIST,
    ROW_SWING,
    ROW_TWIST,
    PI,
    TWO_PI,
    cayley_unnormalised,
    cmul,
    euler_xyz,
    eval_row,
    eval_row_in,
    free_rotation,
    middle_branch,
    row_frames,
    sequence_limit,
    start_turn,
    turn_step,
    wrap_angle,
)

# CUDA: machine code for the device's own architecture (cubin), not PTX that the driver would
# translate again at load: the step is one large kernel (~3 MB of machine code), whose PTX
# takes the driver's assembler minutes on every machine that has not cached it.
# CPU: Warp passes structs to a @wp.func by value, so every call Clang does not inline copies the
# step's groups of array descriptors (model, state, scratch, ...: ~20 KB at a step_world call,
# ~12 KB at each residuals call). Inlining thresholds far above Warp's default (9000 / 3000) put
# the whole step, step_world included, into its kernels: four-bar x256 -25 % CPU time a step,
# chains -7-9 %, results bit-identical, for a cold build of ~2 minutes (~45 s with Warp's default flags). The step
# needs an inline threshold between 300000 (step_world stays out of line: the gain is lost) and
# 500000; 1000000 leaves room for the step to grow. "-march=native" as Warp's default.
STEP_CPU_FLAGS = ("-march=native -mllvm=-inline-threshold=1000000 -mllvm=-inline-cold-callsite-threshold=30000"
                  " -mllvm=-slp-recursion-max-depth=4")
wp.set_module_options({"enable_backward": False, "cuda_output": "cubin", "cpu_compiler_flags": STEP_CPU_FLAGS})

SHARE_COUPLED = wp.constant(COUPLED)  # pattern entry with a coupling row: computed in full (coupled_entry)
# Active-set passes per step. Each pass changes every row that violates its condition at once, and
# coupled friction rows may take several passes to settle: gymnasium's Adroit relocate hand (24
# finger joints with 1e-3 N m of friction) changed 4, 7, 6, 3, 2, 1 rows in its six passes at
# t = 0.939 s and was retried down to dt/256, where it cycled the same way; with twelve it settles.
# A step whose set settles sooner takes only the passes it needs.
MAX_PASSES = wp.constant(12)
MAX_NEWTON = wp.constant(12)  # Newton iterations per pass
# Globalisation: an update after which the largest row residual is no smaller (or not finite)
# is taken back by halves (a backtracking line search), or whole when the iteration matrix was
# an earlier step's, which is then rebuilt. A thin rod's rows seen through an old factor, or from
# a far warm start, otherwise throw the iterate radians away, where the Newton never returns.
# Residuals within ACCEPT_FACTOR x the tolerance are round-off's business (a forced update's
# 1.2e-12 after 7e-13 makes the impulses exact): never taken back.
MAX_BACKTRACKS = wp.constant(8)  # per pass, on top of the updates
# Past MAX_NEWTON updates the iteration goes on, up to MAX_NEWTON_SLOW, while each update still
# shrinks the residual to SLOW_GAIN of what it was: the fixed iteration matrix converges only
# linearly where the rows turn fast within the step (a thin rod spinning near a Cardan joint's
# gimbal lock: 0.8 per update at dt/64), and stopping there would fail a convergent step.
MAX_NEWTON_SLOW = wp.constant(40)
SLOW_GAIN = wp.constant(wp.float64(0.9))
# Modified Newton across steps (models whose rows are all equal rows, no contact): A = G M^-1 G^T
# changes by O(h |w|) per step, so the last factorisation still contracts the residual fast; it
# is rebuilt every REFACTOR_EVERY steps, or as soon as one update shrinks the residual by less
# than REFACTOR_RATE while the residual is still above REFACTOR_FLOOR x the tolerance. Below
# that floor one more update through the old factor finishes the step, where a rebuild costs a
# chain of rods three updates; 0.5 rather than 0.3 (and 0.1 before that) with the quintic warm
# start, whose small start residual is mostly what an old factor resolves worst: chain-300 0.14
# factorisations a step instead of 0.25, the falling 100-rod chain 0.28 (0.33 with 0.3 and no
# floor). Only the iteration matrix is old: the impulse directions G, the residual g(x+) and the
# 1e-12 stopping test are this step's, so the converged step is the same.
REFACTOR_EVERY = wp.constant(8)
REFACTOR_RATE = wp.constant(wp.float64(0.5))
REFACTOR_FLOOR = wp.constant(wp.float64(10.0))
# The secant (Anderson) acceleration's weight: gamma = rho / (rho - 1) for an iteration rate rho,
# so [-4, 0.5] accelerates rates up to 0.8 and takes back overshoots down to -1 (secant_weight).
SECANT_MIN = wp.constant(wp.float64(-4.0))
SECANT_MAX = wp.constant(wp.float64(0.5))
# factorisations that may reuse one rank decision (factor_rows) while the active set is unchanged
RANK_EVERY = wp.constant(8)
# Blow-up guards (SI): beyond these the run is stopped with an error naming body and time.
MAX_SPEED = wp.constant(wp.float64(1.0e5))  # m/s, far above any multibody machine
MAX_SPIN = wp.constant(wp.float64(1.0e6))  # rad/s
MAX_POS = wp.constant(wp.float64(1.0e9))  # m
# A step whose rows are still off by more than ACCEPT_FACTOR x the Newton tolerance after the
# iterations is not committed: it is retried as two half steps, down to 1/2^MAX_HALVINGS of
# the step, and then the run stops naming time, row and residual (never committed silently).
ACCEPT_FACTOR = wp.constant(wp.float64(1.0e3))
# Rows dropped as dependent cannot be moved by Newton: an input whose redundant joints disagree
# by less than this (m or rad; the same bound under which assembly calls joint frames coincident)
# runs, and the disagreement shows in the reported joint error; more than this stops the run.
DEPENDENT_TOL = wp.constant(wp.float64(1.0e-6))
_HALVINGS = 8
MAX_HALVINGS = wp.constant(_HALVINGS)
STEP_UNITS = wp.constant(2 ** _HALVINGS)  # a step in units of its smallest retry, h / 2^MAX_HALVINGS


# Kernel parameters come in groups (usdphys/solver/io.py builds them; docs/solver.md, "Host /
# device layout"): the model (ModelData, ContactModel) is read-only and shared by all worlds;
# the state (StateData, RowState, ElementState, ContactState) is everything a step reads from the
# previous one, updated in place (state in = state out); Scratch holds the step's work
# buffers; Diagnostics and FrameOutput are written for the host. The groups are separate
# structs, not nested ones: Warp passes structs to functions by value, and each function
# should copy only what it uses (row_at, residuals, move_bodies run many times per step).
@wp.struct
class ModelData:
    """Read-only, shared by all worlds: bodies, constraint rows, elements (contact: ContactModel)."""
    n_bodies: int
    n_rows: int
    # Per-world parameters are [world, entry] arrays; a parameter no world varies is one row
    # seen by every world through a zero world stride (io.world_param), so kernels always index
    # [w, i] and never ask whether it varies.
    gravity: wp.array(dtype=wp.vec3d)  # [world]
    inv_mass: wp.array2d(dtype=wp.float64)  # [world, body] 0: kinematic
    inertia: wp.array2d(dtype=wp.vec3d)  # [world, body] principal moments
    inv_inertia: wp.array2d(dtype=wp.vec3d)  # [world, body] 0 for kinematic
    row_kind: wp.array(dtype=wp.int32)
    row_axis: wp.array(dtype=wp.int32)
    row_mode: wp.array(dtype=wp.int32)
    row_value: wp.array2d(dtype=wp.float64)
    row_b0: wp.array(dtype=wp.int32)
    row_b1: wp.array(dtype=wp.int32)
    # coupling rows (q_f + ratio q_l = value): the carrier row holding the leader's Jacobian, or
    # -1; the row's Jacobian is its own plus ratio times the carrier's
    row_partner: wp.array(dtype=wp.int32)
    row_ratio: wp.array(dtype=wp.float64)  # coupling rows: the ratio
    pat: RowPattern  # elimination order and sparse pattern of the row system's factor (ldl.py)
    row_p0: wp.array(dtype=wp.vec3d)
    row_q0: wp.array(dtype=wp.quatd)
    row_p1: wp.array(dtype=wp.vec3d)
    row_q1: wp.array(dtype=wp.quatd)
    # the first row of the run of consecutive rows with this row's bodies and frames (a joint's
    # rows): loops over the rows compute the world frames once per run (row_frames)
    row_frame: wp.array(dtype=wp.int32)
    row_k: wp.array2d(dtype=wp.float64)
    row_c: wp.array2d(dtype=wp.float64)
    row_tv: wp.array2d(dtype=wp.float64)
    row_fmax: wp.array2d(dtype=wp.float64)
    row_accel: wp.array(dtype=wp.int32)
    # twist rows: the DOF's [lower, upper] (rad, +-inf when open), used once to pick the turn of
    # the unwrapped joint coordinate at the start (inside the range when the pose allows); cone
    # (swing) rows: the cone's two sides (model.swing_sides; step.row_form)
    row_lo: wp.array2d(dtype=wp.float64)
    row_hi: wp.array2d(dtype=wp.float64)
    geo_ang: wp.float64  # 1 / L^2: weight of angular DOFs in the mass-free rank test (factor_rows)
    # rad; > 0: a step in which a dynamic body turns by more is retried smaller (step_world), down
    # to the retries' floor; 0: off (the run's setting, Solver(max_turn=...))
    max_turn: wp.float64
    has_elements: int  # 0: no motors, law / friction rows or loads (begin / end_elements skipped)
    equal_only: int  # 1: every row is an equal row and nothing collides (A reused, impulses extrapolated)
    # 1: every row is an equal row or a limit and nothing collides: while no limit holds, a step
    # is one of equal rows alone (A reused, impulses extrapolated), so a limit never reached
    # leaves the motion as it is without it
    hard_only: int
    # 1: not equal_only, and no acceleration drive or law row (io.put_model says why): A and
    # its factor are reused across steps while the step's rows are the factor's
    # (kept_as_factorised), impulses not extrapolated (hard_only's quiet steps extrapolate them)
    reuse_factor: int
    el: ElementData  # force elements, motors, friction, loads (forces.py)


@wp.struct
class StateData:
    """Body state per world [world, body], carried from step to step (updated in place):
    COM-frame poses and velocities; vel is the half-step (leapfrog) velocity. The rest of the
    state is in RowState, ElementState (forces.py) and ContactState (contact.py)."""
    pos: wp.array2d(dtype=wp.vec3d)
    rot: wp.array2d(dtype=wp.quatd)
    vel: wp.array2d(dtype=wp.vec3d)
    omega: wp.array2d(dtype=wp.vec3d)


@wp.struct
class RowState:
    """Row state per world [world, row], carried from step to step: the impulses of the last six
    steps (lwarm: the last) of the equal rows and of the limits that held (Newton warm start;
    extrapolated in models of equal rows only), and per world [world] how many of the last
    committed steps in a row had the last step's size (run: how far the history is evenly
    spaced)."""
    run: wp.array(dtype=wp.int32)
    lwarm: wp.array2d(dtype=wp.float64)
    lwarm2: wp.array2d(dtype=wp.float64)
    lwarm3: wp.array2d(dtype=wp.float64)
    lwarm4: wp.array2d(dtype=wp.float64)
    lwarm5: wp.array2d(dtype=wp.float64)
    lwarm6: wp.array2d(dtype=wp.float64)


@wp.struct
class Scratch:
    """Work buffers of one step: written before they are read within the step. The one
    exception is the factorisation cache (A, Lf, Dinv, keep, sdiag_f, the rank decision, fage,
    fheld): every model but those with acceleration drives or law rows reuses the factor of an earlier step
    (modified Newton, REFACTOR_EVERY; ModelData.equal_only, hard_only, reuse_factor); fage = -1
    marks it stale."""
    # bodies [world, body]
    vstar: wp.array2d(dtype=wp.vec3d)
    mom: wp.array2d(dtype=wp.vec3d)
    iinv: wp.array2d(dtype=wp.mat33d)
    pos1: wp.array2d(dtype=wp.vec3d)
    rot1: wp.array2d(dtype=wp.quatd)
    vel1: wp.array2d(dtype=wp.vec3d)
    omega1: wp.array2d(dtype=wp.vec3d)
    lbody1: wp.array2d(dtype=wp.vec3d)  # angular momentum at the moved pose, in the body frame
    dv: wp.array2d(dtype=wp.vec3d)
    dL: wp.array2d(dtype=wp.vec3d)
    # rows [world, row]
    g0: wp.array2d(dtype=wp.float64)
    jl0: wp.array2d(dtype=wp.vec3d)
    ja0: wp.array2d(dtype=wp.vec3d)
    jl1: wp.array2d(dtype=wp.vec3d)
    ja1: wp.array2d(dtype=wp.vec3d)
    wl0: wp.array2d(dtype=wp.vec3d)
    wa0: wp.array2d(dtype=wp.vec3d)
    wl1: wp.array2d(dtype=wp.vec3d)
    wa1: wp.array2d(dtype=wp.vec3d)
    sdiag: wp.array2d(dtype=wp.float64)
    sdiag_f: wp.array2d(dtype=wp.float64)  # the sdiag the kept factor was built with (kept_as_factorised)
    sshift: wp.array2d(dtype=wp.float64)
    sinv: wp.array2d(dtype=wp.float64)
    lam: wp.array2d(dtype=wp.float64)  # row impulses of this step (motor efforts are read from it)
    res: wp.array2d(dtype=wp.float64)
    act: wp.array2d(dtype=wp.int32)
    keep: wp.array2d(dtype=wp.int32)  # rows in the factorisation: active and independent
    # the last rank decision (factor_rows): rows found independent, the hard active set it was
    # made for, and how many factorisations have reused it (-1: none valid)
    rank_indep: wp.array2d(dtype=wp.int32)
    rank_hard: wp.array2d(dtype=wp.int32)
    rank_age: wp.array(dtype=wp.int32)
    # A and its factor: only the entries of the pattern m.pat, [world, entry] (ldl.py)
    A: wp.array2d(dtype=wp.float64)
    Lf: wp.array2d(dtype=wp.float64)
    ly: wp.array2d(dtype=wp.float64)  # [world, row] the factorisation's work row, zero between uses
    Dinv: wp.array2d(dtype=wp.float64)  # [world, row] reciprocal pivots (ldl.py), 0: row not in the factor
    fage: wp.array(dtype=wp.int32)  # steps since Lf, Dinv were factorised (-1: none valid)
    fheld: wp.array(dtype=wp.int32)  # 1: a limit row was active in that factorisation (not reused)
    rfresh: wp.array(dtype=wp.int32)  # 1: res holds the residuals of the current poses
    conv_err: wp.array(dtype=wp.float64)  # the step's largest row residual after solve_rows
    dlam: wp.array2d(dtype=wp.float64)  # [world, row] impulse changes of an active-set change
    dres: wp.array2d(dtype=wp.float64)  # [world, row] A dlam
    dstep: wp.array2d(dtype=wp.float64)  # [world, row] the last Newton update (line search)
    fprev: wp.array2d(dtype=wp.float64)  # [world, row] the last plain update f (secant_weight)


@wp.struct
class Diagnostics:
    """Written for the host: blow-up reports, constraint errors, Newton counters (per world)."""
    status: wp.array(dtype=wp.int32)  # 0 ok, 1 non-finite, 2 runaway speed / position
    fail_body: wp.array(dtype=wp.int32)
    fail_step: wp.array(dtype=wp.int32)
    max_error: wp.array(dtype=wp.float64)  # largest hard-constraint residual after a step
    worst_row: wp.array(dtype=wp.int32)
    init_error: wp.array(dtype=wp.float64)  # hard-constraint violation of the input pose
    init_row: wp.array(dtype=wp.int32)
    n_updates: wp.array(dtype=wp.int32)  # Newton updates (linear solves) since the counters were zeroed
    n_factor: wp.array(dtype=wp.int32)  # LDL factorisations since then
    n_reduced: wp.array(dtype=wp.int32)  # steps retried as smaller steps (did not converge at first)
    fail_row: wp.array(dtype=wp.int32)  # status 3: the row with the largest residual
    fail_err: wp.array(dtype=wp.float64)  # status 3: that residual (m or rad)
    fail_time: wp.array(dtype=wp.float64)  # status 3: the start time of the step that failed
    frame_error: wp.array(dtype=wp.float64)  # largest hard-constraint residual since the last output frame


@wp.func
def body_pos(pos: wp.array2d(dtype=wp.vec3d), w: int, b: int) -> wp.vec3d:
    if b < 0:
        return wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    return pos[w, b]


@wp.func
def body_rot(rot: wp.array2d(dtype=wp.quatd), w: int, b: int) -> wp.quatd:
    if b < 0:
        return wp.quatd(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    return rot[w, b]


@wp.func
def row_at(m: ModelData, i: int, pos: wp.array2d(dtype=wp.vec3d), rot: wp.array2d(dtype=wp.quatd), w: int):
    """Row i of world w at the given body poses: value g and Jacobians (jl0, ja0, jl1, ja1)."""
    b0 = m.row_b0[i]
    b1 = m.row_b1[i]
    kind = m.row_kind[i]
    axis, shape = row_form(m, w, i, kind)
    return eval_row(kind, axis, m.row_p0[i], m.row_q0[i], m.row_p1[i], m.row_q1[i],
                    body_pos(pos, w, b0), body_rot(rot, w, b0), body_pos(pos, w, b1), body_rot(rot, w, b1), shape)


@wp.func
def row_form(m: ModelData, w: int, i: int, kind: int):
    """Row i's axis and shape parameter for eval_row. A cone's swing row (axis a) measures towards
    its smaller side, axis a + 3 when that is the second (mathx.swing_angle), with the ratio of its
    sides row_lo, row_hi (model.swing_sides: per world, so worlds may differ in which is the
    smaller); any other row: its axis and value (a point row's place on its line)."""
    axis = m.row_axis[i]
    if kind == ROW_SWING:
        lo = m.row_lo[w, i]
        hi = m.row_hi[w, i]
        if hi < lo:
            return axis + 3, hi / lo
        return axis, lo / hi
    return axis, m.row_value[w, i]


@wp.func
def row_coord(m: ModelData, es: ElementState, w: int, i: int, kind: int, g: wp.float64) -> wp.float64:
    """The coordinate a limit compares with: g for lengths, the unwrapped angle for twists."""
    if kind == ROW_TWIST:
        return es.qc[w, i] + turn_step(m.row_axis[i], g - es.qg[w, i])
    return g


@wp.func
def element_delta(m: ModelData, sc: Scratch, w: int, i: int, kind: int, g: wp.float64) -> wp.float64:
    """How far row i moved since the step start (value g now): for twists the turn (turn_step)."""
    d = g - sc.g0[w, i]
    if kind == ROW_TWIST:
        d = turn_step(m.row_axis[i], d)
    return d


@wp.func
def is_sequence_limit(m: ModelData, i: int) -> int:
    """1 for a limit on the first or last angle of a three-rotation joint's x-y-z sequence."""
    mode = m.row_mode[i]
    axis = m.row_axis[i]
    if (mode == MODE_LOWER or mode == MODE_UPPER) and m.row_kind[i] == ROW_TWIST and (axis == 6 or axis == 8):
        return 1
    return 0


@wp.func
def far_branch_offset(m: ModelData, es: ElementState, w: int, i: int, g: wp.float64) -> wp.float64:
    """What the first or last angle of an x-y-z sequence measured as g reads more than the angle
    itself: pi on the sequence's other branch, past its lock (where the unwrapped angle,
    row_coord, is pi off the measurement: near_sequence_limit's branch rule), else 0. A target
    angle (a position drive's, a motor's) is compared with g less this."""
    axis = m.row_axis[i]
    if axis == 6 or axis == 8:
        if wp.cos(row_coord(m, es, w, i, ROW_TWIST, g) - g) < wp.float64(0.0):
            return PI
    return wp.float64(0.0)


@wp.func
def is_middle_twist(m: ModelData, i: int) -> int:
    """1 for a row on the middle angle of a three-rotation joint's x-y-z sequence. Such a row
    measures the angle itself (middle_angle, followed through the lock in es.qc / es.qb), not
    the measurement g, which turns back past the lock: its Jacobian is reversed there
    (step_world), sc.g0 holds the angle at the step start, and what compares with g elsewhere
    (limits, drive and motor targets, element turns and springs) reads row_measure instead."""
    if m.row_kind[i] == ROW_TWIST and m.row_axis[i] == 7:
        return 1
    return 0


@wp.func
def middle_angle(es: ElementState, w: int, i: int, Q0: wp.quatd, Q1: wp.quatd, g: wp.float64, ref: wp.float64):
    """The middle angle of the x-y-z sequence (measured g, within +-90 deg) as MuJoCo's middle
    hinge counts it: past +-90 deg it goes on to 180 deg and beyond, where the measurement turns
    back on the sequence's other branch, (q0, q1, q2) = (q0 + pi, pi - q1, q2 + pi). The branch is
    the first angle's: followed through the lock (es.qb, a step's turn under 90 deg), it reads pi
    off the measured first angle there. Returns (the angle nearest ref, the followed first angle,
    -1 on the other branch / 1)."""
    r0, J0 = euler_xyz(0, Q0, Q1)
    qb = es.qb[w, i] + turn_step(6, r0 - es.qb[w, i])
    base, sign = middle_branch(g, qb, r0)
    return base + TWO_PI * wp.round((ref - base) / TWO_PI), qb, sign


@wp.func
def row_measure(m: ModelData, es: ElementState, w: int, i: int, g: wp.float64, Q0: wp.quatd, Q1: wp.quatd) -> wp.float64:
    """What row i measures at frames (Q0, Q1) where its value is g: g, or on the middle angle of
    an x-y-z sequence the angle itself (is_middle_twist)."""
    if is_middle_twist(m, i) != 0:
        qm, qb, sign = middle_angle(es, w, i, Q0, Q1, g, es.qc[w, i])
        return qm
    return g


@wp.func
def row_unwrapped(m: ModelData, es: ElementState, w: int, i: int, kind: int, g: wp.float64, Q0: wp.quatd,
                  Q1: wp.quatd) -> wp.float64:
    """The coordinate a limit or a coupling compares (row_coord), for the middle angle of an x-y-z
    sequence the angle itself (row_measure)."""
    if is_middle_twist(m, i) != 0:
        return row_measure(m, es, w, i, g, Q0, Q1)
    return row_coord(m, es, w, i, kind, g)


@wp.func
def row_measure_at(m: ModelData, es: ElementState, w: int, i: int, pos: wp.array2d(dtype=wp.vec3d),
                   rot: wp.array2d(dtype=wp.quatd), g: wp.float64) -> wp.float64:
    """row_measure at the given body poses."""
    if is_middle_twist(m, i) == 0:
        return g
    b0 = m.row_b0[i]
    b1 = m.row_b1[i]
    P0, Q0, P1, Q1 = row_frames(m.row_p0[i], m.row_q0[i], m.row_p1[i], m.row_q1[i], body_pos(pos, w, b0),
                                body_rot(rot, w, b0), body_pos(pos, w, b1), body_rot(rot, w, b1))
    return row_measure(m, es, w, i, g, Q0, Q1)


@wp.func
def near_sequence_limit(m: ModelData, i: int, Q0: wp.quatd, Q1: wp.quatd, q: wp.float64, g: wp.float64,
                        b: wp.float64):
    """For a limit row i on a first or last angle of the x-y-z sequence whose unwrapped angle q
    (measured g) is within 90 deg of its bound b: (1, h, J) of sequence_limit, signed by the
    branch q is on (on the sequence's other branch, past the lock, cos q1 < 0); else (0, 0, 0):
    farther out the angle itself decides, h folds there. On the lock itself the branch is
    ambiguous and a held limit may not converge (docs/solver.md, "Stop 36")."""
    hv = wp.float64(0.0)
    J = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    near = int(0)
    if is_sequence_limit(m, i) != 0 and wp.abs(q - b) < wp.float64(0.5) * PI:
        near = 1
        hv, J = sequence_limit(m.row_axis[i], Q0, Q1, b)
        if wp.cos(q - g) < wp.float64(0.0):
            hv = -hv
            J = -J
    return near, hv, J


@wp.func
def limit_residual(m: ModelData, es: ElementState, w: int, i: int, kind: int, g: wp.float64, Q0: wp.quatd,
                   Q1: wp.quatd) -> wp.float64:
    """A limit row's residual (>= 0: within the limit): the coordinate's distance from the bound,
    or near_sequence_limit's h."""
    q = row_unwrapped(m, es, w, i, kind, g, Q0, Q1)
    near, hv, J = near_sequence_limit(m, i, Q0, Q1, q, g, es.rval[w, i])
    if near != 0:
        return row_sign(m.row_mode[i]) * hv
    return row_sign(m.row_mode[i]) * (q - es.rval[w, i])


@wp.func
def limit_bound(m: ModelData, es: ElementState, sc: Scratch, w: int, i: int, h: wp.float64, assemble: int) -> wp.float64:
    """The bound limit row i holds this step: its value, or the coordinate at the step start
    where the pose starts outside the range (only an input can; the joint cannot go further out
    and may come back in, and no body is moved before t = 0), or for a velocity limit the
    coordinate plus h times the speed."""
    q0 = sc.g0[w, i]
    if m.row_kind[i] == ROW_TWIST:
        q0 = es.qc[w, i]
    bound = m.row_value[w, i]
    if m.el.moving[i] != 0:  # velocity limit: q_{n+1} - q_n within h [-v_max, v_max]
        if assemble != 0:  # the assembly moves no time forward: no bound (+-inf)
            bound = bound * wp.float64(1.0e300) * wp.float64(1.0e300)
        else:
            bound = q0 + h * bound
    elif m.row_mode[i] == MODE_LOWER:
        bound = wp.min(bound, q0)
    else:
        bound = wp.max(bound, q0)
    return bound


@wp.func
def active_set_rows(m: ModelData) -> int:
    """How many rows the loops over limits and clamped drives visit: none when every row is an
    equal row (m.equal_only), else all."""
    if m.equal_only != 0:
        return 0
    return m.n_rows


@wp.func
def drive_bound(m: ModelData, es: ElementState, w: int, i: int) -> wp.float64:
    """Drive row i's impulse bound: its force limit over this try's kick (es.hkick)."""
    return es.hkick[w] * m.row_fmax[w, i]


@wp.func
def row_sign(mode: int) -> wp.float64:
    if mode == MODE_UPPER:
        return wp.float64(-1.0)
    return wp.float64(1.0)


@wp.func
def add_row_impulse(m: ModelData, sc: Scratch, w: int, i: int, lam: wp.float64):
    """Add an impulse lam along row i to its bodies' velocity change dv and momentum change dL."""
    b0 = m.row_b0[i]
    b1 = m.row_b1[i]
    if b0 >= 0:
        sc.dv[w, b0] = sc.dv[w, b0] + lam * sc.wl0[w, i]
        sc.dL[w, b0] = sc.dL[w, b0] + lam * sc.ja0[w, i]
    if b1 >= 0:
        sc.dv[w, b1] = sc.dv[w, b1] + lam * sc.wl1[w, i]
        sc.dL[w, b1] = sc.dL[w, b1] + lam * sc.ja1[w, i]


@wp.func
def flush_impulses(sc: Scratch, w: int, b0: int, b1: int, v0: wp.vec3d, L0: wp.vec3d, v1: wp.vec3d, L1: wp.vec3d):
    """Add a run of rows' summed velocity and momentum changes to its two bodies."""
    if b0 >= 0:
        sc.dv[w, b0] = sc.dv[w, b0] + v0
        sc.dL[w, b0] = sc.dL[w, b0] + L0
    if b1 >= 0:
        sc.dv[w, b1] = sc.dv[w, b1] + v1
        sc.dL[w, b1] = sc.dL[w, b1] + L1


@wp.func
def move_bodies(m: ModelData, st: StateData, sc: Scratch, w: int, h: wp.float64, assemble: int):
    """Positions and velocities produced by the current impulses lam (exact, nonlinear); of a
    dynamic body's angular velocity only its body-frame momentum (sc.lbody1): the iteration
    reads poses alone, and moved_velocities turns the last move's momenta into velocities."""
    z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    b = int(-1)
    while b < m.n_bodies - 1:
        b += 1
        sc.dv[w, b] = z
        sc.dL[w, b] = z
    # a run of rows sharing two bodies (a joint's rows, m.row_frame) sums its impulses in
    # registers and adds them to the bodies once
    frame = int(-1)
    b0 = int(-1)
    b1 = int(-1)
    v0 = z
    L0 = z
    v1 = z
    L1 = z
    i = int(-1)
    while i < m.n_rows - 1:
        i += 1
        if m.row_frame[i] != frame:
            flush_impulses(sc, w, b0, b1, v0, L0, v1, L1)
            frame = m.row_frame[i]
            b0 = m.row_b0[i]
            b1 = m.row_b1[i]
            v0 = z
            L0 = z
            v1 = z
            L1 = z
        if sc.act[w, i] == 0:
            continue
        lam = sc.lam[w, i]
        v0 = v0 + lam * sc.wl0[w, i]
        L0 = L0 + lam * sc.ja0[w, i]
        v1 = v1 + lam * sc.wl1[w, i]
        L1 = L1 + lam * sc.ja1[w, i]
        p = m.row_partner[i]
        if p >= 0:  # a coupling row also acts through its carrier (the leader's DOF)
            add_row_impulse(m, sc, w, p, lam * m.row_ratio[i])
    flush_impulses(sc, w, b0, b1, v0, L0, v1, L1)
    b = int(-1)
    while b < m.n_bodies - 1:
        b += 1
        x = st.pos[w, b]
        q = st.rot[w, b]
        if m.inv_mass[w, b] > wp.float64(0.0):
            v = sc.vstar[w, b] + sc.dv[w, b]
            sc.vel1[w, b] = v
            sc.pos1[w, b] = x + h * v
            lw = sc.mom[w, b] + sc.dL[w, b]
            lb = wp.quat_rotate_inv(q, lw)
            om = cmul(m.inv_inertia[w, b], lb)
            lp = lb
            if assemble == 0:
                om, lp = free_rotation(lb, m.inertia[w, b], m.inv_inertia[w, b], h)
            sc.rot1[w, b] = wp.normalize(q * cayley_unnormalised(om, h))
            sc.lbody1[w, b] = lp  # the angular velocity only the final poses need (moved_velocities)
        else:  # kinematic: constant velocity, no response to impulses
            v = sc.vstar[w, b]
            om = st.omega[w, b]
            if assemble != 0:
                om = z
            sc.vel1[w, b] = v
            sc.pos1[w, b] = x + h * v
            sc.rot1[w, b] = wp.normalize(cayley_unnormalised(om, h) * q)
            sc.omega1[w, b] = om


@wp.func
def moved_velocities(m: ModelData, sc: Scratch, w: int):
    """The dynamic bodies' angular velocities at the poses move_bodies reached last (sc.omega1),
    once the iteration is done, not at each of its moves."""
    b = int(-1)
    while b < m.n_bodies - 1:
        b += 1
        if m.inv_mass[w, b] > wp.float64(0.0):
            sc.omega1[w, b] = wp.quat_rotate(sc.rot1[w, b], cmul(m.inv_inertia[w, b], sc.lbody1[w, b]))


@wp.func
def residuals(m: ModelData, es: ElementState, sc: Scratch, w: int, only_hard: int) -> wp.float64:
    """Residual of every active row at the moved poses (into sc.res); returns the largest.

    only_hard = 0 (the Newton test): rows the factorisation dropped as dependent do not count.
    Newton cannot move them; a consistent one follows the rows it depends on, an inconsistent
    one (joints that disagree, e.g. by 1e-7 m) is a property of the model, not a step that did
    not converge: it shows in the hard-row error the run reports (only_hard = 1)."""
    worst = wp.float64(0.0)
    frame = int(-1)  # the run of rows whose world frames P0, Q0, P1, Q1 hold
    x0 = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    x1 = x0
    P0 = x0
    P1 = x0
    Q0 = wp.quatd(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    Q1 = Q0
    i = int(-1)
    while i < m.n_rows - 1:
        i += 1
        a = sc.act[w, i]
        if a != 1:
            sc.res[w, i] = wp.float64(0.0)
            continue
        mode = m.row_mode[i]
        if only_hard != 0 and (mode == MODE_SOFT or mode == MODE_LAW or mode == MODE_FRICTION):
            sc.res[w, i] = wp.float64(0.0)
            continue
        kind = m.row_kind[i]
        if m.row_frame[i] != frame:
            frame = m.row_frame[i]
            b0 = m.row_b0[i]
            b1 = m.row_b1[i]
            x0 = body_pos(sc.pos1, w, b0)
            x1 = body_pos(sc.pos1, w, b1)
            P0, Q0, P1, Q1 = row_frames(m.row_p0[i], m.row_q0[i], m.row_p1[i], m.row_q1[i], x0,
                                        body_rot(sc.rot1, w, b0), x1, body_rot(sc.rot1, w, b1))
        axis, shape = row_form(m, w, i, kind)
        g, jl0, ja0, jl1, ja1 = eval_row_in(kind, axis, P0, Q0, P1, Q1, x0, x1, shape)
        r = wp.float64(0.0)
        err = wp.float64(-1.0)
        partner = m.row_partner[i]
        if mode == MODE_EQUAL and partner < 0:  # the common row first (a carrier is never active)
            dg = row_measure(m, es, w, i, g, Q0, Q1) - es.rval[w, i]
            if kind == ROW_TWIST:  # a position motor's angle
                dg = wrap_angle(dg - far_branch_offset(m, es, w, i, g))
            r = dg
        elif mode == MODE_LAW:
            r, err = law_residual(m, es, sc, w, i, row_measure(m, es, w, i, g, Q0, Q1))
        elif mode == MODE_SOFT or mode == MODE_FRICTION:
            r = element_delta(m, sc, w, i, kind, row_measure(m, es, w, i, g, Q0, Q1)) - sc.sshift[w, i] + sc.lam[w, i] * sc.sinv[w, i]
        elif mode == MODE_LOWER or mode == MODE_UPPER:
            r = limit_residual(m, es, w, i, kind, g, Q0, Q1)
        elif partner >= 0:  # coupling: unwrapped coordinates, q_f + ratio q_l - value
            p = partner
            gp, pl0, pa0, pl1, pa1 = row_at(m, p, sc.pos1, sc.rot1, w)
            qp = row_coord(m, es, w, p, m.row_kind[p], gp)
            if is_middle_twist(m, p) != 0:
                qp = row_measure_at(m, es, w, p, sc.pos1, sc.rot1, gp)
            r = row_unwrapped(m, es, w, i, kind, g, Q0, Q1) + m.row_ratio[i] * qp - es.rval[w, i]
        sc.res[w, i] = r
        if err < wp.float64(0.0):
            err = wp.abs(r)
        if only_hard != 0 or sc.keep[w, i] != 0:
            worst = wp.max(worst, err)
    return worst


@wp.func
def inequality_residual(m: ModelData, es: ElementState, sc: Scratch, w: int, i: int) -> wp.float64:
    b0 = m.row_b0[i]
    b1 = m.row_b1[i]
    x0 = body_pos(sc.pos1, w, b0)
    x1 = body_pos(sc.pos1, w, b1)
    P0, Q0, P1, Q1 = row_frames(m.row_p0[i], m.row_q0[i], m.row_p1[i], m.row_q1[i], x0, body_rot(sc.rot1, w, b0),
                                x1, body_rot(sc.rot1, w, b1))
    kind = m.row_kind[i]
    axis, shape = row_form(m, w, i, kind)
    g, jl0, ja0, jl1, ja1 = eval_row_in(kind, axis, P0, Q0, P1, Q1, x0, x1, shape)
    return limit_residual(m, es, w, i, kind, g, Q0, Q1)


# ---------------------------------------------------------------- force elements
# Law rows (MODE_LAW), friction rows (MODE_FRICTION), motor rows and loads; the data and the
# laws are in usdphys/solver/forces.py, the method in docs/forces.md.
@wp.func
def kick_span(es: ElementState, w: int, h: wp.float64) -> wp.float64:
    """The time over which a step of h kicks the half-step velocities: from the middle of the last
    committed step (es.hlast) to the middle of this one, (hlast + h) / 2; exactly h while the
    step size stays. Kicking over h where the size changes (a retried step) is first order
    there: a 90 deg pendulum with 558 retried 1 ms steps in 1 s ended 1.0e-3 m from a fine
    reference that way, against 2.9e-6 m unretried (docs/solver.md, "Globalised iteration")."""
    hl = es.hlast[w]
    if hl <= wp.float64(0.0) or hl == h:
        return h
    return wp.float64(0.5) * (hl + h)


@wp.func
def law_residual(m: ModelData, es: ElementState, sc: Scratch, w: int, i: int, g: wp.float64):
    """(r, error) of law row i at the moved poses: r = s (lam - J), J the impulse its law
    delivers over the step (trapezoidal), s its compliance scale; error = |lam - J| turned
    into the position error it causes (the Newton stopping test, like the other rows)."""
    el = m.el
    h = es.hnow[w]
    hk = es.hkick[w]
    d = element_delta(m, sc, w, i, m.row_kind[i], g)
    F = wp.float64(0.0)
    if el.law[i] == W_LAW_ARMATURE:  # lam = -a (gdot+ - gdot-) + hk P (P: a spring mass's weight)
        F = sc.lam[w, i] + m.row_c[w, i] * (d / h - es.gdot[w, i]) - hk * el.preload[i]
    else:  # trapezoidal over the kick, from the last half step's force to this one's
        f, dfg, dfv = law_force(el, i, m.row_k[w, i], m.row_c[w, i], m.row_value[w, i], m.row_tv[w, i],
                                es.gun[w, i] + wp.float64(0.5) * d, d / h, es.tnow[w] + wp.float64(0.5) * h, 0)
        F = sc.lam[w, i] - wp.float64(0.5) * hk * (es.fprev[w, i] + f)
    return es.sfac[w, i] * F, wp.abs(F) * es.cfac[w, i]


@wp.func
def begin_elements(m: ModelData, es: ElementState, sc: Scratch, w: int, h: wp.float64, assemble: int):
    """Per-step set-up of the element rows after the rows are evaluated at x_n: motor values,
    law-row compliances and warm starts, friction bounds, fixed impulses of force motors."""
    el = m.el
    t = es.tnow[w]
    es.hnow[w] = h
    hk = es.hkick[w]  # element impulses are forces over the kick (step_world set it), not over h
    es.min_newton[w] = 0
    i = int(-1)
    while i < m.n_rows - 1:
        i += 1
        es.rval[w, i] = m.row_value[w, i]
        mode = m.row_mode[i]
        kind = m.row_kind[i]
        mot = el.motor[i]
        if mot == W_MOTOR_POSITION:  # rheonomic: q(t_{n+1}) = u(t_{n+1})
            tt = t + h
            if assemble != 0:
                tt = t
            u = time_fn(el, int(el.fn[i]), tt)
            if kind == ROW_TWIST:
                u = wrap_angle(u)
            es.rval[w, i] = u
        elif mot == W_MOTOR_VELOCITY:  # q(t_{n+1}) = q_ref + integral of u over the step
            if assemble != 0:
                sc.act[w, i] = 0
            else:
                q = es.qref[w, i] + time_fn_integral(el, int(el.fn[i]), t, h)
                if kind == ROW_TWIST:
                    q = wrap_angle(q)
                es.rval[w, i] = q  # the reference itself moves on when the step is committed
        if assemble != 0:
            continue
        if mode == MODE_LAW:
            law = el.law[i]
            if law == W_LAW_EFFORT:  # force motor: explicit generalised force u(t_n)
                sc.lam[w, i] = hk * time_fn(el, int(el.fn[i]), t)
                sc.act[w, i] = 2
                continue
            g0 = sc.g0[w, i]
            gun = g0
            if kind == ROW_TWIST:
                gun = es.gun[w, i] + turn_step(m.row_axis[i], g0 - es.gun[w, i])
            es.gun[w, i] = gun
            aii = sc.A[w, m.pat.diag[i]]
            if aii <= wp.float64(0.0) or (kind == ROW_DIST and g0 < W_LINE_EPS):
                es.fprev[w, i] = wp.float64(0.0)  # no direction (zero length) or nothing moves
                continue
            D = wp.float64(0.0)
            if law == W_LAW_ARMATURE:
                D = m.row_c[w, i] / h
            else:
                f, dfg, dfv = law_force(el, i, m.row_k[w, i], m.row_c[w, i], m.row_value[w, i], m.row_tv[w, i], gun,
                                        es.gdot[w, i], t, 1)
                D = wp.float64(-0.25) * h * dfg - wp.float64(0.5) * dfv
                if hk != h:  # the impulse's slope in the step's motion scales with the kick
                    D = D * (hk / h)
                sc.lam[w, i] = hk * es.fprev[w, i]  # warm start: the force goes on
            D = wp.max(D, wp.float64(1.0e-12) / (h * aii))
            es.sfac[w, i] = wp.float64(1.0) / D
            es.cfac[w, i] = h * aii / (wp.float64(1.0) + h * aii * D)
            sc.sdiag[w, i] = wp.float64(1.0) / (h * D)
            sc.act[w, i] = 1
            # the warm start is the previous force (first order): always take one Newton update,
            # which is exact for a linear law, instead of letting the positional test accept it
            es.min_newton[w] = 1
        elif mode == MODE_FRICTION:
            k = int(el.couple[i])
            if k >= 0:  # the DOF is driven by a motor: kinetic friction is a known force
                dq = es.rval[w, k] - sc.g0[w, k]
                if kind == ROW_TWIST:
                    dq = wrap_angle(dq)
                sc.lam[w, i] = -hk * el.fdynamic[w, i] * wp.sign(dq)
                if dq == wp.float64(0.0):
                    sc.lam[w, i] = wp.float64(0.0)
                sc.act[w, i] = 2
                continue
            bound = el.fdynamic[w, i]
            if es.stick[w, i] != 0:
                bound = el.fstatic[w, i]
            es.lmax[w, i] = hk * bound
            sc.act[w, i] = 1
            if es.stick[w, i] == 0 and es.fprev[w, i] != wp.float64(0.0):
                # it slid in the last step: it starts sliding the same way (a clamped impulse),
                # and sticks again if the joint turns round (solve_rows). Starting every
                # friction row stuck would make the whole mechanism rigid for the first pass:
                # a hand's tiny frictionloss rows then carry huge opposing impulses, and
                # releasing them all at once lands far from the solution
                sc.lam[w, i] = es.lmax[w, i] * wp.sign(es.fprev[w, i])
                sc.act[w, i] = 2


@wp.func
def end_elements(m: ModelData, es: ElementState, sc: Scratch, w: int, h: wp.float64):
    """After the step (before es.hlast moves on to it): the law rows' force at the half step just
    taken, unwrapped angles, rates; friction rows remember whether they stuck."""
    el = m.el
    t = es.tnow[w]
    hk = es.hkick[w]
    i = int(-1)
    while i < m.n_rows - 1:
        i += 1
        mode = m.row_mode[i]
        if el.motor[i] == W_MOTOR_VELOCITY:
            es.qref[w, i] = es.rval[w, i]
        if mode == MODE_FRICTION:
            es.stick[w, i] = 0
            es.fprev[w, i] = wp.float64(0.0)
            if sc.act[w, i] == 1:
                es.stick[w, i] = 1
            elif el.couple[i] < 0:
                es.fprev[w, i] = sc.lam[w, i] / hk  # the sliding friction's force (its direction)
        elif mode == MODE_LAW and el.law[i] != W_LAW_EFFORT:
            if sc.act[w, i] != 1:
                es.fprev[w, i] = wp.float64(0.0)
                continue
            b0 = m.row_b0[i]
            b1 = m.row_b1[i]
            kind = m.row_kind[i]
            g, jl0, ja0, jl1, ja1 = row_at(m, i, sc.pos1, sc.rot1, w)
            d = element_delta(m, sc, w, i, kind, row_measure_at(m, es, w, i, sc.pos1, sc.rot1, g))
            if el.law[i] != W_LAW_ARMATURE:
                f, dfg, dfv = law_force(el, i, m.row_k[w, i], m.row_c[w, i], m.row_value[w, i], m.row_tv[w, i],
                                        es.gun[w, i] + wp.float64(0.5) * d, d / h, t + wp.float64(0.5) * h, 0)
                es.fprev[w, i] = f
            es.gun[w, i] = es.gun[w, i] + d
            es.gdot[w, i] = d / h
    es.tnow[w] = t + h


@wp.func
def factor_rows(m: ModelData, sc: Scratch, w: int, nr: int):
    """Factorise the active rows: first decide which hard rows are dependent on earlier ones
    from the mass-free matrix G S G^T (S: unit mass, angular DOFs weighted 1/L^2 with L the
    model's lever-arm length), factorised in place in Lf; then factorise A = G M^-1 G^T (plus
    the drives' compliance) over the rows kept. Compliant rows (sdiag > 0) never depend.

    The rank decision changes only where the mechanism passes a singular configuration, so it is
    reused while the set of hard active rows is the one it was made for, up to RANK_EVERY
    factorisations; a step that then fails to converge is retried with a fresh one (rank_age
    = -1), so a stale decision can cost time but never a wrong answer."""
    if rank_reusable(sc, w, nr) != 0:
        sc.rank_age[w] = sc.rank_age[w] + 1
    else:
        rank_decision(m, sc, w, nr)
    held = int(0)
    i = int(-1)
    while i < nr - 1:
        i += 1
        k = row_kept(sc, w, i)
        if k != 0 and (m.row_mode[i] == MODE_LOWER or m.row_mode[i] == MODE_UPPER):
            held = 1
        sc.keep[w, i] = k
    sc.fheld[w] = held
    ldl_factor(sc.A, sc.Lf, sc.Dinv, sc.ly, sc.keep, sc.sdiag, m.pat, w, nr, FACTOR_TOL)
    i = int(-1)
    while i < nr - 1:
        i += 1
        sc.sdiag_f[w, i] = sc.sdiag[w, i]


@wp.func
def rank_reusable(sc: Scratch, w: int, nr: int) -> int:
    """1 while the last rank decision serves: made fewer than RANK_EVERY factorisations ago, for
    the hard active rows there are now."""
    if sc.rank_age[w] < 0 or sc.rank_age[w] >= RANK_EVERY:
        return 0
    i = int(-1)
    while i < nr - 1:
        i += 1
        if row_hard(sc, w, i) != sc.rank_hard[w, i]:
            return 0
    return 1


@wp.func
def row_hard(sc: Scratch, w: int, i: int) -> int:
    """1 for an active row without compliance (the rank decision's rows)."""
    k = int(0)
    if sc.act[w, i] == 1 and sc.sdiag[w, i] == wp.float64(0.0):
        k = 1
    return k


@wp.func
def row_kept(sc: Scratch, w: int, i: int) -> int:
    """1 for a row the factor holds: active, and compliant or independent by the rank decision."""
    k = int(0)
    if sc.act[w, i] == 1 and (sc.sdiag[w, i] > wp.float64(0.0) or sc.rank_indep[w, i] != 0):
        k = 1
    return k


@wp.func
def factor_is_current(sc: Scratch, w: int, nr: int) -> int:
    """1 when factor_rows would build again the factor it built last in this step (fage = 0:
    this step's A): it would reuse the rank decision and keep the same rows, so its factor
    would be the same bit for bit."""
    if sc.rank_age[w] < 0 or sc.rank_age[w] >= RANK_EVERY:
        return 0
    return kept_as_factorised(sc, w, nr)


@wp.func
def kept_as_factorised(sc: Scratch, w: int, nr: int) -> int:
    """1 when the factor holds the rows it would hold now: the hard active rows are those of
    the rank decision it was built on (a limit that starts active from its warm start and was not
    in that decision has no rank_indep, so row_kept alone would pass it), the rows kept are
    those row_kept keeps, and each compliance on the diagonal is the one it was built with
    (a drive's changes with h and its gains)."""
    i = int(-1)
    while i < nr - 1:
        i += 1
        if row_hard(sc, w, i) != sc.rank_hard[w, i] or row_kept(sc, w, i) != sc.keep[w, i]:
            return 0
        if sc.sdiag[w, i] != sc.sdiag_f[w, i]:
            return 0
    return 1


@wp.func
def rank_decision(m: ModelData, sc: Scratch, w: int, nr: int):
    """Which hard active rows are independent (sc.rank_indep), from the mass-free matrix
    G S G^T built in Lf's pattern and factorised in place (factor_rows says why)."""
    pat = m.pat
    i = int(-1)
    while i < nr - 1:
        i += 1
        k = row_hard(sc, w, i)
        sc.keep[w, i] = k
        sc.rank_hard[w, i] = k
    ne = pat.lrow[nr]
    e = int(-1)
    while e < ne - 1:
        e += 1
        # the later row of the two first (li): the same sum, term for term, as the dense method
        i = pat.li[e]
        j = pat.lj[e]
        share = pat.lshare[e]
        a = wp.float64(0.0)
        if i >= 0 and j >= 0:  # never false: lets the compiler drop the index wrap (module docstring)
            if (share & SHARE_COUPLED) != 0:
                if sc.keep[w, i] != 0 and sc.keep[w, j] != 0:
                    a = coupled_entry(m, sc, w, i, j, 1)
            elif share != 0 and sc.keep[w, i] != 0 and sc.keep[w, j] != 0:
                if (share & 3) != 0 and m.inv_mass[w, m.row_b0[i]] > wp.float64(0.0):
                    if (share & 1) != 0:
                        a = a + wp.dot(sc.jl0[w, i], sc.jl0[w, j]) + m.geo_ang * wp.dot(sc.ja0[w, i], sc.ja0[w, j])
                    if (share & 2) != 0:
                        a = a + wp.dot(sc.jl0[w, i], sc.jl1[w, j]) + m.geo_ang * wp.dot(sc.ja0[w, i], sc.ja1[w, j])
                if (share & 12) != 0 and m.inv_mass[w, m.row_b1[i]] > wp.float64(0.0):
                    if (share & 4) != 0:
                        a = a + wp.dot(sc.jl1[w, i], sc.jl0[w, j]) + m.geo_ang * wp.dot(sc.ja1[w, i], sc.ja0[w, j])
                    if (share & 8) != 0:
                        a = a + wp.dot(sc.jl1[w, i], sc.jl1[w, j]) + m.geo_ang * wp.dot(sc.ja1[w, i], sc.ja1[w, j])
        sc.Lf[w, e] = a
    ldl_factor(sc.Lf, sc.Lf, sc.Dinv, sc.ly, sc.keep, sc.sdiag, pat, w, nr, RANK_TOL)
    sc.rank_age[w] = 0
    i = int(-1)
    while i < nr - 1:
        i += 1
        indep = int(0)
        if sc.Dinv[w, i] != wp.float64(0.0):
            indep = 1
        sc.rank_indep[w, i] = indep


@wp.func
def pair_entry(m: ModelData, sc: Scratch, w: int, i: int, j: int, geo: int) -> wp.float64:
    """G_i M^-1 G_j^T of two two-body rows (geo = 1: the mass-free G_i S G_j^T of the rank
    test, unit mass and angular DOFs weighted by geo_ang; only bodies that move count)."""
    bi0 = m.row_b0[i]
    bi1 = m.row_b1[i]
    bj0 = m.row_b0[j]
    bj1 = m.row_b1[j]
    a = wp.float64(0.0)
    if geo != 0:
        if bi0 >= 0 and m.inv_mass[w, bi0] > wp.float64(0.0):
            if bi0 == bj0:
                a = a + wp.dot(sc.jl0[w, i], sc.jl0[w, j]) + m.geo_ang * wp.dot(sc.ja0[w, i], sc.ja0[w, j])
            if bi0 == bj1:
                a = a + wp.dot(sc.jl0[w, i], sc.jl1[w, j]) + m.geo_ang * wp.dot(sc.ja0[w, i], sc.ja1[w, j])
        if bi1 >= 0 and m.inv_mass[w, bi1] > wp.float64(0.0):
            if bi1 == bj0:
                a = a + wp.dot(sc.jl1[w, i], sc.jl0[w, j]) + m.geo_ang * wp.dot(sc.ja1[w, i], sc.ja0[w, j])
            if bi1 == bj1:
                a = a + wp.dot(sc.jl1[w, i], sc.jl1[w, j]) + m.geo_ang * wp.dot(sc.ja1[w, i], sc.ja1[w, j])
        return a
    if bi0 >= 0:
        if bi0 == bj0:
            a = a + wp.dot(sc.jl0[w, i], sc.wl0[w, j]) + wp.dot(sc.ja0[w, i], sc.wa0[w, j])
        if bi0 == bj1:
            a = a + wp.dot(sc.jl0[w, i], sc.wl1[w, j]) + wp.dot(sc.ja0[w, i], sc.wa1[w, j])
    if bi1 >= 0:
        if bi1 == bj0:
            a = a + wp.dot(sc.jl1[w, i], sc.wl0[w, j]) + wp.dot(sc.ja1[w, i], sc.wa0[w, j])
        if bi1 == bj1:
            a = a + wp.dot(sc.jl1[w, i], sc.wl1[w, j]) + wp.dot(sc.ja1[w, i], sc.wa1[w, j])
    return a


@wp.func
def coupled_entry(m: ModelData, sc: Scratch, w: int, i: int, j: int, geo: int) -> wp.float64:
    """pair_entry for rows that may be coupling rows: a row with a partner p has the Jacobian
    G_i + ratio_i G_p, so the entry gains the partner terms."""
    a = pair_entry(m, sc, w, i, j, geo)
    pi = m.row_partner[i]
    pj = m.row_partner[j]
    if pi >= 0:
        a = a + m.row_ratio[i] * pair_entry(m, sc, w, pi, j, geo)
    if pj >= 0:
        a = a + m.row_ratio[j] * pair_entry(m, sc, w, i, pj, geo)
        if pi >= 0:
            a = a + m.row_ratio[i] * m.row_ratio[j] * pair_entry(m, sc, w, pi, pj, geo)
    return a


@wp.func
def angular_responses(m: ModelData, st: StateData, sc: Scratch, w: int):
    """The bodies' world inverse inertias at the step start (sc.iinv) and the rows' angular
    velocity responses wa = I^-1 ja, which build_A and contact read. A step that reuses an
    earlier factor needs neither (100 matrix products and 500 matrix-vector products a step of
    a 100-rod chain)."""
    z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    b = int(-1)
    while b < m.n_bodies - 1:
        b += 1
        R = wp.quat_to_matrix(st.rot[w, b])
        iI = m.inv_inertia[w, b]
        dI = wp.mat33d(iI[0], wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), iI[1], wp.float64(0.0),
                       wp.float64(0.0), wp.float64(0.0), iI[2])
        sc.iinv[w, b] = R * dI * wp.transpose(R)
    i = int(-1)
    while i < m.n_rows - 1:
        i += 1
        b0 = m.row_b0[i]
        b1 = m.row_b1[i]
        wa0 = z
        wa1 = z
        if b0 >= 0:
            wa0 = sc.iinv[w, b0] * sc.ja0[w, i]
        if b1 >= 0:
            wa1 = sc.iinv[w, b1] * sc.ja1[w, i]
        sc.wa0[w, i] = wa0
        sc.wa1[w, i] = wa1


@wp.func
def build_A(m: ModelData, sc: Scratch, w: int):
    """A = G M^-1 G^T at the step start, on the factor's pattern (only body-sharing pairs are
    non-zero; the pattern's fill entries get 0)."""
    pat = m.pat
    ne = pat.lrow[m.n_rows]
    e = int(-1)
    while e < ne - 1:
        e += 1
        # the later row of the two first (li): the same value as the dense lower triangle
        i = pat.li[e]
        j = pat.lj[e]
        share = pat.lshare[e]  # which bodies the two rows share (0: a fill entry)
        a = wp.float64(0.0)
        if i >= 0 and j >= 0:  # never false: lets the compiler drop the index wrap (module docstring)
            if (share & SHARE_COUPLED) != 0:
                a = coupled_entry(m, sc, w, i, j, 0)
            if (share & 1) != 0 and (share & SHARE_COUPLED) == 0:
                a = a + wp.dot(sc.jl0[w, i], sc.wl0[w, j]) + wp.dot(sc.ja0[w, i], sc.wa0[w, j])
            if (share & 2) != 0 and (share & SHARE_COUPLED) == 0:
                a = a + wp.dot(sc.jl0[w, i], sc.wl1[w, j]) + wp.dot(sc.ja0[w, i], sc.wa1[w, j])
            if (share & 4) != 0 and (share & SHARE_COUPLED) == 0:
                a = a + wp.dot(sc.jl1[w, i], sc.wl0[w, j]) + wp.dot(sc.ja1[w, i], sc.wa0[w, j])
            if (share & 8) != 0 and (share & SHARE_COUPLED) == 0:
                a = a + wp.dot(sc.jl1[w, i], sc.wl1[w, j]) + wp.dot(sc.ja1[w, i], sc.wa1[w, j])
        sc.A[w, e] = a


@wp.func
def refactor_this_step(m: ModelData, st: StateData, sc: Scratch, dg: Diagnostics, w: int, nr: int):
    """Replace an earlier step's factor (modified Newton) by this step's A and its factor. Only
    called on an earlier step's factor (fage > 0): this step built no A, so it has no angular
    responses yet."""
    angular_responses(m, st, sc, w)
    build_A(m, sc, w)
    factor_rows(m, sc, w, nr)
    sc.fage[w] = 0
    dg.n_factor[w] = dg.n_factor[w] + 1


@wp.func
def active_set_update(m: ModelData, st: StateData, es: ElementState, sc: Scratch, dg: Diagnostics, w: int,
                      h: wp.float64, assemble: int):
    """The first update of a pass after the active set changed, on the new factor: the rows that
    stay or became active answer, to first order, the impulse changes sc.dlam of the rows that
    left (a limit released, a friction or drive clamped) together with their own residuals at
    the poses the last pass converged to: (A + S) c = -r / h - A dlam. Moving the bodies with
    the released impulses alone first and iterating from there starts far from the solution
    where light bodies are involved (a 0.055 N s limit impulse released on a 0.3 g body left
    the rows 2.3 m or rad off, and the frozen-Jacobian iteration diverged from there)."""
    nr = m.n_rows
    pat = m.pat
    residuals(m, es, sc, w, 0)
    i = int(-1)
    while i < nr - 1:
        i += 1
        sc.dres[w, i] = wp.float64(0.0)
    for e in range(pat.lrow[nr]):  # A dlam over the pattern (A symmetric, lower triangle stored)
        i = pat.li[e]
        j = pat.lj[e]
        a = sc.A[w, e]
        sc.dres[w, i] = sc.dres[w, i] + a * sc.dlam[w, j]
        if i != j:
            sc.dres[w, j] = sc.dres[w, j] + a * sc.dlam[w, i]
    i = int(-1)
    while i < nr - 1:
        i += 1
        r = wp.float64(0.0)
        if sc.act[w, i] == 1:
            r = -sc.res[w, i] / h - sc.dres[w, i]
        sc.res[w, i] = r
    ldl_solve(sc.Lf, sc.Dinv, m.pat, sc.res, w, nr, wp.float64(1.0))
    dg.n_updates[w] = dg.n_updates[w] + 1
    i = int(-1)
    while i < nr - 1:
        i += 1
        if sc.act[w, i] == 1:
            sc.lam[w, i] = sc.lam[w, i] + sc.res[w, i]
    move_bodies(m, st, sc, w, h, assemble)


@wp.func
def secant_weight(m: ModelData, sc: Scratch, w: int) -> wp.float64:
    """The weight gamma of a one-step Anderson (secant) acceleration of the chord iteration:
    with f the new update (sc.res), f' the last one (sc.fprev) and d' the step it took
    (sc.dstep), the step taken is f - gamma (d' + f - f'), gamma minimising |f - gamma (f - f')|.

    Through a factor of an earlier step (or the SHAKE Jacobian of the step start) each update
    shrinks the error by a fixed iteration matrix T; along one of T's directions, of rate rho,
    gamma = rho / (rho - 1) lands on the solution. On a long chain the rates spread over
    0.05-0.4; with the secant step chain-300 takes 2.4 updates a step instead of 3.0, and 0.20
    factorisations instead of 0.76 (fewer updates shrink by less than REFACTOR_RATE). A gamma
    outside [SECANT_MIN, SECANT_MAX] (T's rate above 0.8, or an update that grew: not the linear
    regime) is not used: 0, the plain update."""
    num = wp.float64(0.0)
    den = wp.float64(0.0)
    i = int(-1)
    while i < m.n_rows - 1:
        i += 1
        if sc.act[w, i] == 1:
            f = sc.res[w, i]
            df = f - sc.fprev[w, i]
            num = num + f * df
            den = den + df * df
    gamma = wp.float64(0.0)
    if den > wp.float64(0.0):
        gamma = num / den
    if not (gamma >= SECANT_MIN and gamma <= SECANT_MAX):  # NaN too
        gamma = wp.float64(0.0)
    return gamma


@wp.func
def solve_rows(m: ModelData, st: StateData, es: ElementState, sc: Scratch, dg: Diagnostics, w: int, h: wp.float64,
               tol: wp.float64, assemble: int):
    """Steps 4-5 of step_world: SHAKE Newton on the row impulses inside the active-set loop,
    from the current sc.lam / sc.act (run twice per step when there is contact)."""
    nr = m.n_rows
    n_set = active_set_rows(m)
    # 4. limits violated by the unconstrained prediction start active
    move_bodies(m, st, sc, w, h, assemble)
    entered = int(0)
    i = int(-1)
    while i < n_set - 1:
        i += 1
        mode = m.row_mode[i]
        if mode == MODE_LOWER or mode == MODE_UPPER:
            if inequality_residual(m, es, sc, w, i) < wp.float64(0.0):
                sc.act[w, i] = 1
                entered = 1
    if sc.fage[w] > 0 and (entered != 0 or (m.reuse_factor != 0 and kept_as_factorised(sc, w, nr) == 0)):
        # a limit enters a step that reuses an earlier step's factor (built without it), or the
        # step's rows are not the factor's (a drive or friction row it left out starts active, a
        # compliance changed with h): this step's A, factorised below
        angular_responses(m, st, sc, w)
        build_A(m, sc, w)
        sc.fage[w] = -1
    if assemble != 0:
        e0 = residuals(m, es, sc, w, 1)
        dg.init_error[w] = e0
        i = int(-1)
        while i < nr - 1:
            i += 1
            if wp.abs(sc.res[w, i]) == e0:
                dg.init_row[w] = i
    # 5. Newton iteration inside an active-set loop
    rhs_scale = wp.float64(-1.0) / h  # an update solves A d = -r / h (ldl_solve scales r)
    pending = int(0)  # 1: the last pass changed impulses (sc.dlam) without moving the bodies
    settled = int(0)  # 1: a pass ended with no row entering or leaving the active set
    for p in range(MAX_PASSES):
        if sc.fage[w] > 0 and p > 0:  # the active set changed on an earlier step's A: this step's
            refactor_this_step(m, st, sc, dg, w, nr)
        elif sc.fage[w] <= 0 or p > 0:  # fage > 0: the factor of an earlier step is reused
            if p == 0 and sc.fage[w] == 0 and factor_is_current(sc, w, nr) != 0:
                # the joint pass after contact, whose rows the first pass left as it factorised
                # them: the same factor; the rank decision ages as factor_rows' reuse would age it
                sc.rank_age[w] = sc.rank_age[w] + 1
            else:
                factor_rows(m, sc, w, nr)
                sc.fage[w] = 0
                dg.n_factor[w] = dg.n_factor[w] + 1
        if pending != 0:
            active_set_update(m, st, es, sc, dg, w, h, assemble)
            pending = 0
        prev = wp.float64(0.0)  # the residual the last update started from
        applied = wp.float64(0.0)  # the fraction of the last update (sc.dstep) in sc.lam
        updates = int(0)
        backtracks = int(0)
        history = int(0)  # 1: sc.fprev and sc.dstep hold the last full update (secant_weight)
        converged = int(0)
        last = wp.float64(1.0e300)  # the residual at the pass's final iterate
        sc.rfresh[w] = 0
        for it in range(MAX_NEWTON_SLOW + MAX_BACKTRACKS):
            worst = residuals(m, es, sc, w, 0)
            last = worst
            if worst <= tol and updates >= es.min_newton[w]:  # law rows: at least one update
                converged = 1
                sc.rfresh[w] = 1
                sc.conv_err[w] = worst
                break
            worse = not (worst < prev) and not (worst <= ACCEPT_FACTOR * tol)
            if applied > wp.float64(0.0) and worse and backtracks < MAX_BACKTRACKS:
                # no smaller (or not finite): take back half the update, or all of it through an
                # old factor, which is rebuilt; the next iteration starts from the point reached
                backtracks = backtracks + 1
                back = wp.float64(0.5) * applied
                if sc.fage[w] > 0:
                    refactor_this_step(m, st, sc, dg, w, nr)
                    back = applied
                applied = applied - back
                history = 0
                i = int(-1)
                while i < nr - 1:
                    i += 1
                    if sc.act[w, i] == 1:
                        sc.lam[w, i] = sc.lam[w, i] - back * sc.dstep[w, i]
                if applied == wp.float64(0.0):
                    prev = wp.float64(0.0)  # back at the update's start: a fresh update follows
            else:
                stop = updates >= MAX_NEWTON and (updates >= MAX_NEWTON_SLOW or not (worst < SLOW_GAIN * prev))
                if stop and sc.fage[w] <= 0:
                    break
                slow = worst > REFACTOR_RATE * prev and worst > REFACTOR_FLOOR * tol
                # an old factor that no longer serves, or that stalls below REFACTOR_FLOOR: the
                # pass goes on with this step's instead of ending short of the tolerance
                if sc.fage[w] > 0 and updates > 0 and (slow or stop):
                    refactor_this_step(m, st, sc, dg, w, nr)
                    history = 0  # another iteration matrix: the last update is not comparable
                prev = worst
                applied = wp.float64(1.0)
                updates = updates + 1
                dg.n_updates[w] = dg.n_updates[w] + 1
                ldl_solve(sc.Lf, sc.Dinv, m.pat, sc.res, w, nr, rhs_scale)
                gamma = wp.float64(0.0)
                if history != 0:
                    gamma = secant_weight(m, sc, w)
                i = int(-1)
                while i < nr - 1:
                    i += 1
                    f = sc.res[w, i]
                    d = f
                    if gamma != wp.float64(0.0):
                        d = f - gamma * (sc.dstep[w, i] + f - sc.fprev[w, i])
                    sc.fprev[w, i] = f
                    sc.dstep[w, i] = d
                    if sc.act[w, i] == 1:
                        sc.lam[w, i] = sc.lam[w, i] + d
                history = 1
            # the bodies moved by the impulses of the update, or of the step taken back (one call
            # site: the CUDA build inlines each copy of the rigid-body step)
            move_bodies(m, st, sc, w, h, assemble)
        changed = int(0)
        i = int(-1)
        while i < n_set - 1:
            i += 1
            mode = m.row_mode[i]
            sc.dlam[w, i] = wp.float64(0.0)
            if mode == MODE_LOWER or mode == MODE_UPPER:
                if sc.act[w, i] == 0:
                    if inequality_residual(m, es, sc, w, i) < -tol:
                        sc.act[w, i] = 1
                        changed = 1
                elif sc.lam[w, i] < wp.float64(0.0):
                    sc.act[w, i] = 0
                    sc.dlam[w, i] = -sc.lam[w, i]
                    sc.lam[w, i] = wp.float64(0.0)
                    changed = 1
        # a pass that stalled (within what a step accepts, not converged) judges force bounds
        # only where its limits stay as they are (or on the last pass): its impulses are those of
        # a set about to change, and only roughly. Both at once took a friction row sliding and
        # its joint's limit off together, where the joint's other body (a rod of axial inertia
        # 1e-6 of its largest) is then driven by that friction alone, and every later pass
        # diverged; one at a time, the friction stays stuck
        judge = converged
        if converged == 0 and last <= ACCEPT_FACTOR * tol and (changed == 0 or p == MAX_PASSES - 1):
            judge = 1
        i = int(-1)
        while i < n_set - 1:
            i += 1
            mode = m.row_mode[i]
            if (mode == MODE_SOFT or mode == MODE_FRICTION) and sc.act[w, i] == 1 and judge != 0:
                # only a converged pass's impulse says a force exceeds its bound: an iterate's may
                # be far off (a thin rod's friction read 400x its bound, slipped and was accepted);
                # so does a pass that ran out of updates within what a step accepts (else a step
                # was committed with a sticking friction impulse 6e6 times its bound)
                bound = drive_bound(m, es, w, i)
                if mode == MODE_FRICTION:
                    bound = es.lmax[w, i]  # static or dynamic friction effort times the kick
                if wp.abs(sc.lam[w, i]) > bound:
                    clamped = wp.sign(sc.lam[w, i]) * bound
                    sc.dlam[w, i] = clamped - sc.lam[w, i]
                    sc.lam[w, i] = clamped
                    sc.act[w, i] = 2  # clamped: impulse fixed, row leaves the system
                    changed = 1
            elif mode == MODE_SOFT and sc.act[w, i] == 2 and judge != 0:
                # clamped on its force bound: released unless the force the drive would exert at
                # the poses reached, (shift - moved) / compliance, lies beyond the bound on the
                # clamp's side. A clamp is decided on a pass in which the row was active; where
                # other drives clamped in the same pass, the motion that follows may want this one
                # inside its bound or on the other side (a double pendulum's second drive then
                # stayed clamped against the way it wanted to push), and it starts the next pass
                # active again
                g, jl0, ja0, jl1, ja1 = row_at(m, i, sc.pos1, sc.rot1, w)
                moved = element_delta(m, sc, w, i, m.row_kind[i], row_measure_at(m, es, w, i, sc.pos1, sc.rot1, g))
                wanted = (sc.sshift[w, i] - moved) / sc.sinv[w, i]
                if wanted * wp.sign(sc.lam[w, i]) < drive_bound(m, es, w, i):
                    sc.act[w, i] = 1
                    changed = 1
            elif mode == MODE_FRICTION and sc.act[w, i] == 2 and m.el.couple[i] < 0:
                # sliding, but the joint moved along its friction impulse: it stops and sticks
                g, jl0, ja0, jl1, ja1 = row_at(m, i, sc.pos1, sc.rot1, w)
                moved = element_delta(m, sc, w, i, m.row_kind[i], row_measure_at(m, es, w, i, sc.pos1, sc.rot1, g))
                if moved * sc.lam[w, i] > wp.float64(0.0):
                    sc.act[w, i] = 1
                    changed = 1
        if changed == 0:
            settled = 1
            break
        sc.rfresh[w] = 0
        if p < MAX_PASSES - 1:
            pending = 1  # the next pass starts from the linearised change (active_set_update)
        else:
            move_bodies(m, st, sc, w, h, assemble)
    # what is left: the rows' residuals at the final poses, and any limit passed while inactive
    err = wp.float64(0.0)
    if sc.rfresh[w] != 0:
        err = sc.conv_err[w]  # the Newton test's own measure (law rows: position-equivalent)
    else:
        err = residuals(m, es, sc, w, 0)
        sc.rfresh[w] = 1
    i = int(-1)
    while i < nr - 1:
        i += 1
        mode = m.row_mode[i]
        # a hard row the rank decision dropped and left inconsistent beyond the input's accuracy;
        # a dropped friction row (sticking on a joint that sits on its limit: the same DOF) yields
        hard = mode == MODE_EQUAL or mode == MODE_LOWER or mode == MODE_UPPER
        if hard and sc.act[w, i] == 1 and sc.keep[w, i] == 0 and wp.abs(sc.res[w, i]) > DEPENDENT_TOL:
            err = wp.max(err, wp.abs(sc.res[w, i]))
        if settled == 0 and sc.act[w, i] == 1 and sc.keep[w, i] == 0 and mode != MODE_EQUAL and mode != MODE_LAW:
            # the passes ran out while rows still entered the set: one made active in the last
            # pass (a limit, a friction row that slid along its own impulse and sticks again) has
            # not been solved for, and its residual is the step's error (the rank decision's
            # keep flags are of the last factorisation, before it entered)
            err = wp.max(err, wp.abs(sc.res[w, i]))
        if (mode == MODE_LOWER or mode == MODE_UPPER) and sc.act[w, i] == 0:
            r = inequality_residual(m, es, sc, w, i)
            if r < wp.float64(0.0):
                err = wp.max(err, -r)
                if -r > ACCEPT_FACTOR * tol:
                    sc.res[w, i] = r  # name it if the step fails
    sc.conv_err[w] = err
    moved_velocities(m, sc, w)


@wp.func
def step_world(m: ModelData, st: StateData, rs: RowState, es: ElementState, sc: Scratch, dg: Diagnostics,
               cm: ContactModel, cs: ContactState, w: int, h: wp.float64, tol: wp.float64, assemble: int,
               may_reject: int, cold: int) -> int:
    """One step of h (or the assembly when assemble != 0). Returns 1 when committed, 0 when
    the rows did not converge: then the bodies, element forces, unwrapped angles and motor
    references are as before (a retry recomputes them from the same start), and the caller
    retries with smaller steps (advance_frames). Only starting guesses (warm-start impulses,
    contact manifolds) may differ on the retry. may_reject != 0 (not yet at the retries' floor):
    also a step in which a dynamic body turns by more than m.max_turn (when > 0) returns 0. Thin
    rods on Cardan joints near the joint's singular pose spin up within a step faster than the
    frozen Jacobians resolve, and the coarse run then leaves the fine run's path and stops there;
    retried where they turn fast, some such runs get through and others stop (docs/solver.md,
    "Globalised iteration"). cold != 0: the joint and limit impulses start from zero instead of the
    last steps' (advance_frames' last try of a step that fails at the floor from them)."""
    nb = m.n_bodies
    nr = m.n_rows
    z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    hk = kick_span(es, w, h)  # the half-step velocities move on over hk, the positions over h
    # 1. predictor
    b = int(-1)
    while b < nb - 1:
        b += 1
        q = st.rot[w, b]
        if assemble != 0:
            sc.vstar[w, b] = z
            sc.mom[w, b] = z
        else:
            v = st.vel[w, b]
            if m.inv_mass[w, b] > wp.float64(0.0):
                v = v + hk * m.gravity[w]
            sc.vstar[w, b] = v
            sc.mom[w, b] = wp.quat_rotate(q, cmul(m.inertia[w, b], wp.quat_rotate_inv(q, st.omega[w, b])))
    if assemble == 0 and m.el.n_loads > 0:  # MbdForce / MbdTorque: impulse hk F(t_n)
        apply_loads(m.el, st.pos, st.rot, m.inv_mass[w], sc.vstar, sc.mom, w, es.tnow[w], hk)
    # 2. rows at the step start (world frames once per run of rows sharing them)
    frame = int(-1)
    x0 = z
    x1 = z
    P0 = z
    P1 = z
    Q0 = wp.quatd(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    Q1 = Q0
    i = int(-1)
    while i < nr - 1:
        i += 1
        b0 = m.row_b0[i]
        b1 = m.row_b1[i]
        if m.row_frame[i] != frame:
            frame = m.row_frame[i]
            x0 = body_pos(st.pos, w, b0)
            x1 = body_pos(st.pos, w, b1)
            P0, Q0, P1, Q1 = row_frames(m.row_p0[i], m.row_q0[i], m.row_p1[i], m.row_q1[i], x0,
                                        body_rot(st.rot, w, b0), x1, body_rot(st.rot, w, b1))
        kind = m.row_kind[i]
        axis, shape = row_form(m, w, i, kind)
        g, jl0, ja0, jl1, ja1 = eval_row_in(kind, axis, P0, Q0, P1, Q1, x0, x1, shape)
        s = row_sign(m.row_mode[i])
        sc.g0[w, i] = g
        if kind == ROW_TWIST:
            if assemble != 0:
                es.qc[w, i] = start_turn(g, m.row_lo[w, i], m.row_hi[w, i])
                if is_middle_twist(m, i) != 0:
                    r0, J0 = euler_xyz(0, Q0, Q1)
                    es.qb[w, i] = r0  # a pose starts on the sequence's first branch
                    sc.g0[w, i] = es.qc[w, i]
            elif is_middle_twist(m, i) != 0:
                # past the lock the measurement turns back: the row measures the angle itself
                qm, qb, sign = middle_angle(es, w, i, Q0, Q1, g, es.qc[w, i])
                es.qc[w, i] = qm
                es.qb[w, i] = qb
                sc.g0[w, i] = qm
                ja0 = sign * ja0
                ja1 = sign * ja1
            else:
                es.qc[w, i] = es.qc[w, i] + turn_step(m.row_axis[i], g - es.qg[w, i])
            es.qg[w, i] = g
            if is_sequence_limit(m, i) != 0:
                # near its bound the limit acts through sequence_limit's h (limit_residual)
                bound = limit_bound(m, es, sc, w, i, h, assemble)
                near, hv, J = near_sequence_limit(m, i, Q0, Q1, es.qc[w, i], g, bound)
                if near != 0:
                    ja0 = -J
                    ja1 = J
        sc.jl0[w, i] = s * jl0
        sc.ja0[w, i] = s * ja0
        sc.jl1[w, i] = s * jl1
        sc.ja1[w, i] = s * ja1
        wl0 = z
        wl1 = z
        if b0 >= 0:
            wl0 = (s * m.inv_mass[w, b0]) * jl0
        if b1 >= 0:
            wl1 = (s * m.inv_mass[w, b1]) * jl1
        sc.wl0[w, i] = wl0
        sc.wl1[w, i] = wl1
    # 3. A = G M^-1 G^T, unless the last factorisation is reused (modified Newton); the angular
    # responses I^-1 G^T with it (and for contact, which moves bodies by them, every step)
    # a step of equal rows alone: every row an equal row, or no limit held in the last committed
    # step (the commit sets rs.run = 0 after one, and before the first) and none in the factor an
    # earlier step left (a limit entering below refactorises, solve_rows)
    quiet = int(0)
    if m.equal_only != 0:
        quiet = int(1)
    elif m.hard_only != 0 and assemble == 0 and sc.fheld[w] == 0 and rs.run[w] != 0:
        quiet = int(1)
    age = sc.fage[w]
    reuse = quiet
    if m.reuse_factor != 0 and assemble == 0:  # (solve_rows checks the rows are the factor's)
        reuse = 1
    if assemble != 0 or reuse == 0 or age < 0 or age >= REFACTOR_EVERY - 1:
        angular_responses(m, st, sc, w)
        build_A(m, sc, w)
        sc.fage[w] = -1  # solve_rows factorises
    else:
        sc.fage[w] = age + 1
        if cm.n_pairs > 0:  # the contact coupling moves bodies by this step's responses
            angular_responses(m, st, sc, w)
    # drives: implicit spring-damper rows; hard rows active; limits start inactive
    hp = es.hnow[w]  # the previous try's h (begin_elements below sets this step's)
    # the warm-start impulses are in units of the previous try's kick (es.hkick): an impulse is a
    # force times the kick, so they are rescaled to this one's (a retry, the steps after one)
    hkp = es.hkick[w]
    rescale = int(0)
    wscale = wp.float64(1.0)  # exactly 1 for a constant step: a held pose stays held bit for bit
    if assemble == 0 and hkp > wp.float64(0.0) and hkp != hk:
        rescale = 1
        wscale = hk / hkp
    warm = int(0)  # 1: some impulse starts from a non-zero guess
    # all-equal-row models extrapolate the impulses of the last steps: a polynomial through as
    # many of them as were taken at this step's size (at most six: quintic, O(h^6) off, so one or
    # two updates reach the tolerance; chain of 30 rods: 1.9 updates a step, 2.0 with five steps,
    # 3.4 with three; chain of 300: 2.05, 2.5 with five; seven steps: the history's round-off,
    # amplified 127x, costs more than the order gains). Another step size (a retry, the first
    # steps after one) starts from the last impulse alone: a history spaced by another h
    # extrapolates to the wrong time (a thin rod on a Cardan joint then failed at every step
    # size). Not with drives / elements, nor on a step in which a limit held, nor through one
    # (the history restarts after it): an impact's impulse jump would be extrapolated into the
    # next steps' guesses.
    order = int(0)
    if hp == h and rescale == 0 and quiet != 0:
        order = wp.min(rs.run[w] - 1, 5)
    if assemble == 0:
        es.hkick[w] = hk  # what the element rows, force limits and outputs of this try read
    i = int(-1)
    while i < nr - 1:
        i += 1
        mode = m.row_mode[i]
        act = int(0)
        sc.sdiag[w, i] = wp.float64(0.0)
        sc.sinv[w, i] = wp.float64(0.0)
        sc.sshift[w, i] = wp.float64(0.0)
        sc.lam[w, i] = wp.float64(0.0)
        if mode == MODE_EQUAL:
            act = 1
            if assemble == 0:  # warm start from the impulses of the last steps
                if rescale != 0:  # another kick: impulses scale with it
                    rs.lwarm[w, i] = wscale * rs.lwarm[w, i]
                l1 = rs.lwarm[w, i]
                lam = l1
                if order == 1:
                    lam = wp.float64(2.0) * l1 - rs.lwarm2[w, i]
                elif order == 2:
                    lam = wp.float64(3.0) * (l1 - rs.lwarm2[w, i]) + rs.lwarm3[w, i]
                elif order == 3:
                    lam = (wp.float64(4.0) * (l1 + rs.lwarm3[w, i]) - wp.float64(6.0) * rs.lwarm2[w, i]
                           - rs.lwarm4[w, i])
                elif order == 4:
                    lam = (wp.float64(5.0) * (l1 - rs.lwarm4[w, i]) + wp.float64(10.0) * (rs.lwarm3[w, i] - rs.lwarm2[w, i])
                           + rs.lwarm5[w, i])
                elif order == 5:
                    lam = (wp.float64(6.0) * (l1 + rs.lwarm5[w, i]) - wp.float64(15.0) * (rs.lwarm2[w, i] + rs.lwarm4[w, i])
                           + wp.float64(20.0) * rs.lwarm3[w, i] - rs.lwarm6[w, i])
                if cold != 0:
                    lam = wp.float64(0.0)
                sc.lam[w, i] = lam
                if lam != wp.float64(0.0):
                    warm = 1
        elif (mode == MODE_LOWER or mode == MODE_UPPER) and assemble == 0 and rs.lwarm[w, i] > wp.float64(0.0) and (
                cold == 0):
            # a limit that held in the last step starts active with its impulse: the equal rows'
            # warm starts were balanced against it (a thin rod's spin stopped by its limit and
            # locked to a heavy link: the lock's impulse alone spins the rod 1e5 rad/s)
            if rescale != 0:
                rs.lwarm[w, i] = wscale * rs.lwarm[w, i]
            act = 1
            sc.lam[w, i] = rs.lwarm[w, i]
            warm = 1
        elif mode == MODE_SOFT and assemble == 0:
            k = m.row_k[w, i]
            c = m.row_c[w, i]
            if m.row_accel[i] != 0:
                aii = sc.A[w, m.pat.diag[i]]
                if aii > wp.float64(0.0):
                    k = k / aii
                    c = c / aii
            denom = h * k + c
            if denom > wp.float64(0.0):
                act = 1
                dtarget = m.row_value[w, i] - sc.g0[w, i]
                if m.row_kind[i] == ROW_TWIST:
                    dtarget = wrap_angle(dtarget + far_branch_offset(m, es, w, i, sc.g0[w, i]))
                sc.sdiag[w, i] = wp.float64(1.0) / (h * denom)
                sc.sinv[w, i] = wp.float64(1.0) / denom
                if hk != h:  # implicit force over the kick: the impulse is hk F, not h F
                    sc.sdiag[w, i] = sc.sdiag[w, i] * (h / hk)
                    sc.sinv[w, i] = sc.sinv[w, i] * (h / hk)
                sc.sshift[w, i] = (h * k * dtarget + c * h * m.row_tv[w, i]) / denom
                if cold == 0:  # warm start: the drive's force goes on (its last impulse)
                    if rescale != 0:
                        rs.lwarm[w, i] = wscale * rs.lwarm[w, i]
                    lw = rs.lwarm[w, i]
                    sc.lam[w, i] = lw
                    if lw != wp.float64(0.0):
                        warm = 1
                    bound = drive_bound(m, es, w, i)
                    if wp.abs(lw) >= bound:
                        # it ended the last step on its force bound: it starts there, clamped
                        # (out of the system, as in the factor that step left), and is released
                        # when a pass ends with its force inside the bound (solve_rows)
                        sc.lam[w, i] = wp.sign(lw) * bound
                        act = 2
        sc.act[w, i] = act
    if assemble != 0 or m.has_elements != 0:
        begin_elements(m, es, sc, w, h, assemble)  # motors, force elements, friction
    else:  # nothing to set up: the assembly already set every row's value (rval)
        es.hnow[w] = h
    n_set = active_set_rows(m)
    i = int(-1)
    while i < n_set - 1:
        i += 1
        mode = m.row_mode[i]
        if mode == MODE_LOWER or mode == MODE_UPPER:
            es.rval[w, i] = limit_bound(m, es, sc, w, i, h, assemble)
    if warm != 0:
        # warm-started: always take one Newton update (its linear solve lands far inside the
        # tolerance), so a pose held exactly from a cold start stays held exactly
        es.min_newton[w] = 1
    # the joint pass, and with contact a second one: contacts solved from the joint-only
    # velocities, joints re-imposed after every PGS sweep, then the contact impulses kicked into
    # the predictor and the joint pass run again exactly (usdphys/solver/contact.py; docs/solver.md
    # "Contact"). One call site in a loop: the kernel holds one copy of the joint pass, not two
    # (a large share of the code NVRTC compiles for CUDA).
    for joint_pass in range(2):
        solve_rows(m, st, es, sc, dg, w, h, tol, assemble)
        # a joint pass that did not converge leaves nothing to build contact on: the step is retried
        if joint_pass == 1 or assemble != 0 or cm.n_pairs == 0 or not (sc.conv_err[w] <= ACCEPT_FACTOR * tol):
            break
        n_c = contact_begin(cm, cs, w, h, hk, nb, m.gravity[w], m.inv_mass[w], st.pos, st.rot, st.vel, st.omega, sc.vel1,
                            sc.omega1, sc.iinv, nr)
        if n_c == 0:
            break
        contact_solve(cm, cs, w, n_c, nb, m.inv_mass[w], sc.vel1, sc.omega1, nr, sc.act, m.row_b0, m.row_b1, m.pat,
                      sc.jl0, sc.ja0, sc.jl1, sc.ja1, sc.wl0, sc.wa0, sc.wl1, sc.wa1, sc.sdiag, sc.Lf, sc.Dinv, sc.res)
        contact_kick(cs, w, n_c, m.inv_mass[w], sc.vel1, sc.omega1, sc.vstar, sc.mom, nr, sc.act, sc.lam)
    if assemble == 0:
        ok = sc.conv_err[w] <= ACCEPT_FACTOR * tol  # false for NaN too
        if ok:
            # a state that went non-finite anywhere (an impulse overflowed) is a step that did
            # not converge either: retried smaller, never committed
            total = wp.float64(0.0)
            b = int(-1)
            while b < nb - 1:
                b += 1
                total = total + wp.dot(sc.pos1[w, b], sc.pos1[w, b]) + wp.dot(sc.vel1[w, b], sc.vel1[w, b])
                total = total + wp.dot(sc.omega1[w, b], sc.omega1[w, b])
            ok = wp.isfinite(total)
        turned = int(0)  # 1: converged, but a body turned more than m.max_turn (retried smaller)
        if ok and may_reject != 0 and m.max_turn > wp.float64(0.0):
            b = int(-1)
            while b < nb - 1:
                b += 1
                if m.inv_mass[w, b] > wp.float64(0.0):
                    dq = sc.rot1[w, b] * wp.quat_inverse(st.rot[w, b])
                    sin_half = wp.length(wp.vec3d(dq[0], dq[1], dq[2]))
                    if wp.float64(2.0) * wp.atan2(sin_half, wp.abs(dq[3])) > m.max_turn:
                        turned = 1
        if not ok or turned != 0:
            if not ok and (not wp.isfinite(sc.conv_err[w]) or sc.conv_err[w] <= ACCEPT_FACTOR * tol):
                sc.conv_err[w] = wp.float64(1.0e300)  # the state went non-finite (else: the residual left)
            sc.fage[w] = -1  # the next try factorises afresh
            sc.rank_age[w] = -1  # with a fresh rank decision
            if cm.n_pairs > 0:
                cs.prev_count[w] = 0  # and no warm start from this try's contact impulses
            return 0
    if assemble == 0:
        if m.has_elements != 0:
            end_elements(m, es, sc, w, h)
        else:
            es.tnow[w] = es.tnow[w] + h
        es.hlast[w] = h  # (es.hkick already holds this step's kick)
    # 6. commit; record the largest hard-constraint error left
    err = wp.float64(0.0)
    if sc.rfresh[w] != 0:  # the Newton test's residuals are of these poses: keep the hard rows'
        i = int(-1)
        while i < nr - 1:
            i += 1
            mode = m.row_mode[i]
            if sc.act[w, i] != 1 or mode == MODE_SOFT or mode == MODE_LAW or mode == MODE_FRICTION:
                sc.res[w, i] = wp.float64(0.0)
            err = wp.max(err, wp.abs(sc.res[w, i]))
    else:
        err = residuals(m, es, sc, w, 1)
    dg.frame_error[w] = wp.max(dg.frame_error[w], err)
    if err > dg.max_error[w]:
        dg.max_error[w] = err
        worst_row = int(-1)
        i = int(-1)
        while i < nr - 1:
            i += 1
            if wp.abs(sc.res[w, i]) == err:
                worst_row = i
        dg.worst_row[w] = worst_row
    held = int(0)  # a limit held in this step: its impulse jump is not extrapolated (history restarts)
    if m.hard_only != 0 and m.equal_only == 0:
        i = int(-1)
        while i < nr - 1:
            i += 1
            if m.row_mode[i] != MODE_EQUAL and sc.act[w, i] == 1:
                held = 1
    if held != 0:  # before a retry's restart too: a later step must not extrapolate through this one
        rs.run[w] = 0
    elif assemble != 0 or hp != h or rescale != 0:
        rs.run[w] = 1
    else:
        rs.run[w] = rs.run[w] + 1
    i = int(-1)
    while i < nr - 1:
        i += 1
        lw = wp.float64(0.0)
        mode = m.row_mode[i]
        if assemble == 0 and (mode == MODE_EQUAL or mode == MODE_LOWER or mode == MODE_UPPER) and sc.act[w, i] == 1:
            lw = sc.lam[w, i]
        if assemble == 0 and mode == MODE_SOFT and sc.act[w, i] != 0:  # active or clamped on its bound
            lw = sc.lam[w, i]
        if assemble != 0:  # a fresh start: no history
            rs.lwarm3[w, i] = lw
            rs.lwarm4[w, i] = lw
            rs.lwarm5[w, i] = lw
            rs.lwarm6[w, i] = lw
            rs.lwarm2[w, i] = lw
        else:
            rs.lwarm6[w, i] = rs.lwarm5[w, i]
            rs.lwarm5[w, i] = rs.lwarm4[w, i]
            rs.lwarm4[w, i] = rs.lwarm3[w, i]
            rs.lwarm3[w, i] = rs.lwarm2[w, i]
            rs.lwarm2[w, i] = rs.lwarm[w, i]
        rs.lwarm[w, i] = lw
    b = int(-1)
    while b < nb - 1:
        b += 1
        st.pos[w, b] = sc.pos1[w, b]
        st.rot[w, b] = sc.rot1[w, b]
        if assemble == 0:
            st.vel[w, b] = sc.vel1[w, b]
            st.omega[w, b] = sc.omega1[w, b]
    if assemble != 0:
        sc.fage[w] = -1  # the assembly's factor (h = 1, its own active rows) is not reused
        sc.rank_age[w] = -1
    if assemble == 0 and cm.n_pairs > 0:
        contact_end(cs, w, nb, st.vel, st.omega)  # position-only (split) impulses leave velocities
    return 1


@wp.func
def check_world(m: ModelData, st: StateData, dg: Diagnostics, w: int, step: int) -> int:
    b = int(-1)
    while b < m.n_bodies - 1:
        b += 1
        x = st.pos[w, b]
        v = st.vel[w, b]
        om = st.omega[w, b]
        q = st.rot[w, b]
        s = wp.dot(x, x) + wp.dot(v, v) + wp.dot(om, om) + wp.dot(q, q)
        code = int(0)
        if not wp.isfinite(s):
            code = 1
        elif wp.length(v) > MAX_SPEED or wp.length(om) > MAX_SPIN or wp.length(x) > MAX_POS:
            code = 2
        if code != 0:
            dg.status[w] = code
            dg.fail_body[w] = b
            dg.fail_step[w] = step
            return 1
    return 0


@wp.func
def write_first_frame(st: StateData, dg: Diagnostics, out: FrameOutput, nb: int, w: int):
    """Frame 0 of a run: the current poses, and the residual of the steps that led there."""
    b = int(-1)
    while b < nb - 1:
        b += 1
        out.pos[0, w, b] = st.pos[w, b]
        out.rot[0, w, b] = st.rot[w, b]
    if out.want_world != 0:
        out.resid[0, w] = dg.frame_error[w]


@wp.kernel
def advance_frames(m: ModelData, cm: ContactModel, st: StateData, rs: RowState, es: ElementState, cs: ContactState,
                   sc: Scratch, dg: Diagnostics, out: FrameOutput,
                   n_frames: int, substeps: int, h: wp.float64,
                   tol: wp.float64, t0: wp.float64, k0: int, frames_before: int, first: int, lookahead: int, w0: int):
    """Advance every world by n_frames output frames; write poses of frames f0+1 .. f0+n.
    Reads m, cm; updates st, rs, es, cs in place; sc is work space; writes dg and out.
    Thread k runs world w0 + k (the driver may split the worlds into ranges, one per CPU thread).
    A step's time is t0 + k h, k counted from t0 (k0 steps before this run's first frame), so a
    run in several calls evaluates its time functions at the same times as one call.
    frames_before: the frames written before this launch (f0), from the host; -1 in a CUDA graph,
    which replays one recorded launch and so counts them on the device (out.done, bump_counter).
    first != 0 (a run that projects nothing): the launch that starts at frame 0 first writes
    frame 0, the state the last run ended in (one launch fewer than assemble_worlds; in a CUDA
    graph only the first replay starts at frame 0).

    Recorded velocities and forces of a frame are central (outputs.py): they are written after
    the first step of the next frame. lookahead != 0: take only that step for frame f0 (the
    driver restores the state afterwards)."""
    w = wp.tid() + w0
    f0 = frames_before
    if f0 < 0:
        f0 = out.done[0]
    if first != 0 and f0 == 0:
        write_first_frame(st, dg, out, m.n_bodies, w)
    if dg.status[w] != 0:
        return
    nf = n_frames
    if lookahead != 0:
        nf = 1
    for f in range(nf):
        dg.frame_error[w] = wp.float64(0.0)
        for s in range(substeps):
            t = t0 + wp.float64(k0 + (f0 + f) * substeps + s) * h
            if s == 0 and out.derived != 0:
                save_prev(out, st.vel, st.omega, m.n_bodies, w)
            # Advance from t by h; a step that does not converge is retried as two halves,
            # recursively, down to h / 2^MAX_HALVINGS, and the world stops (status 3, the row and
            # its residual recorded) when even that fails: at most 2^MAX_HALVINGS + MAX_HALVINGS
            # tries. Written here rather than as a function: Warp passes structs to a function by
            # value, and on CUDA each level copies them into the thread's stack every step (this
            # loop as a function: a 10,320-byte stack frame against 8,992, and 4 % fewer
            # world-steps/s on an H200; the same on the CPU).
            done = int(0)  # progress in units of h / STEP_UNITS
            level = int(0)
            unit = int(STEP_UNITS)  # units per step at this level
            hs = h
            failed = int(0)
            cold = int(0)  # 1: the rest of this step starts its impulses from zero
            while done < STEP_UNITS:
                es.tnow[w] = t + h * (wp.float64(done) / wp.float64(STEP_UNITS))
                may_reject = int(0)  # at the floor a step is judged by its rows alone
                if level < MAX_HALVINGS:
                    may_reject = 1
                if step_world(m, st, rs, es, sc, dg, cm, cs, w, hs, tol, 0, may_reject, cold) != 0:
                    if s == 0 and done == 0 and out.derived != 0:
                        # the frame's central values, from the first step after it (when that was
                        # retried, its first half, not the step's end)
                        record_derived(out, m.el, m.row_k[w], m.row_c[w], m.row_value[w], m.row_tv[w],
                                       m.gravity[w], m.inv_mass[w], m.inv_inertia[w], st.vel, st.omega,
                                       sc.lam, sc.act, sc.jl1, sc.ja1, m.n_bodies, m.n_rows, w, f0 + f, t,
                                       es.hlast[w], es.hkick[w])
                        if lookahead != 0:
                            return
                    done = done + unit
                else:
                    dg.n_reduced[w] = dg.n_reduced[w] + 1
                    if level >= MAX_HALVINGS and cold == 0:
                        # every try down to the floor started from the last steps' impulses, and a
                        # guess can be what fails: near-dependent limits on a thin rod (axial ratio
                        # 1e-6) held it with opposing impulses of 0.6 and 1.1 N s, which one step's
                        # turn unbalances into a half-turn spin; one more try at the floor, cold
                        cold = 1
                        continue
                    if level >= MAX_HALVINGS:
                        worst = int(-1)
                        for i in range(m.n_rows):
                            if worst < 0 or wp.abs(sc.res[w, i]) > wp.abs(sc.res[w, worst]):
                                worst = i
                        dg.status[w] = 3
                        dg.fail_row[w] = worst
                        dg.fail_err[w] = sc.conv_err[w]
                        dg.fail_time[w] = es.tnow[w]
                        failed = 1
                        break
                    level = level + 1
                    unit = unit // 2
                    hs = wp.float64(0.5) * hs
            if failed != 0:
                return
            if check_world(m, st, dg, w, (f0 + f) * substeps + s + 1) != 0:
                return
        for b in range(m.n_bodies):
            out.pos[f0 + f + 1, w, b] = st.pos[w, b]
            out.rot[f0 + f + 1, w, b] = st.rot[w, b]
        for k in range(m.el.n_motors):  # motor efforts of the frame's last step
            out.eff[f0 + f + 1, w, k] = sc.lam[w, m.el.motor_row[k]] / es.hkick[w]
        if out.want_world != 0:
            out.resid[f0 + f + 1, w] = dg.frame_error[w]  # kept: frame 0 of a later run


@wp.kernel
def bump_counter(counter: wp.array(dtype=wp.int32), n: int):
    counter[0] = counter[0] + n


@wp.kernel
def assemble_worlds(m: ModelData, cm: ContactModel, st: StateData, rs: RowState, es: ElementState, cs: ContactState,
                    sc: Scratch, dg: Diagnostics, out: FrameOutput, tol: wp.float64, project: int, w0: int):
    """Frame 0 of out. project != 0 (a Solver's first run): first project the initial positions
    onto the hard constraints (velocities untouched). project = 0 (a later run, which goes on from
    the state the last one left): frame 0 is that run's last frame, and nothing is stepped, so the
    Newton warm start and the factor carry on (a run in ten calls is the run in one call).
    Reads m, cm; updates st, rs, es, cs in place; writes dg and out."""
    w = wp.tid() + w0
    if project != 0:
        dg.frame_error[w] = wp.float64(0.0)
        step_world(m, st, rs, es, sc, dg, cm, cs, w, wp.float64(1.0), tol, 1, 0, 0)
    write_first_frame(st, dg, out, m.n_bodies, w)


@wp.kernel
def start_elements(m: ModelData, st: StateData, es: ElementState, sc: Scratch, h: wp.float64, t0: wp.float64,
                   w0: int):
    """Leapfrog start of the element forces, after assembly: the velocities become
    v(-h/2) = v(0) - h/2 M^-1 F(0) for the force elements, force motors, sliding friction and
    loads (the host already did it for gravity), and every law row's state is initialised:
    f_{-1/2} = f(g(0), gdot(0)), unwrapped angle, rate; velocity-motor references; stick flags."""
    w = wp.tid() + w0
    el = m.el
    es.tnow[w] = t0
    es.hnow[w] = h
    es.hlast[w] = h  # the velocities become those of the half step before t0
    es.hkick[w] = h
    z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    half = wp.float64(0.5) * h
    for b in range(m.n_bodies):
        sc.dv[w, b] = z
        sc.dL[w, b] = z
        sc.vstar[w, b] = z
        sc.mom[w, b] = z
        v = st.vel[w, b]
        if m.inv_mass[w, b] > wp.float64(0.0):
            v = v + half * m.gravity[w]  # back to v(0)
        sc.vel1[w, b] = v
    for i in range(m.n_rows):
        mode = m.row_mode[i]
        if mode != MODE_LAW and mode != MODE_FRICTION and el.motor[i] != W_MOTOR_VELOCITY:
            continue
        b0 = m.row_b0[i]
        b1 = m.row_b1[i]
        kind = m.row_kind[i]
        g, jl0, ja0, jl1, ja1 = row_at(m, i, st.pos, st.rot, w)
        gd = wp.float64(0.0)
        if b0 >= 0:
            gd = gd + wp.dot(jl0, sc.vel1[w, b0]) + wp.dot(ja0, st.omega[w, b0])
        if b1 >= 0:
            gd = gd + wp.dot(jl1, sc.vel1[w, b1]) + wp.dot(ja1, st.omega[w, b1])
        es.gun[w, i] = g
        es.gdot[w, i] = gd
        es.fprev[w, i] = wp.float64(0.0)
        es.qref[w, i] = g
        es.stick[w, i] = 0
        imp = wp.float64(0.0)
        if mode == MODE_LAW:
            law = el.law[i]
            if law == W_LAW_EFFORT:
                imp = time_fn(el, int(el.fn[i]), t0)
            elif law == W_LAW_ARMATURE:
                # a spring mass's weight; its inertia needs no start: gdot_{-1/2} = gdot(0)
                # with the bodies' v(-h/2) from their own masses makes the first step's
                # velocity v(0) + h/2 a(0) with the particle's inertia included (forces.md)
                imp = el.preload[i]
            elif law != W_LAW_ARMATURE and not (kind == ROW_DIST and g < W_LINE_EPS):
                f, dfg, dfv = law_force(el, i, m.row_k[w, i], m.row_c[w, i], m.row_value[w, i], m.row_tv[w, i], g, gd, t0, 0)
                es.fprev[w, i] = f
                imp = f
        elif mode == MODE_FRICTION:
            if wp.abs(gd) <= W_STICK_SPEED:
                es.stick[w, i] = 1
            elif el.couple[i] < 0:
                imp = -el.fdynamic[w, i] * wp.sign(gd)
                es.fprev[w, i] = imp
        if imp != wp.float64(0.0):
            c = -half * imp
            if b0 >= 0:
                sc.dv[w, b0] = sc.dv[w, b0] + (c * m.inv_mass[w, b0]) * jl0
                sc.dL[w, b0] = sc.dL[w, b0] + c * ja0
            if b1 >= 0:
                sc.dv[w, b1] = sc.dv[w, b1] + (c * m.inv_mass[w, b1]) * jl1
                sc.dL[w, b1] = sc.dL[w, b1] + c * ja1
    if el.n_loads > 0:
        apply_loads(el, st.pos, st.rot, m.inv_mass[w], sc.vstar, sc.mom, w, t0, -half)
    for b in range(m.n_bodies):
        if m.inv_mass[w, b] > wp.float64(0.0):
            q = st.rot[w, b]
            st.vel[w, b] = st.vel[w, b] + sc.dv[w, b] + sc.vstar[w, b]
            lb = wp.quat_rotate_inv(q, sc.dL[w, b] + sc.mom[w, b])
            st.omega[w, b] = st.omega[w, b] + wp.quat_rotate(q, cmul(m.inv_inertia[w, b], lb))
