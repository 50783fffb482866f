"""Time functions: Warp kernel vs closed forms, NumPy reference, derivatives, repeat/fmod."""
import math

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
import reference.timefunc as tf_ref
from usdphys.solver import timefunc as tf
from usdphys.types import timefunc as tf_types
from usdphys.errors import UsdphysError

# Closed forms are evaluated in float64 with the same operations in a different order;
# 1e-12 absolute on values of order 1..100 is a few ulps of headroom, far below any bug.
TOL = 1e-12

# Chrono's slider_crank motor: SPEED DATA with repeat {start 0, width 16, shift 16}.
SLIDER_CRANK = dict(
    type="data",
    data=[(0.0, 0.0), (1.0, 3.14), (4.0, 3.14), (5.0, 0.0), (8.0, 0.0), (9.0, -3.14), (12.0, -3.14), (13.0, 0.0)],
    repeat={"start": 0.0, "width": 16.0, "shift": 16.0},
)


def slider_crank_closed(t):
    """Hand-written: the 16 s speed profile, periodic over t >= 0 and with fmod(t + 16, 16)
    for t in [-16, 0): C fmod keeps the sign, so t + 16 in [0, 16) maps to itself."""
    tau = math.fmod(t + 16.0, 16.0)
    if tau < 0:  # only for t < -16; C fmod keeps the sign, so tau is then in (-16, 0)
        return 0.0, 0.0  # before the first point: held at u(0) = 0
    pieces = [(0, 1, 0.0, 3.14), (1, 4, 3.14, 3.14), (4, 5, 3.14, 0.0), (5, 8, 0.0, 0.0),
              (8, 9, 0.0, -3.14), (9, 12, -3.14, -3.14), (12, 13, -3.14, 0.0)]
    for a, b, ua, ub in pieces:
        if a <= tau < b:
            s = (ub - ua) / (b - a)
            return ua + s * (tau - a), s
    return 0.0, 0.0  # 13 <= tau < 16: held at the last point, 0


CASES = {
    "constant": (dict(type="constant", value=2.5), lambda t: (2.5, 0.0)),
    "polynomial": (
        dict(type="polynomial", coefficients=[1.0, -2.0, 0.5, 0.25]),
        lambda t: (1 - 2 * t + 0.5 * t**2 + 0.25 * t**3, -2 + t + 0.75 * t**2),
    ),
    "sine": (
        # frequency in Hz, phase in DEGREES (30 deg = pi/6)
        dict(type="sine", amplitude=2.0, frequency=0.5, phase=30.0, shift=1.0),
        lambda t: (2 * math.sin(math.pi * t + math.pi / 6) + 1, 2 * math.pi * math.cos(math.pi * t + math.pi / 6)),
    ),
    "ramp": (dict(type="ramp", intercept=1.0, slope=-2.0), lambda t: (1 - 2 * t, -2.0)),
    "data": (
        dict(type="data", data=[(0.0, 1.0), (2.0, 5.0), (3.0, 2.0)]),
        lambda t: (1.0, 0.0) if t < 0 else (1 + 2 * t, 2.0) if t < 2 else (5 - 3 * (t - 2), -3.0) if t < 3 else (2.0, 0.0),
    ),
    "step": (
        dict(type="step", data=[(0.0, 1.0), (2.0, 5.0), (3.0, 2.0)]),
        lambda t: (1.0 if t < 2 else 5.0 if t < 3 else 2.0, 0.0),
    ),
    "slider_crank_repeat": (SLIDER_CRANK, slider_crank_closed),
    "ramp_repeat_negative_shift": (
        # tau = 0.25 + fmod(t - 3, 2): for t < 3 fmod is negative (sign kept), tau < 0.25
        dict(type="ramp", intercept=0.0, slope=1.0, repeat=True, repeatStart=0.25, repeatWidth=2.0, repeatShift=-3.0),
        lambda t: (0.25 + math.fmod(t - 3.0, 2.0), 1.0),
    ),
}

# times: both signs, knots, off-knot points; avoid the repeat wrap instants for derivatives
TIMES = np.array([-20.0, -5.3, -2.5, -1.0, -0.25, 0.0, 0.3, 1.0, 1.7, 2.0, 2.9, 3.0, 4.5, 7.25, 12.5, 13.0, 15.2, 17.5, 21.0, 33.3])


@pytest.fixture(scope="module")
def packed():
    table = tf_types.TimeFunctionTable()
    idx = {name: table.add(spec) for name, (spec, _) in CASES.items()}
    return table.pack(), idx


@pytest.mark.parametrize("name", list(CASES))
def test_warp_matches_closed_form_and_numpy(packed, name):
    table, idx = packed
    spec, closed = CASES[name]
    u, du = tf.evaluate_packed_warp(table, idx[name], TIMES)
    want = np.array([closed(t) for t in TIMES])
    np.testing.assert_allclose(u, want[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(du, want[:, 1], rtol=0, atol=TOL)
    np.testing.assert_allclose(tf_ref.evaluate(spec, TIMES), want[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(tf_ref.derivative(spec, TIMES), want[:, 1], rtol=0, atol=TOL)


def test_slider_crank_known_values(packed):
    table, idx = packed
    t = np.array([0.5, 2.0, 16.5, 18.0, 25.0, -15.5, 4.5])
    u, du = tf.evaluate_packed_warp(table, idx["slider_crank_repeat"], t)
    np.testing.assert_allclose(u, [1.57, 3.14, 1.57, 3.14, -3.14, 1.57, 1.57], atol=TOL)
    np.testing.assert_allclose(du, [3.14, 0.0, 3.14, 0.0, 0.0, 3.14, -3.14], atol=TOL)


def test_repeat_uses_c_fmod_sign():
    # width 1, shift -0.5: t = 0.2 -> fmod(-0.3, 1) = -0.3 (Python % would give 0.7)
    spec = dict(type="ramp", slope=1.0, repeat=True, repeatStart=0.0, repeatWidth=1.0, repeatShift=-0.5)
    assert tf_ref.evaluate(spec, 0.2) == pytest.approx(-0.3, abs=1e-15)
    u, _ = tf.evaluate_packed_warp(tf_types.pack([spec]), 0, [0.2])
    assert u[0] == pytest.approx(-0.3, abs=1e-15)


@pytest.mark.parametrize("name", ["polynomial", "sine", "data", "slider_crank_repeat", "ramp_repeat_negative_shift"])
def test_derivative_matches_finite_differences(packed, name):
    table, idx = packed
    # points away from kinks and wraps, so the central difference is the true slope
    t = np.array([-14.3, -0.6, 0.45, 1.3, 2.6, 6.1, 9.7, 17.3, 27.7])
    h = 1e-6
    up, _ = tf.evaluate_packed_warp(table, idx[name], t + h)
    um, _ = tf.evaluate_packed_warp(table, idx[name], t - h)
    _, du = tf.evaluate_packed_warp(table, idx[name], t)
    # central difference: truncation O(h^2 u''') ~ 1e-11, roundoff ~ eps |u| / h, i.e.
    # ~2e-10 |u| (|u| reaches ~700 for the cubic at t = -14.3): rtol 1e-8 + atol 1e-7
    np.testing.assert_allclose(du, (up - um) / (2 * h), rtol=1e-8, atol=1e-7)


def test_scale_multiplies_value_and_derivative():
    spec = tf_types.TimeFunction(type="sine", amplitude=1.0, frequency=1.0, scale=math.pi / 180)
    u, du = tf.evaluate_packed_warp(tf_types.pack([spec]), 0, [0.125])
    assert u[0] == pytest.approx(math.pi / 180 * math.sin(math.pi / 4), abs=1e-15)
    assert du[0] == pytest.approx(math.pi / 180 * 2 * math.pi * math.cos(math.pi / 4), abs=1e-14)


def test_packed_layout():
    p = tf_types.pack([dict(type="sine", amplitude=3.0, frequency=2.0, phase=90.0, shift=0.5),
                 dict(type="polynomial", coefficients=[1.0, 2.0]),
                 dict(type="data", data=[(0.0, 1.0), (1.0, 2.0)], repeat=True, repeatWidth=4.0)])
    assert p.kinds.dtype == np.int32 and p.kinds.shape == (3, 4)
    assert p.params.dtype == np.float64 and p.params.shape == (3, 8)
    np.testing.assert_allclose(p.params[0, :4], [3.0, 4 * math.pi, math.pi / 2, 0.5])
    assert p.kinds[1].tolist() == [tf_types.KIND_POLYNOMIAL, 0, 2, 0]
    assert p.kinds[2].tolist() == [tf_types.KIND_DATA, 2, 2, 1]
    np.testing.assert_array_equal(p.data, [1.0, 2.0, 0.0, 1.0, 1.0, 2.0])
    assert p.params[2, tf_types.COL_WIDTH] == 4.0 and p.params[0, tf_types.COL_SCALE] == 1.0


@pytest.mark.parametrize("spec, words", [
    (dict(type="polynomial"), "no coefficients"),
    (dict(type="data", data=[(0, 1), (0, 2)]), "strictly ascending"),
    (dict(type="data"), "no points"),
    (dict(type="ramp", repeat=True, repeatWidth=0.0), "repeatWidth"),
    (dict(type="wobble"), "unknown function type"),
    (dict(type="constant", value=float("nan")), "not finite"),
])
def test_bad_specs_raise(spec, words):
    with pytest.raises(UsdphysError, match=words):
        tf_types.pack([tf_types.TimeFunction.from_dict(spec, label="/World/Motor")])
    with pytest.raises(UsdphysError, match="/World/Motor"):
        tf_types.TimeFunction.from_dict(spec, label="/World/Motor").validate()
