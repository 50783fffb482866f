"""MbdMotor in the solver: position and velocity motors are rheonomic constraint
rows (exact, not stiff springs), force motors a generalised force; every time-function type
with repeat; motor efforts. Analytic references; CPU."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from sim_helpers import angle_about, body, joint, stage
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate
from usdphys.types.timefunc import TimeFunction
from reference.timefunc import evaluate


def motor(name, joint_path, mode, dof="angle", fn=None, target=None):
    """An MbdMotor; fn: dict of mbd:function:* attributes (MbdTimeFunctionAPI)."""
    lines = [f"rel mbd:joint = </{joint_path}>", f'uniform token mbd:dof = "{dof}"',
             f'uniform token mbd:mode = "{mode}"']
    api = ""
    if fn is not None:
        api = '( prepend apiSchemas = ["MbdTimeFunctionAPI"] )'
        for k, v in fn.items():
            if k == "type":
                lines.append(f'uniform token mbd:function:type = "{v}"')
            elif k == "repeat":
                lines.append(f"bool mbd:function:repeat = {str(v).lower()}")
            elif k == "coefficients":
                lines.append(f"double[] mbd:function:coefficients = [{', '.join(repr(float(c)) for c in v)}]")
            elif k == "data":
                pts = ", ".join(f"({float(a)!r}, {float(b)!r})" for a, b in v)
                lines.append(f"double2[] mbd:function:data = [{pts}]")
            else:
                lines.append(f"double mbd:function:{k} = {float(v)!r}")
    if target is not None:
        lines.append(target)
    return f'def MbdMotor "{name}" {api} {{\n    ' + "\n    ".join(lines) + "\n}\n"


# ------------------------------------------------------------------------------ slider-crank
R_CRANK, L_ROD = 0.25, 1.0  # joint frames are float in USD: binary-exact lengths


def slider_crank(motor_text: str, extra: str = "") -> str:
    """Crank (revolute about Y at the origin), rod, slider on a prismatic along X, closed with
    3-D revolutes (a redundant planar loop). At q = 0 the crank points along +X."""
    r, l = R_CRANK, L_ROD
    return (body("crank", pos=(r / 2, 0, 0), mass=1.0, inertia=(0.0625, 0.0625, 0.0625))
            + body("rod", pos=(r + l / 2, 0, 0), mass=0.5, inertia=(0.0625, 0.0625, 0.0625))
            + body("slider", pos=(r + l, 0, 0), mass=2.0, inertia=(0.125, 0.125, 0.125))
            + joint("PhysicsRevoluteJoint", "crank_pin", "crank", pos1=(-r / 2, 0, 0), axis="Y", extra=extra)
            + joint("PhysicsRevoluteJoint", "crank_rod", "rod", body0="crank", pos0=(r / 2, 0, 0), pos1=(-l / 2, 0, 0),
                    axis="Y")
            + joint("PhysicsRevoluteJoint", "rod_slider", "slider", body0="rod", pos0=(l / 2, 0, 0), axis="Y")
            + joint("PhysicsPrismaticJoint", "rail", "slider", pos0=(r + l, 0, 0), axis="X")
            + motor_text)


def slider_x(theta):
    """Closed form: the crank pin is at (r cos q, 0, -r sin q) (rotation about +Y)."""
    return R_CRANK * np.cos(theta) + np.sqrt(L_ROD ** 2 - (R_CRANK * np.sin(theta)) ** 2)


def test_slider_crank_follows_a_position_motor_exactly():
    """q(t) = 360 t + 90 t^2 degrees (polynomial function), gravity on. Requirement: slider
    within 1e-6 m of the closed form at dt = 1e-4; the rheonomic row is solved to the Newton
    tolerance (1e-12), so the error is round-off-level (second assertion)."""
    fn = dict(type="polynomial", coefficients=[0.0, 360.0, 90.0])
    txt = slider_crank(motor("drive", "crank_pin", "position", fn=fn))
    r = simulate(stage(txt, gravity=9.81), duration=2.0, dt=1e-4, fps=100)
    t = r.times
    theta = np.radians(360.0 * t + 90.0 * t * t)
    s = r.body_paths.index("/slider")
    assert np.max(np.abs(r.positions[:, 0, s, 0] - slider_x(theta))) <= 1e-6
    assert np.max(np.abs(r.positions[:, 0, s, 0] - slider_x(theta))) <= 1e-10  # what the method gives
    c = r.body_paths.index("/crank")
    assert np.max(np.abs(angle_about(r.orientations[:, 0, c], 1) - theta)) <= 1e-10
    assert r.max_constraint_error[0] <= 1e-10


def test_motor_torque_by_power_balance():
    """A position motor swings a compound pendulum up along q = a t^2 in gravity. Its effort is
    tau = I_p q'' + m g L sin q, and its work equals the mechanical energy gained."""
    m, L, Ic, g, a_deg = 2.0, 0.5, 0.0625, 9.81, 40.0
    a = math.radians(a_deg)
    txt = (body("bob", pos=(0, 0, -L), mass=m, inertia=(Ic, Ic, Ic))
           + joint("PhysicsRevoluteJoint", "pivot", "bob", pos1=(0, 0, L), axis="Y")
           + motor("m", "pivot", "position", fn=dict(type="polynomial", coefficients=[0.0, 0.0, a_deg])))
    dt, T = 1e-4, 2.0
    r = simulate(stage(txt, gravity=g), duration=T, dt=dt, fps=1 / dt)  # one output frame per step
    assert r.motor_paths == ["/m"]
    tau = r.motor_efforts[1:, 0, 0]  # frame f holds the effort of the step from t_f - h
    tn = r.times[1:] - dt
    Ip = Ic + m * L * L
    q = a * tn * tn
    tau_exact = Ip * 2 * a + m * g * L * np.sin(q)
    # Stormer-Verlet / SHAKE: the step's impulse is h tau(t_n) + O(h^3) (measured 4e-8
    # relative); the very first step also absorbs the leapfrog start of the joint (constraint
    # impulses are not pre-kicked: an O(1) effort error in that one step), so it is left out.
    assert np.max(np.abs(tau[1:] - tau_exact[1:])) <= 1e-6 * np.max(np.abs(tau_exact))
    # work = sum of tau(t_n) q'(t_n) h, plus the end correction h/2 (P(T) - P(0)) that makes the
    # left-point sum a trapezoidal (second-order) quadrature; P(0) = 0 since q'(0) = 0, so the
    # first step's start error does no work either
    power = tau * 2 * a * tn
    qT = a * T * T
    power_T = (Ip * 2 * a + m * g * L * math.sin(qT)) * 2 * a * T
    work = np.sum(power) * dt + 0.5 * dt * power_T
    energy = 0.5 * Ip * (2 * a * T) ** 2 + m * g * L * (1 - math.cos(qT))
    assert abs(work - energy) <= 1e-6 * energy


def test_velocity_motor_integrates_its_data_function_with_repeat():
    """Chrono's slider-crank speed profile (data, repeat: start 0, width 16, shift 16) on a
    flywheel: the angle is the integral of u exactly (Simpson per step: exact on every linear
    piece; a knot inside a step leaves O(h^3)), over many turns."""
    data = [(0.0, 0.0), (1.0, 180.0), (4.0, 180.0), (5.0, 0.0), (8.0, 0.0), (9.0, -180.0), (12.0, -180.0),
            (13.0, 0.0)]
    fn = dict(type="data", data=data, repeat=True, repeatStart=0.0, repeatWidth=16.0, repeatShift=16.0)
    txt = (body("w", pos=(0, 0, 0), mass=1.0, inertia=(0.5, 0.5, 0.5))
           + joint("PhysicsRevoluteJoint", "axle", "w", axis="Z") + motor("m", "axle", "velocity", fn=fn))
    r = simulate(stage(txt), duration=20.0, dt=1e-3, fps=20)
    spec = TimeFunction(type="data", data=data, repeat=True, repeatStart=0.0, repeatWidth=16.0, repeatShift=16.0)
    fine = np.linspace(0.0, 20.0, 200001)
    u = np.radians(evaluate(spec, fine))
    integral = np.concatenate([[0.0], np.cumsum(0.5 * (u[1:] + u[:-1]) * np.diff(fine))])
    expected = np.interp(r.times, fine, integral)  # trapezoid on a 1e-4 grid: exact on the pieces
    th = angle_about(r.orientations[:, 0, 0], 2)
    assert np.max(th) > 2 * math.pi  # several turns
    assert np.max(np.abs(th - expected)) <= 1e-9


def test_linear_position_and_force_motors():
    """Prismatic guides: a position motor x = 1.6 sin(pi t) (sine function) and a force motor
    F = 200 N on 40 kg (constant): x = F t^2 / (2 m), exact with the leapfrog start."""
    pos_fn = dict(type="sine", amplitude=1.6, frequency=0.5, phase=0.0)
    txt = (body("s1", pos=(0, 0, 0), mass=40.0) + joint("PhysicsPrismaticJoint", "g1", "s1", axis="X")
           + motor("m1", "g1", "position", dof="distance", fn=pos_fn)
           + body("s2", pos=(0, 3, 0), mass=40.0) + joint("PhysicsPrismaticJoint", "g2", "s2", pos0=(0, 3, 0), axis="X")
           + motor("m2", "g2", "force", dof="distance", fn=dict(type="constant", value=200.0)))
    r = simulate(stage(txt, gravity=9.81), duration=2.0, dt=1e-3, fps=50)
    t = r.times
    np.testing.assert_allclose(r.positions[:, 0, 0, 0], 1.6 * np.sin(math.pi * t), rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.positions[:, 0, 1, 0], 200.0 / 80.0 * t * t, rtol=0, atol=1e-12)
    i = r.motor_paths.index("/m2")
    np.testing.assert_array_equal(r.motor_efforts[1:, 0, i], 200.0)  # the generalised force itself
    # the position motor's effort is m x'' = -m pi^2 1.6 sin(pi t) at the step start (O(h^2))
    j = r.motor_paths.index("/m1")
    tn = t[1:] - 1e-3
    np.testing.assert_allclose(r.motor_efforts[2:, 0, j], -40.0 * math.pi ** 2 * 1.6 * np.sin(math.pi * tn[1:]),
                               rtol=0, atol=1e-3)


def test_angular_force_motor_with_time_samples():
    """mode = force, target time-sampled (24 codes/s): torque 0 -> 2 N m over 1 s then held;
    wheel angle = t^3 / (3 I) up to 1 s (cubic: exact for Stormer-Verlet up to the start)."""
    I = 0.5
    target = "double mbd:target.timeSamples = { 0: 0, 24: 2, 48: 2 }"
    txt = (body("w", pos=(0, 0, 0), mass=1.0, inertia=(I, I, I)) + joint("PhysicsRevoluteJoint", "axle", "w", axis="Z")
           + motor("m", "axle", "force", target=target))
    r = simulate(stage(txt), duration=1.0, dt=1e-3, fps=100)
    th = angle_about(r.orientations[:, 0, 0], 2)
    # x_n = a t_n^3/6 - a h^2 t_n / 6 for a linear ramp a t with this start: 3e-7 rad at t = 1
    np.testing.assert_allclose(th, r.times ** 3 / (3 * I), rtol=0, atol=1e-6)


def test_motor_errors_and_warnings(caplog):
    lock_x = "float limit:transX:physics:low = 1\n    float limit:transX:physics:high = -1"
    txt = (body("s", pos=(0, 0, 0)) + joint("PhysicsJoint", "g", "s", extra=lock_x, schemas='"PhysicsLimitAPI:transX"')
           + motor("m", "g", "position", dof="transX", fn=dict(type="constant", value=0.0)))
    with pytest.raises(UsdphysError, match=r"/m: mbd:dof = 'transX' is not a free DOF of /g"):
        simulate(stage(txt), duration=0.01)
    disabled = (body("s", pos=(0, 0, 0)) + joint("PhysicsRevoluteJoint", "j", "s", axis="Z",
                                                 extra="bool physics:jointEnabled = 0")
                + motor("m", "j", "velocity", fn=dict(type="constant", value=10.0)))
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        r = simulate(stage(disabled), duration=0.01)
    assert "/m: its joint /j is not simulated" in caplog.text
    assert r.motor_paths == []
    two = (body("w", pos=(0, 0, 0)) + joint("PhysicsRevoluteJoint", "j", "w", axis="Z")
           + motor("a", "j", "velocity", fn=dict(type="constant", value=1.0))
           + motor("b", "j", "position", fn=dict(type="constant", value=0.0)))
    with pytest.raises(UsdphysError, match="already driven"):
        simulate(stage(two), duration=0.01)


def test_worlds_and_repeated_runs_keep_element_state():
    """Three worlds of a motor + spring model equal one world bit for bit, and two run() calls
    of 50 frames equal one of 100 bit for bit (time functions continue at the same times,
    element state and the Newton warm start persist; the second call projects nothing)."""
    from usdphys.usd.reader import read_stage
    from usdphys.solver import Solver

    txt = slider_crank(motor("drive", "crank_pin", "velocity", fn=dict(type="sine", amplitude=720.0, frequency=1.0)),
                       ) + ('def MbdSpringDamper "S" {\n    rel mbd:body1 = </slider>\n'
                            '    point3d mbd:localPos0 = (2, 0, 0)\n    double mbd:stiffness = 50\n'
                            '    double mbd:damping = 1\n    double mbd:restLength = 0.5\n}\n')
    model, _ = read_stage(stage(txt, gravity=9.81))
    one = Solver(model, "cpu").run(100, 10, 1e-3)
    many = Solver(model.replicate(3), "cpu").run(100, 10, 1e-3)
    for w in range(3):
        np.testing.assert_array_equal(many.pos[:, w], one.pos[:, 0])
        np.testing.assert_array_equal(many.motor_effort[:, w], one.motor_effort[:, 0])
    split = Solver(model, "cpu")
    a = split.run(50, 10, 1e-3)
    b = split.run(50, 10, 1e-3)
    np.testing.assert_array_equal(np.concatenate([a.pos, b.pos[1:]]), one.pos)
    # the second run reuses the first one's frame buffers: what the first returned is its own
    np.testing.assert_array_equal(np.concatenate([a.motor_effort, b.motor_effort[1:]]), one.motor_effort)


def test_a_position_motor_keeps_its_time_across_calls_with_other_step_sizes():
    """Calls with another dt go on from the time reached: the crank follows
    q(t) = 360 t + 90 t^2 degrees through calls of dt = 1, 2 and 0.5 ms as in one run."""
    from usdphys.solver import Solver
    from usdphys.usd.reader import read_stage

    fn = dict(type="polynomial", coefficients=[0.0, 360.0, 90.0])
    model, _ = read_stage(stage(slider_crank(motor("drive", "crank_pin", "position", fn=fn)), gravity=9.81))
    c = model.body_paths.index("/crank")
    solver = Solver(model, "cpu")
    t0, worst = 0.0, 0.0
    for frames, substeps, dt in ((20, 10, 1e-3), (20, 5, 2e-3), (10, 20, 5e-4), (20, 10, 1e-3)):
        r = solver.run(frames, substeps, dt)
        t = t0 + np.arange(frames + 1) * substeps * dt
        theta = np.radians(360.0 * t + 90.0 * t * t)
        worst = max(worst, np.max(np.abs(angle_about(r.rot[:, 0, c], 1) - theta)))
        t0 = t[-1]
    assert t0 == pytest.approx(0.7) and worst <= 1e-10  # the rheonomic row holds to the tolerance
