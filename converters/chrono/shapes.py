"""A body's contact block and visualisation: contact materials, collision shapes (analytic,
OBJ meshes and convex hulls) and visual shapes."""
from __future__ import annotations

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from usdphys.usd.tokens import Tokens

from . import frames as F
from .obj import read_obj
from .state import Body, ConversionState, qd, set_attr, v3d, v3f

# Chrono's contact-coefficient keys -> our MbdContactMaterialAPI attributes
_COEFFICIENTS = (("normal_stiffness", Tokens.mbdNormalStiffness), ("normal_damping", Tokens.mbdNormalDamping),
                 ("tangential_stiffness", Tokens.mbdTangentialStiffness),
                 ("tangential_damping", Tokens.mbdTangentialDamping))


def contact_materials(st: ConversionState, body: Body, b: dict, yp: tuple) -> None:
    contact = b.get("contact")
    if not contact:
        return
    seen = {}
    for j, m in enumerate(contact["materials"]):
        myp = yp + ("contact", "materials", j)
        if m["name"] in seen:  # materials are named per body, so the check is per body too
            raise st.doc.error(myp + ("name",), f"duplicate material name {m['name']!r} in this body")
        seen[m["name"]] = j
        scope = st.scope("Materials", Tf.MakeValidIdentifier(body.path.name))
        mat = UsdShade.Material.Define(st.stage, scope.AppendChild(st.names.make(scope, m["name"])))
        prim = mat.GetPrim()
        prim.SetDisplayName(str(m["name"]))
        pm = UsdPhysics.MaterialAPI.Apply(prim)
        mu = float(m.get("coefficient_of_friction", 0.8))
        pm.CreateStaticFrictionAttr(mu)
        pm.CreateDynamicFrictionAttr(mu)
        pm.CreateRestitutionAttr(float(m.get("coefficient_of_restitution", 0.01)))
        prim.ApplyAPI(Tokens.MbdContactMaterialAPI)
        props = None
        for key in ("properties", "physical_properties"):
            if key in m:
                props = m[key]
        if props is not None:
            young = props.get("Young_modulus", props.get("Youngs_modulus"))
            if young is None or "Poisson_ratio" not in props:
                key = "properties" if "properties" in m else "physical_properties"
                raise st.doc.error(myp + (key,), "needs Young_modulus (or Youngs_modulus) and Poisson_ratio")
            set_attr(prim, Tokens.mbdYoungModulus, float(young))
            set_attr(prim, Tokens.mbdPoissonRatio, float(props["Poisson_ratio"]))
        else:
            set_attr(prim, Tokens.mbdYoungModulus, 2e7)
            set_attr(prim, Tokens.mbdPoissonRatio, 0.3)
        coefs = m.get("Coefficients", m.get("coefficients"))
        if coefs is not None:
            for src, dst in _COEFFICIENTS:
                set_attr(prim, dst, float(coefs[src]))
        body.materials[m["name"]] = mat


def _shape(st: ConversionState, parent: Sdf.Path, s: dict, yp: tuple, collision: bool,
           index: int) -> list[Usd.Prim]:
    kind = str(s["type"]).upper()
    name = st.names.make(parent, f"{kind.lower()}_{index}")
    path = parent.AppendChild(name)

    def need(key):
        if key not in s:
            raise st.doc.error(yp + (key,), f"missing required field (for {kind})")
        return s[key]

    loc = np.asarray(s.get("location", (0, 0, 0)), float)
    if kind in ("SPHERE", "BOX", "CYLINDER"):
        need("location")
    if kind == "SPHERE":
        g = UsdGeom.Sphere.Define(st.stage, path)
        r = float(need("radius"))
        g.CreateRadiusAttr(r)
        g.CreateExtentAttr([(-r, -r, -r), (r, r, r)])
        UsdGeom.Xformable(g).AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(v3d(loc))
        return [g.GetPrim()]  # a sphere's orientation is irrelevant (Chrono ignores it too)
    if kind == "BOX":
        dims = np.asarray(need("dimensions"), float)
        rot = st.rotation(need("orientation"), yp + ("orientation",))
        g = UsdGeom.Cube.Define(st.stage, path)
        g.CreateSizeAttr(1.0)
        g.CreateExtentAttr([(-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)])
        xf = UsdGeom.Xformable(g)
        xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(v3d(loc))
        xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(qd(rot))
        xf.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(v3d(dims))  # full lengths
        return [g.GetPrim()]
    if kind == "CYLINDER":
        r = float(need("radius"))
        h = float(need("length"))
        axis = st.axis(s, "axis", yp)
        g = UsdGeom.Cylinder.Define(st.stage, path)
        g.CreateRadiusAttr(r)
        g.CreateHeightAttr(h)
        g.CreateAxisAttr(UsdGeom.Tokens.z)
        g.CreateExtentAttr([(-r, -r, -h / 2), (r, r, h / 2)])
        xf = UsdGeom.Xformable(g)
        xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(v3d(loc))
        xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(qd(F.rotation_z_to(axis)))
        return [g.GetPrim()]
    # MESH / HULL from an OBJ file
    fname = str(need("filename"))
    fpath = st.data_file(fname, yp + ("filename",))
    if fpath.suffix.lower() != ".obj":
        raise st.doc.error(yp + ("filename",), f"only Wavefront OBJ meshes are supported, got {fpath.name}")
    mesh = read_obj(fpath)
    if kind == "HULL":  # one convex hull per OBJ group/object; Chrono ignores any pose here
        if len(mesh.groups) == 1:
            return [_mesh_prim(st, path, mesh.points, mesh.groups[0].triangles)]
        UsdGeom.Xform.Define(st.stage, path)
        return [_mesh_prim(st, path.AppendChild(st.names.make(path, g.name)), mesh.points, g.triangles)
                for g in mesh.groups]
    prim = _mesh_prim(st, path, mesh.points, mesh.triangles)
    rot = (st.rotation(s["orientation"], yp + ("orientation",)) if "orientation" in s
           else F.QUAT_IDENTITY)
    xf = UsdGeom.Xformable(prim)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(v3d(loc))
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(qd(rot))
    scale = float(s.get("scale", 1.0))
    xf.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(scale, scale, scale))
    if collision and "contact_radius" in s:
        prim.ApplyAPI(Tokens.MbdCollisionAPI)
        set_attr(prim, Tokens.mbdContactRadius, float(s["contact_radius"]))
    return [prim]


def _mesh_prim(st: ConversionState, path: Sdf.Path, points: list, triangles: list) -> Usd.Prim:
    """A triangle mesh holding only the points its triangles use (OBJ groups share one list)."""
    used = sorted({i for t in triangles for i in t})
    remap = {old: new for new, old in enumerate(used)}
    pts = [points[i] for i in used]
    m = UsdGeom.Mesh.Define(st.stage, path)
    m.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in pts]))
    m.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(triangles)))
    m.CreateFaceVertexIndicesAttr(Vt.IntArray([remap[i] for t in triangles for i in t]))
    m.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    arr = np.asarray(pts, float)
    m.CreateExtentAttr([v3f(arr.min(axis=0)), v3f(arr.max(axis=0))])
    return m.GetPrim()


def collision_shapes(st: ConversionState, body: Body, b: dict, yp: tuple) -> None:
    contact = b.get("contact")
    if not contact or not contact["shapes"]:
        return
    parent = body.path.AppendChild("Collision")
    UsdGeom.Imageable(UsdGeom.Scope.Define(st.stage, parent)).CreatePurposeAttr(UsdGeom.Tokens.guide)
    for j, s in enumerate(contact["shapes"]):
        syp = yp + ("contact", "shapes", j)
        mat = body.materials.get(s["material"])
        if mat is None:
            raise st.doc.error(syp + ("material",), f"no contact material named {s['material']!r} in "
                                                    f"body {body.name!r} (materials are per body)")
        kind = str(s["type"]).upper()
        for prim in _shape(st, parent, s, syp, True, j):
            UsdPhysics.CollisionAPI.Apply(prim)
            if kind in ("MESH", "HULL"):
                UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr(
                    UsdPhysics.Tokens.none if kind == "MESH" else UsdPhysics.Tokens.convexHull)
            UsdShade.MaterialBindingAPI.Apply(prim).Bind(
                mat, UsdShade.Tokens.weakerThanDescendants, "physics")


def visual_shapes(st: ConversionState, body: Body, b: dict, yp: tuple) -> None:
    vis = b.get("visualization")
    if not vis:
        return
    parent = body.path.AppendChild("Visual")
    UsdGeom.Scope.Define(st.stage, parent)
    if "model_file" in vis:
        fpath = st.data_file(str(vis["model_file"]), yp + ("visualization", "model_file"))
        suffix = fpath.suffix.lower()
        mpath = parent.AppendChild(st.names.make(parent, "model_file"))
        if suffix == ".obj":
            mesh = read_obj(fpath)
            _mesh_prim(st, mpath, mesh.points, mesh.triangles)
        elif suffix in (".usd", ".usda", ".usdc", ".usdz"):
            # typeless def: the referenced prim's type composes through (absolute asset path)
            st.stage.DefinePrim(mpath).GetReferences().AddReference(str(fpath.resolve()))
        else:
            st.warn(st.doc.warning_text(yp + ("visualization", "model_file"),
                                        f"{fpath.suffix} model files are not converted (OBJ or USD only)"))
    for j, s in enumerate(vis.get("shapes") or []):
        syp = yp + ("visualization", "shapes", j)
        for prim in _shape(st, parent, s, syp, False, j):
            color = s.get("color")
            if color is not None and min(color) >= 0:  # Chrono: [-1, -1, -1] = no colour
                UsdGeom.Gprim(prim).CreateDisplayColorAttr([v3f(color)])
