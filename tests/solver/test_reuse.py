"""Modified Newton across steps (step.py REFACTOR_EVERY / REFACTOR_RATE): the LDL factor of an
earlier step is reused for models with only equal rows and no contact, for models of equal
rows and limits on the steps in which no limit holds, and for models of equal rows, limits and
drives of fixed compliance with contact or drives (ModelData.reuse_factor); the converged steps
keep the 1e-12 residual, so closed loops stay closed. The secant acceleration (secant_weight)
of that frozen-matrix iteration."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usdphys.math3d import quat_rotate
from usdphys.usd.reader import read_stage
from usdphys.solver import Solver
from usdphys.types.model import Model

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "usd"


def test_fourbar_reuses_the_factorisation_and_stays_closed():
    model, _ = read_stage(str(ASSETS / "fourbar.usda"))
    model = model.replicate(2)
    s = Solver(model, "cpu")
    run = s.run(20, 100, 1e-3)  # 2 s
    st = s.newton_stats()
    steps = 2000
    assert s.m.equal_only == 1
    assert np.all(st["factorisations"] < 0.5 * steps)  # reused most steps
    assert np.all(st["updates"] >= steps)  # at least one Newton update per step
    assert run.max_constraint_error.max() <= 1e-12


def kept_and_fresh(model, frames, substeps, dt=1e-3):
    """The model run with the factor kept across steps (ModelData.reuse_factor) and with a fresh
    factor every step, the run to compare with: (runs, factorisations, solvers). Every step of
    both converges to 1e-12 at the full step."""
    runs, factors, solvers = [], [], []
    for reuse in (1, 0):
        s = Solver(model, "cpu")
        assert s.m.reuse_factor == 1
        s.m.reuse_factor = reuse
        runs.append(s.run(frames, substeps, dt))
        factors.append(s.newton_stats()["factorisations"][0])
        solvers.append(s)
        assert runs[-1].max_constraint_error.max() <= 1e-12 and runs[-1].reduced_steps.max() == 0
    return runs, factors, solvers


def test_joint_friction_keeps_the_factor_while_its_rows_stay_as_factorised():
    """A wheel spinning down on joint friction (4 N m against 2 kg m^2 at 3 rad/s: it slides for
    1.5 s, then sticks): its friction row slides (clamped, out of the factor) and then sticks
    (in it), so the factor is rebuilt where the row changes and kept on the other steps
    (kept_as_factorised: the rows kept, the hard set and the compliances are the factor's), with
    the motion of a fresh factor every step to round-off (both end every step at 1e-12)."""
    from test_joint_friction import newton_api, wheel
    from sim_helpers import stage

    model, _ = read_stage(stage(wheel(2.0, 3.0, newton_api(dofs=["angle"], dynamicFrictionEffort=[4.0])),
                                gravity=9.81))
    assert np.any(model.constraint_rows().mode == 0)
    runs, factors, _ = kept_and_fresh(model, 20, 100)
    assert factors[1] >= 2000 and factors[0] < 0.2 * factors[1]
    np.testing.assert_allclose(runs[0].rot, runs[1].rot, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs[0].pos, runs[1].pos, rtol=0, atol=1e-12)


def falling_chain(n, link=0.1):
    """n thin rods (1 kg, axial inertia 1e-6 of the transverse) hinged about y end to end,
    starting horizontal along x from a pivot at the origin: the free end falls fastest."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    t = link ** 2 / 12.0
    prev = -1
    for k in range(n):
        b = m.add_body(f"/rod{k}", 1.0, [1e-6 * t, t, t], pos=[(k + 0.5) * link, 0.0, 0.0])
        m.add_joint(f"/joint{k}", prev, b, pos0=[0.0, 0.0, 0.0] if prev < 0 else [link / 2, 0.0, 0.0],
                    pos1=[-link / 2, 0.0, 0.0], locked=[True, True, True, True, False, True])
        prev = b
    return m


def test_a_long_chain_converges_in_fewer_updates_with_the_secant_step():
    """Through a frozen (and often old) matrix each Newton update shrinks the residual by a
    fixed rate, 0.05-0.4 on the links of a long chain; the secant step lands the second update
    closer. 100 falling rods, 300 steps: 2.34 updates a step with it, 3.07 without (the plain
    chord iteration: the bound 2.6 lies between, ~10 % from each), every step to 1e-12 and none
    halved."""
    s = Solver(falling_chain(100), "cpu")
    run = s.run(300, 1, 1e-3)
    st = s.newton_stats()
    assert st["updates"][0] / 300 < 2.6
    assert st["factorisations"][0] / 300 < 0.3  # old factors still serve (a fresh one every step: 1)
    assert run.max_constraint_error[0] <= 1e-12 and run.reduced_steps[0] == 0


def _limited_chain(n, lim_deg):
    """falling_chain with every hinge limited to +-lim_deg (None: no limits)."""
    import math

    m = falling_chain(n)
    if lim_deg is not None:
        m.joint_lower[:, 4] = -math.radians(lim_deg)
        m.joint_upper[:, 4] = math.radians(lim_deg)
    return m


def test_a_limit_never_reached_leaves_the_run_bit_for_bit_and_at_its_speed():
    """A falling chain of ten thin rods with +-170 deg on every hinge, which its hinges never
    reach (they stay within 62 deg in 0.5 s), runs bit for bit as the same chain without limits,
    with the same Newton updates and factorisations: while no limit holds, a step is one of
    equal rows (the factor reused, the impulses extrapolated), and the inactive rows add exact
    zeros. Before, any limit row made every step rebuild its factor and start from the last
    impulse (3.6 updates and 1.0 factorisations a step instead of 2.7 and 0.16), and its poses
    left the free run's by round-off, which a thin rod's motion magnified to 1.9e-8 m (stop 40)."""
    free, limited = Solver(_limited_chain(10, None), "cpu"), Solver(_limited_chain(10, 170.0), "cpu")
    assert limited.m.hard_only == 1 and limited.m.equal_only == 0 and limited.R == free.R + 20
    a, b = free.run(50, 10, 1e-3), limited.run(50, 10, 1e-3)
    np.testing.assert_array_equal(a.pos, b.pos)
    np.testing.assert_array_equal(a.rot, b.rot)
    sa, sb = free.newton_stats(), limited.newton_stats()
    assert sb["updates"][0] == sa["updates"][0] and sb["factorisations"][0] == sa["factorisations"][0]
    assert sa["factorisations"][0] < 0.2 * 500


def test_a_limit_that_holds_rebuilds_the_factor_and_stays_held():
    """The same chain with +-20 deg: limits enter (by the prediction or at a pass's end) on steps
    that reuse an earlier factor, which is then rebuilt with this step's rows; every limit holds
    to the tolerance and the run converges at every step; steps with no limit held still reuse."""
    import math

    s = Solver(_limited_chain(10, 20.0), "cpu")
    run = s.run(50, 10, 1e-3)
    st = s.newton_stats()
    assert run.max_constraint_error[0] <= 1e-12 and run.reduced_steps[0] == 0
    assert 0.1 * 500 < st["factorisations"][0] < 500  # some steps rebuilt, some reused
    # hinge angles: each rod turns about y alone, so its body z stays in the x-z plane and the
    # angle between neighbours' z axes is the hinge's
    z = quat_rotate(run.rot[:, 0], [0.0, 0.0, 1.0])
    ang = np.arctan2(np.cross(z[:, :-1], z[:, 1:])[..., 1], np.einsum("fbi,fbi->fb", z[:, :-1], z[:, 1:]))
    assert np.max(np.abs(ang)) <= math.radians(20.0) + 1e-9
    assert np.max(np.abs(ang)) > math.radians(19.0)  # the limits were reached



def test_the_joint_pass_after_contact_reuses_the_first_passes_factor():
    """With contact a step runs the joint pass twice (without contact, then with its impulses).
    The second starts on the rows the first left as it factorised them, so it keeps that factor
    (factor_is_current) instead of building the same one again; and a model of equal rows,
    limits and drives of fixed compliance keeps its factor across steps with contact too
    (ModelData.reuse_factor), as a model of hard rows does without. A 2 kg bar hinged to the
    world at one end and resting on the floor through a sphere at the other takes 71
    factorisations in 500 steps where it took 1,001 (two a step) and then 557 (one a step), and
    rests: on the floor within the contact's slop, the hinge held to 1e-12. So with a damped
    drive on the hinge (71; 557 while drives were rebuilt every step). With an acceleration
    drive (its compliance scales with A's own diagonal, so A is rebuilt every step) it takes one
    a step through factor_is_current."""
    from usdphys.types.shapes import SHAPE_PLANE, SHAPE_SPHERE, table_from_specs

    def bar_on_floor(damping=None, accel=None):
        m = Model()
        m.gravity = np.array([0.0, 0.0, -9.81])
        r, L, hp = 0.02, 0.4, 0.3
        bar = m.add_body("/bar", 2.0, [0.005, 0.03, 0.03], pos=[-L / 2, 0, hp])
        m.add_joint("/hinge", -1, bar, pos0=[0, 0, hp], pos1=[L / 2, 0, 0], locked=[True] * 4 + [False, True],
                    drive_damping=damping, drive_accel=accel)
        m.shapes = table_from_specs([{"type": SHAPE_PLANE},
                                     {"type": SHAPE_SPHERE, "body": bar, "dims": (r, 0, 0), "pos": (-L / 2, 0, r - hp)}])
        return m

    L, hp = 0.4, 0.3
    damped = [0, 0, 0, 0, 1.0, 0]
    accel = [False] * 4 + [True, False]
    for damping, acc, least, most in ((None, None, 500 / 8, 0.2 * 500), (damped, None, 500 / 8, 0.2 * 500),
                                      (damped, accel, 500, 1.2 * 500)):
        s = Solver(bar_on_floor(damping, acc), "cpu")
        assert s.m.reuse_factor == (acc is None)
        run = s.run(500, 1, 1e-3)
        # reused: one every REFACTOR_EVERY = 8 steps (62), plus where the rank decision is renewed
        # or the iteration on the aged factor converged slowly: 71 (rebuilding A every step made
        # it 557, building the second pass's factor again 1,001). With an acceleration drive one
        # a step, and one more where the rank decision is renewed (every RANK_EVERY = 8
        # factorisations, which the kept factor cannot skip): 557, where building the second
        # pass's factor again made it 1,001
        assert least <= s.newton_stats()["factorisations"][0] < most, (damping, acc)
        # resting: contact leaves up to its slop (1e-5 m) of penetration alone, which tilts the bar
        # by at most that at its tip (4.2e-8 m at the centre here)
        np.testing.assert_allclose(run.pos[-1, 0, 0], [-L / 2, 0.0, hp], atol=1e-5)
        assert run.max_constraint_error[0] < 1e-12


def driven_chain(n, k, c, target, fmax=np.inf, limit=None, link=0.1):
    """n rods (1 kg, axial inertia a tenth of the transverse) hinged about y end to end from a
    pivot at the origin, starting horizontal along x, each hinge on a drive (stiffness k,
    damping c, target angle, force bound fmax) and limited to +-limit rad (None: no limit)."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    t = link ** 2 / 12.0
    prev = -1
    for j in range(n):
        b = m.add_body(f"/rod{j}", 1.0, [0.1 * t, t, t], pos=[(j + 0.5) * link, 0.0, 0.0])
        m.add_joint(f"/joint{j}", prev, b, pos0=[0.0, 0.0, 0.0] if prev < 0 else [link / 2, 0.0, 0.0],
                    pos1=[-link / 2, 0.0, 0.0], locked=[True] * 4 + [False, True],
                    drive_stiffness=[0, 0, 0, 0, k, 0], drive_damping=[0, 0, 0, 0, c, 0],
                    drive_target_pos=[0, 0, 0, 0, target, 0], drive_max_force=[np.inf] * 4 + [fmax, np.inf])
        if limit is not None:
            m.joint_lower[-1, 4], m.joint_upper[-1, 4] = -limit, limit
        prev = b
    return m


@settings(derandomize=True, max_examples=10, deadline=None, database=None)
@given(n=st.integers(2, 6), k=st.sampled_from([0.0, 2.0, 30.0]), c=st.floats(0.02, 3.0),
       target=st.floats(-0.6, 0.6), limit=st.sampled_from([None, 0.3, 1.0]))
def test_drives_keep_their_factor_across_steps_and_the_same_motion(n, k, c, target, limit):
    """Drives of fixed compliance keep an earlier step's factor (ModelData.reuse_factor): the
    iteration matrix is old, the residuals and the 1e-12 test are this step's, so each step
    converges to the same impulses as with a fresh factor every step, to within the tolerance.
    Over 300 steps the two runs of a falling driven chain (some hinges on their limits) stay
    within 1e-9 m (measured 2e-12: the 1e-12 steps' differences, which the motion of 0.04-0.5 m
    could amplify but here does not), with under half the factorisations."""
    runs, factors, _ = kept_and_fresh(driven_chain(n, k, c, target, limit=limit), 300, 1)
    assert factors[1] >= 300 and factors[0] < 0.5 * factors[1]
    np.testing.assert_allclose(runs[0].pos, runs[1].pos, rtol=0, atol=1e-9)
    assert np.abs(runs[0].pos[-1] - runs[0].pos[0]).max() > 0.01  # it moved (10^7 times the bound)


def test_a_changed_drive_gain_drops_the_kept_factor():
    """The factor holds the drives' compliance on its diagonal, so after a gain set between calls
    (Solver.set_parameter) the next step finds its compliance changed (kept_as_factorised) and
    factorises afresh, and the steps after it keep that factor again; a new target, which is not
    on the diagonal, keeps the factor."""
    s = Solver(driven_chain(3, 10.0, 0.5, 0.2), "cpu")
    s.run(20, 1, 1e-3)
    assert s.sc.fage.numpy()[0] > 0  # a step's factor kept by the next ones

    def factors_in_next_step():
        before = s.newton_stats()["factorisations"][0]
        s.run(1, 1, 1e-3)
        return s.newton_stats()["factorisations"][0] - before

    while s.sc.fage.numpy()[0] >= 6:  # not at the age where the next step rebuilds anyway
        s.run(1, 1, 1e-3)
    s.set_parameter("joint.drive_target_pos", [0.4], index=("/joint1", "rotY"))
    assert factors_in_next_step() == 0
    s.set_parameter("joint.drive_stiffness", [40.0], index=("/joint1", "rotY"))
    assert s.sc.fage.numpy()[0] > 0  # kept until the step compares the compliances
    assert factors_in_next_step() == 1
    before = s.newton_stats()["factorisations"][0]
    run = s.run(30, 1, 1e-3)
    assert run.max_constraint_error[0] <= 1e-12
    assert s.newton_stats()["factorisations"][0] - before < 30 / 2

def test_a_kept_factor_that_stalls_below_the_refactor_floor_is_rebuilt_not_accepted():
    """Two free 0.23 kg bodies (principal axes tilted, inertia 1.4e-5..1.2e-4 kg m^2) on a
    skewed prismatic joint with limits +-1 m and a drive (k 10, c 1, target -1 m at 1 m/s,
    maxForce 100), falling at dt = 1/1020 s (Newton's kamino test stage
    test_joint_prismatic_actuated.usda, rebuilt here). On its kept factor one step's iteration
    stalled at 9.8e-12, under the level where a slow update rebuilds the factor
    (REFACTOR_FLOOR x the tolerance), ran out of updates and was accepted there (within
    ACCEPT_FACTOR): now an old factor that stalls is rebuilt and the step converges to 1e-12,
    as with a fresh factor every step."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.8067])
    axes = (-0.340445, 0.916765, -0.102857, 0.181822)  # xyzw
    inertia = (1.44825e-05, 0.000123861, 0.000124459)
    b0 = m.add_body("/body_0", 0.2262, inertia, pos=(-0.0155601, -0.0848459, -0.00574446), com_rot=axes)
    b1 = m.add_body("/body_1", 0.2262, inertia, pos=(0.0413202, -0.0281047, 0.0230962), com_rot=axes)
    rot = (-0.0921648, -0.21039, 0.343494, 0.910634)
    m.add_joint("/slide", b0, b1, pos0=(0.0284401, 0.0283706, 0.0144203), rot0=rot,
                pos1=(-0.0284401, -0.0283706, -0.0144203), rot1=rot, locked=[False] + [True] * 5,
                lower=[-1.0] + [-np.inf] * 5, upper=[1.0] + [np.inf] * 5,
                drive_stiffness=[10.0] + [0] * 5, drive_damping=[1.0] + [0] * 5,
                drive_target_pos=[-1.0] + [0] * 5, drive_target_vel=[1.0] + [0] * 5,
                drive_max_force=[100.0] + [np.inf] * 5)
    s = Solver(m, "cpu")
    assert s.m.reuse_factor == 1
    worst = max(s.run(1, 1, 1.0 / 1020).max_constraint_error[0] for _ in range(1020))
    assert worst <= 1e-12
    assert s.newton_stats()["factorisations"][0] < 0.3 * 1020  # kept: 135 in 1020 steps


def _pitch_angles(rot):
    """Hinge angles about y of a planar chain from its bodies' xyzw rotations (each relative to
    the one before, the first to the world), wrapped to (-pi, pi]."""
    pitch = 2.0 * np.arctan2(rot[:, 1], rot[:, 3])
    return np.diff(np.concatenate([[0.0], pitch]))


def _wrap(a):
    return (a + np.pi) % (2.0 * np.pi) - np.pi


@settings(derandomize=True, max_examples=12, deadline=None, database=None)
@given(n=st.integers(1, 5), k=st.floats(0.0, 100.0), c=st.floats(0.5, 10.0), target=st.floats(-1.0, 1.0),
       fmax=st.floats(0.2, 5.0))
def test_force_bounded_drives_end_every_step_on_their_law_or_beyond_their_bound(n, k, c, target, fmax):
    """Each drive of a falling chain ends every step either active, its impulse the implicit law's
    h k (target - q_n) + h c v_target - (h k + c)(q_n+1 - q_n) (docs/solver.md, "Drives") and
    inside the bound h maxForce, or clamped on the bound with the law's impulse at the poses
    reached beyond it on the clamp's side: computed here from the bodies' poses alone. A clamp
    decided while other drives clamped in the same pass used to stay for the step (a double
    pendulum's second drive held against the way it wanted to push, on 179 of 600 drive-steps);
    a drive on its bound at the end of a step starts the next one there, out of the kept factor
    (41 factorisations in 300 steps instead of 698). Bounds: the law to 1e-9 N m s (the 1e-12
    rad tolerance times h k + c <= 10.1, and the angles' round-off, are far below), the bound to
    1e-9 of itself."""
    h = 1e-3
    model = driven_chain(n, k, c, target, fmax=fmax)
    drives = np.nonzero(model.constraint_rows().mode == 3)[0]
    s = Solver(model, "cpu")
    bound = h * fmax
    rot = s.state()[1][0]
    clamped = 0
    for _ in range(200):
        q0 = _pitch_angles(rot)
        run = s.run(1, 1, h)
        assert run.max_constraint_error[0] <= 1e-12 and run.reduced_steps[0] == 0
        rot = s.state()[1][0]
        law = h * k * _wrap(target - q0) - (h * k + c) * _wrap(_pitch_angles(rot) - q0)
        lam, act = s.sc.lam.numpy()[0][drives], s.sc.act.numpy()[0][drives]
        for j in range(n):
            if act[j] == 1:
                assert abs(lam[j]) <= bound * (1 + 1e-9) and abs(law[j] - lam[j]) <= 1e-9
            else:
                assert act[j] == 2 and abs(lam[j]) == bound and law[j] * np.sign(lam[j]) >= bound * (1 - 1e-9)
                clamped += 1
    assert s.newton_stats()["factorisations"][0] < 0.6 * 200 or clamped == 0


@pytest.mark.parametrize("k, c, target", [(2.0, 0.05, 0.3), (20.0, 0.5, -0.2), (0.0, 0.2, 0.0)])
def test_drives_on_the_floor_keep_the_factor_through_the_contact_coupling(k, c, target):
    """A crawler (test_contact.crawler: four legs on hinges limited to +-45 deg, dropped onto a
    floor) with a drive on every hip: the contact solve projects through the kept factor, which
    holds the drives' compliance, and the joint pass after it ends at 1e-12 as with a fresh
    factor every step. The two runs stay within 1e-6 m over 1 s (measured 1.7e-9 to 3.5e-8: the
    contact solve stops at 1e-9 m/s a step, so its answers differ by that much between the two
    iteration matrices, 1e-6 m over 1,000 steps at most), with a factorisation every 7 steps
    instead of every step."""
    from test_contact import crawler

    model = crawler()
    model.joint_drive_stiffness[:, 3] = k
    model.joint_drive_damping[:, 3] = c
    model.joint_drive_target_pos[:, 3] = target
    runs, factors, solvers = kept_and_fresh(model, 10, 100)
    assert all(s.contact_stats()["count"][0] >= 4 for s in solvers)  # resting on the floor
    assert factors[0] < 0.2 * 1000 <= factors[1]
    np.testing.assert_allclose(runs[0].pos, runs[1].pos, rtol=0, atol=1e-6)
