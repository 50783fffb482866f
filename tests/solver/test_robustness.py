"""Property-based robustness campaign (hypothesis): random mechanisms as in-memory USD stages.

Properties
  (a) robustness: a run of any generated mechanism (trees of revolute / prismatic / spherical /
      D6 joints, loops, thin rods, mass ratios to 1e3, random joint frames, limits of every kind,
      cone limits on spherical joints)
      completes with finite poses and joints held (max_constraint_error <= 1e-6), or raises
      UsdphysError with a one-line message. A hang (60 s), a crash, another exception, a
      non-finite pose or a silently unconverged step is a failure.
  (a') joint friction: trees with joint Coulomb friction (1e-3 .. 10 N m or N) beside limits
      run to the end; here a one-line stop is a failure too.
  (b) tree accuracy: trees without limits follow MuJoCo (RK4, contact off, the oracle's own
      dt convergence checked) after 0.5 s, where the comparison is well posed: the stage holds
      joint frames as float32, and a mechanism whose MuJoCo answer moves by more than 3e-7 m
      when each link's frames turn by 1e-7 rad amplifies that rounding past the tolerance.
  (c) loop accuracy: four-bars, slider-cranks and parallelograms (thin rods included) follow an
      independent planar DAE integrated by scipy after 0.5 s. Lengths, masses, inertias and
      gravity are drawn as float32 numbers (what the stage stores), so both integrate one model.
  (d) limits: a limit changes nothing until the motion reaches it; a limit that is reached holds.

Tolerance for (b)/(c): usdphys is second order in dt. We run it at h = 2e-4 and 1e-4 and take
e = |x(h) - x(h/2)| as the measure of its own discretisation error (Richardson: the error at h/2
is e/3). We require |x(h/2) - reference| <= 1e-6 m + 3 e and e <= 1e-4 m: the discrepancy must be
explained by the solver's measured, converging discretisation error (plus 1e-6 m for the
oracle and round-off); a solver that converges to a wrong motion, or does not converge, fails.
The oracles are far tighter: MuJoCo RK4 at 1e-4 vs 5e-5 agrees to < 1e-7 m (asserted; the 5e-5
result, used as reference, is then within ~1e-8 m: fourth order), scipy
DOP853 runs at rtol = atol = 1e-12.

CI run: derandomize=True (fixed examples), few examples; `pytest -m slow` runs the same
properties with many more examples (benchmarks/campaign_long.py prints a summary).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import note as _note
from hypothesis import strategies as st

import robustness_helpers as H

# CI: fixed examples, no shrinking (bounded time; the failing example is still printed).
CI = settings(derandomize=True, max_examples=int(os.environ.get("ROBUST_EXAMPLES", "10")), deadline=None,
              database=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.explicit, Phase.generate] if not os.environ.get("ROBUST_SHRINK") else list(Phase))
LONG = settings(derandomize=False, max_examples=int(os.environ.get("ROBUST_LONG_EXAMPLES", "300")), deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

RATIOS = [1.0, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6]  # axial / transverse inertia (shrinks to 1)
ANG_LIMITS = [(-170.0, 170.0), (-360.0, 360.0), (-179.0, 181.0), (10.0, 400.0), (-1e30, 1e30),
              (-90.0, math.inf), (-math.inf, 45.0), (-30.0, 30.0)]
LIN_LIMITS = [(-0.1, 0.1), (0.2, 0.5), (-1e30, 1e30), (-0.05, math.inf)]
CONES = [(30.0, 60.0), (45.0, 45.0), (0.0, 90.0), (120.0, 20.0), (10.0, 10.0)]  # deg: spherical cone limits
def note(msg):
    try:
        _note(msg)
    except Exception:  # outside a hypothesis test (oracle self-check)
        pass


def logged(fn):
    """Append every failing example to $ROBUST_LOG (campaign_long.py and the report read it)."""
    @functools.wraps(fn)
    def wrap(*args, **kw):
        try:
            return fn(*args, **kw)
        except AssertionError as e:
            path = os.environ.get("ROBUST_LOG")
            if path:
                with open(path, "a") as f:
                    f.write(f"=== {fn.__name__}: {str(e).splitlines()[0] if str(e) else 'assertion'}\n{args!r}\n")
            raise
    return wrap


# a run of <= 6 bodies for 1 s takes < 1 s; 15 s means a hang even on a loaded 2-core machine
TIMEOUT = float(os.environ.get("ROBUST_TIMEOUT", "15"))
RESIDUAL_TOL = 1e-6  # m or rad; Newton stops at 1e-12, so 1e-6 flags only real non-convergence


# ----------------------------------------------------------------------------- strategies
unit3 = st.tuples(*[st.floats(0, 0.999, allow_nan=False)] * 3)


def f32_quat(q):
    """A joint frame the stage can hold exactly: UsdPhysics writes joint frames as float32 quatf,
    and the MuJoCo twin reads the float64 numbers; rounded once here, frame 0 is the same number
    on both sides (a float64 frame left ~6e-8 rad between them, which a thin rod on a slide and a
    Cardan joint turned into 1.3e-6 m after 0.5 s in the long campaign)."""
    return tuple(float(x) for x in np.asarray(q, np.float32))


@st.composite
def links(draw, n_max=4, kinds=("revolute", "prismatic", "spherical", "d6"), with_limits=True, oracle=False,
          with_friction=False):
    n = draw(st.integers(1, n_max))
    out = []
    for i in range(n):
        parent = draw(st.integers(-1, i - 1)) if i else -1
        kind = draw(st.sampled_from(kinds))
        free = (False,) * 6
        if kind == "d6":
            free = tuple(draw(st.lists(st.booleans(), min_size=6, max_size=6)))
        ln = H.Link(parent=parent, kind=kind, axis=draw(st.integers(0, 2)), free=free,
                    shape=draw(st.sampled_from(["capsule", "box"])),
                    length=draw(st.floats(0.1, 1.0)), radius=0.02,
                    mass=10 ** draw(st.floats(-1.5, 1.5)), ratio=draw(st.sampled_from(RATIOS)),
                    rot=tuple(H.quat_from_unit3(draw(unit3))), jrot=f32_quat(H.quat_from_unit3(draw(unit3))),
                    attach=draw(st.sampled_from([1.0, 0.5, 0.0, 0.75])))
        if with_limits:
            dofs = {"revolute": [3 + ln.axis], "prismatic": [ln.axis], "spherical": [],
                    "d6": [d for d in range(6) if free[d]]}[kind]
            for d in dofs:
                if draw(st.booleans()):
                    ln.limits[d] = draw(st.sampled_from(ANG_LIMITS if d >= 3 else LIN_LIMITS))
            if kind == "spherical" and draw(st.booleans()):
                ln.cone = draw(st.sampled_from(CONES))
        if with_friction and kind in ("revolute", "prismatic"):
            # joint Coulomb friction from a hand's frictionloss (1e-3) to one that holds the link
            ln.friction = draw(st.sampled_from([0.0, 1e-3, 0.1, 1.0, 10.0]))
        out.append(ln)
    return out


@st.composite
def loops(draw):
    kind = draw(st.sampled_from(["fourbar", "slider_crank", "parallelogram"]))
    ratio = draw(st.sampled_from(RATIOS))
    masses = [10 ** draw(st.floats(-1.5, 1.5)) for _ in range(3)]
    theta = draw(st.floats(-math.pi, math.pi))
    shapes = [draw(st.sampled_from(["capsule", "box"])) for _ in range(3)]

    def inert(m, L):
        it = m * (L * L / 12 + 0.02 ** 2 / 4)
        return (ratio * it, it, it)

    if kind == "slider_crank":
        crank, rod = draw(st.floats(0.1, 0.6)), draw(st.floats(0.7, 1.5))
        mech = H.slider_crank(crank, rod, theta, masses,
                              [inert(masses[0], crank), inert(masses[1], rod), inert(masses[2], 0.1)], shapes)
    else:
        if kind == "parallelogram":
            ground = draw(st.floats(0.3, 1.5))
            crank = draw(st.floats(0.2, 1.0))
            coupler, rocker = ground, crank
        else:
            ground, crank, coupler, rocker = (draw(st.floats(0.2, 1.5)) for _ in range(4))
        upper = draw(st.booleans())
        mech = H.fourbar(ground, crank, coupler, rocker, theta, masses,
                         [inert(masses[0], crank), inert(masses[1], coupler), inert(masses[2], rocker)],
                         upper, shapes)
    assume(mech is not None)
    mech.name = kind
    return mech


# ----------------------------------------------------------------------------- property checks
@logged
def check_robust(text, duration=1.0, dt=1e-3, stops=None):
    """The run's result, or None for a one-line stop (its line appended to `stops` when given)."""
    res = H.run_usdphys(text, timeout=TIMEOUT, duration=duration, dt=dt, fps=100)
    note(f"outcome: {res[0]}: {res[1] if res[0] != 'ok' else ''}")
    if res[0] == "usdphys_error":
        assert "\n" not in res[1].strip() and res[1].strip(), f"UsdphysError must be one line: {res[1]!r}"
        if stops is not None:
            stops.append(res[1].strip())
        return None
    assert res[0] == "ok", f"{res[0]}: {res[1]}"
    pos, rot, err = res[2], res[3], res[4]
    assert np.all(np.isfinite(pos)) and np.all(np.isfinite(rot)), "non-finite pose (blow-up)"
    assert np.max(np.abs(pos)) < 1e3, f"blow-up: |x| = {np.max(np.abs(pos)):.3g} m"
    assert float(np.max(err)) <= RESIDUAL_TOL, f"silent non-convergence: max_constraint_error = {float(np.max(err)):.3g}"
    return res


def require(cond, strict, why):
    """In a property: skip the example (assume); in a fixed example: it must hold."""
    if strict:
        assert cond, why
    else:
        assume(cond)


def converged_pair(text, names, duration=0.5, strict=False, ref=None):
    """usdphys at dt and dt/2 (second order: their difference is ~3x the finer run's error). Fast
    dynamics get a second, finer pair before the convergence check judges them: where the coarse
    pair differs by more than 1e-4 m (a thin rod spinning on a Cardan joint: 1.6e-4 m at 2e-4 s,
    converging exactly as h^2 to MuJoCo), or, given the reference, where it is not yet in its
    asymptotic range (a thin rod's spin, axial inertia 1e-7 kg m^2, unresolved at 2e-4 and 1e-4 s:
    both 5.6e-5 m off, agreeing to 3e-6; 4e-7 and 1.1e-7 m off at 5e-5 and 2.5e-5 s). The
    tolerances stay those of assert_close, on the pair that is judged."""
    for pair in ((2e-4, 1e-4), (5e-5, 2.5e-5)):
        out = []
        for h in pair:
            res = check_robust(text, duration=duration, dt=h)
            require(res is not None, strict, "usdphys refused the mechanism")  # in a property: (a)'s business
            out.append(H.body_positions(res, names))
        e = float(np.max(np.linalg.norm(out[0] - out[1], axis=1)))
        asymptotic = ref is None or float(np.max(np.linalg.norm(out[1] - ref, axis=1))) <= 1e-6 + 3 * e
        if e <= 1e-4 and asymptotic:
            break
    return out[1], e


def assert_close(x, ref, e):
    dev = float(np.max(np.linalg.norm(x - ref, axis=1)))
    note(f"deviation {dev:.3g} m, usdphys h-vs-h/2 {e:.3g} m")
    assert e <= 1e-4, f"usdphys does not converge in dt: |x(2e-4) - x(1e-4)| = {e:.3g} m"
    assert dev <= 1e-6 + 3 * e, f"deviation from the reference {dev:.3g} m > 1e-6 + 3 * {e:.3g}"


@logged
def check_tree_accuracy(lks, strict=False):
    names = [f"L{i}" for i in range(len(lks))]
    text = H.tree_usda(lks)
    note(text)
    ref = H.mujoco_positions(lks, 0.5, 1e-4)
    ref2 = H.mujoco_positions(lks, 0.5, 5e-5)
    # MuJoCo resets a simulation whose state it finds non-finite or huge (a thin rod whipping on a
    # D6 joint: "Nan, Inf or huge value in QACC"): then it has no answer (the long campaign found
    # a 1.14 m "deviation" that was MuJoCo's reset at t = 0.37 s; usdphys kept its energy to 0.4 %)
    require(ref is not None and ref2 is not None, strict, "the MuJoCo oracle went unstable and reset")
    # RK4 is fourth order: the error of ref2 is ~|ref - ref2| / 15, so 1e-7 here means < 1e-8 m.
    # Where the oracle itself has not converged (explicit RK4 on a thin rod, inertia ratio 1e-6,
    # spinning on a spherical joint is stiff for it) it has no answer to compare with; property
    # (a) still runs usdphys on the same mechanism.
    require(np.max(np.abs(ref - ref2)) < 1e-7, strict, "the MuJoCo oracle has not converged")
    # The stage holds joint frames as float32 quatf: each joint frame in its body is rounded by
    # up to ~6e-8 rad, which the MuJoCo twin (float64 axes) does not see. Where turning every link
    # (or every joint frame) by 1e-7 rad moves MuJoCo's own answer by more than 3e-7 m, the motion
    # amplifies that rounding past the tolerance (the long campaign found a thin rod on a slide +
    # Cardan joint: 1.5e-5 m off, 2e-7 m with its frame turned by 1e-7 rad; two parallel slides
    # whose axes the rounding tilts out of the horizontal: 1.4e-6 m): no simulator reading the
    # stage can be compared at 1e-6 m there.
    # each link about its own axis: the rounding errors of different frames are independent, and a
    # common turn would leave their relative tilt (what drives the motion) at zero
    tilts = [H.qaxis(np.roll([1.0, 0.6, 0.2], i) / np.linalg.norm([1.0, 0.6, 0.2]), 1e-7) for i in range(len(lks))]
    sens = 0.0
    for field in ("rot", "jrot"):
        turned = [dataclasses.replace(ln, **{field: tuple(H.qmul(np.asarray(getattr(ln, field), float), t))})
                  for ln, t in zip(lks, tilts)]
        alt = H.mujoco_positions(turned, 0.5, 5e-5)
        sens = max(sens, float(np.max(np.abs(alt - ref2))) if alt is not None else math.inf)
    note(f"MuJoCo moves {sens:.3g} m when every link or joint frame turns 1e-7 rad")
    require(sens < 3e-7, strict, "the motion amplifies the stage's float32 frame rounding past the tolerance")
    x, e = converged_pair(text, names, strict=strict, ref=ref2)
    assert_close(x, ref2, e)


@logged
def check_loop_accuracy(mech):
    ref, sv = H.planar_reference(mech, 0.5)
    assume(ref is not None and sv > 1e-2)  # the reference passes no singular configuration
    text = H.planar_usda(mech)
    note(text)
    names = [f"B{b}" for b in range(len(mech.mass))]
    x, e = converged_pair(text, names, ref=ref)
    assert_close(x, ref, e)


def start_coordinate(q0_deg, lim):
    """The joint coordinate a pose at q0 starts with (docs/solver.md, "Joint limits on unwrapped
    coordinates"): a pose fixes the angle only modulo 360 deg, so the solver starts from the
    turn in (-180, 180] when that lies in the limit range, else the turn inside the range, else
    the turn nearest to it; a turn within 1e-6 rad outside the range counts as on its bound (a
    pose authored at a limit comes back a hair off it from float32 frames). Written here
    independently of the kernel's start_turn."""
    g = math.radians(q0_deg)
    g = g - 2 * math.pi * math.ceil((g - math.pi) / (2 * math.pi))  # (-pi, pi]
    if lim is None:
        return g
    lo, hi = (math.radians(v) for v in lim)
    if lo - 1e-6 <= g <= hi + 1e-6:
        return g
    turns = [g + 2 * math.pi * k for k in range(-4, 5)]
    inside = [q for q in turns if lo <= q <= hi]
    if inside:
        return min(inside, key=abs)
    return min(turns, key=lambda q: min(abs(q - lo), abs(q - hi)))


def joint_angle_history(res, lk, lim, text):
    """Revolute root link: q(t), the joint's own coordinate, measured from the joint frames as the
    stage holds them (float32 `localRot0` / `localRot1` in `text`) and the body's poses, on the turn
    start_coordinate picks. Not the body's turn since frame 0 plus q0: the stage's float32 frames
    and the assembly can start the joint off q0 (3.3e-6 rad for a rod of axial ratio 1e-5 hinged
    nearly along its length, which the assembly turns about its cheap axis), and a limit holds the
    joint's coordinate, not that sum."""
    r0, r1 = _stage_quat(text, "quatf physics:localRot0"), _stage_quat(text, "quatf physics:localRot1")
    ang = np.unwrap(np.array([_hinge_angle(np.array([r[3], *r[:3]]), r0, r1, lk.axis) for r in res[3][:, 0, 0]]))
    start = start_coordinate(input_angle(lk, text), lim)
    return ang + 2 * math.pi * round((start - ang[0]) / (2 * math.pi))


def _stage_quat(text, name):
    """The root link's quaternion `name` as the stage holds it (quatf: float32), normalised."""
    m = re.search(name + r" = \(([^)]*)\)", text)  # the root body and joint are the stage's first
    q = np.array([float(np.float32(v)) if name.startswith("quatf") else float(v) for v in m.group(1).split(",")])
    return q / np.linalg.norm(q)


def _hinge_angle(rot, r0, r1, axis):
    rel = H.qmul(H.qconj(r0), H.qmul(rot, r1))  # frame 1 in frame 0
    return 2 * math.atan2(float(rel[1 + axis]), float(rel[0]))


def input_angle(lk, text):
    """The root hinge's angle (deg) in the input pose as the stage holds it: the body's quatd
    orientation and the float32 joint frames. This, not the drawn q0, is what the solver reads:
    they differ by float32 rounding (~1e-8 deg), which decides the turn where a range spans
    exactly 360 deg and the pose sits on its shared stop ([-179, 181] at 181 deg: the stage's pose
    measures -178.99999998 deg, on the lower bound's turn, from where the rod may fall upwards)."""
    r0, r1 = _stage_quat(text, "quatf physics:localRot0"), _stage_quat(text, "quatf physics:localRot1")
    return math.degrees(_hinge_angle(_stage_quat(text, "quatd xformOp:orient"), r0, r1, lk.axis))


@st.composite
def limited_pendulums(draw):
    lim = draw(st.sampled_from(ANG_LIMITS))
    lo, hi = lim
    span_lo = max(lo, -200.0) if math.isfinite(lo) else -200.0
    span_hi = min(hi, 200.0) if math.isfinite(hi) else 200.0
    q0 = draw(st.floats(span_lo, span_hi))
    lk = H.Link(parent=-1, kind="revolute", axis=draw(st.integers(0, 2)),
                length=draw(st.floats(0.2, 1.0)), mass=10 ** draw(st.floats(-1, 1)),
                ratio=draw(st.sampled_from(RATIOS)), rot=tuple(H.quat_from_unit3(draw(unit3))),
                jrot=tuple(H.quat_from_unit3(draw(unit3))), q0=q0,
                omega=draw(st.sampled_from([0.0, 200.0, -500.0, 1500.0])))
    return lk, lim


# limits on the first or last angle of a three-rotation joint (the x-y-z sequence)
SEQUENCE_LIMITS = [(-30.0, 30.0), (-60.0, 10.0), (0.0, 45.0), (-90.0, math.inf), (-10.0, 80.0)]
# middle-angle ranges reaching past the sequence's lock at +-90 deg, where MuJoCo's middle hinge
# goes on and the x-y-z measurement turns back on the other branch
MIDDLE_LIMITS = [(-30.0, 120.0), (-150.0, 20.0), (-100.0, 100.0), (-120.0, math.inf), (-math.inf, 135.0)]


@st.composite
def sequence_limited_rods(draw):
    """A rod on a joint with three free rotations and a limit on its first or last angle."""
    return H.Link(-1, "d6", free=(False, False, False, True, True, True), length=draw(st.floats(0.3, 1.0)),
                  radius=0.02, ratio=draw(st.sampled_from([1.0, 0.1])), rot=tuple(H.quat_from_unit3(draw(unit3))),
                  jrot=tuple(H.quat_from_unit3(draw(unit3))),
                  limits={draw(st.sampled_from([3, 5])): draw(st.sampled_from(SEQUENCE_LIMITS))})


@st.composite
def middle_limited_rods(draw):
    """A rod on a joint with three free rotations and a limit on its middle angle past +-90 deg."""
    return H.Link(-1, "d6", free=(False, False, False, True, True, True), length=draw(st.floats(0.3, 1.0)),
                  radius=0.02, ratio=draw(st.sampled_from([1.0, 0.1])), rot=tuple(H.quat_from_unit3(draw(unit3))),
                  jrot=tuple(H.quat_from_unit3(draw(unit3))), limits={4: draw(st.sampled_from(MIDDLE_LIMITS))})


@logged
def check_sequence_limit(lk, strict=False):
    """usdphys against MuJoCo's three hinges in one body with the same range, its limit stiff and
    overdamped (an inelastic stop, usdphys' hard limit as its time constant goes to zero). The
    tolerance is each side's own measured error: usdphys' dt pair, MuJoCo's dt pair, and its
    softness (time constant 2e-4 against 1e-4 s), each three times (first order in the impact),
    plus 1e-6 m. Measured on 52 random rods: 6e-8 to 5.6e-4 m apart, 1e-3 to 0.24 m from the
    unlimited motion."""
    text = H.tree_usda([lk])
    note(text)
    pos = []
    for dt in (5e-4, 2.5e-4):
        res = check_robust(text, duration=0.5, dt=dt)
        assert res is not None, "a limit on one angle of the x-y-z sequence must simulate"
        pos.append(res[2][-1, 0, 0])
    e = float(np.max(np.abs(pos[0] - pos[1])))
    ref = H.mujoco_positions([lk], 0.5, 1e-5, rotation_limits=True)
    ref2 = H.mujoco_positions([lk], 0.5, 5e-6, rotation_limits=True)
    stiff = H.mujoco_positions([lk], 0.5, 5e-6, rotation_limits=True, limit_timeconst=1e-4)
    require(ref is not None and ref2 is not None and stiff is not None, strict, "the MuJoCo oracle went unstable")
    mj_dt = float(np.max(np.abs(ref - ref2)))
    mj_soft = float(np.max(np.abs(ref2 - stiff)))
    dev = float(np.max(np.abs(pos[1] - stiff[0])))
    note(f"deviation {dev:.3g} m; usdphys dt pair {e:.3g}, MuJoCo dt pair {mj_dt:.3g}, softness {mj_soft:.3g}")
    assert dev <= 1e-6 + 3 * (e + mj_dt + mj_soft), f"{dev:.3g} m from MuJoCo"


@logged
def check_limit(lk, lim):
    import copy

    free = copy.deepcopy(lk)
    limited = copy.deepcopy(lk)
    limited.limits = {3 + lk.axis: lim}
    kw = dict(duration=1.0, dt=1e-3)
    r_free = H.run_usdphys(H.tree_usda([free]), fps=1000, **kw)
    assume(r_free[0] == "ok" and np.all(np.isfinite(r_free[2])))  # (a) covers the unlimited run
    q_free = joint_angle_history(r_free, free, lim, H.tree_usda([free]))
    text = H.tree_usda([limited])
    note(text)
    res = H.run_usdphys(text, timeout=TIMEOUT, fps=1000, **kw)
    note(f"outcome {res[0]}")
    assert res[0] in ("ok", "usdphys_error"), f"{res[0]}: {res[1]}"
    if res[0] == "usdphys_error":
        assert "\n" not in res[1].strip()
        return
    assert np.all(np.isfinite(res[2])), "non-finite pose"
    lo, hi = (math.radians(v) if math.isfinite(v) else v for v in lim)
    margin = math.radians(1.0)
    if q_free.min() > lo + margin and q_free.max() < hi - margin:
        # the limit is never reached: the motion must be the unlimited one (same solver, same dt)
        dev = float(np.max(np.abs(res[2] - r_free[2])))
        note(f"unreached limit: q in [{math.degrees(q_free.min()):.1f}, {math.degrees(q_free.max()):.1f}] deg, dev {dev:.3g} m")
        assert dev <= 1e-9, f"a limit that is never reached changed the motion by {dev:.3g} m"
    else:
        # until the free motion first comes within 1 deg of a limit, the limit must not act
        inside = (q_free > lo + margin) & (q_free < hi - margin)
        k = int(np.argmin(inside)) if not inside.all() else len(inside)
        if k > 1:
            dev = float(np.max(np.abs(res[2][:k] - r_free[2][:k])))
            assert dev <= 1e-9, (f"limit [{lim[0]}, {lim[1]}] deg acted before it was reached: {dev:.3g} m off the "
                                 f"unlimited motion within the first {k - 1} ms")
        q = joint_angle_history(res, limited, lim, text)
        note(f"reached limit: q in [{math.degrees(q.min()):.2f}, {math.degrees(q.max()):.2f}] deg")
        start_inside = lo - 1e-6 <= start_coordinate(input_angle(lk, text), lim) <= hi + 1e-6
        if start_inside:
            assert q.min() >= lo - 1e-6 and q.max() <= hi + 1e-6, (
                f"limit [{lim[0]}, {lim[1]}] deg violated: q in [{math.degrees(q.min()):.3f}, {math.degrees(q.max()):.3f}]")


# ----------------------------------------------------------------------------- CI properties
@CI
@given(links(with_friction=True))
def test_trees_run_or_fail_cleanly(lks):
    note(H.tree_usda(lks))
    check_robust(H.tree_usda(lks))


# What the solver's one-line stop says of the known limits (driver.py: the fast-body and the
# sequence-lock notes)
KNOWN_LIMIT_NOTES = ("a motion faster than the step resolves", "near the sequence's lock")


def check_friction_runs(lks):
    """Joint Coulomb friction (1e-3 .. 10 N m or N) beside limits must not stop a run: a
    friction row that sticks while its joint lands on a limit acts on the same DOF as the limit
    row, and the solver once took the pair for a contradiction and stopped (15 of 53 such
    trees in an 80-example sample, none with the fix). A stop counts against friction where
    friction can be told to cause it: the same tree without friction runs at the step and at 0.9
    and 0.8 of it, the stop's line names none of the known limits the solver names (a body turning
    faster than the step resolves, more than 0.1 rad a step; a three-rotation joint at its x-y-z
    sequence's lock), and no joint holds an elongated cone past 90 deg (its needle tip: the known
    limit test_cone_limits' property accepts). Otherwise the tree is fragile or chaotic on its
    own, friction anywhere in it only moves its path, and (a) judges the stop (one line). The
    campaigns found each such case, most with friction on another branch or none at all
    (docs/solver.md, "Stop 41")."""
    text = H.tree_usda(lks)
    note(text)
    stops = []
    res = check_robust(text, stops=stops)
    if res is None:
        named = [n for n in KNOWN_LIMIT_NOTES if n in stops[0]]
        needle = any(H.needle_cone(lk.cone) for lk in lks)
        note(f"the stop names a known limit: {named}; an elongated cone: {needle}")
        assume(not named and not needle)
        bare = H.tree_usda([dataclasses.replace(lk, friction=0.0) for lk in lks])
        stops_bare = bare == text or any(check_robust(bare, dt=dt) is None for dt in (1e-3, 0.9e-3, 0.8e-3))
        note(f"without friction the tree {'stops too (at 1, 0.9 or 0.8 ms)' if stops_bare else 'runs'}")
        assume(not stops_bare)
    assert res is not None, "the run stopped, and the same tree without friction runs at 1, 0.9 and 0.8 ms (one line above)"


# Found by the long campaign (no friction drawn): thin rods whose rows turn fast within a step.
# A spherical root rod, axial inertia 1e-6 of its transverse, carrying a hinged link: an update
# through the last step's factor threw the iterate 0.66 rad off, where Newton never came back
# ("did not converge even at dt/64" at t = 0.538 s) until updates that make the residual grow are
# taken back. A hinge carrying a Cardan joint with a rod of ratio 1e-4 passes the Cardan joint's
# singular pose at t = 0.234 s, where the fixed iteration matrix gains only 0.8 per update even
# at dt/64 (it stopped 2e-6 off after 12 updates) until slow updates may go on while they gain.
THIN_ROD_ON_BALL_JOINT = [
    H.Link(-1, "spherical", length=0.5, ratio=1e-6,
           rot=(-0.2705980500730989, 0.0, 0.7071067811865476, -0.6532814824381882), jrot=(0.0, 0.0, 1.0, 0.0)),
    H.Link(0, "revolute", axis=1, length=1.0, ratio=1e-3, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0))]
# Four rods and a thin one (axial ratio 1e-5, limit +-170 deg) hinged coaxially at the root link's
# tip, the thin one carrying a 1 m link by a hinge across its axis: the thin rod reaches its limit
# at t = 0.813 s, and with the limit starting each step inactive the hinge's warm-started lock
# impulse spun it 8.8e5 rad/s in the first iterate (failed at every step size).
_FLIP = (0.0, 0.0, 1.0, 0.0)
THIN_ROD_ON_ITS_LIMIT_LOCKED_TO_A_LINK = (
    [H.Link(-1, "revolute", length=1.0, rot=_FLIP, jrot=_FLIP)]
    + [H.Link(0, "revolute", length=1.0, rot=_FLIP, jrot=_FLIP) for _ in range(3)]
    + [H.Link(0, "revolute", length=0.25, ratio=1e-5, rot=_FLIP, jrot=_FLIP, limits={3: (-170.0, 170.0)}),
       H.Link(4, "revolute", length=1.0, rot=(0.0, -0.7071067811865477, 0.7071067811865474, 0.0),
              jrot=(0.0, -0.7071067690849304, 0.7071067690849304, 0.0))])
# A 10 kg rod of axial ratio 1e-4 on a ball joint carrying a 1 kg link on a tilted hinge spins
# its axis at ~7,000 rad/s at t = 0.318 s: at dt/64 a step still turns it 0.1 rad and the frozen
# iteration matrix no longer contracts (stopped 0.7 rad off); the retries now go down to dt/256.
HEAVY_THIN_ROD_SPINNING_UNDER_A_TILTED_HINGE = (
    [H.Link(-1, "revolute", length=1.0, rot=_FLIP, jrot=_FLIP), H.Link(0, "revolute", length=1.0, rot=_FLIP, jrot=_FLIP),
     H.Link(0, "spherical", length=0.34375, mass=10.0, ratio=1e-4, rot=_FLIP, jrot=_FLIP)]
    + [H.Link(0, "revolute", length=1.0, rot=_FLIP, jrot=_FLIP) for _ in range(2)]
    + [H.Link(2, "revolute", length=1.0, ratio=1e-3, rot=(0.0, -1.0, -1.8369701987210297e-16, 0.0),
              jrot=(0.0, 0.8819212913513184, -0.4713967442512512, 0.0))])
THIN_ROD_THROUGH_CARDAN_LOCK = [
    H.Link(-1, "revolute", length=1.0, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0)),
    H.Link(0, "d6", free=(False, False, False, True, True, False), length=0.5, ratio=1e-4,
           rot=(0.0, 0.9238795325112867, -0.3826834323650897, 0.0),
           jrot=(0.7071067690849304, 0.0, 0.7071067690849304, 0.0))]

# A rod of axial ratio 1e-4 on a Cardan joint (free about x and z) beside a hinged link, under a
# ball-jointed root rod: near the joint's singular pose steps are retried smaller, and a warm
# start extrapolated through five impulses spaced by the old step size put the retries far off:
# stopped at t = 0.632 s at every step size, until a new step size starts from the last impulse.
CARDAN_THIN_ROD_RETRIED_SMALLER = [
    H.Link(-1, "spherical", length=1.0, rot=(0.0, 0.9238795325112867, -0.3826834323650897, 0.0), jrot=_FLIP),
    H.Link(0, "revolute", length=0.5, rot=_FLIP, jrot=_FLIP),
    H.Link(0, "d6", free=(False, False, False, True, False, True), length=0.25, ratio=1e-4, rot=_FLIP,
           jrot=(0.0, 0.3826834261417389, 0.9238795042037964, 0.0))]


# Found by a long campaign (seed 360): a D6 root with three free rotations and rotX limited below
# at -90 deg, rotY unlimited, three links on it. rotY reaches the sequence's lock at t = 0.719 s
# with rotX on its limit; with the limit measured as the angle the step stopped (1 and 0.5 ms).
ROOT_FIRST_ANGLE_LIMITED_THROUGH_THE_LOCK = [
    H.Link(-1, "d6", free=(False, False, False, True, True, True), length=1.0, radius=0.02, rot=_FLIP,
           jrot=(0.0, 1.0, 6.123234262925839e-17, 0.0), limits={3: (-90.0, math.inf)}),
    H.Link(0, "revolute", length=1.0, radius=0.02, rot=_FLIP, jrot=_FLIP),
    H.Link(0, "spherical", length=1.0, radius=0.02, rot=_FLIP, jrot=_FLIP),
    H.Link(0, "revolute", length=1.0, radius=0.02, rot=_FLIP, jrot=(0.0, 0.9238795042037964, 0.3826834261417389, 0.0))]


def test_max_turn_carries_a_thin_rod_run_that_stops_without_it():
    """The Cardan thin-rod tree (CARDAN_THIN_ROD_RETRIED_SMALLER) run 3 s at 0.4545 ms (22 steps a
    10 ms frame) stops at t = 0.923 s, even with the cold try at the floor. Retried smaller
    wherever a body turns more than 0.1 rad (max_turn), it runs the 3 s (87 steps retried), every
    joint converged. max_turn is no guarantee: the same tree runs without it at 1, 0.91 and
    0.77 ms and stops with it at 0.91 ms (docs/solver.md, "Globalised iteration": runs of the five
    hard trees, `benchmarks/hard_trees.py`); which run of such a passage stops moves with the
    step's arithmetic. Of 64 runs without max_turn (four hard trees at 10 ms / 8 .. 23) two
    stopped, both carried by max_turn: this one and 1.111 ms (the thin rod on a ball joint at
    0.667 ms, this test's run until the cold try, now runs). Should a later solver carry this run
    through, the test needs another run that stops."""
    text = H.tree_usda(CARDAN_THIN_ROD_RETRIED_SMALLER)
    dt = 10e-3 / 22
    off = H.run_usdphys(text, timeout=120.0, duration=3.0, dt=dt, fps=100)
    assert off[0] == "usdphys_error" and "did not converge" in off[1], off[:2]
    on = H.run_usdphys(text, timeout=120.0, duration=3.0, dt=dt, fps=100, max_turn=0.1)
    assert on[0] == "ok", f"{on[0]}: {on[1]}"
    assert float(np.max(on[4])) <= 1e-9


@CI
@given(links(with_friction=True))
def test_trees_with_joint_friction_run(lks):
    check_friction_runs(lks)


# Found by the long campaigns (seeds 400 and 410, 2026-11-28): 1e-3 N m of friction on a 10 kg
# link's hinge carried by a rod of axial ratio 1e-5. A pass that ran out of Newton updates within
# what a step accepts (1e-9) never checked its sticking friction impulse against the bound, so a
# step was committed sticking at 4.7 N s against a bound of 7.5e-7 N s, and the next step's
# iteration diverged from that start at every step size down to dt/256 (/J3 off by 3e19 below a
# held (30, 60) deg cone at t = 0.766 s; /J2 off by 189 below a ball joint at t = 0.447 s).
_X = dict(rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0))
FRICTION_ON_A_THIN_ROD_BELOW_A_CONE = [
    H.Link(-1, "spherical", length=1.0, cone=(30.0, 60.0), **_X),
    H.Link(0, "revolute", length=0.5, ratio=1e-5, **_X),
    H.Link(0, "spherical", length=1.0, **_X),
    H.Link(0, "revolute", length=1.0, **_X),
    H.Link(1, "revolute", length=1.0, mass=10.0, friction=1e-3, rot=(0.0, 0.0, 1.0, 0.0),
           jrot=(0.0, -0.9238795042037964, 0.3826834261417389, 0.0))]
# a 0.1 kg rod hinged 45 deg off its length below a ball joint
FRICTION_ON_A_HINGE_CARRIED_BY_A_THIN_ROD = [
    H.Link(-1, "spherical", length=0.5, **_X),
    H.Link(0, "revolute", length=1.0, mass=0.1, ratio=1e-5, rot=(0.0, 0.9238795325112867, -0.3826834323650897, 0.0),
           jrot=(0.0, 0.7071067690849304, -0.7071067690849304, 0.0)),
    H.Link(1, "revolute", length=1.0, mass=10.0, friction=1e-3, **_X)]
# Found by the long campaign of seed 440: five links hinged about the axis of a 0.11 m rod of axial
# ratio 1e-6 on a (30, 60) deg cone, one hinge limited to +-170 deg, another with 0.1 N m of
# friction. A pass that stalled at 7e-10 released the limit and let the friction slide in one
# active-set change; with the limit gone the rod's spin is driven by that friction alone, and
# every later pass diverged at every step size (t = 0.961 s). One change at a time, it runs.
FRICTION_AND_A_LIMIT_ON_HINGES_ABOUT_A_THIN_ROD = [
    H.Link(-1, "spherical", axis=1, length=0.109375, ratio=1e-6, cone=(30.0, 60.0), **_X),
    H.Link(0, "revolute", length=1.0, rot=(0.0, -0.7071067811865477, 0.7071067811865474, 0.0),
           jrot=(0.0, 0.0, 1.0, 0.0), limits={3: (-170.0, 170.0)}),
    H.Link(0, "revolute", length=1.0, **_X),
    H.Link(0, "revolute", length=1.0, **_X),
    H.Link(0, "revolute", length=1.0, **_X),
    H.Link(0, "revolute", length=0.1015625, friction=0.1, **_X)]


@pytest.mark.parametrize("lks", [CARDAN_THIN_ROD_RETRIED_SMALLER, THIN_ROD_ON_BALL_JOINT, THIN_ROD_THROUGH_CARDAN_LOCK,
                                 THIN_ROD_ON_ITS_LIMIT_LOCKED_TO_A_LINK, HEAVY_THIN_ROD_SPINNING_UNDER_A_TILTED_HINGE,
                                 ROOT_FIRST_ANGLE_LIMITED_THROUGH_THE_LOCK, FRICTION_ON_A_THIN_ROD_BELOW_A_CONE,
                                 FRICTION_ON_A_HINGE_CARRIED_BY_A_THIN_ROD, FRICTION_AND_A_LIMIT_ON_HINGES_ABOUT_A_THIN_ROD],
                         ids=["cardan-thin-rod", "thin-rod-ball", "thin-rod-cardan-lock", "thin-rod-limit-locked",
                              "heavy-thin-rod-tilted-hinge", "root-first-angle-lock", "friction-below-a-cone",
                              "friction-below-a-ball-joint", "friction-and-a-limit-about-a-thin-rod"])
def test_hard_trees_the_campaigns_found_run(lks):
    """Trees that once stopped (each one's comment says why) run their second at 1 ms, every joint
    within the tolerance: a stop here is a regression, whatever a tree without friction does."""
    res = check_robust(H.tree_usda(lks))
    assert res is not None, "the run stopped (one line above)"


# Found by the long campaign of seed 540 (friction property): a 0.115 kg rod of axial ratio 1e-6
# hinged 50 deg off its length, carrying a 1 kg link on a hinge with 1 N m of friction and a 1.78 kg
# link on a ball joint with a (30, 60) deg cone, beside three plain links.
FRICTION_AND_A_CONE_ON_A_THIN_ROD = [
    H.Link(-1, "revolute", length=0.125, **_X),
    H.Link(0, "d6", free=(False, False, False, False, False, True), length=1.0, **_X),
    H.Link(-1, "revolute", length=0.125, mass=0.11547819846894582, ratio=1e-6,
           rot=(0.9994998749374608, 0.0, 0.03162277660168556, 0.0),
           jrot=(0.8970474004745483, 0.0, 0.4330126941204071, -0.08835145831108093)),
    H.Link(0, "revolute", length=1.0, **_X),
    H.Link(2, "revolute", axis=2, length=1.0, friction=1.0, rot=(0.7071067811865476, 0.0, 0.7071067811865476, 0.0),
           jrot=(0.5, 0.0, 0.8660253882408142, 0.0)),
    H.Link(2, "spherical", length=0.5, mass=1.7782794100389228,
           rot=(-0.5140023765973486, 0.0, 0.6296404649408635, -0.5825413648500257), jrot=(0.0, 0.0, 1.0, 0.0),
           cone=(30.0, 60.0))]


@pytest.mark.xfail(strict=True, reason="known defect: a thin rod (axial ratio 1e-6) carrying a sliding friction "
                   "hinge and a coned ball joint stops at t = 0.5065 s at 1 ms; remove this mark when it runs")
def test_friction_and_a_cone_on_a_thin_rod():
    """The tree above stops at t = 0.5065 s at 1, 0.8 and 0.7 ms (at 0.9 and 0.5 ms it runs, with
    2,700 and 3,200 retried steps in 1 s), for frictions of 0.5 to 1.1 N m (0.4557 to 0.5165 s);
    with 2 N m it runs. The rod's spin is slow (under 10 rad/s) and the hinge slides steadily
    (8 rad/s): what makes it hard is the rod's axial inertia, 1.6e-10 kg m^2 (A's condition
    number), not its motion. It runs with that inertia 100x larger (406 retried steps) or 10^4x
    (2), without the friction (1,252) or without the cone (2,088)."""
    res = check_robust(H.tree_usda(FRICTION_AND_A_CONE_ON_A_THIN_ROD))
    assert res is not None, "the run stopped (one line above)"


def test_a_stop_on_a_slow_thin_body_names_it():
    """The tree above stops where nothing turns fast (under 10 rad/s), so the fast-body note is
    not given; the line names the thin rod the stopping joint hangs on, and its inertia ratio."""
    line = one_line_stop_at(H.tree_usda(FRICTION_AND_A_CONE_ON_A_THIN_ROD), 0.5065, duration=1.0)
    assert "/J4 off by" in line and "turned at" not in line
    thin = re.search(r"; /L2, a body of that joint, has an inertia about one axis ([0-9.e-]+) of its largest "
                     r"\(a thin body", line)
    assert thin is not None, line
    assert float(thin.group(1)) == pytest.approx(1e-6, rel=0.01)


def test_a_step_that_fails_from_its_warm_start_is_tried_cold_at_the_floor():
    """The tree above run on to 2 s: at t = 1.557 s the limit (-170 deg) and the cone hold the
    rod with opposing impulses of 0.61 and 1.1 N s (near-dependent rows through its axial inertia,
    1e-6 of its largest); the next step's warm start, those impulses on the turned rod, spins it
    half a turn, and every try from 1 ms down to 1/256 ms diverged from it. One more try at the
    floor with the impulses started from zero converges, and the run goes on: 2 s at 1, 0.9 and
    0.8 ms, every joint within the tolerance (runs that never fail at the floor are unchanged)."""
    text = H.tree_usda(FRICTION_AND_A_LIMIT_ON_HINGES_ABOUT_A_THIN_ROD)
    for dt in (1e-3, 0.9e-3, 0.8e-3):
        res = check_robust(text, duration=2.0, dt=dt)
        assert res is not None, f"the run at {dt} s stopped (one line above)"


@CI
@given(loops())
def test_loops_run_or_fail_cleanly(mech):
    note(H.planar_usda(mech))
    check_robust(H.planar_usda(mech))


@CI
@given(links(n_max=3, with_limits=False, oracle=True))
def test_trees_match_mujoco(lks):
    check_tree_accuracy(lks)


def _folded_fourbar():
    """Found by the long campaign: a 31.6 kg crank drives a 1 kg coupler and a 0.1 kg rocker that
    start side by side, 11 mm apart at their feet. Near this fold the motion amplifies its start
    200x (1e-8 rad of crank angle moves the bodies 1.9e-6 m at 0.5 s), so the reference must
    integrate the stage's own float32 numbers: from the float64 ones it was 1.5e-6 m off, from
    the stage's 4.7e-9 m."""
    def inert(m, L):
        it = m * (L * L / 12 + 0.02 ** 2 / 4)
        return (it, it, it)
    masses = [31.622776601683793, 1.0, 0.1]
    return H.fourbar(1.48907622, 1.5, 1.0, 1.0, 0.0, masses,
                     [inert(masses[0], 1.5), inert(masses[1], 1.0), inert(masses[2], 1.0)], False)


@CI
@given(loops())
@example(_folded_fourbar())
def test_loops_match_planar_reference(mech):
    check_loop_accuracy(mech)


@CI
@given(limited_pendulums())
# found by the long campaign (seed 530): a range of exactly 360 deg drawn at its shared stop; the
# stage's float32 frames put the pose on the lower bound's turn, from which the rod falls upwards
@example((H.Link(parent=-1, kind="revolute", axis=0, length=1.0, mass=1.0, ratio=1.0,
                 rot=(0.0, -0.7071067811865475, -0.7071067811865477, 0.0), jrot=(0.0, 0.0, 1.0, 0.0),
                 q0=180.99999999999997), (-179.0, 181.0)))
def test_revolute_limits(case):
    check_limit(*case)


@CI
@given(sequence_limited_rods())
def test_sequence_angle_limits_match_mujoco(lk):
    check_sequence_limit(lk)


@CI
@given(middle_limited_rods())
# a horizontal rod that swings down through rotY = 90 deg onto its bound at 120 deg (t = 0.32 s):
# the x-y-z measurement turns back at 90 deg, so the bound was never reached and the rod swung on
# to 180 deg, 0.15 m from MuJoCo's three hinges at 0.5 s (now 4e-5 m)
@example(H.Link(-1, "d6", free=(False, False, False, True, True, True), length=0.3, radius=0.02,
                limits={4: (-30.0, 120.0)}))
def test_middle_angle_limits_past_the_lock_match_mujoco(lk):
    check_sequence_limit(lk)


@pytest.mark.xfail(strict=True, reason="known defect: a limit on the last x-y-z angle held on the sequence's lock "
                   "(docs/solver.md, Stop 36); remove this mark when it holds")
@pytest.mark.parametrize("length, ratio, q", [
    (0.5906265362174411, 0.1, (-4.225676173476561e-65, 0.35120143197506554, -0.9362999274691115, -2.943274312595503e-65)),
    (0.3574996589352855, 1.0, (0.0, 0.8501502026305809, -0.5265402481930342, 0.0))], ids=["ratio-0.1", "ratio-1"])
def test_sequence_limit_held_on_the_lock(length, ratio, q):
    """Found by the property above (at 60 and at 30 examples): rotZ in [0, 45] deg on a rod whose
    joint frame is its body frame, so it starts on the lower bound. The held limit drives rotY
    onto the lock itself (-90.0 deg at the step start) and the step stops (t = 0.3716 and
    0.2893 s). There the branch the unwrapped angle is on is ambiguous, and the sign that h takes
    from it flips between iterates (taking it from the step start instead broke runs that cross
    the lock within a step; 40 random rods of the property's kind at another seed all ran)."""
    check_sequence_limit(H.Link(-1, "d6", free=(False, False, False, True, True, True), length=length, radius=0.02,
                                ratio=ratio, rot=q, jrot=q, limits={5: (0.0, 45.0)}), strict=True)


# ----------------------------------------------------------------------------- minimal examples found
TOPPLE = tuple(H.qaxis([0, 1, 0], -1.0))  # a 0.5 m rod 57 deg above horizontal: falls over, q reaches 295 deg


def test_minimal_huge_limit_does_not_hang():
    check_robust(H.tree_usda([H.Link(-1, "revolute", axis=1, rot=TOPPLE, limits={4: (-1e30, 1e30)})]))


def test_minimal_start_on_the_lower_bound_holds():
    """Found by the long campaign: a rod authored exactly at its 10 deg lower limit (range
    [10, 400] deg) falling towards it. The pose's angle comes back a hair below 10 deg (float32
    quaternions); the start must be on the bound, not a whole turn up at 370 deg, where the rod
    then fell 180 deg through its limit."""
    check_limit(H.Link(-1, "revolute", axis=1, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0), q0=10.0),
                (10.0, 400.0))


def test_minimal_170_limit_waits_until_reached():
    check_limit(H.Link(-1, "revolute", axis=1, rot=TOPPLE), (-170.0, 170.0))



# A Cardan (universal) joint: rotX, rotY free, rotZ locked; the rod lies along world x and the
# joint's x axis along world y, so the rod swings down about its first axis and spins about the
# second (its own axis, started at 300 deg/s).
CARDAN = dict(kind="d6", free=(False, False, False, True, True, False), axis=1,
              jrot=tuple(H.qaxis([0, 0, 1], math.pi / 2)))


def cardan_angles(res, lk):
    """The joint's Cardan angles (a about e0_x, then b about e1_y) over time, from the body's
    orientation: frame 1 = rot(t) * conj(rot(0)) * jrot for a root link."""
    rot = res[3][:, 0, 0]  # xyzw
    qj = np.asarray(lk.jrot, float)
    r0 = np.array([rot[0, 3], *rot[0, :3]])
    E0 = H.qmat(qj)
    a, b = [], []
    for r in rot:
        E1 = H.qmat(H.qmul(H.qmul(np.array([r[3], *r[:3]]), H.qconj(r0)), qj))
        a.append(math.atan2(E1[:, 1] @ E0[:, 2], E1[:, 1] @ E0[:, 1]))
        b.append(math.atan2(E0[:, 0] @ E1[:, 2], E0[:, 0] @ E1[:, 0]))
    return np.degrees(np.unwrap(a)), np.degrees(np.unwrap(b))


def test_thin_rod_on_a_ball_joint_keeps_its_energy():
    """The ball-joint thin rod above (axial inertia 2e-8 kg m^2) runs through its hard steps as a
    second-order integrator should: no friction, no damping, so the total energy is constant but
    for the symplectic step's O(h^2) swing. Two hard passages (0.53-0.55 s and 0.73-0.76 s) have
    steps retried smaller at 1, 0.5, 0.25 and 0.125 ms (49 / 46 / 34 / 10 of them), none at
    0.0625 ms. Before the first (t <= 0.52 s) the energy error is second order: 3.0e-5 / 7.5e-6 /
    1.9e-6 / 4.8e-7 / 1.2e-7 J (ratio 4.0 a halving). Over the whole second it is 0.042 / 0.021 /
    0.011 / 0.0080 / 1.9e-4 J against 14.6 J of peak kinetic energy: in the passages the 1 m link
    spins at up to 11,000 rad/s, h w = 1.4 rad a step even at 0.125 ms, and they lose a few mJ
    until the steps resolve that (docs/solver.md, "Convergence, never assumed"). Bounds:
    second order (8x at 4x smaller steps, 16x expected) before the passages; 2 % of the peak at
    1 ms and 0.1 % at 0.25 ms over the second (a step that stopped converging, or an update taken
    back wrongly, breaks either)."""
    err, early = {}, {}
    for dt in (1e-3, 2.5e-4):
        r = H.simulate_text(H.tree_usda(THIN_ROD_ON_BALL_JOINT), duration=1.0, dt=dt, fps=100, record="world")
        ke = r.channel("/Scene", "kineticEnergy")[:, 0]
        e = ke + r.channel("/Scene", "potentialEnergy")[:, 0]
        err[dt] = float(np.max(np.abs(e - e[0])))
        early[dt] = float(np.max(np.abs(e - e[0])[r.times <= 0.52]))
        assert float(np.max(r.max_constraint_error)) <= RESIDUAL_TOL
    assert ke.max() > 10.0  # it really swings (14.6 J)
    assert early[2.5e-4] <= early[1e-3] / 8, early
    assert err[1e-3] <= 0.02 * ke.max(), err
    assert err[2.5e-4] <= 1e-3 * ke.max(), err


def test_cardan_joint_matches_mujoco():
    """Two free rotations are a Cardan joint (MuJoCo: two hinges in one body); a thin rod on one
    and a box on a second with another locked axis."""
    check_tree_accuracy([H.Link(-1, **CARDAN, ratio=1e-3, rot=TOPPLE),
                         H.Link(0, "d6", free=(False,) * 3 + (False, True, True), shape="box", ratio=0.3,
                                rot=tuple(H.qaxis([1, 0, 0], 0.4)), jrot=tuple(H.qaxis([0, 1, 1], 0.7)))],
                        strict=True)


def test_cardan_limits_hold_through_90_degrees():
    """The rod swings down onto the first angle's +-80 deg limit while it spins onto the second's
    +-30 deg. Measured about a frame-0 axis, the second angle would be singular at a = 90 deg
    (that stage stopped with 'did not converge'); about e1's axis both are exact."""
    lk = H.Link(-1, **CARDAN, omega=300.0, limits={3: (-80.0, 80.0), 4: (-30.0, 30.0)})
    res = check_robust(H.tree_usda([lk]), duration=1.0)
    assert res is not None, "the Cardan joint with limits must simulate"
    a, b = cardan_angles(res, lk)
    # both limits are reached and hold to the solver's residual (1e-6 rad is RESIDUAL_TOL)
    assert 79.9 < np.max(np.abs(a)) <= 80.0 + 1e-4, f"a in [{a.min():.3f}, {a.max():.3f}] deg"
    assert 29.9 < np.max(np.abs(b)) <= 30.0 + 1e-4, f"b in [{b.min():.3f}, {b.max():.3f}] deg"



def xyz_angles(res, lk):
    """Frame 1 relative to frame 0 as Rx(q0) Ry(q1) Rz(q2), over time (deg), for a root link."""
    from scipy.spatial.transform import Rotation

    rot = res[3][:, 0, 0]  # xyzw
    qj = np.asarray(lk.jrot, float)
    r0 = np.array([rot[0, 3], *rot[0, :3]])
    out = []
    for r in rot:
        q1 = H.qmul(H.qconj(qj), H.qmul(H.qmul(np.array([r[3], *r[:3]]), H.qconj(r0)), qj))  # wxyz
        out.append(Rotation.from_quat([q1[1], q1[2], q1[3], q1[0]]).as_euler("XYZ"))  # intrinsic x-y-z
    return np.degrees(np.unwrap(np.array(out), axis=0))


def test_three_rotation_limits_are_xyz_angles():
    """A joint with three free rotations (MuJoCo's three hinges in one body, a humanoid's hip)
    limits the angles of its x-y-z sequence. The rod falls 60 deg about y onto its limit while it
    spins about x and z onto theirs; per-axis twist angles about frame 0's axes would break those
    limits by degrees at such deflections (the merged humanoid hip then stopped on landing)."""
    lk = H.Link(-1, "d6", free=(False,) * 3 + (True,) * 3, axis=0, omega=400.0,
                jrot=tuple(H.qaxis([0, 0, 1], 0.3)),
                limits={3: (-25.0, 25.0), 4: (-10.0, 60.0), 5: (-35.0, 35.0)})
    res = check_robust(H.tree_usda([lk]), duration=1.0)
    assert res is not None, "the three-rotation joint with limits must simulate"
    q = xyz_angles(res, lk)
    lo, hi = np.array([-25.0, -10.0, -35.0]), np.array([25.0, 60.0, 35.0])
    # every limit holds to the solver's residual (1e-6 rad = 6e-5 deg; 1e-4 deg leaves round-off)
    assert np.all(q >= lo - 1e-4) and np.all(q <= hi + 1e-4), f"angles {q.min(0)} .. {q.max(0)} deg"
    # and the motion does reach them: x at a limit while y is far from zero
    assert np.max(np.abs(q[:, 0])) > 24.9 and q[:, 1].max() > 59.9, f"angles {q.min(0)} .. {q.max(0)} deg"


def test_three_rotation_joint_swings_through_the_sequence_lock_with_a_limit_on_the_last_angle():
    """Found by the long campaign (seed 34, the friction property): a rod on a joint with three free
    rotations (and a free slide) swings down in a vertical plane, through the x-y-z sequence's
    lock (middle angle 90 deg), with a +-170 deg limit on the last angle, which the motion keeps
    at 0. The angles are measured with the middle one within +-90 deg, so past the lock the first
    and last read 180 deg more (the decomposition's other branch); counted as a turn, the last
    angle stood 10 deg past its limit and the step stopped at t = 0.4834 s. MuJoCo swings it
    through: the rod's end at (0.49998, 0, -0.00405) m after 1 s (the same at dt 1e-3 and 1e-4
    s). Measured: 3.5e-7 m from MuJoCo's at dt 1e-3 s, 8.7e-8 m at 5e-4 s (second order), so
    1e-6 m."""
    lk = H.Link(-1, "d6", free=(False, True, False, True, True, True), axis=0, length=1.0, radius=0.02,
                rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0), limits={5: (-170.0, 170.0)})
    res = check_robust(H.tree_usda([lk]), duration=1.0)
    assert res is not None, "the swing through the lock must simulate"
    ref = H.mujoco_positions([lk], 1.0, 1e-4)
    assert np.max(np.abs(res[2][-1, 0, 0] - ref[0])) < 1e-6


# a rod on a joint with three free rotations and a free slide, swinging down a vertical plane
# through the x-y-z sequence's lock (middle angle 90 deg), its first and last angles kept at 0
LOCK_SWING_ROD = H.Link(-1, "d6", free=(False, True, False, True, True, True), axis=0, length=1.0, radius=0.02,
                        rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0))


def on_root_joint(text, lines, schema=None):
    """tree_usda's text with attribute lines (USD text) on its root joint J0 (a d6 PhysicsJoint),
    and schema applied to it when given."""
    schemas = 'def PhysicsJoint "J0" ( prepend apiSchemas = ['
    body1 = "rel physics:body1 = </L0>"
    assert schemas in text and body1 in text
    if schema is not None:
        text = text.replace(schemas, f'{schemas}"{schema}", ')
    return text.replace(body1, body1 + "".join(f"\n    {line}" for line in lines))


def with_drive(text, dof, **attrs):
    """tree_usda's text with a PhysicsDriveAPI on DOF dof of its root joint J0 (attrs: drive:dof:physics:*)."""
    return on_root_joint(text, [f"float drive:{dof}:physics:{k} = {float(v)!r}" for k, v in attrs.items()],
                         f"PhysicsDriveAPI:{dof}")


# a velocity motor turning the root joint's middle angle at 120 deg/s
ROTY_VELOCITY_MOTOR = (
    'def MbdMotor "M" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) {\n    rel mbd:joint = </J0>\n'
    '    uniform token mbd:dof = "rotY"\n    uniform token mbd:mode = "velocity"\n'
    '    uniform token mbd:function:type = "constant"\n    double mbd:function:value = 120\n}\n')


@pytest.mark.parametrize("dof", ["rotX", "rotZ"])
def test_a_damper_on_a_three_rotation_joint_swings_through_the_sequence_lock(dof):
    """The rod of the test above without the limit, with a damper (a drive of stiffness 0,
    damping 0.5 N m s/deg, target speed 0) on the first or last angle. The damper measures the angle's
    turn within each step; passing the lock, that read a half turn and the step stopped at
    t = 0.4834 s ("diverged"). The motion keeps both angles still, so the damper exerts nothing
    and the rod swings as without it: 3.5e-7 m from MuJoCo's at dt 1e-3 s, 8.7e-8 m at 5e-4 s, as
    above, so 1e-6 m."""
    lk = LOCK_SWING_ROD
    text = with_drive(H.tree_usda([lk]), dof, stiffness=0.0, damping=0.5, targetVelocity=0.0)
    res = check_robust(text, duration=1.0)
    assert res is not None, "the damped swing through the lock must simulate"
    ref = H.mujoco_positions([lk], 1.0, 1e-4)
    assert np.max(np.abs(res[2][-1, 0, 0] - ref[0])) < 1e-6


@pytest.mark.parametrize("dof", ["rotX", "rotZ"])
@pytest.mark.parametrize("kind", ["drive", "motor"])
def test_a_target_on_a_three_rotation_joint_holds_past_the_sequence_lock(kind, dof):
    """The rod of the tests above with its first or last angle held at 0 by a position drive
    (stiffness 2 N m/deg, damping 0.5 N m s/deg) or a position motor. Past the lock that angle is
    measured 180 deg more (the decomposition's other branch), and the target was compared with the
    measurement: the drive pulled the rod half a turn and the step stopped (t = 0.7146 s on rotZ,
    0.9375 s on rotX; the motor's steps stopped too). The target is now compared with the angle itself,
    which the motion keeps at 0, so neither exerts anything and the rod swings as without them:
    3.5e-7 m from MuJoCo's at dt 1e-3 s, as above, so 1e-6 m. (With a target of 30 deg the drive
    holds a torque through the lock, where the angle's split from the other is undefined: MuJoCo's
    three hinges go unstable there at 1e-4 and 2.5e-5 s, t = 0.483 s, and usdphys stops with the
    line naming the lock.)"""
    lk = LOCK_SWING_ROD
    text = H.tree_usda([lk])
    if kind == "drive":
        text = with_drive(text, dof, stiffness=2.0, damping=0.5, targetPosition=0.0)
    else:
        text += (f'def MbdMotor "M" {{\n    rel mbd:joint = </J0>\n    uniform token mbd:dof = "{dof}"\n'
                 '    uniform token mbd:mode = "position"\n    double mbd:target = 0\n}\n')
    res = check_robust(text, duration=1.0)
    assert res is not None, "the held swing through the lock must simulate"
    ref = H.mujoco_positions([lk], 1.0, 1e-4)
    assert np.max(np.abs(res[2][-1, 0, 0] - ref[0])) < 1e-6


def test_three_rotation_joint_holds_a_limit_on_the_first_angle_past_the_sequence_lock():
    """Found by the same campaign once the test above passed: the same rod with its joint frame
    turned (the swing no longer in a plane of the sequence), +-30 deg on the first angle. The
    limit engages at t = 0.31 s and holds the rod while rotY swings through the sequence's lock
    (to 137 deg at 1 s). Near the lock the first and last angles turn about almost one axis and
    their Jacobians grow as 1 / cos of the middle angle: with the limit measured as the angle the
    step stopped at t = 0.5315 s. Measured as sequence_limit's h (unit Jacobian on the limit's
    surface) it runs through. Reference: MuJoCo's three hinges in one body with the same range,
    an inelastic (overdamped) limit, RK4 at 1e-5 s: 4.6e-4 m apart after 1 s (5.8e-4 at 5e-6 s,
    4.3e-4 at damping ratio 50: MuJoCo's soft limit; usdphys at 1 and 0.5 ms differs by 6e-5 m)."""
    lk = H.Link(-1, "d6", free=(False, True, False, True, True, True), axis=0, length=1.0, radius=0.02,
                rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.9238795042037964, -0.3826834261417389, 0.0),
                limits={3: (-30.0, 30.0)})
    res = check_robust(H.tree_usda([lk]), duration=1.0, dt=5e-4)
    assert res is not None, "the swing past the lock must simulate"
    ref = H.mujoco_positions([lk], 1.0, 1e-5, rotation_limits=True)
    assert ref is not None
    assert np.max(np.abs(res[2][-1, 0, 0] - ref[0])) < 1e-3


def test_a_drive_on_the_middle_angle_reaches_a_target_past_the_sequence_lock():
    """The rod of the tests above with a position drive on its middle angle (rotY; stiffness
    0.5 N m/deg, damping 0.5 N m s/deg) to 120 deg: the rod swings up past the sequence's lock
    (90 deg, where the measured middle angle turns back) and settles at 115.9 deg, where gravity
    balances the drive. The drive compared its target with the measurement, which never reads
    more than 90 deg, and held the rod at the lock (0.22 m from MuJoCo after 3 s). The row now
    measures the angle followed through the lock: 1.1e-4 m from MuJoCo's three hinges with a
    position actuator of the same gains (RK4 at 1e-4 s) at dt 1e-3 s, 5.6e-5 m at 5e-4 s (the
    drive's implicit force converges at first order), so 5e-4 m."""
    lk = LOCK_SWING_ROD
    text = with_drive(H.tree_usda([lk]), "rotY", stiffness=0.5, damping=0.5, targetPosition=120.0)
    res = check_robust(text, duration=3.0)
    assert res is not None, "the drive past the lock must simulate"
    per_rad = 180.0 / math.pi  # USD's angular drive gains are per degree
    ref = H.mujoco_hinge_positions(lk, 3.0, 1e-4, 1, position_actuator=(0.5 * per_rad, 0.5 * per_rad,
                                                                       math.radians(120.0)))
    assert np.max(np.abs(res[2][-1, 0, 0] - ref)) < 5e-4


def test_a_velocity_motor_turns_the_middle_angle_past_the_sequence_lock():
    """A velocity motor on the rod's middle angle, 120 deg/s for 1 s: a rheonomic constraint, so
    the rod turns about the joint's y axis by exactly 120 t deg, from (-0.5, 0, 0) through the
    lock (t = 0.75 s) to (0.25, 0, 0.433). The motor compared its reference angle with the
    measurement, which cannot pass 90 deg, and the step stopped at t = 0.75 s. Every frame now
    holds the exact pose to the solver's tolerance (2.5e-13 m off at dt 1e-3 s; 1e-9 m asserted)."""
    res = check_robust(H.tree_usda([LOCK_SWING_ROD]) + ROTY_VELOCITY_MOTOR, duration=1.0)
    assert res is not None, "the motor past the lock must simulate"
    pos = res[2][:, 0, 0]
    angle = np.radians(120.0) * np.arange(len(pos)) / 100.0  # frames at 100 per second
    exact = np.stack([-0.5 * np.cos(angle), np.zeros_like(angle), 0.5 * np.sin(angle)], axis=1)
    assert len(pos) == 101 and np.max(np.abs(pos - exact)) < 1e-9


def test_recorded_angles_of_a_three_rotation_joint_follow_the_swing_past_the_sequence_lock():
    """The velocity-motor rod above with rotY limited to +-170 deg (so that the joint records its
    x-y-z angles), recorded at 100 frames a second: rotY reads 120 t deg and its rate 120 deg/s
    through the lock, rotX and rotZ stay 0 (MuJoCo's three hinge coordinates). The recording
    took each frame's angle nearest its prediction modulo 2 pi: past the lock rotX and rotZ read
    180 deg and rotY turned back at 90 deg (84, 72, 60 deg at 0.8, 0.9, 1 s, rate -120 deg/s).
    Measured: 2e-12 deg off, rates 4e-5 deg/s (the frames' central velocities)."""
    lk = dataclasses.replace(LOCK_SWING_ROD, limits={4: (-170.0, 170.0)})
    r = H.simulate_text(H.tree_usda([lk]) + ROTY_VELOCITY_MOTOR, duration=1.0, dt=1e-3, fps=100, record="joints")
    t = np.arange(101) / 100.0
    assert np.max(np.abs(r.channel("/J0", "coordinate:rotY")[:, 0] - 120.0 * t)) < 1e-9
    assert np.max(np.abs(r.channel("/J0", "rate:rotY")[1:, 0] - 120.0)) < 1e-3
    for name in ("rotX", "rotZ"):
        assert np.max(np.abs(r.channel("/J0", f"coordinate:{name}")[:, 0])) < 1e-9, name


def test_recorded_middle_angle_follows_swings_back_and_forth_through_the_lock_at_coarse_frames():
    """The rod with rotY limited to +-170 deg and a lightly damped drive to 80 deg (0.5 N m/deg,
    0.001 N m s/deg): it swings from 0 up to 150 deg and back, across the lock (90 deg) 8 times in
    3 s, recorded at 10 frames a second (up to 62 deg a frame). The recorded rotY must
    be the rod's own angle about the joint's y axis, read from its pose (a planar swing). Taking
    the branch from the reading nearest an extrapolation of the last frames (this stop's first
    version) was 146 deg off at such frames; the branch is the first angle's, followed modulo pi
    as the solver does: 3e-14 deg, so 1e-9."""
    lk = dataclasses.replace(LOCK_SWING_ROD, limits={4: (-170.0, 170.0)})
    r = H.simulate_text(with_drive(H.tree_usda([lk]), "rotY", stiffness=0.5, damping=0.001, targetPosition=80.0),
                      duration=3.0, dt=1e-3, fps=10, record="joints")
    rot_y = r.channel("/J0", "coordinate:rotY")[:, 0]
    p = r.positions[:, 0, 0]  # the rod's centre, 0.5 m out along (-cos q, 0, sin q)
    from_pose = np.degrees(np.unwrap(np.arctan2(p[:, 2], -p[:, 0])))
    crossings = np.count_nonzero(np.diff(np.sign(from_pose - 90.0)) != 0)
    assert crossings >= 3 and from_pose.max() > 140.0, (crossings, from_pose.max())
    assert np.max(np.abs(rot_y - from_pose)) < 1e-9


def test_a_damper_on_the_middle_angle_swings_through_the_sequence_lock():
    """NewtonJointAPI viscous damping (0.002 N m s/deg) on the rod's middle angle while the rod
    swings down through the lock (-90 deg) to -163.7 deg at 1 s. The damper's turn was the
    measurement's, which turns back within the step that crosses the lock: 2.6e-4 m from MuJoCo at
    dt 1e-3 s and 1.3e-4 m at 5e-4 s (first order: one step's damping wrong). Measured on the
    angle itself: 5.5e-7 and 1.4e-7 m (second order), so 2e-6 m. Reference: MuJoCo's three
    hinges, the middle one damped alike (RK4 at 1e-4 s; 5e-5 s agrees to 1e-9 m)."""
    lk = LOCK_SWING_ROD
    text = on_root_joint(H.tree_usda([lk]), ['uniform token[] newton:dofs = ["rotY"]',
                                             "uniform float[] newton:viscousDamping = [0.002]"], "NewtonJointAPI")
    res = check_robust(text, duration=1.0)
    assert res is not None, "the damped swing through the lock must simulate"
    ref = H.mujoco_hinge_positions(lk, 1.0, 1e-4, 1, joint_attrs=f'damping="{0.002 * 180.0 / math.pi!r}"')
    assert np.max(np.abs(res[2][-1, 0, 0] - ref)) < 2e-6


def test_a_soft_limit_on_the_middle_angle_acts_past_the_sequence_lock():
    """The rod with rotY in [-120, 30] deg as a soft limit (newton:limitStiffness 0.5 N m/deg,
    limitDamping 0.01 N m s/deg: a spring-damper acting beyond the bound, a law row). Swinging
    down through the lock (-90 deg) it meets the spring at -120 deg and hangs back. The law read
    the measurement's turn, which turns back at the lock and never reaches -120 deg: the rod swung
    as if unlimited, 0.52 m from the limited swing. Reference: the same rod on a joint with rotY
    alone free (a plain twist row, no sequence), whose soft limit is the same law: now 6e-16 m
    apart at every frame, so 1e-9 m."""
    runs = []
    for free in ((False, True, False, True, True, True), (False, True, False, False, True, False)):
        lk = H.Link(-1, "d6", free=free, axis=0, length=1.0, radius=0.02, rot=(0.0, 0.0, 1.0, 0.0),
                    jrot=(0.0, 0.0, 1.0, 0.0), limits={4: (-120.0, 30.0)})
        text = on_root_joint(H.tree_usda([lk]), ["float newton:limitStiffness = 0.5",
                                                 "float newton:limitDamping = 0.01"])
        res = check_robust(text, duration=1.0)
        assert res is not None, "the soft limit past the lock must simulate"
        runs.append(res[2][:, 0, 0])
    unlimited = H.mujoco_positions([LOCK_SWING_ROD], 1.0, 1e-4)[0]
    assert np.linalg.norm(runs[1][-1] - unlimited) > 0.1, "the limit must act in this swing"
    assert np.max(np.abs(runs[0] - runs[1])) < 1e-9


# Found by the long campaign of seed 381 (friction property): a light thin rod (axial ratio 1e-6,
# 0.03 kg) held by 10 N m of joint friction on a tilted hinge at the tip of a swinging capsule.
THIN_ROD_STUCK_BY_FRICTION = [
    H.Link(-1, "spherical", length=1.0, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0)),
    H.Link(0, "revolute", length=0.25, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0)),
    H.Link(0, "revolute", length=0.5, mass=0.03162277660168379, ratio=1e-6, rot=(0.0, 0.0, 1.0, 0.0),
           jrot=(-0.3314135670661926, 0.0, 0.5, 0.8001031279563904), friction=10.0)]


def test_a_friction_row_is_clamped_only_on_converged_impulses():
    """The friction holds the thin rod (it needs ~0.02 N m of the 10). At dt 1 ms the Newton
    iteration of the first active-set pass does not converge at t = 0.236 and 0.237 s (the rod's
    axial spin is barely resolved), and its unconverged impulse on the friction row (4.2 against a
    bound of 0.01 N m s) clamped the row: the joint slid, moved along its own friction impulse and
    stuck again, six passes in turn. The last pass re-stuck it with no pass left to solve for it,
    and the step was accepted with that row's residual (0.01 rad) left out, since the rank
    decision had not seen the row: the joint then slipped at 285 deg/s and every step size failed
    at t = 0.238 s. Now only a converged pass may clamp a force to its bound (the unconverged step
    is retried smaller), and a step whose active set has not settled when the passes run out is
    judged on the residuals of the rows that entered last; either alone carries this run through:
    8.6e-7 m from the run at 0.5 ms (1e-5 m asserted: ten times that). MuJoCo (frictionloss, RK4
    at 1e-4 s) has the two heavy links within 1e-6 m and the thin rod 3.9e-4 m away: its friction
    is a soft constraint that lets the joint creep (0.014 rad/s at t = 0.236 s) where usdphys'
    sticks, so 1e-3 m."""
    text = H.tree_usda(THIN_ROD_STUCK_BY_FRICTION)
    res = check_robust(text)
    assert res is not None, "the tree must run at 1 ms"
    fine = check_robust(text, dt=5e-4)
    assert fine is not None
    assert np.max(np.abs(res[2][-1, 0] - fine[2][-1, 0])) < 1e-5
    ref = H.mujoco_positions(THIN_ROD_STUCK_BY_FRICTION, 1.0, 1e-4)
    assert ref is not None
    assert np.max(np.linalg.norm(res[2][-1, 0] - ref, axis=1)) < 1e-3


def one_line_stop_at(text, t, duration):
    """The one line of a run at 1 ms expected to stop at t (s, within 1 ms)."""
    res = H.run_usdphys(text, timeout=120.0, duration=duration, dt=1e-3, fps=100)
    assert res[0] == "usdphys_error", res[:2]
    line = res[1].strip()
    assert "\n" not in line, line
    when = re.search(r"the step at t = ([0-9.]+) s did not converge", line)
    assert when is not None and abs(float(when.group(1)) - t) < 1e-3, line
    return line


def test_a_stop_at_the_sequence_lock_names_it():
    """Still open: both first and last angles limited (+-10 and +-60 deg) on the rod above. At the
    lock their two limits' surfaces have opposite normals (rotX and rotZ turn about one axis) and
    the step stops at t = 0.5166 s. The one line says where rotY was and what to change, instead
    of only that the joint did not converge (each limit alone runs through)."""
    lk = H.Link(-1, "d6", free=(False, True, False, True, True, True), axis=0, length=1.0, radius=0.02,
                rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.9238795042037964, -0.3826834261417389, 0.0),
                limits={3: (-10.0, 10.0), 5: (-60.0, 60.0)})
    line = one_line_stop_at(H.tree_usda([lk]), 0.5166, duration=1.0)
    middle = re.search(r"its (rot[XZ]) is an angle of the x-y-z sequence, and rotY was at (-?[0-9.]+) deg", line)
    assert middle is not None, line
    assert 80.0 <= abs(float(middle.group(2))) <= 90.0
    assert f"limit rotY inside (-90, 90) deg, or leave {middle.group(1)} without limits and drives" in line


# Found by the long campaign of seed 420 (friction property): a thin rod on a ball joint whose
# rotZ is limited to 45 deg, below a Cardan root, carrying a prismatic link with 0.1 N of friction.
# The held limit drives rotY onto the lock (-90.0 deg at t = 0.6933 s, at 1, 0.5 and 0.25 ms; without
# the limit the tree runs 3 s), and the iteration diverges on the prismatic joint below it.
ANOTHER_JOINTS_LIMIT_ON_THE_LOCK = [
    H.Link(-1, "d6", free=(False, False, False, False, True, True), length=1.0, radius=0.02,
           rot=(0.07654655446197431, -0.5125943710327117, 0.8552120414175532, 0.0),
           jrot=(0.05852480232715607, -0.9215272665023804, 0.18330316245555878, 0.33728674054145813)),
    H.Link(-1, "revolute", length=1.0, radius=0.02, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0)),
    H.Link(0, "d6", free=(False, False, False, True, True, True), length=0.173828125, radius=0.02, ratio=0.01,
           rot=(0.0, 0.9495281805930367, 0.3136817403988916, 0.0),
           jrot=(-0.3940180540084839, 0.4968118369579315, 0.5618522763252258, 0.5312718152999878),
           attach=0.0, limits={5: (-math.inf, 45.0)}),
    H.Link(2, "prismatic", axis=2, length=0.765625, radius=0.02, mass=0.07498942093324558, ratio=0.01,
           rot=(-0.18889539204367714, 0.05477531003921751, -0.24392553250963211, -0.9496412643017706),
           jrot=(0.7071067690849304, 0.0, 0.7071067690849304, 0.0), friction=0.1)]


def test_a_stop_at_the_lock_names_a_limit_on_another_joint():
    """The step stops on the joint below (ANOTHER_JOINTS_LIMIT_ON_THE_LOCK); the one line names
    the joint whose rotZ limit sits on the lock and where its rotY was, not only the joint the
    divergence ended on."""
    line = one_line_stop_at(H.tree_usda(ANOTHER_JOINTS_LIMIT_ON_THE_LOCK), 0.6933, duration=1.0)
    middle = re.search(r"/J2 has a limit on its rotZ, which is an angle of the x-y-z sequence, and rotY was at "
                       r"(-?[0-9.]+) deg, near the sequence's lock", line)
    assert middle is not None, line
    assert 80.0 <= abs(float(middle.group(1))) <= 90.0
    assert "limit rotY inside (-90, 90) deg, or leave rotZ without limits and drives" in line


def test_a_stop_on_a_fast_thin_body_names_it():
    """A rod of axial ratio 1e-5 on a Cardan joint (rotY, rotZ free) below a capsule on a ball
    joint: its joints leave it nearly free about its axis twice a turn of rotZ, and there it
    speeds up within a step (MuJoCo RK4 goes unstable on this tree at 1e-4 s, t = 0.545 s, and
    runs through at 2.5e-5 s). At 1 ms the step stopped at t = 0.8484 s (found by the long campaign
    of seed 370); since a step that fails from its warm start is tried cold at the floor, the run
    gets past that and stops at t = 2.068 s; at 0.5 ms it runs through 3 s. The one line names the
    body, how far it turned in one step and that it is thin, instead of only the joint's residual."""
    lks = [H.Link(-1, "spherical", free=(False,) * 6, axis=0, length=1.0, radius=0.02, ratio=1.0,
                  rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.0, 0.0, 1.0, 0.0)),
           H.Link(0, "d6", free=(False, False, False, False, True, True), axis=0, length=0.5, radius=0.02,
                  ratio=1e-5, rot=(0.0, 0.0, 1.0, 0.0), jrot=(0.7071067690849304, -0.5, 0.5, 0.0))]
    text = H.tree_usda(lks)
    line = one_line_stop_at(text, 2.068, duration=2.5)
    fast = re.search(r"/L1 turned at ([0-9.e+]+) deg/s at the step's start \(([0-9.]+) deg in one step\), and its "
                     r"inertia about one axis is ([0-9.e-]+) of its largest \(a thin body", line)
    assert fast is not None, line
    assert float(fast.group(2)) > math.degrees(0.1) and abs(float(fast.group(1)) * 1e-3 - float(fast.group(2))) < 0.1
    assert float(fast.group(3)) == pytest.approx(1e-5, rel=0.01)
    assert "try a smaller --dt" in line
    fine = check_robust(text, duration=2.5, dt=5e-4)  # the remedy the line gives
    assert fine is not None


# ----------------------------------------------------------------------------- long campaign
@pytest.mark.slow
@LONG
@given(links(n_max=6, with_friction=True))
def test_trees_run_or_fail_cleanly_long(lks):
    note(H.tree_usda(lks))
    check_robust(H.tree_usda(lks))


@pytest.mark.slow
@LONG
@given(links(n_max=6, with_friction=True))
def test_trees_with_joint_friction_run_long(lks):
    check_friction_runs(lks)


@pytest.mark.slow
@LONG
@given(loops())
def test_loops_run_or_fail_cleanly_long(mech):
    check_robust(H.planar_usda(mech))


@pytest.mark.slow
@LONG
@given(links(n_max=4, with_limits=False, oracle=True))
def test_trees_match_mujoco_long(lks):
    check_tree_accuracy(lks)


@pytest.mark.slow
@LONG
@given(loops())
def test_loops_match_planar_reference_long(mech):
    check_loop_accuracy(mech)


@pytest.mark.slow
@LONG
@given(limited_pendulums())
def test_revolute_limits_long(case):
    check_limit(*case)


# ----------------------------------------------------------------------------- oracle self-checks
def test_oracles_agree_on_a_textbook_pendulum():
    """The campaign's oracles themselves: MuJoCo and the planar DAE give the same simple pendulum,
    and usdphys matches both on a well-conditioned case (ratio 1, no limits)."""
    lk = H.Link(parent=-1, kind="revolute", axis=1, length=1.0, mass=1.0, ratio=1.0,
                rot=tuple(H.qaxis([0, 1, 0], -0.3)), jrot=(1.0, 0.0, 0.0, 0.0))
    ref = H.mujoco_positions([lk], 0.5, 1e-4)
    it = H.inertia(lk)
    mech = H.Planar("pendulum", [1.0], [tuple(it)], [1.0], np.array([0.5 * math.cos(0.3), 0.5 * math.sin(0.3), 0.3]),
                    [(0, np.array([-0.5, 0.0]), -1, np.array([0.0, 0.0]))], [])
    ref2, _ = H.planar_reference(mech, 0.5)
    assert np.max(np.abs(ref - ref2)) < 1e-8
    res = check_robust(H.tree_usda([lk]), duration=0.5, dt=1e-4)
    assert np.max(np.abs(H.body_positions(res, ["L0"]) - ref)) < 1e-6
