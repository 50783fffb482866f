"""Force laws: hand-computed numbers, signs per docs/schemas.md, curves/maps with
extrapolation, zero length without NaN, Warp vs NumPy to 1e-12."""
import math

import numpy as np
import pytest
import warp as wp

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.math3d import quat_mul
from usdphys.solver import laws as fl
from usdphys.types import laws as law_types
import reference.laws as np_ref
from usdphys.errors import UsdphysError

# Hand-computed values are exact in binary or a few roundings away; 1e-12 absolute on
# forces of order 1..100 N leaves room for the rounding and nothing else.
TOL = 1e-12


# -- kernels (compiled once for this module) -------------------------------------------
@wp.kernel
def law_kernel(xs: wp.array(dtype=wp.float64), xdots: wp.array(dtype=wp.float64), rows: wp.array(dtype=wp.int32),
               law_i: wp.array2d(dtype=wp.int32), law_f: wp.array2d(dtype=wp.float64), data: wp.array(dtype=wp.float64),
               out: wp.array2d(dtype=wp.float64)):
    t = wp.tid()
    f, dfx, dfv = fl.spring_damper_law(xs[t], xdots[t], rows[t], law_i, law_f, data)
    out[t, 0] = f
    out[t, 1] = dfx
    out[t, 2] = dfv


@wp.kernel
def geometry_kernel(p0: wp.array(dtype=wp.vec3d), p1: wp.array(dtype=wp.vec3d), v0: wp.array(dtype=wp.vec3d),
                    v1: wp.array(dtype=wp.vec3d), q0: wp.array(dtype=wp.quatd), q1: wp.array(dtype=wp.quatd),
                    s: wp.array2d(dtype=wp.float64), out_s: wp.array2d(dtype=wp.float64), out_v: wp.array2d(dtype=wp.vec3d)):
    """s[t] = (f, k, d, offset, velocity_offset, force, active, theta_prev, T, v, dyn, visc, m, fraction)."""
    t = wp.tid()
    L, Ldot, n = fl.line_kinematics(p0[t], p1[t], v0[t], v1[t])
    F0, F1 = fl.line_forces(n, s[t, 0])
    fa, A0, A1 = fl.axial_spring_damper(n, p0[t], p1[t], v0[t], v1[t], s[t, 1], s[t, 2], s[t, 3], s[t, 4], s[t, 5], wp.int32(s[t, 6]))
    th = fl.twist_angle(q0[t], q1[t], s[t, 7])
    thd = fl.twist_rate(q0[t], v0[t], v1[t])
    tau0, tau1 = fl.axis_torques(q0[t], s[t, 8])
    fr = fl.joint_friction_effort(s[t, 9], s[t, 10], s[t, 11])
    pm = fl.spring_mass_position(p0[t], p1[t], s[t, 13])
    M0, M1 = fl.spring_mass_reactions(s[t, 12], s[t, 13], v0[t], v1[t])
    out_s[t, 0] = L
    out_s[t, 1] = Ldot
    out_s[t, 2] = fa
    out_s[t, 3] = th
    out_s[t, 4] = thd
    out_s[t, 5] = fr
    out_v[t, 0] = n
    out_v[t, 1] = F0
    out_v[t, 2] = F1
    out_v[t, 3] = A0
    out_v[t, 4] = A1
    out_v[t, 5] = tau0
    out_v[t, 6] = tau1
    out_v[t, 7] = pm
    out_v[t, 8] = M0
    out_v[t, 9] = M1


def run_laws(laws, xs, xdots, rows):
    packed = law_types.pack_laws(laws)
    li, lf, data = fl.laws_to_warp(packed, None)  # the device the kernel is launched on
    out = wp.zeros((len(xs), 3), dtype=wp.float64)
    wp.launch(law_kernel, len(xs), [wp.array(np.asarray(xs, float), dtype=wp.float64), wp.array(np.asarray(xdots, float), dtype=wp.float64),
                                    wp.array(np.asarray(rows, np.int32), dtype=wp.int32), li, lf, data, out])
    return out.numpy()


def run_geometry(p0, p1, v0, v1, q0, q1, s):
    n = len(p0)
    out_s = wp.zeros((n, 6), dtype=wp.float64)
    out_v = wp.zeros((n, 10), dtype=wp.vec3d)
    arr = lambda x, dt: wp.array(np.asarray(x, float), dtype=dt)  # noqa: E731
    wp.launch(geometry_kernel, n, [arr(p0, wp.vec3d), arr(p1, wp.vec3d), arr(v0, wp.vec3d), arr(v1, wp.vec3d),
                                   arr(q0, wp.quatd), arr(q1, wp.quatd), arr(s, wp.float64), out_s, out_v])
    return out_s.numpy(), out_v.numpy()


def quat_axis_angle(axis, deg):
    """(x, y, z, w) rotation by deg about axis."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    h = math.radians(deg) / 2
    return np.array([*(a * math.sin(h)), math.cos(h)])


def qmul(a, b):
    return quat_mul(a, b)


# -- TSDA laws -----------------------------------------------------------------------------
LINEAR = law_types.ScalarLaw(k=50.0, c=5.0, x0=1.0, preload=10.0)
CURVES = law_types.ScalarLaw(k=999.0, c=999.0, x0=1.0, preload=2.0,  # curves replace k and c
                      spring_curve=[(-1.0, -100.0), (0.0, 0.0), (1.0, 50.0), (2.0, 150.0)],
                      damping_curve=[(-1.0, -10.0), (1.0, 10.0)])
SPRING_CURVE_ONLY = law_types.ScalarLaw(k=999.0, c=4.0, x0=0.0, spring_curve=[(0.0, 0.0), (1.0, 20.0)])
MAP = law_types.ScalarLaw(k=999.0, c=999.0, x0=7.0, preload=1.0,  # map replaces both; x0 unused
                   map_deformation=[0.0, 1.0, 2.0], map_velocity=[-1.0, 1.0],
                   map_values=[0.0, 10.0, 30.0, 5.0, 15.0, 35.0])
MAP_1D = law_types.ScalarLaw(map_deformation=[0.0, 2.0], map_velocity=[0.0], map_values=[0.0, 4.0])
LAWS = [LINEAR, CURVES, SPRING_CURVE_ONLY, MAP, MAP_1D]

# (row, x, xdot, f, df/dx, df/dxdot), all by hand
HAND = [
    (0, 1.5, 0.2, 10 - 50 * 0.5 - 5 * 0.2, -50.0, -5.0),   # extended: f = -16 pulls together
    (0, 0.8, -1.0, 10 + 50 * 0.2 + 5.0, -50.0, -5.0),      # compressed and closing: pushes apart
    (1, 2.5, 0.5, 2 - 100.0 - 5.0, -100.0, -10.0),         # K(1.5) = 100 (slope 100), C(0.5) = 5
    (1, 4.0, 3.0, 2 - 150.0 - 10.0, 0.0, 0.0),             # both curves held past their ends
    (1, -1.0, -7.0, 2 + 100.0 + 10.0, 0.0, 0.0),           # held before the first points
    (1, 0.5, 0.0, 2 + 50.0, -100.0, -10.0),                # K(-0.5) = -50
    (2, 0.25, 2.0, 0 - 5.0 - 8.0, -20.0, -4.0),            # spring curve + linear damping
    (3, 0.5, 0.0, 1 - 7.5, -10.0, -2.5),                    # inside the map cell
    (3, 3.0, 0.0, 1 - 52.5, -20.0, -2.5),                  # x extrapolated: rows 50 and 55
    (3, -1.0, 3.0, 1 - 0.0, -10.0, -2.5),                    # both extrapolated: rows -10, -5 at v = 3
    (3, 2.0, 1.0, 1 - 35.0, -20.0, -2.5),                   # a grid node
    (4, 3.0, 5.0, -6.0, -2.0, 0.0),                         # one velocity row: linear in x only
]


def test_laws_hand_values_warp_and_numpy():
    out = run_laws(LAWS, [h[1] for h in HAND], [h[2] for h in HAND], [h[0] for h in HAND])
    for (row, x, xd, f, dfx, dfv), got in zip(HAND, out):
        np.testing.assert_allclose(got, [f, dfx, dfv], rtol=0, atol=TOL, err_msg=f"row {row} x={x} xdot={xd}")
        np.testing.assert_allclose(np_ref.law_np(LAWS[row], x, xd), [f, dfx, dfv], rtol=0, atol=TOL)


def test_laws_warp_matches_numpy_everywhere():
    rng = np.random.default_rng(7)
    m = 400
    rows = rng.integers(0, len(LAWS), m)
    xs = rng.uniform(-4, 6, m)
    xds = rng.uniform(-4, 4, m)
    out = run_laws(LAWS, xs, xds, rows)
    ref = np.array([np_ref.law_np(LAWS[r], x, v) for r, x, v in zip(rows, xs, xds)])
    np.testing.assert_allclose(out, ref, rtol=0, atol=TOL)


def test_packed_law_layout():
    p = law_types.pack_laws([CURVES, MAP])
    assert p.law_i.shape == (2, 7) and p.law_i.dtype == np.int32
    assert p.law_i[0].tolist() == [0, 4, 8, 2, 12, 0, 0]
    assert p.law_i[1].tolist() == [12, 0, 12, 0, 12, 3, 2]
    np.testing.assert_array_equal(p.law_f[1], [999.0, 999.0, 7.0, 1.0])
    np.testing.assert_array_equal(p.data[12:17], [0.0, 1.0, 2.0, -1.0, 1.0])


@pytest.mark.parametrize("law, words", [
    (law_types.ScalarLaw(spring_curve=[(0, 0), (0, 1)]), "strictly ascending"),
    (law_types.ScalarLaw(map_deformation=[0, 1], map_velocity=[0], map_values=[1.0]), "expected len"),
    (law_types.ScalarLaw(k=float("inf")), "not finite"),
])
def test_bad_laws_raise(law, words):
    with pytest.raises(UsdphysError, match=words):
        law_types.pack_laws([law])


# -- geometry, axial, RSDA, friction, spring mass --------------------------------------------
Q_ID = [0.0, 0.0, 0.0, 1.0]
Q_RX90 = quat_axis_angle([1, 0, 0], 90)


def row(f=0.0, k=0.0, d=0.0, off=0.0, voff=0.0, force=0.0, active=1.0, prev=0.0, T=0.0, v=0.0, dyn=0.0, visc=0.0, m=0.0, frac=0.5):
    return [f, k, d, off, voff, force, active, prev, T, v, dyn, visc, m, frac]


def test_tsda_direction_and_signs():
    # p0 on body0 at the origin, p1 on body1 at x = 1.5, separating at 0.2 m/s
    s, v = run_geometry([[0, 0, 0]], [[1.5, 0, 0]], [[0, 0, 0]], [[0.2, 0, 0]], [Q_ID], [Q_ID], [row(f=-16.0)])
    L, Ldot = s[0, 0], s[0, 1]
    assert (L, Ldot) == (1.5, 0.2)
    np.testing.assert_allclose(v[0, 0], [-1, 0, 0], atol=TOL)  # n = (p0 - p1)/L
    # f = -16 (extended spring pulls): body0 is pulled towards p1 (+x), body1 towards p0
    np.testing.assert_allclose(v[0, 1], [16, 0, 0], atol=TOL)
    np.testing.assert_allclose(v[0, 2], [-16, 0, 0], atol=TOL)
    L2, Ld2, n2 = np_ref.line_kinematics_np([0, 0, 0], [1.5, 0, 0], [0, 0, 0], [0.2, 0, 0])
    assert (L2, Ld2) == (1.5, 0.2) and n2.tolist() == [-1, 0, 0]


def test_tsda_zero_length_gives_no_nan_and_no_force():
    # sphere_decay's degenerate TSDA: point1 == point2; with a preload it must still be finite
    s, v = run_geometry([[1, 2, 3]], [[1, 2, 3]], [[0, 0, 1]], [[0, 0, -1]], [Q_ID], [Q_ID], [row(f=10.0)])
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(v))
    assert s[0, 0] == 0.0 and s[0, 1] == 0.0
    assert v[0, 0].tolist() == [0, 0, 0] and v[0, 1].tolist() == [0, 0, 0] and v[0, 2].tolist() == [0, 0, 0]
    L, Ld, n = np_ref.line_kinematics_np([1, 2, 3], [1, 2, 3], [0, 0, 1], [0, 0, -1])
    assert L == 0.0 and Ld == 0.0 and n.tolist() == [0, 0, 0]


def test_axial_exudyn_mini_example_sign():
    # ground marker m0 at the origin, body m1 displaced dx = 1/k along the axis x; a load +1 N
    # along x on the body is balanced exactly there: the spring gives body1 -f a = -1 N x.
    k = 2000.0
    # the kernel uses n = (p0 - p1)/|p0 - p1| as the axis; p1 at -x makes n = +x
    s, v = run_geometry([[0, 0, 0]], [[-1 / k, 0, 0]], [[0, 0, 0]], [[0, 0, 0]], [Q_ID], [Q_ID], [row(k=k, d=20.0)])
    # with a = +x: dx = a.(p1 - p0) = -1/k -> f = -1: body1 gets -f a = +1 N (pushed back)
    assert s[0, 2] == pytest.approx(-1.0, abs=TOL)
    np.testing.assert_allclose(v[0, 4], [1, 0, 0], atol=TOL)
    np.testing.assert_allclose(v[0, 3], [-1, 0, 0], atol=TOL)
    # the mini example itself (NumPy reference): p1 at +1/k, load +1 N balanced
    f, F0, F1 = np_ref.axial_np([1, 0, 0], [0, 0, 0], [1 / k, 0, 0], [0, 0, 0], [0, 0, 0], k, 20.0)
    assert f == pytest.approx(1.0, abs=TOL)
    np.testing.assert_allclose(F1 + np.array([1.0, 0, 0]), 0, atol=TOL)
    np.testing.assert_allclose(F0, [1, 0, 0], atol=TOL)


def test_axial_offsets_force_and_inactive():
    a = [0, 0, 1]
    # dx = 0.3, dv = -0.5: f = 100 (0.3 - 0.1) + 10 (-0.5 - 0.5) + 7 = 20 - 10 + 7 = 17
    f, F0, F1 = np_ref.axial_np(a, [0, 0, 0], [5, 0, 0.3], [0, 0, 0.5], [9, 0, 0], 100.0, 10.0, 0.1, 0.5, 7.0)
    assert f == pytest.approx(17.0, abs=TOL)
    np.testing.assert_allclose(F0, [0, 0, 17], atol=TOL)
    np.testing.assert_allclose(F1, [0, 0, -17], atol=TOL)
    # Warp: same numbers (axis = n = (p0 - p1)/L, so build p0 - p1 along +z)
    s, v = run_geometry([[0, 0, 0.3]], [[0, 0, 0]], [[0, 0, 0]], [[0, 0, 0.5]], [Q_ID], [Q_ID],
                        [row(k=100.0, d=10.0, off=0.1, voff=0.5, force=7.0), ])
    # a = +z, dx = a.(p1 - p0) = -0.3, dv = 0.5: 100(-0.4) + 10(0) + 7 = -33
    assert s[0, 2] == pytest.approx(-33.0, abs=TOL)
    np.testing.assert_allclose(v[0, 3], [0, 0, -33], atol=TOL)
    s, v = run_geometry([[0, 0, 0.3]], [[0, 0, 0]], [[0, 0, 0]], [[0, 0, 0.5]], [Q_ID], [Q_ID],
                        [row(k=100.0, d=10.0, force=7.0, active=0.0)])
    assert s[0, 2] == 0.0 and v[0, 3].tolist() == [0, 0, 0] and v[0, 4].tolist() == [0, 0, 0]
    assert np_ref.axial_np(a, [0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], 1.0, 0.0, force=3.0, active=False)[0] == 0.0


def test_twist_angle_tilted_frames_rate_and_torque_signs():
    q0 = Q_RX90  # frame 0 Z axis = world -Y
    q1 = qmul(q0, quat_axis_angle([0, 0, 1], 20.0))
    s, v = run_geometry([[0, 0, 0]], [[0, 0, 0]], [[0, 0, 1]], [[0, -2, 0]], [q0], [q1], [row(T=3.0)])
    assert s[0, 3] == pytest.approx(math.radians(20.0), abs=TOL)
    # (w1 - w0) . z0 = (0, -2, -1) . (0, -1, 0) = 2
    assert s[0, 4] == pytest.approx(2.0, abs=TOL)
    np.testing.assert_allclose(v[0, 6], [0, -3, 0], atol=TOL)  # body1: +T z0
    np.testing.assert_allclose(v[0, 5], [0, 3, 0], atol=TOL)   # body0: -T z0
    assert np_ref.twist_angle_np(q0, q1) == pytest.approx(math.radians(20.0), abs=TOL)
    assert np_ref.twist_rate_np(q0, [0, 0, 1], [0, -2, 0]) == pytest.approx(2.0, abs=TOL)


def test_twist_angle_is_continuous_over_turns():
    # 0 .. 760 degrees in steps of 40 (< 180), about a tilted axis, unwrapped step by step
    q0 = quat_axis_angle([1, 1, 0], 35.0)
    angles = np.arange(0.0, 761.0, 40.0)
    q1 = [qmul(q0, quat_axis_angle([0, 0, 1], a)) for a in angles]
    prev_w = prev_n = 0.0
    for a, q in zip(angles, q1):
        s, _ = run_geometry([[0, 0, 0]], [[0, 0, 0]], [[0, 0, 0]], [[0, 0, 0]], [q0], [q], [row(prev=prev_w)])
        prev_w = s[0, 3]
        prev_n = np_ref.twist_angle_np(q0, q, prev_n)
        # angles up to 13 rad: a few ulps of atan2 / quaternion products, 1e-12 is ample
        assert prev_w == pytest.approx(math.radians(a), abs=TOL)
        assert prev_n == pytest.approx(math.radians(a), abs=TOL)
    # the negative direction too
    assert np_ref.twist_angle_np(q0, qmul(q0, quat_axis_angle([0, 0, 1], -350.0)), math.radians(-300)) == pytest.approx(math.radians(-350.0), abs=TOL)


def test_rsda_law_in_radians_from_degree_units():
    # schema: k = 0.5 N m / deg, theta0 = 5 deg, c = 0.1 N m s / deg, preload 1 N m
    k = 0.5 * 180 / math.pi
    c = 0.1 * 180 / math.pi
    law = law_types.ScalarLaw(k=k, c=c, x0=math.radians(5.0), preload=1.0)
    # theta = 15 deg, thetadot = 20 deg/s: T = 1 - 0.5 * 10 - 0.1 * 20 = -6 N m
    out = run_laws([law], [math.radians(15.0)], [math.radians(20.0)], [0])
    assert out[0, 0] == pytest.approx(-6.0, abs=TOL)
    assert np_ref.law_np(law, math.radians(15.0), math.radians(20.0))[0] == pytest.approx(-6.0, abs=TOL)


def test_joint_friction_effort():
    s, _ = run_geometry([[0, 0, 0]] * 3, [[1, 0, 0]] * 3, [[0, 0, 0]] * 3, [[0, 0, 0]] * 3, [Q_ID] * 3, [Q_ID] * 3,
                        [row(v=2.0, dyn=3.0, visc=0.5), row(v=-2.0, dyn=3.0, visc=0.5), row(v=0.0, dyn=3.0, visc=0.5)])
    np.testing.assert_allclose(s[:, 5], [4.0, -4.0, 0.0], atol=TOL)
    assert [np_ref.joint_friction_effort_np(v, 3.0, 0.5) for v in (2.0, -2.0, 0.0)] == [4.0, -4.0, 0.0]


def test_spring_mass_split():
    # m = 2 kg at a quarter from p0, at rest in gravity: the ends carry 3/4 and 1/4 of m g
    g = [0, 0, -9.81]
    s, v = run_geometry([[0, 0, 0]], [[4, 0, 0]], [[0, 0, 0]], [g], [Q_ID], [Q_ID], [row(m=2.0, frac=0.25)])
    np.testing.assert_allclose(v[0, 7], [1, 0, 0], atol=TOL)
    np.testing.assert_allclose(v[0, 8], [0, 0, -14.715], atol=TOL)
    np.testing.assert_allclose(v[0, 9], [0, 0, -4.905], atol=TOL)
    F0, F1 = np_ref.spring_mass_reactions_np(2.0, 0.25, [0, 0, 1.0], g)  # accelerating up at 1 m/s^2
    np.testing.assert_allclose(F0 + F1, [0, 0, -2 * 10.81], atol=TOL)
