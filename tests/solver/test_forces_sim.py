"""Force elements, loads, bushings and composite joints in the solver, against analytic or
independently integrated answers (CPU); method in docs/forces.md.

Accuracy model (docs/forces.md): spring-damper rows use the trapezoidal rule on half-step
forces inside the SHAKE / Stormer-Verlet step, so trajectories are second order: the phase
error of an oscillator is (w h)^2 / 12 relative, i.e. ~1e-7 relative at w = 10 rad/s,
h = 1e-4. Rotations additionally carry the solver's Cayley-map error (h w)^2 / 12 per step.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import warp as wp
from scipy.integrate import solve_ivp

from sim_helpers import DEG, angle_about, body, damped, joint, stage, v3
from usdphys.errors import UsdphysError
from usdphys.types.laws import ScalarLaw
from reference.laws import law_np
from reference.user_laws import LAWS as USER_LAWS
from usdphys.simulate import simulate


def spring(name, b1, b0=None, p0=(0, 0, 0), p1=(0, 0, 0), **attrs):
    lines = [f"rel mbd:body1 = </{b1}>"] if b1 else []
    if b0:
        lines.append(f"rel mbd:body0 = </{b0}>")
    lines.append(f"point3d mbd:localPos0 = {v3(p0)}")
    lines.append(f"point3d mbd:localPos1 = {v3(p1)}")
    for k, v in attrs.items():
        if isinstance(v, str):  # raw attribute lines (curves, maps)
            lines.append(v)
        else:
            lines.append(f"double mbd:{k} = {float(v)!r}")
    body_lines = "\n    ".join(lines)
    return f'def MbdSpringDamper "{name}" {{\n    {body_lines}\n}}\n'


# ------------------------------------------------------------------------------ TSDA
@pytest.mark.parametrize("mpu,kpu", [(1.0, 1.0), (0.01, 0.001)])
def test_point_to_point_damped_oscillator(mpu, kpu):
    """A body on a spring-damper to a world point, along an oblique line: m x'' = -k x - c x'.
    Authored in stage units (cm and g in the second case) to check the conversions."""
    m, k, c, A, L0 = 1.0, 100.0, 2.0, 0.1, 1.0  # w = 10 rad/s, zeta = 0.1
    n = np.array([1.0, 2.0, 2.0]) / 3.0
    anchor = np.array([0.3, -0.2, 0.5])
    x0 = anchor + (L0 + A) * n
    txt = body("B", pos=tuple(x0 / mpu), mass=m / kpu) + spring(
        "S", "B", p0=tuple(anchor / mpu), stiffness=k / kpu, damping=c / kpu, restLength=L0 / mpu)
    r = simulate(stage(txt, mpu=mpu, kpu=kpu), duration=3.0, dt=1e-4, fps=1000)
    d = r.positions[:, 0, 0] - anchor
    xa = damped(r.times, A, 0.0, k, c, m)
    # requirement 1e-5 m at dt = 1e-4; second-order theory gives ~3e-8 m here
    assert np.max(np.abs(d @ n - L0 - xa)) <= 1e-5
    # the motion stays on the line (no transverse force): round-off only
    assert np.max(np.linalg.norm(d - np.outer(d @ n, n), axis=1)) <= 1e-12


def test_point_to_point_oscillator_is_second_order():
    m, k, c, A = 1.0, 100.0, 2.0, 0.1
    txt = body("B", pos=(1.0 + A, 0, 0), mass=m) + spring("S", "B", stiffness=k, damping=c, restLength=1.0)
    errs = []
    for dt in (1e-3, 1e-4):
        r = simulate(stage(txt), duration=2.0, dt=dt, fps=100)
        errs.append(np.max(np.abs(r.positions[:, 0, 0, 0] - 1.0 - damped(r.times, A, 0.0, k, c, m))))
    assert 80 < errs[0] / errs[1] < 125, errs  # 100 for second order


def test_curves_and_map_match_an_independent_integration():
    """Nonlinear curve and map laws against scipy (rtol 1e-12) on the same NumPy law; two
    worlds-independent bodies, one per law. The curves have kinks, so the scheme is second
    order only between kinks: 2e-6 m is ~100x the smooth-law error at this h."""
    m = 1.0
    spring_curve = [(-0.2, -40.0), (0.0, 0.0), (0.05, 8.0), (0.3, 80.0)]  # stiffer in extension
    damp_curve = [(-2.0, -3.0), (0.0, 0.0), (2.0, 5.0)]
    map_def = [0.5, 1.0, 1.5]
    map_vel = [-1.0, 1.0]
    map_val = [-30.0, 0.0, 40.0, -32.0, 2.0, 44.0]  # F(L, Ldot), row-major per velocity
    curves = '''double2[] mbd:springForceCurve = [(-0.2, -40), (0, 0), (0.05, 8), (0.3, 80)]
    double2[] mbd:dampingForceCurve = [(-2, -3), (0, 0), (2, 5)]'''
    mapping = '''double[] mbd:forceMapDeformation = [0.5, 1.0, 1.5]
    double[] mbd:forceMapVelocity = [-1, 1]
    double[] mbd:forceMapValues = [-30, 0, 40, -32, 2, 44]'''
    txt = (body("C", pos=(1.15, 0, 0), mass=m) + body("M", pos=(0, 1.25, 0), mass=m)
           + spring("SC", "C", restLength=1.0, preload=1.5, extra=curves)
           + spring("SM", "M", preload=0.5, extra=mapping))
    r = simulate(stage(txt), duration=2.0, dt=1e-4, fps=200)
    laws = {
        "C": (ScalarLaw(x0=1.0, preload=1.5, spring_curve=spring_curve, damping_curve=damp_curve), 0, 1.15),
        "M": (ScalarLaw(preload=0.5, map_deformation=map_def, map_velocity=map_vel, map_values=map_val), 1, 1.25),
    }
    for name, (law, axis, L0) in laws.items():
        b = r.body_paths.index("/" + name)
        sol = solve_ivp(lambda t, y: [y[1], law_np(law, y[0], y[1])[0] / m], (0, 2.0), [L0, 0.0],
                        t_eval=r.times, rtol=1e-12, atol=1e-14, max_step=1e-3)
        assert np.max(np.abs(r.positions[:, 0, b, axis] - sol.y[0])) <= 2e-6, name


def test_zero_length_spring_gives_no_force_and_no_nan():
    """Chrono's sphere_decay TSDA: coincident points (direction undefined): no force, preload
    included, never NaN. A second spring with zero rest length is driven through L = 0."""
    txt = (body("A", pos=(0, 0, 0), vel=(0, 0, 0)) + spring("S0", "A", p0=(0, 0, 0), preload=5.0, stiffness=0.0)
           + body("B", pos=(0, 2, 0), vel=(1.0, 0, 0)) + spring("S1", "B", p0=(-0.5, 2, 0), stiffness=4.0))
    r = simulate(stage(txt), duration=3.0, dt=1e-3, fps=100)
    assert np.all(np.isfinite(r.positions))
    np.testing.assert_array_equal(r.positions[:, 0, 0], 0.0)  # exactly no force on A
    x = r.positions[:, 0, 1, 0] + 0.5
    assert x.min() < -0.1 and x.max() > 0.1  # B went through the anchor and back


def test_length_stops_are_hard():
    """maxLength / minLength are hard inequality rows: a body thrown outward stops at
    maxLength (Newton tolerance 1e-12 m), one thrown inward at minLength."""
    txt = (body("A", pos=(1.0, 0, 0), vel=(3.0, 0, 0)) + spring("SA", "A", stiffness=1.0, restLength=1.0, maxLength=1.2)
           + body("B", pos=(0, 1.0, 0), vel=(0, -3.0, 0))
           + spring("SB", "B", stiffness=1.0, restLength=1.0, minLength=0.7))
    r = simulate(stage(txt), duration=0.5, dt=1e-3, fps=1000)
    la = np.linalg.norm(r.positions[:, 0, 0], axis=1)
    lb = np.linalg.norm(r.positions[:, 0, 1], axis=1)
    assert la.max() <= 1.2 + 1e-9 and la.max() >= 1.2 - 1e-9
    assert lb.min() >= 0.7 - 1e-9 and lb.min() <= 0.7 + 1e-9


def test_spring_mass_on_a_world_spring():
    """springMass m_s at fraction f on a spring from the world to body1: the particle moves at
    f times body1's velocity, so it adds f^2 m_s (Modelica LineForceWithMass; docs/forces.md):
    the oscillator runs at sqrt(k / (m + f^2 m_s)). Starts accelerating (tests the start)."""
    m, ms, f, k, A = 1.0, 0.6, 0.5, 100.0, 0.05
    txt = body("B", pos=(1.0 + A, 0, 0), mass=m) + spring("S", "B", stiffness=k, restLength=1.0, springMass=ms,
                                                           springMassFraction=f)
    r = simulate(stage(txt), duration=1.0, dt=1e-4, fps=1000)
    xa = damped(r.times, A, 0.0, k, 1e-300, m + f * f * ms)
    assert np.max(np.abs(r.positions[:, 0, 0, 0] - 1.0 - xa)) <= 1e-6


# ------------------------------------------------------------------------------ axial
def axial(name, b1, b0=None, axis=(1, 0, 0), p0=(0, 0, 0), p1=(0, 0, 0), user_law=None, **attrs):
    lines = [f"rel mbd:body1 = </{b1}>", f"vector3d mbd:axis = {v3(axis)}",
             f"point3d mbd:localPos0 = {v3(p0)}",
             f"point3d mbd:localPos1 = {v3(p1)}"]
    if b0:
        lines.append(f"rel mbd:body0 = </{b0}>")
    if user_law:
        lines.append(f'uniform token mbd:userLaw = "{user_law}"')
    for k, v in attrs.items():
        lines.append(f"bool mbd:{k} = {str(v).lower()}" if isinstance(v, bool) else f"double mbd:{k} = {float(v)!r}")
    return f'def MbdAxialSpringDamper "{name}" {{\n    ' + "\n    ".join(lines) + "\n}\n"


def test_axial_damped_oscillator_and_constant_force():
    """Exudyn LinearSpringDamper along an oblique world axis: f = k (dx - offset) + d dv + F;
    body1 gets -f a. Equilibrium dx = offset - F / k; oscillation about it as m x'' = -k x - d x'."""
    m, k, d, off, F, A = 2.0, 200.0, 4.0, 0.5, 3.0, 0.05
    a = np.array([0.0, 0.6, 0.8])
    eq = off - F / k
    txt = body("B", pos=tuple((eq + A) * a), mass=m) + axial("S", "B", axis=tuple(a), stiffness=k, damping=d,
                                                             offset=off, force=F)
    r = simulate(stage(txt), duration=3.0, dt=1e-4, fps=1000)
    x = r.positions[:, 0, 0] @ a - eq
    assert np.max(np.abs(x - damped(r.times, A, 0.0, k, d, m))) <= 1e-5  # measured ~2e-8


def test_axial_user_law_is_compiled_into_the_kernel():
    # the law: k e + d dv + 1000 e^3 (reference.user_laws.cubic; its set of laws is the one
    # tests/solver/test_user_laws.py uses, so the suite compiles the kernel variant once)
    m, k, d, A = 2.0, 200.0, 4.0, 0.05
    plain = body("B", pos=(0.5 + A, 0, 0), mass=m) + axial("S", "B", stiffness=k, damping=d, offset=0.5)
    txt = body("B", pos=(0.5 + A, 0, 0), mass=m) + axial("S", "B", stiffness=k, damping=d, offset=0.5,
                                                         user_law="cubic")
    r = simulate(stage(txt), duration=2.0, dt=1e-4, fps=500, laws=USER_LAWS)
    sol = solve_ivp(lambda t, y: [y[1], -(k * y[0] + d * y[1] + 1000 * y[0] ** 3) / m], (0, 2.0), [A, 0],
                    t_eval=r.times, rtol=1e-12, atol=1e-14)
    # second order with the law's slopes from finite differences (Newton matrix only): 1e-5
    assert np.max(np.abs(r.positions[:, 0, 0, 0] - 0.5 - sol.y[0])) <= 1e-5
    # the next run without a law is the built-in one again
    r2 = simulate(stage(plain), duration=2.0, dt=1e-4, fps=500)
    assert np.max(np.abs(r2.positions[:, 0, 0, 0] - 0.5 - damped(r2.times, A, 0.0, k, d, m))) <= 1e-5


def test_axial_inactive_and_bad_user_law():
    txt = body("B", pos=(0.7, 0, 0)) + axial("S", "B", stiffness=100.0, offset=0.5, active=False)
    r = simulate(stage(txt), duration=0.2, dt=1e-3, fps=50)
    np.testing.assert_array_equal(r.positions[:, 0, 0], [[0.7, 0, 0]] * r.positions.shape[0])
    with pytest.raises(UsdphysError, match="Warp function"):
        simulate(stage(txt), duration=0.1, laws={"cubic": lambda *a: 0.0})


# ------------------------------------------------------------------------------ RSDA
def rsda(name, b1, p0=(0, 0, 0), **attrs):
    lines = [f"rel mbd:body1 = </{b1}>", f"point3d mbd:localPos0 = {v3(p0)}"]
    lines += [f"double mbd:{k} = {float(v)!r}" for k, v in attrs.items()]
    return f'def MbdRotationalSpringDamper "{name}" {{\n    ' + "\n    ".join(lines) + "\n}\n"


def flywheel(w0, I, extra="", pos=(1, 2, 0)):
    return (body("B", pos=pos, mass=3.0, inertia=(1, 1, I), angvel_deg=(0, 0, w0 * DEG))
            + joint("PhysicsRevoluteJoint", "J", "B", pos0=pos, axis="Z") + extra)


def test_torsional_oscillator():
    """RSDA (stiffness / damping per degree) on a revolute: I th'' = -k th - c th'.
    Amplitude 2.8 rad: the rotation map's (h w)^2/12 error is ~5e-6 rad here, under 1e-5."""
    I, k, c, w0 = 0.5, 50.0, 0.5, 30.0
    txt = flywheel(w0, I, rsda("S", "B", p0=(1, 2, 0), stiffness=k / DEG, damping=c / DEG))
    r = simulate(stage(txt), duration=3.0, dt=1e-4, fps=1000)
    th = angle_about(r.orientations[:, 0, 0], 2)
    assert np.max(np.abs(th - damped(r.times, 0.0, w0, k, c, I))) <= 1e-5


def test_torsional_oscillator_stays_second_order_through_retried_steps():
    """The same oscillator at 1 ms, with max_turn retrying every step in which the wheel turns
    more than 0.02 / 0.01 rad (about 300 / 1,500 retried steps): the spring's impulse is
    trapezoidal over the kick (h' + h) / 2 where the step size changes, so the retried runs end
    nearer the exact answer than the plain run (measured 3.6e-4 / 2.1e-4 against 4.9e-4 rad);
    over the new h alone they ended 1.1e-2 / 1.8e-2 rad off."""
    I, k, c, w0 = 0.5, 50.0, 0.5, 30.0
    txt = flywheel(w0, I, rsda("S", "B", p0=(1, 2, 0), stiffness=k / DEG, damping=c / DEG))
    errors = []
    for turn in (None, 0.02, 0.01):
        r = simulate(stage(txt), duration=3.0, dt=1e-3, fps=1000, **({} if turn is None else {"max_turn": turn}))
        assert (r.reduced_steps[0] == 0) == (turn is None)
        th = angle_about(r.orientations[:, 0, 0], 2)
        errors.append(np.max(np.abs(th - damped(r.times, 0.0, w0, k, c, I))))
    assert errors[0] < 1e-3  # second order at 1 ms: (h w)^2-scale phase error
    assert errors[1] < errors[0] and errors[2] < errors[0]


def test_torsional_spring_is_multi_turn():
    """A rest angle of three turns winds the wheel up three turns: the angle is unwrapped."""
    I, k, c = 0.5, 5.0, 2.0  # overdamped-ish: settles in a few seconds
    txt = flywheel(0.0, I, rsda("S", "B", p0=(1, 2, 0), stiffness=k / DEG, damping=c / DEG, restAngle=1080.0))
    r = simulate(stage(txt), duration=8.0, dt=1e-3, fps=100)
    th = angle_about(r.orientations[:, 0, 0], 2)
    assert th.max() > 3 * math.pi  # went past the wrap-around many times
    assert abs(th[-1] - 6 * math.pi) <= 1e-3  # e^-(c/2I) t ~ e^-16 of the initial 19 rad


def test_torsional_preload_equilibrium():
    I, k, c, P = 0.5, 5.0, 3.0, 2.0
    txt = flywheel(0.0, I, rsda("S", "B", p0=(1, 2, 0), stiffness=k / DEG, damping=c / DEG, preload=P))
    r = simulate(stage(txt), duration=10.0, dt=1e-3, fps=20)
    th = angle_about(r.orientations[:, 0, 0], 2)
    assert abs(th[-1] - P / k) <= 1e-6


# ------------------------------------------------------------------------------ loads
def load(kind, name, b1, vec, b0=None, p1=(0, 0, 0), resolve="world", extra=""):
    attr = "force" if kind == "MbdForce" else "torque"
    lines = [f"rel mbd:body1 = </{b1}>", f'uniform token mbd:resolveIn = "{resolve}"']
    if b0:
        lines.append(f"rel mbd:body0 = </{b0}>")
    if isinstance(vec, str):
        lines.append(vec)
    else:
        lines.append(f"vector3d mbd:{attr} = {v3(vec)}")
    if kind == "MbdForce":
        lines.append(f"point3d mbd:localPos1 = {v3(p1)}")
    api = '( prepend apiSchemas = ["MbdTimeFunctionAPI"] )' if extra else ""
    return f'def {kind} "{name}" {api} {{\n    ' + "\n    ".join(lines) + f"\n    {extra}\n}}\n"


def test_constant_force_and_torque():
    """Free bodies, no gravity: x = F t^2 / (2 m) (Stormer-Verlet with the leapfrog start is
    exact for constant forces: round-off only), th = T t^2 / (2 I) less the rotation map's lag:
    each step turns by 2 atan(h w / 2) instead of h w, (h w)^2 / 12 relative = 1.9e-7 at the
    final w = 1.5 rad/s."""
    F, T, m, I = np.array([1.0, -2.0, 0.5]), 0.3, 2.0, 0.5  # float-typed attributes: binary-exact values
    txt = (body("A", pos=(0, 0, 0), mass=m) + load("MbdForce", "F", "A", F)
           + body("B", pos=(5, 0, 0), mass=1.0, inertia=(I, I, I)) + load("MbdTorque", "T", "B", (0, 0, T)))
    r = simulate(stage(txt), duration=2.0, dt=1e-3, fps=50)
    t = r.times[:, None]
    np.testing.assert_allclose(r.positions[:, 0, 0], F / (2 * m) * t ** 2, rtol=0, atol=1e-12)
    th = angle_about(r.orientations[:, 0, 1], 2)
    th_exact = T / (2 * I) * r.times ** 2
    lag = (1e-3 * T / I * r.times) ** 2 / 12 * th_exact  # the Cayley map's bound, per sample
    assert np.all(np.abs(th - th_exact) <= 1.05 * lag + 1e-14)
    np.testing.assert_allclose(r.positions[:, 0, 1], [[5, 0, 0]] * len(t), atol=1e-15)


def test_force_off_centre_and_reaction_on_body0():
    """F on body1 at an arm r, -F on body0 at the same point: total momentum stays zero, and
    body1 turns under the torque (r x F).z = r F cos(th) (the arm turns, F does not)."""
    m, I = 1.0, 0.5
    F = np.array([0.0, 0.2, 0.0])
    txt = (body("A", pos=(0, 0, 0), mass=m, inertia=(I, I, I)) + body("B", pos=(0, 0, 3), mass=3.0)
           + load("MbdForce", "F", "A", F, b0="B", p1=(0.5, 0, 0)))
    r = simulate(stage(txt), duration=1.0, dt=1e-3, fps=50)
    p = r.positions[:, 0]
    com = (m * p[:, 0] + 3.0 * p[:, 1]) / 4.0
    np.testing.assert_allclose(com, [[0, 0, 0.75 * 3]] * len(com), atol=1e-12)
    sol = solve_ivp(lambda t, y: [y[1], 0.5 * F[1] * math.cos(y[0]) / I], (0, 1.0), [0.0, 0.0], t_eval=r.times,
                    rtol=1e-12, atol=1e-14)
    # second order: (h w)^2-type errors with w <= 0.2 rad/s, h = 1e-3: ~1e-9 rad
    np.testing.assert_allclose(angle_about(r.orientations[:, 0, 0], 2), sol.y[0], rtol=0, atol=1e-8)


def test_force_in_body_axes_turns_with_the_body():
    """resolveIn = body1 on a body spinning at w about z: the force rotates with it and the
    centre of mass moves on x = F/(m w^2) (1 - cos wt), y = F/(m w^2) (wt - sin wt)."""
    m, w, F = 1.0, 2.0, 0.5
    txt = body("A", pos=(0, 0, 0), mass=m, angvel_deg=(0, 0, w * DEG)) + load("MbdForce", "F", "A", (F, 0, 0),
                                                                              resolve="body1")
    r = simulate(stage(txt), duration=3.0, dt=1e-4, fps=100)
    t = r.times
    s = F / (m * w * w)
    # second order: the body's angle lags by t (h w)^3 / (12 h) = 2e-8 rad, the force direction
    # with it: ~1e-8 m after 3 s
    np.testing.assert_allclose(r.positions[:, 0, 0, 0], s * (1 - np.cos(w * t)), atol=1e-7)
    np.testing.assert_allclose(r.positions[:, 0, 0, 1], s * (w * t - np.sin(w * t)), atol=1e-7)


def test_time_sampled_force_times_time_function():
    """mbd:force time samples (24 codes/s, linear interpolation as USD does) times a ramp
    MbdTimeFunctionAPI: F(t) = (2 t)(1 + t) on [0, 1] s -> x = t^3/3 + t^4/6 (m = 1).
    Stormer-Verlet is exact for the cubic part; the quartic term leaves h^2 t^2 / 12 ~ 1e-7."""
    samples = "vector3d mbd:force.timeSamples = { 0: (0, 0, 0), 24: (2, 0, 0), 48: (2, 0, 0) }"
    fn = ('uniform token mbd:function:type = "ramp"\n    double mbd:function:intercept = 1\n'
          '    double mbd:function:slope = 1')
    txt = body("A", pos=(0, 0, 0)) + load("MbdForce", "F", "A", samples, extra=fn)
    r = simulate(stage(txt), duration=1.0, dt=1e-3, fps=100)
    t = r.times
    np.testing.assert_allclose(r.positions[:, 0, 0, 0], t ** 3 / 3 + t ** 4 / 6, atol=1e-6)


# ------------------------------------------------------------------------------ bushings
def bushing_joint(kind, axis=None, **attrs):
    extra = "\n    ".join(f"double mbd:bushing:{k} = {v!r}" for k, v in attrs.items())
    return joint(kind, "J", "B", pos0=(0, 0, 1), axis=axis, extra=extra, schemas='"MbdBushingAPI"')


def zero_crossing_period(x, dt):
    i = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    t = i * dt + dt * x[i] / (x[i] - x[i + 1])
    return (t[-1] - t[0]) / (len(t) - 1)


def test_bushing_small_oscillation_frequencies():
    """A fixed joint with MbdBushingAPI: translation at w = sqrt(k/m), rotation about a locked
    axis at sqrt(k_rot / I) (per degree authored).

    The trapezoidal rule turns w into the discrete w_d = (2/h) atan(h w / 2), i.e. the period
    is longer by (w h)^2 / 12 = 8.3e-6 at w = 100 rad/s, h = 1e-4: the measured periods must
    equal that discrete period (zero-crossing fit: ~1e-9), so the frequency is sqrt(k/m) up to
    the scheme's known O(h^2). The angular bushing acts on the small rotation vector through
    e0_y . e1_z = -sin(phi) with lever cos(phi): torque (k/2) sin(2 phi), which lengthens the
    period by A^2 / 4 (3e-7 at amplitude A = 1.1e-3 rad)."""
    m, I, k, kr = 2.0, 0.0625, 2.0e4, 50.0  # mass / inertia are float in USD: binary-exact values
    dt = 1e-4
    txt = body("B", pos=(1e-3, 0, 1), mass=m, inertia=(I, 1, 1), angvel_deg=(2.0, 0, 0)) + bushing_joint(
        "PhysicsFixedJoint", linearStiffness=k, angularStiffness=kr / DEG)
    r = simulate(stage(txt), duration=1.0, dt=dt, fps=1 / dt)
    x = r.positions[:, 0, 0, 0]
    phi = angle_about(r.orientations[:, 0, 0], 0)

    def discrete_period(w):
        return 2 * math.pi * dt / (2 * math.atan(dt * w / 2))

    w_lin, w_rot = math.sqrt(k / m), math.sqrt(kr / I)
    T_lin = zero_crossing_period(x, dt)
    assert abs(T_lin / discrete_period(w_lin) - 1) <= 1e-8
    assert abs(T_lin * w_lin / (2 * math.pi) - 1) <= 1.01 * (dt * w_lin) ** 2 / 12
    amp = np.max(np.abs(phi))
    assert abs(zero_crossing_period(phi, dt) / (discrete_period(w_rot) * (1 + amp ** 2 / 4)) - 1) <= 2e-8


def test_bushing_free_dof_and_stiff_bushing_is_stable():
    """A revolute bushing (Chrono model_bushing style, 1e7 N/m) at dt = 1e-3 stays bounded and
    sags by m g / k; the revolute's free rotation gets freeAngularStiffness."""
    m, k, c, g = 1.0, 1.0e7, 1.0e3, 9.81
    I, kf = 0.1, 4.0
    txt = body("B", pos=(0, 0, 1), mass=m, inertia=(I, I, I), angvel_deg=(0, 0, 30.0)) + bushing_joint(
        "PhysicsRevoluteJoint", axis="Z", linearStiffness=k, linearDamping=c, angularStiffness=k, angularDamping=c,
        freeAngularStiffness=kf / DEG)
    r = simulate(stage(txt, gravity=g), duration=2.0, dt=1e-3, fps=100)
    z = r.positions[:, 0, 0, 2]
    assert np.all(np.isfinite(r.positions))
    assert abs(z[-1] - (1.0 - m * g / k)) <= 1e-9  # settled on the static sag (damped)
    th = angle_about(r.orientations[:, 0, 0], 2)
    wz = 30.0 / DEG
    # torsion about the free axis: th = (w0 / wn) sin(wn t), wn = sqrt(kf / I); second order
    wn = math.sqrt(kf / I)
    np.testing.assert_allclose(th, wz / wn * np.sin(wn * r.times), atol=2e-4)


# ------------------------------------------------------------------------------ composite joints
def test_revolute_spherical_joint_is_a_planar_pendulum():
    """Revolute-spherical on the world: the body point stays on the circle |p1 - p0| = L in
    the plane normal to z0 (gravity in that plane): a simple pendulum (point-like body)."""
    L, g, th0 = 0.8, 9.81, math.radians(5.0)
    pos = (L * math.sin(th0), -L * math.cos(th0), 0.0)
    comp = 'def MbdRevoluteSphericalJoint "RS" {\n    rel physics:body1 = </B>\n}\n'
    txt = body("B", pos=pos, mass=1.0, inertia=(1e-6, 1e-6, 1e-6)) + comp
    dt = 1e-4
    r = simulate(stage(txt, gravity=g, direction=(0, -1, 0)), duration=4.0, dt=dt, fps=1 / dt)
    p = r.positions[:, 0, 0]
    assert np.max(np.abs(np.linalg.norm(p, axis=1) - L)) <= 1e-10 and np.max(np.abs(p[:, 2])) <= 1e-10
    # small-amplitude period T0 (1 + th0^2/16) of a pendulum with I_pivot = 1e-6 + m L^2
    T = 2 * math.pi * math.sqrt((1e-6 + L * L) / (g * L)) * (1 + th0 ** 2 / 16)
    assert abs(zero_crossing_period(p[:, 0], dt) / T - 1) <= 1e-5  # series term th0^4: 5e-7


def test_revolute_translational_joint_constraints_hold():
    """Revolute-translational (Chrono): z0.x1 = z0.y1 = 0, (p1-p0).z0 = 0, (p1-p0).x1 = d. The
    body slides along its y1 and turns about z0; all four equations stay at Newton tolerance."""
    d = 0.4
    comp = ('def MbdRevoluteTranslationalJoint "RT" {\n    rel physics:body1 = </B>\n'
            '    point3f physics:localPos0 = (0, 0, 0)\n    point3f physics:localPos1 = (0, 0, 0)\n}\n')
    txt = body("B", pos=(d, 0, 0), mass=1.0, inertia=(0.1, 0.1, 0.1), vel=(0, 0.5, 0), angvel_deg=(0, 0, 20)) + comp
    r = simulate(stage(txt, gravity=9.81, direction=(1, -1, -1)), duration=2.0, dt=1e-3, fps=50)
    assert r.max_constraint_error[0] <= 1e-10
    q = r.orientations[:, 0, 0]
    from usdphys.math3d import quat_rotate

    x1 = quat_rotate(q, np.array([1.0, 0, 0]))
    z1 = quat_rotate(q, np.array([0, 0, 1.0]))
    p1 = r.positions[:, 0, 0]
    assert np.max(np.abs(np.einsum("ij,ij->i", p1, x1) - d)) <= 1e-10
    assert np.max(np.abs(p1[:, 2])) <= 1e-10 and np.max(np.abs(z1[:, 2] - 1)) <= 1e-10
    assert np.ptp(angle_about(q, 2)) > 0.5  # it turned, and it slid:
    assert np.ptp(np.einsum("ij,ij->i", p1, quat_rotate(q, np.array([0, 1.0, 0])))) > 0.1


def test_force_resolved_in_body0_axes():
    """resolveIn = body0: the force on body1 turns with body0 (spinning at w, no contact
    between them): body1 moves like the body1-axes case, x = F/(m w^2) (1 - cos wt), ...; body0
    takes the reaction at the same point (its centre moves the opposite way, mass-weighted).
    body0's inertia is huge so that the reaction torque does not change its spin."""
    m0, m1, w, F = 4.0, 1.0, 2.0, 0.5
    big = (2.0 ** 30,) * 3
    txt = (body("A", pos=(0, 0, 0), mass=m0, inertia=big, angvel_deg=(0, 0, w * DEG))
           + body("B", pos=(0, 0, 2), mass=m1)
           + load("MbdForce", "F", "B", (F, 0, 0), b0="A", resolve="body0"))
    r = simulate(stage(txt), duration=2.0, dt=1e-4, fps=50)
    t = r.times
    w_read = r.model.body_ang_vel[0, 0, 2]
    s = F / (m1 * w_read ** 2)
    np.testing.assert_allclose(r.positions[:, 0, 1, 0], s * (1 - np.cos(w_read * t)), atol=1e-7)
    np.testing.assert_allclose(r.positions[:, 0, 1, 1], s * (w_read * t - np.sin(w_read * t)), atol=1e-7)
    com = (m0 * r.positions[:, 0, 0] + m1 * r.positions[:, 0, 1]) / (m0 + m1)
    np.testing.assert_allclose(com, [[0, 0, 2 * m1 / (m0 + m1)]] * len(t), atol=1e-12)


def test_torsional_curves_match_an_independent_integration():
    """RSDA with torque curves (abscissae in degrees and degrees/s) and a preload, on a revolute,
    against scipy on the same law in radians. Kinks: second order between them (1e-5 rad)."""
    I = 0.5
    curves = ('double2[] mbd:springTorqueCurve = [(-90, -6), (0, 0), (30, 2), (180, 20)]\n'
              '    double2[] mbd:dampingTorqueCurve = [(-360, -1), (0, 0), (360, 2)]')
    law = ScalarLaw(preload=0.5, x0=math.radians(10.0),
                    spring_curve=[(math.radians(a), b) for a, b in ((-90, -6), (0, 0), (30, 2), (180, 20))],
                    damping_curve=[(math.radians(a), b) for a, b in ((-360, -1), (0, 0), (360, 2))])
    txt = flywheel(3.0, I, rsda("S", "B", p0=(1, 2, 0), restAngle=10.0, preload=0.5).replace(
        "}\n", "    " + curves + "\n}\n"))
    r = simulate(stage(txt), duration=2.0, dt=1e-4, fps=100)
    w0 = r.model.body_ang_vel[0, 0, 2]
    sol = solve_ivp(lambda t, y: [y[1], law_np(law, y[0], y[1])[0] / I], (0, 2.0), [0.0, w0], t_eval=r.times,
                    rtol=1e-12, atol=1e-14, max_step=1e-3)
    assert np.max(np.abs(angle_about(r.orientations[:, 0, 0], 2) - sol.y[0])) <= 1e-5
