"""model.tsdas (MbdSpringDamper) and model.rsdas (MbdRotationalSpringDamper)."""
from __future__ import annotations

import numpy as np
from pxr import Vt

from usdphys.usd.tokens import Tokens

from . import frames as F
from .state import DEG2RAD, RAD2DEG, ConversionState, qd, set_attr, set_rel, v3d, v3f

# the keys each Chrono functor reads: any other force key given is ignored by Chrono
_LAW_KEYS = {"map": {"map_data", "deformation", "preload"},
             "curves": {"spring_curve_data", "damping_curve_data", "preload"},
             "spring_curve": {"spring_curve_data", "preload"},
             "damper_curve": {"damping_curve_data"},
             "linear": {"spring_coefficient", "damping_coefficient", "preload"},
             "spring": {"spring_coefficient", "preload"},
             "damper": {"damping_coefficient"}}
_FORCE_KEYS = ("spring_coefficient", "damping_coefficient", "spring_curve_data", "damping_curve_data",
               "map_data", "deformation", "preload", "degressivity_compression", "degressivity_expansion")
_DAMPER_ONLY = ("damper", "damper_curve")


def _law(st: ConversionState, t: dict, yp: tuple, rotational: bool) -> str:
    """Which Chrono functor the keys select (parser precedence); warn about ignored keys."""
    has = lambda k: k in t  # noqa: E731
    if not rotational and has("map_data"):
        law = "map"
    elif has("spring_curve_data"):
        law = "curves" if has("damping_curve_data") else "spring_curve"
    elif has("damping_curve_data"):
        law = "damper_curve"
    elif has("spring_coefficient"):
        law = "linear" if has("damping_coefficient") else "spring"
    elif has("damping_coefficient"):
        law = "damper"
    else:
        raise st.doc.error(yp, "needs spring_coefficient, damping_coefficient, spring_curve_data, "
                               "damping_curve_data" + ("" if rotational else " or map_data"))
    used = _LAW_KEYS[law]
    for key in _FORCE_KEYS:
        if has(key) and key not in used:
            st.warn(st.doc.warning_text(yp + (key,), f"ignored: Chrono's parser selects the '{law}' law "
                                                     "from the keys given and does not use this one"))
    if law in ("map", "curves", "spring_curve", "linear", "spring"):
        if not rotational and law != "map" and "free_length" not in t:
            raise st.doc.error(yp + ("free_length",), "missing required field (for a spring)")
        if rotational and "free_angle" not in t:
            raise st.doc.error(yp + ("free_angle",), "missing required field (for a spring)")
    return law


def convert_tsdas(st: ConversionState) -> None:
    scope = st.scope("ForceElements")
    for i, t, yp in st.items("tsdas"):
        b1, b2 = st.two_bodies(t, yp)
        law = _law(st, t, yp, rotational=False)
        prim = st.item_prim(scope, t["name"], Tokens.MbdSpringDamper, yp)
        set_rel(prim, Tokens.mbdBody0, b1.path)
        set_rel(prim, Tokens.mbdBody1, b2.path)
        set_attr(prim, Tokens.mbdLocalPos0, v3d(b1.local_point(t["point1"])))
        set_attr(prim, Tokens.mbdLocalPos1, v3d(b2.local_point(t["point2"])))
        if law != "map" and "free_length" in t and law not in _DAMPER_ONLY:
            set_attr(prim, Tokens.mbdRestLength, float(t["free_length"]))
        if law in ("linear", "spring"):
            set_attr(prim, Tokens.mbdStiffness, float(t["spring_coefficient"]))
        if law in ("linear", "damper"):
            set_attr(prim, Tokens.mbdDamping, float(t["damping_coefficient"]))
        if law == "damper" and "degressivity_compression" in t:
            st.warn(st.doc.warning_text(yp, "degressive damper converted as a linear damper"))
        if law in ("curves", "spring_curve"):
            set_attr(prim, Tokens.mbdSpringForceCurve,
                     st.curve(t["spring_curve_data"], yp + ("spring_curve_data",)))
        if law in ("curves", "damper_curve"):
            set_attr(prim, Tokens.mbdDampingForceCurve,
                     st.curve(t["damping_curve_data"], yp + ("damping_curve_data",)))
        if law == "map":
            _force_map(st, prim, t, yp)
        if "preload" in t and law not in _DAMPER_ONLY:
            set_attr(prim, Tokens.mbdPreload, float(t["preload"]))
        _end_stops(st, prim, t, yp, law)
        _display(st, prim, t, yp)


def _force_map(st: ConversionState, prim, t: dict, yp: tuple) -> None:
    """map_data rows [velocity, force at each deformation] -> a flattened force table."""
    if "deformation" not in t:
        raise st.doc.error(yp + ("deformation",), "missing required field (with map_data)")
    defs = [float(x) for x in t["deformation"]]
    if any(b <= a for a, b in zip(defs, defs[1:])):
        raise st.doc.error(yp + ("deformation",), "must be strictly ascending")
    rows = t["map_data"]
    for r, row in enumerate(rows):
        if len(row) != len(defs) + 1:
            raise st.doc.error(yp + ("map_data", r), f"row has {len(row)} values; expected "
                                                      f"1 velocity + {len(defs)} forces")
    vels = [float(r[0]) for r in rows]
    if any(b <= a for a, b in zip(vels, vels[1:])):
        raise st.doc.error(yp + ("map_data",), "row velocities must be strictly ascending")
    set_attr(prim, Tokens.mbdForceMapDeformation, Vt.DoubleArray(defs))
    set_attr(prim, Tokens.mbdForceMapVelocity, Vt.DoubleArray(vels))
    set_attr(prim, Tokens.mbdForceMapValues, Vt.DoubleArray([float(x) for r in rows for x in r[1:]]))
    if "free_length" in t:
        st.warn(st.doc.warning_text(yp + ("free_length",), "not used by the map law (L0 = 0)"))


def _end_stops(st: ConversionState, prim, t: dict, yp: tuple, law: str) -> None:
    has_min, has_max = "minimum_length" in t, "maximum_length" in t
    if has_min != has_max:
        key = "minimum_length" if has_min else "maximum_length"
        st.warn(st.doc.warning_text(yp + (key,), "ignored: Chrono enables end stops only when both "
                                                 "minimum_length and maximum_length are given"))
    elif has_min and law in _DAMPER_ONLY:
        st.warn(st.doc.warning_text(yp + ("minimum_length",), "ignored: a damper-only element has no "
                                                              "end stops in Chrono"))
    elif has_min:
        if float(t["minimum_length"]) > float(t["maximum_length"]):
            raise st.doc.error(yp + ("minimum_length",), "minimum_length > maximum_length")
        set_attr(prim, Tokens.mbdMinLength, float(t["minimum_length"]))
        set_attr(prim, Tokens.mbdMaxLength, float(t["maximum_length"]))


def _display(st: ConversionState, prim, t: dict, yp: tuple) -> None:
    vis = t.get("visualization")
    if not vis:
        return
    kind = str(vis["type"]).lower()
    set_attr(prim, Tokens.mbdDisplayShape, kind)
    if kind == Tokens.spring:
        set_attr(prim, Tokens.mbdDisplayRadius, float(vis.get("radius", 0.05)))
        set_attr(prim, Tokens.mbdDisplayResolution, int(vis.get("resolution", 65)))
        turns = float(vis.get("turns", 5))
        if turns != round(turns):
            st.warn(st.doc.warning_text(yp + ("visualization", "turns"), "rounded to an integer"))
        set_attr(prim, Tokens.mbdDisplayTurns, int(round(turns)))
    if "color" in vis:
        set_attr(prim, Tokens.mbdDisplayColor, v3f(vis["color"]))


def convert_rsdas(st: ConversionState) -> None:
    scope = st.scope("ForceElements")
    for i, t, yp in st.items("rsdas"):
        b1, b2 = st.two_bodies(t, yp)
        law = _law(st, t, yp, rotational=True)
        axis = st.axis(t, "axis", yp)
        pos = np.asarray(t.get("location", (0, 0, 0)), float)
        rmat = F.frame_x_then_y90(axis)
        prim = st.item_prim(scope, t["name"], Tokens.MbdRotationalSpringDamper, yp)
        # theta = rotation of Chrono body2 relative to body1: body0 = body1, body1 = body2
        set_rel(prim, Tokens.mbdBody0, b1.path)
        set_rel(prim, Tokens.mbdBody1, b2.path)
        set_attr(prim, Tokens.mbdLocalPos0, v3d(b1.local_point(pos)))
        set_attr(prim, Tokens.mbdLocalRot0, qd(b1.local_rot(rmat)))
        set_attr(prim, Tokens.mbdLocalPos1, v3d(b2.local_point(pos)))
        set_attr(prim, Tokens.mbdLocalRot1, qd(b2.local_rot(rmat)))
        if "free_angle" in t and law not in _DAMPER_ONLY:
            a = float(t["free_angle"])
            set_attr(prim, Tokens.mbdRestAngle, a if st.deg else a * RAD2DEG)
        if law in ("linear", "spring"):  # N m / rad -> N m / deg
            set_attr(prim, Tokens.mbdStiffness, float(t["spring_coefficient"]) * DEG2RAD)
        if law in ("linear", "damper"):
            set_attr(prim, Tokens.mbdDamping, float(t["damping_coefficient"]) * DEG2RAD)
        if law in ("curves", "spring_curve"):  # abscissa rad -> deg (never scaled by angle_degrees)
            set_attr(prim, Tokens.mbdSpringTorqueCurve,
                     st.curve(t["spring_curve_data"], yp + ("spring_curve_data",), RAD2DEG))
        if law in ("curves", "damper_curve"):  # rad/s -> deg/s
            set_attr(prim, Tokens.mbdDampingTorqueCurve,
                     st.curve(t["damping_curve_data"], yp + ("damping_curve_data",), RAD2DEG))
        if "preload" in t and law not in _DAMPER_ONLY:
            set_attr(prim, Tokens.mbdPreload, float(t["preload"]))
