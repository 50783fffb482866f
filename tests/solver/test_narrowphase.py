"""Narrow phase against analytic geometry, in float64 on Warp's CPU backend.

Tolerances: the closed-form pair routines (plane, sphere, capsule, box) do a few dozen
double-precision operations on O(1) numbers, so results match the analytic values to
~1e-15; 1e-10 leaves room for rotation round-off and still catches any real mistake
(the smallest geometric quantity tested is 1e-3). The iterative routines have their own
tolerance, stated where they are tested.
"""
import logging

import numpy as np
import pytest
import warp as wp

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.types.shapes import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONVEX, SHAPE_CYLINDER, SHAPE_PLANE, SHAPE_SPHERE
from usdphys.solver.broadphase import candidate_pairs
from usdphys.solver.narrowphase import CollisionPipeline
from usdphys.types.shapes import table_from_specs

TOL = 1e-10


def quat(axis, deg):
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    h = np.radians(deg) / 2
    return np.array([*(a * np.sin(h)), np.cos(h)])


def qmul(q1, q2):
    x1, y1, z1, w1 = q1
    x2, y2, z2, w2 = q2
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])


def rotate(q, v):
    x, y, z, w = q
    u = np.array([x, y, z])
    v = np.asarray(v, dtype=float)
    return v + 2 * np.cross(u, np.cross(u, v) + w * v)


def collide(specs, poses, margin=0.0, worlds=1, capacity=None, pairs=None):
    """poses: list per body of (pos, quat) or list per world of such lists."""
    t = table_from_specs(specs)
    if pairs is None:
        pairs = candidate_pairs(t)
    if worlds == 1 or not isinstance(poses[0], list):
        poses = [poses] * worlds
    nb = max(1, len(poses[0]))
    bq = np.zeros((worlds, nb, 7))
    bq[..., 6] = 1.0
    for w in range(worlds):
        for b, (p, q) in enumerate(poses[w]):
            bq[w, b, :3] = p
            bq[w, b, 3:] = q
    pipe = CollisionPipeline(t, pairs, worlds, capacity=capacity, margin=margin)
    pipe.collide(wp.array(bq, dtype=wp.transformd))
    return pipe


def one(specs, poses, margin=0.0, **kw):
    return collide(specs, poses, margin, **kw).numpy()[0]


I = np.array([0.0, 0.0, 0.0, 1.0])


def check_contact(c, i, p0, p1, n, depth, tol=TOL):
    assert c["normal"][i] == pytest.approx(n, abs=tol)
    assert c["depth"][i] == pytest.approx(depth, abs=tol)
    assert c["point0"][i] == pytest.approx(p0, abs=tol)
    assert c["point1"][i] == pytest.approx(p1, abs=tol)


def sort_points(pts):
    pts = np.asarray(pts)
    return pts[np.lexsort(np.round(pts.T[::-1], 9))]


# ---------------------------------------------------------------------------------------
# spheres
# ---------------------------------------------------------------------------------------
def test_sphere_sphere_overlap_and_gap():
    specs = [dict(type=SHAPE_SPHERE, body=0, dims=(0.5, 0, 0)), dict(type=SHAPE_SPHERE, body=1, dims=(0.6, 0, 0))]
    d = np.array([1.0, 2.0, 2.0]) / 3.0
    c = one(specs, [((0.1, 0.2, 0.3), I), ((0.1, 0.2, 0.3) + 0.9 * d, I)])
    assert len(c["depth"]) == 1
    check_contact(c, 0, np.array([0.1, 0.2, 0.3]) + 0.5 * d, np.array([0.1, 0.2, 0.3]) + 0.3 * d, d, 0.2)
    assert (c["body0"][0], c["body1"][0], c["shape0"][0], c["shape1"][0]) == (0, 1, 0, 1)
    # gap 0.05: reported with margin 0.1 as depth -0.05, not reported with margin 0.01
    c = one(specs, [((0, 0, 0), I), ((1.15, 0, 0), I)], margin=0.1)
    check_contact(c, 0, (0.5, 0, 0), (0.55, 0, 0), (1, 0, 0), -0.05)
    assert len(one(specs, [((0, 0, 0), I), ((1.15, 0, 0), I)], margin=0.01)["depth"]) == 0


def test_sphere_plane_tilted():
    q = quat((1, 1, 0), 30.0)
    n = rotate(q, (0, 0, 1))
    o = np.array([0.2, -0.1, 0.5])
    specs = [dict(type=SHAPE_PLANE, body=-1, pos=o, rot=q), dict(type=SHAPE_SPHERE, body=0, dims=(0.25, 0, 0))]
    centre = o + 0.2 * n + np.array([0.3, -0.3, 0.0]) - np.dot([0.3, -0.3, 0.0], n) * n
    c = one(specs, [(centre, I)])
    check_contact(c, 0, centre - 0.2 * n, centre - 0.25 * n, n, 0.05)
    # below the plane's surface (centre inside the half-space): still pushed out along n
    c = one(specs, [(o - 0.1 * n, I)])
    check_contact(c, 0, o, o - 0.35 * n, n, 0.35)


def test_sphere_box_face_edge_inside():
    q = quat((0, 0, 1), 90.0)  # box axes: x -> y
    specs = [dict(type=SHAPE_SPHERE, body=0, dims=(0.3, 0, 0)), dict(type=SHAPE_BOX, body=1, dims=(1.0, 0.5, 0.25))]
    box = ((0, 0, 0), q)
    # face: sphere above the +z face
    c = one(specs, [((0.1, 0.2, 0.5), I), box])
    check_contact(c, 0, (0.1, 0.2, 0.2), (0.1, 0.2, 0.25), (0, 0, -1), 0.05)
    # edge: box local x half 1.0 is world y; local y half 0.5 is world -x. Edge at world
    # x = 0.5 (local y = -0.5), z = 0.25; sphere centre off the edge diagonally
    d = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    centre = np.array([0.5, 0.3, 0.25]) + 0.2 * d
    c = one(specs, [(centre, I), box])
    check_contact(c, 0, centre - 0.3 * d, (0.5, 0.3, 0.25), -d, 0.1)
    # centre inside the box, nearest face +z (0.05 below it)
    c = one(specs, [((0.1, 0.0, 0.2), I), box])
    check_contact(c, 0, (0.1, 0, -0.1), (0.1, 0, 0.25), (0, 0, -1), 0.35)  # p1 - p0 = -depth n


def test_sphere_capsule():
    qc = quat((0, 1, 0), 90.0)  # capsule axis along world x
    specs = [dict(type=SHAPE_SPHERE, body=0, dims=(0.2, 0, 0)), dict(type=SHAPE_CAPSULE, body=1, dims=(0.1, 0.5, 0))]
    c = one(specs, [((0.3, 0.0, 0.25), I), ((0, 0, 0), qc)])  # beside the cylinder part
    check_contact(c, 0, (0.3, 0, 0.05), (0.3, 0, 0.1), (0, 0, -1), 0.05)
    c = one(specs, [((0.8, 0.0, 0.0), I), ((0, 0, 0), qc)])  # off the end cap
    check_contact(c, 0, (0.6, 0, 0), (0.6, 0, 0), (-1, 0, 0), 0.0)


# ---------------------------------------------------------------------------------------
# capsules
# ---------------------------------------------------------------------------------------
def test_capsule_plane_lying_and_tilted():
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_CAPSULE, body=0, dims=(0.1, 0.5, 0))]
    c = one(specs, [((0, 0, 0.09), quat((1, 0, 0), 90))])  # axis along y, lying flat
    assert len(c["depth"]) == 2
    for i, y in enumerate((0.5, -0.5)):  # ends: -h along local z -> +y after +90 deg about x
        check_contact(c, i, (0, y, 0), (0, y, -0.01), (0, 0, 1), 0.01)
    q = quat((1, 0, 0), 60)
    a = rotate(q, (0, 0, 1))
    c = one(specs, [((0, 0, 0.5 * a[2] + 0.09), q)])  # tilted: only the low end touches
    assert len(c["depth"]) == 1
    check_contact(c, 0, (0, -0.5 * a[1], 0), (0, -0.5 * a[1], -0.01), (0, 0, 1), 0.01)


def test_capsule_capsule_crossing_and_parallel():
    specs = [dict(type=SHAPE_CAPSULE, body=0, dims=(0.1, 0.5, 0)), dict(type=SHAPE_CAPSULE, body=1, dims=(0.2, 0.3, 0))]
    # crossing: A along x, B along y, B 0.25 above
    c = one(specs, [((0, 0, 0), quat((0, 1, 0), 90)), ((0.2, 0.1, 0.25), quat((1, 0, 0), 90))])
    assert len(c["depth"]) == 1
    check_contact(c, 0, (0.2, 0, 0.1), (0.2, 0, 0.05), (0, 0, 1), 0.05)
    # parallel, overlapping over x in [-0.2, 0.5]: two contacts at the overlap ends
    qx = quat((0, 1, 0), 90)
    c = one(specs, [((0, 0, 0), qx), ((0.1, 0.0, 0.28), qx)])
    assert len(c["depth"]) == 2
    xs = sorted(c["point0"][:, 0])
    assert xs == pytest.approx([-0.2, 0.4], abs=TOL)
    assert c["depth"] == pytest.approx([0.02, 0.02], abs=TOL)
    assert c["normal"] == pytest.approx(np.tile([0, 0, 1.0], (2, 1)), abs=TOL)


def test_capsule_box_lying_and_across_edge():
    specs = [dict(type=SHAPE_CAPSULE, body=0, dims=(0.1, 0.4, 0)), dict(type=SHAPE_BOX, body=1, dims=(1, 1, 0.5))]
    box = ((0, 0, 0), I)
    # lying on the top face along x: the two ends
    c = one(specs, [((0.2, 0.1, 0.59), quat((0, 1, 0), 90)), box])
    assert len(c["depth"]) == 2
    assert sorted(c["point1"][:, 0]) == pytest.approx([-0.2, 0.6], abs=TOL)
    assert c["depth"] == pytest.approx([0.01, 0.01], abs=TOL)
    assert c["normal"] == pytest.approx(np.tile([0, 0, -1.0], (2, 1)), abs=TOL)
    # across the top edge (x = 1, z = 0.5, along y): the capsule axis (1, 0, -1)/sqrt2 is
    # perpendicular to the edge and to the diagonal d, its centre 0.08 off the edge along d;
    # the box distance is smallest mid-segment (0.08) and 0.34 at the ends (beyond the
    # margin). Golden-section search brackets the minimum to 0.618^72 ~ 1e-15 of the
    # segment; the distance is quadratic there, so depth and point are exact to round-off.
    d = np.array([1, 0, 1]) / np.sqrt(2)
    centre = np.array([1.0, 0.0, 0.5]) + 0.08 * d
    c = one(specs, [(centre, quat((0, 1, 0), 135)), box])
    assert len(c["depth"]) == 1
    check_contact(c, 0, centre - 0.1 * d, (1.0, centre[1], 0.5), -d, 0.02, tol=1e-9)


# ---------------------------------------------------------------------------------------
# boxes
# ---------------------------------------------------------------------------------------
def test_box_resting_on_plane_gives_four_corners():
    h = np.array([0.3, 0.2, 0.1])
    q = quat((0, 0, 1), 30)
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_BOX, body=0, dims=h)]
    c = one(specs, [((1.0, 2.0, 0.099), q)])
    assert len(c["depth"]) == 4
    corners = [np.array([1.0, 2.0, 0.099]) + rotate(q, (sx * h[0], sy * h[1], -h[2])) for sx in (-1, 1) for sy in (-1, 1)]
    assert sort_points(c["point1"]) == pytest.approx(sort_points(corners), abs=TOL)
    assert c["depth"] == pytest.approx(np.full(4, 0.001), abs=TOL)
    assert c["point0"][:, 2] == pytest.approx(np.zeros(4), abs=TOL)
    # tilted about x by 20 deg: one edge down -> 2 contacts (the other corners are above)
    q2 = quat((1, 0, 0), 20)
    zlow = min(rotate(q2, (0, sy * h[1], sz * h[2]))[2] for sy in (-1, 1) for sz in (-1, 1))
    c = one(specs, [((0, 0, -zlow - 0.002), q2)])
    assert len(c["depth"]) == 2
    assert c["depth"] == pytest.approx([0.002, 0.002], abs=TOL)


def test_box_box_face_contact_clipped_polygon():
    h = np.array([0.5, 0.5, 0.5])
    specs = [dict(type=SHAPE_BOX, body=0, dims=h), dict(type=SHAPE_BOX, body=1, dims=h)]
    # offset stack: overlap rectangle x in [-0.2, 0.5], y in [-0.5, 0.4]
    c = one(specs, [((0, 0, 0), I), ((0.3, -0.1, 0.99), I)])
    assert len(c["depth"]) == 4
    rect = [(x, y, 0.5) for x in (-0.2, 0.5) for y in (-0.5, 0.4)]
    assert sort_points(c["point0"]) == pytest.approx(sort_points(rect), abs=TOL)
    assert c["depth"] == pytest.approx(np.full(4, 0.01), abs=TOL)
    assert c["normal"] == pytest.approx(np.tile([0, 0, 1.0], (4, 1)), abs=TOL)
    assert c["point1"][:, 2] == pytest.approx(np.full(4, 0.49), abs=TOL)
    # top box turned 45 deg about z: the overlap of the two squares is a regular octagon
    c = one(specs, [((0, 0, 0), I), ((0, 0, 0.99), quat((0, 0, 1), 45))])
    assert len(c["depth"]) == 8
    t = np.sqrt(2) * 0.5 - 0.5  # octagon vertices: (+-0.5, +-(sqrt2/2 - 0.5)) and swapped
    octagon = [(sx * 0.5, sy * t, 0.5) for sx in (-1, 1) for sy in (-1, 1)] + \
              [(sy * t, sx * 0.5, 0.5) for sx in (-1, 1) for sy in (-1, 1)]
    pts = c["point0"] if abs(c["point0"][0, 2] - 0.5) < 1e-9 else c["point1"]
    assert sort_points(pts) == pytest.approx(sort_points(octagon), abs=TOL)
    assert c["depth"] == pytest.approx(np.full(8, 0.01), abs=TOL)


def test_box_box_edge_edge():
    h = np.array([0.5, 0.5, 0.5])
    specs = [dict(type=SHAPE_BOX, body=0, dims=h), dict(type=SHAPE_BOX, body=1, dims=h)]
    # A turned 45 deg about x: its top is an edge along x at z = sqrt(2)/2.
    # B turned 45 deg about y: its bottom is an edge along y at zB - sqrt(2)/2.
    r = np.sqrt(2) / 2
    c = one(specs, [((0, 0, 0), quat((1, 0, 0), 45)), ((0.1, 0.05, 2 * r - 0.03), quat((0, 1, 0), 45))])
    assert len(c["depth"]) == 1
    check_contact(c, 0, (0.1, 0, r), (0.1, 0, r - 0.03), (0, 0, 1), 0.03)


def test_box_stack_of_five_has_four_contacts_per_interface():
    h = (0.5, 0.5, 0.5)
    specs = [dict(type=SHAPE_PLANE, body=-1)] + [dict(type=SHAPE_BOX, body=i, dims=h) for i in range(5)]
    poses = [((0, 0, 0.5 + i * 1.0 - 1e-4 * (i + 1)), I) for i in range(5)]
    c = one(specs, poses)
    assert len(c["depth"]) == 20  # plane-box 4 + 4 box-box interfaces x 4
    assert c["depth"] == pytest.approx(np.full(20, 1e-4), abs=TOL)
    assert c["normal"] == pytest.approx(np.tile([0, 0, 1.0], (20, 1)), abs=TOL)


# ---------------------------------------------------------------------------------------
# cylinders and general convex (MPR)
# ---------------------------------------------------------------------------------------
def test_cylinder_plane_upright_side_tilted():
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_CYLINDER, body=0, dims=(0.2, 0.5, 0))]
    c = one(specs, [((0, 0, 0.498), I)])  # standing: 4 rim points
    assert len(c["depth"]) == 4
    assert np.linalg.norm(c["point1"][:, :2], axis=1) == pytest.approx(np.full(4, 0.2), abs=TOL)
    assert c["depth"] == pytest.approx(np.full(4, 0.002), abs=TOL)
    c = one(specs, [((0, 0, 0.198), quat((1, 0, 0), 90))])  # lying: two cap rims
    assert len(c["depth"]) == 2
    assert sorted(c["point1"][:, 1]) == pytest.approx([-0.5, 0.5], abs=TOL)
    assert c["depth"] == pytest.approx([0.002, 0.002], abs=TOL)
    q = quat((1, 0, 0), 30)  # tilted: one rim point, lowest = -(h cos30 + r sin30)
    low = 0.5 * np.cos(np.radians(30)) + 0.2 * np.sin(np.radians(30))
    c = one(specs, [((0, 0, low - 0.003), q)])
    assert len(c["depth"]) == 1
    assert c["depth"][0] == pytest.approx(0.003, abs=TOL)


# MPR iterates to a portal within 1e-13 (relative) of the Minkowski boundary; on the flat
# parts tested here the portal lands on the face exactly; curved parts converge to ~1e-9.
MPR_TOL = 1e-8


def test_cylinder_sphere_cap_and_wall():
    specs = [dict(type=SHAPE_SPHERE, body=0, dims=(0.3, 0, 0)), dict(type=SHAPE_CYLINDER, body=1, dims=(0.5, 1.0, 0))]
    c = one(specs, [((0.1, 0.2, 1.25), I), ((0, 0, 0), I)])  # above the top cap
    assert len(c["depth"]) == 1
    check_contact(c, 0, (0.1, 0.2, 0.95), (0.1, 0.2, 1.0), (0, 0, -1), 0.05, tol=MPR_TOL)
    d = np.array([0.6, 0.8, 0.0])
    c = one(specs, [(0.75 * d + (0, 0, 0.3), I), ((0, 0, 0), I)])  # beside the wall
    check_contact(c, 0, 0.45 * d + (0, 0, 0.3), 0.5 * d + (0, 0, 0.3), -d, 0.05, tol=MPR_TOL)


def test_cylinder_on_box_and_cylinder_on_cylinder():
    specs = [dict(type=SHAPE_BOX, body=0, dims=(1, 1, 0.5)), dict(type=SHAPE_CYLINDER, body=1, dims=(0.2, 0.3, 0))]
    c = one(specs, [((0, 0, 0), I), ((0.0, 0.0, 0.79), I)])
    assert len(c["depth"]) == 1
    assert c["normal"][0] == pytest.approx((0, 0, 1), abs=MPR_TOL)
    assert c["depth"][0] == pytest.approx(0.01, abs=MPR_TOL)
    assert c["point0"][0][2] == pytest.approx(0.5, abs=MPR_TOL)
    assert c["point1"][0][2] == pytest.approx(0.49, abs=MPR_TOL)
    specs = [dict(type=SHAPE_CYLINDER, body=0, dims=(0.2, 0.3, 0)), dict(type=SHAPE_CYLINDER, body=1, dims=(0.2, 0.3, 0))]
    c = one(specs, [((0, 0, 0), I), ((0.0, 0.0, 0.58), I)])
    assert c["depth"] == pytest.approx([0.02], abs=MPR_TOL)
    assert c["normal"][0] == pytest.approx((0, 0, 1), abs=MPR_TOL)


CUBE = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])


def test_convex_hull_plane_and_sphere():
    verts = np.vstack([CUBE, [[0.1, 0.0, 0.2]]])  # an interior point changes nothing
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_CONVEX, body=0, verts=verts)]
    c = one(specs, [((0, 0, 0.496), quat((0, 0, 1), 10))])
    assert len(c["depth"]) == 4
    assert c["depth"] == pytest.approx(np.full(4, 0.004), abs=TOL)
    # the convex cube against a sphere matches the analytic sphere-box contact
    specs = [dict(type=SHAPE_SPHERE, body=0, dims=(0.3, 0, 0)), dict(type=SHAPE_CONVEX, body=1, verts=CUBE)]
    c = one(specs, [((0.1, 0.2, 0.75), I), ((0, 0, 0), I)])
    check_contact(c, 0, (0.1, 0.2, 0.45), (0.1, 0.2, 0.5), (0, 0, -1), 0.05, tol=MPR_TOL)
    # convex-convex: two cubes, gap of 0.02 reported with margin 0.05
    specs = [dict(type=SHAPE_CONVEX, body=0, verts=CUBE), dict(type=SHAPE_CONVEX, body=1, verts=CUBE)]
    c = one(specs, [((0, 0, 0), I), ((0.0, 0.0, 1.02), I)], margin=0.05)
    assert c["depth"] == pytest.approx([-0.02], abs=MPR_TOL)
    assert c["normal"][0] == pytest.approx((0, 0, 1), abs=MPR_TOL)
    assert len(one(specs, [((0, 0, 0), I), ((0.0, 0.0, 1.02), I)], margin=0.01)["depth"]) == 0


# ---------------------------------------------------------------------------------------
# contact radius, worlds, capacity
# ---------------------------------------------------------------------------------------
def test_contact_radius_inflates_shape():
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_BOX, body=0, dims=(0.5, 0.5, 0.5), contact_radius=0.01)]
    c = one(specs, [((0, 0, 0.505), I)])
    assert len(c["depth"]) == 4
    assert c["depth"] == pytest.approx(np.full(4, 0.005), abs=TOL)
    assert c["point1"][:, 2] == pytest.approx(np.full(4, -0.005), abs=TOL)


def test_many_worlds_match_single_world_runs():
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_BOX, body=0, dims=(0.5, 0.4, 0.3)),
             dict(type=SHAPE_SPHERE, body=1, dims=(0.3, 0, 0)), dict(type=SHAPE_CAPSULE, body=2, dims=(0.1, 0.3, 0)),
             dict(type=SHAPE_CYLINDER, body=3, dims=(0.2, 0.2, 0))]
    rng = np.random.default_rng(1)
    worlds = []
    for _ in range(6):
        poses = []
        for _b in range(4):
            q = rng.normal(size=4)
            poses.append((rng.uniform(-0.6, 0.6, size=3) + (0, 0, 0.4), q / np.linalg.norm(q)))
        worlds.append(poses)
    many = collide(specs, worlds, margin=0.01, worlds=6).numpy()
    total = 0
    for w in range(6):
        single = one(specs, worlds[w], margin=0.01)
        total += len(single["depth"])
        for key in single:
            assert np.array_equal(many[w][key], single[key]), key  # same kernel, same order: bitwise
    assert total > 10  # the random scenes do collide


def test_capacity_overflow_counted_and_warned(caplog):
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_BOX, body=0, dims=(0.5, 0.5, 0.5))]
    pipe = collide(specs, [((0, 0, 0.49), I)], worlds=3, capacity=3)
    assert pipe.contacts.count.numpy().tolist() == [3, 3, 3]
    assert pipe.contacts.overflow.numpy().tolist() == [1, 1, 1]
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        assert pipe.check_overflow() == 3
    assert "contact buffer full" in caplog.text
    # default capacity is the bound for the pairs: no overflow
    pipe = collide(specs, [((0, 0, 0.49), I)], worlds=3)
    assert pipe.capacity == 4 and pipe.check_overflow() == 0


# ---------------------------------------------------------------------------------------
# candidate pairs / filtering
# ---------------------------------------------------------------------------------------
def test_candidate_pairs_filtering():
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_PLANE, body=-1, path="/ground2"),
             dict(type=SHAPE_BOX, body=0, dims=(1, 1, 1)), dict(type=SHAPE_SPHERE, body=0, dims=(1, 0, 0)),
             dict(type=SHAPE_SPHERE, body=1, dims=(1, 0, 0), groups=(0,)),
             dict(type=SHAPE_SPHERE, body=2, dims=(1, 0, 0), groups=(1,)),
             dict(type=SHAPE_SPHERE, body=3, dims=(1, 0, 0), enabled=False),
             dict(type=SHAPE_BOX, body=-1, dims=(1, 1, 1))]
    t = table_from_specs(specs)
    all_pairs = {tuple(p) for p in candidate_pairs(t).tolist()}
    assert (0, 1) not in all_pairs  # plane-plane
    assert (3, 2) not in all_pairs and (2, 3) not in all_pairs  # same body
    assert not any(6 in p for p in all_pairs)  # collision disabled
    assert (0, 7) not in all_pairs and (7, 0) not in all_pairs  # both static
    assert (3, 2) not in all_pairs
    assert (3, 7) in all_pairs  # sphere (type 1) before box (type 3)
    assert (4, 5) in all_pairs
    t.group_no_collide[0, 1] = t.group_no_collide[1, 0] = True
    assert (4, 5) not in {tuple(p) for p in candidate_pairs(t).tolist()}
    t.filtered_pairs = {(2, 4)}
    pairs = {tuple(p) for p in candidate_pairs(t).tolist()}
    assert (4, 2) not in pairs and (3, 4) in pairs
    pairs = {tuple(p) for p in candidate_pairs(t, exclude_body_pairs=[(1, 0)]).tolist()}
    assert (3, 4) not in pairs and (3, 5) in pairs
    # every pair is ordered by type then index
    for a, b in candidate_pairs(t).tolist():
        assert (t.type[a], a) < (t.type[b], b)


def test_random_scenes_invariants_every_pair_type():
    """Random overlapping poses of every shape type: contacts are finite, normals unit,
    and point1 - point0 = -depth * normal (for MPR by construction of its two points)."""
    cube = np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.3, 0.3) for z in (-0.25, 0.25)])
    specs = [dict(type=SHAPE_PLANE, body=-1), dict(type=SHAPE_SPHERE, body=0, dims=(0.25, 0, 0)),
             dict(type=SHAPE_CAPSULE, body=1, dims=(0.1, 0.3, 0)), dict(type=SHAPE_BOX, body=2, dims=(0.3, 0.2, 0.25)),
             dict(type=SHAPE_CYLINDER, body=3, dims=(0.2, 0.25, 0)), dict(type=SHAPE_CONVEX, body=4, verts=cube),
             dict(type=SHAPE_BOX, body=5, dims=(0.25, 0.25, 0.1), contact_radius=0.02)]
    rng = np.random.default_rng(7)
    W = 40
    worlds = []
    for _ in range(W):
        poses = []
        for _b in range(6):
            q = rng.normal(size=4)
            poses.append((rng.uniform(-0.35, 0.35, size=3) + (0, 0, 0.3), q / np.linalg.norm(q)))
        worlds.append(poses)
    res = collide(specs, worlds, margin=0.01, worlds=W).numpy()
    t = table_from_specs(specs)
    seen = set()
    for c in res:
        for i in range(len(c["depth"])):
            n = c["normal"][i]
            assert np.all(np.isfinite(c["point0"][i])) and np.all(np.isfinite(c["point1"][i]))
            assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)
            assert c["depth"][i] >= -0.01 - 1e-12
            assert c["depth"][i] < 1.0  # nothing deeper than the shapes are large
            ta, tb = t.type[c["shape0"][i]], t.type[c["shape1"][i]]
            seen.add((int(ta), int(tb)))
            gap = c["point1"][i] - c["point0"][i]
            tol = 1e-10  # MPR places its two points symmetrically about the portal point
            assert gap == pytest.approx(-c["depth"][i] * n, abs=tol), (ta, tb)
    assert len(seen) >= 15  # most of the 20 type pairs actually met

