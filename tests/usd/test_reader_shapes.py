"""Collision shapes read from in-memory USD stages: poses through nested scaled xforms,
units, materials, filtering, errors and warnings; then end to end through the narrow phase."""
import logging

import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.types.shapes import (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CONVEX, SHAPE_CYLINDER, SHAPE_ELLIPSOID,
                                  SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE)
from usdphys.solver.broadphase import candidate_pairs
from usdphys.usd.reader.shapes import read_shapes
from usdphys.math3d import rigid_frame
from usdphys.solver.narrowphase import CollisionPipeline
from usdphys.math3d import quat_from_matrix, quat_to_matrix
from usdphys.errors import UsdphysError

# Poses go through float USD attributes (xformOp values are authored as double here, but
# scale/rotation compose in double); 1e-9 m covers the composition round-off.
TOL = 1e-9


def new_stage(mpu=1.0, kpu=1.0):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdPhysics.SetStageKilogramsPerUnit(stage, kpu)
    UsdPhysics.Scene.Define(stage, "/World/Scene")
    return stage


def xform(stage, path, t=(0, 0, 0), rot_xyz=None, scale=None, typ=UsdGeom.Xform):
    prim = typ.Define(stage, path)
    api = UsdGeom.Xformable(prim)
    api.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*t))
    if rot_xyz is not None:
        api.AddRotateXYZOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*rot_xyz))
    if scale is not None:
        api.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*scale))
    return prim


def collider(prim):
    UsdPhysics.CollisionAPI.Apply(prim.GetPrim())
    return prim


def body(prim):
    UsdPhysics.RigidBodyAPI.Apply(prim.GetPrim())
    return prim


def body_lookup(stage):
    paths = [str(p.GetPath()) for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    return paths, (lambda path: paths.index(path) if path in paths else -1)


def body_poses(stage, paths, mpu):
    cache = UsdGeom.XformCache()
    out = np.zeros((1, max(1, len(paths)), 7))
    out[..., 6] = 1
    for i, p in enumerate(paths):
        m = rigid_frame(cache.GetLocalToWorldTransform(stage.GetPrimAtPath(p)))
        out[0, i, :3] = m[3, :3] * mpu
        out[0, i, 3:] = quat_from_matrix(m[:3, :3].T)
    return out


def world_pose(table, s, poses):
    """Shape frame in world from table + body poses, via Warp's transform algebra."""
    b = table.body[s]
    local = wp.transformd(wp.vec3d(*table.local_pos[s]), wp.quatd(*table.local_rot[s]))
    if b < 0:
        x = local
    else:
        bp = poses[0, b]
        x = wp.transform_multiply(wp.transformd(wp.vec3d(*bp[:3]), wp.quatd(*bp[3:])), local)
    p = np.array(wp.transform_get_translation(x))
    q = wp.transform_get_rotation(x)
    axes = np.array([wp.quat_rotate(q, wp.vec3d(*e)) for e in np.eye(3)])  # rows: shape x, y, z
    return p, axes


def test_nested_scaled_xforms_units_and_canonical_axes():
    stage = new_stage(mpu=0.01)  # centimetres
    b = body(xform(stage, "/World/Body", t=(100, 20, 0), rot_xyz=(0, 0, 90)))
    xform(stage, "/World/Body/Offset", t=(0, 0, 50), rot_xyz=(30, 0, 0), scale=(2, 2, 2))
    s = collider(UsdGeom.Sphere.Define(stage, "/World/Body/Offset/Ball"))
    s.GetRadiusAttr().Set(10.0)
    c = collider(xform(stage, "/World/Body/Offset/Box", t=(5, 0, 0), scale=(1, 2, 3), typ=UsdGeom.Cube))
    c.GetSizeAttr().Set(4.0)
    cap = collider(xform(stage, "/World/Body/Cap", t=(0, 10, 0), scale=(3, 2, 2), typ=UsdGeom.Capsule))
    cap.GetAxisAttr().Set("X")
    cap.GetRadiusAttr().Set(5.0)
    cap.GetHeightAttr().Set(20.0)
    cyl = collider(xform(stage, "/World/Body/Cyl", t=(0, 0, -10), rot_xyz=(0, 90, 0), typ=UsdGeom.Cylinder))
    cyl.GetAxisAttr().Set("Y")
    cyl.GetRadiusAttr().Set(3.0)
    cyl.GetHeightAttr().Set(8.0)
    ground = collider(xform(stage, "/World/Ground", t=(0, 0, -7), typ=UsdGeom.Plane))
    ground.GetAxisAttr().Set("Z")
    paths, lookup = body_lookup(stage)
    t = read_shapes(stage, lookup)
    assert t.paths == ["/World/Body/Offset/Ball", "/World/Body/Offset/Box", "/World/Body/Cap", "/World/Body/Cyl",
                       "/World/Ground"]
    assert t.type.tolist() == [SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_PLANE]
    assert t.body.tolist() == [0, 0, 0, 0, -1]
    assert t.dims[0] == pytest.approx([0.2, 0, 0], abs=TOL)  # 10 cm * 2
    assert t.dims[1] == pytest.approx([0.04, 0.08, 0.12], abs=TOL)  # 2 cm * (1,2,3) * 2
    assert t.dims[2] == pytest.approx([0.10, 0.30, 0], abs=TOL)  # r 5*2 cm, half 10*3 cm
    assert t.dims[3] == pytest.approx([0.03, 0.04, 0], abs=TOL)
    assert t.bound_radius[1] == pytest.approx(np.linalg.norm([0.04, 0.08, 0.12]))
    poses = body_poses(stage, paths, 0.01)
    cache = UsdGeom.XformCache()
    for s_idx, path in enumerate(t.paths):
        m = np.array(cache.GetLocalToWorldTransform(stage.GetPrimAtPath(path)))
        p, axes = world_pose(t, s_idx, poses)
        assert p == pytest.approx(m[3, :3] * 0.01, abs=TOL), path
        rows = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=1)[:, None]
        principal = {SHAPE_CAPSULE: 0, SHAPE_CYLINDER: 1}.get(int(t.type[s_idx]), 2)
        # canonical +Z is the USD axis of the shape (capsule X, cylinder Y, others Z)
        assert abs(np.dot(axes[2], rows[principal])) == pytest.approx(1.0, abs=TOL), path
    # the plane's normal is world +Z, at z = -7 cm
    p, axes = world_pose(t, 4, poses)
    assert axes[2] == pytest.approx([0, 0, 1], abs=TOL) and p[2] == pytest.approx(-0.07)


def test_sphere_under_any_scale_is_an_ellipsoid():
    # mujoco-usd-converter writes an MJCF ellipsoid as a Sphere under a non-uniform scale; a
    # non-uniform scale above a rotation (shear) still maps a sphere to an ellipsoid
    stage = new_stage(mpu=0.01)
    body(xform(stage, "/B"))
    egg = collider(xform(stage, "/B/Egg", scale=(1, 1, 2), typ=UsdGeom.Sphere))
    egg.GetRadiusAttr().Set(10.0)
    xform(stage, "/B/Squash", scale=(1, 3, 1))
    collider(xform(stage, "/B/Squash/Ball", rot_xyz=(0, 0, 30), typ=UsdGeom.Sphere))
    t = read_shapes(stage, body_lookup(stage)[1])
    assert t.type.tolist() == [SHAPE_ELLIPSOID, SHAPE_ELLIPSOID]
    axes = np.sort(t.dims[0])
    assert axes == pytest.approx([0.1, 0.1, 0.2], abs=TOL)
    # the sheared one: the image of the unit sphere under the prim's linear map a (rows =
    # local axes' images): its semi-axes are a's singular values, along the rotated axes
    m = np.array(UsdGeom.XformCache().GetLocalToWorldTransform(stage.GetPrimAtPath("/B/Squash/Ball")))[:3, :3]
    sv = np.linalg.svd(m, compute_uv=False) * 0.01
    assert np.sort(t.dims[1]) == pytest.approx(np.sort(sv), abs=TOL)
    rot = quat_to_matrix(t.local_rot[1])
    # every surface point of the ellipsoid is the image of a unit-sphere point
    u = np.random.default_rng(1).normal(size=(50, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    surf = (u * t.dims[1]) @ rot.T  # ellipsoid points in the body frame
    back = np.linalg.solve(m.T * 0.01, surf.T).T  # preimages under x -> x a
    assert np.linalg.norm(back, axis=1) == pytest.approx(np.ones(50), abs=1e-9)


def test_scale_the_shape_cannot_take_is_an_error_naming_the_prim():
    stage = new_stage()
    body(xform(stage, "/B"))
    collider(xform(stage, "/B/Oval", scale=(1, 2, 1), typ=UsdGeom.Cylinder))  # axis Z, radial x != y
    with pytest.raises(UsdphysError, match="/B/Oval.*equal scale across its axis"):
        read_shapes(stage, body_lookup(stage)[1])
    stage = new_stage()
    body(xform(stage, "/B"))
    xform(stage, "/B/Squash", scale=(1, 3, 1))
    collider(xform(stage, "/B/Squash/Box", rot_xyz=(0, 0, 30), typ=UsdGeom.Cube))  # sheared
    with pytest.raises(UsdphysError, match="/B/Squash/Box.*sheared"):
        read_shapes(stage, body_lookup(stage)[1])


def test_mirror_scale_and_mesh_hull_and_unsupported_warning(caplog):
    stage = new_stage()
    body(xform(stage, "/B", t=(1, 0, 0)))
    collider(xform(stage, "/B/Flip", scale=(-1, 1, 1), typ=UsdGeom.Cube))  # mirrored box: still a box
    mesh = UsdGeom.Mesh.Define(stage, "/B/Hull")
    xform_api = UsdGeom.Xformable(mesh)
    xform_api.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(0.001, 0.001, 0.002))  # mm mesh
    pts = [(x, y, z) for x in (-100, 100) for y in (-100, 100) for z in (0, 200)] + [(0, 0, 100)]
    mesh.GetPointsAttr().Set([Gf.Vec3f(*p) for p in pts])
    collider(mesh)
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).GetApproximationAttr().Set("convexHull")
    collider(UsdGeom.Capsule_1.Define(stage, "/B/Taper")).GetRadiusTopAttr().Set(0.2)
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        t = read_shapes(stage, body_lookup(stage)[1])
    assert "/B/Taper" in caplog.text and "tapered capsule" in caplog.text
    assert t.paths == ["/B/Flip", "/B/Hull"]
    assert t.dims[0] == pytest.approx([1, 1, 1])
    # scale (-1, 1, 1): the mirrored axis is flipped back (a box is symmetric), no rotation
    assert t.local_rot[0] == pytest.approx([0, 0, 0, 1]) and t.local_pos[0] == pytest.approx([0, 0, 0])
    # the hull is built once: the centre point (0, 0, 100) is inside and dropped
    assert t.type[1] == SHAPE_CONVEX and t.vert_count[1] == 8
    v = t.verts[t.vert_start[1]: t.vert_start[1] + 8] + t.local_pos[1]
    assert v.min(axis=0) == pytest.approx([-0.1, -0.1, 0.0]) and v.max(axis=0) == pytest.approx([0.1, 0.1, 0.4])
    # mesh without approximation (triangle mesh): warned, collides as its hull
    stage2 = new_stage()
    m2 = UsdGeom.Mesh.Define(stage2, "/Ground")
    m2.GetPointsAttr().Set([Gf.Vec3f(*p) for p in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]])
    collider(m2)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        t2 = read_shapes(stage2, lambda p: -1)
    assert "/Ground" in caplog.text and "convex hull" in caplog.text
    assert t2.type.tolist() == [SHAPE_CONVEX] and t2.body.tolist() == [-1]


def physics_material(stage, path, sf, df, rest, density, smc=False):
    mat = UsdShade.Material.Define(stage, path)
    api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
    api.CreateStaticFrictionAttr(sf)
    api.CreateDynamicFrictionAttr(df)
    api.CreateRestitutionAttr(rest)
    api.CreateDensityAttr(density)
    if smc:
        mat.GetPrim().AddAppliedSchema("MbdContactMaterialAPI")
        mat.GetPrim().GetAttribute("mbd:youngModulus").Set(1e5)
        mat.GetPrim().GetAttribute("mbd:normalStiffness").Set(3e4)
    return mat


def bind(prim, mat):
    UsdShade.MaterialBindingAPI.Apply(prim.GetPrim()).Bind(mat, UsdShade.Tokens.weakerThanDescendants,
                                                            "physics")


def test_materials_units_contact_radius_and_enabled():
    stage = new_stage(mpu=0.01, kpu=0.001)  # cm, g
    steel = physics_material(stage, "/Mat/Steel", 0.7, 0.6, 0.5, 7.85, smc=True)  # g/cm^3
    default = physics_material(stage, "/Mat/Default", 0.9, 0.8, 0.1, 1.0)
    bind(stage.GetPrimAtPath("/World/Scene"), default)  # scene material: the default
    b = body(xform(stage, "/B"))
    bind(b, steel)  # inherited by the colliders below
    s = collider(UsdGeom.Sphere.Define(stage, "/B/S"))
    s.GetPrim().AddAppliedSchema("MbdCollisionAPI")
    s.GetPrim().GetAttribute("mbd:contactRadius").Set(0.5)  # cm
    off = collider(UsdGeom.Cube.Define(stage, "/Static"))
    off.GetPrim().CreateAttribute("physics:collisionEnabled", Sdf.ValueTypeNames.Bool).Set(False)
    t = read_shapes(stage, body_lookup(stage)[1])
    assert t.material_paths == ["/Mat/Steel", "/Mat/Default"]
    assert t.static_friction.tolist() == pytest.approx([0.7, 0.9])
    assert t.dynamic_friction.tolist() == pytest.approx([0.6, 0.8])
    assert t.restitution.tolist() == pytest.approx([0.5, 0.1])
    assert t.density[0] == pytest.approx(7850.0)  # 7.85 g/cm^3 in kg/m^3
    assert t.young_modulus[0] == pytest.approx(1e5 * 0.001 / 0.01)  # g/(cm s^2) -> Pa
    assert t.normal_stiffness[0] == pytest.approx(3e4 * 0.001)  # g/s^2 -> N/m
    assert np.isnan(t.normal_damping[0]) and np.isnan(t.normal_stiffness[1])
    assert t.contact_radius.tolist() == pytest.approx([0.005, 0.0])
    assert t.bound_radius[0] == pytest.approx(0.01 + 0.005)
    assert t.collision_enabled.tolist() == [True, False]
    bad = physics_material(stage, "/Mat/Bad", 0.5, 0.5, 1.5, 1.0)
    bind(off, bad)
    with pytest.raises(UsdphysError, match="/Mat/Bad.*restitution"):
        read_shapes(stage, body_lookup(stage)[1])


def test_collision_groups_and_filtered_pairs():
    stage = new_stage()
    bodies = []
    for name in ("A", "B", "C", "D"):
        bodies.append(body(xform(stage, f"/{name}")))
        collider(UsdGeom.Sphere.Define(stage, f"/{name}/S"))
    g1 = UsdPhysics.CollisionGroup.Define(stage, "/G1")
    g2 = UsdPhysics.CollisionGroup.Define(stage, "/G2")
    g1.GetCollidersCollectionAPI().GetIncludesRel().AddTarget("/A")
    g2.GetCollidersCollectionAPI().GetIncludesRel().AddTarget("/B/S")
    g1.GetFilteredGroupsRel().AddTarget("/G2")
    fp = UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath("/C"))
    fp.GetFilteredPairsRel().AddTarget("/D")
    t = read_shapes(stage, body_lookup(stage)[1])
    assert t.groups == [(0,), (1,), (), ()]
    assert t.filtered_pairs == {(2, 3)}
    pairs = {tuple(p) for p in candidate_pairs(t).tolist()}
    assert pairs == {(0, 2), (0, 3), (1, 2), (1, 3)}  # A-B by groups, C-D by filtered pair
    # inverted: G1 collides ONLY with G2
    g1.GetPrim().CreateAttribute("physics:invertFilteredGroups", Sdf.ValueTypeNames.Bool).Set(True)
    t = read_shapes(stage, body_lookup(stage)[1])
    pairs = {tuple(p) for p in candidate_pairs(t).tolist()}
    assert (0, 1) in pairs and (0, 2) in pairs  # shape C is in no group: not filtered
    assert (2, 3) not in pairs


def test_box_on_ground_read_from_usd_gives_four_corner_contacts():
    stage = new_stage(mpu=0.01)
    ground = collider(UsdGeom.Plane.Define(stage, "/Ground"))
    ground.GetAxisAttr().Set("Z")
    b = body(xform(stage, "/Crate", t=(10, 20, 4.9), rot_xyz=(0, 0, 30)))
    box = collider(xform(stage, "/Crate/Geom", scale=(20, 10, 10), typ=UsdGeom.Cube))
    box.GetSizeAttr().Set(1.0)  # 20 x 10 x 10 cm, bottom 1 mm below the ground
    assert b
    paths, lookup = body_lookup(stage)
    t = read_shapes(stage, lookup)
    pipe = CollisionPipeline(t, candidate_pairs(t), 2)
    poses = np.repeat(body_poses(stage, paths, 0.01), 2, axis=0)
    pipe.collide(wp.array(poses, dtype=wp.transformd))
    for c in pipe.numpy():
        assert len(c["depth"]) == 4
        assert c["depth"] == pytest.approx(np.full(4, 0.001), abs=TOL)
        r = np.radians(30)
        ex, ey = np.array([np.cos(r), np.sin(r)]), np.array([-np.sin(r), np.cos(r)])
        corners = sorted(tuple(np.round((0.1, 0.2) + sx * 0.1 * ex + sy * 0.05 * ey, 9)) for sx in (-1, 1) for sy in (-1, 1))
        got = sorted(tuple(np.round(p[:2], 9)) for p in c["point1"])
        assert np.array(got) == pytest.approx(np.array(corners), abs=TOL)


def test_cones_and_frustums_are_colliders():
    stage = new_stage(mpu=0.01)
    body(xform(stage, "/B"))
    cone = collider(xform(stage, "/B/Cone", scale=(3, 2, 2), typ=UsdGeom.Cone))
    cone.GetAxisAttr().Set("X")  # the scale's X (3) runs along the axis
    cone.GetRadiusAttr().Set(5.0)
    cone.GetHeightAttr().Set(10.0)
    frustum = collider(UsdGeom.Cylinder_1.Define(stage, "/B/Frustum"))
    frustum.GetRadiusBottomAttr().Set(4.0)
    frustum.GetRadiusTopAttr().Set(1.0)
    frustum.GetHeightAttr().Set(6.0)
    t = read_shapes(stage, body_lookup(stage)[1])
    assert t.type.tolist() == [SHAPE_CONE, SHAPE_CONE]
    assert t.dims[0] == pytest.approx([0.10, 0.15, 0.0], abs=TOL)  # r 5 * 2 cm, half height 5 * 3 cm
    assert t.dims[1] == pytest.approx([0.04, 0.03, 0.01], abs=TOL)  # bottom, half height, top
    # the cone's canonical +Z (towards the apex) is its USD axis, X
    assert quat_to_matrix(t.local_rot[0]) @ np.array([0, 0, 1.0]) == pytest.approx([1, 0, 0], abs=TOL)
    assert t.bound_radius[0] == pytest.approx(np.hypot(0.10, 0.15))
    stage = new_stage()
    body(xform(stage, "/B"))
    collider(xform(stage, "/B/Oval", scale=(1, 2, 1), typ=UsdGeom.Cone))  # elliptic cross-section
    with pytest.raises(UsdphysError, match="/B/Oval.*equal scale across its axis"):
        read_shapes(stage, body_lookup(stage)[1])


def _grid_mesh(stage, path, n=3):
    mesh = UsdGeom.Mesh.Define(stage, path)
    pts = [(x, y, 0.1 * x * y) for x in range(n + 1) for y in range(n + 1)]
    mesh.GetPointsAttr().Set([Gf.Vec3f(*p) for p in pts])
    quads = [(i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1)
             for i in range(n) for j in range(n)]
    mesh.GetFaceVertexCountsAttr().Set([4] * len(quads))
    mesh.GetFaceVertexIndicesAttr().Set([k for q in quads for k in q])
    return collider(mesh), np.array(pts, float), quads


def test_static_triangle_mesh_is_a_true_mesh_and_a_moving_one_its_hull(caplog):
    stage = new_stage(mpu=0.5)
    xform(stage, "/Terrain", t=(1, 0, 0), scale=(2, 2, 2))
    _mesh, pts, quads = _grid_mesh(stage, "/Terrain/Ground")
    body(xform(stage, "/B", t=(0, 0, 5)))
    _grid_mesh(stage, "/B/Shell")
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        t = read_shapes(stage, body_lookup(stage)[1])
    assert t.type.tolist() == [SHAPE_MESH, SHAPE_CONVEX]
    assert "/Terrain/Ground" not in caplog.text  # a static mesh needs no excuse
    assert "/B/Shell" in caplog.text and "convex hull" in caplog.text and "moving body" in caplog.text
    # every quad fanned into two triangles; the points in world metres about the shape origin
    assert t.tri_count[0] == 2 * len(quads) and t.vert_count[0] == len(pts)
    world = t.verts[: len(pts)] + t.local_pos[0]
    assert world == pytest.approx((pts * 2 + (1, 0, 0)) * 0.5, abs=1e-6)  # float32 points
    tri = t.tris[t.tri_start[0]: t.tri_start[0] + 2]
    assert tri.tolist() == [[quads[0][0], quads[0][1], quads[0][2]], [quads[0][0], quads[0][2], quads[0][3]]]
    # the moving one: only the hull's vertices are kept (the bilinear surface's four corners
    # and the edge points that bulge out), never the whole point list scanned every step
    assert 4 <= t.vert_count[1] < len(pts)


def test_broken_mesh_faces_are_an_error_naming_the_prim():
    stage = new_stage()
    mesh, _pts, _q = _grid_mesh(stage, "/Ground")
    mesh.GetFaceVertexIndicesAttr().Set([0, 1, 99] + [0] * 33)
    with pytest.raises(UsdphysError, match="/Ground: faceVertexIndices"):
        read_shapes(stage, lambda p: -1)
    mesh.GetFaceVertexCountsAttr().Set([4, 4])
    with pytest.raises(UsdphysError, match="/Ground: faceVertexCounts"):
        read_shapes(stage, lambda p: -1)


def _l_prism(stage, path):
    """A closed L-shaped prism (the notch x > 1, y > 1 is empty), outward faces."""
    ring = [(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]
    pts = [(x, y, 0.0) for x, y in ring] + [(x, y, 1.0) for x, y in ring]
    fan = [(3, 4, 5), (3, 5, 0), (3, 0, 1), (3, 1, 2)]  # from the reflex corner (1, 1)
    faces = [(a, c, b) for a, b, c in fan] + [(a + 6, b + 6, c + 6) for a, b, c in fan]
    faces += [(i, (i + 1) % 6, (i + 1) % 6 + 6, i + 6) for i in range(6)]
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.GetPointsAttr().Set([Gf.Vec3f(*p) for p in pts])
    mesh.GetFaceVertexCountsAttr().Set([len(f) for f in faces])
    mesh.GetFaceVertexIndicesAttr().Set([k for f in faces for k in f])
    collider(mesh)
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).GetApproximationAttr().Set("convexDecomposition")
    return mesh


def test_convex_decomposition_keeps_a_notch_empty():
    pytest.importorskip("coacd")
    stage = new_stage()
    body(xform(stage, "/B"))
    _l_prism(stage, "/B/L")
    t = read_shapes(stage, body_lookup(stage)[1])
    assert len(t) >= 2 and set(t.paths) == {"/B/L"} and set(t.type.tolist()) == {SHAPE_CONVEX}
    # a small ball in the notch: its hull would hold the ball, the pieces do not touch it
    specs_ball = {"type": SHAPE_SPHERE, "body": 1, "dims": (0.1, 0, 0)}
    from usdphys.types.shapes import table_from_specs

    rows = [{"type": SHAPE_CONVEX, "body": 0, "pos": t.local_pos[s], "rot": t.local_rot[s],
             "verts": t.verts[t.vert_start[s]: t.vert_start[s] + t.vert_count[s]]} for s in range(len(t))]
    table = table_from_specs(rows + [specs_ball])
    pairs = candidate_pairs(table)
    pipe = CollisionPipeline(table, pairs, 1, margin=0.0)
    q7 = np.array([[[0, 0, 0, 0, 0, 0, 1], [1.6, 1.6, 0.5, 0, 0, 0, 1]]], float)
    pipe.collide(wp.array(q7, dtype=wp.transformd))
    # CoACD's pieces stay within its concavity threshold (0.05 of the size) of the mesh: the
    # ball (0.28 m from the notch's walls) is far outside every piece
    assert len(pipe.numpy()[0]["depth"]) == 0
    # and the ball placed in the solid part touches
    q7[0, 1, :3] = (0.5, 0.5, 0.5)
    pipe.collide(wp.array(q7, dtype=wp.transformd))
    assert len(pipe.numpy()[0]["depth"]) >= 1
