"""NumPy reference of the time functions u(t) and their exact derivatives (docs/schemas.md,
MbdTimeFunctionAPI), for tests to compare the Warp evaluator and the solver with."""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from usdphys.types.timefunc import TimeFunction, _as_spec

# ----------------------------------------------------------------------------------------
# NumPy reference
# ----------------------------------------------------------------------------------------
def _interp_np(pts: np.ndarray, x: np.ndarray, held: bool) -> tuple[np.ndarray, np.ndarray]:
    ts, us = pts[:, 0], pts[:, 1]
    if len(ts) == 1:
        return np.full_like(x, us[0]), np.zeros_like(x)
    # segment i: t_i <= x < t_{i+1}, clamped to [0, n-2]
    i = np.clip(np.searchsorted(ts, x, side="right") - 1, 0, len(ts) - 2)
    slope = (us[i + 1] - us[i]) / (ts[i + 1] - ts[i])
    inside = (x >= ts[0]) & (x < ts[-1])
    if held:
        u = np.where(x < ts[0], us[0], np.where(x >= ts[-1], us[-1], us[i]))
        return u, np.zeros_like(x)
    u = np.where(x <= ts[0], us[0], np.where(x >= ts[-1], us[-1], us[i] + slope * (x - ts[i])))
    return u, np.where(inside, slope, 0.0)


def _eval_np(spec: TimeFunction, t) -> tuple[np.ndarray, np.ndarray]:
    spec = spec.validate()
    t = np.asarray(t, dtype=np.float64)
    tau = np.fmod(t + spec.repeatShift, spec.repeatWidth) + spec.repeatStart if spec.repeat else t
    k = spec.type
    if k == "constant":
        u, du = np.full_like(tau, spec.value), np.zeros_like(tau)
    elif k == "polynomial":
        c = np.asarray(spec.coefficients, dtype=np.float64)
        u = np.polynomial.polynomial.polyval(tau, c)
        du = np.polynomial.polynomial.polyval(tau, np.polynomial.polynomial.polyder(c)) if len(c) > 1 else np.zeros_like(tau)
    elif k == "sine":
        w = 2.0 * math.pi * spec.frequency
        arg = w * tau + math.radians(spec.phase)
        u = spec.amplitude * np.sin(arg) + spec.shift
        du = spec.amplitude * w * np.cos(arg)
    elif k == "ramp":
        u, du = spec.intercept + spec.slope * tau, np.full_like(tau, spec.slope)
    else:
        u, du = _interp_np(spec._points(), tau, held=(k == "step"))
    return spec.scale * u, spec.scale * du


def evaluate(spec: TimeFunction | Mapping[str, Any], t):
    """u(t) (NumPy reference; t scalar or array, seconds)."""
    u, _ = _eval_np(_as_spec(spec), t)
    return u if np.ndim(u) else float(u)


def derivative(spec: TimeFunction | Mapping[str, Any], t):
    """du/dt (NumPy reference)."""
    _, du = _eval_np(_as_spec(spec), t)
    return du if np.ndim(du) else float(du)
