"""Stage -> Model: UsdPhysics parsed by usd-core, our own schemas read from the prims.

Units: every value is converted to SI here (metersPerUnit, kilogramsPerUnit, UsdPhysics
degrees -> radians), so the solver never sees stage units. Velocities: physics:velocity
is read as the world-frame linear velocity of the centre of mass (distance / s) and
physics:angularVelocity as a world-frame angular velocity in DEGREES / s (UsdPhysics
writes "in the same space as the node's xform"; for bodies under an unrotated parent,
the usual case, that is the world frame; PhysX reads it that way too).

Our force elements, loads, motors, bushings and NewtonJointAPI joint properties (both the
per-DOF and the scalar newton-usd-schemas form) are read by usdphys.usd.reader.elements into
``Model.elements`` (SI); the composite joints (MbdRevoluteSphericalJoint,
MbdRevoluteTranslationalJoint) become joints with COMPOSITE_* rows.

Collision shapes, materials and collision filtering are read by usdphys.usd.reader.shapes
into ``Model.shapes`` (contact, issue #7; mass from collider density as UsdPhysics says).

What the solver does not simulate yet is named once per prim in a warning, never
dropped silently: cone limits, breakable joints.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError, warn
from usdphys.types.model import COMPOSITE_REVOLUTE_SPHERICAL, COMPOSITE_REVOLUTE_TRANSLATIONAL, Model
from usdphys.math3d import matrix_to_quat, quat_mul, quat_rotate

DEG = math.pi / 180.0
DEFAULT_DENSITY_SI = 1000.0  # kg/m^3, UsdPhysics' default when nothing is authored

# Composite joints (our typed joints; usd-core parses them as generic D6 joints).
_COMPOSITE_TYPES = {
    "MbdRevoluteSphericalJoint": COMPOSITE_REVOLUTE_SPHERICAL,
    "MbdRevoluteTranslationalJoint": COMPOSITE_REVOLUTE_TRANSLATIONAL,
}

_DOF_INDEX = {"TransX": 0, "TransY": 1, "TransZ": 2, "RotX": 3, "RotY": 4, "RotZ": 5}
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


@dataclass
class StageDefaults:
    """Simulation defaults found on the stage (MbdSimulationAPI); None when unauthored."""

    time_step: float | None = None
    end_time: float | None = None


from usdphys.usd.stage import open_stage  # noqa: E402,F401  (one opener for every command; kept importable here)


class _Warner:
    """Warn once per (prim, topic)."""

    def __init__(self):
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, path, topic: str, message: str) -> None:
        key = (str(path), topic)
        if key not in self.seen:
            self.seen.add(key)
            warn(f"{path}: {message}")


def _load(stage: Usd.Stage):
    fn = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None)
    if fn is not None:
        return fn(stage, [Sdf.Path.absoluteRootPath])
    return UsdPhysics.LoadUsdPhysicsFromRange(stage, [Sdf.Path.absoluteRootPath])


def _world_pose(cache: UsdGeom.XformCache, prim: Usd.Prim):
    """World transform of a prim as (position, rotation xyzw, 3x3 linear part), double precision."""
    m = cache.GetLocalToWorldTransform(prim)  # row-vector convention
    a = np.array(m, dtype=float)
    lin = a[:3, :3].T  # column convention
    pos = a[3, :3].copy()
    return pos, _rotation_of(lin), lin


def _rotation_of(lin: np.ndarray) -> np.ndarray:
    """Rotation part of a linear map (polar decomposition), xyzw; reflection folded into scale."""
    u, _, vt = np.linalg.svd(lin)
    r = u @ vt
    if np.linalg.det(r) < 0:
        u[:, -1] *= -1
        r = u @ vt
    return matrix_to_quat(r)


def _q(gfq) -> np.ndarray:
    """Gf.Quat (real, imaginary) -> xyzw numpy."""
    im = gfq.GetImaginary()
    q = np.array([im[0], im[1], im[2], gfq.GetReal()], float)
    n = np.linalg.norm(q)
    return q / n if n > 0 else np.array([0, 0, 0, 1.0])


def _v(v) -> np.ndarray:
    return np.array([v[0], v[1], v[2]], float)


# ---------------------------------------------------------------------------- mass
def _shape_mass(desc, kind: str, density: float, warner, mpu: float):
    """(mass, com, inertia about com in body frame) of one collider, SI. None if unknown."""
    lp = _v(desc.localPos) * mpu
    lr = _q(desc.localRot)
    rm = _mat(lr)
    if kind == "SphereShape":
        r = desc.radius * mpu
        vol = 4.0 / 3.0 * math.pi * r**3
        m = density * vol
        Ic = np.eye(3) * 0.4 * m * r * r
    elif kind == "CubeShape":
        a, b, c = (_v(desc.halfExtents) * mpu).tolist()
        m = density * 8 * a * b * c
        Ic = np.diag([m / 3 * (b * b + c * c), m / 3 * (a * a + c * c), m / 3 * (a * a + b * b)])
    elif kind in ("CylinderShape", "CapsuleShape", "ConeShape", "Cylinder1ShapeDesc", "Capsule1Shape"):
        r = desc.radius * mpu if hasattr(desc, "radius") else desc.topRadius * mpu
        hh = desc.halfHeight * mpu
        ax = _AXIS_INDEX.get(str(desc.axis).split(".")[-1], 2)
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


def _mat(q: np.ndarray) -> np.ndarray:
    from usdphys.math3d import quat_to_matrix

    return quat_to_matrix(q)


def _mass_properties(stage, body_prim, desc, shapes, mpu, kpu, warner):
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
        res = _shape_mass(sdesc, kind, density, warner, mpu)
        if res is None and kind == "MeshShape":
            res = _mesh_mass(sprim, body_prim, density, mpu)  # the collider's convex hull (issue #7)
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
    scale = _world_scale(body_prim)
    if c_auth is not None and all(math.isfinite(x) for x in c_auth):
        com = _v(c_auth) * scale * mpu
    diag = get(mass_api, "DiagonalInertia")
    if diag is not None and any(x > 0 for x in diag):
        moments = _v(diag) * kpu * mpu * mpu
        pa = get(mass_api, "PrincipalAxes")
        axes = _q(pa) if pa is not None and (pa.GetReal() != 0 or pa.GetImaginary().GetLength() > 0) else np.array([0, 0, 0, 1.0])
    elif np.trace(inertia) > 0:
        w, v = np.linalg.eigh(inertia)
        if np.linalg.det(v) < 0:
            v[:, 2] *= -1
        moments, axes = w, matrix_to_quat(v)
    else:
        r = 0.1  # a solid sphere of 0.1 m radius: keeps the body well-posed; warned
        moments = np.full(3, 0.4 * mass * r * r)
        axes = np.array([0, 0, 0, 1.0])
        warner(path, "inertia", "no physics:diagonalInertia and no collider shapes: using the inertia "
                                f"of a solid sphere of radius {r} m")
    moments = np.maximum(moments, 1e-12 * max(float(np.max(moments)), 1e-30))
    return mass, com, moments, axes


def _mesh_mass(prim, body_prim, density: float, mpu: float):
    """(mass, com, inertia about com in the body frame) of a mesh collider's convex hull, SI;
    None when it has no volume. The hull is what the mesh collides as (docs/contact.md)."""
    from usdphys.math3d import rigid_frame

    pts = UsdGeom.Mesh(prim).GetPointsAttr().Get() if prim else None
    if not pts:
        return None
    cache = UsdGeom.XformCache()
    rel = np.array(cache.GetLocalToWorldTransform(prim), float) @ np.linalg.inv(
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
    from pxr import UsdShade

    mat, _rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if not mat or not mat.GetPrim().HasAPI(UsdPhysics.MaterialAPI):
        return 0.0
    val = UsdPhysics.MaterialAPI(mat.GetPrim()).GetDensityAttr().Get()
    if val is None or not math.isfinite(val) or val <= 0:
        return 0.0
    return float(val) * kpu / mpu**3


def _world_scale(prim) -> np.ndarray:
    m = UsdGeom.XformCache().GetLocalToWorldTransform(prim)
    a = np.array(m, dtype=float)[:3, :3]
    return np.linalg.norm(a, axis=1)


# ---------------------------------------------------------------------------- main
def read_stage(stage: Usd.Stage | str | os.PathLike) -> tuple[Model, StageDefaults]:
    """Read a stage (or a file path) into a one-world Model plus the stage's defaults."""
    if not isinstance(stage, Usd.Stage):
        stage = open_stage(stage)
    source = stage.GetRootLayer().identifier
    warner = _Warner()
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
    kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
    try:
        parsed = _load(stage)
    except Exception as exc:
        raise UsdphysError(f"{source}: UsdPhysics could not parse the stage ({exc})") from None

    by_type: dict[str, list] = {}
    for otype, (paths, descs) in parsed.items():
        name = str(otype).split(".")[-1]
        for p, d in zip(paths, descs):
            by_type.setdefault(name, []).append((p, d))

    model = Model()
    model.source = source
    model.meters_per_unit = mpu
    model.kilograms_per_unit = kpu
    defaults = StageDefaults()

    # ---- scene: gravity (+ our MbdSimulationAPI defaults)
    scenes = by_type.get("Scene", [])
    up = UsdGeom.GetStageUpAxis(stage)
    up_vec = np.array([0, 1.0, 0]) if up == UsdGeom.Tokens.y else np.array([0, 0, 1.0])
    if scenes:
        spath, sdesc = scenes[0]
        if len(scenes) > 1:
            warner(spath, "scenes", f"{len(scenes)} PhysicsScene prims; using this one for gravity for every body")
        gdir = _v(sdesc.gravityDirection)
        n = np.linalg.norm(gdir)
        gdir = gdir / n if n > 0 else -up_vec
        gmag = float(sdesc.gravityMagnitude)
        gmag = gmag * mpu if math.isfinite(gmag) and gmag >= 0 else 9.81
        model.gravity = gdir * gmag
        sprim = stage.GetPrimAtPath(spath)
        for name, field in (("mbd:timeStep", "time_step"), ("mbd:endTime", "end_time")):
            attr = sprim.GetAttribute(name)
            if attr and attr.HasAuthoredValue():
                val = attr.Get()
                if val is None or not math.isfinite(val) or val <= 0:
                    raise UsdphysError(f"{source}: {spath}.{name} = {val}: expected a positive number of seconds")
                setattr(defaults, field, float(val))
    else:
        model.gravity = -up_vec * 9.81
        warn(f"{source}: no PhysicsScene; using standard gravity 9.81 m/s^2 along -{up}")

    # ---- shapes: UsdPhysics' descriptions give mass; the contact shapes are read below
    shapes: dict = {}
    for name, items in by_type.items():
        if name.endswith("Shape"):
            for p, d in items:
                shapes[p] = (name, d)

    # ---- bodies
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    index: dict[str, int] = {}
    static_bodies: set[str] = set()
    for p, d in sorted(by_type.get("RigidBody", []), key=lambda it: str(it[0])):
        prim = stage.GetPrimAtPath(p)
        if not d.rigidBodyEnabled:
            static_bodies.add(str(p))
            continue
        pos, rot, _ = _world_pose(cache, prim)
        # A kinematic body's mass never enters the dynamics (inverse mass 0): no mass warnings.
        mass_warner = (lambda *args, **kwargs: None) if d.kinematicBody else warner
        mass, com, moments, axes = _mass_properties(stage, prim, d, shapes, mpu, kpu, mass_warner)
        lin_vel = _v(d.linearVelocity) * mpu
        ang_vel = _v(d.angularVelocity) * DEG
        if d.kinematicBody:
            if _has_animated_xform(prim):
                warner(p, "kinematic", "kinematic body: its animated transform is not followed yet; it moves "
                                       "with its initial velocity")
        index[str(p)] = model.add_body(str(p), mass, moments, pos * mpu, rot, lin_vel, ang_vel, com, axes,
                                       kinematic=bool(d.kinematicBody))

    # ---- joints
    joint_kinds = [k for k in by_type if k.endswith("Joint")]
    for kind in sorted(joint_kinds):
        for p, d in sorted(by_type[kind], key=lambda it: str(it[0])):
            _read_joint(stage, cache, model, index, kind, p, d, mpu, kpu, warner)

    # ---- force elements, loads, motors, bushings, NewtonJointAPI (issue #5)
    _read_elements(stage, model, index, static_bodies)
    _read_contact(stage, model, index, by_type)  # collision shapes, materials, filtering (issue #7)
    if model.body_count == 0:
        warn(f"{source}: no dynamic rigid body (UsdPhysics RigidBodyAPI) to simulate")
    return model, defaults


def _read_elements(stage, model: Model, index: dict, static_bodies: set) -> None:
    """Model.elements from usdphys.usd.reader.elements (SI, body PRIM frames); spring masses lumped."""
    from usdphys.usd.reader.elements import read_elements

    def body_index(path: str) -> int:
        if path in index:
            return index[path]
        if path in static_bodies:
            return -1
        raise KeyError(path)

    joints = {p: j for j, p in enumerate(model.joint_paths)}
    elements = read_elements(stage, body_index, lambda p: joints.get(p, -1),
                             lambda p: _world_scale(stage.GetPrimAtPath(p)))
    sd = elements.spring_dampers
    for e in range(len(sd)):
        # Multibody.jl Spring(m, lengthFraction): lumped into the two ends (docs/forces.md)
        m, lam = float(sd.spring_mass[e]), float(sd.spring_mass_fraction[e])
        if m > 0:
            model.add_point_mass(int(sd.body0[e]), sd.local_pos0[e], m * (1.0 - lam))
            model.add_point_mass(int(sd.body1[e]), sd.local_pos1[e], m * lam)
    model.elements = elements


def _composite_distance(prim, model: Model, b0, p0, r0, b1, p1, r1, composite: int, mpu: float) -> float:
    """mbd:distance (stage units -> m) or, unauthored, its value in the initial configuration."""
    attr = prim.GetAttribute("mbd:distance") if prim else None
    if attr and attr.HasAuthoredValue():
        v = attr.Get()
        if v is None or not math.isfinite(float(v)):
            raise UsdphysError(f"{prim.GetPath()}: mbd:distance = {v}: expected a finite number")
        return float(v) * mpu

    def world(b, p, r):
        if b < 0:
            return np.asarray(p, float), np.asarray(r, float)
        return model.body_pos[0, b] + quat_rotate(model.body_rot[0, b], p), quat_mul(model.body_rot[0, b], r)

    P0, _ = world(b0, p0, r0)
    P1, Q1 = world(b1, p1, r1)
    if composite == COMPOSITE_REVOLUTE_SPHERICAL:
        return float(np.linalg.norm(P1 - P0))
    return float(np.dot(P1 - P0, quat_rotate(Q1, np.array([1.0, 0.0, 0.0]))))


def _has_animated_xform(prim) -> bool:
    xf = UsdGeom.Xformable(prim)
    if not xf:
        return False
    return any(op.GetAttr().GetNumTimeSamples() > 1 for op in xf.GetOrderedXformOps())


def _side(index, body_path, pos, rot, mpu):
    """(body index, frame pos, frame rot) for one side of a joint.

    usd-core's parser gives the frame in the body's (unscaled) prim frame when the side is a
    simulated body, and already in WORLD coordinates when it is the world, a static body or
    any other prim (it folds that prim's transform in).
    """
    key = str(body_path) if body_path and not body_path.isEmpty else ""
    return index.get(key, -1), pos * mpu, rot


def _read_joint(stage, cache, model, index, kind, path, d, mpu, kpu, warner):
    prim = stage.GetPrimAtPath(path)
    tname = str(prim.GetTypeName()) if prim else ""
    if not d.jointEnabled:
        return  # disabled joints are authored intent: simply not simulated
    if kind in ("CustomJoint",):
        warner(path, "joint", f"custom joint type {tname or '?'} is not simulated; ignored")
        return
    b0, p0, r0 = _side(index, d.body0, _v(d.localPose0Position), _q(d.localPose0Orientation), mpu)
    b1, p1, r1 = _side(index, d.body1, _v(d.localPose1Position), _q(d.localPose1Orientation), mpu)
    if b0 < 0 and b1 < 0:
        warner(path, "joint", "joint connects no simulated (dynamic or kinematic) body; ignored")
        return
    if math.isfinite(d.breakForce) or math.isfinite(d.breakTorque):
        warner(path, "break", "breakForce / breakTorque (breakable joints) not simulated; the joint never breaks")

    locked = np.zeros(6, bool)
    lower = np.full(6, -np.inf)
    upper = np.full(6, np.inf)
    k = np.zeros(6)
    c = np.zeros(6)
    tp = np.zeros(6)
    tv = np.zeros(6)
    fmax = np.full(6, np.inf)
    accel = np.zeros(6, bool)
    ang_unit_force = kpu * mpu * mpu  # stage torque unit in N m
    lin_unit_force = kpu * mpu  # stage force unit in N

    def set_drive(dof, drv):
        if drv is None or not drv.enabled:
            return
        if dof >= 3:  # angular: per degree -> per radian
            k[dof] = drv.stiffness / DEG * (1.0 if drv.acceleration else ang_unit_force)
            c[dof] = drv.damping / DEG * (1.0 if drv.acceleration else ang_unit_force)
            tp[dof] = drv.targetPosition * DEG
            tv[dof] = drv.targetVelocity * DEG
            fmax[dof] = drv.forceLimit * ang_unit_force
        else:
            k[dof] = drv.stiffness * (1.0 if drv.acceleration else lin_unit_force / mpu)
            c[dof] = drv.damping * (1.0 if drv.acceleration else lin_unit_force / mpu)
            tp[dof] = drv.targetPosition * mpu
            tv[dof] = drv.targetVelocity * mpu
            fmax[dof] = drv.forceLimit * lin_unit_force
        if drv.acceleration:
            accel[dof] = True
        if k[dof] < 0 or c[dof] < 0:
            raise UsdphysError(f"{path}: drive stiffness and damping must be >= 0")

    def set_limit(dof, lim, unit):
        lo = lim.lower
        hi = lim.upper
        if math.isfinite(lo) and math.isfinite(hi) and lo > hi:
            locked[dof] = True
            return
        if math.isfinite(lo):
            lower[dof] = lo * unit
        if math.isfinite(hi):
            upper[dof] = hi * unit

    if tname in _COMPOSITE_TYPES:  # MbdRevoluteSphericalJoint / MbdRevoluteTranslationalJoint (issue #5)
        comp = _COMPOSITE_TYPES[tname]
        dist = _composite_distance(prim, model, b0, p0, r0, b1, p1, r1, comp, mpu)
        label = "revolute-spherical" if comp == COMPOSITE_REVOLUTE_SPHERICAL else "revolute-translational"
        model.add_joint(str(path), b0, b1, p0, r0, p1, r1, kind=label, composite=comp, composite_distance=dist)
        return
    is_distance = False
    dmin = dmax = np.nan
    label = kind.replace("Joint", "").lower() or "generic"
    if kind == "FixedJoint":
        locked[:] = True
    elif kind in ("RevoluteJoint", "PrismaticJoint"):
        ax = _AXIS_INDEX[str(d.axis).split(".")[-1]]
        if kind == "RevoluteJoint":
            locked[:3] = True
            locked[3:] = True
            locked[3 + ax] = False
            dof, unit = 3 + ax, DEG
        else:
            locked[:] = True
            locked[ax] = False
            dof, unit = ax, mpu
        set_limit(dof, d.limit, unit)
        set_drive(dof, d.drive)
    elif kind == "SphericalJoint":
        locked[:3] = True
        cone0 = prim.GetAttribute("physics:coneAngle0Limit").Get() if prim else None
        cone1 = prim.GetAttribute("physics:coneAngle1Limit").Get() if prim else None
        if (cone0 is not None and cone0 >= 0) or (cone1 is not None and cone1 >= 0):
            warner(path, "cone", "spherical cone limit is not simulated yet; the joint swings freely")
    elif kind == "DistanceJoint":
        is_distance = True
        if d.minEnabled and d.limit.lower >= 0:
            dmin = d.limit.lower * mpu
        if d.maxEnabled and d.limit.upper >= 0:
            dmax = d.limit.upper * mpu
        if not (np.isfinite(dmin) or np.isfinite(dmax)):
            warner(path, "distance", "distance joint with neither min nor max distance authored constrains nothing")
    elif kind == "D6Joint":
        label = "generic"
        for pair in d.jointLimits:
            name = str(pair.first).split(".")[-1]
            if name not in _DOF_INDEX:
                warner(path, f"limit-{name}", f"limit on DOF '{name}' is not supported; ignored")
                continue
            dof = _DOF_INDEX[name]
            set_limit(dof, pair.second, DEG if dof >= 3 else mpu)
        for pair in d.jointDrives:
            name = str(pair.first).split(".")[-1]
            if name not in _DOF_INDEX:
                warner(path, f"drive-{name}", f"drive on DOF '{name}' is not supported; ignored")
                continue
            set_drive(_DOF_INDEX[name], pair.second)
        free_rot = int(np.sum(~locked[3:]))
        rot_limited = any(np.isfinite(lower[3 + a]) or np.isfinite(upper[3 + a]) for a in range(3) if not locked[3 + a])
        if free_rot > 1 and rot_limited:
            warner(path, "rotlimit", "rotation limits on a joint with several free rotations use per-axis twist "
                                     "angles (exact only while the other free rotations are small)")
    else:
        warner(path, "joint", f"joint type {kind} is not simulated; ignored")
        return
    model.add_joint(str(path), b0, b1, p0, r0, p1, r1, locked=locked, lower=lower, upper=upper, kind=label,
                    drive_stiffness=k, drive_damping=c, drive_target_pos=tp, drive_target_vel=tv,
                    drive_max_force=fmax, drive_accel=accel, dist_min=dmin, dist_max=dmax,
                    is_distance=is_distance)


# ---------------------------------------------------------------------------- contact (issue #7)
def _read_contact(stage, model: Model, index: dict, by_type: dict) -> None:
    """Model.shapes (usdphys.usd.reader.shapes.read_shapes), contact_method and contact_exclude.

    Joints with physics:collisionEnabled = false (the UsdPhysics default) stop contact between
    the bodies they join: two simulated bodies become an excluded body pair; a simulated body
    jointed to a static prim (static body, collider) loses contact with that prim's shapes only
    (filtered shape pairs), not with the rest of the static world.
    """
    from usdphys.usd.reader.shapes import read_shapes

    scenes = by_type.get("Scene", [])
    if scenes:
        sprim = stage.GetPrimAtPath(scenes[0][0])
        attr = sprim.GetAttribute("mbd:contactMethod") if sprim else None
        if attr and attr.HasAuthoredValue():
            method = str(attr.Get())
            if method not in ("nsc", "smc"):
                raise UsdphysError(f"{scenes[0][0]}: mbd:contactMethod = {method!r}: expected 'nsc' or 'smc'")
            model.contact_method = method
    table = read_shapes(stage, lambda path: index.get(str(path), -1))
    exclude = set()
    if len(table):
        for kind, items in by_type.items():
            if not kind.endswith("Joint"):
                continue
            for p, d in items:
                if not getattr(d, "jointEnabled", True) or getattr(d, "collisionEnabled", False):
                    continue
                sides = []
                for body in (d.body0, d.body1):
                    key = str(body) if body and not body.isEmpty else ""
                    sides.append((index.get(key, -1), key))
                (b0, p0), (b1, p1) = sides
                if b0 >= 0 and b1 >= 0:
                    exclude.add((min(b0, b1), max(b0, b1)))
                    continue
                for (b, _), (_, other) in (((b0, p0), (b1, p1)), ((b1, p1), (b0, p0))):
                    if b < 0 or not other:
                        continue
                    mine = [s for s in range(len(table)) if int(table.body[s]) == b]
                    theirs = [s for s, sp in enumerate(table.paths) if int(table.body[s]) < 0
                              and (sp == other or sp.startswith(other + "/"))]
                    for i in mine:
                        for j in theirs:
                            table.filtered_pairs.add((min(i, j), max(i, j)))
    model.shapes = table if len(table) else None
    model.contact_exclude = sorted(exclude)
