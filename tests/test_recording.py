"""Recorded quantities (docs/recording.md): body velocities, joint coordinates / rates /
reactions / limit flags, element outputs, energies and residuals; their time samples, tables
and plots. Numbers against analytic solutions."""
from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Sdf

from sim_helpers import DEG, angle_about, body, joint, stage
from usdphys.cli import main
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate

G = 9.81


def export(st, path):
    """Write an in-memory stage to a file (the stage is held while its layer is exported)."""
    assert st.GetRootLayer().Export(str(path))
    return path


# ------------------------------------------------------------------ Exudyn's mini example
K_SPRING, D_SPRING = 2000.0, 20.0


def axial(name, b1, stiffness, damping):
    return f"""def MbdAxialSpringDamper "{name}" {{
    rel mbd:body1 = </{b1}>
    vector3d mbd:axis = (1, 0, 0)
    double mbd:stiffness = {stiffness!r}
    double mbd:damping = {damping!r}
}}
"""


def force(name, b1, vec):
    return f"""def MbdForce "{name}" {{
    rel mbd:body1 = </{b1}>
    vector3d mbd:force = ({vec[0]!r}, {vec[1]!r}, {vec[2]!r})
}}
"""


def exudyn_mini():
    """ObjectConnectorLinearSpringDamper's mini example: a 1 kg body on a prismatic joint along
    X, spring k = 2000 N/m, d = k/100, a 1 N load along X, no gravity: expect dx = 1/k."""
    return (body("B", mass=1.0) + joint("PhysicsPrismaticJoint", "J", "B", axis="X")
            + axial("S", "B", stiffness=K_SPRING, damping=D_SPRING) + force("F", "B", (1.0, 0.0, 0.0)))


@pytest.fixture(scope="module")
def mini():
    return simulate(stage(exudyn_mini()), duration=2.0, dt=1e-3, fps=100, record="all")


def test_exudyn_mini_example_displacement_and_force(mini):
    dx = mini.channel("/S", "displacementLocal")[:, 0]
    dv = mini.channel("/S", "velocityLocal")[:, 0]
    f = mini.channel("/S", "forceLocal")[:, 0]
    # damping ratio d / (2 sqrt(k m)) = 0.224, decay rate 10 /s: after 2 s the transient is
    # 5e-4 * e^-20 = 1e-12 m; the trapezoidal law's equilibrium k dx = F is exact
    assert abs(dx[-1] - 1.0 / K_SPRING) <= 1e-11
    # ForceLocal = k dx + d dv (Exudyn's f_SD, offset 0) at every frame: the law evaluated at the
    # recorded displacement and velocity; 1e-9 relative to the 1 N force scale
    assert np.max(np.abs(f - (K_SPRING * dx + D_SPRING * dv))) <= 1e-9 * 1.0
    # the transient really happened: the force overshoots the 1 N load (underdamped)
    assert f.max() > 1.5
    # the displacement is the body's x (prismatic along X from the origin), the rate its velocity
    assert np.max(np.abs(dx - mini.positions[:, 0, 0, 0])) <= 1e-15
    assert np.max(np.abs(dv - mini.channel("/B", "velocity")[:, 0, 0])) <= 1e-15
    # the joint records the same coordinate; the load its vector
    assert np.array_equal(mini.channel("/J", "coordinate:distance"), mini.channel("/S", "displacementLocal"))
    assert np.allclose(mini.channel("/F", "force")[:, 0], [1.0, 0.0, 0.0], rtol=0, atol=0)


def test_mini_example_potential_energy_and_recording_changes_nothing(mini):
    # potential of the spring at rest: k dx^2 / 2 (the load has no potential)
    pe = mini.channel("/Scene", "potentialEnergy")[:, 0]
    assert abs(pe[-1] - 0.5 / K_SPRING) <= 1e-12
    plain = simulate(stage(exudyn_mini()), duration=2.0, dt=1e-3, fps=100)
    # recording reads the state and steps once more at the end on a copy: the motion is bit-identical
    assert np.array_equal(plain.positions, mini.positions)
    assert plain.channels == []


def test_table_and_layer_hold_the_result_arrays(mini, tmp_path):
    src = tmp_path / "mini.usda"
    export(stage(exudyn_mini()), src)
    res = simulate(str(src), duration=0.2, dt=1e-3, fps=100, record="joints,elements")
    csv = res.write_table(tmp_path / "mini.csv")
    from usdphys.table import read_table

    cols = read_table(csv)
    assert list(cols)[0] == "time [s]"
    assert "/S.forceLocal [N]" in cols and "/J.forceLocal.x [N]" in cols
    assert not any(c.startswith("/B.velocity") for c in cols)  # bodies were not asked for
    assert np.array_equal(cols["/S.forceLocal [N]"], res.channel("/S", "forceLocal")[:, 0])  # repr round-trips
    out = res.write(tmp_path / "mini_result.usda")
    layer = Sdf.Layer.FindOrOpen(str(out))
    attr = layer.GetAttributeAtPath("/S.usdphys:out:forceLocal")
    assert attr.custom and attr.customData["units"] == "N"
    f = [layer.QueryTimeSample(attr.path, t) for t in layer.ListTimeSamplesForPath(attr.path)]
    assert np.array_equal(f, res.channel("/S", "forceLocal")[:, 0])
    pytest.importorskip("pyarrow")
    pq = res.write_table(tmp_path / "mini.parquet")
    assert np.array_equal(read_table(pq)["/S.forceLocal [N]"], cols["/S.forceLocal [N]"])


# ------------------------------------------------------------------ pendulum
L = 1.0


def pendulum(theta0_deg, limit_lower=None, inertia=1e-8, mpu=1.0, omega0_deg=0.0):
    """A bob of 1 kg whose centre is L below a revolute joint about Y at the origin, started
    at theta0 from the downward vertical (rotated about +Y: x = -L sin th, z = -L cos th)."""
    th = math.radians(theta0_deg)
    lim = ""
    if limit_lower is not None:
        lim = f"float physics:lowerLimit = {limit_lower}\n    float physics:upperLimit = 170"
    u = 1.0 / mpu
    w = math.radians(omega0_deg)  # the bob's centre moves with the link: v = w x r
    txt = (body("Bob", pos=(-L * math.sin(th) * u, 0, -L * math.cos(th) * u), mass=1.0,
                vel=(-w * L * math.cos(th) * u, 0, w * L * math.sin(th) * u),
                inertia=(inertia * u * u,) * 3, orient=(math.cos(th / 2), 0, math.sin(th / 2), 0),
                angvel_deg=(0, omega0_deg, 0))
           + joint("PhysicsRevoluteJoint", "Hinge", "Bob", pos1=(0, 0, L * u), axis="Y", extra=lim))
    return stage(txt, gravity=G * u, mpu=mpu)


@pytest.fixture(scope="module")
def swing():
    # 5 degrees, 1 ms steps, 1000 fps: two periods
    return simulate(pendulum(5.0), duration=4.2, dt=1e-3, fps=1000, record="all")


def test_pendulum_angle_agrees_with_transforms_and_small_amplitude_period(swing):
    ang = swing.channel("/Hinge", "coordinate:angle")[:, 0]
    # the body's own rotation about Y (frame 0 is the world, frame 1 turns with the bob)
    from_pose = np.degrees(angle_about(swing.orientations[:, 0, 0], 1))
    assert np.max(np.abs(ang - from_pose)) <= 1e-9
    # period from the downward zero crossings (linear interpolation at 1 kHz: the curvature is 0
    # at a crossing, so the interpolation error is O(dt^3)); analytic T0 (1 + th0^2/16): the next
    # term 11 th0^4 / 3072 is 2e-7 and Stormer-Verlet's period error (w h)^2 / 24 is 4e-7
    t = swing.times
    i = np.flatnonzero((ang[:-1] > 0) & (ang[1:] <= 0))
    tc = t[i] + ang[i] / (ang[i] - ang[i + 1]) * (t[1] - t[0])
    th0 = math.radians(5.0)
    period = 2 * math.pi * math.sqrt(L / G) * (1 + th0 ** 2 / 16)
    assert len(tc) >= 2
    assert abs((tc[1] - tc[0]) - period) / period <= 2e-6
    # the rate is the angle's derivative (central difference at 1 kHz: error dt^2/6 |th'''| = 5e-6 deg/s)
    rate = swing.channel("/Hinge", "rate:angle")[:, 0]
    fd = (ang[2:] - ang[:-2]) / (2 * (t[1] - t[0]))
    assert np.max(np.abs(rate[1:-1] - fd)) <= 2e-5


def test_pendulum_energy_within_the_integrators_bound(swing):
    e = swing.channel("/Scene", "kineticEnergy")[:, 0] + swing.channel("/Scene", "potentialEnergy")[:, 0]
    amplitude = 1.0 * G * L * (1 - math.cos(math.radians(5.0)))  # the energy that moves
    # Stormer-Verlet is symplectic: no drift. For the linear oscillator x = A cos(W t_n) with
    # cos(W h) = 1 - (w h)^2 / 2, the energy of the central velocity swings between E and
    # E (1 - (w h)^2 / 4) exactly (w h = 3.1e-3); the pendulum's nonlinearity changes that by
    # O(th0^2) = 0.8 %, so the bound is (w h)^2 / 4 (1 + th0^2) of the moving energy
    w, th0 = math.sqrt(G / L), math.radians(5.0)
    bound = (w * 1e-3) ** 2 / 4 * (1 + th0 ** 2) * amplitude
    dev = np.abs(e - e[0])
    assert dev.max() <= bound
    # no drift: the last period's largest error is the first period's
    n = int(round(2 * math.pi * math.sqrt(L / G) / 1e-3))
    assert dev[-n:].max() <= 1.01 * dev[:n].max()
    # and it is not trivially constant: kinetic energy goes from 0 to the full amplitude
    ke = swing.channel("/Scene", "kineticEnergy")[:, 0]
    assert ke[0] <= 1e-9 and ke.max() >= 0.99 * amplitude


@pytest.mark.parametrize("max_turn", [None, 5e-4])
def test_pivot_reaction_of_a_point_mass_on_a_massless_link(max_turn):
    """Reaction on the bob = m (g cos th + L th'^2) along the link, towards the pivot (1e-6
    relative). The recorded force is the impulse of the step that starts at the frame / h: in
    SHAKE exactly m (g cos th_n + (|v_n+1/2|^2 + |v_n-1/2|^2) / (2 L)); with the central rate
    th' = (w_n+1/2 + w_n-1/2) / 2 the formula differs by m L (h th'')^2 / 4 <= 2.3e-7 relative at
    h = 2.5e-4 s (th'' <= g / L sin 60 deg, tension >= m g cos 60 deg). The identity holds for
    poses exactly on the link; Newton leaves each of the three poses it reads (x_n-1, x_n, x_n+1)
    up to tol off, which moves the formula by up to 3 m tol / h^2 = 1e-5 relative at the default
    tol = 1e-12 (the run lands anywhere below it), 1e-7 at the tol = 1e-14 used here. The radial
    equation holds for any inertia of the bob; a small one (1e-4 kg m^2, a 1 kg ball of 1.6 cm
    radius) keeps the force across the link, I th'' / L, small. With max_turn 5e-4 the fast steps
    are retried as halves (4,620 of them): a frame's reaction is then the first half-step's impulse
    over its kick, and holds the same bound (measured 2.75e-7 against 2.78e-7; read after the whole
    retried step instead, it was 3.2e-4 off)."""
    I = 1e-4
    r = simulate(pendulum(60.0, inertia=I), duration=2.0, dt=2.5e-4, fps=200, record="joints", tol=1e-14,
                 max_turn=max_turn)
    assert (r.reduced_steps[0] > 1000) == (max_turn is not None)
    F = r.channel("/Hinge", "forceLocal")[:, 0]  # joint frame 0 = world axes here
    # the first frame of a run has no reaction: the first step's impulses also undo the
    # leapfrog start's half step of gravity along the joints (docs/recording.md)
    assert np.all(np.isnan(F[0]))
    F = F[1:]
    th = np.radians(r.channel("/Hinge", "coordinate:angle")[1:, 0])
    thd = np.radians(r.channel("/Hinge", "rate:angle")[1:, 0])
    tension = 1.0 * (G * np.cos(th) + L * thd ** 2)
    link = (r.positions[1:, 0, 0] - 0.0) / L  # unit vector pivot -> bob
    along = -np.sum(F * link, axis=1)
    assert np.max(np.abs(along - tension) / tension) <= 1e-6
    # no force across the link beyond the inertia's I |th''| / L <= I g / L
    assert np.max(np.linalg.norm(F + along[:, None] * link, axis=1)) <= I * G / L
    assert tension.max() > 1.5 * tension.min()  # the swing really varies the tension


@pytest.mark.parametrize("max_turn", [None, 6e-4])
def test_recorded_velocities_agree_with_finite_differences(max_turn):
    """60 degrees at 2 kHz: central differences of the recorded positions / orientations are
    off by dt^2/6 |x'''| <= 2.6e-6 m/s (|x'''| <= L w^3 (1 + 3 th0) = 63 m/s^3). With max_turn
    6e-4 most steps are retried as halves (2,486): the frame's velocity is interpolated between
    the half-step velocities around it (measured 2.4e-6 m/s; from the end of the retried step
    instead, it was 1.8e-3 off)."""
    r = simulate(pendulum(60.0), duration=1.0, dt=5e-4, fps=2000, record="bodies", max_turn=max_turn)
    assert (r.reduced_steps[0] > 1000) == (max_turn is not None)
    dt = r.times[1] - r.times[0]
    x = r.positions[:, 0, 0]
    v = r.channel("/Bob", "velocity")[:, 0]
    fd = (x[2:] - x[:-2]) / (2 * dt)
    assert np.max(np.abs(v[1:-1] - fd)) <= 3e-6
    # a half-step velocity (off by h/2 |a| ~ 2e-3 m/s) would fail this by far
    th = angle_about(r.orientations[:, 0, 0], 1)
    om = r.channel("/Bob", "angularVelocity")[:, 0]
    assert np.max(np.abs(om[1:-1, 1] - np.degrees((th[2:] - th[:-2]) / (2 * dt)))) <= 3e-6 * DEG
    assert np.max(np.abs(om[:, [0, 2]])) <= 1e-9


def test_multi_turn_angle_and_limit_flag():
    # started at the bottom fast enough to go over the top: the angle passes 360 degrees
    r = simulate(pendulum(0.0, omega0_deg=500.0), duration=3.0, dt=1e-3, fps=60, record="joints")
    ang = r.channel("/Hinge", "coordinate:angle")[:, 0]
    from_pose = np.degrees(np.unwrap(2 * np.arctan2(r.orientations[:, 0, 0, 1], r.orientations[:, 0, 0, 3])))
    assert np.abs(ang).max() > 720.0
    assert np.max(np.abs(ang - from_pose)) <= 1e-9
    # a lower limit at +10 degrees: released at 40 degrees, the pendulum swings onto it and gravity
    # holds it there (the limit is inelastic)
    r = simulate(pendulum(40.0, limit_lower=10.0, inertia=1e-6), duration=1.0, dt=1e-3, fps=100, record="joints")
    ang = r.channel("/Hinge", "coordinate:angle")[:, 0]
    lim = r.channel("/Hinge", "limitActive:angle")[:, 0]
    assert lim[0] == 0 and lim[-1] == 1
    # it acts exactly where the pendulum sits on the limit
    assert np.all(np.abs(ang[lim == 1] - 10.0) <= 1e-6)
    assert np.all(ang[lim == 0] > 10.0 + 1e-6)
    # held on the limit the joint carries the weight's torque: m g L sin(10 deg) about the axis
    torque = r.channel("/Hinge", "torqueLocal")[-1, 0]
    assert abs(abs(torque[1]) - G * L * math.sin(math.radians(10.0))) <= 1e-6


def test_ball_joint_rotations_have_no_coordinate():
    # a ball joint's per-axis twists jump by 180 degrees: none is recorded, the reaction is
    txt = (body("Bob", pos=(0, 0, -1.0), mass=1.0, inertia=(1e-3,) * 3)
           + joint("PhysicsSphericalJoint", "Ball", "Bob", pos1=(0, 0, 1.0)))
    r = simulate(stage(txt, gravity=G), duration=0.05, dt=1e-3, fps=100, record="joints")
    assert sorted(c.name for c in r.channels) == ["forceLocal", "torqueLocal"]
    # hanging at rest: the joint carries the weight, straight up (gravity as read: a float
    # attribute); the Newton stop at 1e-12 m leaves up to m tol / h^2 = 1e-6 N in a step's impulse
    assert np.allclose(r.channel("/Ball", "forceLocal")[1:, 0], -r.model.gravity, rtol=0, atol=1e-6)


def test_universal_joint_records_its_cardan_angles():
    """A universal joint (rotZ locked) records its two Cardan angles: about frame 0's x, then
    about frame 1's y; they agree with the bodies' orientation to round-off, through a swing
    down past 90 deg and a spin (the frames are the world's at t = 0)."""
    txt = (body("Rod", pos=(0.5, 0, 0), mass=1.0, inertia=(1e-3, 0.02, 0.02), angvel_deg=(300, 0, 0))
           + joint("PhysicsJoint", "U", "Rod", pos1=(-0.5, 0, 0), schemas='"PhysicsLimitAPI:transX", '
                   '"PhysicsLimitAPI:transY", "PhysicsLimitAPI:transZ", "PhysicsLimitAPI:rotZ"',
                   extra="\n    ".join(f"float limit:{n}:physics:low = 1\n    float limit:{n}:physics:high = -1"
                                       for n in ("transX", "transY", "transZ", "rotZ"))))
    r = simulate(stage(txt, gravity=G), duration=1.0, dt=1e-3, fps=100, record="joints")
    a = r.channel("/U", "coordinate:rotX")[:, 0]
    b = r.channel("/U", "coordinate:rotY")[:, 0]
    q = r.orientations[:, 0, 0]  # xyzw; frame 1 = the body's rotation since t = 0 (identity start)
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    R = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                  np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                  np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)
    ex1, ey1, ez1 = R[:, :, 0], R[:, :, 1], R[:, :, 2]
    a_pose = np.degrees(np.unwrap(np.arctan2(ey1[:, 2], ey1[:, 1])))  # e1_y in frame 0's y-z plane
    b_pose = np.degrees(np.unwrap(np.arctan2(ez1[:, 0], ex1[:, 0])))  # e0_x in frame 1's z-x plane
    assert np.max(np.abs(a - a_pose)) <= 1e-7 and np.max(np.abs(b - b_pose)) <= 1e-7
    # the motion is large: a sweeps over 100 deg while b passes 90 deg (where an angle measured
    # about frame 0's y axis instead would be singular)
    assert np.ptp(a) > 100.0 and np.max(np.abs(b)) > 90.0, (np.ptp(a), np.max(np.abs(b)))


def test_recording_leaves_a_continued_run_unchanged():
    """The look-ahead step that completes the last frame is undone: a solver that recorded
    continues exactly like one that did not."""
    from usdphys.solver import Solver
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(pendulum(60.0))
    a, b = Solver(model), Solver(model)
    a.run(5, 10, 1e-3, record="all")
    b.run(5, 10, 1e-3)
    ra, rb = a.run(5, 10, 1e-3, record="joints"), b.run(5, 10, 1e-3)
    assert np.array_equal(ra.pos, rb.pos) and np.array_equal(ra.rot, rb.rot)
    assert np.array_equal(a.state()[2], b.state()[2])


def test_world_residual_and_stage_units(tmp_path):
    r = simulate(pendulum(30.0, mpu=0.01), duration=0.5, dt=1e-3, fps=50, record="bodies,world")
    res = r.channel("/Scene", "constraintResidual")[:, 0]
    # the largest residual of any frame is the run's largest (frame 0: the assembly)
    assert res[1:].max() == r.max_constraint_error[0]
    # physics:velocity in stage units (cm/s on a centimetre stage), the channel in m/s
    src = tmp_path / "cm.usda"
    export(pendulum(30.0, mpu=0.01), src)
    r = simulate(str(src), duration=0.5, dt=1e-3, fps=50, record="bodies")
    layer = Sdf.Layer.FindOrOpen(str(r.write(tmp_path / "cm_result.usda")))
    path = Sdf.Path("/Bob.physics:velocity")
    v = np.asarray(layer.QueryTimeSample(path, 20.0))
    assert np.allclose(v, r.channel("/Bob", "velocity")[20, 0] / 0.01, rtol=1e-6, atol=1e-4)  # float precision


# ------------------------------------------------------------------ CLI and plot
@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("rec")
    src = d / "pend.usda"
    export(pendulum(30.0), src)
    code = main(["simulate", str(src), "-o", str(d / "out.usda"), "--duration", "1", "--fps", "50",
                 "--record", "joints,world", "--table", str(d / "out.csv")])
    assert code == 0
    return d


def test_cli_records_the_groups_asked_for(cli_run):
    from usdphys.table import read_table

    cols = read_table(cli_run / "out.csv")
    assert "/Hinge.coordinate:angle [deg]" in cols and "/Scene.kineticEnergy [J]" in cols
    assert not any(".velocity" in c for c in cols)
    assert len(cols["time [s]"]) == 51


def test_cli_bad_record_group_is_one_line(tmp_path, capsys):
    src = tmp_path / "pend.usda"
    export(pendulum(30.0), src)
    code = main(["simulate", str(src), "-o", str(tmp_path / "o.usda"), "--record", "joints,springs"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "unknown group 'springs'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.usda").exists()


@pytest.mark.parametrize("source", ["out.csv", "out.usda"])
def test_plot_holds_the_named_series(cli_run, source):
    pytest.importorskip("matplotlib")
    from usdphys.plot import plot
    from usdphys.table import read_table

    fig = plot(cli_run / source, cli_run / f"plot_{source}.svg")
    assert (cli_run / f"plot_{source}.svg").read_text().count("<path") > 10
    panels = {ax.get_ylabel(): ax for ax in fig.axes}
    assert {"angle [deg]", "angular velocity [deg/s]", "force [N]", "torque [N m]", "energy [J]"} <= set(panels)
    angle = {ln.get_label(): ln for ln in panels["angle [deg]"].lines}
    cols = read_table(cli_run / "out.csv")
    assert np.array_equal(angle["/Hinge"].get_ydata(), cols["/Hinge.coordinate:angle [deg]"])
    assert np.allclose(angle["/Hinge"].get_xdata(), cols["time [s]"], rtol=0, atol=1e-12)
    energy = {ln.get_label(): ln for ln in panels["energy [J]"].lines}
    assert np.array_equal(energy["/Scene kineticEnergy"].get_ydata(), cols["/Scene.kineticEnergy [J]"])
    assert panels["energy [J]"] is not fig.axes[0] or len(fig.axes) == 1
    assert fig.axes[-1].get_xlabel() == "time [s]"


def test_plot_cli_and_errors(cli_run, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    assert main(["plot", str(cli_run / "out.csv"), "--what", "energy", "-o", str(tmp_path / "e.png")]) == 0
    assert (tmp_path / "e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["plot", str(cli_run / "out.csv"), "--what", "bodies", "-o", str(tmp_path / "b.png")]) == 1
    assert "nothing to plot" in capsys.readouterr().err
    assert main(["plot", str(cli_run / "out.csv"), "-o", str(tmp_path / "b.jpg")]) == 1
    assert ".png, .svg, .pdf" in capsys.readouterr().err
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # as if not installed
    assert main(["plot", str(cli_run / "out.csv"), "-o", str(tmp_path / "m.png")]) == 1
    err = capsys.readouterr().err.strip()
    assert "needs matplotlib" in err and len(err.splitlines()) == 1 and not (tmp_path / "m.png").exists()


def test_record_argument_errors():
    with pytest.raises(UsdphysError, match="unknown group 'x'"):
        simulate(pendulum(5.0), duration=0.01, record="x")
    r = simulate(pendulum(5.0), duration=0.05, record="joints")
    with pytest.raises(UsdphysError, match="nothing recorded as 'nope'"):
        r.channel("/Hinge", "nope")
