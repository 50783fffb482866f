"""model.body_loads: MbdForce / MbdTorque, optionally modulated by a time function."""
from __future__ import annotations

import numpy as np

from usdphys import math3d as m3
from usdphys.usd.tokens import Tokens

from .functions import author_function
from .state import ConversionState, set_attr, set_rel, v3d


def convert_body_loads(st: ConversionState) -> None:
    scope = st.scope("Loads")
    for i, ld, yp in st.items("body_loads"):
        body = st.body_ref(ld, "body", yp)
        kind = str(ld["type"]).upper()
        r_com = m3.quat_to_matrix(body.com_rot)
        vec = np.asarray(ld["load"], float)
        local = bool(ld["local_load"])
        if local:  # Chrono "local" = the COM frame -> body prim axes
            vec = r_com @ vec
        prim = st.item_prim(scope, ld["name"], Tokens.MbdForce if kind == "FORCE" else Tokens.MbdTorque, yp)
        set_rel(prim, Tokens.mbdBody1, body.path)
        set_rel(prim, Tokens.mbdBody0, None)  # the world
        set_attr(prim, Tokens.mbdResolveIn, Tokens.body1 if local else Tokens.world)
        if kind == "FORCE":
            for key in ("point", "local_point"):
                if key not in ld:
                    raise st.doc.error(yp + (key,), "missing required field (for a FORCE load)")
            p = np.asarray(ld["point"], float)
            if bool(ld["local_point"]):
                p_prim = body.com_pos + r_com @ p
            else:
                p_prim = body.local_point(p)
                st.warn(st.doc.warning_text(
                    yp + ("local_point",), "a global point is fixed in space in Chrono; converted to a point "
                                           "fixed on the body at its initial position"))
            set_attr(prim, Tokens.mbdLocalPos1, v3d(p_prim))
            set_attr(prim, Tokens.mbdForce, v3d(vec))
        else:
            for key in ("point", "local_point"):
                if key in ld:
                    st.warn(st.doc.warning_text(yp + (key,), "not used by a TORQUE load"))
            set_attr(prim, Tokens.mbdTorque, v3d(vec))
        if "modulation_function" in ld:
            author_function(st, prim, ld["modulation_function"], yp + ("modulation_function",), 1.0)
