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
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate

G = 9.81
LEADER = dict(m=1.0, r=0.5, icm=0.01, hinge=0.0)
FOLLOWER = dict(m=0.7, r=0.3, icm=0.02, hinge=2.0)


def pair(coef0_deg=0.0, coef1=1.0, mimic="", follower_type="PhysicsRevoluteJoint"):
    def pend(name, p):
        return body(name, pos=(p["hinge"] + p["r"], 0, 0), mass=p["m"], inertia=(p["icm"], p["icm"], p["icm"]))
    text = pend("L", LEADER) + pend("F", FOLLOWER)
    text += joint("PhysicsRevoluteJoint", "JL", "L", pos0=(0, 0, 0), pos1=(-LEADER["r"], 0, 0), axis="Y")
    mimic = mimic or (f"rel newton:mimicJoint = </JL>\n    float newton:mimicCoef0 = {coef0_deg}\n"
                      f"    float newton:mimicCoef1 = {coef1}")
    text += joint(follower_type, "JF", "F", pos0=(FOLLOWER["hinge"], 0, 0), pos1=(-FOLLOWER["r"], 0, 0), axis="Y",
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


def test_coupling_a_slide_to_a_hinge_is_an_error():
    with pytest.raises(UsdphysError, match="JF.*NewtonMimicAPI"):
        simulate(pair(follower_type="PhysicsPrismaticJoint"), duration=0.01, dt=1e-3, fps=100)


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
