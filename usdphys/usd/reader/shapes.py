"""Collision shapes from a USD stage into a flat NumPy shape table (SI units).

Every prim with `PhysicsCollisionAPI` becomes one row of a `ShapeTable` (a convex
decomposition: one row per piece, all with the prim's path):

- owner: the nearest ancestor (or the prim itself) with `PhysicsRigidBodyAPI`, mapped to a
  model body index by the caller's `body_index(body_prim_path) -> int`; no such ancestor, or
  an index < 0, means the world (a static collider, posed in world coordinates).
- pose: relative to the owner's *rigid frame* (`rigid_frame` of its local-to-world matrix:
  translation plus the orthonormalised rotation, scale removed). Intermediate xforms and
  scale are accounted for; scale is baked into the dimensions (non-uniform scale where the
  shape allows it: box axes, capsule/cylinder/cone length; a sphere under any scale is an
  ellipsoid; meshes take any affine map).
- canonical shape frame: capsule, cylinder and cone axis, and plane normal, along local +Z.
- meshes: a static one keeps its triangles (the narrow phase builds a BVH); on a moving
  body it collides as its convex hull, built here once (or CoACD's pieces for
  `convexDecomposition`).
- dimensions in metres (stage `metersPerUnit`), see `ShapeTable.dims`.

USD stays here: the narrow phase only sees the arrays.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics, UsdShade

from usdphys.errors import UsdphysError, warn
from usdphys.math3d import quat_from_matrix, rigid_frame
from usdphys.types.shapes import (
    DEFAULT_DYNAMIC_FRICTION, DEFAULT_POISSON_RATIO, DEFAULT_RESTITUTION, DEFAULT_STATIC_FRICTION,
    DEFAULT_YOUNG_MODULUS, SHAPE_BOX, SHAPE_CONE, SHAPE_CONVEX, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_ELLIPSOID,
    SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE, ShapeTable, bound_radius,
)
from usdphys.usd.gfconv import row_matrix
from usdphys.usd.tokens import Tokens

# Scale factors equal within this relative tolerance count as equal (float attributes carry
# ~7 digits; 1e-6 accepts float round-off and nothing a person would author on purpose).
_SCALE_RTOL = 1e-6


# USD axis tokens (UsdGeom shapes, UsdPhysics joints) -> index.
AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def _decompose(path: str, a: np.ndarray, axis: int | None):
    """Split the 3x3 linear part `a` (rows = images of the shape's local axes) into a
    rotation (column convention, columns = canonical shape axes, the principal `axis` last
    as Z) and per-axis positive scales in the same canonical order."""
    s = np.linalg.norm(a, axis=1)
    if np.any(s == 0.0):
        raise UsdphysError(f"{path}: zero scale in its transform (xformOp:scale): cannot collide")
    u = a / s[:, None]
    for i, j in ((0, 1), (0, 2), (1, 2)):
        if abs(np.dot(u[i], u[j])) > 1e-6:
            raise UsdphysError(
                f"{path}: its transform relative to its rigid body is sheared (a non-uniform "
                "xformOp:scale under a rotation), which this shape cannot represent"
            )
    if np.linalg.det(u) < 0.0:  # mirror: flip an axis the shape is symmetric about
        k = 0 if axis is None else (axis + 1) % 3
        u[k] = -u[k]
    order = [0, 1, 2] if axis is None else [(axis + 1) % 3, (axis + 2) % 3, axis]
    rot = u[order].T  # columns: shape X, Y, Z in the parent frame
    return rot, s[order]


def _equal(a: float, b: float) -> bool:
    return abs(a - b) <= _SCALE_RTOL * max(abs(a), abs(b))


# ----------------------------------------------------------------------------------------
# reader
# ----------------------------------------------------------------------------------------
def _attr(prim, name, default=None):
    a = prim.GetAttribute(name)
    if not a or not a.HasValue():
        return default
    return a.Get()


def _positive(path, name, value):
    if value is None or not np.isfinite(value) or value < 0.0:
        raise UsdphysError(f"{path}: {name} must be a finite value >= 0, got {value!r}")
    return float(value)


class _Reader:
    def __init__(self, stage, body_index, time):
        self.stage = stage
        self.body_index = body_index
        self.time = time
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.xf = UsdGeom.XformCache(time)
        self.rows = []
        self.verts = []
        self.nverts = 0
        self.warned = set()
        self.default_material = None
        for prim in stage.Traverse():
            if prim.IsA(UsdPhysics.Scene):
                mat = self._bound_material(prim)
                if mat is not None:
                    self.default_material = mat
                break

    def _warn(self, path, msg):
        if path not in self.warned:
            self.warned.add(path)
            warn(f"{path}: {msg}")

    # -- owner body ----------------------------------------------------------------------
    def owner(self, prim):
        p = prim
        while p and not p.IsPseudoRoot():
            if p.HasAPI(UsdPhysics.RigidBodyAPI):
                idx = int(self.body_index(str(p.GetPath())))
                return (idx, p) if idx >= 0 else (-1, None)
            p = p.GetParent()
        return -1, None

    # -- material ------------------------------------------------------------------------
    def _bound_material(self, prim):
        mat, _rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
        if not mat:
            return None
        mprim = mat.GetPrim()
        if not mprim.HasAPI(UsdPhysics.MaterialAPI):
            self._warn(str(mprim.GetPath()), "material bound for physics has no PhysicsMaterialAPI: "
                       "default friction and restitution used")
            return None
        return mprim

    def material(self, prim):
        mprim = self._bound_material(prim) or self.default_material
        out = {
            "path": None,
            "static_friction": DEFAULT_STATIC_FRICTION,
            "dynamic_friction": DEFAULT_DYNAMIC_FRICTION,
            "restitution": DEFAULT_RESTITUTION,
            "density": 0.0,
            "young_modulus": DEFAULT_YOUNG_MODULUS,
            "poisson_ratio": DEFAULT_POISSON_RATIO,
            "normal_stiffness": np.nan,
            "normal_damping": np.nan,
            "tangential_stiffness": np.nan,
            "tangential_damping": np.nan,
        }
        if mprim is None:
            return out
        mp = str(mprim.GetPath())
        out["path"] = mp
        api = UsdPhysics.MaterialAPI(mprim)
        sf = api.GetStaticFrictionAttr().Get()
        df = api.GetDynamicFrictionAttr().Get()
        out["static_friction"] = _positive(mp, "physics:staticFriction", sf)
        out["dynamic_friction"] = _positive(mp, "physics:dynamicFriction", df)
        if not api.GetStaticFrictionAttr().HasAuthoredValue() and api.GetDynamicFrictionAttr().HasAuthoredValue():
            out["static_friction"] = out["dynamic_friction"]  # only the dynamic one authored
        r = _positive(mp, "physics:restitution", api.GetRestitutionAttr().Get())
        if r > 1.0:
            raise UsdphysError(f"{mp}: physics:restitution must be in [0, 1], got {r}")
        out["restitution"] = r
        # density: mass / distance^3 in stage units -> kg/m^3
        out["density"] = _positive(mp, "physics:density", api.GetDensityAttr().Get()) * self.kpu / self.mpu**3
        if mprim.HasAPI(Tokens.MbdContactMaterialAPI):
            pressure = self.kpu / self.mpu  # (kg m / s^2) / m^2 in stage units -> Pa
            out["young_modulus"] = _positive(mp, Tokens.mbdYoungModulus, _attr(mprim, Tokens.mbdYoungModulus, DEFAULT_YOUNG_MODULUS)) * pressure
            nu = _attr(mprim, Tokens.mbdPoissonRatio, DEFAULT_POISSON_RATIO)
            if nu is None or not (0.0 <= nu < 0.5):
                raise UsdphysError(f"{mp}: mbd:poissonRatio must be in [0, 0.5), got {nu!r}")
            out["poisson_ratio"] = float(nu)
            for key, name in (("normal_stiffness", Tokens.mbdNormalStiffness), ("normal_damping", Tokens.mbdNormalDamping),
                              ("tangential_stiffness", Tokens.mbdTangentialStiffness),
                              ("tangential_damping", Tokens.mbdTangentialDamping)):
                a = mprim.GetAttribute(name)
                if a and a.HasAuthoredValue():
                    # force/distance and force*s/distance: both scale by kilogramsPerUnit
                    out[key] = _positive(mp, name, a.Get()) * self.kpu
        return out

    # -- geometry ------------------------------------------------------------------------
    def relative_matrix(self, prim, body_prim):
        m = row_matrix(self.xf.GetLocalToWorldTransform(prim))
        if body_prim is None:
            return m
        try:
            rb = rigid_frame(self.xf.GetLocalToWorldTransform(body_prim))
        except ValueError:
            raise UsdphysError(f"{body_prim.GetPath()}: rigid body transform has zero scale") from None
        return m @ np.linalg.inv(rb)

    def shape(self, prim):
        path = str(prim.GetPath())
        body, body_prim = self.owner(prim)
        rel = self.relative_matrix(prim, body_prim)
        a, t = rel[:3, :3], rel[3, :3] * self.mpu
        mpu = self.mpu
        geo = None  # (type, rot, dims, verts or None, pos)
        if prim.IsA(UsdGeom.Sphere):
            # any linear map takes a sphere to an ellipsoid (converters write MJCF ellipsoids
            # as scaled spheres): its principal axes and semi-axes are the map's SVD
            rot, s = _ellipsoid_axes(path, a)
            r = _positive(path, "radius", _attr(prim, "radius", 1.0)) * mpu
            if _equal(s[0], s[1]) and _equal(s[0], s[2]):  # a sphere keeps its prim's own frame
                geo = (SHAPE_SPHERE, _decompose(path, a, None)[0], (r * s[0], 0.0, 0.0), None, t)
            else:
                geo = (SHAPE_ELLIPSOID, rot, tuple(r * s), None, t)
        elif prim.IsA(UsdGeom.Cube):
            rot, s = _decompose(path, a, None)
            h = 0.5 * _positive(path, "size", _attr(prim, "size", 2.0)) * mpu
            geo = (SHAPE_BOX, rot, tuple(h * s), None, t)
        elif prim.IsA(UsdGeom.Capsule) or prim.IsA(UsdGeom.Cylinder) or prim.IsA(UsdGeom.Capsule_1) \
                or prim.IsA(UsdGeom.Cylinder_1):
            capsule = prim.IsA(UsdGeom.Capsule) or prim.IsA(UsdGeom.Capsule_1)
            if prim.IsA(UsdGeom.Capsule_1) or prim.IsA(UsdGeom.Cylinder_1):
                rt = _attr(prim, "radiusTop", 0.5 if capsule else 1.0)
                rb = _attr(prim, "radiusBottom", 0.5 if capsule else 1.0)
                if not _equal(float(rt), float(rb)):
                    if capsule:
                        self._warn(path, "Capsule_1 with radiusTop != radiusBottom (a tapered capsule) is not "
                                   "supported as a collider: skipped")
                        return None
                    return body, self.frustum(prim, path, a, t, rb, rt, _attr(prim, "height", 2.0))
                radius = rt
            else:
                radius = _attr(prim, "radius", 0.5 if capsule else 1.0)
            height = _attr(prim, "height", 1.0 if capsule else 2.0)
            axis = AXIS_INDEX[str(_attr(prim, "axis", "Z"))]
            rot, s = _decompose(path, a, axis)
            if not _equal(s[0], s[1]):
                raise UsdphysError(
                    f"{path}: a {'capsule' if capsule else 'cylinder'} collider needs equal scale across its "
                    f"axis (xformOp:scale), got {float(s[0])} and {float(s[1])}")
            r = _positive(path, "radius", radius) * s[0] * mpu
            h = 0.5 * _positive(path, "height", height) * s[2] * mpu
            geo = (SHAPE_CAPSULE if capsule else SHAPE_CYLINDER, rot, (r, h, 0.0), None, t)
        elif prim.IsA(UsdGeom.Cone):
            geo = self.frustum(prim, path, a, t, _attr(prim, "radius", 1.0), 0.0, _attr(prim, "height", 2.0))
        elif prim.IsA(UsdGeom.Plane):
            axis = AXIS_INDEX[str(_attr(prim, "axis", "Z"))]
            rot, _s = _decompose(path, a, axis)
            # the normal is the image of the local axis direction (a mirror keeps it: the
            # flipped axis is a tangent one)
            geo = (SHAPE_PLANE, rot, (0.0, 0.0, 0.0), None, t)
        elif prim.IsA(UsdGeom.Mesh):
            geo = self.mesh(prim, path, a, t, static=body < 0)
            if geo is None:
                return None
        else:
            self._warn(path, f"PhysicsCollisionAPI on a {prim.GetTypeName() or 'typeless prim'} is not a "
                       "supported collision shape (Sphere, Cube, Capsule, Cylinder, Cone, Plane, Mesh): skipped")
            return None
        return body, geo

    def frustum(self, prim, path, a, t, r_bottom, r_top, height):
        """A Cone, or a Cylinder_1 with unequal radii: the frustum about +Z, bottom at -h (a
        mirror keeps the apex where it was: canonical +Z is the image of the local axis)."""
        axis = AXIS_INDEX[str(_attr(prim, "axis", "Z"))]
        rot, s = _decompose(path, a, axis)
        if not _equal(s[0], s[1]):
            raise UsdphysError(f"{path}: a {prim.GetTypeName()} collider needs equal scale across its axis "
                               f"(xformOp:scale), got {float(s[0])} and {float(s[1])}")
        rb = _positive(path, "radius", r_bottom) * s[0] * self.mpu
        rt = _positive(path, "radius", r_top) * s[0] * self.mpu
        h = 0.5 * _positive(path, "height", height) * s[2] * self.mpu
        return (SHAPE_CONE, rot, (rb, h, rt), None, t)

    def mesh(self, prim, path, a, t, static):
        pts = _attr(prim, "points", None)
        if pts is None or len(pts) == 0:
            self._warn(path, "collision mesh has no points: skipped")
            return None
        approx = "none"
        if prim.HasAPI(UsdPhysics.MeshCollisionAPI):
            approx = str(UsdPhysics.MeshCollisionAPI(prim).GetApproximationAttr().Get())
        p = np.asarray(pts, dtype=np.float64).reshape(-1, 3) @ a * self.mpu + t  # owner frame, metres
        if not np.all(np.isfinite(p)):
            raise UsdphysError(f"{path}: points holds a NaN or inf value")
        if approx in ("none", "meshSimplification", "sdf"):
            if static:
                tris = _triangles(prim, path, len(p))
                if len(tris):
                    centre = 0.5 * (p.min(axis=0) + p.max(axis=0))
                    return (SHAPE_MESH, np.eye(3), (0.0, 0.0, 0.0), (p - centre, tris), centre)
                self._warn(path, "collision mesh has no faces (faceVertexCounts): it collides as the convex hull "
                           "of its points")
            else:
                self._warn(path, f"physics:approximation '{approx}' (triangle mesh) on a moving body: the mesh "
                           "collides as its convex hull")
        elif approx == "convexDecomposition":
            pieces = self.decompose(prim, path, p)
            if pieces:
                return pieces
        elif approx not in ("convexHull", "boundingSphere", "boundingCube"):
            self._warn(path, f"physics:approximation '{approx}' is unknown: the mesh collides as its convex hull")
        p = np.unique(np.round(p, 12), axis=0)
        centre = p.mean(axis=0)  # inside the hull (a bounding-box centre need not be)
        if approx == "boundingSphere":
            r = float(np.max(np.linalg.norm(p - centre, axis=1)))
            return (SHAPE_SPHERE, np.eye(3), (r, 0.0, 0.0), None, centre)
        if approx == "boundingCube":
            # axis-aligned in the mesh's own frame, mapped by its transform
            local = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
            lo, hi = local.min(axis=0), local.max(axis=0)
            rot, s = _decompose(path, a, None)
            c_local = 0.5 * (lo + hi)
            return (SHAPE_BOX, rot, tuple(0.5 * (hi - lo) * s * self.mpu), None, c_local @ a * self.mpu + t)
        hull = convex_hull_vertices(p - centre)
        return (SHAPE_CONVEX, np.eye(3), (0.0, 0.0, 0.0), hull, centre)

    def decompose(self, prim, path, p):
        """convexDecomposition: CoACD's convex pieces (the optional `mesh` extra), each
        one hull row of the table; None (and a warning) where CoACD is absent or fails."""
        try:
            import coacd
        except ImportError:
            self._warn(path, "physics:approximation 'convexDecomposition' needs CoACD (pip install "
                       "usdphys[mesh]): the mesh collides as one convex hull")
            return None
        tris = _triangles(prim, path, len(p))
        if len(tris) == 0:
            self._warn(path, "convexDecomposition of a mesh without faces: it collides as one convex hull")
            return None
        coacd.set_log_level("error")
        try:  # seeded: the same stage always gives the same pieces
            parts = coacd.run_coacd(coacd.Mesh(p, tris.astype(np.int64)), seed=0)
        except Exception as exc:  # noqa: BLE001  (CoACD raises plain RuntimeErrors)
            self._warn(path, f"convexDecomposition failed in CoACD ({exc}): the mesh collides as one convex hull")
            return None
        out = []
        for verts, _faces in parts:
            v = np.asarray(verts, dtype=np.float64).reshape(-1, 3)
            if len(v) < 4:
                continue
            centre = v.mean(axis=0)
            out.append((SHAPE_CONVEX, np.eye(3), (0.0, 0.0, 0.0), convex_hull_vertices(v - centre), centre))
        return out or None


def _ellipsoid_axes(path: str, a: np.ndarray):
    """Principal axes (rotation, columns = shape axes in the parent frame) and semi-axis
    factors of the image of the unit sphere under the linear map with rows `a`."""
    if not np.all(np.isfinite(a)):
        raise UsdphysError(f"{path}: its transform holds a NaN or inf value")
    _u, sv, vt = np.linalg.svd(a)
    if sv[-1] <= 1e-12 * max(sv[0], 1e-300):
        raise UsdphysError(f"{path}: zero scale in its transform (xformOp:scale): cannot collide")
    rot = vt.T.copy()
    if np.linalg.det(rot) < 0.0:  # an ellipsoid is symmetric about each axis
        rot[:, 2] = -rot[:, 2]
    return rot, sv


def _triangles(prim, path: str, n_points: int) -> np.ndarray:
    """The mesh's faces as triangles (T, 3): polygons fanned from their first vertex."""
    counts = np.asarray(_attr(prim, "faceVertexCounts", []) or [], dtype=np.int64)
    idx = np.asarray(_attr(prim, "faceVertexIndices", []) or [], dtype=np.int64)
    if len(counts) == 0:
        return np.zeros((0, 3), np.int32)
    if np.any(counts < 3) or counts.sum() != len(idx):
        raise UsdphysError(f"{path}: faceVertexCounts (each >= 3, summing to {len(idx)} faceVertexIndices) "
                           "does not match faceVertexIndices")
    if len(idx) and (idx.min() < 0 or idx.max() >= n_points):
        raise UsdphysError(f"{path}: faceVertexIndices holds an index outside 0..{n_points - 1} (points)")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    fan = [(s0, s0 + k, s0 + k + 1) for s0, c in zip(starts, counts) for k in range(1, int(c) - 1)]
    tris = idx[np.asarray(fan, dtype=np.int64)].reshape(-1, 3)
    keep = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
    return tris[keep].astype(np.int32)


def convex_hull_vertices(points: np.ndarray) -> np.ndarray:
    """The vertices of the points' convex hull, built once here so that the narrow phase's
    support function max_v(v . d) scans only them (scipy's Qhull, the optional `mesh` extra).
    Without scipy, or for flat or degenerate point sets Qhull refuses, all points are kept:
    the support function is exact over them too (interior points cost time, not accuracy)."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if len(pts) < 5:
        return pts
    try:
        from scipy.spatial import ConvexHull, QhullError
    except ImportError:
        return pts
    try:
        return pts[np.sort(ConvexHull(pts).vertices)]
    except (QhullError, ValueError):
        return pts


def read_shapes(stage: Usd.Stage, body_index: Callable[[str], int], time=None) -> ShapeTable:
    """All collision shapes of `stage` as a ShapeTable.

    body_index(body_prim_path) -> model body index, or -1 for the world (e.g. a disabled or
    static rigid body). Colliders under instanceable prims are read through instance proxies.
    """
    time = Usd.TimeCode.Default() if time is None else time
    rd = _Reader(stage, body_index, time)
    cols = {k: [] for k in ("type", "body", "pos", "rot", "dims", "vs", "vc", "ts", "tc", "cr", "br", "en", "mat")}
    cols["count"] = (0, 0)
    paths = []
    verts = []
    tris = []
    prims = []
    for prim in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        if not prim.HasAPI(UsdPhysics.CollisionAPI):
            continue
        if not prim.IsActive():
            continue
        out = rd.shape(prim)
        if out is None:
            continue
        body, geos = out
        path = str(prim.GetPath())
        cr = 0.0
        if prim.HasAPI(Tokens.MbdCollisionAPI):
            cr = _positive(path, Tokens.mbdContactRadius, _attr(prim, Tokens.mbdContactRadius, 0.0)) * rd.mpu
        enabled = _attr(prim, UsdPhysics.Tokens.physicsCollisionEnabled, True)
        material = rd.material(prim)
        # one row per shape; a convex decomposition gives one prim several rows (same path)
        for typ, rot, dims, hull, pos in (geos if isinstance(geos, list) else [geos]):
            _append_row(cols, paths, prims, verts, tris, prim, path, body, typ, rot, dims, hull, pos, cr, enabled,
                        material)

    n = len(paths)
    t = ShapeTable(paths=paths)
    t.type = np.array(cols["type"], dtype=np.int32)
    t.body = np.array(cols["body"], dtype=np.int32)
    t.local_pos = np.array(cols["pos"], dtype=np.float64).reshape(n, 3)
    t.local_rot = np.array(cols["rot"], dtype=np.float64).reshape(n, 4)
    t.dims = np.array(cols["dims"], dtype=np.float64).reshape(n, 3)
    t.vert_start = np.array(cols["vs"], dtype=np.int32)
    t.vert_count = np.array(cols["vc"], dtype=np.int32)
    t.verts = np.concatenate(verts).reshape(-1, 3) if verts else np.zeros((0, 3))
    t.tri_start = np.array(cols["ts"], dtype=np.int32)
    t.tri_count = np.array(cols["tc"], dtype=np.int32)
    t.tris = np.concatenate(tris).reshape(-1, 3).astype(np.int32) if tris else np.zeros((0, 3), np.int32)
    t.contact_radius = np.array(cols["cr"], dtype=np.float64)
    t.bound_radius = np.array(cols["br"], dtype=np.float64)
    t.collision_enabled = np.array(cols["en"], dtype=bool)
    for key in ("static_friction", "dynamic_friction", "restitution", "density", "young_modulus",
                "poisson_ratio", "normal_stiffness", "normal_damping", "tangential_stiffness",
                "tangential_damping"):
        setattr(t, key, np.array([m[key] for m in cols["mat"]], dtype=np.float64))
    t.material_paths = [m["path"] for m in cols["mat"]]
    _read_filtering(stage, t, prims, rd)
    return t


def _append_row(cols, paths, prims, verts, tris, prim, path, body, typ, rot, dims, hull, pos, cr, enabled, material):
    dims = np.asarray(dims, dtype=np.float64)
    tri = np.zeros((0, 3), np.int32)
    if typ == SHAPE_MESH:
        hull, tri = hull
    if hull is None:
        hull = np.zeros((0, 3))
    nv, nt = cols["count"]  # vertices and triangles so far
    cols["count"] = (nv + len(hull), nt + len(tri))
    cols["vs"].append(nv if len(hull) else 0)
    cols["vc"].append(len(hull))
    verts.append(hull)
    cols["ts"].append(nt if len(tri) else 0)
    cols["tc"].append(len(tri))
    tris.append(tri)
    cols["type"].append(typ)
    cols["body"].append(body)
    cols["pos"].append(np.asarray(pos, dtype=np.float64))
    cols["rot"].append(quat_from_matrix(np.asarray(rot)))
    cols["dims"].append(dims)
    cols["cr"].append(cr)
    cols["br"].append(bound_radius(typ, dims, hull) + cr)
    cols["en"].append(bool(enabled))
    cols["mat"].append(material)
    paths.append(path)
    prims.append(prim)


def _read_filtering(stage, t: ShapeTable, prims, rd: _Reader) -> None:
    """Collision groups (mergeGroup, filteredGroups, invertFilteredGroups) and filtered pairs."""
    # groups, merged by physics:mergeGroup name
    raw = [p for p in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies())
           if p.IsA(UsdPhysics.CollisionGroup)]
    canon = {}  # group path -> merged index
    merged_name = {}
    group_paths = []
    for g in raw:
        name = _attr(g, UsdPhysics.Tokens.physicsMergeGroup, "") or ""
        if name and name in merged_name:
            canon[str(g.GetPath())] = merged_name[name]
            continue
        canon[str(g.GetPath())] = len(group_paths)
        if name:
            merged_name[name] = len(group_paths)
        group_paths.append(str(g.GetPath()))
    ng = len(group_paths)
    members = [set() for _ in range(ng)]
    filtered = [set() for _ in range(ng)]
    inverted = [False] * ng
    for g in raw:
        gi = canon[str(g.GetPath())]
        api = UsdPhysics.CollisionGroup(g)
        query = api.GetCollidersCollectionAPI().ComputeMembershipQuery()
        for s, prim in enumerate(prims):
            if query.IsPathIncluded(prim.GetPath()):
                members[gi].add(s)
        for target in api.GetFilteredGroupsRel().GetTargets():
            if str(target) not in canon:  # broken references exist in the wild: decide, do not stop
                what = "does not exist" if not stage.GetPrimAtPath(target) else "is not a PhysicsCollisionGroup"
                warn(f"{g.GetPath()}: physics:filteredGroups targets {target}, which {what}; "
                     "that target is ignored (the group's other filters stay)")
                continue
            filtered[gi].add(canon[str(target)])
        if _attr(g, UsdPhysics.Tokens.physicsInvertFilteredGroups, False):
            inverted[gi] = True
    no = np.zeros((ng, ng), dtype=bool)
    for g in range(ng):
        for h in range(ng):
            collide = (h in filtered[g]) if inverted[g] else (h not in filtered[g])
            if not collide:
                no[g, h] = no[h, g] = True
    t.group_paths = group_paths
    t.group_no_collide = no
    t.groups = [tuple(sorted(g for g in range(ng) if s in members[g])) for s in range(len(prims))]

    # filtered pairs: a target covers the shapes it owns (a body), is (a collider), or
    # contains (an articulation root or any other subtree)
    owner_path = []
    for prim in prims:
        _b, bp = rd.owner(prim)
        owner_path.append(str(bp.GetPath()) if bp is not None else None)

    def covered(prim_path, is_body):
        out = set()
        for s, sp in enumerate(t.paths):
            if is_body:
                if owner_path[s] == prim_path:
                    out.add(s)
            elif sp == prim_path or sp.startswith(prim_path + "/"):
                out.add(s)
        return out

    pairs = set()
    for p in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        if not p.HasAPI(UsdPhysics.FilteredPairsAPI):
            continue
        mine = covered(str(p.GetPath()), p.HasAPI(UsdPhysics.RigidBodyAPI))
        for target in UsdPhysics.FilteredPairsAPI(p).GetFilteredPairsRel().GetTargets():
            tp = stage.GetPrimAtPath(target)
            if not tp:
                raise UsdphysError(f"{p.GetPath()}: physics:filteredPairs targets {target}, which does not exist")
            theirs = covered(str(target), tp.HasAPI(UsdPhysics.RigidBodyAPI))
            for i in mine:
                for j in theirs:
                    if i != j:
                        pairs.add((min(i, j), max(i, j)))
    t.filtered_pairs = pairs
