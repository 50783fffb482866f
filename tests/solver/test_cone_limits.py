"""Spherical joints' cone limits (UsdPhysics coneAngle0Limit / coneAngle1Limit).

A rod on a spherical joint at the world, its axis e1[a] held within an elliptical cone about
frame 0's e0[a] of semi-angles A towards e0[a+1] and B towards e0[a+2]. Oracles:
- a swing in one plane is a hinge: MuJoCo's hinge about the plane's normal with range [-A, A];
- a circular cone in 3D is a range on the middle angle of MuJoCo's three hinges about e0[a],
  the tilt axis and the rod's axis (azimuth, tilt, spin): the tilt is exactly the swing;
- elliptical cones in 3D: the property below checks the recorded motion against the cone
  itself, measured here from the poses (not from the solver's own measure).
MuJoCo's limit is stiff and overdamped (an inelastic stop, as usdphys' hard limit, reached as its
time constant goes to zero); each side's own error (dt pairs, MuJoCo's softness) sets the
tolerance, as in test_robustness.check_sequence_limit.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robustness_helpers as H

LENGTH, RADIUS, MASS = 0.5, 0.02, 1.0
CI = settings(derandomize=True, max_examples=8, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))


def rod_inertia(ratio):
    it = MASS * (LENGTH ** 2 / 12.0 + RADIUS ** 2 / 4.0)
    return np.array([ratio * it, it, it])


def x_to_axis(a):
    """A rotation (wxyz) taking x to axis a."""
    return (np.array([1.0, 0, 0, 0]), H.qaxis([0, 0, 1], math.pi / 2), H.qaxis([0, 1, 0], -math.pi / 2))[a]


def cone_stage(jq, cone, axis=0, tilt=0.0, omega=(0.0, 0.0, 0.0), ratio=1.0):
    """A rod jointed at the world origin by a spherical joint (axis `axis`, cone semi-angles
    `cone` in deg, or None). Frame 0 is `jq` (wxyz) in the world; frame 1 is fixed in the rod with
    e1[axis] along it; at t = 0 frame 1 is frame 0 tilted by `tilt` deg towards e0[axis+1] (turned
    about e0[axis+2]), the rod turning at `omega` (world, deg/s) about the joint."""
    jq = np.asarray(jq, float)
    f1 = H.qmul(jq, H.qaxis(np.eye(3)[(axis + 2) % 3], math.radians(tilt)))
    rot = H.qmul(f1, x_to_axis(axis))  # the rod's body frame: x along e1[axis]
    com = H.qrot(rot, [LENGTH / 2, 0, 0])
    vel = np.cross(np.radians(omega), com)
    body = H._body_usda("L0", com, rot, MASS, rod_inertia(ratio), "capsule", LENGTH, RADIUS, vel, omega)
    extra = "" if cone is None else (f"float physics:coneAngle0Limit = {H.fnum(cone[0])}\n"
                                     f"    float physics:coneAngle1Limit = {H.fnum(cone[1])}")
    joint = H._joint_usda("J0", "PhysicsSphericalJoint", None, "L0", (0, 0, 0), jq, (-LENGTH / 2, 0, 0),
                          H.qconj(x_to_axis(axis)), H.AX[axis], extra)
    return H._scene() + body + joint


def frame0_with(a, down=None):
    """Frame 0 (wxyz) with e0[a] along world x and e0[down] along world -z (a planar swing
    under gravity towards that axis), or with e0[a] along -z when `down` is None (a hanging cone)."""
    from scipy.spatial.transform import Rotation

    R = np.zeros((3, 3))
    if down is None:  # e0[a] down, e0[a+1] along x
        R[:, a] = (0, 0, -1)
        R[:, (a + 1) % 3] = (1, 0, 0)
    else:
        R[:, a] = (1, 0, 0)
        R[:, down] = (0, 0, -1)
    missing = ({0, 1, 2} - {a, (a + 1) % 3 if down is None else down}).pop()
    R[:, missing] = np.cross(R[:, (missing + 1) % 3], R[:, (missing + 2) % 3])
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return np.array([w, x, y, z])


def mujoco_rod(jq, a, hinges, qvel0, duration, timestep, timeconst=2e-4, ratio=1.0, tilt=0.0):
    """The rod's centre of mass after `duration` in MuJoCo (RK4, contact off): a body at the
    pivot in frame 0 turned by `tilt` deg about e0[a+2] (its pose at zero joint angles, the
    rod along its e[a]), with hinges (axis in that body frame, range (lo, hi) in deg or None)
    applied in order. None where MuJoCo found its state non-finite on the way (it resets and
    carries on)."""
    import mujoco

    it = rod_inertia(ratio)
    bq = H.qmul(np.asarray(jq, float), H.qaxis(np.eye(3)[(a + 2) % 3], math.radians(tilt)))
    joints = []
    for axis, rng in hinges:
        lim = "" if rng is None else (f' limited="true" range="{rng[0]!r} {rng[1]!r}" solreflimit="{timeconst!r} 20"'
                                      ' solimplimit="0.9999 0.99999 0.0001"')
        joints.append(f'<joint type="hinge" axis="{" ".join(repr(float(v)) for v in axis)}"{lim}/>')

    def words(v):
        return " ".join(repr(float(x)) for x in v)

    xml = f'''<mujoco>
  <option timestep="{timestep!r}" integrator="RK4" gravity="0 0 {-H.G!r}"><flag contact="disable"/></option>
  <worldbody>
    <body name="L0" pos="0 0 0" quat="{words(bq)}">
      <inertial pos="{words(LENGTH / 2 * np.eye(3)[a])}" quat="{words(x_to_axis(a))}" mass="{H.f32(MASS)!r}"
                diaginertia="{words([H.f32(v) for v in it])}"/>
      {"".join(joints)}
    </body>
  </worldbody>
</mujoco>'''
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:] = qvel0
    for _ in range(int(round(duration / timestep))):
        mujoco.mj_step(m, d)
    if H.mujoco_went_unstable(d):
        return None
    return d.xipos[m.body("L0").id].copy()


def run_rod(text, duration, dt, fps=100):
    res = H.run_usdphys(text, timeout=60.0, duration=duration, dt=dt, fps=fps)
    assert res[0] == "ok", f"{res[0]}: {res[1]}"
    assert np.all(np.isfinite(res[2])) and float(np.max(res[4])) <= 1e-6, "a held cone must converge"
    return res


def against_mujoco(text, oracle, duration):
    """usdphys' COM at dt 5e-4 / 2.5e-4 s against MuJoCo's (dt 1e-5 / 5e-6 s, time constants
    2e-4 / 1e-4 s): the deviation within 1e-6 m plus three times the sum of each side's own
    measured error (first order in the impact). Returns (deviation, tolerance)."""
    pos = [run_rod(text, duration, dt)[2][-1, 0, 0] for dt in (5e-4, 2.5e-4)]
    ref, ref2, stiff = oracle(1e-5, 2e-4), oracle(5e-6, 2e-4), oracle(5e-6, 1e-4)
    assert ref is not None and ref2 is not None and stiff is not None, "the MuJoCo oracle went unstable"
    own = float(np.max(np.abs(pos[0] - pos[1])))
    tol = 1e-6 + 3 * (own + float(np.max(np.abs(ref - ref2))) + float(np.max(np.abs(ref2 - stiff))))
    return float(np.max(np.abs(pos[1] - stiff))), tol


@pytest.mark.parametrize("a", [0, 1, 2])
@pytest.mark.parametrize("cone, toward, bound", [
    ((30.0, 60.0), 2, 60.0),  # swings towards e0[a+2]: held at coneAngle1Limit
    ((30.0, 60.0), 1, 30.0),  # towards e0[a+1]: coneAngle0Limit
    ((70.0, 20.0), 2, 20.0),  # the smaller angle second
    ((0.0, 45.0), 2, 45.0),  # a flat cone, the swing in its plane
])
def test_a_planar_swing_stops_on_the_cone_like_a_hinge_limit(a, cone, toward, bound):
    """A horizontal rod swinging down towards e0[a+1] or e0[a+2] stays in that vertical plane; a
    cone limit there is MuJoCo's hinge about the plane's normal with range +-bound. The rod
    reaches the bound at ~0.2-0.3 s and rests on it at 0.6 s."""
    jq = frame0_with(a, down=(a + toward) % 3)
    text = cone_stage(jq, cone, axis=a)
    normal = (a + 3 - toward) % 3  # tilting towards e0[a+1] turns about e0[a+2], and back

    def oracle(dt, tc):
        return mujoco_rod(jq, a, [(np.eye(3)[normal], (-bound, bound))], [0.0], 0.6, dt, tc)

    dev, tol = against_mujoco(text, oracle, 0.6)
    assert dev <= tol, f"{dev:.3g} m from MuJoCo (tolerance {tol:.3g})"
    free = run_rod(cone_stage(jq, None, axis=a), 0.6, 5e-4)[2][-1, 0, 0]
    assert np.max(np.abs(free - oracle(1e-5, 2e-4))) > 0.05, "the cone must have acted"


@pytest.mark.parametrize("a", [0, 2])
def test_a_flat_cone_holds_a_swing_out_of_its_plane(a):
    """Cone angles (0, 45) deg: e1[a] may not tilt towards e0[a+1] at all. With gravity pulling
    that way the rod hangs horizontal on the joint (the flat side holds it like a hinge's
    locked rows)."""
    jq = frame0_with(a, down=(a + 1) % 3)
    res = run_rod(cone_stage(jq, (0.0, 45.0), axis=a), 0.5, 1e-3)
    assert np.max(np.abs(res[2][:, 0, 0] - res[2][0, 0, 0])) < 1e-9


@pytest.mark.parametrize("a", [0, 1, 2])
def test_a_conical_pendulum_rides_a_circular_cone_like_mujoco(a):
    """A hanging rod tilted 20 deg, whirled at 900 deg/s about the vertical cone axis, climbs onto
    a 35 deg cone (46 deg without it, at 0.2 s) and rides along it, 0.4 s. MuJoCo: hinges about e0[a] (azimuth),
    e0[a+2] (the tilt towards e0[a+1], range +-35 deg) and the rod's own axis (spin): the tilt is
    the swing. Its angular momentum about the vertical keeps the tilt away from 0, where the
    first and last hinges align (MuJoCo's body starts tilted, so its zero pose is not there)."""
    jq = frame0_with(a)
    omega = 900.0 * H.qrot(jq, np.eye(3)[a])
    tilt = 20.0
    e = np.eye(3)
    azimuth = H.qrot(H.qaxis(e[(a + 2) % 3], -math.radians(tilt)), e[a])  # e0[a] in the tilted body

    def oracle(dt, tc, cone=35.0):
        return mujoco_rod(jq, a, [(azimuth, None), (e[(a + 2) % 3], (-cone - tilt, cone - tilt)), (e[a], None)],
                          [math.radians(900.0), 0.0, 0.0], 0.4, dt, tc, tilt=tilt)

    dev, tol = against_mujoco(cone_stage(jq, (35.0, 35.0), axis=a, tilt=tilt, omega=omega), oracle, 0.4)
    assert dev <= tol, f"{dev:.3g} m from MuJoCo (tolerance {tol:.3g})"
    free = run_rod(cone_stage(jq, None, axis=a, tilt=tilt, omega=omega), 0.4, 5e-4)[2][-1, 0, 0]
    assert np.max(np.abs(free - oracle(1e-5, 2e-4, cone=1e3))) < 1e-6, "MuJoCo's hinges without the range: the free rod"
    assert np.max(np.abs(free - oracle(1e-5, 2e-4))) > 0.05, "the cone must have acted"


def swing_components(res, jq, a):
    """Per recorded frame: the tilt of e1[a] (the rod) towards e0[a+1] and e0[a+2] (rad), the
    swing vector theta (c, s) of mathx.swing_angle, measured here from the rod's poses and the
    joint frames as stored (float32: 6e-8 rad from the float64 ones)."""
    def stored(q):  # a joint frame as the stage holds it (quatf) and the reader reads it
        q = np.array([H.f32(v) for v in q])
        return q / np.linalg.norm(q)

    f0, f1 = stored(jq), stored(H.qconj(x_to_axis(a)))
    out = []
    for q in res[3][:, 0, 0]:  # xyzw
        v = H.qrot(H.qconj(f0), H.qrot(np.array([q[3], *q[:3]]), H.qrot(f1, np.eye(3)[a])))  # e1[a] in frame 0
        x, y, z = v[a], v[(a + 1) % 3], v[(a + 2) % 3]
        rho = math.hypot(y, z)
        theta = math.atan2(rho, x)
        out.append((theta * y / rho, theta * z / rho) if rho > 0 else (0.0, 0.0))
    return np.array(out)


def cone_measure(sw, cone):
    """How far out each swing is, as a fraction of the cone's boundary along its direction, and
    how far (rad) it tilts towards a side whose angle is 0 (a flat cone)."""
    A, B = (math.radians(c) for c in cone)
    flat = np.zeros(len(sw))
    m = np.zeros(len(sw))
    for i, (tc, ts) in enumerate(sw):
        if A == 0.0:
            flat[i] = max(flat[i], abs(tc))
        if B == 0.0:
            flat[i] = max(flat[i], abs(ts))
        m[i] = math.hypot(tc / A if A else 0.0, ts / B if B else 0.0)
    return m, flat


CONES = [(30.0, 60.0), (60.0, 30.0), (20.0, 20.0), (90.0, 120.0), (170.0, 10.0), (0.0, 45.0), (45.0, 0.0), (0.0, 0.0)]


@CI
@given(a=st.integers(0, 2), cone=st.sampled_from(CONES),
       q=st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4).filter(lambda v: sum(x * x for x in v) > 0.1),
       w=st.tuples(*[st.floats(-720, 720, allow_nan=False)] * 3), ratio=st.sampled_from([1.0, 0.1]))
def test_an_elliptical_cone_holds_and_acts_only_at_its_boundary(a, cone, q, w, ratio):
    """A rod starting on the cone's axis, turning at a random rate under gravity in a random
    direction, 0.5 s at 1 ms, every step recorded. The swing measured from its poses stays within
    the ellipse (1e-6 relative: the solver holds the row to 1e-12 rad), and no tilt at all
    leaves a flat side (1e-7 rad: the solver holds it to 1e-12 in the frames it read, this
    measure's frames are within float32 round-off of those; 7e-9 rad seen); the motion is the unlimited one until that one first leaves
    the cone (1e-9 m: nothing acts inside), and a motion that leaves it unlimited reaches the
    boundary limited. An elongated cone past 90 deg may stop with a one-line message instead:
    (170, 10) deg did in 3 of 20 random runs (never (150, 30), (120, 60), (100, 20), (179, 179)
    or (60, 10) in 20 each), where its boundary's far end is a needle tip that the rod's swing
    whips around."""
    jq = np.asarray(q, float) / np.linalg.norm(q)
    runs = []
    for c in (cone, None):
        res = H.run_usdphys(cone_stage(jq, c, axis=a, omega=w, ratio=ratio), timeout=60.0, duration=0.5, dt=1e-3,
                            fps=1000)
        if res[0] == "usdphys_error" and H.needle_cone(c):
            # the needle tip of an elongated cone past 90 deg (docs/solver.md, "Cone limits"): a
            # one-line stop, never a wrong motion
            assert "\n" not in res[1].strip() and "did not converge" in res[1], res[1]
            return
        assert res[0] == "ok", f"{res[0]}: {res[1]}"
        assert np.all(np.isfinite(res[2])) and float(np.max(res[4])) <= 1e-6
        runs.append(res)
    held, flat = cone_measure(swing_components(runs[0], jq, a), cone)
    free, _ = cone_measure(swing_components(runs[1], jq, a), cone)
    if cone != (0.0, 0.0):
        assert np.max(held) <= 1.0 + 1e-6, f"the swing left the cone: {np.max(held):.9g} of its boundary"
    assert np.max(flat) <= 1e-7, f"a tilt of {np.max(flat):.3g} rad out of a flat side"
    if 0.0 in cone:
        return  # the flat side acts from the start
    out = np.flatnonzero(free > 1.0)
    first = out[0] if out.size else len(free)
    before = slice(0, max(first - 1, 0))
    assert np.max(np.abs(runs[0][2][before, 0, 0] - runs[1][2][before, 0, 0]), initial=0.0) <= 1e-9
    if out.size:
        assert np.max(held) >= 1.0 - 1e-6, "a motion that leaves the cone unlimited must reach its boundary"


def swung_rod(cone):
    """A rod hanging on its spherical joint, swung out at (150, 250, 0) deg/s onto `cone` (deg)."""
    return cone_stage(frame0_with(2), cone, axis=2, omega=(150.0, 250.0, 0.0))


def test_cone_angles_overridden_per_world_equal_authored_stages():
    """physics:coneAngle0Limit / coneAngle1Limit are per-world parameters through their stage
    attributes (degrees, as authored): three worlds with their own cones (the smaller side the
    first, neither, the second) run as three stages with those cones authored. The values are
    exact in float32, so both paths convert the same numbers (a degree times pi / 180 either
    way): bit for bit."""
    first, second = [30.0, 45.0, 40.0], [60.0, 45.0, 20.0]  # the smaller side first, neither, second
    res = H.simulate_text(swung_rod((40.0, 40.0)), worlds=3, duration=0.5, dt=1e-3, fps=100,
                          overrides={"/J0.physics:coneAngle0Limit": first, "/J0.physics:coneAngle1Limit": second})
    for w in range(3):
        one = H.simulate_text(swung_rod((first[w], second[w])), duration=0.5, dt=1e-3, fps=100)
        np.testing.assert_array_equal(res.positions[:, w], one.positions[:, 0])
        np.testing.assert_array_equal(res.orientations[:, w], one.orientations[:, 0])
    assert np.ptp(res.positions[-1, :, 0, 0]) > 1e-3  # the cones differ where the rod went


@pytest.mark.parametrize("first, second", [
    ([20.0, 30.0, 45.0], [25.0, 40.0]),  # the smaller side first in some variants, second in others: worlds of one model
    ([0.0, 190.0], [25.0, 200.0]),  # flat, past 180 deg, open: other rows than the stage's, each its own model
])
def test_a_sweep_over_both_cone_angles_runs_every_variant_as_its_authored_stage(tmp_path, first, second):
    """`usdphys sweep` over both cone angles: every variant runs, with no warning, and ends where
    the stage authored with its angles ends, bit for bit."""
    from usdphys.sweep import read_results, sweep

    path = tmp_path / "cone.usda"
    path.write_text(swung_rod((40.0, 40.0)))
    spec = {"run": {"duration": 0.5, "dt": 1e-3, "fps": 100},
            "grid": {"/J0.physics:coneAngle0Limit": first, "/J0.physics:coneAngle1Limit": second},
            "metrics": [{"kind": "pose", "prim": "/L0"}]}
    rows = read_results(sweep(str(path), spec, tmp_path / "out", workers=1).table)
    assert [(r["status"], r["warnings"]) for r in rows] == [("ok", "")] * (len(first) * len(second))
    for row in rows:
        cone = (float(row["/J0.physics:coneAngle0Limit"]), float(row["/J0.physics:coneAngle1Limit"]))
        one = H.simulate_text(swung_rod(cone), duration=0.5, dt=1e-3, fps=100)
        pose = [float(row[f"/L0.{q}.{c}" + (" [m]" if q == "position" else "")])
                for q, comps in (("position", "xyz"), ("orientation", "xyzw")) for c in comps]
        assert pose == one.positions[-1, 0, 0].tolist() + one.orientations[-1, 0, 0].tolist()
    assert len({r["/L0.position.x [m]"] for r in rows}) == len(rows)  # the cones shaped every motion
