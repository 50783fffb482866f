"""newton-usd-schemas' scalar NewtonJointAPI beyond armature / friction / damping
(velocityLimit, limitStiffness, limitDamping) and MuJoCo's joint spring (mjc:stiffness,
mjc:springref, mjc:ref), simulated against closed-form solutions.

Rig: one body spinning about a revolute joint on the world Z axis through its centre of mass
(no gravity torque), so the joint coordinate obeys I q'' = torque with I = Izz; or a body falling
along a prismatic Z joint."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sim_helpers import angle_about, body, joint, stage
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate

IZZ = 0.5  # kg m^2


def spinner(joint_extra: str, w0_deg: float = 0.0, scene_extra: str = ""):
    st = stage(body("B", inertia=(1, 1, IZZ), angvel_deg=(0, 0, w0_deg))
               + joint("PhysicsRevoluteJoint", "J", "B", axis="Z", extra=joint_extra, schemas='"NewtonJointAPI"'))
    if scene_extra:
        for a in scene_extra:
            a(st)
    return st


def angle(res):
    return angle_about(res.orientations[:, 0, 0], 2)


# ---------------------------------------------------------------- MuJoCo joint spring
@pytest.mark.parametrize("springref, ref, radian", [(30.0, 0.0, False), (30.0, 10.0, False),
                                                      (math.radians(30.0), 0.0, True)])
def test_mujoco_joint_spring_oscillates_about_springref(springref, ref, radian):
    """I q'' = -k (q - q_ref), q(0) = 0 at rest: q = q_ref (1 - cos(w t)), w = sqrt(k / I).
    mjc:springref is in the model's angle unit and measured from mjc:ref like every MuJoCo joint
    value, so q_ref = springref - ref. The trapezoidal law row is second order: at dt = 1e-3 the
    phase error is (w h)^2 w t / 12 ~ 1e-7 rad; 1e-5 rad tolerance, while reading springref
    in the wrong unit or ignoring ref misses by > 0.1 rad."""
    k = 2.0  # N m / rad (MuJoCo's unit for a hinge)
    st = spinner(f"uniform double mjc:stiffness = {k}\n    uniform double mjc:springref = {springref}\n"
                 f"    uniform double mjc:ref = {ref}")
    if radian:
        scene = st.GetPrimAtPath("/Scene")
        from pxr import Sdf
        scene.CreateAttribute("mjc:compiler:angle", Sdf.ValueTypeNames.Token).Set("radian")
    res = simulate(st, duration=1.0, dt=1e-3, fps=10)
    q_ref = math.radians(30.0 - ref)
    expect = q_ref * (1.0 - np.cos(math.sqrt(k / IZZ) * res.times))
    assert np.max(np.abs(angle(res) - expect)) < 1e-5


# ---------------------------------------------------------------- soft limits
def soft_limit_angle(t, w0, upper, k, c):
    """Free spin at w0 into a spring-damper that acts only beyond `upper` (rad): the angle at t
    (t after the bounce has ended): the damped half oscillation returns at speed w0 exp(-z wn T/2)."""
    t1 = upper / w0
    wn = math.sqrt(k / IZZ)
    z = c / (2.0 * math.sqrt(k * IZZ))
    wd = wn * math.sqrt(1.0 - z * z)
    t2 = t1 + math.pi / wd
    assert t > t2
    return upper - w0 * math.exp(-z * wn * math.pi / wd) * (t - t2)


@pytest.mark.parametrize("c", [0.0, 2.0])
def test_soft_limit_is_a_spring_damper_beyond_the_limit(c):
    """newton:limitStiffness / limitDamping (per degree) turn the upper limit into a spring-damper
    acting only beyond it: spinning in at w0, the body leaves again after half a damped period at
    w0 exp(-z wn pi / wd). At dt = 1e-4 the entry / exit events cost O(h w0) ~ 1e-4 rad (3e-5 rad
    measured); tolerance 5e-4 rad, while a hard limit (the body stays at the limit, 0.17 rad)
    or damping acting inside the range misses by > 0.05 rad."""
    k, w0, upper_deg = 50.0, math.radians(60.0), 10.0
    st = spinner(f"float physics:upperLimit = {upper_deg}\n    float newton:limitStiffness = {k * math.pi / 180}\n"
                 f"    float newton:limitDamping = {c * math.pi / 180}", w0_deg=60.0)
    res = simulate(st, duration=0.8, dt=1e-4, fps=10)
    expect = soft_limit_angle(0.8, w0, math.radians(upper_deg), k, c)
    assert abs(angle(res)[-1] - expect) < 5e-4


def test_limit_stiffness_inf_or_default_keeps_the_limit_hard():
    """inf (hard) and -inf (the engine's default: hard here) leave the limit a hard constraint:
    the body never passes 10 degrees (solver tolerance 1e-9 rad)."""
    for val in ("inf", "-inf"):
        st = spinner(f"float physics:upperLimit = 10\n    float newton:limitStiffness = {val}", w0_deg=60.0)
        res = simulate(st, duration=0.5, dt=1e-3, fps=20)
        assert np.max(angle(res)) <= math.radians(10.0) + 1e-9


# ---------------------------------------------------------------- velocity limit
def test_velocity_limit_bounds_a_falling_slider():
    """newton:velocityLimit on a prismatic joint along gravity: free fall until |v| = v_max at
    t1 = v_max / g, then constant speed: z(T) = -v_max^2 / (2 g) - v_max (T - t1). The leapfrog
    free fall is offset by g h t / 2 (2.5e-4 m at h = 1e-4, T = 0.5 s): tolerance 5e-4 m, while
    no limit falls 0.67 m further. The speed never exceeds v_max (1e-9 relative)."""
    g, vmax, T = 9.81, 1.0, 0.5
    st = stage(body("B") + joint("PhysicsPrismaticJoint", "J", "B", axis="Z",
                                 extra=f"float newton:velocityLimit = {vmax}"), gravity=g)
    res = simulate(st, duration=T, dt=1e-4, fps=50)
    z = res.positions[:, 0, 0, 2]
    t1 = vmax / g
    assert abs(z[-1] - (-vmax ** 2 / (2 * g) - vmax * (T - t1))) < 5e-4
    speed = np.abs(np.diff(z)) / np.diff(res.times)
    assert np.max(speed) <= vmax * (1 + 1e-9)


def test_velocity_limit_is_in_degrees_per_second_on_a_revolute_joint():
    """30 deg/s bound, the body spun at 60 deg/s: from the first step it turns at 30 deg/s
    exactly (no torque acts, so the bound holds the speed; 1e-9 rad/s)."""
    st = spinner("float newton:velocityLimit = 30", w0_deg=60.0)
    res = simulate(st, duration=0.5, dt=1e-3, fps=10)
    rate = np.diff(angle(res)) / np.diff(res.times)
    assert np.allclose(rate, math.radians(30.0), rtol=0, atol=1e-9)


# ---------------------------------------------------------------- bad values
@pytest.mark.parametrize("extra, attr", [("float newton:velocityLimit = 0", "newton:velocityLimit"),
                                         ("float newton:velocityLimit = nan", "newton:velocityLimit"),
                                         ("float newton:limitStiffness = -1", "newton:limitStiffness"),
                                         ("float newton:limitDamping = inf", "newton:limitDamping"),
                                         ("uniform double mjc:stiffness = -2", "mjc:stiffness"),
                                         ("uniform double mjc:stiffness = 1\n uniform double mjc:springref = nan",
                                          "mjc:springref")])
def test_bad_values_are_one_line_errors(extra, attr):
    with pytest.raises(UsdphysError) as err:
        simulate(spinner(extra), duration=0.01, dt=1e-3, fps=100)
    msg = str(err.value)
    assert "\n" not in msg and "/J" in msg and attr in msg
