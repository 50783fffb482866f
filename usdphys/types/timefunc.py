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

The solver evaluates the table with usdphys.solver.timefunc; tests compare it with a NumPy
reference of their own (tests/reference/timefunc.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from usdphys.errors import UsdphysError
from usdphys.types.enums import TimeFunctionKind

KIND_CONSTANT = TimeFunctionKind.CONSTANT
KIND_POLYNOMIAL = TimeFunctionKind.POLYNOMIAL
KIND_SINE = TimeFunctionKind.SINE
KIND_RAMP = TimeFunctionKind.RAMP
KIND_DATA = TimeFunctionKind.DATA
KIND_STEP = TimeFunctionKind.STEP

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
