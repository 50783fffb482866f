"""The collision shape table: one row per collider, flat NumPy arrays in SI units.

usdphys.usd.reader.shapes fills it from a stage; ``table_from_specs`` builds one in code.
Canonical shape frame: capsule and cylinder axis, and plane normal, along local +Z.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from usdphys.types.enums import ShapeType

SHAPE_PLANE, SHAPE_SPHERE, SHAPE_CAPSULE = ShapeType.PLANE, ShapeType.SPHERE, ShapeType.CAPSULE
SHAPE_BOX, SHAPE_CYLINDER, SHAPE_CONVEX = ShapeType.BOX, ShapeType.CYLINDER, ShapeType.CONVEX
SHAPE_ELLIPSOID, SHAPE_CONE, SHAPE_MESH = ShapeType.ELLIPSOID, ShapeType.CONE, ShapeType.MESH
SHAPE_NAMES = ("plane", "sphere", "capsule", "box", "cylinder", "convex", "ellipsoid", "cone", "mesh")

# Used when a collider has no physics material bound (UsdPhysics leaves the default material
# to the engine; these match PhysX's default material). A material bound with purpose
# "physics" to the PhysicsScene prim replaces them.
DEFAULT_STATIC_FRICTION = 0.5
DEFAULT_DYNAMIC_FRICTION = 0.5
DEFAULT_RESTITUTION = 0.0
# MbdContactMaterialAPI fallbacks (Chrono SMC defaults), used without that API too.
DEFAULT_YOUNG_MODULUS = 2e7
DEFAULT_POISSON_RATIO = 0.3

@dataclass
class ShapeTable:
    """Flat shape table; row s describes shape s. All lengths in metres.

    type[s]            int32    SHAPE_* code
    body[s]            int32    model body index, -1 = world (static collider)
    local_pos[s]       (3,)     shape frame origin in the owner's rigid frame (world if -1)
    local_rot[s]       (4,)     shape frame rotation, quaternion (x, y, z, w) as Warp's quat
    dims[s]            (3,)     plane: (0, 0, 0); sphere: (r, 0, 0); capsule: (r, h, 0) with
                                h the half-length of the core segment along Z; box: half
                                extents (hx, hy, hz); cylinder: (r, h, 0), h = half height;
                                convex: (0, 0, 0); ellipsoid: semi-axes (a, b, c) along X, Y, Z;
                                cone: (r_bottom, h, r_top), a frustum z in [-h, h] with the
                                bottom at -h (a cone: r_top = 0); mesh: (0, 0, 0)
    vert_start[s], vert_count[s]  rows of `verts` (convex and mesh; 0, 0 otherwise)
    verts[v]           (3,)     convex hull vertices or triangle-mesh points in the shape frame
                                (scale baked in), metres
    tri_start[s], tri_count[s]    rows of `tris` (mesh only; 0, 0 otherwise)
    tris[t]            (3,) int32 triangle vertex indices, relative to the shape's vert_start
    contact_radius[s]  float64  sweep radius around the shape (MbdCollisionAPI), metres
    bound_radius[s]    float64  bounding sphere about the shape origin incl. contact_radius;
                                inf for planes
    static_friction, dynamic_friction, restitution [s]   dimensionless
    density[s]         kg/m^3 (0 = unauthored: body mass comes from MassAPI)
    young_modulus[s]   Pa, poisson_ratio[s]
    normal_stiffness, tangential_stiffness [s]  N/m; normal_damping, tangential_damping [s]
                                N s/m; NaN = not authored (derive from Young/Poisson)
    collision_enabled[s] bool   physics:collisionEnabled
    groups[s]          tuple of collision-group indices the shape belongs to
    group_paths[g]     collision group prim paths (after mergeGroup merging: first path)
    group_no_collide   bool (G, G): True where groups g and h must not collide
    filtered_pairs     set of (i, j), i < j: shape pairs PhysicsFilteredPairsAPI disables
    """

    paths: list = field(default_factory=list)
    type: np.ndarray = None
    body: np.ndarray = None
    local_pos: np.ndarray = None
    local_rot: np.ndarray = None
    dims: np.ndarray = None
    vert_start: np.ndarray = None
    vert_count: np.ndarray = None
    verts: np.ndarray = None
    tri_start: np.ndarray = None
    tri_count: np.ndarray = None
    tris: np.ndarray = None
    contact_radius: np.ndarray = None
    bound_radius: np.ndarray = None
    static_friction: np.ndarray = None
    dynamic_friction: np.ndarray = None
    restitution: np.ndarray = None
    density: np.ndarray = None
    young_modulus: np.ndarray = None
    poisson_ratio: np.ndarray = None
    normal_stiffness: np.ndarray = None
    normal_damping: np.ndarray = None
    tangential_stiffness: np.ndarray = None
    tangential_damping: np.ndarray = None
    material_paths: list = field(default_factory=list)
    collision_enabled: np.ndarray = None
    groups: list = field(default_factory=list)
    group_paths: list = field(default_factory=list)
    group_no_collide: np.ndarray = None
    filtered_pairs: set = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.paths)

    def index(self, path: str) -> int:
        return self.paths.index(str(path))


def _packed(rows, key: str, dtype):
    """Every shape's (k, 3) rows of `key` stacked into one array: (all rows, start, count)
    per shape; a shape without any has start 0 and count 0."""
    parts = [np.asarray(s.get(key, np.zeros((0, 3))), dtype=dtype).reshape(-1, 3) for s in rows]
    count = np.array([len(p) for p in parts], dtype=np.int32)
    start = np.where(count > 0, np.concatenate([[0], np.cumsum(count)[:-1]]), 0).astype(np.int32)
    return (np.concatenate(parts).astype(dtype) if parts else np.zeros((0, 3), dtype)), start, count


def table_from_specs(specs) -> ShapeTable:
    """A ShapeTable built in code (tests, programmatic scenes): each spec is a dict with
    `type` (SHAPE_*), `body` (int, -1 = world), `dims` (3,), optional `pos` (3,), `rot`
    (x, y, z, w), `verts` (convex, shape frame), `contact_radius`, `enabled`, and material
    keys as in ShapeTable (defaults as for an unbound collider); a mesh (SHAPE_MESH, static
    only) takes `verts` and `tris` (T, 3) indices into its own verts."""
    rows = list(specs)
    n = len(rows)
    t = ShapeTable(paths=[s.get("path", f"/shape{i}") for i, s in enumerate(rows)])
    t.type = np.array([s["type"] for s in rows], dtype=np.int32)
    t.body = np.array([s.get("body", -1) for s in rows], dtype=np.int32)
    t.local_pos = np.array([s.get("pos", (0.0, 0.0, 0.0)) for s in rows], dtype=np.float64).reshape(n, 3)
    rot = np.array([s.get("rot", (0.0, 0.0, 0.0, 1.0)) for s in rows], dtype=np.float64).reshape(n, 4)
    t.local_rot = rot / np.linalg.norm(rot, axis=1, keepdims=True) if n else rot
    t.dims = np.array([s.get("dims", (0.0, 0.0, 0.0)) for s in rows], dtype=np.float64).reshape(n, 3)
    t.verts, t.vert_start, t.vert_count = _packed(rows, "verts", np.float64)
    t.tris, t.tri_start, t.tri_count = _packed(rows, "tris", np.int32)
    t.contact_radius = np.array([s.get("contact_radius", 0.0) for s in rows], dtype=np.float64)
    br = []
    verts = [t.verts[a:a + c] for a, c in zip(t.vert_start, t.vert_count)]  # each shape's own
    for s, d, v, r in zip(rows, t.dims, verts, t.contact_radius):
        br.append(bound_radius(s["type"], d, v) + r)
    t.bound_radius = np.array(br, dtype=np.float64)
    t.collision_enabled = np.array([s.get("enabled", True) for s in rows], dtype=bool)
    defaults = {"static_friction": DEFAULT_STATIC_FRICTION, "dynamic_friction": DEFAULT_DYNAMIC_FRICTION,
                "restitution": DEFAULT_RESTITUTION, "density": 0.0, "young_modulus": DEFAULT_YOUNG_MODULUS,
                "poisson_ratio": DEFAULT_POISSON_RATIO, "normal_stiffness": np.nan, "normal_damping": np.nan,
                "tangential_stiffness": np.nan, "tangential_damping": np.nan}
    for key, val in defaults.items():
        setattr(t, key, np.array([s.get(key, val) for s in rows], dtype=np.float64))
    t.material_paths = [None] * n
    t.groups = [tuple(s.get("groups", ())) for s in rows]
    ng = 1 + max((g for s in rows for g in s.get("groups", ())), default=-1)
    t.group_paths = [f"/group{g}" for g in range(ng)]
    t.group_no_collide = np.zeros((ng, ng), dtype=bool)
    t.filtered_pairs = set()
    return t


def bound_radius(typ: int, dims, verts) -> float:
    """Radius of a sphere about the shape origin that holds the (core) shape; inf for planes."""
    d = np.asarray(dims, dtype=np.float64)
    if typ in (SHAPE_CONVEX, SHAPE_MESH):
        v = np.asarray(verts, dtype=np.float64).reshape(-1, 3)
        return float(np.max(np.linalg.norm(v, axis=1))) if len(v) else 0.0
    return {SHAPE_PLANE: np.inf, SHAPE_SPHERE: d[0], SHAPE_CAPSULE: d[0] + d[1], SHAPE_BOX: float(np.linalg.norm(d)),
            SHAPE_CYLINDER: float(np.hypot(d[0], d[1])), SHAPE_ELLIPSOID: float(np.max(d)),
            SHAPE_CONE: float(np.hypot(max(d[0], d[2]), d[1]))}[int(typ)]
