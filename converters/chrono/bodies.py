"""model.bodies: rigid-body prims, pose, mass properties and initial velocities."""
from __future__ import annotations

import numpy as np
from pxr import UsdGeom, UsdPhysics

from usdphys import math3d as m3

from . import frames as F
from . import shapes
from .state import RAD2DEG, Body, ConversionState, qd, qf, v3d, v3f


def convert_bodies(st: ConversionState) -> None:
    scope = st.scope("Bodies")
    # Every body fixed (an FSI tank, say): kept kinematic so the stage still has bodies to
    # simulate and record; nothing is jointed to them that a tree would have to hang below.
    all_fixed = all(isinstance(b, dict) and bool(b.get("fixed", False)) for b in st.model.get("bodies") or [])
    for i, b, yp in st.items("bodies"):
        fixed = bool(b.get("fixed", False))
        pos = np.asarray(b["location"], float)
        rot = st.rotation(b["orientation"], yp + ("orientation",)) if "orientation" in b else F.QUAT_IDENTITY
        com = b.get("com") or {}
        com_pos = np.asarray(com.get("location", (0, 0, 0)), float)
        com_rot = (st.rotation(com["orientation"], yp + ("com", "orientation"))
                   if "orientation" in com else F.QUAT_IDENTITY)
        prim = st.item_prim(scope, b["name"], "Xform", yp)
        body = Body(b["name"], prim.GetPath(), pos, rot, com_pos, com_rot, fixed, i)
        st.bodies[b["name"]] = body
        xf = UsdGeom.Xformable(prim)
        xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(v3d(pos))
        xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(qd(rot))
        rb = UsdPhysics.RigidBodyAPI.Apply(prim)
        if fixed:
            # Static rather than kinematic: it never moves either way, but tree-based importers
            # (Newton) accept a kinematic body only as an articulation root with every joint
            # pointing away from it, while a static body is the world to them on either side.
            if all_fixed:
                rb.CreateKinematicEnabledAttr(True)
            else:
                rb.CreateRigidBodyEnabledAttr(False)
            for key in ("initial_linear_velocity", "initial_angular_velocity"):
                if key in b:
                    st.warn(st.doc.warning_text(yp + (key,), "ignored on a fixed body"))
        else:
            _mass(st, prim, b, yp, com_pos, com_rot)
            if "initial_linear_velocity" in b:  # COM velocity, model frame
                rb.CreateVelocityAttr(v3f(b["initial_linear_velocity"]))
            if "initial_angular_velocity" in b:  # rad/s in COM-frame axes -> deg/s, world
                w = body.R @ m3.quat_to_matrix(com_rot) @ np.asarray(b["initial_angular_velocity"], float)
                rb.CreateAngularVelocityAttr(v3f(w * RAD2DEG))
        for key in ("lin_vel", "ang_vel"):
            if key in b:  # already warned as unknown; say what to use instead
                st.warn(st.doc.warning_text(
                    yp + (key,), f"Chrono's parser ignores '{key}' (use initial_"
                                 f"{'linear' if key == 'lin_vel' else 'angular'}_velocity); not converted"))
        shapes.contact_materials(st, body, b, yp)
        shapes.collision_shapes(st, body, b, yp)
        shapes.visual_shapes(st, body, b, yp)


def _mass(st: ConversionState, prim, b, yp, com_pos, com_rot) -> None:
    if "mass" not in b:
        raise st.doc.error(yp + ("mass",), "missing required field (the body is not fixed)")
    if "inertia" not in b:
        raise st.doc.error(yp + ("inertia",), "missing required field (the body is not fixed)")
    mass = float(b["mass"])
    if not mass > 0:
        raise st.doc.error(yp + ("mass",), f"must be > 0, got {b['mass']!r}")
    moments = [float(x) for x in b["inertia"]["moments"]]
    if min(moments) <= 0:
        raise st.doc.error(yp + ("inertia", "moments"), f"moments of inertia must be > 0, got {moments}")
    products = [float(x) for x in b["inertia"].get("products", (0, 0, 0))]
    tensor = F.inertia_tensor(moments, products)
    diag, r_p = F.principal_axes(tensor)
    if min(diag) <= 0:
        raise st.doc.error(yp + ("inertia", "products"),
                           f"inertia tensor is not positive definite (principal moments {diag.tolist()})")
    a, bb, c = sorted(diag)
    if a + bb < c * (1 - 1e-6):
        st.warn(st.doc.warning_text(yp + ("inertia",), f"principal moments {diag.tolist()} violate the "
                                                       "triangle inequality (not a physical body)"))
    mapi = UsdPhysics.MassAPI.Apply(prim)
    mapi.CreateMassAttr(mass)
    mapi.CreateCenterOfMassAttr(v3f(com_pos))
    mapi.CreateDiagonalInertiaAttr(v3f(diag))
    axes = m3.quat_mul(com_rot, m3.quat_from_matrix(r_p))  # principal frame in the body prim frame
    mapi.CreatePrincipalAxesAttr(qf(axes))
