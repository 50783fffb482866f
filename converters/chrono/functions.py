"""Chrono function specs (actuation_function, modulation_function) -> MbdTimeFunctionAPI."""
from __future__ import annotations

import math

import numpy as np
from pxr import Gf, Usd, Vt

from usdphys.usd.tokens import Tokens

from .state import DEG2RAD, RAD2DEG, ConversionState, set_attr


def author_function(st: ConversionState, prim: Usd.Prim, f: dict, yp: tuple, scale: float) -> float | None:
    """Author MbdTimeFunctionAPI, values multiplied by `scale`; returns f(0) (unscaled) or None
    (a CONTROLLER function, or a repeated one whose f(0) is not worked out)."""
    kind = str(f["type"]).upper()
    if kind == "CONTROLLER":
        return None

    def need(key):
        if key not in f:
            raise st.doc.error(yp + (key,), f"missing required field (for a {kind} function)")
        return f[key]

    prim.ApplyAPI(Tokens.MbdTimeFunctionAPI)
    set_attr(prim, Tokens.mbdFunctionType, kind.lower())
    f0 = 0.0
    if kind == "CONSTANT":
        v = float(need("value"))
        set_attr(prim, Tokens.mbdFunctionValue, v * scale)
        f0 = v
    elif kind == "POLYNOMIAL":
        c = [float(x) for x in need("coefficients")]
        set_attr(prim, Tokens.mbdFunctionCoefficients, Vt.DoubleArray([x * scale for x in c]))
        f0 = c[0]
    elif kind == "SINE":
        a, fr = float(need("amplitude")), float(need("frequency"))
        ph = float(f.get("phase", 0.0))
        ph_deg = ph if st.deg else ph * RAD2DEG  # phase follows angle_degrees
        set_attr(prim, Tokens.mbdFunctionAmplitude, a * scale)
        set_attr(prim, Tokens.mbdFunctionFrequency, fr)
        set_attr(prim, Tokens.mbdFunctionPhase, ph_deg)
        f0 = a * math.sin(ph_deg * DEG2RAD)
    elif kind == "RAMP":
        s, b = float(need("slope")), float(f.get("intercept", 0.0))
        set_attr(prim, Tokens.mbdFunctionSlope, s * scale)
        set_attr(prim, Tokens.mbdFunctionIntercept, b * scale)
        f0 = b
    elif kind == "DATA":
        pts = need("data")
        set_attr(prim, Tokens.mbdFunctionData, st.curve(pts, yp + ("data",)))  # checks the abscissae
        if scale != 1.0:
            set_attr(prim, Tokens.mbdFunctionData,
                     Vt.Vec2dArray([Gf.Vec2d(float(p[0]), float(p[1]) * scale) for p in pts]))
        f0 = float(np.interp(0.0, [float(p[0]) for p in pts], [float(p[1]) for p in pts]))
    if "repeat" in f:
        r = f["repeat"]
        set_attr(prim, Tokens.mbdFunctionRepeat, True)
        set_attr(prim, Tokens.mbdFunctionRepeatStart, float(r["start"]))
        set_attr(prim, Tokens.mbdFunctionRepeatWidth, float(r["width"]))
        set_attr(prim, Tokens.mbdFunctionRepeatShift, float(r["shift"]))
        if kind != "CONSTANT":  # u(0) = f(start + fmod(shift, width)): not checked
            f0 = None
    return f0
