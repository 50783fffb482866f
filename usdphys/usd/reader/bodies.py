"""Rigid bodies of a stage -> Model bodies: world pose, initial velocities, mass properties.

Mass follows UsdPhysics' precedence: an authored physics:mass on the body wins; otherwise
the colliders' masses add up, each from (collider MassAPI mass) or its volume times the
first density found among collider MassAPI > body MassAPI > bound physics material > 1000
kg/m^3. Authored physics:diagonalInertia / centerOfMass win over the colliders' values.
A body's frame is its prim's world transform with the scale removed (polar rotation).
"""
from __future__ import annotations

import math

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics, UsdShade

from usdphys.errors import UsdphysError
from usdphys.math3d import matrix_to_quat, polar_rotation, quat_to_matrix, rigid_frame
from usdphys.types.model import Model
from usdphys.types.params import add_source
from usdphys.usd.gfconv import linear_and_translation, row_matrix, transform_fault, unit_quat_xyzw, vec3
from usdphys.usd.reader.shapes import AXIS_INDEX

DEG = math.pi / 180.0
DEFAULT_DENSITY_SI = 1000.0  # kg/m^3, UsdPhysics' default when nothing is authored
# A body without mass information gets the inertia of a solid sphere of this radius (m):
# it keeps the body well-posed, and the reader warns.
FALLBACK_INERTIA_RADIUS = 0.1


def read_bodies(stage: Usd.Stage, rigid_bodies: list, shapes: dict, model: Model, mpu: float, kpu: float,
                warner) -> tuple[dict[str, int], set[str]]:
    """Add every enabled UsdPhysics rigid body to ``model`` in path order.

    rigid_bodies: usd-core's (path, RigidBodyDesc) pairs; shapes: collider path -> (shape
    kind, ShapeDesc). Returns (body path -> model body index, paths of disabled bodies,
    which the other readers treat as static).
    """
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    index: dict[str, int] = {}
    static_bodies: set[str] = set()
    for p, d in sorted(rigid_bodies, key=lambda it: str(it[0])):
        prim = stage.GetPrimAtPath(p)
        if not d.rigidBodyEnabled:
            static_bodies.add(str(p))
            continue
        pos, rot = world_pose(cache, prim)
        # A kinematic body's mass never enters the dynamics (inverse mass 0): no mass warnings.
        mass_warner = (lambda *args, **kwargs: None) if d.kinematicBody else warner
        mass, com, moments, axes = mass_properties(stage, prim, d, shapes, mpu, kpu, mass_warner)
        lin_vel = vec3(d.linearVelocity) * mpu
        ang_vel = vec3(d.angularVelocity) * DEG
        if d.kinematicBody and _has_animated_xform(prim):
            warner(p, "kinematic", "kinematic body: its animated transform is not followed yet; it moves "
                                   "with its initial velocity")
        _check_body_values(p, mass=mass, moments=moments, pos=pos * mpu, rot=rot, lin_vel=lin_vel,
                           ang_vel=ang_vel, com=com, axes=axes)
        index[str(p)] = model.add_body(str(p), mass, moments, pos * mpu, rot, lin_vel, ang_vel, com, axes,
                                       kinematic=bool(d.kinematicBody))
        if not d.kinematicBody:
            _record_mass_source(prim, model, str(p), mass, moments, kpu)
    return index, static_bodies


# Where each value of a body comes from, for the message when it is not a usable number.
_BODY_VALUE_SOURCES = {
    "mass": "physics:mass (or its colliders' mass)",
    "moments": "physics:diagonalInertia (or its colliders' inertia)",
    "pos": "its transform (xformOp:*)",
    "rot": "its transform (xformOp:*)",
    "lin_vel": "physics:velocity",
    "ang_vel": "physics:angularVelocity",
    "com": "physics:centerOfMass (or its colliders' centre of mass)",
    "axes": "physics:principalAxes",
}


def _check_body_values(path, **values) -> None:
    """Every number of a body finite (float overflow of a huge authored value included), and
    rotations with a direction: one error naming the prim and the attribute, before the
    model turns a bad value into NaN poses or a bare ValueError."""
    for name, value in values.items():
        v = np.asarray(value, dtype=float)
        bad = not np.all(np.isfinite(v))
        if not bad and name in ("rot", "axes"):
            bad = not np.linalg.norm(v) > 1e-12
        if bad:
            shown = ", ".join(f"{x:g}" for x in v.ravel())
            raise UsdphysError(f"{path}: {_BODY_VALUE_SOURCES[name]} gives ({shown}); "
                               "expected finite numbers" + (" and a non-zero rotation" if name in ("rot", "axes") else ""))


def world_pose(cache: UsdGeom.XformCache, prim: Usd.Prim) -> tuple[np.ndarray, np.ndarray]:
    """(position in stage units, rotation xyzw) of a prim's world transform, scale removed."""
    fault = transform_fault(prim)
    if fault:
        raise UsdphysError(fault)
    linear, pos = linear_and_translation(cache.GetLocalToWorldTransform(prim))
    if not (np.all(np.isfinite(linear)) and np.all(np.isfinite(pos))):
        raise UsdphysError(f"{prim.GetPath()}: its world transform overflows "
                           "(xformOp values on it or its ancestors too large)")
    return pos, polar_rotation(linear)


def world_scale(prim: Usd.Prim) -> np.ndarray:
    """Length of each local axis in the world: the scale local attachment points carry."""
    a = row_matrix(UsdGeom.XformCache().GetLocalToWorldTransform(prim))[:3, :3]
    return np.linalg.norm(a, axis=1)


def _has_animated_xform(prim) -> bool:
    xf = UsdGeom.Xformable(prim)
    if not xf:
        return False
    return any(op.GetAttr().GetNumTimeSamples() > 1 for op in xf.GetOrderedXformOps())


# ---------------------------------------------------------------------------- mass
def _record_mass_source(prim, model: Model, path: str, mass: float, moments, kpu: float) -> None:
    """Per-world parameter provenance of an authored physics:mass: the body mass and, unless
    physics:diagonalInertia is authored, the inertia derived from the colliders, which scales
    with the mass (mass_properties)."""
    api = UsdPhysics.MassAPI(prim)
    attr = api.GetMassAttr() if api else None
    if not attr or not attr.HasAuthoredValue() or not (attr.Get() or 0) > 0:
        return
    add_source(model, path, attr.GetName(), "body.mass", (path,), kpu)
    diag = api.GetDiagonalInertiaAttr()
    if not (diag and diag.HasAuthoredValue() and any(x > 0 for x in diag.Get())):
        add_source(model, path, attr.GetName(), "body.inertia", (path,), np.asarray(moments, float) * kpu / mass)


def mass_properties(stage, body_prim, desc, shapes, mpu, kpu, warner):
    """mass (kg), com (m, prim frame), principal inertia (kg m^2), principal axes (xyzw)."""
    path = body_prim.GetPath()
    mass_api = UsdPhysics.MassAPI(body_prim) if body_prim.HasAPI(UsdPhysics.MassAPI) else None

    def get(api, name):
        if api is None:
            return None
        attr = getattr(api, f"Get{name}Attr")()
        return attr.Get() if attr and attr.HasAuthoredValue() else None

    body_density = get(mass_api, "Density")
    body_density = body_density * kpu / mpu**3 if body_density else None
    total_m, first_moment, parts = 0.0, np.zeros(3), []
    for sp in desc.collisions:
        sd = shapes.get(sp)
        if sd is None:
            continue
        kind, sdesc = sd
        sprim = stage.GetPrimAtPath(sp)
        s_api = UsdPhysics.MassAPI(sprim) if sprim and sprim.HasAPI(UsdPhysics.MassAPI) else None
        s_density = get(s_api, "Density")
        # UsdPhysics precedence: collider MassAPI > body MassAPI > bound physics material > 1000
        density = s_density * kpu / mpu**3 if s_density else (
            body_density or _material_density(sprim, mpu, kpu) or DEFAULT_DENSITY_SI)
        res = _ellipsoid_mass(sprim, body_prim, density, mpu) if kind == "SphereShape" else None
        res = res or _shape_mass(sdesc, kind, density, mpu)
        if res is None and kind == "MeshShape":
            res = _mesh_mass(sprim, body_prim, density, mpu)  # the mesh collides as its convex hull
        if res is None:
            warner(sp, "mass", f"collider type {kind} does not contribute mass or inertia "
                               "(author physics:mass / physics:diagonalInertia on the body)")
            continue
        m, c, I = res
        s_mass = get(s_api, "Mass")
        if s_mass and s_mass > 0:
            I = I * (s_mass * kpu / m) if m > 0 else I
            m = s_mass * kpu
        total_m += m
        first_moment += m * c
        parts.append((m, c, I))
    com = first_moment / total_m if total_m > 0 else np.zeros(3)
    inertia = np.zeros((3, 3))
    for m, c, I in parts:
        d = c - com
        inertia += I + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))

    mass = get(mass_api, "Mass")
    if mass and mass > 0:
        mass = mass * kpu
        if total_m > 0:
            inertia *= mass / total_m
    else:
        mass = total_m
    if mass <= 0:
        mass = 1.0
        warner(path, "mass", "no physics:mass and no collider to derive it from: using 1 kg")
    c_auth = get(mass_api, "CenterOfMass")
    scale = world_scale(body_prim)
    if c_auth is not None and all(math.isfinite(x) for x in c_auth):
        com = vec3(c_auth) * scale * mpu
    diag = get(mass_api, "DiagonalInertia")
    if diag is not None and any(x > 0 for x in diag):
        moments = vec3(diag) * kpu * mpu * mpu
        pa = get(mass_api, "PrincipalAxes")
        # usd-core's unauthored-looking value is the zero quaternion: the identity
        axes = unit_quat_xyzw(pa) if pa is not None and (pa.GetReal() != 0 or pa.GetImaginary().GetLength() > 0) \
            else np.array([0, 0, 0, 1.0])
    elif np.trace(inertia) > 0:
        w, v = np.linalg.eigh(inertia)
        if np.linalg.det(v) < 0:
            v[:, 2] *= -1
        moments, axes = w, matrix_to_quat(v)
    else:
        r = FALLBACK_INERTIA_RADIUS
        moments = np.full(3, 0.4 * mass * r * r)
        axes = np.array([0, 0, 0, 1.0])
        warner(path, "inertia", "no physics:diagonalInertia and no collider shapes: using the inertia "
                                f"of a solid sphere of radius {r} m")
    moments = np.maximum(moments, 1e-12 * max(float(np.max(moments)), 1e-30))
    return mass, com, moments, axes


def _shape_mass(desc, kind: str, density: float, mpu: float):
    """(mass, com, inertia about com in body frame) of one primitive collider, SI; None for
    kinds without a closed form (meshes, planes)."""
    lp = vec3(desc.localPos) * mpu
    rm = quat_to_matrix(unit_quat_xyzw(desc.localRot))
    if kind == "SphereShape":
        r = desc.radius * mpu
        vol = 4.0 / 3.0 * math.pi * r**3
        m = density * vol
        Ic = np.eye(3) * 0.4 * m * r * r
    elif kind == "CubeShape":
        a, b, c = (vec3(desc.halfExtents) * mpu).tolist()
        m = density * 8 * a * b * c
        Ic = np.diag([m / 3 * (b * b + c * c), m / 3 * (a * a + c * c), m / 3 * (a * a + b * b)])
    elif kind in ("CylinderShape", "CapsuleShape", "ConeShape", "Cylinder1Shape", "Capsule1Shape"):
        r = desc.radius * mpu if hasattr(desc, "radius") else desc.bottomRadius * mpu
        hh = desc.halfHeight * mpu
        ax = AXIS_INDEX.get(str(desc.axis).split(".")[-1], 2)
        if kind in ("Cylinder1Shape", "Capsule1Shape"):
            rt = desc.topRadius * mpu
            if abs(rt - r) > 1e-6 * max(rt, r):
                if kind == "Capsule1Shape":
                    return None  # a tapered capsule: no collider either (reader/shapes.py warns)
                # a frustum (bottom r at -hh, top rt at +hh), which collides as one
                m, zc, ia, it = _frustum_mass(r, rt, hh, density)
                d = np.full(3, it)
                d[ax] = ia
                return m, lp + rm @ (np.eye(3)[ax] * zc), rm @ np.diag(d) @ rm.T
            kind = "CylinderShape" if kind == "Cylinder1Shape" else "CapsuleShape"
        if kind == "CylinderShape":
            m = density * math.pi * r * r * 2 * hh
            ia = 0.5 * m * r * r
            it = m * (3 * r * r + 4 * hh * hh) / 12
        elif kind == "CapsuleShape":
            mc = density * math.pi * r * r * 2 * hh
            ms = density * 4.0 / 3.0 * math.pi * r**3
            m = mc + ms
            ia = 0.5 * mc * r * r + 0.4 * ms * r * r
            it = mc * (3 * r * r + 4 * hh * hh) / 12 + ms * (0.4 * r * r + hh * hh + 0.75 * hh * r)
        else:  # cone, apex up the axis: COM a quarter of the height above the base
            h = 2 * hh
            m = density * math.pi * r * r * h / 3
            ia = 0.3 * m * r * r
            it = m * (3 * r * r / 20 + 3 * h * h / 80)
            lp = lp + rm @ (np.eye(3)[ax] * (-hh + h / 4))
        d = np.full(3, it)
        d[ax] = ia
        Ic = np.diag(d)
    else:
        return None
    return m, lp, rm @ Ic @ rm.T


def _frustum_mass(rb: float, rt: float, hh: float, density: float):
    """(mass, com offset along the axis, axial and transverse moments about the com) of a
    solid frustum, radius rb at -hh to rt at +hh: Gauss-Legendre over the axis, exact for
    these polynomials (degree <= 4 in z)."""
    x, w = np.polynomial.legendre.leggauss(5)
    z, w = x * hh, w * hh
    r2 = (rb + (rt - rb) * (z + hh) / (2.0 * hh)) ** 2
    m = density * math.pi * float(np.sum(w * r2))
    zc = density * math.pi * float(np.sum(w * z * r2)) / m
    ia = density * math.pi / 2.0 * float(np.sum(w * r2 * r2))
    it = density * math.pi * float(np.sum(w * (r2 * r2 / 4.0 + z * z * r2))) - m * zc * zc
    return m, zc, ia, it


def _ellipsoid_mass(prim, body_prim, density: float, mpu: float):
    """(mass, com, inertia about com in the body frame) of a Sphere under a non-uniform (or
    sheared) scale, which collides as an ellipsoid (usd-core's desc takes the largest scale
    as a radius); None for a uniformly scaled sphere."""
    radius = UsdGeom.Sphere(prim).GetRadiusAttr().Get() if prim else None
    if radius is None:
        return None
    cache = UsdGeom.XformCache()
    rel = row_matrix(cache.GetLocalToWorldTransform(prim)) @ np.linalg.inv(
        rigid_frame(cache.GetLocalToWorldTransform(body_prim)))
    a = rel[:3, :3]
    if not np.all(np.isfinite(a)):
        return None
    _u, sv, vt = np.linalg.svd(a)
    if sv[0] - sv[-1] <= 1e-6 * sv[0]:
        return None
    ax = sv * float(radius) * mpu  # semi-axes along the rows of vt
    m = density * 4.0 / 3.0 * math.pi * float(np.prod(ax))
    sq = ax * ax
    d = m / 5.0 * np.array([sq[1] + sq[2], sq[0] + sq[2], sq[0] + sq[1]])
    return m, rel[3, :3] * mpu, vt.T @ np.diag(d) @ vt


def _mesh_mass(prim, body_prim, density: float, mpu: float):
    """(mass, com, inertia about com in the body frame) of a mesh collider's convex hull, SI;
    None when it has no volume. The hull is what the mesh collides as (docs/contact.md)."""
    pts = UsdGeom.Mesh(prim).GetPointsAttr().Get() if prim else None
    if not pts:
        return None
    cache = UsdGeom.XformCache()
    rel = row_matrix(cache.GetLocalToWorldTransform(prim)) @ np.linalg.inv(
        rigid_frame(cache.GetLocalToWorldTransform(body_prim)))
    p = (np.asarray(pts, float).reshape(-1, 3) @ rel[:3, :3] + rel[3, :3]) * mpu
    hull = True
    try:
        from scipy.spatial import ConvexHull, QhullError

        try:
            tris = ConvexHull(p).simplices  # unoriented triangles of the hull
        except QhullError:  # flat or degenerate: no volume
            return None
    except ImportError:
        hull = False  # no scipy: the mesh's own faces (exact for a closed convex mesh)
        counts = UsdGeom.Mesh(prim).GetFaceVertexCountsAttr().Get() or []
        idx = list(UsdGeom.Mesh(prim).GetFaceVertexIndicesAttr().Get() or [])
        fan, k = [], 0
        for n in counts:
            fan += [(idx[k], idx[k + i], idx[k + i + 1]) for i in range(1, n - 1)]
            k += n
        tris = np.array(fan, int).reshape(-1, 3)
    o = p.mean(axis=0)  # inside the hull: every tetrahedron (o, face) has the same sign
    a, b, c = p[tris[:, 0]] - o, p[tris[:, 1]] - o, p[tris[:, 2]] - o
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    vol = np.abs(vol) if hull else vol * np.sign(vol.sum())
    if vol.sum() <= 1e-15:
        return None
    V = float(vol.sum())
    com_rel = ((a + b + c) / 4.0 * vol[:, None]).sum(axis=0) / V
    # second moment of each tetrahedron (0, a, b, c): V/20 (sum p p^T + s s^T)
    s_ = a + b + c
    C = np.zeros((3, 3))
    for v, x, y, z, sv in zip(vol, a, b, c, s_):
        C += v / 20.0 * (np.outer(x, x) + np.outer(y, y) + np.outer(z, z) + np.outer(sv, sv))
    C = C * density - density * V * np.outer(com_rel, com_rel)  # about the centre of mass
    m = density * V
    return m, o + com_rel, np.trace(C) * np.eye(3) - C


def _material_density(prim, mpu: float, kpu: float) -> float:
    """physics:density (kg/m^3) of the material bound to a collider for purpose "physics"; 0 if none."""
    if not prim:
        return 0.0
    mat, _rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if not mat or not mat.GetPrim().HasAPI(UsdPhysics.MaterialAPI):
        return 0.0
    val = UsdPhysics.MaterialAPI(mat.GetPrim()).GetDensityAttr().Get()
    if val is None or not math.isfinite(val) or val <= 0:
        return 0.0
    return float(val) * kpu / mpu**3
