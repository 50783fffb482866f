"""Solver.set_parameter: per-world parameters changed on a running Solver, between calls. CPU.

Before the first run a changed value must give the run of a Solver made from a model with that
value, bit for bit (the same arrays reach the same kernels). Between calls the run goes on from
where it ended and follows the new value: checked against the theory of what the new value does
(a pendulum's period, a drive's equilibrium)."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ellipk

from test_solver import measured_period, pendulum_model, swing_angle
from test_worlds import driven_pendulum, spring_stage
from usdphys.errors import UsdphysError
from usdphys.solver import Solver
from usdphys.types.model import Model
from usdphys.types.params import PARAMETERS


def both(model, changes, frames=40, substeps=5, **kw):
    """(run of a Solver given `changes` by set_parameter, run of one made from the model with them)."""
    live = Solver(model, **kw)
    built = model.replicate(model.world_count)
    for name, values, index in changes:
        live.set_parameter(name, values, index)
        built.set_parameter(name, values, index)
    return live.run(frames, substeps, 1e-3), Solver(built, **kw).run(frames, substeps, 1e-3)


@pytest.mark.parametrize("threads, layout", [(1, "world_major"), (2, "world_minor")])
def test_values_set_on_a_solver_before_its_first_run_equal_a_model_built_with_them(threads, layout):
    model = driven_pendulum(k=1.0, c=0.1, upper=math.radians(50.0)).replicate(4)
    before = {k: v.copy() for k, v in model.world_parameters.items()}
    changes = [("body.mass", [1.0, 2.5, 0.5, 4.0], "/bob"),
               ("gravity", np.array([[0.0, 0.0, -g] for g in (9.81, 3.7, 24.8, 9.81)]), None),
               ("joint.drive_stiffness", [2.0, 20.0, 0.5, 8.0], ("/pivot", "rotY")),
               ("joint.drive_target_pos", [0.1, -0.2, 0.3, 0.0], ("/pivot", "rotY")),
               ("joint.upper", [math.radians(a) for a in (60.0, 45.0, 41.0, 80.0)], ("/pivot", 4))]
    live, built = both(model, changes, threads=threads, layout=layout)
    np.testing.assert_array_equal(live.pos, built.pos)
    np.testing.assert_array_equal(live.rot, built.rot)
    assert np.ptp(live.pos[-1, :, 0, 0]) > 1e-2  # the worlds differ: the values arrived
    assert model.world_parameters.keys() == before.keys()  # the caller's model is left alone


def test_element_friction_and_material_values_set_on_a_solver_equal_a_built_model():
    from test_contact import ball_model
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(spring_stage(drive_k=0.1, friction=0.125))
    model = model.replicate(3)
    live, built = both(model, [("spring.stiffness", np.array([[100.0], [400.0], [25.0]]), None),
                               ("joint_dof.static_friction", np.array([[0.25], [0.5], [2.0]]), None),
                               ("joint_dof.dynamic_friction", np.array([[0.25], [0.5], [2.0]]), None)], threads=2)
    np.testing.assert_array_equal(live.pos, built.pos)
    assert np.ptp(live.pos[-1, :, 0, 0]) > 1e-3
    # element values through the class template (one class of three worlds): the world-by-world build
    many = model.replicate(5)
    many.set_parameter("spring.stiffness", np.array([[100.0], [0.0], [-25.0], [400.0], [1e-9]]))
    many.set_parameter("joint_dof.static_friction", np.linspace(0.5, 2.0, 5)[:, None])
    solver = Solver(many, "cpu", threads=1)
    assert all(solver.dm.row_classes.templates)
    for column, values in exact_columns(many, solver).items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], values.shape), values, column)
    ball = ball_model(0.05, e=0.2, mu=0.3, worlds=3)
    ball.body_lin_vel = ball.body_lin_vel + np.array([1.0, 0.0, 0.0])
    live, built = both(ball, [("shape.restitution", np.array([[e, e] for e in (0.0, 0.5, 0.8)]), None),
                              ("shape.dynamic_friction", np.array([[mu, mu] for mu in (0.1, 0.5, 1.0)]), None)],
                       frames=30)
    np.testing.assert_array_equal(live.pos, built.pos)
    assert np.ptp(live.pos[-1, :, 0, 0]) > 1e-3


def test_a_pendulum_takes_the_period_of_the_gravity_and_mass_set_between_calls():
    """Compound pendulum (point mass m at L = 1 m, own inertia ic): T = 4 sqrt(Ip / (m g L)) K(k),
    Ip = ic + m L^2, k = sin(a / 2) for the amplitude a it swings at. One call at Earth's gravity,
    then each world gets its own g and m and must swing at its own period."""
    gs, ms, ic = np.array([9.81, 3.71, 24.79]), np.array([1.0, 0.5, 3.0]), 0.05
    solver = Solver(pendulum_model(20.0, ic=ic).replicate(3))
    first = solver.run(700, 1, 1e-3)  # 0.7 s: somewhere mid-swing, not at a turning point
    solver.set_parameter("gravity", np.stack([np.zeros(3), np.zeros(3), -gs], axis=1))
    solver.set_parameter("body.mass", ms, index="/bob")
    second = solver.run(12000, 1, 1e-3)  # two periods and more in every world
    np.testing.assert_array_equal(second.pos[0], first.pos[-1])  # it went on from where it was
    for w in range(3):
        angle = swing_angle(second.pos[:, w, 0])
        amplitude = np.abs(angle).max()
        expected = 4.0 * math.sqrt((ic + ms[w]) / (ms[w] * gs[w])) * ellipk(math.sin(amplitude / 2) ** 2)
        # Stormer-Verlet phase error (w h)^2 / 24 <= 1e-6 relative at h = 1 ms; the crossing
        # interpolation ~1e-7 s; the sampled amplitude is low by <= a (w h)^2 / 2, which moves K
        # by < 1e-7: 1e-5 relative is 10x above all of them
        assert abs(measured_period(angle, 1e-3) / expected - 1) <= 1e-5, (w, expected)
    assert second.max_constraint_error.max() <= 1e-9


def test_drive_targets_set_between_calls_are_reached_in_each_world():
    """Weightless pendulum on a critically damped drive (k = 20 N m/rad, c = 2 sqrt(k Ip)): the
    angle settles on the target, exactly (no gravity to balance). After the first target is
    reached, each world gets its own; 5 s later the error is (1 + w t) e^(-w t) of the step, w =
    sqrt(k / Ip) = 4.4 rad/s: < 1e-7 of it."""
    ip, k = 1.0 + 0.05, 20.0
    c = 2.0 * math.sqrt(k * ip)
    model = pendulum_model(0.0, ic=0.05, gravity=0.0, drive_stiffness=[0, 0, 0, 0, k, 0],
                           drive_damping=[0, 0, 0, 0, c, 0], drive_target_pos=[0, 0, 0, 0, 0.2, 0])
    solver = Solver(model.replicate(4), threads=2)
    first = solver.run(50, 100, 1e-3)
    np.testing.assert_allclose(swing_angle(first.pos[-1, :, 0]), 0.2, atol=1e-7)
    targets = np.array([-0.3, 0.0, 0.5, 1.2])
    solver.set_parameter("joint.drive_target_pos", targets, index=("/pivot", "rotY"))
    second = solver.run(50, 100, 1e-3)
    angle = swing_angle(second.pos[-1, :, 0])
    np.testing.assert_allclose(angle, targets, atol=1e-7)
    assert np.abs(swing_angle(second.pos[1, :, 0]) - targets).min() > 1e-2  # it moved


def test_a_refused_change_leaves_the_running_solver_as_it_was():
    model = driven_pendulum(k=1.0, upper=1.0).replicate(2)
    solver, twin = Solver(model, threads=1), Solver(model, threads=1)
    a, b = solver.run(10, 5, 1e-3), twin.run(10, 5, 1e-3)
    # a limit in one world only would remove its rows there: refused, naming the joint, one line
    with pytest.raises(UsdphysError, match="/pivot: the per-world parameters of world 1") as err:
        solver.set_parameter("joint.upper", [1.0, np.inf], index=("/pivot", 4))
    assert "\n" not in str(err.value)
    for call, match in [(lambda: solver.set_parameter("body.weight", 1.0), "unknown parameter 'body.weight'"),
                        (lambda: solver.set_parameter("body.mass", [1.0, -2.0], index=0), "not positive"),
                        (lambda: solver.set_parameter("gravity", np.zeros((3, 3))), r"shape \(3, 3\)")]:
        with pytest.raises(UsdphysError, match=match):
            call()
    a, b = solver.run(20, 5, 1e-3), twin.run(20, 5, 1e-3)
    np.testing.assert_array_equal(a.pos, b.pos)


# ------------------------------------------------------------------ row values filled from templates
DRIVES = ("joint.drive_target_pos", "joint.drive_target_vel", "joint.drive_stiffness", "joint.drive_damping",
          "joint.drive_max_force")
ROW_ARRAYS = ("row_value", "row_k", "row_c", "row_tv", "row_fmax", "row_lo", "row_hi")


@st.composite
def driven_chains(draw):
    """A chain of 1-4 bodies on joints with random free DOFs (hinges, sliders, Cardan, ball,
    free-ish D6), some of them driven (gains, targets, bounds) and some limited."""
    model = Model()
    model.gravity = np.array([0.0, 0.0, -9.81])
    n = draw(st.integers(1, 4))
    for i in range(n):
        b = model.add_body(f"/b{i}", 1.0 + i, [0.1, 0.2, 0.3], pos=[0.0, 0.0, -0.5 * (i + 1)])
        free = draw(st.lists(st.booleans(), min_size=6, max_size=6).filter(any))
        driven = [f and draw(st.booleans()) for f in free]
        limited = [f and draw(st.booleans()) for f in free]
        k = [draw(st.sampled_from([0.0, 2.0, 50.0])) if d else 0.0 for d in driven]
        c = [draw(st.sampled_from([0.5, 3.0])) if d and kk == 0.0 else (draw(st.sampled_from([0.0, 1.0])) if d else 0.0)
             for d, kk in zip(driven, k)]
        model.add_joint(f"/j{i}", b - 1, b, pos0=[0.0, 0.0, -0.5 * i], pos1=[0.0, 0.0, 0.5] if i == 0 else [0.0, 0.0, 0.0],
                        locked=[not f for f in free], kind="joint",
                        lower=[-0.4 if lim else -np.inf for lim in limited], upper=[0.6 if lim else np.inf for lim in limited],
                        drive_stiffness=k, drive_damping=c, drive_target_pos=[0.1 * d for d in range(6)],
                        drive_max_force=[draw(st.sampled_from([np.inf, 40.0])) for _ in range(6)])
    return model


def varied_values(model, name, rng):
    """Per-world values of a joint row parameter that keep its rows: a gain scaled, a limit or
    target moved (across zero too; world 0's at zero, which the template's probe must move)."""
    base = model.parameter(name)
    if name in ("joint.drive_stiffness", "joint.drive_damping", "joint.drive_max_force"):
        return base * rng.uniform(0.5, 2.0, base.shape)  # a drive stays on or off
    moved = base + rng.uniform(-1.0, 1.0, base.shape)
    moved[0] = np.where(np.isfinite(moved[0]), 0.0, moved[0])  # world 0 (its class's built world) at zero
    if name == "joint.lower":
        moved = np.minimum(moved, model.parameter("joint.upper") - 0.01)
    if name == "joint.upper":
        moved = np.maximum(moved, model.parameter("joint.lower") + 0.01)
    return moved


def exact_columns(model, solver):
    """The value columns of every world built one by one (the reference the templates must give)."""
    from usdphys.solver import io

    dm = solver.dm
    names = io.varied_row_parameters(model)
    return io._exact_rows(model, dm.rows, dm.elements, dm.law_names, names)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(driven_chains(), st.sampled_from(DRIVES + ("joint.lower", "joint.upper")), st.integers(0, 2**31 - 1))
def test_row_values_filled_from_templates_equal_a_build_of_every_world(model, name, seed):
    """Worlds whose values fall in one class are filled from that class's template (one world
    built, two probed) instead of built one by one: every column must equal the world-by-world
    build bit for bit, on a Solver made from such a model and after set_parameter changes the
    values of a running one (its cells only)."""
    model = model.replicate(7)
    rng = np.random.default_rng(seed)
    first, second = varied_values(model, name, rng), varied_values(model, name, rng)
    model.set_parameter(name, first)
    solver = Solver(model, "cpu", threads=1)
    exact = exact_columns(model, solver)
    for column, values in exact.items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], values.shape), values, column)
    solver.set_parameter(name, second)
    built = model.replicate(7)
    built.set_parameter(name, second)
    full = Solver(built, "cpu", threads=1)
    for column, values in exact_columns(built, full).items():
        np.testing.assert_array_equal(np.broadcast_to(full.dm.row_columns[column], values.shape), values, column)
    for attr in ROW_ARRAYS:
        np.testing.assert_array_equal(getattr(solver.m, attr).numpy(), getattr(full.m, attr).numpy(), err_msg=attr)
    # where the parameter has a row (a driven or limited DOF) its nonzero values have cells
    unlocked = ~np.asarray(model.joint_locked, bool)
    if name in ("joint.lower", "joint.upper"):
        has_row = unlocked & np.isfinite(model.parameter(name)[0])
    else:
        has_row = unlocked & ((model.parameter("joint.drive_stiffness")[0] > 0)
                              | (model.parameter("joint.drive_damping")[0] > 0))
    found = {n for t in solver.dm.row_classes.templates if t for n, by in t.cells.items() if by}
    assert found == ({name} if np.any(np.isfinite(first[:, has_row]) & (first[:, has_row] != 0)) else set())
    assert all(t for t in solver.dm.row_classes.templates), "a class was built world by world"


def test_many_worlds_of_one_class_cost_three_builds_and_a_change_of_values_none(monkeypatch):
    """64 worlds, each with its own limits and damping: three row-table builds for the Solver
    (one world in full, two probes), none when a loop then moves the limits (same classes)."""
    from usdphys.solver import forces

    builds = []
    build = forces.build_element_rows

    def counted(*args, **kw):
        builds.append(1)
        return build(*args, **kw)

    model = driven_pendulum(k=1.0, c=0.1, upper=1.0).replicate(64)
    model.set_parameter("joint.upper", np.linspace(0.5, 1.5, 64), index=("/pivot", 4))
    model.set_parameter("joint.drive_damping", np.linspace(0.1, 0.4, 64), index=("/pivot", "rotY"))
    monkeypatch.setattr(forces, "build_element_rows", counted)
    solver = Solver(model, "cpu", threads=1)
    assert len(builds) == 1 + 3  # the model's own rows, then one class: its world and two probes
    before = {a: getattr(solver.m, a) for a in ROW_ARRAYS}
    values = {a: before[a].numpy().copy() for a in ROW_ARRAYS}
    solver.set_parameter("joint.upper", np.linspace(0.6, 1.6, 64), index=("/pivot", 4))
    assert len(builds) == 4
    hi = solver.m.row_hi.numpy()
    np.testing.assert_array_equal(np.where(np.isfinite(hi), hi, -np.inf).max(axis=1), np.linspace(0.6, 1.6, 64))
    # every column keeps its array (the limit cells written where they stand: nothing of 64
    # worlds' columns copied), and only the limit's columns changed values
    assert all(getattr(solver.m, a) is before[a] for a in ROW_ARRAYS)
    changed = [a for a in ROW_ARRAYS if not np.array_equal(getattr(solver.m, a).numpy(), values[a])]
    assert changed == ["row_value", "row_hi"]
    out = solver.run(20, 5, 1e-3)
    assert np.isfinite(out.pos).all()


def test_a_gain_that_would_switch_a_drive_off_is_refused():
    model = driven_pendulum(k=1.0, c=0.0).replicate(2)
    solver = Solver(model, "cpu", threads=1)
    with pytest.raises(UsdphysError, match="/pivot: the per-world parameters of world 1 .joint.drive_stiffness."):
        solver.set_parameter("joint.drive_stiffness", [1.0, 0.0], index=("/pivot", "rotY"))
    solver.set_parameter("joint.drive_stiffness", [1.0, 2.0], index=("/pivot", "rotY"))
    solver.set_parameter("joint.drive_damping", [0.5, 0.0], index=("/pivot", "rotX"))  # a locked DOF: no row
    with pytest.raises(UsdphysError, match="/pivot: the per-world parameters of world 0"):
        solver.set_parameter("joint.drive_stiffness", [0.0, 0.0], index=("/pivot", "rotY"))


def test_a_template_whose_cells_are_not_plain_copies_is_not_used(monkeypatch):
    """A template is trusted only where every changed cell holds one entry's value unchanged in
    all three builds: with a limit column that is not a copy of the limit, the worlds are built
    one by one, and their columns are still those of the world-by-world build."""
    from usdphys.solver import io

    ranges = io.limit_ranges

    def doubled(model, rows):
        lo, hi = ranges(model, rows)
        return lo, 2.0 * hi

    monkeypatch.setattr(io, "limit_ranges", doubled)
    model = driven_pendulum(k=1.0, c=0.1, upper=1.0).replicate(8)
    model.set_parameter("joint.upper", np.linspace(0.5, 1.5, 8), index=("/pivot", 4))
    solver = Solver(model, "cpu", threads=1)
    assert solver.dm.row_classes.templates == [None]
    assert list(solver.dm.row_templates.values()) == [False]
    for column, values in exact_columns(model, solver).items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], values.shape), values, column)
    hi = solver.m.row_hi.numpy()
    np.testing.assert_array_equal(np.where(np.isfinite(hi), hi, -np.inf).max(axis=1), 2.0 * np.linspace(0.5, 1.5, 8))


def test_distance_bounds_per_world_are_filled_and_a_bound_pair_that_closes_is_refused():
    """A distance joint's rows depend on whether its minimum reaches its maximum (one equal row
    instead of two limit rows): part of a world's class, so such a world is built, and refused."""
    model = Model()
    model.gravity = np.array([0.0, 0.0, -9.81])
    b = model.add_body("/bob", 1.0, [0.01, 0.01, 0.01], pos=[0.3, 0.0, -0.9])
    model.add_joint("/rope", -1, b, kind="distance", is_distance=True, dist_min=0.5, dist_max=1.2)
    model.add_joint("/hinge", -1, b, pos1=[-0.3, 0.0, 0.9], locked=[False, True, False, True, False, True],
                    lower=[-0.2, 0, -1.0, 0, -0.5, 0], upper=[0.2, 0, 1.0, 0, 0.5, 0])
    model = model.replicate(6)
    low = np.linspace(0.4, 0.6, 6)
    model.set_parameter("joint.min_distance", low, index="/rope")
    model.set_parameter("joint.max_distance", low + 0.7, index="/rope")
    solver = Solver(model, "cpu", threads=1)
    assert all(solver.dm.row_classes.templates)
    for column, values in exact_columns(model, solver).items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], values.shape), values, column)
    assert np.isfinite(solver.run(10, 5, 1e-3).pos).all()
    closed = low + 0.7
    closed[3] = 0.3  # world 3: maximum below its minimum
    with pytest.raises(UsdphysError, match="/rope: the per-world parameters of world 3"):
        solver.set_parameter("joint.max_distance", closed, index="/rope")


ELEMENT_VALUES = ("spring.stiffness", "spring.damping", "spring.rest_length", "joint_dof.static_friction",
                  "joint_dof.dynamic_friction", "joint.drive_stiffness", "joint.drive_damping")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.sampled_from([0.0, 100.0, -40.0]), st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 0.125]),
       st.sampled_from([0.0, 0.1]), st.sets(st.sampled_from(ELEMENT_VALUES), min_size=1, max_size=4),
       st.integers(0, 2**31 - 1))
def test_element_values_filled_from_templates_equal_a_build_of_every_world(k, c, friction, drive_k, names, seed):
    """Spring constants (any sign, zero too: no class), joint friction and drive gains (zero or
    positive: their class) set per world on a stage with a spring-damper, NewtonJointAPI friction
    and a drive: the Solver's row columns, and those after set_parameter, equal the world-by-world
    build bit for bit."""
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(spring_stage(k=k, c=c, friction=friction, drive_k=drive_k))
    model = model.replicate(6)
    rng = np.random.default_rng(seed)

    def values():
        out = {}
        for name in sorted(names):
            base = model.parameter(name)
            if PARAMETERS[name].accepts == "finite":
                v = base + rng.choice([-1.0, 0.0, 1.0], base.shape) * rng.uniform(0.5, 50.0, base.shape)
                v[rng.random(base.shape) < 0.3] = 0.0
            else:  # a zero stays zero (no row there), a positive value stays positive
                v = base * rng.uniform(0.5, 2.0, base.shape)
            out[name] = v
        return out

    first = values()
    for name, v in first.items():
        model.set_parameter(name, v)
    solver = Solver(model, "cpu", threads=1)
    for column, exact in exact_columns(model, solver).items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], exact.shape), exact, column)
    assert all(solver.dm.row_classes.templates)
    for name, v in values().items():
        solver.set_parameter(name, v)
        for column, exact in exact_columns(solver.model, solver).items():
            np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], exact.shape), exact, column)


def test_classes_of_one_world_among_many_are_filled_in_their_own_world_only():
    """Damping zero in one world (its drive stays on through its stiffness): a class of that
    world alone beside a class of four, both from templates once set_parameter has probed them;
    each world's columns are its own build's."""
    model = driven_pendulum(k=1.0, c=0.1, upper=1.0).replicate(5)
    solver = Solver(model, "cpu", threads=1)
    for damping in ([0.5, 0.0, 0.7, 0.9, 0.3], [0.6, 0.0, 0.8, 1.0, 0.4]):
        solver.set_parameter("joint.drive_damping", damping, index=("/pivot", "rotY"))
        assert len(solver.dm.row_classes.templates) == 2 and all(solver.dm.row_classes.templates)
        for column, exact in exact_columns(solver.model, solver).items():
            np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], exact.shape), exact, column)


def test_many_small_classes_are_built_world_by_world_not_probed(monkeypatch):
    """20 worlds, each with its own pattern of zero drive dampings (the drives stay on through
    their stiffness): 20 classes of one world. A probe would cost two more builds a world, so
    past io.PROBED_CLASSES they are built one by one, as before templates, and still exactly."""
    from usdphys.solver import forces, io

    model = Model()
    model.gravity = np.array([0.0, 0.0, -9.81])
    for i in range(5):
        b = model.add_body(f"/b{i}", 1.0, [0.1, 0.2, 0.3], pos=[0.0, 0.0, -0.5 * (i + 1)])
        model.add_joint(f"/j{i}", b - 1, b, pos0=[0.0, 0.0, -0.5 * i], pos1=[0.0, 0.0, 0.5] if i == 0 else [0.0, 0.0, 0.0],
                        locked=[True, True, True, True, False, True], kind="joint",
                        drive_stiffness=[0, 0, 0, 0, 2.0, 0], drive_damping=[0, 0, 0, 0, 0.5, 0])
    model = model.replicate(20)
    solver = Solver(model, "cpu", threads=1)
    damping = model.parameter("joint.drive_damping")
    pattern = (np.arange(20)[:, None] >> np.arange(5)[None, :]) & 1  # world w: the bits of w
    damping[:, :, 4] = np.where(pattern == 1, 0.0, 0.3 + 0.01 * np.arange(20)[:, None])
    builds = []
    build = forces.build_element_rows
    monkeypatch.setattr(forces, "build_element_rows", lambda *a, **k: builds.append(1) or build(*a, **k))
    solver.set_parameter("joint.drive_damping", damping)
    assert len(solver.dm.row_classes.templates) == 20 > io.PROBED_CLASSES
    assert len(builds) == 20  # one a world, no probes
    for column, exact in exact_columns(solver.model, solver).items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], exact.shape), exact, column)



@pytest.mark.parametrize("layout", ["world_major", "world_minor"])
@pytest.mark.parametrize("start", ["alike", "two classes"])
def test_limits_rewritten_in_place_equal_a_model_built_with_them(layout, start):
    """Limits moved within their class on a Solver are written into the column arrays it has
    (either layout; worlds of one class, or of two: drive damping zero in two of them), or into
    a new array where one stored row served all worlds; the columns then equal those of a
    Solver built from the model with the values, and so does the run, bit for bit."""
    model = driven_pendulum(k=1.0, c=0.1, upper=math.radians(50.0)).replicate(6)
    model.set_parameter("joint.upper", [math.radians(50.0)] * 6, index=("/pivot", 4))
    if start == "two classes":
        model.set_parameter("joint.drive_damping", [0.1] * 4 + [0.0] * 2, index=("/pivot", "rotY"))

    def upper(degrees):
        return [math.radians(a) for a in degrees]

    solver = Solver(model, threads=2, layout=layout)  # no device named: a GPU run may take CUDA
    for degrees in ([45.0, 60.0, 41.0, 80.0, 50.0, 55.0], [44.0, 61.0, 42.0, 79.0, 51.0, 56.0]):
        stored_per_world = solver.m.row_hi.strides[0] != 0
        arrays = {a: getattr(solver.m, a) for a in ROW_ARRAYS}
        solver.set_parameter("joint.upper", upper(degrees), index=("/pivot", 4))
        assert (solver.m.row_hi is arrays["row_hi"]) == stored_per_world
        assert all(getattr(solver.m, a) is arrays[a] for a in ROW_ARRAYS if a not in ("row_hi", "row_value"))
        built = copy.copy(model)  # every world's own values (replicate would take world 0's)
        built.world_parameters = dict(model.world_parameters)
        built.set_parameter("joint.upper", upper(degrees), index=("/pivot", 4))
        reference = Solver(built, threads=2, layout=layout)
        for attr in ROW_ARRAYS:
            np.testing.assert_array_equal(getattr(solver.m, attr).numpy(), getattr(reference.m, attr).numpy(),
                                          err_msg=attr)
    assert stored_per_world  # the second change was written in place
    live, ref = solver.run(60, 5, 1e-3), reference.run(60, 5, 1e-3)
    np.testing.assert_array_equal(live.pos, ref.pos)
    np.testing.assert_array_equal(live.rot, ref.rot)
    assert np.max(swing_angle(live.pos[:, 2, 0])) <= math.radians(42.0) + 1e-9  # world 2's stop holds
    assert np.max(swing_angle(live.pos[:, 4, 0])) > math.radians(39.0)  # released at 40 deg, free or far


# ---------------------------------------------------------------------------- cone limits per world
def ball_pendulum(cone, spin=(3.5, 3.5, 0.0)):
    """A 1 kg bob 1 m below a ball joint whose cone (semi-angles towards x and y, rad) bounds the
    tilt of the body's z axis from the vertical; started at the bottom with angular velocity
    `spin`, which swings it 104 deg out where nothing stops it, 68 deg in the plane a flat cone
    leaves (energy: 1 - cos theta = |spin|^2 / (2 g))."""
    model = Model()
    model.gravity = np.array([0.0, 0.0, -9.81])
    lin = np.cross(spin, [0.0, 0.0, -1.0])  # the bob's velocity about the pivot
    b = model.add_body("/bob", 1.0, [0.01, 0.01, 0.01], pos=[0.0, 0.0, -1.0], lin_vel=lin, ang_vel=spin)
    model.add_joint("/ball", -1, b, pos1=[0.0, 0.0, 1.0], locked=[True] * 3 + [False] * 3, cone_axis=2, cone=cone)
    return model


def cone_measure(rot, cone):
    """Where the body's z axis is against each world's elliptical cone: 1 on its boundary
    (theta sqrt((c / A)^2 + (s / B)^2), theta the tilt, (c, s) its direction in x, y; inf: open;
    a flat side (0) counts nothing here), and theta |c|, theta |s|: the tilt towards x and y,
    which a flat side holds at 0. rot (frames, W, 4) xyzw, cone (W, 2)."""
    x, y, z, w = (rot[..., k] for k in range(4))
    v = np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=-1)
    rho = np.hypot(v[..., 0], v[..., 1])
    theta = np.arctan2(rho, v[..., 2])
    c, s = v[..., 0] / np.maximum(rho, 1e-300), v[..., 1] / np.maximum(rho, 1e-300)
    wa, wb = (np.where(cone[None, :, k] == 0.0, 0.0, 1.0 / np.where(cone[None, :, k] == 0.0, 1.0, cone[None, :, k]))
              for k in (0, 1))
    return theta * np.hypot(c * wa, s * wb), theta * np.abs(c), theta * np.abs(s)


CONE_SHAPES = ("elliptic", "circular", "flat first", "flat second", "one side open")


def world_cones(shape, rng, worlds):
    """(worlds, 2) cone semi-angles with the same rows as world 0's (model.cone_rows: which side
    is 0 stays so; which is the smaller may differ): 0.2-0.9 rad, where the bob's swing meets them."""
    u = rng.uniform(0.2, 0.9, (worlds, 2))
    if shape == "elliptic":  # either side the smaller, world by world
        return u
    if shape == "circular":  # world 0 and two more circular, the others any cone
        u[:3, 1] = u[:3, 0]
        return u
    if shape == "flat first":
        u[:, 0] = 0.0
    elif shape == "flat second":
        u[:, 1] = 0.0
    else:
        u[:, 1] = np.inf
    return u


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.sampled_from(CONE_SHAPES), st.integers(0, 2**31 - 1))
def test_cone_angles_per_world_hold_each_world_in_its_own_cone(shape, seed):
    """Cone semi-angles set per world (`joint.cone`): the Solver's row columns equal a build of
    every world bit for bit (filled from the class's template), so do the columns after new
    values reach a running Solver, each world's bob stays inside its own cone and reaches it,
    and a world runs bit for bit as a single-world model with its cone."""
    rng = np.random.default_rng(seed)
    cones = world_cones(shape, rng, 9)
    model = ball_pendulum(tuple(cones[0])).replicate(9)
    model.set_parameter("joint.cone", cones, index="/ball")
    solver = Solver(model, "cpu", threads=1)
    classes = solver.dm.row_classes  # a class of more than two worlds is filled from its template
    assert all(t for g, t in enumerate(classes.templates) if np.count_nonzero(classes.group == g) > 2)
    assert any(classes.templates)
    for column, values in exact_columns(model, solver).items():
        np.testing.assert_array_equal(np.broadcast_to(solver.dm.row_columns[column], values.shape), values, column)
    run = solver.run(1000, 1, 1e-3)  # every step a frame: the touch of the cone is seen
    measure, towards_x, towards_y = cone_measure(run.rot[:, :, 0], cones)
    # the rows hold to 1e-12 rad (5e-12 of the smallest bound, 0.2 rad); recomputing the measure
    # from the float64 poses adds ~1e-15: 1e-9 leaves 200x room and still sees a cone left by a
    # step (a free swing overshoots by degrees); the same for a flat side's tilt (1e-9 rad)
    assert np.all(measure <= 1.0 + 1e-9), np.max(measure, axis=0)
    for tilt, side in ((towards_x, cones[:, 0]), (towards_y, cones[:, 1])):  # a flat side: no tilt that way
        assert np.all(tilt[:, side == 0.0] <= 1e-9), np.max(tilt, axis=0)
    # each world met its cone: resting on it for a step or more, the measure is 1 to the rows'
    # tolerance; 1e-6 allows a touch that falls between two steps' frames
    assert np.all(np.max(measure, axis=0) >= 1.0 - 1e-6), np.max(measure, axis=0)
    for w in (0, 8):
        alone = Solver(ball_pendulum(tuple(cones[w])), "cpu", threads=1).run(1000, 1, 1e-3)
        np.testing.assert_array_equal(alone.rot[:, 0], run.rot[:, w])
    new = world_cones(shape, rng, 9)
    solver.set_parameter("joint.cone", new, index="/ball")
    built = model.replicate(9)
    built.set_parameter("joint.cone", new, index="/ball")
    full = Solver(built, "cpu", threads=1)
    for attr in ROW_ARRAYS:
        np.testing.assert_array_equal(getattr(solver.m, attr).numpy(), getattr(full.m, attr).numpy(), err_msg=attr)


@pytest.mark.parametrize("cone, world, refused", [
    ((0.5, 0.3), (0.0, 0.3), "/ball"),  # flat: a perpendicular row more
    ((0.0, 0.3), (0.5, 0.3), "/ball"),  # no longer flat: one row less
    ((0.5, 0.5), (3.2, 4.0), "/ball"),  # open (both past 180 deg): no row
    ((np.inf, np.inf), (0.5, 0.5), "/ball"),  # a cone where the model has none
    ((0.5, 0.5), (-0.1, 0.5), "parameter 'joint.cone': value -0.1 is not 0 or more"),
    ((0.5, 0.5), (np.nan, 0.5), "parameter 'joint.cone': value nan is not 0 or more"),
])
def test_a_cone_that_would_change_its_rows_is_refused(cone, world, refused):
    model = ball_pendulum(cone).replicate(3)
    solver = Solver(model, "cpu", threads=1)
    before = {a: getattr(solver.m, a).numpy().copy() for a in ROW_ARRAYS}
    with pytest.raises(UsdphysError, match=refused) as info:
        solver.set_parameter("joint.cone", [cone, world, cone], index="/ball")
    if refused == "/ball":  # a change of rows names the world (a sweep runs it as its own model), pickled too
        import pickle

        from usdphys.types.params import StructureChangeError

        again = pickle.loads(pickle.dumps(info.value))
        assert isinstance(again, StructureChangeError) and again.world == 1 and str(again) == str(info.value)
    for a in ROW_ARRAYS:  # nothing changed
        np.testing.assert_array_equal(getattr(solver.m, a).numpy(), before[a], err_msg=a)
