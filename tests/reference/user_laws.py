"""User force laws for tests/solver/test_user_laws.py (also loaded by `usdphys simulate --laws
reference.user_laws`), with NumPy twins the tests integrate with scipy. Not shipped."""
from __future__ import annotations

import numpy as np
import warp as wp


@wp.func
def cubic(t: wp.float64, dx: wp.float64, dv: wp.float64, k: wp.float64, d: wp.float64,
          offset: wp.float64) -> wp.float64:
    e = dx - offset
    return k * e + d * dv + wp.float64(1000.0) * e * e * e


@wp.func
def hardening(t: wp.float64, dx: wp.float64, dv: wp.float64, k: wp.float64, d: wp.float64,
              offset: wp.float64) -> wp.float64:
    e = dx - offset
    return k * e + d * dv + wp.float64(1000.0) * e * e * e


@wp.func
def pulsing(t: wp.float64, dx: wp.float64, dv: wp.float64, k: wp.float64, d: wp.float64,
            offset: wp.float64) -> wp.float64:
    # time-varying stiffness and a quadratic damper: uses t and dv as well
    return k * (wp.float64(1.0) + wp.float64(0.5) * wp.sin(wp.float64(3.0) * t)) * (dx - offset) + d * dv * wp.abs(dv)


@wp.func
def saturating(t: wp.float64, x: wp.float64, xdot: wp.float64, k: wp.float64, d: wp.float64,
               offset: wp.float64) -> wp.float64:
    return k * wp.tanh(x - offset) + d * xdot


# One set for every test that runs user laws: the suite then builds one kernel variant.
LAWS = {"cubic": cubic, "hardening": hardening, "pulsing": pulsing, "saturating": saturating}


def hardening_np(t, dx, dv, k, d, offset):
    e = dx - offset
    return k * e + d * dv + 1000.0 * e ** 3


def pulsing_np(t, dx, dv, k, d, offset):
    return k * (1.0 + 0.5 * np.sin(3.0 * t)) * (dx - offset) + d * dv * np.abs(dv)


def saturating_np(t, x, xdot, k, d, offset):
    return k * np.tanh(x - offset) + d * xdot


@wp.func
def broken(t: wp.float64, dx: wp.float64, dv: wp.float64, k: wp.float64, d: wp.float64,
           offset: wp.float64) -> wp.float64:
    # float64 ** int has no Warp overload: a law Warp cannot compile (the error test)
    return k * (dx - offset) ** 3
