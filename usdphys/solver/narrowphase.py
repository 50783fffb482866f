"""Narrow phase in Warp, float64, many worlds: shape pairs -> per-world contact buffer.

One model is replicated over N worlds; only body poses differ per world. Everything is a
`wp.func` so that a solver kernel running one thread per world can call `collide_world`
inside its own step loop; `collide_kernel` (one thread per world) is the standalone entry
point used by `CollisionPipeline` and the tests.

Conventions (docs/contact.md):
- shape pair (A, B) = (pairs[p][0], pairs[p][1]) with type[A] <= type[B];
- normal: unit, world, from A to B; depth > 0 = penetration, < 0 = gap (kept while
  depth >= -margin); point0 on A's surface, point1 on B's surface, so that
  point1 - point0 = -depth * normal for the exact pair types;
- contact_radius r of a shape inflates it (Minkowski sum with a ball): the core contact is
  computed and then depth += rA + rB, point0 += rA n, point1 -= rB n.

Convex shapes without a closed-form pair routine (ellipsoids, cones, hulls, cylinders) meet
through one support function, MPR and a Newton refinement of its normal; static triangle
meshes through a wp.Mesh BVH, one triangle at a time.
"""
from __future__ import annotations

import numpy as np
import warp as wp

from usdphys.types.shapes import (
    SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CONVEX, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_MESH, SHAPE_PLANE,
    SHAPE_SPHERE, ShapeTable,
)
from usdphys.types.enums import ShapeType
from usdphys.errors import warn

wp.set_module_options({"enable_backward": False})

f64 = wp.float64
ZERO = wp.constant(f64(0.0))
ONE = wp.constant(f64(1.0))
HALF = wp.constant(f64(0.5))
TWO = wp.constant(f64(2.0))
BIG = wp.constant(f64(1.0e300))
TINY = wp.constant(f64(1.0e-300))
GOLDEN = wp.constant(f64(0.6180339887498949))

PLANE = wp.constant(int(SHAPE_PLANE))
SPHERE = wp.constant(int(SHAPE_SPHERE))
CAPSULE = wp.constant(int(SHAPE_CAPSULE))
BOX = wp.constant(int(SHAPE_BOX))
CYLINDER = wp.constant(int(SHAPE_CYLINDER))
CONVEX = wp.constant(int(SHAPE_CONVEX))
ELLIPSOID = wp.constant(int(SHAPE_ELLIPSOID))
CONE = wp.constant(int(SHAPE_CONE))
MESH = wp.constant(int(SHAPE_MESH))

# A convex shape against a triangle mesh: one contact per touching triangle (duplicates at
# shared edges and vertices merged), the deepest MESH_PAIR_CONTACTS kept.
MESH_PAIR_CONTACTS = 8
MESH_MAX = wp.constant(MESH_PAIR_CONTACTS)

vec8d = wp.types.vector(length=8, dtype=wp.float64)

# Most contacts one pair type can produce (indexed [type A][type B], type A <= type B);
# CollisionPipeline sizes the buffer with the sum over candidate pairs by default.
_NT = len(ShapeType)
MAX_PAIR_CONTACTS = np.ones((_NT, _NT), dtype=np.int64)
MAX_PAIR_CONTACTS[SHAPE_PLANE, SHAPE_CAPSULE] = 2
MAX_PAIR_CONTACTS[SHAPE_PLANE, SHAPE_BOX] = 4
MAX_PAIR_CONTACTS[SHAPE_PLANE, SHAPE_CYLINDER] = 4
MAX_PAIR_CONTACTS[SHAPE_PLANE, SHAPE_CONVEX] = 4
MAX_PAIR_CONTACTS[SHAPE_CAPSULE, SHAPE_CAPSULE] = 2
MAX_PAIR_CONTACTS[SHAPE_CAPSULE, SHAPE_BOX] = 3
MAX_PAIR_CONTACTS[SHAPE_BOX, SHAPE_BOX] = 8
MAX_PAIR_CONTACTS[SHAPE_PLANE, SHAPE_CONE] = 4
MAX_PAIR_CONTACTS[:, SHAPE_MESH] = MESH_PAIR_CONTACTS


@wp.struct
class ShapeData:
    """Device copy of the geometric columns of a ShapeTable (shared by all worlds)."""

    type: wp.array(dtype=wp.int32)
    body: wp.array(dtype=wp.int32)
    xform: wp.array(dtype=wp.transformd)  # shape frame in the owner body's frame
    dims: wp.array(dtype=wp.vec3d)
    radius: wp.array(dtype=wp.float64)  # contact (sweep) radius
    bound: wp.array(dtype=wp.float64)  # bounding-sphere radius incl. radius; < 0: infinite
    vert_start: wp.array(dtype=wp.int32)
    vert_count: wp.array(dtype=wp.int32)
    verts: wp.array(dtype=wp.vec3d)
    walk_from: wp.array(dtype=wp.int32)  # hull: a hull vertex to start the support walk at; -1: scan all
    adj_start: wp.array(dtype=wp.int32)  # per vertex (V + 1): its hull neighbours are adj[adj_start[v]:...[v + 1]]
    adj: wp.array(dtype=wp.int32)
    mesh: wp.array(dtype=wp.uint64)  # wp.Mesh id (BVH over the triangles) of a mesh shape, else 0
    tri_start: wp.array(dtype=wp.int32)
    tris: wp.array(dtype=wp.vec3i)  # vertex indices relative to vert_start
    # 1: a mesh query is opened again after a query nested in it (convex_mesh). Needed on CUDA,
    # where Warp traverses all of a thread's mesh queries on one shared-memory stack; the CPU
    # gives each query its own, and setting it there runs the GPU's path (same results)
    reopen_queries: int


@wp.struct
class Contacts:
    """Per-world contact buffer: row w holds count[w] valid contacts, capacity C columns."""

    count: wp.array(dtype=wp.int32)  # [W]
    overflow: wp.array(dtype=wp.int32)  # [W] contacts dropped for lack of capacity
    pair: wp.array2d(dtype=wp.int32)  # [W, C] candidate pair index
    shape0: wp.array2d(dtype=wp.int32)
    shape1: wp.array2d(dtype=wp.int32)
    body0: wp.array2d(dtype=wp.int32)  # -1 = world
    body1: wp.array2d(dtype=wp.int32)
    point0: wp.array2d(dtype=wp.vec3d)  # world point on shape 0's surface
    point1: wp.array2d(dtype=wp.vec3d)  # world point on shape 1's surface
    normal: wp.array2d(dtype=wp.vec3d)  # unit, from shape 0 to shape 1
    depth: wp.array2d(dtype=wp.float64)  # > 0 penetration


@wp.struct
class PairCtx:
    world: wp.int32
    pair: wp.int32
    sa: wp.int32
    sb: wp.int32
    ba: wp.int32
    bb: wp.int32
    ra: wp.float64
    rb: wp.float64
    margin: wp.float64


# ----------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------
@wp.func
def sgn(x: wp.float64):
    return wp.where(x >= ZERO, ONE, -ONE)


@wp.func
def col(m: wp.mat33d, i: int):
    return wp.vec3d(m[0, i], m[1, i], m[2, i])


@wp.func
def axis_z(x: wp.transformd):
    return wp.quat_rotate(wp.transform_get_rotation(x), wp.vec3d(ZERO, ZERO, ONE))


@wp.func
def any_perp(a: wp.vec3d):
    """A unit vector perpendicular to unit vector a."""
    t = wp.vec3d(ONE, ZERO, ZERO)
    if wp.abs(a[0]) > HALF:
        t = wp.vec3d(ZERO, ONE, ZERO)
    return wp.normalize(wp.cross(a, t))


@wp.func
def emit(c: Contacts, k: PairCtx, pa: wp.vec3d, pb: wp.vec3d, n: wp.vec3d, d_core: wp.float64):
    """Write one contact of the core shapes (radii added here) if within the margin."""
    depth = d_core + k.ra + k.rb
    if depth >= -k.margin:
        w = k.world
        i = c.count[w]
        if i < c.depth.shape[1]:
            c.pair[w, i] = k.pair
            c.shape0[w, i] = k.sa
            c.shape1[w, i] = k.sb
            c.body0[w, i] = k.ba
            c.body1[w, i] = k.bb
            c.point0[w, i] = pa + n * k.ra
            c.point1[w, i] = pb - n * k.rb
            c.normal[w, i] = n
            c.depth[w, i] = depth
            c.count[w] = i + 1
        else:
            c.overflow[w] = c.overflow[w] + 1


@wp.func
def seg_closest(p: wp.vec3d, a: wp.vec3d, b: wp.vec3d):
    """Closest point to p on segment [a, b]."""
    d = b - a
    dd = wp.dot(d, d)
    t = f64(0.0)
    if dd > TINY:
        t = wp.clamp(wp.dot(p - a, d) / dd, ZERO, ONE)
    return a + d * t


@wp.func
def seg_seg(p1: wp.vec3d, q1: wp.vec3d, p2: wp.vec3d, q2: wp.vec3d):
    """Parameters (s, t) of the closest points p1 + s (q1 - p1), p2 + t (q2 - p2) of two
    segments (Ericson, Real-Time Collision Detection 5.1.9)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = wp.dot(d1, d1)
    e = wp.dot(d2, d2)
    f = wp.dot(d2, r)
    s = f64(0.0)
    t = f64(0.0)
    if a <= TINY and e <= TINY:
        return s, t
    if a <= TINY:
        t = wp.clamp(f / e, ZERO, ONE)
        return s, t
    cc = wp.dot(d1, r)
    if e <= TINY:
        s = wp.clamp(-cc / a, ZERO, ONE)
        return s, t
    b = wp.dot(d1, d2)
    den = a * e - b * b
    if den > f64(1.0e-14) * a * e:
        s = wp.clamp((b * f - cc * e) / den, ZERO, ONE)
    t = (b * s + f) / e
    if t < ZERO:
        t = f64(0.0)
        s = wp.clamp(-cc / a, ZERO, ONE)
    elif t > ONE:
        t = f64(1.0)
        s = wp.clamp((b - cc) / a, ZERO, ONE)
    return s, t


@wp.func
def box_point(p: wp.vec3d, h: wp.vec3d):
    """Signed distance of local point p to the box [-h, h], the closest surface point and
    the outward unit normal there (pointing from the box towards p)."""
    q = wp.vec3d(wp.clamp(p[0], -h[0], h[0]), wp.clamp(p[1], -h[1], h[1]), wp.clamp(p[2], -h[2], h[2]))
    dv = p - q
    L = wp.length(dv)
    if L > ZERO:
        return L, q, dv / L
    # inside: nearest face
    k = int(0)
    dmin = h[0] - wp.abs(p[0])
    for i in range(1, 3):
        di = h[i] - wp.abs(p[i])
        if di < dmin:
            dmin = di
            k = i
    n = wp.vec3d(ZERO, ZERO, ZERO)
    n[k] = sgn(p[k])
    q[k] = sgn(p[k]) * h[k]
    return -dmin, q, n


# ----------------------------------------------------------------------------------------
# plane pairs (A = plane: half-space z <= 0 of its frame, normal = frame +Z)
# ----------------------------------------------------------------------------------------
@wp.func
def plane_point(c: Contacts, k: PairCtx, xp: wp.transformd, p: wp.vec3d, r: wp.float64):
    """Plane vs a ball of radius r centred at p."""
    n = axis_z(xp)
    dist = wp.dot(p - wp.transform_get_translation(xp), n)  # centre height
    emit(c, k, p - n * dist, p - n * r, n, r - dist)


@wp.func
def emit_deepest4(c: Contacts, k: PairCtx, xp: wp.transformd, xs: vec8d, ys: vec8d, zs: vec8d, m: int):
    """Among m <= 8 candidate points of shape B, emit the (up to) 4 deepest below the plane."""
    n = axis_z(xp)
    o = wp.transform_get_translation(xp)
    mc = k.margin + k.ra + k.rb
    used = int(0)
    for _it in range(4):
        best = int(-1)
        bd = f64(1.0e300)
        for i in range(m):
            if ((used >> i) & 1) == 0:
                d = wp.dot(wp.vec3d(xs[i], ys[i], zs[i]) - o, n)
                if d < bd:
                    bd = d
                    best = i
        if best < 0 or bd > mc:
            break
        used = used | (1 << best)
        p = wp.vec3d(xs[best], ys[best], zs[best])
        emit(c, k, p - n * bd, p, n, -bd)


@wp.func
def plane_box(c: Contacts, k: PairCtx, xp: wp.transformd, xb: wp.transformd, h: wp.vec3d):
    xs = vec8d()
    ys = vec8d()
    zs = vec8d()
    for i in range(8):
        sx = wp.where((i & 1) != 0, ONE, -ONE)
        sy = wp.where((i & 2) != 0, ONE, -ONE)
        sz = wp.where((i & 4) != 0, ONE, -ONE)
        p = wp.transform_point(xb, wp.vec3d(sx * h[0], sy * h[1], sz * h[2]))
        xs[i] = p[0]
        ys[i] = p[1]
        zs[i] = p[2]
    emit_deepest4(c, k, xp, xs, ys, zs, 8)


@wp.func
def plane_cylinder(c: Contacts, k: PairCtx, xp: wp.transformd, xb: wp.transformd, r: wp.float64, hh: wp.float64,
                   r_top: wp.float64):
    """Cylinder or frustum (bottom radius r at -hh, top radius r_top at +hh). Candidates: on
    each cap rim, the point deepest along the plane normal and the points at 90, 180, 270
    degrees from it (a cap lying flat gives 4 support points); a cone's apex counts once."""
    n = axis_z(xp)
    a = axis_z(xb)
    cb = wp.transform_get_translation(xb)
    v = -n + a * wp.dot(n, a)
    L = wp.length(v)
    u = wp.vec3d(ZERO, ZERO, ZERO)
    if L > f64(1.0e-12):
        u = v / L
    else:
        u = wp.quat_rotate(wp.transform_get_rotation(xb), wp.vec3d(ONE, ZERO, ZERO))
    w2 = wp.cross(a, u)
    xs = vec8d()
    ys = vec8d()
    zs = vec8d()
    m = int(8)
    if r_top <= ZERO:
        m = 5
    for i in range(m):
        cap = wp.where(i < 4, -ONE, ONE)
        rad = wp.where(i < 4, r, r_top)
        j = i % 4
        d = u
        if j == 1:
            d = w2
        elif j == 2:
            d = -u
        elif j == 3:
            d = -w2
        p = cb + a * (cap * hh) + d * rad
        xs[i] = p[0]
        ys[i] = p[1]
        zs[i] = p[2]
    emit_deepest4(c, k, xp, xs, ys, zs, m)


@wp.func
def plane_convex(c: Contacts, k: PairCtx, shapes: ShapeData, s: int, xp: wp.transformd, xb: wp.transformd):
    """Up to 4 vertices below the plane: the deepest, then the one farthest from it, the
    one spanning the largest triangle, the one enlarging that triangle most."""
    n = axis_z(xp)
    o = wp.transform_get_translation(xp)
    mc = k.margin + k.ra + k.rb
    v0 = shapes.vert_start[s]
    nv = shapes.vert_count[s]
    i1 = int(-1)
    d1 = f64(1.0e300)
    for i in range(v0, v0 + nv):
        d = wp.dot(wp.transform_point(xb, shapes.verts[i]) - o, n)
        if d < d1:
            d1 = d
            i1 = i
    if i1 < 0 or d1 > mc:
        return
    p1 = wp.transform_point(xb, shapes.verts[i1])
    emit(c, k, p1 - n * d1, p1, n, -d1)
    # second: farthest (in the plane) from p1
    i2 = int(-1)
    best = f64(0.0)
    for i in range(v0, v0 + nv):
        p = wp.transform_point(xb, shapes.verts[i])
        d = wp.dot(p - o, n)
        if d <= mc:
            t = (p - p1) - n * wp.dot(p - p1, n)
            l2 = wp.dot(t, t)
            if l2 > best:
                best = l2
                i2 = i
    if i2 < 0 or best < f64(1.0e-20):
        return
    p2 = wp.transform_point(xb, shapes.verts[i2])
    d2 = wp.dot(p2 - o, n)
    emit(c, k, p2 - n * d2, p2, n, -d2)
    # third: largest triangle with p1, p2
    i3 = int(-1)
    best = f64(0.0)
    for i in range(v0, v0 + nv):
        p = wp.transform_point(xb, shapes.verts[i])
        d = wp.dot(p - o, n)
        if d <= mc:
            ar = wp.abs(wp.dot(wp.cross(p2 - p1, p - p1), n))
            if ar > best:
                best = ar
                i3 = i
    if i3 < 0 or best < f64(1.0e-20):
        return
    p3 = wp.transform_point(xb, shapes.verts[i3])
    d3 = wp.dot(p3 - o, n)
    emit(c, k, p3 - n * d3, p3, n, -d3)
    tri = best
    # fourth: the point adding the most area outside the triangle
    i4 = int(-1)
    best = tri * (ONE + f64(1.0e-9))
    for i in range(v0, v0 + nv):
        p = wp.transform_point(xb, shapes.verts[i])
        d = wp.dot(p - o, n)
        if d <= mc:
            ar = (wp.abs(wp.dot(wp.cross(p1 - p, p2 - p), n)) + wp.abs(wp.dot(wp.cross(p2 - p, p3 - p), n))
                  + wp.abs(wp.dot(wp.cross(p3 - p, p1 - p), n)))
            if ar > best:
                best = ar
                i4 = i
    if i4 >= 0:
        p4 = wp.transform_point(xb, shapes.verts[i4])
        d4 = wp.dot(p4 - o, n)
        emit(c, k, p4 - n * d4, p4, n, -d4)


# ----------------------------------------------------------------------------------------
# sphere / capsule / box pairs
# ----------------------------------------------------------------------------------------
@wp.func
def ball_ball(c: Contacts, k: PairCtx, pa: wp.vec3d, ra: wp.float64, pb: wp.vec3d, rb: wp.float64, nfall: wp.vec3d):
    d = pb - pa
    L = wp.length(d)
    n = nfall
    if L > f64(1.0e-14):
        n = d / L
    emit(c, k, pa + n * ra, pb - n * rb, n, ra + rb - L)


@wp.func
def ball_box(c: Contacts, k: PairCtx, p: wp.vec3d, r: wp.float64, xb: wp.transformd, h: wp.vec3d):
    """Ball (shape A) against box (shape B)."""
    pl = wp.transform_point(wp.transform_inverse(xb), p)
    sd, ql, nl = box_point(pl, h)
    nb = wp.quat_rotate(wp.transform_get_rotation(xb), nl)  # box -> ball
    n = -nb
    emit(c, k, p + n * r, wp.transform_point(xb, ql), n, r - sd)


@wp.func
def box_sd_local(p: wp.vec3d, h: wp.vec3d):
    sd, q, n = box_point(p, h)
    return sd


@wp.func
def capsule_box(c: Contacts, k: PairCtx, xa: wp.transformd, r: wp.float64, hh: wp.float64, xb: wp.transformd, h: wp.vec3d):
    """Capsule core segment against a box: the box's signed distance is convex along the
    segment, so its minimum is found by golden-section search; contacts at both segment
    ends, plus the interior minimum where it is strictly deeper than both ends."""
    a = axis_z(xa)
    ca = wp.transform_get_translation(xa)
    e0 = ca - a * hh
    e1 = ca + a * hh
    inv = wp.transform_inverse(xb)
    l0 = wp.transform_point(inv, e0)
    l1 = wp.transform_point(inv, e1)
    ball_box(c, k, e0, r, xb, h)
    if hh <= ZERO:
        return
    ball_box(c, k, e1, r, xb, h)
    lo = f64(0.0)
    hi = f64(1.0)
    x1 = hi - GOLDEN * (hi - lo)
    x2 = lo + GOLDEN * (hi - lo)
    f1 = box_sd_local(l0 + (l1 - l0) * x1, h)
    f2 = box_sd_local(l0 + (l1 - l0) * x2, h)
    for _it in range(72):
        if f1 <= f2:
            hi = x2
            x2 = x1
            f2 = f1
            x1 = hi - GOLDEN * (hi - lo)
            f1 = box_sd_local(l0 + (l1 - l0) * x1, h)
        else:
            lo = x1
            x1 = x2
            f1 = f2
            x2 = lo + GOLDEN * (hi - lo)
            f2 = box_sd_local(l0 + (l1 - l0) * x2, h)
    tm = HALF * (lo + hi)
    # A derivative-free search resolves a smooth (quadratic) minimum only to sqrt(eps):
    # finish exactly from the box feature nearest the segment (edge or vertex); outside
    # the box, face minima are flat or at the ends, inside the distance is piecewise linear.
    pm = l0 + (l1 - l0) * tm
    if box_sd_local(pm, h) > ZERO:
        q = wp.vec3d(wp.clamp(pm[0], -h[0], h[0]), wp.clamp(pm[1], -h[1], h[1]), wp.clamp(pm[2], -h[2], h[2]))
        nout = int(0)
        free = int(0)
        for i in range(3):
            if wp.abs(pm[i]) > h[i]:
                nout += 1
            else:
                free = i
        dl = l1 - l0
        if nout == 3:
            tm = wp.clamp(wp.dot(q - l0, dl) / wp.dot(dl, dl), ZERO, ONE)
        elif nout == 2:
            q0 = q
            q1 = q
            q0[free] = -h[free]
            q1[free] = h[free]
            s, t = seg_seg(l0, l1, q0, q1)
            tm = s
    fm = box_sd_local(l0 + (l1 - l0) * tm, h)
    f0 = box_sd_local(l0, h)
    fe = box_sd_local(l1, h)
    if fm < wp.min(f0, fe) - f64(1.0e-12) and tm > f64(1.0e-9) and tm < ONE - f64(1.0e-9):
        ball_box(c, k, e0 + (e1 - e0) * tm, r, xb, h)


@wp.func
def capsule_capsule(c: Contacts, k: PairCtx, xa: wp.transformd, ra: wp.float64, ha: wp.float64,
                    xb: wp.transformd, rb: wp.float64, hb: wp.float64):
    aa = axis_z(xa)
    ab = axis_z(xb)
    ca = wp.transform_get_translation(xa)
    cb = wp.transform_get_translation(xb)
    p1 = ca - aa * ha
    q1 = ca + aa * ha
    p2 = cb - ab * hb
    q2 = cb + ab * hb
    d1 = q1 - p1
    d2 = q2 - p2
    cr = wp.cross(d1, d2)
    nfall = cr
    if wp.length(cr) > f64(1.0e-14):
        nfall = wp.normalize(cr)
        if wp.dot(nfall, cb - ca) < ZERO:
            nfall = -nfall
    else:
        nfall = any_perp(aa)
    L1 = wp.dot(d1, d1)
    L2 = wp.dot(d2, d2)
    if L1 > TINY and L2 > TINY and wp.dot(cr, cr) <= f64(1.0e-12) * L1 * L2:
        # parallel: two contacts at the ends of the overlap, if any
        t0 = wp.dot(p2 - p1, d1) / L1
        t1 = wp.dot(q2 - p1, d1) / L1
        lo = wp.max(ZERO, wp.min(t0, t1))
        hi = wp.min(ONE, wp.max(t0, t1))
        if hi - lo > f64(1.0e-9):
            pa = p1 + d1 * lo
            ball_ball(c, k, pa, ra, seg_closest(pa, p2, q2), rb, nfall)
            pa = p1 + d1 * hi
            ball_ball(c, k, pa, ra, seg_closest(pa, p2, q2), rb, nfall)
            return
    s, t = seg_seg(p1, q1, p2, q2)
    ball_ball(c, k, p1 + d1 * s, ra, p2 + d2 * t, rb, nfall)


@wp.func
def clip_poly(xs: vec8d, ys: vec8d, zs: vec8d, n: int, axis: int, sg: wp.float64, lim: wp.float64):
    """Sutherland-Hodgman: keep the part of polygon (xs, ys) with sg * coord <= lim; z is
    interpolated linearly (exact for a planar polygon)."""
    ox = vec8d()
    oy = vec8d()
    oz = vec8d()
    m = int(0)
    for i in range(n):
        j = (i + 1) % n
        ci = sg * wp.where(axis == 0, xs[i], ys[i]) - lim
        cj = sg * wp.where(axis == 0, xs[j], ys[j]) - lim
        if ci <= ZERO:
            if m < 8:
                ox[m] = xs[i]
                oy[m] = ys[i]
                oz[m] = zs[i]
                m += 1
        if (ci <= ZERO) != (cj <= ZERO):
            t = ci / (ci - cj)
            if m < 8:
                ox[m] = xs[i] + t * (xs[j] - xs[i])
                oy[m] = ys[i] + t * (ys[j] - ys[i])
                oz[m] = zs[i] + t * (zs[j] - zs[i])
                m += 1
    return ox, oy, oz, m


@wp.func
def sat_sep(L: wp.vec3d, T: wp.vec3d, RA: wp.mat33d, hA: wp.vec3d, RB: wp.mat33d, hB: wp.vec3d):
    ra = hA[0] * wp.abs(wp.dot(col(RA, 0), L)) + hA[1] * wp.abs(wp.dot(col(RA, 1), L)) + hA[2] * wp.abs(wp.dot(col(RA, 2), L))
    rb = hB[0] * wp.abs(wp.dot(col(RB, 0), L)) + hB[1] * wp.abs(wp.dot(col(RB, 1), L)) + hB[2] * wp.abs(wp.dot(col(RB, 2), L))
    return wp.abs(wp.dot(T, L)) - ra - rb


@wp.func
def box_box(c: Contacts, k: PairCtx, xa: wp.transformd, hA: wp.vec3d, xb: wp.transformd, hB: wp.vec3d):
    """Separating-axis test over 15 axes; face axis: clip the incident face against the
    reference face (up to 8 points); edge axis: closest points of the two edges."""
    mc = k.margin + k.ra + k.rb
    RA = wp.quat_to_matrix(wp.transform_get_rotation(xa))
    RB = wp.quat_to_matrix(wp.transform_get_rotation(xb))
    cA = wp.transform_get_translation(xa)
    cB = wp.transform_get_translation(xb)
    T = cB - cA
    size = wp.max(wp.max(wp.max(hA[0], hA[1]), hA[2]), wp.max(wp.max(hB[0], hB[1]), hB[2]))
    ftol = f64(1.0e-6) * size
    face = int(-1)
    fs = f64(-1.0e300)
    for i in range(6):
        L = wp.vec3d(ZERO, ZERO, ZERO)
        if i < 3:
            L = col(RA, i)
        else:
            L = col(RB, i - 3)
        s = sat_sep(L, T, RA, hA, RB, hB)
        if s > mc:
            return
        # B's faces must beat A's by a tolerance: a stable choice for parallel faces
        tol = wp.where(i >= 3 and face < 3, ftol, ZERO)
        if s > fs + tol:
            fs = s
            face = i
    edge = int(-1)
    es = f64(-1.0e300)
    for e in range(9):
        L = wp.cross(col(RA, e // 3), col(RB, e % 3))
        ln = wp.length(L)
        if ln > f64(1.0e-6):
            L = L / ln
            s = sat_sep(L, T, RA, hA, RB, hB)
            if s > mc:
                return
            if s > es:
                es = s
                edge = e
    if edge >= 0 and es > fs + ftol * f64(10.0):
        i = edge // 3
        j = edge % 3
        L = wp.normalize(wp.cross(col(RA, i), col(RB, j)))
        n = L * sgn(wp.dot(T, L))
        pa0 = cA
        pb0 = cB
        for m in range(3):
            if m != i:
                pa0 = pa0 + col(RA, m) * (hA[m] * sgn(wp.dot(col(RA, m), n)))
            if m != j:
                pb0 = pb0 - col(RB, m) * (hB[m] * sgn(wp.dot(col(RB, m), n)))
        ea = col(RA, i) * hA[i]
        eb = col(RB, j) * hB[j]
        s, t = seg_seg(pa0 - ea, pa0 + ea, pb0 - eb, pb0 + eb)
        pa = pa0 - ea + ea * (TWO * s)
        pb = pb0 - eb + eb * (TWO * t)
        emit(c, k, pa, pb, n, -wp.dot(pb - pa, n))
        return
    # face contact: reference box R (owns the face), incident box I
    RR = RA
    hR = hA
    cR = cA
    RI = RB
    hI = hB
    cI = cB
    kf = face
    if face >= 3:
        RR = RB
        hR = hB
        cR = cB
        RI = RA
        hI = hA
        cI = cA
        kf = face - 3
    nref = col(RR, kf)
    nref = nref * sgn(wp.dot(cI - cR, nref))  # outward, towards the incident box
    u = (kf + 1) % 3
    v = (kf + 2) % 3
    eu = col(RR, u)
    ev = col(RR, v)
    cf = cR + nref * hR[kf]
    # incident face: most anti-parallel to nref
    j = int(0)
    best = f64(-1.0)
    for m in range(3):
        dm = wp.abs(wp.dot(col(RI, m), nref))
        if dm > best:
            best = dm
            j = m
    fn = col(RI, j) * (-sgn(wp.dot(col(RI, j), nref)))
    fc = cI + fn * hI[j]
    bu = col(RI, (j + 1) % 3) * hI[(j + 1) % 3]
    bv = col(RI, (j + 2) % 3) * hI[(j + 2) % 3]
    xs = vec8d()
    ys = vec8d()
    zs = vec8d()
    for m in range(4):
        su = wp.where(m == 0 or m == 3, ONE, -ONE)
        sv = wp.where(m < 2, ONE, -ONE)
        p = fc + bu * su + bv * sv - cf
        xs[m] = wp.dot(p, eu)
        ys[m] = wp.dot(p, ev)
        zs[m] = wp.dot(p, nref)
    nv = int(4)
    xs, ys, zs, nv = clip_poly(xs, ys, zs, nv, 0, ONE, hR[u])
    xs, ys, zs, nv = clip_poly(xs, ys, zs, nv, 0, -ONE, hR[u])
    xs, ys, zs, nv = clip_poly(xs, ys, zs, nv, 1, ONE, hR[v])
    xs, ys, zs, nv = clip_poly(xs, ys, zs, nv, 1, -ONE, hR[v])
    for m in range(nv):
        if zs[m] <= mc:
            pref = cf + eu * xs[m] + ev * ys[m]
            pinc = pref + nref * zs[m]
            if face < 3:
                emit(c, k, pref, pinc, nref, -zs[m])
            else:
                emit(c, k, pinc, pref, -nref, -zs[m])


# ----------------------------------------------------------------------------------------
# general convex pairs: support functions + Minkowski portal refinement (XenoCollide)
# ----------------------------------------------------------------------------------------
@wp.func
def support(shapes: ShapeData, s: int, x: wp.transformd, d: wp.vec3d):
    """World support point of shape s (core, without contact radius) in direction d."""
    typ = shapes.type[s]
    dims = shapes.dims[s]
    dl = wp.quat_rotate_inv(wp.transform_get_rotation(x), d)
    p = wp.vec3d(ZERO, ZERO, ZERO)
    ln = wp.length(dl)
    u = wp.vec3d(ZERO, ZERO, ZERO)
    if ln > TINY:
        u = dl / ln
    if typ == SPHERE:
        p = u * dims[0]
    elif typ == BOX:
        p = wp.vec3d(sgn(dl[0]) * dims[0], sgn(dl[1]) * dims[1], sgn(dl[2]) * dims[2])
    elif typ == CAPSULE:
        p = wp.vec3d(ZERO, ZERO, sgn(dl[2]) * dims[1]) + u * dims[0]
    elif typ == CYLINDER:
        rr = wp.sqrt(dl[0] * dl[0] + dl[1] * dl[1])
        if rr > TINY:
            p = wp.vec3d(dl[0] / rr * dims[0], dl[1] / rr * dims[0], ZERO)
        p[2] = sgn(dl[2]) * dims[1]
    elif typ == ELLIPSOID:
        # the point of x^T diag(1/r^2) x = 1 whose normal is d: diag(r^2) d / |diag(r) d|
        rd = wp.vec3d(dims[0] * dl[0], dims[1] * dl[1], dims[2] * dl[2])
        lr = wp.length(rd)
        if lr > TINY:
            p = wp.vec3d(dims[0] * rd[0], dims[1] * rd[1], dims[2] * rd[2]) / lr
    elif typ == CONE:
        # frustum: the farther along d of the two rim points (bottom r at -h, top r_top at +h)
        rr = wp.sqrt(dl[0] * dl[0] + dl[1] * dl[1])
        radial = wp.vec3d(ZERO, ZERO, ZERO)
        if rr > TINY:
            radial = wp.vec3d(dl[0] / rr, dl[1] / rr, ZERO)
        pb = radial * dims[0] - wp.vec3d(ZERO, ZERO, dims[1])
        pt = radial * dims[2] + wp.vec3d(ZERO, ZERO, dims[1])
        p = wp.where(wp.dot(pt, dl) > wp.dot(pb, dl), pt, pb)
    elif typ == CONVEX:
        iv = shapes.walk_from[s]
        if iv >= 0:
            # a large hull: walk its edges uphill (on a convex polytope a vertex no neighbour
            # beats is the support); the adjacency was built once on the host
            top = wp.dot(shapes.verts[iv], dl)
            for _step in range(shapes.vert_count[s]):
                nxt = iv
                for ke in range(shapes.adj_start[iv], shapes.adj_start[iv + 1]):
                    dj = wp.dot(shapes.verts[shapes.adj[ke]], dl)
                    if dj > top:
                        top = dj
                        nxt = shapes.adj[ke]
                if nxt == iv:
                    break
                iv = nxt
            p = shapes.verts[iv]
        else:
            v0 = shapes.vert_start[s]
            best = f64(-1.0e300)
            for i in range(v0, v0 + shapes.vert_count[s]):
                v = shapes.verts[i]
                dv = wp.dot(v, dl)
                if dv > best:
                    best = dv
                    p = v
    return wp.transform_point(x, p)


@wp.func
def tri_closest(p: wp.vec3d, a: wp.vec3d, b: wp.vec3d, c: wp.vec3d):
    """Closest point to p on triangle abc (Ericson, Real-Time Collision Detection 5.1.5)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    if d1 <= ZERO and d2 <= ZERO:
        return a
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= ZERO and d4 <= d3:
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= ZERO and d1 >= ZERO and d3 <= ZERO:
        return a + ab * (d1 / (d1 - d3))
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= ZERO and d5 <= d6:
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= ZERO and d2 >= ZERO and d6 <= ZERO:
        return a + ac * (d2 / (d2 - d6))
    va = d3 * d6 - d5 * d4
    if va <= ZERO and (d4 - d3) >= ZERO and (d5 - d6) >= ZERO:
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))
    den = ONE / (va + vb + vc)
    return a + ab * (vb * den) + ac * (vc * den)


@wp.func
def tri_support(tri: wp.mat33d, d: wp.vec3d):
    """Support of a triangle (rows: world vertices) in direction d."""
    p = wp.vec3d(tri[0, 0], tri[0, 1], tri[0, 2])
    best = wp.dot(p, d)
    for i in range(1, 3):
        v = wp.vec3d(tri[i, 0], tri[i, 1], tri[i, 2])
        dv = wp.dot(v, d)
        if dv > best:
            best = dv
            p = v
    return p


@wp.func
def msupport(shapes: ShapeData, sa: int, xa: wp.transformd, sb: int, xb: wp.transformd, d: wp.vec3d, infl: wp.float64,
             tri: wp.mat33d, use_tri: int):
    """Support of A (inflated by a ball of radius infl) minus B: returns (a - b, a, b). With
    use_tri, B is the triangle `tri` (rows: world vertices) instead of shape sb."""
    a = support(shapes, sa, xa, d) + wp.normalize(d) * infl
    b = wp.vec3d()
    if use_tri != 0:
        b = tri_support(tri, -d)
    else:
        b = support(shapes, sb, xb, -d)
    return a - b, a, b


@wp.func
def mpr(shapes: ShapeData, sa: int, xa: wp.transformd, sb: int, xb: wp.transformd, infl: wp.float64,
        tri: wp.mat33d, use_tri: int):
    """Minkowski portal refinement on M = (A + ball(infl)) - B (B: shape sb, or with use_tri
    the triangle `tri`). Returns (hit, normal A->B, depth, point on A, point on B) for the
    inflated A."""
    nz = wp.vec3d(ZERO, ZERO, ONE)
    ca = wp.transform_get_translation(xa)
    nfall = wp.vec3d(f64(1.0e-10), ZERO, ZERO)
    cb = wp.transform_get_translation(xb)
    if use_tri != 0:
        # the interior point: A's centre minus the triangle's point nearest to it, so that the
        # ray runs along the triangle's normal for a face contact (a centroid far to the side
        # would aim the ray at a side of A)
        t0 = wp.vec3d(tri[0, 0], tri[0, 1], tri[0, 2])
        t1 = wp.vec3d(tri[1, 0], tri[1, 1], tri[1, 2])
        t2 = wp.vec3d(tri[2, 0], tri[2, 1], tri[2, 2])
        cb = tri_closest(ca, t0, t1, t2)
        nfall = wp.normalize(wp.cross(t1 - t0, t2 - t0)) * f64(1.0e-10)
    v0 = ca - cb
    if wp.dot(v0, v0) < f64(1.0e-24):
        v0 = nfall
    n = -v0
    v1, a1, b1 = msupport(shapes, sa, xa, sb, xb, n, infl, tri, use_tri)
    if wp.dot(v1, n) <= ZERO:
        return False, nz, ZERO, a1, b1
    n = wp.cross(v1, v0)
    if wp.dot(n, n) < f64(1.0e-30) * wp.dot(v1, v1) * wp.dot(v0, v0):
        n = wp.normalize(v1 - v0)
        return True, n, wp.dot(v1, n), a1, b1
    v2, a2, b2 = msupport(shapes, sa, xa, sb, xb, n, infl, tri, use_tri)
    if wp.dot(v2, n) <= ZERO:
        return False, nz, ZERO, a1, b1
    n = wp.cross(v1 - v0, v2 - v0)
    if wp.dot(n, v0) > ZERO:
        tv = v1
        ta = a1
        tb = b1
        v1 = v2
        a1 = a2
        b1 = b2
        v2 = tv
        a2 = ta
        b2 = tb
        n = -n
    v3 = v0
    a3 = a1
    b3 = b1
    found = bool(False)
    for _it in range(128):
        v3, a3, b3 = msupport(shapes, sa, xa, sb, xb, n, infl, tri, use_tri)
        if wp.dot(v3, n) <= ZERO:
            return False, nz, ZERO, a1, b1
        if wp.dot(wp.cross(v1, v3), v0) < ZERO:
            v2 = v3
            a2 = a3
            b2 = b3
            n = wp.cross(v1 - v0, v3 - v0)
            continue
        if wp.dot(wp.cross(v3, v2), v0) < ZERO:
            v1 = v3
            a1 = a3
            b1 = b3
            n = wp.cross(v3 - v0, v2 - v0)
            continue
        found = bool(True)
        break
    if not found:
        return False, nz, ZERO, a1, b1
    hit = bool(False)
    nn = wp.normalize(v1 - v0)
    for _it in range(128):
        n = wp.cross(v2 - v1, v3 - v1)
        ln = wp.length(n)
        if ln < f64(1.0e-30):
            break
        nn = n / ln
        if wp.dot(nn, v1) >= ZERO:
            hit = bool(True)
        v4, a4, b4 = msupport(shapes, sa, xa, sb, xb, nn, infl, tri, use_tri)
        delta = wp.dot(v4 - v3, nn)
        if delta <= f64(1.0e-15) * (ONE + wp.length(v4)) or wp.dot(v4, nn) <= ZERO:
            break
        t = wp.cross(v4, v0)
        if wp.dot(v1, t) > ZERO:
            if wp.dot(v2, t) > ZERO:
                v1 = v4
                a1 = a4
                b1 = b4
            else:
                v3 = v4
                a3 = a4
                b3 = b4
        else:
            if wp.dot(v3, t) > ZERO:
                v2 = v4
                a2 = a4
                b2 = b4
            else:
                v1 = v4
                a1 = a4
                b1 = b4
    if not hit:
        return False, nz, ZERO, a1, b1
    # Depth along nn: the support of M in that direction (exact for that direction, and
    # the same for every point of a flat face). Location: the barycentric combination of
    # the witnesses at a point of the portal triangle; the two points are then placed
    # symmetrically about it so that pb - pa = -depth * nn exactly.
    v4, a4, b4 = msupport(shapes, sa, xa, sb, xb, nn, infl, tri, use_tri)
    depth = wp.dot(nn, v4)
    # prefer the origin's projection on the portal (exact on flat faces); where it falls
    # outside the portal triangle (curved parts), the ray's hit point, which cannot
    x = nn * wp.dot(nn, v1)
    w1 = wp.dot(wp.cross(v2 - x, v3 - x), nn)
    w2 = wp.dot(wp.cross(v3 - x, v1 - x), nn)
    w3 = wp.dot(wp.cross(v1 - x, v2 - x), nn)
    ws = w1 + w2 + w3
    if wp.min(wp.min(w1, w2), w3) < -f64(1.0e-9) * wp.abs(ws):
        x = v0 * (wp.dot(nn, v1) / wp.dot(nn, v0))
        w1 = wp.dot(wp.cross(v2 - x, v3 - x), nn)
        w2 = wp.dot(wp.cross(v3 - x, v1 - x), nn)
        w3 = wp.dot(wp.cross(v1 - x, v2 - x), nn)
        ws = w1 + w2 + w3
    mid = HALF * (a1 + b1)
    if wp.abs(ws) > f64(1.0e-30):
        mid = HALF * ((a1 + b1) * w1 + (a2 + b2) * w2 + (a3 + b3) * w3) / ws
    return True, nn, depth, mid + nn * (HALF * depth), mid - nn * (HALF * depth)


@wp.func
def refine_normal(shapes: ShapeData, sa: int, xa: wp.transformd, sb: int, xb: wp.transformd, infl: wp.float64,
                  n0: wp.vec3d, depth0: wp.float64, pa0: wp.vec3d, pb0: wp.vec3d):
    """MPR's normal is the surface normal where the ray from the interior point meets M: on
    curved parts (ellipsoids, spheres, rims) that is not the normal of least depth, off by
    (depth x offset)^2 / curvature. The depth along n, h(n) = max over M of m . n, is least
    (over unit n) at the true penetration depth (or minus the distance when apart), where the
    support point s(n) is parallel to n. Newton steps on h in the tangent plane, with the
    Hessian (M's curvature radii less h) from two more support calls; a step is kept only
    where it lowers h, so flat faces (where MPR is exact) are left as MPR found them. Near the
    optimum h is flat to second order: within ~1e-8 rad of it a step changes h by less than its
    rounding, so there a step is kept while it shrinks the tangential gradient |g| instead
    (measured to full precision), and the normal converges to ~1e-15 rather than stopping
    wherever the rounding of h first says "no lower" (2e-8 rad off, and device-dependent)."""
    n = n0
    depth = depth0
    pa = pa0
    pb = pb0
    sm, sa_, sb_ = msupport(shapes, sa, xa, sb, xb, n, infl, wp.mat33d(), 0)
    h = wp.dot(sm, n)
    eps = f64(1.0e-5)
    for _it in range(10):
        g = sm - n * h
        G = wp.length(g)
        if G <= f64(1.0e-14) * (ONE + wp.length(sm)):
            break
        u = g / G
        v = wp.cross(n, u)
        # the support point's derivative along the tangent plane (M's curvature radii),
        # by finite differences: Hessian of h on the sphere = K - h I
        su, a1, b1 = msupport(shapes, sa, xa, sb, xb, wp.normalize(n + u * eps), infl, wp.mat33d(), 0)
        sv, a2, b2 = msupport(shapes, sa, xa, sb, xb, wp.normalize(n + v * eps), infl, wp.mat33d(), 0)
        kuu = wp.dot(su - sm, u) / eps - h
        kvv = wp.dot(sv - sm, v) / eps - h
        kuv = HALF * (wp.dot(su - sm, v) + wp.dot(sv - sm, u)) / eps
        det = kuu * kvv - kuv * kuv
        if kuu <= ZERO or kvv <= ZERO or det <= f64(1.0e-12) * (kuu * kuu + kvv * kvv):
            break  # flat or saddle: MPR's answer stands
        tu = -G * kvv / det
        tv = G * kuv / det
        nn = wp.normalize(n + u * tu + v * tv)
        sn, an, bn = msupport(shapes, sa, xa, sb, xb, nn, infl, wp.mat33d(), 0)
        hn = wp.dot(sn, nn)
        if hn >= h:
            flat = hn - h <= f64(1.0e-14) * (ONE + wp.abs(h))  # no higher beyond h's rounding
            if not flat or not (wp.length(sn - nn * hn) < G):
                break
        n = nn
        h = hn
        sm = sn
        mid = HALF * (an + bn)
        depth = h
        pa = mid + n * (HALF * h)
        pb = mid - n * (HALF * h)
    return n, depth, pa, pb


@wp.func
def convex_convex(c: Contacts, k: PairCtx, shapes: ShapeData, xa: wp.transformd, xb: wp.transformd):
    infl = k.margin + k.ra + k.rb  # finds gaps up to the margin as overlaps of the inflated A
    hit, n, depth, pa, pb = mpr(shapes, k.sa, xa, k.sb, xb, infl, wp.mat33d(), 0)
    if hit:
        n, depth, pa, pb = refine_normal(shapes, k.sa, xa, k.sb, xb, infl, n, depth, pa, pb)
        emit(c, k, pa - n * infl, pb, n, depth - infl)


# ----------------------------------------------------------------------------------------
# triangle meshes (shape B): BVH mid-phase, then each triangle against A
# ----------------------------------------------------------------------------------------
@wp.func
def emit_mesh(c: Contacts, k: PairCtx, first: int, pa: wp.vec3d, pb: wp.vec3d, n: wp.vec3d, d_core: wp.float64,
              merge: wp.float64):
    """emit() for one triangle's contact: skipped where a contact of this pair already lies
    within `merge` (the same feature seen from a neighbouring triangle); when the pair holds
    MESH_MAX contacts, the shallowest is replaced if this one is deeper."""
    depth = d_core + k.ra + k.rb
    if depth < -k.margin:
        return
    w = k.world
    q = pa + n * k.ra
    shallow = int(-1)
    dmin = f64(1.0e300)
    for i in range(first, c.count[w]):
        e = c.point0[w, i] - q
        if wp.dot(e, e) <= merge * merge and wp.dot(c.normal[w, i], n) > f64(0.999):
            return
        if c.depth[w, i] < dmin:
            dmin = c.depth[w, i]
            shallow = i
    if c.count[w] - first < MESH_MAX:
        emit(c, k, pa, pb, n, d_core)
    elif depth > dmin:
        c.point0[w, shallow] = q
        c.point1[w, shallow] = pb - n * k.rb
        c.normal[w, shallow] = n
        c.depth[w, shallow] = depth


@wp.func
def convex_mesh(c: Contacts, k: PairCtx, shapes: ShapeData, xa: wp.transformd, xb: wp.transformd):
    """Shape A (any convex type) against the triangle mesh B: the triangles whose bounding
    boxes meet A's bounding box (+ margin) come from the mesh's BVH; a sphere gets the exact
    closest point of each triangle (where it is a local minimum), a box parallel to a
    triangle its corners, anything else MPR against the triangle (exact on its face)."""
    sb = k.sb
    ta = shapes.type[k.sa]
    da = shapes.dims[k.sa]
    # A's bounding box in the mesh frame, from its support along the mesh's axes (tighter than
    # its bounding sphere: fewer triangles to test), grown by the margin and the radii
    grow = k.margin + k.ra + k.rb
    inv = wp.transform_inverse(xb)
    mesh_rot = wp.transform_get_rotation(xb)
    lo = wp.vec3()
    hi = wp.vec3()
    for ax in range(3):
        e = wp.vec3d(ZERO, ZERO, ZERO)
        e[ax] = ONE
        ew = wp.quat_rotate(mesh_rot, e)
        top = wp.transform_point(inv, support(shapes, k.sa, xa, ew))
        bot = wp.transform_point(inv, support(shapes, k.sa, xa, -ew))
        lo[ax] = float(bot[ax] - grow)
        hi[ax] = float(top[ax] + grow)
    # float32 BVH boxes: pad by a relative 1e-6 of the coordinates
    pad = float(1.0e-6) * (wp.max(wp.abs(lo[0]), wp.abs(hi[0])) + wp.max(wp.abs(lo[1]), wp.abs(hi[1]))
                           + wp.max(wp.abs(lo[2]), wp.abs(hi[2]))) + float(1.0e-6)
    lo = lo - wp.vec3(pad, pad, pad)
    hi = hi + wp.vec3(pad, pad, pad)
    merge = f64(1.0e-9) * (ONE + shapes.bound[k.sa])
    first = c.count[k.world]
    v0 = shapes.vert_start[sb]
    t0 = shapes.tri_start[sb]
    infl = k.margin + k.ra + k.rb
    polytope = ta == BOX or ta == CONVEX
    # A box or hull lying on triangles gets its corners (face_corners) instead of one MPR
    # point per triangle under it (many equal points that the cap would pick among at random
    # from step to step); a second pass adds those MPR points only where the corners gave
    # fewer than 3 contacts (a plateau smaller than the box's face).
    for sweep in range(2):
        if sweep == 1 and (not polytope or c.count[k.world] - first >= 3):
            break
        # A query reopened after a nested one passes the triangles it had handed out before (the
        # traversal order is deterministic); on the CPU it is opened once.
        skip = int(0)
        reopen = int(1)
        while reopen != 0:
            reopen = int(0)
            query = wp.mesh_query_aabb(shapes.mesh[sb], lo, hi)
            f = int(0)
            seen = int(0)  # triangles this query has handed out
            while wp.mesh_query_aabb_next(query, f):
                seen += 1
                if seen <= skip:
                    continue
                ti = shapes.tris[t0 + f]
                p0 = wp.transform_point(xb, shapes.verts[v0 + ti[0]])
                p1 = wp.transform_point(xb, shapes.verts[v0 + ti[1]])
                p2 = wp.transform_point(xb, shapes.verts[v0 + ti[2]])
                if ta == SPHERE:
                    pa = wp.transform_get_translation(xa)
                    q = tri_closest(pa, p0, p1, p2)
                    dv = q - pa
                    L = wp.length(dv)
                    if L > f64(1.0e-14) and da[0] - L + k.ra + k.rb >= -k.margin:
                        if sphere_local_min(shapes, sb, xb, lo, hi, f, pa, q, L):
                            n = dv / L
                            emit_mesh(c, k, first, pa + n * da[0], q, n, da[0] - L, merge)
                        if shapes.reopen_queries != 0:
                            # the query nested in sphere_local_min has overwritten this one's stack
                            # (CUDA, ShapeData.reopen_queries): open it again past this triangle
                            skip = seen
                            reopen = int(1)
                            break
                else:
                    nf = wp.normalize(wp.cross(p1 - p0, p2 - p0))
                    if sweep == 0 and ta == BOX and box_face_parallel(xa, nf):
                        # a box face parallel to the triangle (a box resting on a flat mesh): its
                        # corners are the contacts, no MPR needed (the common case, and the cheap one)
                        n = -nf
                        if wp.dot(wp.transform_get_translation(xa) - p0, nf) < ZERO:
                            n = nf
                        face_corners(c, k, shapes, first, xa, p0, p1, p2, n, merge)
                        continue
                    tri = wp.mat33d(p0[0], p0[1], p0[2], p1[0], p1[1], p1[2], p2[0], p2[1], p2[2])
                    hit, n, depth, pa, pb = mpr(shapes, k.sa, xa, k.sb, xb, infl, tri, 1)
                    if hit:
                        flat = False
                        if polytope:
                            flat = wp.abs(wp.dot(nf, n)) >= ONE - f64(1.0e-9)
                        if sweep == 0:
                            if flat:
                                face_corners(c, k, shapes, first, xa, p0, p1, p2, n, merge)
                            elif not polytope or depth - infl + k.ra + k.rb >= ZERO:
                                # a box's or hull's face or edge against a triangle's vertex or edge
                                # only once they overlap: within the margin, every vertex of a flat
                                # region under a tilting box would be one more (redundant) constraint
                                emit_mesh(c, k, first, pa - n * infl, pb, n, depth - infl, merge)
                        elif flat:
                            emit_mesh(c, k, first, pa - n * infl, pb, n, depth - infl, merge)


@wp.func
def sphere_local_min(shapes: ShapeData, sb: int, xb: wp.transformd, lo: wp.vec3, hi: wp.vec3, f: int,
                     centre: wp.vec3d, q: wp.vec3d, dist: wp.float64) -> bool:
    """Triangle f's point q nearest to the ball's centre is a contact only where the distance
    to the surface has a local minimum there: no other triangle through q (a neighbour across
    q's edge or vertex) comes nearer. Drops the ghost contacts that the edges of a flat or
    smooth region's neighbouring triangles would add (redundant constraints, slow to solve);
    keeps both sides of a valley and a ridge's edge."""
    tol = f64(1.0e-12) * (ONE + dist)
    v0 = shapes.vert_start[sb]
    t0 = shapes.tri_start[sb]
    query = wp.mesh_query_aabb(shapes.mesh[sb], lo, hi)
    g = int(0)
    while wp.mesh_query_aabb_next(query, g):
        if g == f:
            continue
        ti = shapes.tris[t0 + g]
        a = wp.transform_point(xb, shapes.verts[v0 + ti[0]])
        b = wp.transform_point(xb, shapes.verts[v0 + ti[1]])
        c = wp.transform_point(xb, shapes.verts[v0 + ti[2]])
        if wp.length(tri_closest(q, a, b, c) - q) <= tol:  # the neighbour passes through q
            if wp.length(tri_closest(centre, a, b, c) - centre) < dist - tol:
                return False
    return True


@wp.func
def box_face_parallel(xa: wp.transformd, nf: wp.vec3d) -> bool:
    """A face of the box with pose xa is parallel to the unit normal nf."""
    q = wp.transform_get_rotation(xa)
    best = f64(0.0)
    for i in range(3):
        e = wp.vec3d(ZERO, ZERO, ZERO)
        e[i] = ONE
        best = wp.max(best, wp.abs(wp.dot(wp.quat_rotate(q, e), nf)))
    return best >= ONE - f64(1.0e-9)


@wp.func
def inside_tri(q: wp.vec3d, a: wp.vec3d, b: wp.vec3d, c: wp.vec3d, n: wp.vec3d) -> bool:
    """q (in the triangle's plane, up to round-off) inside triangle abc seen along n."""
    e0 = wp.dot(wp.cross(b - a, q - a), n)
    e1 = wp.dot(wp.cross(c - b, q - b), n)
    e2 = wp.dot(wp.cross(a - c, q - c), n)
    return (e0 >= ZERO and e1 >= ZERO and e2 >= ZERO) or (e0 <= ZERO and e1 <= ZERO and e2 <= ZERO)


@wp.func
def face_corners(c: Contacts, k: PairCtx, shapes: ShapeData, first: int, xa: wp.transformd, t0: wp.vec3d,
                 t1: wp.vec3d, t2: wp.vec3d, n: wp.vec3d, merge: wp.float64):
    """A box or hull touching a triangle on its face (the contact normal is the triangle's):
    its vertices within the margin of the triangle's plane and above the triangle become
    contacts too, so a box resting on a mesh gets its corners (as on a plane), not one point
    per triangle."""
    mc = k.margin + k.ra + k.rb
    ta = shapes.type[k.sa]
    m = int(8)
    v0 = int(0)
    if ta == CONVEX:
        v0 = shapes.vert_start[k.sa]
        m = shapes.vert_count[k.sa]
    h = shapes.dims[k.sa]
    for i in range(m):
        pl = wp.vec3d()
        if ta == BOX:
            pl = wp.vec3d(wp.where((i & 1) != 0, h[0], -h[0]), wp.where((i & 2) != 0, h[1], -h[1]),
                          wp.where((i & 4) != 0, h[2], -h[2]))
        else:
            pl = shapes.verts[v0 + i]
        p = wp.transform_point(xa, pl)
        d = wp.dot(p - t0, n)  # > 0: below the triangle's plane, seen from A
        if d >= -mc:
            q = p - n * d
            if inside_tri(q, t0, t1, t2, n):
                emit_mesh(c, k, first, p, q, n, d, merge)


# ----------------------------------------------------------------------------------------
# dispatch
# ----------------------------------------------------------------------------------------
@wp.func
def shape_world(shapes: ShapeData, body_q: wp.array2d(dtype=wp.transformd), w: int, s: int):
    x = shapes.xform[s]
    b = shapes.body[s]
    if b >= 0:
        x = wp.transform_multiply(body_q[w, b], x)
    return x


@wp.func
def collide_pair(c: Contacts, k: PairCtx, shapes: ShapeData, xa: wp.transformd, xb: wp.transformd):
    ta = shapes.type[k.sa]
    tb = shapes.type[k.sb]
    da = shapes.dims[k.sa]
    db = shapes.dims[k.sb]
    pa = wp.transform_get_translation(xa)
    pb = wp.transform_get_translation(xb)
    if ta == PLANE:
        if tb == SPHERE:
            plane_point(c, k, xa, pb, db[0])
        elif tb == CAPSULE:
            ab = axis_z(xb)
            plane_point(c, k, xa, pb - ab * db[1], db[0])
            if db[1] > ZERO:
                plane_point(c, k, xa, pb + ab * db[1], db[0])
        elif tb == BOX:
            plane_box(c, k, xa, xb, db)
        elif tb == CYLINDER:
            plane_cylinder(c, k, xa, xb, db[0], db[1], db[0])
        elif tb == CONE:
            plane_cylinder(c, k, xa, xb, db[0], db[1], db[2])
        elif tb == CONVEX:
            plane_convex(c, k, shapes, k.sb, xa, xb)
        elif tb == ELLIPSOID:
            # strictly convex: the one lowest point is the support point against the normal
            n = axis_z(xa)
            p = support(shapes, k.sb, xb, -n)
            d = wp.dot(p - pa, n)
            emit(c, k, p - n * d, p, n, -d)
    elif ta == SPHERE and tb == SPHERE:
        ball_ball(c, k, pa, da[0], pb, db[0], wp.vec3d(ZERO, ZERO, ONE))
    elif ta == SPHERE and tb == CAPSULE:
        ab = axis_z(xb)
        q = seg_closest(pa, pb - ab * db[1], pb + ab * db[1])
        ball_ball(c, k, pa, da[0], q, db[0], any_perp(ab))
    elif ta == SPHERE and tb == BOX:
        ball_box(c, k, pa, da[0], xb, db)
    elif ta == CAPSULE and tb == CAPSULE:
        capsule_capsule(c, k, xa, da[0], da[1], xb, db[0], db[1])
    elif ta == CAPSULE and tb == BOX:
        capsule_box(c, k, xa, da[0], da[1], xb, db)
    elif ta == BOX and tb == BOX:
        box_box(c, k, xa, da, xb, db)
    elif tb == MESH:
        if ta != PLANE and ta != MESH:  # both are refused by the broad phase
            convex_mesh(c, k, shapes, xa, xb)
    else:
        convex_convex(c, k, shapes, xa, xb)


@wp.func
def pair_in_reach(shapes: ShapeData, sa: int, sb: int, xa: wp.transformd, xb: wp.transformd,
                  margin: wp.float64) -> bool:
    """Bounding-sphere cull of a candidate pair (a plane: B's sphere against the half-space)."""
    pa = wp.transform_get_translation(xa)
    pb = wp.transform_get_translation(xb)
    if shapes.type[sa] == PLANE:
        return wp.dot(pb - pa, axis_z(xa)) <= shapes.bound[sb] + margin
    return wp.length(pb - pa) <= shapes.bound[sa] + shapes.bound[sb] + margin


@wp.func
def pair_context(shapes: ShapeData, w: int, p: int, sa: int, sb: int, margin: wp.float64) -> PairCtx:
    """What every pair routine needs to know about pair p of world w."""
    k = PairCtx()
    k.world = w
    k.pair = p
    k.sa = sa
    k.sb = sb
    k.ba = shapes.body[sa]
    k.bb = shapes.body[sb]
    k.ra = shapes.radius[sa]
    k.rb = shapes.radius[sb]
    k.margin = margin
    return k


@wp.func
def collide_world(w: int, shapes: ShapeData, pairs: wp.array(dtype=wp.vec2i),
                  body_q: wp.array2d(dtype=wp.transformd), margin: wp.float64, c: Contacts):
    """All contacts of world w into row w of c (count reset first). Callable from a solver
    kernel that runs one thread per world."""
    c.count[w] = 0
    c.overflow[w] = 0
    for p in range(pairs.shape[0]):
        sa = pairs[p][0]
        sb = pairs[p][1]
        xa = shape_world(shapes, body_q, w, sa)
        xb = shape_world(shapes, body_q, w, sb)
        if not pair_in_reach(shapes, sa, sb, xa, xb, margin):
            continue
        collide_pair(c, pair_context(shapes, w, p, sa, sb, margin), shapes, xa, xb)


@wp.kernel
def collide_kernel(shapes: ShapeData, pairs: wp.array(dtype=wp.vec2i), body_q: wp.array2d(dtype=wp.transformd),
                   margin: wp.float64, contacts: Contacts):
    w = wp.tid()
    collide_world(w, shapes, pairs, body_q, margin, contacts)


# ----------------------------------------------------------------------------------------
# host side
# ----------------------------------------------------------------------------------------
def shape_data(table: ShapeTable, device=None) -> ShapeData:
    """Upload the geometric columns of a ShapeTable."""
    n = len(table)
    s = ShapeData()
    s.type = wp.array(table.type.astype(np.int32), dtype=wp.int32, device=device)
    s.body = wp.array(table.body.astype(np.int32), dtype=wp.int32, device=device)
    xf = np.concatenate([table.local_pos.reshape(n, 3), table.local_rot.reshape(n, 4)], axis=1)
    s.xform = wp.array(xf.reshape(n, 7), dtype=wp.transformd, device=device)
    s.dims = wp.array(table.dims.reshape(n, 3), dtype=wp.vec3d, device=device)
    s.radius = wp.array(table.contact_radius.astype(np.float64), dtype=wp.float64, device=device)
    bound = np.where(np.isfinite(table.bound_radius), table.bound_radius, -1.0)
    s.bound = wp.array(bound.astype(np.float64), dtype=wp.float64, device=device)
    s.vert_start = wp.array(table.vert_start.astype(np.int32), dtype=wp.int32, device=device)
    s.vert_count = wp.array(table.vert_count.astype(np.int32), dtype=wp.int32, device=device)
    verts = table.verts.reshape(-1, 3) if len(table.verts) else np.zeros((1, 3))
    s.verts = wp.array(verts.astype(np.float64), dtype=wp.vec3d, device=device)
    tris = getattr(table, "tris", None)
    tri_start = getattr(table, "tri_start", None)
    tri_count = getattr(table, "tri_count", None)
    if tri_start is None:
        tri_start = tri_count = np.zeros(n, np.int32)
    tris = np.asarray(tris if tris is not None and len(tris) else np.zeros((1, 3)), np.int32).reshape(-1, 3)
    s.tri_start = wp.array(np.asarray(tri_start, np.int32), dtype=wp.int32, device=device)
    s.tris = wp.array(tris, dtype=wp.vec3i, device=device)
    s.reopen_queries = int(wp.get_device(device).is_cuda)
    # one BVH per mesh shape (float32 points in the shape frame; exact geometry stays float64)
    meshes, ids = [], np.zeros(n, np.uint64)
    for i in range(n):
        if int(table.type[i]) != SHAPE_MESH:
            continue
        v0, nv = int(table.vert_start[i]), int(table.vert_count[i])
        t0, nt = int(tri_start[i]), int(tri_count[i])
        if nv == 0 or nt == 0:
            raise ValueError(f"{table.paths[i]}: a triangle-mesh shape needs points and triangles")
        m = wp.Mesh(points=wp.array(verts[v0:v0 + nv].astype(np.float32), dtype=wp.vec3, device=device),
                    indices=wp.array(tris[t0:t0 + nt].reshape(-1).astype(np.int32), dtype=wp.int32, device=device))
        meshes.append(m)
        ids[i] = m.id
    walk_from, adj_start, adj = hull_walk_data(table)
    s.walk_from = wp.array(walk_from, dtype=wp.int32, device=device)
    s.adj_start = wp.array(adj_start, dtype=wp.int32, device=device)
    s.adj = wp.array(adj if len(adj) else np.zeros(1, np.int32), dtype=wp.int32, device=device)
    s.mesh = wp.array(ids, dtype=wp.uint64, device=device)
    # the BVHs live as long as the id array does (structs holding this ShapeData share it;
    # a struct instance itself may be copied when nested in another struct)
    s.mesh.usdphys_meshes = meshes
    return s


# Hulls with more vertices than this get the edge walk for their support function; below it
# a plain scan over the hull's vertices is as fast (and picks the first of equal vertices).
HULL_WALK_MIN_VERTS = 64


def hull_walk_data(table: ShapeTable):
    """Per shape, the vertex the support walk starts at (-1: scan), and the hull's edge
    adjacency per vertex (CSR over the table's vertices), from Qhull's facets; built once.
    Without scipy (or where Qhull refuses the points) every hull is scanned."""
    n, nv = len(table), len(table.verts)
    walk_from = np.full(n, -1, np.int32)
    nbrs = [set() for _ in range(nv)]
    big = [i for i in range(n) if int(table.type[i]) == SHAPE_CONVEX and int(table.vert_count[i]) > HULL_WALK_MIN_VERTS]
    if big:
        try:
            from scipy.spatial import ConvexHull, QhullError
        except ImportError:
            big = []
    for i in big:
        v0, cnt = int(table.vert_start[i]), int(table.vert_count[i])
        try:
            hull = ConvexHull(np.asarray(table.verts[v0:v0 + cnt], np.float64))
        except (QhullError, ValueError):
            continue
        for a, b, c in hull.simplices:  # triangulated facets: their edges join hull vertices
            for x, y in ((a, b), (b, c), (c, a)):
                nbrs[v0 + x].add(v0 + y)
                nbrs[v0 + y].add(v0 + x)
        walk_from[i] = v0 + int(hull.vertices[0])
    counts = np.array([len(x) for x in nbrs], np.int32)
    adj_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    adj = np.array([j for x in nbrs for j in sorted(x)], np.int32)
    return walk_from, adj_start, adj


def allocate_contacts(num_worlds: int, capacity: int, device=None, zeros=None) -> Contacts:
    """Contact records of `num_worlds` worlds, `capacity` each. zeros(shape, dtype) allocates the
    [world, contact] arrays (the solver passes io.world_zeros: its memory layout; None: plain)."""
    if zeros is None:
        def zeros(shape, dtype):
            return wp.zeros(shape, dtype=dtype, device=device)
    c = Contacts()
    W, C = int(num_worlds), max(int(capacity), 1)
    c.count = wp.zeros(W, dtype=wp.int32, device=device)
    c.overflow = wp.zeros(W, dtype=wp.int32, device=device)
    for name in ("pair", "shape0", "shape1", "body0", "body1"):
        setattr(c, name, zeros((W, C), wp.int32))
    for name in ("point0", "point1", "normal"):
        setattr(c, name, zeros((W, C), wp.vec3d))
    c.depth = zeros((W, C), wp.float64)
    return c


def max_contacts(table: ShapeTable, pairs: np.ndarray) -> int:
    """Most contacts the candidate pairs can produce in one world."""
    if len(pairs) == 0:
        return 1
    return int(MAX_PAIR_CONTACTS[table.type[pairs[:, 0]], table.type[pairs[:, 1]]].sum())


class CollisionPipeline:
    """Candidate pairs + shape arrays + contact buffer for `num_worlds` copies of a model.

    collide(body_q) with body_q a wp.array2d(dtype=wp.transformd) of shape [W, B] (body rigid
    frames in world) fills `contacts`. capacity defaults to the most contacts the pairs can
    produce (no overflow possible); a smaller capacity drops the excess, counted in
    contacts.overflow and reported by `check_overflow`.
    """

    def __init__(self, table: ShapeTable, pairs: np.ndarray, num_worlds: int, capacity: int | None = None,
                 margin: float = 0.0, device=None):
        self.table = table
        self.num_worlds = int(num_worlds)
        self.device = wp.get_device(device)
        self.margin = float(margin)
        pairs = np.asarray(pairs, dtype=np.int32).reshape(-1, 2)
        self.pairs_np = pairs
        self.pairs = wp.array(pairs if len(pairs) else np.zeros((0, 2), np.int32), dtype=wp.vec2i, device=self.device)
        self.shapes = shape_data(table, self.device)
        self.capacity = max_contacts(table, pairs) if capacity is None else int(capacity)
        self.contacts = allocate_contacts(self.num_worlds, self.capacity, self.device)

    def collide(self, body_q: wp.array) -> Contacts:
        wp.launch(collide_kernel, dim=self.num_worlds,
                  inputs=[self.shapes, self.pairs, body_q, wp.float64(self.margin), self.contacts],
                  device=self.device)
        return self.contacts

    def check_overflow(self) -> int:
        """Dropped contacts summed over worlds; warns once per call when any."""
        dropped = int(self.contacts.overflow.numpy().sum())
        if dropped:
            worst = int(self.contacts.overflow.numpy().max())
            warn(f"contact buffer full (capacity {self.capacity} per world): {dropped} contacts dropped "
                 f"over {self.num_worlds} worlds (at most {worst} in one world); raise the capacity")
        return dropped

    def numpy(self) -> list[dict]:
        """Per world: dict of NumPy arrays trimmed to count (for tests and debugging)."""
        c = self.contacts
        count = c.count.numpy()
        cols = {name: getattr(c, name).numpy() for name in
                ("pair", "shape0", "shape1", "body0", "body1", "point0", "point1", "normal", "depth")}
        return [{name: v[w, : count[w]] for name, v in cols.items()} for w in range(self.num_worlds)]
