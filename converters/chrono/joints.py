"""model.joints (with bushings) and model.constraints (DISTANCE and the composite
REVOLUTE-SPHERICAL / REVOLUTE-TRANSLATIONAL joints)."""
from __future__ import annotations

import numpy as np
from pxr import Sdf, Usd, UsdPhysics

from usdphys.usd.tokens import Tokens

from . import frames as F
from .state import DEG2RAD, Body, ConversionState, qf, set_attr, v3f

P = UsdPhysics.Tokens
LOCK = (1.0, -1.0)  # PhysicsLimitAPI low > high: the DOF is locked
ALL_DOFS = (P.transX, P.transY, P.transZ, P.rotX, P.rotY, P.rotZ)

# Chrono joint type -> (USD prim type, free DOFs for a generic joint)
_JOINT_KIND = {
    "LOCK": (P.PhysicsFixedJoint, None),
    "REVOLUTE": (P.PhysicsRevoluteJoint, None),
    "PRISMATIC": (P.PhysicsPrismaticJoint, None),
    "SPHERICAL": (P.PhysicsSphericalJoint, None),
    "UNIVERSAL": (P.PhysicsJoint, (P.rotX, P.rotY)),
    "POINT_LINE": (P.PhysicsJoint, (P.transX, P.rotX, P.rotY, P.rotZ)),
    "POINT_PLANE": (P.PhysicsJoint, (P.transX, P.transY, P.rotX, P.rotY, P.rotZ)),
}


def author_joint(st: ConversionState, scope: Sdf.Path, name: str, type_name: str, free: tuple | None,
                 b0: Body, b1: Body, pos, rmat, ypath: tuple, pos1=None) -> Usd.Prim:
    """A UsdPhysics joint with frame orientation `rmat` at `pos` (model frame) on both bodies
    (at `pos1` on body1 when given: the composite joints' two points); a generic PhysicsJoint
    locks every DOF not in `free`."""
    prim = st.item_prim(scope, name, type_name, ypath)
    joint = UsdPhysics.Joint(prim)
    joint.CreateBody0Rel().SetTargets([b0.path])
    joint.CreateBody1Rel().SetTargets([b1.path])
    joint.CreateLocalPos0Attr(v3f(b0.local_point(pos)))
    joint.CreateLocalRot0Attr(qf(b0.local_rot(rmat)))
    joint.CreateLocalPos1Attr(v3f(b1.local_point(pos if pos1 is None else pos1)))
    joint.CreateLocalRot1Attr(qf(b1.local_rot(rmat)))
    if type_name in (P.PhysicsRevoluteJoint, P.PhysicsPrismaticJoint):
        prim.GetAttribute(P.physicsAxis).Set(P.z)
    if type_name == P.PhysicsJoint:
        for dof in ALL_DOFS:
            if dof not in (free or ()):
                lim = UsdPhysics.LimitAPI.Apply(prim, dof)
                lim.CreateLowAttr(LOCK[0])
                lim.CreateHighAttr(LOCK[1])
    return prim


def convert_joints(st: ConversionState) -> None:
    scope = st.scope("Joints")
    for i, j, yp in st.items("joints"):
        kind = str(j["type"]).upper()
        b1, b2 = st.two_bodies(j, yp)
        pos = np.asarray(j["location"], float)
        if kind in ("REVOLUTE", "PRISMATIC"):
            rmat = F.frame_z(st.axis(j, "axis", yp))
        elif kind == "UNIVERSAL":
            a1 = st.axis(j, "axis1", yp)
            a2 = st.axis(j, "axis2", yp)
            if np.linalg.norm(np.cross(a1, a2)) < 1e-9:
                raise st.doc.error(yp + ("axis2",), "axis1 and axis2 are parallel")
            rmat = F.frame_universal(a1, a2)
        else:
            rmat = np.eye(3)
            if kind in ("POINT_LINE", "POINT_PLANE") and "axis" in j:
                what = "the line is the model X axis" if kind == "POINT_LINE" else "the plane normal is model Z"
                st.warn(st.doc.warning_text(yp + ("axis",), f"ignored by Chrono's parser for {kind} "
                                                             f"({what}); followed"))
        type_name, free = _JOINT_KIND[kind]
        prim = author_joint(st, scope, j["name"], type_name, free, b1, b2, pos, rmat, yp)
        if "bushing_data" in j:
            if kind in ("PRISMATIC", "POINT_LINE", "POINT_PLANE"):
                raise st.doc.error(yp + ("bushing_data",), f"a bushing is not allowed on a {kind} joint")
            _bushing(prim, j["bushing_data"])


def _bushing(prim: Usd.Prim, bd: dict) -> None:
    """MbdBushingAPI: rotational coefficients per rad -> per deg (our angular unit)."""
    dof = bd.get("DOF") or {}
    prim.ApplyAPI(Tokens.MbdBushingAPI)
    set_attr(prim, Tokens.mbdBushingLinearStiffness, float(bd["stiffness_linear"]))
    set_attr(prim, Tokens.mbdBushingLinearDamping, float(bd["damping_linear"]))
    set_attr(prim, Tokens.mbdBushingAngularStiffness, float(bd["stiffness_rotational"]) * DEG2RAD)
    set_attr(prim, Tokens.mbdBushingAngularDamping, float(bd["damping_rotational"]) * DEG2RAD)
    set_attr(prim, Tokens.mbdBushingFreeLinearStiffness, float(dof.get("stiffness_linear", 0.0)))
    set_attr(prim, Tokens.mbdBushingFreeLinearDamping, float(dof.get("damping_linear", 0.0)))
    set_attr(prim, Tokens.mbdBushingFreeAngularStiffness, float(dof.get("stiffness_rotational", 0.0)) * DEG2RAD)
    set_attr(prim, Tokens.mbdBushingFreeAngularDamping, float(dof.get("damping_rotational", 0.0)) * DEG2RAD)


def convert_constraints(st: ConversionState) -> None:
    scope = st.scope("Joints")
    for i, c, yp in st.items("constraints"):
        kind = str(c["type"]).upper()
        b1, b2 = st.two_bodies(c, yp)
        p1 = np.asarray(c["point1"], float)
        p2 = np.asarray(c["point2"], float)
        d = p2 - p1
        if kind == "DISTANCE":
            _distance(st, scope, c, yp, b1, b2, p1, p2, d)
            continue
        z = st.axis(c, "axis", yp)
        if kind == "REVOLUTE-SPHERICAL":
            rmat = F.frame_z(z)
            type_name, dist = Tokens.MbdRevoluteSphericalJoint, float(np.linalg.norm(d))
            off = float(np.dot(d, z))
            if "direction" in c:
                st.warn(st.doc.warning_text(yp + ("direction",), "not used by REVOLUTE-SPHERICAL"))
        else:
            dirn = st.axis(c, "direction", yp)
            y = dirn - np.dot(dirn, z) * z
            if np.linalg.norm(y) < 1e-9:
                raise st.doc.error(yp + ("direction",), "direction is parallel to axis")
            y /= np.linalg.norm(y)
            x = np.cross(y, z)
            rmat = np.column_stack([x, y, z])
            type_name, dist = Tokens.MbdRevoluteTranslationalJoint, float(np.dot(d, x))
            off = float(np.dot(d, z))
        if abs(off) > 1e-9 * max(1.0, float(np.linalg.norm(d))):
            st.warn(st.doc.warning_text(yp, f"point2 - point1 has a component {off:.6g} along the axis: "
                                             "the constraint is violated at the start"))
        prim = author_joint(st, scope, c["name"], type_name, None, b1, b2, p1, rmat, yp, pos1=p2)
        set_attr(prim, Tokens.mbdDistance, dist)


def _distance(st: ConversionState, scope, c, yp, b1, b2, p1, p2, d) -> None:
    """DISTANCE: a PhysicsDistanceJoint with min = max = the initial distance."""
    prim = st.item_prim(scope, c["name"], P.PhysicsDistanceJoint, yp)
    jt = UsdPhysics.DistanceJoint(prim)
    jt.CreateBody0Rel().SetTargets([b1.path])
    jt.CreateBody1Rel().SetTargets([b2.path])
    jt.CreateLocalPos0Attr(v3f(b1.local_point(p1)))
    jt.CreateLocalRot0Attr(qf(b1.local_rot(np.eye(3))))
    jt.CreateLocalPos1Attr(v3f(b2.local_point(p2)))
    jt.CreateLocalRot1Attr(qf(b2.local_rot(np.eye(3))))
    dist = float(np.linalg.norm(d))
    jt.CreateMinDistanceAttr(dist)
    jt.CreateMaxDistanceAttr(dist)
    for key in ("axis", "direction"):
        if key in c:
            st.warn(st.doc.warning_text(yp + (key,), "not used by a DISTANCE constraint"))
