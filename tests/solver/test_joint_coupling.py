"""Joint couplings (NewtonMimicAPI; mujoco-usd-converter writes MuJoCo's joint equality as one):
q_follower = coef0 + coef1 q_leader, against the one-DOF Lagrangian of the coupled pair.

Two pendulums on parallel hinges (axis Y, 2 m apart, gravity -Z) start horizontal at rest. With
the coupling the pair has one DOF q (the leader's angle): the kinetic energy is
(I_l + coef1^2 I_f) q'^2 / 2 and gravity's torque m g r cos(angle) on each, so
(I_l + c1^2 I_f) q'' = m_l g r_l cos q + c1 m_f g r_f cos(c0 + c1 q): 1:1 is one pendulum with
the summed inertia, a gear ratio weighs the follower by c1^2."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from sim_helpers import angle_about, body, joint, stage
from usdphys.simulate import simulate

G = 9.81
LEADER = dict(m=1.0, r=0.5, icm=0.01, hinge=0.0)
FOLLOWER = dict(m=0.7, r=0.3, icm=0.02, hinge=2.0)


def pair(coef0_deg=0.0, coef1=1.0, mimic=""):
    def pend(name, p):
        return body(name, pos=(p["hinge"] + p["r"], 0, 0), mass=p["m"], inertia=(p["icm"], p["icm"], p["icm"]))
    text = pend("L", LEADER) + pend("F", FOLLOWER)
    text += joint("PhysicsRevoluteJoint", "JL", "L", pos0=(0, 0, 0), pos1=(-LEADER["r"], 0, 0), axis="Y")
    mimic = mimic or (f"rel newton:mimicJoint = </JL>\n    float newton:mimicCoef0 = {coef0_deg}\n"
                      f"    float newton:mimicCoef1 = {coef1}")
    text += joint("PhysicsRevoluteJoint", "JF", "F", pos0=(FOLLOWER["hinge"], 0, 0), pos1=(-FOLLOWER["r"], 0, 0), axis="Y",
                  extra=mimic, schemas='"NewtonMimicAPI"')
    return stage(text, gravity=G)


def reference(c0, c1, T, q0=0.0):
    inertia = lambda p: p["icm"] + p["m"] * p["r"] ** 2  # noqa: E731
    I = inertia(LEADER) + c1 ** 2 * inertia(FOLLOWER)

    def rhs(_, y):
        q, qd = y
        tau = LEADER["m"] * G * LEADER["r"] * math.cos(q) + c1 * FOLLOWER["m"] * G * FOLLOWER["r"] * math.cos(c0 + c1 * q)
        return [qd, tau / I]

    sol = solve_ivp(rhs, (0, T), [q0, 0.0], rtol=1e-12, atol=1e-12)
    return sol.y[0, -1]


@pytest.mark.parametrize("c0_deg, c1", [(0.0, 1.0), (0.0, 2.0), (0.0, -0.5)])
def test_coupled_pendulums_move_as_one_dof(c0_deg, c1):
    """Both angles after 0.5 s (about 90 degrees of swing) against the reference ODE (scipy,
    1e-12). The solver's step is second order: measured 9e-6 rad (leader) and 1.4e-5 rad (the
    follower at 2:1) at dt = 1e-3, a quarter of that at 5e-4; tolerance 5e-5 rad, while the
    uncoupled pendulums (or the wrong inertia weighting) differ by > 0.05 rad."""
    T = 0.5
    res = simulate(pair(c0_deg, c1), duration=T, dt=1e-3, fps=10)
    ql = angle_about(res.orientations[:, 0, res.body_paths.index("/L")], 1)[-1]
    qf = angle_about(res.orientations[:, 0, res.body_paths.index("/F")], 1)[-1]
    q = reference(math.radians(c0_deg), c1, T)
    assert abs(ql - q) < 5e-5
    assert abs(qf - (math.radians(c0_deg) + c1 * q)) < 5e-5


def test_an_offset_is_imposed_before_t0_and_held(caplog):
    """coef0 = 20 deg with both bodies authored at 0: the pair is moved onto the coupling before
    t = 0 (named in a warning), holds it to the solver's tolerance (1e-9 rad) and then moves as
    the reference started from the assembled leader angle (5e-5 rad, as above)."""
    T = 0.5
    with caplog.at_level("WARNING"):
        res = simulate(pair(20.0, 1.0), duration=T, dt=1e-3, fps=10)
    assert any("/JF: the input pose breaks its coupling to /JL" in r.getMessage() for r in caplog.records)
    ql = angle_about(res.orientations[:, 0, res.body_paths.index("/L")], 1)
    qf = angle_about(res.orientations[:, 0, res.body_paths.index("/F")], 1)
    assert np.max(np.abs(qf - ql - math.radians(20.0))) < 1e-9
    assert abs(ql[-1] - reference(math.radians(20.0), 1.0, T, q0=ql[0])) < 5e-5


def test_disabled_coupling_leaves_the_joints_free():
    res = simulate(pair(mimic="rel newton:mimicJoint = </JL>\n    bool newton:mimicEnabled = 0\n"
                              "    float newton:mimicCoef1 = 2"), duration=0.3, dt=1e-3, fps=10)
    ql = angle_about(res.orientations[:, 0, res.body_paths.index("/L")], 1)[-1]
    qf = angle_about(res.orientations[:, 0, res.body_paths.index("/F")], 1)[-1]
    assert abs(qf - 2 * ql) > 0.05


def test_dangling_leader_is_a_warning_and_the_coupling_is_dropped(caplog):
    with caplog.at_level("WARNING"):
        res = simulate(pair(mimic="rel newton:mimicJoint = </Nowhere>"), duration=0.05, dt=1e-3, fps=20)
    assert any("newton:mimicJoint" in r.getMessage() and "ignored" in r.getMessage() for r in caplog.records)
    assert np.all(np.isfinite(res.positions))


def _one_dof(mass, force, T, x0=0.0):
    """x(T) of mass * x'' = force(x) from rest (scipy, 1e-12)."""
    sol = solve_ivp(lambda _, y: [y[1], force(y[0]) / mass], (0, T), [x0, 0.0], rtol=1e-12, atol=1e-12)
    return sol.y[0, -1]


def test_a_hinge_follows_a_slide_in_radians_per_stage_length():
    """gymnasium's kitchen couples each oven knob (a hinge) to its burner (a slide) with
    coef1 = 174: MuJoCo's polycoef in its joint coordinates, radians per metre, which
    mujoco-usd-converter writes unchanged and Newton reads as such. Here, in centimetres
    (metersPerUnit 0.01): a vertical slider L (0.5 kg) and a pendulum F hinged about Y with
    q_f = coef1 z_l, coef1 = 0.0625 rad per cm = 6.25 rad/m (a float attribute: exact in float32).
    One DOF z: kinetic energy
    (m_l + c1^2 I_f) z'^2 / 2, potential m_l g z - m_f g r sin(c1 z), so the falling pendulum lifts
    the slider. Tolerances: the coupling holds to 1e-9 rad; z(T) within 1e-5 m of the reference
    (measured 4.6e-7 m at dt 1e-3: the step is second order); read as radians per centimetre
    (unconverted) or in degrees, the slider would move by centimetres."""
    m_l, m_f, r, icm, c1, g, T = 0.5, 0.7, 0.3, 0.02, 6.25, 9.81, 0.5
    cm = 100.0
    text = (body("L", pos=(0, 0, 0), mass=m_l, inertia=(100, 100, 100))
            + body("F", pos=(2 * cm + r * cm, 0, 0), mass=m_f, inertia=(icm * cm ** 2,) * 3)
            + joint("PhysicsPrismaticJoint", "JL", "L", axis="Z")
            + joint("PhysicsRevoluteJoint", "JF", "F", pos0=(2 * cm, 0, 0), pos1=(-r * cm, 0, 0), axis="Y",
                    extra=f"rel newton:mimicJoint = </JL>\n    float newton:mimicCoef1 = {c1 / cm}",
                    schemas='"NewtonMimicAPI"'))
    res = simulate(stage(text, gravity=g * cm, mpu=0.01), duration=T, dt=1e-3, fps=10)
    z = res.positions[:, 0, res.body_paths.index("/L"), 2]
    qf = angle_about(res.orientations[:, 0, res.body_paths.index("/F")], 1)
    assert np.max(np.abs(qf - c1 * z)) < 1e-9
    inertia_f = icm + m_f * r ** 2
    expect = _one_dof(m_l + c1 ** 2 * inertia_f, lambda x: m_f * g * r * c1 * math.cos(c1 * x) - m_l * g, T)
    assert expect > 0.1  # the slider rose and the knob turned by more than half a radian
    assert abs(z[-1] - expect) < 1e-5


def test_a_slide_follows_a_hinge_in_stage_lengths_per_radian():
    """The other way round: a slider F (1 kg, along Z) follows a pendulum L with
    z_f = coef0 + coef1 q_l, coef0 = 0.0625 m (the follower's units), coef1 = 0.25 m per radian
    (both exact in float32).
    One DOF q: (I_l + c1^2 m_f) q'' = m_l g r cos q - m_f g c1. coef0 is imposed before t = 0 (a
    warning); then the coupling holds to 1e-9 m and q(T) matches the reference to 1e-5 rad
    (measured 1.1e-6 rad at dt 1e-3)."""
    m_l, m_f, r, icm, c0, c1, g, T = 1.0, 1.0, 0.5, 0.01, 0.0625, 0.25, 9.81, 0.5
    text = (body("L", pos=(r, 0, 0), mass=m_l, inertia=(icm,) * 3)
            + body("F", pos=(2, 0, 0), mass=m_f, inertia=(1, 1, 1))
            + joint("PhysicsRevoluteJoint", "JL", "L", pos1=(-r, 0, 0), axis="Y")
            + joint("PhysicsPrismaticJoint", "JF", "F", pos0=(2, 0, 0), axis="Z",
                    extra=f"rel newton:mimicJoint = </JL>\n    float newton:mimicCoef0 = {c0}\n"
                          f"    float newton:mimicCoef1 = {c1}", schemas='"NewtonMimicAPI"'))
    res = simulate(stage(text, gravity=g), duration=T, dt=1e-3, fps=10)
    ql = angle_about(res.orientations[:, 0, res.body_paths.index("/L")], 1)
    zf = res.positions[:, 0, res.body_paths.index("/F"), 2]
    assert np.max(np.abs(zf - (c0 + c1 * ql))) < 1e-9
    expect = _one_dof(icm + m_l * r ** 2 + c1 ** 2 * m_f, lambda q: m_l * g * r * math.cos(q) - m_f * g * c1, T,
                      x0=ql[0])
    assert expect - ql[0] > 0.3
    assert abs(ql[-1] - expect) < 1e-5


@pytest.mark.parametrize("leader", ["UX", "UY"])
def test_a_coupling_to_a_stacked_joint_follows_its_dof(leader):
    """The leader is one of two hinges (X then Y) stacked on one body pair (MJCF's universal
    joint, newton:jointsAddMobility): R = Rx(a) Ry(b), a = atan2(R[2, 1], R[1, 1]) and
    b = atan2(R[0, 2], R[0, 0]). The follower keeps q_f = a (or b) throughout, to the solver's
    tolerance (1e-9 rad), while both hinges swing by more than 0.3 rad: the merged joint's
    coordinates are the exact Cardan angles."""
    from usdphys.math3d import quat_to_matrix

    axis = leader[-1]
    hinges = "".join(joint("PhysicsRevoluteJoint", name, "U", pos0=(0, 0, 0), axis=ax)
                     for name, ax in (("UX", "X"), ("UY", "Y")))
    text = (body("U", pos=(0, 0, 0), mass=1.0, inertia=(0.01, 0.02, 0.03),
                 extra="point3f physics:centerOfMass = (0.3, 0.3, 0)\n    uniform bool newton:jointsAddMobility = 1")
            + hinges
            + body("F", pos=(2, 0.3, 0), mass=0.5, inertia=(0.01, 0.01, 0.01))
            + joint("PhysicsRevoluteJoint", "JF", "F", pos0=(2, 0, 0), pos1=(0, -0.3, 0), axis=axis,
                    extra=f"rel newton:mimicJoint = </{leader}>", schemas='"NewtonMimicAPI"'))
    res = simulate(stage(text, gravity=G), duration=0.5, dt=1e-3, fps=20)
    R = quat_to_matrix(res.orientations[:, 0, res.body_paths.index("/U")])
    a = np.unwrap(np.arctan2(R[:, 2, 1], R[:, 1, 1]))
    b = np.unwrap(np.arctan2(R[:, 0, 2], R[:, 0, 0]))
    qf = angle_about(res.orientations[:, 0, res.body_paths.index("/F")], "XYZ".index(axis))
    assert np.max(np.abs(a)) > 0.3 and np.max(np.abs(b)) > 0.3  # both hinges swung
    assert np.max(np.abs(qf - (a if axis == "X" else b))) < 1e-9


def test_sliders_coupled_in_centimetres():
    """Two vertical sliders under gravity, q_f = coef0 + coef1 q_l with coef0 = 5 (stage units:
    centimetres, metersPerUnit = 0.01) and coef1 = -0.5: one DOF with inertia m_l + c1^2 m_f and
    gravity's force -g (m_l + c1 m_f) (upward here: the heavier follower pulls), so
    q_l(t) = q_l(0) - a t^2 / 2. coef0 is imposed before t = 0, in metres (0.05 m). Tolerances:
    the coupling holds to 1e-9 m; the motion to 1e-9 relative (the leapfrog step is exact for a
    constant acceleration from rest)."""
    m_l, m_f, c1, g, T = 1.0, 3.0, -0.5, 9.81, 0.5
    text = (body("L", pos=(0, 0, 0), mass=m_l) + body("F", pos=(100, 0, 0), mass=m_f)
            + joint("PhysicsPrismaticJoint", "JL", "L", axis="Z")
            + joint("PhysicsPrismaticJoint", "JF", "F", pos0=(100, 0, 0), axis="Z",
                    extra=f"rel newton:mimicJoint = </JL>\n    float newton:mimicCoef0 = 5\n"
                          f"    float newton:mimicCoef1 = {c1}", schemas='"NewtonMimicAPI"'))
    res = simulate(stage(text, gravity=g / 0.01, mpu=0.01), duration=T, dt=1e-3, fps=10)
    zl = res.positions[:, 0, res.body_paths.index("/L"), 2]
    zf = res.positions[:, 0, res.body_paths.index("/F"), 2]
    assert np.max(np.abs(zf - (0.05 + c1 * zl))) < 1e-9
    a = g * (m_l + c1 * m_f) / (m_l + c1 ** 2 * m_f)
    q0 = zl[0]  # where the assembly put the leader (both sides moved onto the coupling)
    expect = q0 - a * res.times ** 2 / 2
    assert np.allclose(zl, expect, rtol=0, atol=1e-9 * abs(a) * T ** 2)
