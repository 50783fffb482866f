"""NewtonJointAPI in the solver: armature, viscous damping, Coulomb friction with
stiction, per DOF; the scalar newton-usd-schemas form. Analytic references; CPU.

Values authored as USD float are binary-exact here (0.5, 0.25, 6, ...), so the comparison
is with the exact model."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sim_helpers import DEG, angle_about, body, joint, stage
from test_motors import motor
from usdphys.simulate import simulate


def newton_api(**arrays) -> str:
    """NewtonJointAPI attributes: dofs=[...], armature=[...], ... (proposal's array form)."""
    lines = []
    for k, v in arrays.items():
        if k == "dofs":
            lines.append("uniform token[] newton:dofs = [" + ", ".join(f'"{d}"' for d in v) + "]")
        else:
            lines.append(f"uniform float[] newton:{k} = [" + ", ".join(repr(float(x)) for x in v) + "]")
    return "\n    ".join(lines)


def wheel(I, w0, api_text, schemas='"NewtonJointAPI"', extra=""):
    return (body("w", pos=(0, 0, 0), mass=1.0, inertia=(I, I, I), angvel_deg=(0, 0, w0 * DEG))
            + joint("PhysicsRevoluteJoint", "axle", "w", axis="Z", extra=api_text, schemas=schemas) + extra)


def test_armature_and_viscous_damping_decay():
    """(I + a) w' = -c w with c authored per DEGREE (N m s / deg, the proposal's unit):
    th(t) = w0 (I + a)/c (1 - exp(-c t / (I + a))). The trapezoidal damping and the
    armature row are second order (rate error (c h / (I + a))^2 / 12 ~ 1e-8)."""
    I, a, c_deg, w0 = 0.5, 0.25, 0.015625, 20.0
    c = c_deg * DEG  # per radian
    txt = wheel(I, w0, newton_api(dofs=["angle"], armature=[a], viscousDamping=[c_deg]))
    dt = 1e-3
    r = simulate(stage(txt), duration=2.0, dt=dt, fps=100)
    w0_read = r.model.body_ang_vel[0, 0, 2]  # the float32 round trip of the authored deg/s
    th = angle_about(r.orientations[:, 0, 0], 2)
    J = I + a
    expected = w0_read * J / c * (1 - np.exp(-c * r.times / J))
    # second order: O((c h / J)^2 + (h w)^2 / 12) relative over the run: ~1e-6 of 25 rad
    assert np.max(np.abs(th - expected)) <= 1e-4
    # decay rate from the frame-to-frame speed at the start and the end; the rotation map
    # advances each step by 2 atan(h w / 2), (h w)^2 / 12 less than h w: that shortens the
    # early (fast) frames by eps = (h w)^2 / 12 = 3e-5 and biases the rate by eps / (rate T)
    w = np.diff(th) / 0.01  # w[i]: mean speed over [t_i, t_i+1]
    span = r.times[-5] - r.times[5 + 1]
    rate = math.log(w[5] / w[-5]) / span
    eps = (dt * w[5]) ** 2 / 12
    assert abs(rate / (c / J) - 1) <= 1.1 * eps / (c / J * span)


def test_linear_armature_and_viscous_damping_decay_rate():
    """(m + a) v' = -c v on a prismatic DOF: v = v0 exp(-c t / (m + a)); the rate from the
    positions to 1e-6 (trapezoidal damping: rate error (c h / (m + a))^2 / 12 ~ 1e-8)."""
    m, a, c, v0 = 2.0, 0.5, 1.25, 3.0
    txt = (body("s", pos=(0, 0, 0), mass=m, vel=(v0, 0, 0))
           + joint("PhysicsPrismaticJoint", "rail", "s", axis="X",
                   extra=newton_api(dofs=["distance"], armature=[a], viscousDamping=[c]), schemas='"NewtonJointAPI"'))
    r = simulate(stage(txt, gravity=9.81), duration=2.0, dt=1e-3, fps=100)
    x = r.positions[:, 0, 0, 0]
    J = m + a
    np.testing.assert_allclose(x, v0 * J / c * (1 - np.exp(-c * r.times / J)), rtol=0, atol=1e-6)
    v = np.diff(x) / 0.01
    rate = math.log(v[5] / v[-5]) / (r.times[-5] - r.times[6])
    assert abs(rate / (c / J) - 1) <= 1e-6


def test_armature_alone_adds_inertia_along_the_dof():
    """A prismatic slider (m = 2) with armature 1 kg, pushed by a force motor of 3 N:
    x = F t^2 / (2 (m + a)). Exact for constant forces except the armature row's start
    (q'(-h/2) is taken as q'(0): an O(h^2) velocity offset -> < 1e-9 m here)."""
    m, a, F = 2.0, 1.0, 3.0
    txt = (body("s", pos=(0, 0, 0), mass=m)
           + joint("PhysicsPrismaticJoint", "rail", "s", axis="X", extra=newton_api(dofs=["distance"], armature=[a]),
                   schemas='"NewtonJointAPI"')
           + motor("push", "rail", "force", dof="distance", fn=dict(type="constant", value=F)))
    r = simulate(stage(txt, gravity=9.81), duration=2.0, dt=1e-3, fps=50)
    np.testing.assert_allclose(r.positions[:, 0, 0, 0], F * r.times ** 2 / (2 * (m + a)), rtol=0, atol=1e-6)


@pytest.mark.parametrize("angular", [False, True])
def test_coulomb_friction_decelerates_and_stops(angular):
    """Only dynamicFrictionEffort authored (static = dynamic): constant deceleration F/m until
    t* = m v0 / F, then the DOF stays stopped (static >= dynamic holds it)."""
    m, v0, F = 2.0, 3.0, 4.0  # t* = 1.5 s, stop at x* = m v0^2 / (2 F) = 2.25
    if angular:
        txt = wheel(m, v0, newton_api(dofs=["angle"], dynamicFrictionEffort=[F]))
    else:
        txt = (body("s", pos=(0, 0, 0), mass=m, vel=(v0, 0, 0))
               + joint("PhysicsPrismaticJoint", "rail", "s", axis="X",
                       extra=newton_api(dofs=["distance"], dynamicFrictionEffort=[F]), schemas='"NewtonJointAPI"'))
    dt = 1e-3
    r = simulate(stage(txt, gravity=9.81), duration=3.0, dt=dt, fps=100)
    x = angle_about(r.orientations[:, 0, 0], 2) if angular else r.positions[:, 0, 0, 0]
    v0r = r.model.body_ang_vel[0, 0, 2] if angular else v0
    t = r.times
    ts = m * v0r / F
    expected = np.where(t < ts, v0r * t - F * t * t / (2 * m), m * v0r ** 2 / (2 * F))
    # constant force: Stormer-Verlet is exact while sliding; the stop happens inside a step,
    # which leaves at most a * h^2 = 2 * 1e-6 (plus the rotation map's (h w)^2/12 lag when angular)
    tol = 2.0 * dt * dt + (1e-6 if angular else 0.0)
    assert np.max(np.abs(x - expected)) <= tol
    assert np.ptp(x[t > ts + 0.05]) == 0.0  # stopped: held exactly


def stiction_case(F_applied):
    m = 2.0
    txt = (body("s", pos=(0, 0, 0), mass=m)
           + joint("PhysicsPrismaticJoint", "rail", "s", axis="X",
                   extra=newton_api(dofs=["distance"], staticFrictionEffort=[10.0], dynamicFrictionEffort=[6.0]),
                   schemas='"NewtonJointAPI"')
           + f'def MbdForce "push" {{\n    rel mbd:body1 = </s>\n    vector3d mbd:force = ({F_applied!r}, 0, 0)\n}}\n')
    return simulate(stage(txt, gravity=9.81), duration=1.0, dt=1e-3, fps=1000)


def test_stiction_holds_below_its_threshold():
    r = stiction_case(9.5)
    # held every step: the velocity row is solved to the Newton tolerance (1e-12 m per step);
    # what is left is round-off (~5e-15 m after 1000 steps)
    assert np.max(np.abs(r.positions[:, 0, 0, 0])) <= 1e-12


def test_stiction_slips_above_its_threshold_then_slides_on_dynamic_friction():
    """11 N against 10 N static / 6 N dynamic friction: it breaks away, then accelerates at
    (11 - 6) / 2 = 2.5 m/s^2 (second differences of x: exact for a constant force)."""
    r = stiction_case(11.0)
    x = r.positions[:, 0, 0, 0]
    assert x[-1] > 0.5
    acc = np.diff(x, 2)[10:] / 1e-3 ** 2
    np.testing.assert_allclose(acc, 2.5, rtol=1e-6)
    # the breakaway costs at most two steps against static friction: x within a t h of ideal
    assert abs(x[-1] - 2.5 / 2) <= 2 * 2.5 * 1.0 * 1e-3


def test_scalar_newton_schemas_form_is_broadcast():
    """newton-usd-schemas' scalar form (float newton:armature, newton:friction,
    newton:damping) applies to the joint's free DOF like the per-DOF arrays, with or without
    the API applied (stages written for Newton carry the API of the other package)."""
    I, w0 = 0.5, 20.0
    scalar = "float newton:armature = 0.25\n    float newton:damping = 0.015625\n    float newton:friction = 0.5"
    per_dof = newton_api(dofs=["angle"], armature=[0.25], viscousDamping=[0.015625], dynamicFrictionEffort=[0.5])
    b = simulate(stage(wheel(I, w0, per_dof)), duration=1.0, dt=1e-3, fps=50)
    for schemas in ('"NewtonJointAPI"', ""):
        a = simulate(stage(wheel(I, w0, scalar, schemas=schemas)), duration=1.0, dt=1e-3, fps=50)
        np.testing.assert_array_equal(a.orientations, b.orientations)
    assert angle_about(b.orientations[:, 0, 0], 2)[-1] < 0.9 * w0  # it was slowed down


def test_friction_on_a_motor_driven_dof_shows_in_the_motor_effort():
    """A speed motor at 2 rad/s on a wheel with Coulomb (0.5 N m) and viscous (c per degree)
    friction: once at speed the motor delivers exactly 0.5 + c w (power balance)."""
    I, w, Fd, c_deg = 0.5, 2.0, 0.5, 0.015625
    txt = wheel(I, 0.0, newton_api(dofs=["angle"], viscousDamping=[c_deg], dynamicFrictionEffort=[Fd]),
                extra=motor("m", "axle", "velocity", fn=dict(type="constant", value=w * DEG)))
    r = simulate(stage(txt), duration=1.0, dt=1e-3, fps=50)
    np.testing.assert_allclose(r.motor_efforts[5:, 0, 0], Fd + c_deg * DEG * w, rtol=1e-9)


def test_a_motor_effort_is_a_force_when_its_steps_were_retried():
    """The same wheel with max_turn 1.5 mrad: every 1 ms step (2 mrad) is retried as two halves.
    The effort is the last step's impulse over that step's kick, so still 0.5 + c w (divided by
    the frame's step instead, it read half of that)."""
    I, w, Fd, c_deg = 0.5, 2.0, 0.5, 0.015625
    txt = wheel(I, 0.0, newton_api(dofs=["angle"], viscousDamping=[c_deg], dynamicFrictionEffort=[Fd]),
                extra=motor("m", "axle", "velocity", fn=dict(type="constant", value=w * DEG)))
    r = simulate(stage(txt), duration=1.0, dt=1e-3, fps=50, max_turn=1.5e-3)
    assert r.reduced_steps[0] >= 900
    # the Newton tolerance is on positions: over half steps it leaves twice the rate (and force)
    # error of the 1 ms steps above, so twice their bound
    np.testing.assert_allclose(r.motor_efforts[5:, 0, 0], Fd + c_deg * DEG * w, rtol=2e-9)


def test_generic_and_spherical_joint_dofs():
    """NewtonJointAPI on a generic PhysicsJoint (transX free, the rest locked by low > high
    limits) and on a spherical joint (rotZ): Coulomb friction on transX stops the slider at
    m v0^2 / (2 F); viscous damping on rotZ of the ball joint decays a spin about z as
    exp(-c t / I)."""
    lock = "\n    ".join(f"float limit:{d}:physics:low = 1\n    float limit:{d}:physics:high = -1"
                         for d in ("transY", "transZ", "rotX", "rotY", "rotZ"))
    schemas = ", ".join(f'"PhysicsLimitAPI:{d}"' for d in ("transY", "transZ", "rotX", "rotY", "rotZ"))
    m, v0, F = 2.0, 3.0, 4.0
    I, w0, c_deg = 0.5, 10.0, 0.015625
    txt = (body("s", pos=(0, 0, 0), mass=m, vel=(v0, 0, 0))
           + joint("PhysicsJoint", "g", "s", schemas=schemas + ', "NewtonJointAPI"',
                   extra=lock + "\n    " + newton_api(dofs=["transX"], dynamicFrictionEffort=[F]))
           + body("b", pos=(0, 5, 0), mass=1.0, inertia=(I, I, I), angvel_deg=(0, 0, w0 * DEG))
           + joint("PhysicsSphericalJoint", "ball", "b", pos0=(0, 5, 0),
                   extra=newton_api(dofs=["rotZ"], viscousDamping=[c_deg]), schemas='"NewtonJointAPI"'))
    r = simulate(stage(txt, gravity=9.81), duration=2.0, dt=1e-3, fps=100)
    si, bi = r.body_paths.index("/s"), r.body_paths.index("/b")
    assert abs(r.positions[-1, 0, si, 0] - m * v0 ** 2 / (2 * F)) <= 2e-6  # stop inside a step: a h^2
    np.testing.assert_allclose(r.positions[:, 0, si, 1:], 0.0, atol=1e-12)
    c = c_deg * DEG
    w_read = r.model.body_ang_vel[0, bi, 2]
    th = angle_about(r.orientations[:, 0, bi], 2)
    # second order; the rotation map's (h w)^2 / 12 lag at w <= 10 rad/s: ~1e-5 relative
    np.testing.assert_allclose(th, w_read * I / c * (1 - np.exp(-c * r.times / I)), rtol=0, atol=2e-5)


def test_friction_on_a_joint_that_swings_onto_its_limit():
    """A 1 m rod falls from horizontal onto its -30 deg limit on a hinge with a little Coulomb
    friction. In the step it lands, the sticking friction row and the limit row act on the
    same DOF: the rank decision keeps one, and the friction row (bounded, it can slip) yields.
    It was counted as a contradiction, and the step failed even at dt/64. The rod comes to
    rest on the limit, the joint closed."""
    txt = (body("rod", pos=(0.5, 0, 0), mass=1.0, inertia=(1e-4, 0.0834, 0.0834))
           + joint("PhysicsRevoluteJoint", "hinge", "rod", pos0=(0, 0, 0), pos1=(-0.5, 0, 0), axis="Y",
                   extra=newton_api(dofs=["angle"], dynamicFrictionEffort=[1e-3])
                   + "\n    float physics:lowerLimit = -30\n    float physics:upperLimit = 30",
                   schemas='"NewtonJointAPI"'))
    r = simulate(stage(txt, gravity=9.81), duration=1.0, dt=1e-3, fps=100)
    # on the limit: the rod's centre 0.5 m out at 30 deg below the horizontal (float32 limit)
    c = 0.5 * math.cos(math.radians(30.0))
    s = 0.5 * math.sin(math.radians(30.0))
    np.testing.assert_allclose(r.positions[-10:, 0, 0], np.tile([c, 0.0, -s], (10, 1)), atol=1e-7)
    assert r.max_constraint_error[0] < 1e-9
    assert r.reduced_steps[0] == 0
