"""Ellipsoids, cones and triangle meshes in the narrow phase, against analytic geometry.

Tolerances: the closed-form answers (the lowest point of an ellipsoid or cone on a plane,
a sphere against a flat triangle) are a few dozen float64 operations on O(1) numbers:
1e-10 as in test_narrowphase.py. The curved convex pairs go through MPR plus the Newton
refinement of the normal, which stops when the support point's tangential part is below
1e-13 of its size; the references (a Brent root of the point-ellipsoid equation to 1e-15
relative) are as tight, so 1e-9 m on 0.1 m shapes leaves two orders for round-off.
"""
import logging

import numpy as np
import pytest
import warp as wp
from scipy.optimize import brentq

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.math3d import quat_to_matrix
from usdphys.solver.broadphase import candidate_pairs
from usdphys.solver.narrowphase import MESH_PAIR_CONTACTS, CollisionPipeline
from usdphys.types.shapes import (SHAPE_BOX, SHAPE_CONE, SHAPE_CONVEX, SHAPE_ELLIPSOID, SHAPE_MESH, SHAPE_PLANE,
                                  SHAPE_SPHERE, table_from_specs)

TOL = 1e-10
CURVED_TOL = 1e-9
I = np.array([0.0, 0.0, 0.0, 1.0])


def collide(specs, poses, margin=0.0):
    """Contacts of world 0; poses: (pos, quat xyzw) per body."""
    t = table_from_specs(specs)
    pipe = CollisionPipeline(t, candidate_pairs(t), 1, margin=margin)
    bq = np.array([[*p, *q] for p, q in poses], float).reshape(1, -1, 7)
    pipe.collide(wp.array(bq, dtype=wp.transformd))
    return pipe.numpy()[0]


def random_quats(n, seed):
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def check_invariant(c):
    for i in range(len(c["depth"])):
        assert c["point1"][i] - c["point0"][i] == pytest.approx(-c["depth"][i] * c["normal"][i], abs=TOL)


# ------------------------------------------------------------------------------ ellipsoid
AX = np.array([0.3, 0.2, 0.1])


def test_ellipsoid_on_a_plane_touches_at_its_analytic_lowest_point():
    # the lowest point of {x: |x / AX| <= 1} rotated by R along -z is R diag(AX^2) m / |diag(AX) m|,
    # m = R^T (-z): its height below the centre is |diag(AX) R^T z|
    for q in random_quats(8, 1):
        R = quat_to_matrix(q)
        m = R.T @ np.array([0.0, 0.0, -1.0])
        low = R @ (AX**2 * m / np.linalg.norm(AX * m))
        z = -low[2] - 0.003  # 3 mm into the ground
        c = collide([dict(type=SHAPE_PLANE), dict(type=SHAPE_ELLIPSOID, body=0, dims=AX)], [((0.1, 0.2, z), q)])
        assert len(c["depth"]) == 1
        assert c["depth"][0] == pytest.approx(0.003, abs=TOL)
        assert c["normal"][0] == pytest.approx([0, 0, 1], abs=TOL)
        assert c["point1"][0] == pytest.approx(np.array([0.1, 0.2, z]) + low, abs=TOL)
        check_invariant(c)


def point_ellipsoid_distance(p, ax):
    """Distance from an outside point p (ellipsoid frame) to the ellipsoid: the closest point
    is x_i = ax_i^2 p_i / (ax_i^2 + t) with t > 0 the root of |x / ax| = 1."""
    f = lambda t: np.sum((ax * p / (ax**2 + t)) ** 2) - 1.0  # noqa: E731
    t = brentq(f, 0.0, 10.0 * np.linalg.norm(p) * ax.max(), xtol=1e-300, rtol=1e-15, maxiter=500)
    x = ax**2 * p / (ax**2 + t)
    return float(np.linalg.norm(p - x)), x


@pytest.mark.parametrize("seed", [3, 4, 5, 6])
def test_sphere_against_an_ellipsoid_matches_the_analytic_distance(seed):
    """Off-axis, rotated, touching, apart (within the margin) and overlapping: the depth is
    r - distance(centre, ellipsoid), the normal the ellipsoid's at the closest point. The
    normal's refinement converges to ~3e-14 (its rounding, on any device); when it stopped at
    the first step that did not lower the depth in floating point, normals were 2e-8 off on
    seeds 5 and 6 on the CPU and on seed 4 on a GPU."""
    rng = np.random.default_rng(seed)
    r = 0.05
    for q in random_quats(10, seed):
        R = quat_to_matrix(q)
        u = rng.normal(size=3)
        x_s = u / np.sqrt(np.sum((u / AX) ** 2))  # a surface point
        nrm = x_s / AX**2
        nrm /= np.linalg.norm(nrm)
        gap = rng.uniform(-0.004, 0.004)
        centre = x_s + nrm * (r + gap)
        dist, x = point_ellipsoid_distance(centre, AX)
        c = collide([dict(type=SHAPE_SPHERE, body=0, dims=(r, 0, 0)), dict(type=SHAPE_ELLIPSOID, body=1, dims=AX)],
                    [(R @ centre, I), ((0, 0, 0), q)], margin=0.01)
        assert len(c["depth"]) == 1
        assert c["depth"][0] == pytest.approx(r - dist, abs=CURVED_TOL)
        assert c["normal"][0] == pytest.approx(R @ ((x - centre) / dist), abs=CURVED_TOL)
        assert c["point1"][0] == pytest.approx(R @ x, abs=CURVED_TOL)
        check_invariant(c)


# ------------------------------------------------------------------------------ cone
def test_cone_on_a_plane_standing_and_lying():
    r, h = 0.1, 0.15  # base radius, half height; apex at +h
    specs = [dict(type=SHAPE_PLANE), dict(type=SHAPE_CONE, body=0, dims=(r, h, 0.0))]
    # standing on its base, 2 mm deep: 4 rim points
    c = collide(specs, [((0, 0, h - 0.002), I)])
    assert len(c["depth"]) == 4 and c["depth"] == pytest.approx([0.002] * 4, abs=TOL)
    assert np.linalg.norm(c["point1"][:, :2], axis=1) == pytest.approx([r] * 4, abs=TOL)
    # lying on its side: the generatrix from the apex to a base rim point is on the ground
    # when the axis is tilted by the half angle atan(r / 2h) below the horizontal
    alpha = np.arctan2(r, 2 * h)
    tilt = np.pi / 2 + alpha  # rotate +z (apex) about +y down towards +x, then below it
    q = np.array([0.0, np.sin(tilt / 2), 0.0, np.cos(tilt / 2)])
    zc = h * np.sin(alpha) - 0.001  # centre height for touching, 1 mm into the ground
    c = collide(specs, [((0, 0, zc), q)])
    apex = quat_to_matrix(q) @ np.array([0, 0, h]) + (0, 0, zc)
    rim = quat_to_matrix(q) @ np.array([r, 0, -h]) + (0, 0, zc)
    assert len(c["depth"]) == 2
    assert c["depth"] == pytest.approx([0.001, 0.001], abs=TOL)
    found = sorted(map(tuple, np.round(c["point1"], 9)))
    assert np.array(found) == pytest.approx(np.array(sorted([tuple(apex), tuple(rim)])), abs=1e-9)


@pytest.mark.parametrize("where", ["side", "apex", "base"])
def test_sphere_against_a_cone(where):
    """Distance from the sphere's centre to the cone's profile in the axial half-plane: the
    slant segment from the rim (R, -h) to the apex (0, h), or the base."""
    R, h, r = 0.1, 0.15, 0.04
    slant = np.array([-R, 2 * h]) / np.hypot(R, 2 * h)
    out = np.array([2 * h, R]) / np.hypot(R, 2 * h)  # outward normal of the slant side
    gap = -0.002
    if where == "side":
        foot = np.array([R, -h]) + 0.4 * np.hypot(R, 2 * h) * slant
        p2, n2 = foot + out * (r + gap), out
    elif where == "apex":
        d = np.array([0.3, 1.0]) / np.hypot(0.3, 1.0)  # between the slant normal and the axis
        foot, p2, n2 = np.array([0.0, h]), np.array([0.0, h]) + d * (r + gap), d
    else:
        foot = np.array([0.05, -h])
        p2, n2 = foot + np.array([0.0, -1.0]) * (r + gap), np.array([0.0, -1.0])
    phi = 0.7  # azimuth of the axial half-plane
    e = np.array([np.cos(phi), np.sin(phi), 0.0])
    to3 = lambda v: e * v[0] + np.array([0, 0, 1.0]) * v[1]  # noqa: E731
    q = np.array([0.3, -0.2, 0.1, 0.9])
    q /= np.linalg.norm(q)
    Rm = quat_to_matrix(q)
    c = collide([dict(type=SHAPE_SPHERE, body=0, dims=(r, 0, 0)), dict(type=SHAPE_CONE, body=1, dims=(R, h, 0.0))],
                [(Rm @ to3(p2), I), ((0, 0, 0), q)], margin=0.01)
    assert len(c["depth"]) == 1
    assert c["depth"][0] == pytest.approx(-gap, abs=CURVED_TOL)
    # on the slant side M is a ruled surface (flat along the generatrix), where the Newton
    # refinement stops and MPR's portal normal stands: measured 3e-8 off; the depth is
    # second order in that angle
    tol = 1e-7 if where == "side" else CURVED_TOL
    assert c["normal"][0] == pytest.approx(-(Rm @ to3(n2)), abs=tol)
    assert c["point1"][0] == pytest.approx(Rm @ to3(foot), abs=tol)
    check_invariant(c)


# ------------------------------------------------------------------------------ triangle meshes
def grid_mesh(f, n=8, half=1.0):
    """A heightfield z = f(x, y) on an n x n grid of squares, two triangles each."""
    xs = np.linspace(-half, half, n + 1)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    verts = np.stack([X.ravel(), Y.ravel(), f(X, Y).ravel()], axis=1)
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    tris = []
    for i in range(n):
        for j in range(n):
            a, b, c, d = idx[i, j], idx[i + 1, j], idx[i + 1, j + 1], idx[i, j + 1]
            tris += [(a, b, c), (a, c, d)]
    return verts, np.array(tris)


def test_sphere_on_a_flat_mesh_face_edge_and_vertex_gives_one_contact():
    verts, tris = grid_mesh(lambda x, y: 0.0 * x)
    r = 0.1
    for xy in [(0.13, 0.41), (0.25, 0.3), (0.25, 0.25), (0.0, 0.0)]:  # face, edge, diagonal, vertex
        c = collide([dict(type=SHAPE_SPHERE, body=0, dims=(r, 0, 0)), dict(type=SHAPE_MESH, verts=verts, tris=tris)],
                    [((*xy, r - 0.002), I)])
        deep = c["depth"] > 0  # neighbouring triangles may add gaps within the margin (none here)
        assert deep.sum() == 1, xy
        assert c["depth"][deep][0] == pytest.approx(0.002, abs=TOL)
        assert c["normal"][deep][0] == pytest.approx([0, 0, -1], abs=TOL)
        assert c["point1"][deep][0] == pytest.approx([*xy, 0.0], abs=TOL)
        check_invariant(c)


def test_sphere_in_a_v_valley_touches_both_slopes():
    """A non-convex terrain z = s |x|: a sphere above the valley touches both slopes at the
    feet of the perpendiculars from its centre."""
    s = 0.5
    verts, tris = grid_mesh(lambda x, y: s * np.abs(x))
    r = 0.1
    zc = r * np.sqrt(1 + s * s) - 0.001  # touching height r / cos(atan s), 1 mm lower
    c = collide([dict(type=SHAPE_SPHERE, body=0, dims=(r, 0, 0)), dict(type=SHAPE_MESH, verts=verts, tris=tris)],
                [((0.0, 0.13, zc), I)])
    deep = c["depth"] > 0
    assert deep.sum() == 2
    depth = r - zc / np.sqrt(1 + s * s)  # r - distance from the centre to each slope plane
    assert c["depth"][deep] == pytest.approx([depth, depth], abs=TOL)
    n = np.array([s, 0.0, -1.0]) / np.sqrt(1 + s * s)  # from the sphere into the +x slope
    got = sorted(map(tuple, np.round(c["normal"][deep], 12)))
    assert np.array(got) == pytest.approx(np.array(sorted([tuple(n * (-1, 1, 1)), tuple(n)])), abs=TOL)
    check_invariant(c)


def test_box_on_a_mesh_rests_on_its_four_corners_and_contacts_are_capped():
    verts, tris = grid_mesh(lambda x, y: 0.0 * x, n=2)  # squares of 1 m: the box spans two triangles
    h = np.array([0.2, 0.15, 0.1])
    c = collide([dict(type=SHAPE_BOX, body=0, dims=h), dict(type=SHAPE_MESH, verts=verts, tris=tris)],
                [((0.3, 0.3, 0.1 - 0.001), I)])
    assert len(c["depth"]) <= MESH_PAIR_CONTACTS
    assert np.all(np.abs(c["depth"] - 0.001) < TOL)
    corners = {(round(0.3 + sx * 0.2, 9), round(0.3 + sy * 0.15, 9)) for sx in (-1, 1) for sy in (-1, 1)}
    assert corners <= {(round(p[0], 9), round(p[1], 9)) for p in c["point1"]}
    check_invariant(c)


def test_mesh_against_a_plane_is_named_once_and_never_collides(caplog):
    verts, tris = grid_mesh(lambda x, y: 0.0 * x, n=1)
    t = table_from_specs([dict(type=SHAPE_PLANE, body=0, path="/ground"), dict(type=SHAPE_MESH, verts=verts, tris=tris,
                                                                               path="/terrain")])
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        assert len(candidate_pairs(t)) == 0
    assert "/ground / /terrain" in caplog.text and "never collides" in caplog.text


# ------------------------------------------------------------------------------ resting in the solver
from pxr import Gf, Usd, UsdGeom, UsdPhysics  # noqa: E402

from usdphys.simulate import simulate  # noqa: E402
from usdphys.solver.contact import ContactOptions  # noqa: E402

G = 9.81
# The position pass leaves penetration up to its slop alone; a body at rest sits within it.
SLOP = ContactOptions().slop


def new_stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/World/Scene").CreateGravityMagnitudeAttr(G)
    return stage


def ground_plane(stage):
    UsdPhysics.CollisionAPI.Apply(UsdGeom.Plane.Define(stage, "/World/ground").GetPrim())


def rigid(stage, path, pos, rot_xyz=(0, 0, 0)):
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp().Set(Gf.Vec3d(*pos))
    xf.AddRotateXYZOp().Set(Gf.Vec3d(*rot_xyz))
    UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
    return xf


def static_mesh(stage, path, verts, tris):
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr([Gf.Vec3f(*map(float, p)) for p in verts])
    mesh.CreateFaceVertexCountsAttr([3] * len(tris))
    mesh.CreateFaceVertexIndicesAttr([int(i) for i in np.asarray(tris).ravel()])
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    return mesh


def settle(stage, duration):
    """Final positions and orientations of world 0, in the order the bodies' paths sort."""
    res = simulate(stage, duration=duration, dt=1e-3, fps=50)
    order = np.argsort(res.body_paths)
    return res.positions[-1, 0][order], res.orientations[-1, 0][order]


def test_ellipsoid_from_a_scaled_sphere_rests_on_its_shortest_semi_axis():
    """An MJCF ellipsoid as mujoco-usd-converter writes it: a Sphere under a non-uniform scale,
    here with its shortest axis along the prim's X and the body turned so that X is vertical;
    dropped from 1 cm it comes to rest with its centre at the semi-axis height."""
    stage = new_stage()
    ground_plane(stage)
    rigid(stage, "/World/egg", (0.1, -0.2, 0.05 + 0.01), rot_xyz=(0, 90, 0))
    s = UsdGeom.Sphere.Define(stage, "/World/egg/shape")
    s.CreateRadiusAttr(0.1)
    s.AddScaleOp().Set(Gf.Vec3f(0.5, 1.5, 2.0))  # semi-axes 5, 15, 20 cm
    UsdPhysics.CollisionAPI.Apply(s.GetPrim())
    pos, _rot = settle(stage, 0.5)
    assert pos[0][2] == pytest.approx(0.05, abs=SLOP)
    assert pos[0][:2] == pytest.approx([0.1, -0.2], abs=1e-9)  # a symmetric landing: no drift


def test_cone_rests_on_its_base_and_on_its_side():
    h, r = 0.3, 0.1
    alpha = np.arctan2(r, h)  # half angle
    stage = new_stage()
    ground_plane(stage)
    for name, x, z, tilt in (("a_standing", 0.0, h / 2 + 0.005, 0.0),
                             ("b_lying", 1.0, h / 2 * np.sin(alpha) + 0.005, 90.0 + np.degrees(alpha))):
        c = UsdGeom.Cone.Define(stage, f"/World/{name}")
        c.AddTranslateOp().Set(Gf.Vec3d(x, 0, z))
        c.AddRotateXYZOp().Set(Gf.Vec3d(0, tilt, 0))
        c.CreateRadiusAttr(r)
        c.CreateHeightAttr(h)
        UsdPhysics.RigidBodyAPI.Apply(c.GetPrim())
        UsdPhysics.CollisionAPI.Apply(c.GetPrim())
    pos, rot = settle(stage, 0.5)
    # standing: the shape's centre (mid-axis) at h / 2; lying on a generatrix: at
    # (h / 2) sin(alpha), the axis alpha below the horizontal, the apex on the ground
    assert pos[0][2] == pytest.approx(h / 2, abs=SLOP)
    assert pos[1][2] == pytest.approx(h / 2 * np.sin(alpha), abs=SLOP)
    axis = quat_to_matrix(rot[1]) @ np.array([0, 0, 1.0])
    assert np.arcsin(-axis[2]) == pytest.approx(alpha, abs=SLOP / (h / 2))
    apex = pos[1] + axis * h / 2
    assert apex[2] == pytest.approx(0.0, abs=SLOP)


def bowl_mesh(Rb, nseg, nring):
    """A hemisphere of radius Rb below the origin in rings of nseg vertices; a fan of nseg
    triangles around the bottom vertex."""
    verts = [(0.0, 0.0, -Rb)]
    for i in range(1, nring + 1):
        th = np.pi / 2 * i / nring
        verts += [(Rb * np.sin(th) * np.cos(2 * np.pi * k / nseg), Rb * np.sin(th) * np.sin(2 * np.pi * k / nseg),
                   -Rb * np.cos(th)) for k in range(nseg)]
    tris = [(0, 1 + k, 1 + (k + 1) % nseg) for k in range(nseg)]
    for i in range(nring - 1):
        a, b = 1 + i * nseg, 1 + (i + 1) * nseg
        for k in range(nseg):
            k1 = (k + 1) % nseg
            tris += [(a + k, b + k, b + k1), (a + k, b + k1, a + k1)]
    return np.array(verts), np.array(tris)


def test_sphere_rests_in_a_bowl_at_the_analytic_height():
    """A bowl of triangles (a static mesh, one collider, not convex from the sphere's side):
    a hemisphere of radius Rb tessellated in rings; a ball of radius r dropped on the axis
    rests on the fan around the bottom vertex, where its centre is r from each fan plane."""
    Rb, r, nseg, nring = 0.5, 0.1, 8, 8  # 8 fan faces: all kept (MESH_PAIR_CONTACTS), symmetric
    verts, tris = bowl_mesh(Rb, nseg, nring)
    stage = new_stage()
    static_mesh(stage, "/World/bowl", verts, tris)
    rigid(stage, "/World/ball", (0.0, 0.0, -Rb + r + 0.05))
    ball = UsdGeom.Sphere.Define(stage, "/World/ball/shape")
    ball.CreateRadiusAttr(r)
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    # the fan plane through the bottom vertex and two first-ring vertices; the centre on the
    # axis at height z is at distance (z - z0) n_z from it: z = z0 + r / n_z
    p0, p1, p2 = verts[0], verts[1], verts[2]
    n = np.cross(p1 - p0, p2 - p0)
    n /= np.linalg.norm(n)
    z_expected = -Rb + r / abs(n[2])
    # the touching point lies inside the fan triangle (else the answer would be another face)
    foot = np.array([0, 0, z_expected]) - r * n * np.sign(n[2])
    assert np.hypot(*foot[:2]) < Rb * np.sin(np.pi / 2 / nring) * np.cos(np.pi / nseg)
    pos, _rot = settle(stage, 0.6)
    # Gauss-Seidel visits the 8 equal contacts in turn, symmetric only to its tolerance
    # (1e-9 m/s): the ball wanders by ~1e-7 m in 0.6 s (measured); the bowl's walls would
    # bring it back, a sideways fault of the mesh contacts would not stay this small
    assert pos[0][:2] == pytest.approx([0, 0], abs=1e-6)
    assert pos[0][2] == pytest.approx(z_expected, abs=SLOP)
    # a smooth bowl would hold it at -Rb + r; the tessellation lifts it by less than a sagitta
    assert 0 <= pos[0][2] - (-Rb + r) < Rb * (1 - np.cos(np.pi / 2 / nring))


def test_sphere_dropped_on_a_valley_terrain_comes_to_rest_in_the_valley():
    """Non-convex terrain z = s |x| (a static heightfield mesh): the ball lands over the valley
    line and rests on both slopes, its centre r / cos(atan s) above the valley floor."""
    s = 0.5
    verts, tris = grid_mesh(lambda x, y: s * np.abs(x), n=6)
    stage = new_stage()
    static_mesh(stage, "/World/terrain", verts, tris)
    r = 0.1
    rigid(stage, "/World/ball", (0.0, 0.21, 0.3))
    ball = UsdGeom.Sphere.Define(stage, "/World/ball/shape")
    ball.CreateRadiusAttr(r)
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    pos, _rot = settle(stage, 0.6)
    assert pos[0][0] == pytest.approx(0.0, abs=1e-9)
    assert pos[0][1] == pytest.approx(0.21, abs=1e-9)
    assert pos[0][2] == pytest.approx(r * np.sqrt(1 + s * s), abs=SLOP)


# ------------------------------------------------------------------------------ tumbling onto things
from usdphys.solver import Solver  # noqa: E402
from usdphys.solver.contact import _com_table, contact_pairs  # noqa: E402
from usdphys.types.model import Model  # noqa: E402

NEW_SHAPES = {
    "ellipsoid": dict(type=SHAPE_ELLIPSOID, dims=(0.12, 0.08, 0.05)),
    "cone": dict(type=SHAPE_CONE, dims=(0.08, 0.1, 0.0)),
    "frustum": dict(type=SHAPE_CONE, dims=(0.08, 0.1, 0.04)),
}


@pytest.mark.parametrize("lower", ["plane", "box", "terrain"])
@pytest.mark.parametrize("upper", list(NEW_SHAPES))
def test_new_shapes_dropped_tumbling_keep_apart(upper, lower):
    """As test_contact.py's every-pair test: dropped tilted and spinning onto a plane, a
    static box or a bumpy static mesh; no overlap beyond 1 mm once down (the requirement),
    2.5 mm while tumbling (one step's approach, v h)."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -G])
    specs = []
    if lower == "plane":
        specs.append(dict(type=SHAPE_PLANE))
    elif lower == "box":
        specs.append(dict(type=SHAPE_BOX, dims=(0.5, 0.5, 0.1), pos=(0, 0, -0.1)))
    else:
        verts, tris = grid_mesh(lambda x, y: 0.03 * np.sin(5 * x) * np.cos(4 * y), n=10, half=0.6)
        specs.append(dict(type=SHAPE_MESH, verts=verts, tris=tris))
    q = np.array([0.2, 0.2, 0.0, 1.0])
    q /= np.linalg.norm(q)
    b = m.add_body("/upper", 1.0, [0.004] * 3, pos=[0.02, 0.01, 0.3], rot=q, ang_vel=[0, 0, 3.0])
    specs.append(dict(body=b, static_friction=0.6, dynamic_friction=0.6, **NEW_SHAPES[upper]))
    m.shapes = table_from_specs(specs)
    run = Solver(m, "cpu").run(600, 1, 1e-3)
    # margin 1 mm: a body resting within the slop is seen touching (gaps count as negative depth)
    pipe = CollisionPipeline(_com_table(m.shapes, m), contact_pairs(m, m.shapes), run.pos.shape[0], margin=1e-3)
    q7 = np.concatenate([run.pos[:, 0], run.rot[:, 0]], axis=-1)
    pipe.collide(wp.array(q7, dtype=wp.transformd))
    depth = np.array([float(c["depth"].max()) if len(c["depth"]) else 0.0 for c in pipe.numpy()])
    assert np.all(np.isfinite(run.pos))
    assert depth[-100:].max() < 1e-3, depth[-100:].max()
    assert depth.max() < 2.5e-3, depth.max()
    final = pipe.numpy()[-1]
    assert len(final["depth"]) >= 1  # it came down and rests on the lower shape


def test_large_hull_support_walk_finds_the_lowest_vertex():
    """A hull of 300 vertices (above HULL_WALK_MIN_VERTS: its support function walks the
    hull's edges instead of scanning) pressed into a box's top face: the depth is the box
    top minus the lowest vertex, for any orientation (the Minkowski face is flat: exact)."""
    from usdphys.solver.narrowphase import HULL_WALK_MIN_VERTS, hull_walk_data

    rng = np.random.default_rng(5)
    u = rng.normal(size=(300, 3))
    verts = u / np.linalg.norm(u, axis=1, keepdims=True) * np.array([0.1, 0.07, 0.05])
    specs = [dict(type=SHAPE_BOX, dims=(0.5, 0.5, 0.1), pos=(0, 0, -0.1)),
             dict(type=SHAPE_CONVEX, body=0, verts=verts)]
    walk_from, _start, adj = hull_walk_data(table_from_specs(specs))
    assert len(verts) > HULL_WALK_MIN_VERTS and walk_from[1] >= 0 and len(adj) > 0
    for q in random_quats(6, 11):
        low = (verts @ quat_to_matrix(q).T)[:, 2].min()
        c = collide(specs, [((0.03, -0.02, -low - 0.002), q)])
        assert c["depth"].max() == pytest.approx(0.002, abs=TOL)
        check_invariant(c)


def test_ellipsoid_collider_density_gives_the_ellipsoid_mass_and_inertia():
    """usd-core's sphere desc takes the largest scale as the radius; the body's mass from the
    collider density must be the ellipsoid's: m = rho 4/3 pi a b c, moments m/5 (b^2 + c^2) ..."""
    from usdphys.usd.reader import read_stage

    stage = new_stage()
    rigid(stage, "/World/egg", (0, 0, 1), rot_xyz=(10, 20, 30))
    s = UsdGeom.Sphere.Define(stage, "/World/egg/shape")
    s.CreateRadiusAttr(0.1)
    s.AddScaleOp().Set(Gf.Vec3f(1, 2, 3))
    UsdPhysics.CollisionAPI.Apply(s.GetPrim())
    UsdPhysics.MassAPI.Apply(s.GetPrim()).CreateDensityAttr(500.0)
    model = read_stage(stage)[0]
    a, b, c = 0.1, 0.2, 0.3
    m = 500.0 * 4.0 / 3.0 * np.pi * a * b * c
    assert model.body_mass[0] == pytest.approx(m, rel=1e-12)
    expected = np.sort(m / 5.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b]))
    assert np.sort(model.body_inertia[0]) == pytest.approx(expected, rel=1e-9)


def test_frustum_collider_density_gives_the_frustum_mass():
    """A Cylinder_1 with unequal radii collides as a frustum and weighs as one:
    m = rho pi H (R^2 + R r + r^2) / 3, its centre of mass H (R^2 + 2 R r + 3 r^2) /
    (4 (R^2 + R r + r^2)) above the base (towards the small end)."""
    from usdphys.usd.reader import read_stage

    stage = new_stage()
    rigid(stage, "/World/cup", (0, 0, 1))
    f = UsdGeom.Cylinder_1.Define(stage, "/World/cup/shape")
    R, r, H = 0.04, 0.01, 0.06
    f.CreateRadiusBottomAttr(R)
    f.CreateRadiusTopAttr(r)
    f.CreateHeightAttr(H)
    UsdPhysics.CollisionAPI.Apply(f.GetPrim())
    UsdPhysics.MassAPI.Apply(f.GetPrim()).CreateDensityAttr(800.0)
    model = read_stage(stage)[0]
    s2 = R * R + R * r + r * r
    # usd-core's shape descriptors carry the radii and height as float32: 1e-7 relative
    assert model.body_mass[0] == pytest.approx(800.0 * np.pi * H * s2 / 3.0, rel=1e-6)
    zc = H * (R * R + 2 * R * r + 3 * r * r) / (4 * s2) - H / 2  # about the shape's centre
    assert model.body_com_pos[0] == pytest.approx([0, 0, zc], abs=1e-8)  # in the body frame


def test_ball_rolling_over_a_fine_flat_mesh_moves_as_on_a_plane():
    """A ball rolling across a mesh of 4 cm triangles, and across the edges between them,
    must move exactly as on a plane: no bump at an edge (the neighbours' edges are not
    contacts, sphere_local_min), the same rolling path."""
    verts, tris = grid_mesh(lambda x, y: 0.0 * x, n=50, half=1.0)
    runs = []
    for ground in (dict(type=SHAPE_PLANE), dict(type=SHAPE_MESH, verts=verts, tris=tris)):
        m = Model()
        m.gravity = np.array([0.0, 0.0, -G])
        b = m.add_body("/ball", 1.0, [0.004] * 3, pos=[-0.6, -0.2, 0.1], lin_vel=[1.5, 0.4, 0.0])
        m.shapes = table_from_specs([ground, dict(type=SHAPE_SPHERE, body=b, dims=(0.1, 0, 0))])
        runs.append(Solver(m, "cpu").run(500, 1, 1e-3).pos[:, 0, 0])
    plane, mesh = runs
    assert np.abs(mesh[:, 2] - 0.1).max() < 1e-9  # measured 0 (without the filter: 9e-6 m bumps)
    assert np.abs(mesh - plane).max() < 1e-9


def test_the_gpus_reopened_mesh_query_changes_nothing_on_the_cpu():
    """On CUDA every mesh query of a thread runs on one shared-memory stack, so convex_mesh opens
    its triangle query again after the one nested in the local-minimum check
    (ShapeData.reopen_queries; without it an H200 found 2 of the bowl's 8 contacts). CI has no
    GPU: run that path on the CPU, where each query has its own stack and it must change nothing,
    bit for bit. A ball dropped into a tessellated bowl (8 triangles touching at once) and a ball
    rolling over a wavy 50 x 50 grid."""
    bowl_v, bowl_t = bowl_mesh(0.5, 8, 8)
    wavy_v, wavy_t = grid_mesh(lambda x, y: 0.05 * np.sin(3 * x) * np.cos(2 * y), n=50, half=1.0)
    for verts, tris, pos, vel, steps, touching in ((bowl_v, bowl_t, [0, 0, -0.35], [0.02, 0.01, 0], 300, 8),
                                                   (wavy_v, wavy_t, [-0.6, -0.2, 0.2], [1.5, 0.4, 0], 400, 1)):
        m = Model()
        m.gravity = np.array([0.0, 0.0, -G])
        b = m.add_body("/ball", 1.0, [0.004] * 3, pos=pos, lin_vel=vel)
        m.shapes = table_from_specs([dict(type=SHAPE_MESH, verts=verts, tris=tris),
                                     dict(type=SHAPE_SPHERE, body=b, dims=(0.1, 0, 0))])
        runs = []
        for reopen in (0, 1):
            solver = Solver(m, "cpu")
            assert solver.cm.shapes.reopen_queries == 0  # the CPU's own default
            solver.cm.shapes.reopen_queries = reopen
            out = solver.run(steps, 1, 1e-3)
            runs.append((out.pos, out.rot, int(solver.cs.prev_count.numpy()[0])))
        np.testing.assert_array_equal(runs[1][0], runs[0][0])
        np.testing.assert_array_equal(runs[1][1], runs[0][1])
        assert runs[0][2] >= touching  # the contacts the reopened query must not lose
