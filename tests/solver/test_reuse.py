"""Modified Newton across steps (step.py REFACTOR_EVERY / REFACTOR_RATE): the LDL factor of an
earlier step is reused for models with only equal rows and no contact, and for models of equal
rows and limits on the steps in which no limit holds; the converged steps
keep the 1e-12 residual, so closed loops stay closed. The secant acceleration (secant_weight)
of that frozen-matrix iteration."""
from __future__ import annotations

from pathlib import Path

import numpy as np

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


def test_no_reuse_when_a_row_is_not_an_equal_row():
    """A joint-friction row (its active set changes, like limits, drives and law rows): a fresh
    factorisation every step."""
    from test_joint_friction import newton_api, wheel
    from sim_helpers import stage

    model, _ = read_stage(stage(wheel(2.0, 3.0, newton_api(dofs=["angle"], dynamicFrictionEffort=[4.0])),
                                gravity=9.81))
    assert np.any(model.constraint_rows().mode == 0)
    s = Solver(model, "cpu")
    assert s.m.equal_only == 0
    run = s.run(5, 100, 1e-3)
    assert s.newton_stats()["factorisations"][0] >= 500
    assert run.max_constraint_error.max() <= 1e-12


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
    (factor_is_current) instead of building the same one again; and a model of hard rows alone
    (equal rows, limits) keeps its factor across steps with contact too (ModelData.contact_hard),
    as it does without. A 2 kg bar hinged to the world at one end and resting on the floor
    through a sphere at the other takes 71 factorisations in 500 steps where it took 1,001 (two
    a step) and then 557 (one a step), and rests: on the floor within the contact's slop, the
    hinge held to 1e-12. With a damped drive on the hinge (not hard rows alone) it takes one a
    step, as before, through factor_is_current."""
    from usdphys.types.shapes import SHAPE_PLANE, SHAPE_SPHERE, table_from_specs

    def bar_on_floor(damping=None):
        m = Model()
        m.gravity = np.array([0.0, 0.0, -9.81])
        r, L, hp = 0.02, 0.4, 0.3
        bar = m.add_body("/bar", 2.0, [0.005, 0.03, 0.03], pos=[-L / 2, 0, hp])
        m.add_joint("/hinge", -1, bar, pos0=[0, 0, hp], pos1=[L / 2, 0, 0], locked=[True] * 4 + [False, True],
                    drive_damping=damping)
        m.shapes = table_from_specs([{"type": SHAPE_PLANE},
                                     {"type": SHAPE_SPHERE, "body": bar, "dims": (r, 0, 0), "pos": (-L / 2, 0, r - hp)}])
        return m

    L, hp = 0.4, 0.3
    for damping, least, most in ((None, 500 / 8, 0.2 * 500), ([0, 0, 0, 0, 1.0, 0], 500, 1.2 * 500)):
        s = Solver(bar_on_floor(damping), "cpu")
        run = s.run(500, 1, 1e-3)
        # hard rows alone: one every REFACTOR_EVERY = 8 steps (62), plus where the rank decision is
        # renewed or the iteration on the aged factor converged slowly: 71 (rebuilding A every step
        # made it 557, building the second pass's factor again 1,001). With a drive (a compliant
        # row: A is rebuilt every step with contact) one a step, and one more where the rank
        # decision is renewed (every RANK_EVERY = 8 factorisations, which the kept factor cannot
        # skip): 557, where building the second pass's factor again made it 1,001
        assert least <= s.newton_stats()["factorisations"][0] < most, damping
        # resting: contact leaves up to its slop (1e-5 m) of penetration alone, which tilts the bar
        # by at most that at its tip (4.2e-8 m at the centre here)
        np.testing.assert_allclose(run.pos[-1, 0, 0], [-L / 2, 0.0, hp], atol=1e-5)
        assert run.max_constraint_error[0] < 1e-12
