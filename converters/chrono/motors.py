"""model.motors: a guide / spindle joint plus an MbdMotor driving one of its DOFs."""
from __future__ import annotations

import numpy as np
from pxr import UsdPhysics

from usdphys.usd.tokens import Tokens

from . import frames as F
from .functions import author_function
from .joints import ALL_DOFS, author_joint
from .state import RAD2DEG, ConversionState, set_attr, set_rel

P = UsdPhysics.Tokens
# motor guide / spindle -> (USD prim type, free DOFs for a generic joint, driven DOF token)
_GUIDE = {
    "PRISMATIC": (P.PhysicsPrismaticJoint, None, Tokens.distance),
    "SPHERICAL": (P.PhysicsJoint, (P.transZ, P.rotX, P.rotY, P.rotZ), Tokens.transZ),
    "FREE": (P.PhysicsJoint, ALL_DOFS, Tokens.transZ),
}
_SPINDLE = {
    "REVOLUTE": (P.PhysicsRevoluteJoint, None, Tokens.angle),
    "CYLINDRICAL": (P.PhysicsJoint, (P.transZ, P.rotZ), Tokens.rotZ),
    "FREE": (P.PhysicsJoint, ALL_DOFS, Tokens.rotZ),
}
_MODE = {"POSITION": Tokens.position, "SPEED": Tokens.velocity, "FORCE": Tokens.force}


def convert_motors(st: ConversionState) -> None:
    jscope = st.scope("Joints")
    mscope = st.scope("Motors")
    for i, m, yp in st.items("motors"):
        kind = str(m["type"]).upper()
        b1, b2 = st.two_bodies(m, yp)
        axis = st.axis(m, "axis", yp)
        pos = np.asarray(m["location"], float)
        rmat = F.frame_x_then_y90(axis)
        if kind == "LINEAR":
            if "spindle" in m:
                st.warn(st.doc.warning_text(yp + ("spindle",), "ignored on a LINEAR motor (use guide)"))
            guide = str(m.get("guide", "PRISMATIC")).upper()
            type_name, free, dof = _GUIDE[guide]
            suffix = "guide"
        else:
            if "guide" in m:
                st.warn(st.doc.warning_text(yp + ("guide",), "ignored on a ROTATION motor (use spindle)"))
            guide = str(m.get("spindle", "REVOLUTE")).upper()
            type_name, free, dof = _SPINDLE[guide]
            suffix = "spindle"
        # Chrono actuates body1 relative to body2; MbdMotor's q is body1's joint frame relative
        # to body0's: so USD body0 = Chrono body2 and USD body1 = Chrono body1 (same sign).
        joint = author_joint(st, jscope, f"{m['name']}_{suffix}", type_name, free, b2, b1, pos, rmat, yp)
        motor = st.item_prim(mscope, m["name"], Tokens.MbdMotor, yp)
        set_rel(motor, Tokens.mbdJoint, joint.GetPath())
        set_attr(motor, Tokens.mbdDof, dof)
        act = str(m["actuation_type"]).upper()
        set_attr(motor, Tokens.mbdMode, _MODE[act])
        angular = kind == "ROTATION" and act in ("POSITION", "SPEED")
        f = m["actuation_function"]
        f0 = author_function(st, motor, f, yp + ("actuation_function",), RAD2DEG if angular else 1.0)
        if str(f["type"]).upper() == "CONTROLLER":
            st.warn(st.doc.warning_text(yp + ("actuation_function", "type"),
                                        "CONTROLLER: the actuation comes from an external controller in "
                                        "the host program; motor authored with target 0 and no function"))
            set_attr(motor, Tokens.mbdTarget, 0.0)
        elif act == "POSITION" and f0 is not None and abs(f0) > 1e-12:
            st.warn(st.doc.warning_text(yp + ("actuation_function",),
                                        f"POSITION function has f(0) = {f0:.6g}, but the motor frames "
                                        "coincide at t = 0: the bodies will jump"))
