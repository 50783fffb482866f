"""Time functions u(t) (MbdTimeFunctionAPI, Chrono ChFunction): specs, a packed table, Warp
and NumPy evaluators, and their exact time derivatives.

Semantics (docs/schemas.md, MbdTimeFunctionAPI), t in seconds:

    constant    u = value
    polynomial  u = sum_i coefficients[i] t^i                    (ascending powers)
    sine        u = amplitude sin(2 pi frequency t + phase) + shift   (Hz, phase in DEGREES)
    ramp        u = intercept + slope t
    data        piecewise linear through (t_i, u_i), t strictly ascending, held outside
    step        piecewise constant through (t_i, u_i) (USD "held" time-sample interpolation;
                internal kind, not a schema token)
    repeat      u(repeatStart + fmod(t + repeatShift, repeatWidth)), C fmod (math.fmod:
                the sign of a negative argument is kept), repeatWidth > 0

Every function also carries an output ``scale`` (default 1) that multiplies u and u': the
element reader folds unit conversions into it (degrees -> radians for an angular motor,
stage force units -> newtons, ...), so the solver gets SI values straight from the table.

Derivative u'(t): exact for the closed forms; for data, the slope of the active segment
[t_i, t_{i+1}) (right-continuous: at a knot the slope of the segment that starts there),
0 before the first and from the last point on; step: 0. Repeat maps the derivative through
unchanged (d tau / dt = 1 between wraps; at a wrap the post-wrap value is taken).

Packed layout (one table for any number of functions, ``PackedTimeFunctions``):

    kinds  int32   (n, 4)  [kind, offset, count, repeat]
    params float64 (n, 8)  [p0, p1, p2, p3, repeat_start, repeat_width, repeat_shift, scale]
    data   float64 (m,)    shared buffer (at least one element)

    kind  KIND_CONSTANT   p0 = value
          KIND_POLYNOMIAL coefficients a_0..a_{count-1} in data[offset : offset + count]
          KIND_SINE       p0 = amplitude, p1 = omega = 2 pi frequency (rad/s),
                          p2 = phase (RADIANS), p3 = shift
          KIND_RAMP       p0 = intercept, p1 = slope
          KIND_DATA/STEP  (t_i, u_i) interleaved: data[offset + 2 i] = t_i,
                          data[offset + 2 i + 1] = u_i, i < count
    repeat = 1: evaluate at repeat_start + fmod(t + repeat_shift, repeat_width)

Warp (float64, callable from any kernel):

    eval_time_function(t, fn, kinds, params, data) -> u
    eval_time_function_dt(t, fn, kinds, params, data) -> du/dt
    eval_time_function_both(t, fn, kinds, params, data) -> (u, du/dt)
    piecewise_linear(x, data, offset, count) -> (y, dy/dx)      (also used by forcelaws)

with kinds: wp.array2d(dtype=wp.int32), params: wp.array2d(dtype=wp.float64),
data: wp.array(dtype=wp.float64), fn: int32 row index.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import warp as wp

from usdphys.errors import UsdphysError

KIND_CONSTANT = 0
KIND_POLYNOMIAL = 1
KIND_SINE = 2
KIND_RAMP = 3
KIND_DATA = 4
KIND_STEP = 5

KIND_IDS = {
    "constant": KIND_CONSTANT,
    "polynomial": KIND_POLYNOMIAL,
    "sine": KIND_SINE,
    "ramp": KIND_RAMP,
    "data": KIND_DATA,
    "step": KIND_STEP,
}

N_INT_COLS = 4
N_PARAM_COLS = 8
# column indices
COL_KIND, COL_OFFSET, COL_COUNT, COL_REPEAT = 0, 1, 2, 3
COL_START, COL_WIDTH, COL_SHIFT, COL_SCALE = 4, 5, 6, 7


# ----------------------------------------------------------------------------------------
# Specs
# ----------------------------------------------------------------------------------------
@dataclass
class TimeFunction:
    """One u(t), with the schema's attribute names (without the ``mbd:function:`` prefix).

    ``phase`` is in degrees and ``frequency`` in Hz, as authored. ``data`` is a sequence of
    (t, u) pairs. ``scale`` multiplies u and u' (unit conversion; 1 = none).
    ``label`` names the source (prim path) in error messages.
    """

    type: str = "constant"
    value: float = 0.0
    coefficients: Sequence[float] = ()
    amplitude: float = 0.0
    frequency: float = 0.0
    phase: float = 0.0
    shift: float = 0.0
    slope: float = 0.0
    intercept: float = 0.0
    data: Sequence[Sequence[float]] = ()
    repeat: bool = False
    repeatStart: float = 0.0
    repeatWidth: float = 1.0
    repeatShift: float = 0.0
    scale: float = 1.0
    label: str = field(default="time function", compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], label: str = "time function") -> "TimeFunction":
        """From a plain dict with the schema names (``type``, ``value``, ``coefficients``,
        ..., ``repeat`` either a bool with ``repeatStart``/``repeatWidth``/``repeatShift`` or a
        Chrono-style dict ``{"start", "width", "shift"}``)."""
        d = dict(d)
        rep = d.pop("repeat", False)
        if isinstance(rep, Mapping):
            d["repeatStart"] = rep.get("start", 0.0)
            d["repeatWidth"] = rep.get("width", 1.0)
            d["repeatShift"] = rep.get("shift", 0.0)
            rep = True
        known = {f for f in cls.__dataclass_fields__}  # type: ignore[attr-defined]
        unknown = set(d) - known
        if unknown:
            raise UsdphysError(f"{label}: unknown time function keys {sorted(unknown)}")
        d["type"] = str(d.get("type", "constant")).lower()
        return cls(repeat=bool(rep), label=label, **{k: v for k, v in d.items() if k != "label"})

    @classmethod
    def from_samples(cls, times: Iterable[float], values: Iterable[float], held: bool = False,
                     scale: float = 1.0, label: str = "time samples") -> "TimeFunction":
        """USD time samples (seconds, values) as a data (linear) or step (held) function."""
        pts = [(float(t), float(u)) for t, u in zip(times, values)]
        return cls(type="step" if held else "data", data=pts, scale=scale, label=label)

    @classmethod
    def constant_value(cls, value: float, scale: float = 1.0, label: str = "constant") -> "TimeFunction":
        return cls(type="constant", value=float(value), scale=scale, label=label)

    def validate(self) -> "TimeFunction":
        """Raise UsdphysError (naming ``label``) on anything the evaluator cannot honour."""
        where = self.label
        if self.type not in KIND_IDS:
            raise UsdphysError(f"{where}: unknown function type '{self.type}'; expected one of: {', '.join(KIND_IDS)}")
        scalars = {
            "value": self.value, "amplitude": self.amplitude, "frequency": self.frequency,
            "phase": self.phase, "shift": self.shift, "slope": self.slope,
            "intercept": self.intercept, "repeatStart": self.repeatStart,
            "repeatWidth": self.repeatWidth, "repeatShift": self.repeatShift, "scale": self.scale,
        }
        for name, v in scalars.items():
            if not math.isfinite(float(v)):
                raise UsdphysError(f"{where}: {name} = {v} is not finite")
        if self.type == "polynomial":
            coeffs = [float(c) for c in self.coefficients]
            if not coeffs:
                raise UsdphysError(f"{where}: polynomial with no coefficients")
            if not all(math.isfinite(c) for c in coeffs):
                raise UsdphysError(f"{where}: coefficients must be finite")
        if self.type in ("data", "step"):
            pts = self._points()
            if len(pts) == 0:
                raise UsdphysError(f"{where}: data function with no points")
            if not np.all(np.isfinite(pts)):
                raise UsdphysError(f"{where}: data points must be finite")
            if np.any(np.diff(pts[:, 0]) <= 0):
                raise UsdphysError(f"{where}: data times must be strictly ascending")
        if self.repeat and not float(self.repeatWidth) > 0:
            raise UsdphysError(f"{where}: repeatWidth = {self.repeatWidth}: must be > 0")
        return self

    def _points(self) -> np.ndarray:
        pts = np.asarray([tuple(p) for p in self.data], dtype=np.float64)
        if pts.size == 0:
            return np.zeros((0, 2))
        if pts.ndim != 2 or pts.shape[1] != 2:
            raise UsdphysError(f"{self.label}: data must be (t, u) pairs")
        return pts


def _as_spec(spec: TimeFunction | Mapping[str, Any]) -> TimeFunction:
    return spec if isinstance(spec, TimeFunction) else TimeFunction.from_dict(spec)


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


# ----------------------------------------------------------------------------------------
# Packed table
# ----------------------------------------------------------------------------------------
@dataclass
class PackedTimeFunctions:
    """The flat table; see the module docstring for the column layout."""

    kinds: np.ndarray  # int32 (n, 4)
    params: np.ndarray  # float64 (n, 8)
    data: np.ndarray  # float64 (m,), m >= 1

    def __len__(self) -> int:
        return int(self.kinds.shape[0])

    def to_warp(self, device=None):
        """(kinds, params, data) as Warp arrays for eval_time_function."""
        return (
            wp.array(self.kinds, dtype=wp.int32, device=device),
            wp.array(self.params, dtype=wp.float64, device=device),
            wp.array(self.data, dtype=wp.float64, device=device),
        )


class TimeFunctionTable:
    """Collects functions, hands out row indices, packs them into one table."""

    def __init__(self) -> None:
        self.specs: list[TimeFunction] = []

    def add(self, spec: TimeFunction | Mapping[str, Any]) -> int:
        s = _as_spec(spec).validate()
        self.specs.append(s)
        return len(self.specs) - 1

    def __len__(self) -> int:
        return len(self.specs)

    def pack(self) -> PackedTimeFunctions:
        return pack(self.specs)


def pack(specs: Sequence[TimeFunction | Mapping[str, Any]]) -> PackedTimeFunctions:
    n = len(specs)
    kinds = np.zeros((n, N_INT_COLS), dtype=np.int32)
    params = np.zeros((n, N_PARAM_COLS), dtype=np.float64)
    buf: list[float] = []
    for i, raw in enumerate(specs):
        s = _as_spec(raw).validate()
        kinds[i, COL_KIND] = KIND_IDS[s.type]
        kinds[i, COL_OFFSET] = len(buf)
        if s.type == "constant":
            params[i, 0] = s.value
        elif s.type == "polynomial":
            coeffs = [float(c) for c in s.coefficients]
            buf.extend(coeffs)
            kinds[i, COL_COUNT] = len(coeffs)
        elif s.type == "sine":
            params[i, 0:4] = (s.amplitude, 2.0 * math.pi * s.frequency, math.radians(s.phase), s.shift)
        elif s.type == "ramp":
            params[i, 0:2] = (s.intercept, s.slope)
        else:
            pts = s._points()
            buf.extend(pts.reshape(-1).tolist())
            kinds[i, COL_COUNT] = len(pts)
        kinds[i, COL_REPEAT] = 1 if s.repeat else 0
        params[i, COL_START:COL_SCALE + 1] = (s.repeatStart, s.repeatWidth, s.repeatShift, s.scale)
    data = np.asarray(buf if buf else [0.0], dtype=np.float64)
    return PackedTimeFunctions(kinds, params, data)


# ----------------------------------------------------------------------------------------
# Warp
# ----------------------------------------------------------------------------------------
@wp.func
def piecewise_linear(x: wp.float64, data: wp.array(dtype=wp.float64), offset: wp.int32, count: wp.int32):
    """(y, dy/dx) through (x_i, y_i) interleaved at data[offset:], held constant outside;
    slope of [x_i, x_{i+1}) (0 outside, right-continuous). count = 0 gives (0, 0)."""
    zero = wp.float64(0.0)
    if count <= 0:
        return zero, zero
    x0 = data[offset]
    if count == 1 or x < x0:
        return data[offset + 1], zero
    last = offset + 2 * (count - 1)
    if x >= data[last]:
        return data[last + 1], zero
    # binary search: largest i in [0, count-2] with x_i <= x
    lo = wp.int32(0)
    hi = count - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if data[offset + 2 * mid] <= x:
            lo = mid
        else:
            hi = mid
    xa = data[offset + 2 * lo]
    ya = data[offset + 2 * lo + 1]
    xb = data[offset + 2 * lo + 2]
    yb = data[offset + 2 * lo + 3]
    s = (yb - ya) / (xb - xa)
    return ya + s * (x - xa), s


@wp.func
def _step_value(x: wp.float64, data: wp.array(dtype=wp.float64), offset: wp.int32, count: wp.int32):
    # held interpolation: value of the last point at or before x (first point before it)
    v = data[offset + 1]
    for i in range(count):
        if data[offset + 2 * i] <= x:
            v = data[offset + 2 * i + 1]
    return v


@wp.func
def eval_time_function_both(
    t: wp.float64,
    fn: wp.int32,
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
):
    """(u(t), du/dt) of row fn of the packed table."""
    zero = wp.float64(0.0)
    kind = kinds[fn, 0]
    offset = kinds[fn, 1]
    count = kinds[fn, 2]
    tau = t
    if kinds[fn, 3] != 0:
        tau = params[fn, 4] + wp.mod(t + params[fn, 6], params[fn, 5])
    u = zero
    du = zero
    if kind == 0:
        u = params[fn, 0]
    elif kind == 1:
        # Horner for value and derivative
        for j in range(count):
            c = data[offset + count - 1 - j]
            du = du * tau + u
            u = u * tau + c
    elif kind == 2:
        arg = params[fn, 1] * tau + params[fn, 2]
        u = params[fn, 0] * wp.sin(arg) + params[fn, 3]
        du = params[fn, 0] * params[fn, 1] * wp.cos(arg)
    elif kind == 3:
        u = params[fn, 0] + params[fn, 1] * tau
        du = params[fn, 1]
    elif kind == 4:
        u, du = piecewise_linear(tau, data, offset, count)
    elif kind == 5:
        u = _step_value(tau, data, offset, count)
    scale = params[fn, 7]
    return scale * u, scale * du


@wp.func
def eval_time_function(
    t: wp.float64,
    fn: wp.int32,
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
):
    """u(t) of row fn of the packed table."""
    u, du = eval_time_function_both(t, fn, kinds, params, data)
    return u


@wp.func
def eval_time_function_dt(
    t: wp.float64,
    fn: wp.int32,
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
):
    """du/dt of row fn of the packed table."""
    u, du = eval_time_function_both(t, fn, kinds, params, data)
    return du


@wp.kernel
def time_function_kernel(
    ts: wp.array(dtype=wp.float64),
    fns: wp.array(dtype=wp.int32),
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
    out_u: wp.array(dtype=wp.float64),
    out_du: wp.array(dtype=wp.float64),
):
    """Batch evaluation: out[i] = u_{fns[i]}(ts[i])."""
    i = wp.tid()
    u, du = eval_time_function_both(ts[i], fns[i], kinds, params, data)
    out_u[i] = u
    out_du[i] = du


def evaluate_packed_warp(packed: PackedTimeFunctions, fns, ts, device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """Evaluate (u, du/dt) with the Warp kernel at paired (fns[i], ts[i]); NumPy in/out."""
    ts = np.asarray(ts, dtype=np.float64).reshape(-1)
    fns = np.broadcast_to(np.asarray(fns, dtype=np.int32), ts.shape).copy()
    kinds, params, data = packed.to_warp(device)
    out_u = wp.zeros(ts.shape[0], dtype=wp.float64, device=device)
    out_du = wp.zeros(ts.shape[0], dtype=wp.float64, device=device)
    wp.launch(
        time_function_kernel, dim=ts.shape[0],
        inputs=[wp.array(ts, dtype=wp.float64, device=device), wp.array(fns, dtype=wp.int32, device=device), kinds, params, data],
        outputs=[out_u, out_du], device=device,
    )
    return out_u.numpy(), out_du.numpy()
