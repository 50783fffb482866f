"""Contact response in the solver: hard (NSC) and compliant (SMC) contact.

docs/solver.md ("Contact") has the derivation; in short, per step and per world (one thread):

1. ``contact_begin``: the narrow phase (``collide_world``) runs on the COM-frame poses at the
   step start with a speculative margin; every contact gets a normal and two tangent rows
   (Jacobians frozen at x_n, like the joint rows), a 3x3 Delassus block, a velocity target
   (speculative gap, Newton's impact law, or the implicit spring-damper of a compliant
   contact) and a warm start from the matched contact of the previous step.
2. ``contact_solve``: projected Gauss-Seidel on the contact impulses, starting from the
   velocities the joint solve produced without contact; after every sweep the joint rows are
   re-imposed through the already factorised joint matrix (block Gauss-Seidel: contacts and
   joints converge to one consistent solution). A second, position-only set of impulses
   (split impulse) removes penetration beyond a slop without touching velocities.
3. ``contact_kick``: the contact impulses are added to the predictor (v*, L) and the joint
   solve runs again, exactly, with them (step.py); the contact cache is written.
4. ``contact_end``: after the commit, the position-only velocity is taken out again.

All functions take plain arrays (not the step's structs) so this module does not import
step.py. Host-side setup is at the bottom: `put_contact_model` (shared by all worlds) and
`make_contact_state` (per-world buffers); usdphys/solver/io.py calls them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

from usdphys.errors import warn

from usdphys.solver.narrowphase import BOX, PLANE, SPHERE, Contacts, ShapeData, allocate_contacts, any_perp, collide_pair, max_contacts, pair_context, pair_in_reach, shape_data, shape_world
from usdphys.solver.broadphase import PairIndex, SweepState, pair_index, pairs_in_reach, sweep_state
from usdphys.solver.ldl import RowPattern
from usdphys.solver.ldl import ldl_solve as ldl_solve_rows

wp.set_module_options({"enable_backward": False})

f64 = wp.float64

from usdphys.types.shapes import SHAPE_BOX as SHAPE_BOX_HOST  # noqa: E402
from usdphys.types.shapes import SHAPE_PLANE as SHAPE_PLANE_HOST  # noqa: E402
from usdphys.types.shapes import SHAPE_SPHERE as SHAPE_SPHERE_HOST  # noqa: E402

KIND_OFF = wp.constant(-1)  # no force this step (compliant contact not touching, no dynamic body)
KIND_HARD = wp.constant(0)  # non-smooth: lambda_n >= 0 _|_ u_n - b_n >= 0
KIND_SOFT = wp.constant(1)  # compliant: implicit spring-damper, lambda_n >= 0

# Chrono's default effective radius of curvature (m) where both surfaces are flat (box, plane,
# hull): Hertz needs one; ChCollisionInfo uses 0.1 m.
DEFAULT_CURVATURE_RADIUS = 0.1


@wp.struct
class ContactModel:
    """Shared by all worlds: shapes, candidate pairs, materials, solver parameters."""

    n_pairs: int
    shapes: ShapeData
    pairs: wp.array(dtype=wp.vec2i)
    ix: PairIndex  # the pairs seen from each shape, for the per-step sweep (broadphase.py)
    mu_s: wp.array2d(dtype=wp.float64)  # [world, shape] (io.world_param: one row when no world varies it)
    mu_d: wp.array2d(dtype=wp.float64)
    rest: wp.array2d(dtype=wp.float64)
    hertz_c: wp.array(dtype=wp.float64)  # (1 - nu^2) / E, 1/Pa
    kappa: wp.array(dtype=wp.float64)  # surface curvature 1/R (0: flat), 1/m
    kn: wp.array(dtype=wp.float64)  # explicit normal stiffness N/m (nan: unauthored)
    gn: wp.array(dtype=wp.float64)  # explicit normal damping N s/m (nan: unauthored)
    soft: wp.array(dtype=wp.int32)  # 1: the material asks for compliant contact (explicit kn)
    reach: wp.array(dtype=wp.float64)  # per body: farthest shape point from the COM, m
    # per body: the bodies its joint and element rows connect it to, numbered (set_row_components):
    # an impulse on one moves no body of another through the joints
    body_comp: wp.array(dtype=wp.int32)
    n_comp: int
    smc: int  # 1: the scene asks for compliant contact everywhere
    margin: wp.float64  # minimum speculative margin, m
    slop: wp.float64  # penetration left alone by the position correction, m
    max_depenetration: wp.float64  # m/s: the fastest the position correction pushes bodies apart
    v_bounce: wp.float64  # below this approach speed restitution is 0, m/s (plus 2 |g| h)
    v_stick: wp.float64  # below this slip speed static friction applies, m/s (plus |g| h)
    max_sweeps: int
    tol: wp.float64  # PGS stops when no contact velocity changes by more, m/s
    # joint-coupled contact (_build_dense): after this many sweeps without converging, a step
    # with joint rows and at most n_dense contacts continues on the contacts' Delassus matrix
    # through the joints, J S J^T (0: never)
    n_dense: int
    dense_after: int


@wp.struct
class ContactState:
    """Per-world contact buffers ([W, C] contacts, [W, B] bodies, [W, R] joint rows)."""

    c: Contacts
    bq: wp.array2d(dtype=wp.transformd)  # COM-frame poses handed to the narrow phase
    sx: wp.array2d(dtype=wp.transformd)  # [W, S] each shape's world pose this step
    sw: SweepState  # the per-step sweep's order and pairs in reach
    kind: wp.array2d(dtype=wp.int32)
    dirs: wp.array2d(dtype=wp.mat33d)  # rows n, t1, t2
    a0: wp.array2d(dtype=wp.mat33d)  # rows r0 x d
    a1: wp.array2d(dtype=wp.mat33d)  # rows r1 x d
    b0: wp.array2d(dtype=wp.mat33d)  # Iinv0 a0^T (columns: angular velocity per unit impulse)
    b1: wp.array2d(dtype=wp.mat33d)
    kblk: wp.array2d(dtype=wp.mat33d)  # Delassus block J M^-1 J^T of the contact
    lam: wp.array2d(dtype=wp.vec3d)  # impulses (n, t1, t2), N s
    plam: wp.array2d(dtype=wp.float64)  # position-only normal impulse
    bn: wp.array2d(dtype=wp.float64)  # normal velocity target (hard)
    bp: wp.array2d(dtype=wp.float64)  # position-correction velocity target (hard)
    gam: wp.array2d(dtype=wp.float64)  # compliance 1 / (hk (h k + c)) (soft)
    f0h: wp.array2d(dtype=wp.float64)  # hk F(depth) (soft; hk the step's kick span)
    mu: wp.array2d(dtype=wp.float64)
    rest: wp.array2d(dtype=wp.float64)  # restitution coefficient of an impacting contact, else 0
    lamc: wp.array2d(dtype=wp.vec3d)  # impulses of the second (post-restitution) inelastic pass
    rimp: wp.array2d(dtype=wp.float64)  # restitution impulse (Poisson), along n
    point: wp.array2d(dtype=wp.vec3d)  # contact point (midpoint), world
    # the previous step's contacts, for warm starts and the static / dynamic friction choice
    prev_count: wp.array(dtype=wp.int32)
    prev_pair: wp.array2d(dtype=wp.int32)
    prev_point: wp.array2d(dtype=wp.vec3d)
    prev_lam: wp.array2d(dtype=wp.vec3d)  # world impulse vector
    prev_slip: wp.array2d(dtype=wp.float64)
    prev_anc0: wp.array2d(dtype=wp.vec3d)  # contact point on shape 0 in body 0's COM frame (world if static)
    prev_anc1: wp.array2d(dtype=wp.vec3d)
    # per body: velocity changes from contact (+ the joints' reaction), and position-only ones
    dv: wp.array2d(dtype=wp.vec3d)
    dw: wp.array2d(dtype=wp.vec3d)
    pv: wp.array2d(dtype=wp.vec3d)
    pw: wp.array2d(dtype=wp.vec3d)
    # per joint row: impulse changes from the block Gauss-Seidel coupling
    jlam: wp.array2d(dtype=wp.float64)
    pjlam: wp.array2d(dtype=wp.float64)
    # the contacts' Delassus matrix through the joints, one block per island (contacts whose
    # bodies joints or contacts connect; none couples two islands), [W, n_dense^2] 3x3 blocks
    # in all (_dslot: row k, column l is contact k's velocity per unit impulse at contact l), the
    # contact velocities (u) and normal pseudo-velocities (up) it updates, and probe buffers to build it
    dmat: wp.array2d(dtype=wp.mat33d)
    du: wp.array2d(dtype=wp.vec3d)
    dup: wp.array2d(dtype=wp.float64)
    tv: wp.array2d(dtype=wp.vec3d)
    tw: wp.array2d(dtype=wp.vec3d)
    tacc: wp.array2d(dtype=wp.float64)
    # the islands (_dense_layout): per row component its union-find parent and its island; per
    # contact its island and its place in it; per island its size, first member (imem) and
    # first block in dmat
    cpar: wp.array2d(dtype=wp.int32)
    cisl_of: wp.array2d(dtype=wp.int32)
    cisl: wp.array2d(dtype=wp.int32)
    cloc: wp.array2d(dtype=wp.int32)
    isize: wp.array2d(dtype=wp.int32)
    istart: wp.array2d(dtype=wp.int32)
    ibase: wp.array2d(dtype=wp.int32)
    imem: wp.array2d(dtype=wp.int32)
    owner: wp.array2d(dtype=wp.int32)  # [W, n_comp] the contact probed in a component (_build_dense)
    probed: wp.array2d(dtype=wp.int32)  # [W, C] 0: not yet, 2: in this batch, 1: done
    # diagnostics per world
    dropped: wp.array(dtype=wp.int32)  # contacts dropped for lack of capacity (summed over steps)
    sweeps: wp.array(dtype=wp.int32)  # most PGS sweeps any step needed
    unconverged: wp.array(dtype=wp.int32)  # steps that hit max_sweeps
    dense_steps: wp.array(dtype=wp.int32)  # steps that went on to the Delassus matrix through the joints


@wp.func
def _vel(v: wp.array2d(dtype=wp.vec3d), dv: wp.array2d(dtype=wp.vec3d), w: int, b: int) -> wp.vec3d:
    if b < 0:
        return wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    return v[w, b] + dv[w, b]


@wp.func
def _get(v: wp.array2d(dtype=wp.vec3d), w: int, b: int) -> wp.vec3d:
    if b < 0:
        return wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    return v[w, b]


@wp.func
def _inv_masses(inv_mass: wp.array(dtype=wp.float64), b0: int, b1: int):
    """The inverse masses of a contact's two bodies (0 for the world)."""
    im0 = f64(0.0)
    im1 = f64(0.0)
    if b0 >= 0:
        im0 = inv_mass[b0]
    if b1 >= 0:
        im1 = inv_mass[b1]
    return im0, im1


@wp.func
def _rows(a: wp.vec3d, b: wp.vec3d, c: wp.vec3d) -> wp.mat33d:
    return wp.mat33d(a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2])


@wp.func
def _rel_vel(D: wp.mat33d, A0: wp.mat33d, A1: wp.mat33d, v0: wp.vec3d, w0: wp.vec3d, v1: wp.vec3d,
             w1: wp.vec3d) -> wp.vec3d:
    """Velocity of body 1's contact point relative to body 0's along (n, t1, t2)."""
    return D * (v1 - v0) + A1 * w1 - A0 * w0


@wp.func
def _apply_to(cs: ContactState, w: int, k: int, b0: int, b1: int, im0: wp.float64, im1: wp.float64,
              dl: wp.vec3d, dv: wp.array2d(dtype=wp.vec3d), dw: wp.array2d(dtype=wp.vec3d)):
    """Add the free bodies' velocity change of impulse dl (n, t1, t2 components) to dv, dw."""
    lin = wp.transpose(cs.dirs[w, k]) * dl
    if b1 >= 0:
        dv[w, b1] = dv[w, b1] + im1 * lin
        dw[w, b1] = dw[w, b1] + cs.b1[w, k] * dl
    if b0 >= 0:
        dv[w, b0] = dv[w, b0] - im0 * lin
        dw[w, b0] = dw[w, b0] - cs.b0[w, k] * dl


@wp.func
def _apply(cs: ContactState, w: int, k: int, b0: int, b1: int, im0: wp.float64, im1: wp.float64,
           dl: wp.vec3d):
    """Add the velocity change of impulse dl (n, t1, t2 components) to both bodies."""
    _apply_to(cs, w, k, b0, b1, im0, im1, dl, cs.dv, cs.dw)


@wp.func
def _apply_pos(cs: ContactState, w: int, k: int, b0: int, b1: int, im0: wp.float64, im1: wp.float64,
               dp: wp.float64):
    """Position-only (pseudo) velocity change of a normal impulse dp."""
    dl = wp.vec3d(dp, f64(0.0), f64(0.0))
    lin = wp.transpose(cs.dirs[w, k]) * dl
    if b1 >= 0:
        cs.pv[w, b1] = cs.pv[w, b1] + im1 * lin
        cs.pw[w, b1] = cs.pw[w, b1] + cs.b1[w, k] * dl
    if b0 >= 0:
        cs.pv[w, b0] = cs.pv[w, b0] - im0 * lin
        cs.pw[w, b0] = cs.pw[w, b0] - cs.b0[w, k] * dl


@wp.func
def _beta(e: wp.float64) -> wp.float64:
    """Damping ratio factor of Chrono's SMC models, ln e / sqrt(ln^2 e + pi^2) (<= 0)."""
    if e <= f64(1.0e-12):
        return f64(-1.0)
    if e >= f64(1.0):
        return f64(0.0)
    le = wp.log(e)
    return le / wp.sqrt(le * le + f64(9.869604401089358))


@wp.func
def _to_body(bq: wp.array2d(dtype=wp.transformd), w: int, b: int, p: wp.vec3d) -> wp.vec3d:
    if b < 0:
        return p
    return wp.transform_point(wp.transform_inverse(bq[w, b]), p)


@wp.func
def _to_world(bq: wp.array2d(dtype=wp.transformd), w: int, b: int, p: wp.vec3d) -> wp.vec3d:
    if b < 0:
        return p
    return wp.transform_point(bq[w, b], p)


@wp.func
def _single_point_pair(ta: int, tb: int) -> int:
    """1 for the pair types the narrow phase answers with one MPR point although they can
    touch along a line or a face (type A <= type B): capsule, box, cylinder, hull against a
    cylinder or a hull. A sphere touches at one point anyway; planes, box-box and the
    capsule pairs have their own manifolds."""
    if ta == PLANE or ta == SPHERE:
        return 0
    if tb <= BOX:
        return 0
    return 1


@wp.func
def contact_collide(cm: ContactModel, cs: ContactState, w: int, margin: wp.float64):
    """The narrow phase's per-world loop (collide_world) plus contact persistence: for pairs
    that get a single MPR point, up to 3 points of the previous step's manifold are kept while
    they still touch (re-evaluated on the moved bodies along the new normal, drifted
    tangentially by less than 2 % of the smaller shape, not closer than 10 % of it to another
    point), so a hull or cylinder resting on a face builds a full manifold over a few steps."""
    c = cs.c
    shapes = cm.shapes
    c.count[w] = 0
    c.overflow[w] = 0
    n_prev = cs.prev_count[w]
    j0 = int(0)
    for s in range(shapes.type.shape[0]):  # each shape's world pose, once a step
        cs.sx[w, s] = shape_world(shapes, cs.bq, w, s)
    n_test = cm.pairs.shape[0]
    listed = int(0)  # 1: the sweep listed the pairs in reach (cs.sw.near), ascending
    if cm.ix.sweep != 0:
        k_near = pairs_in_reach(cm.ix, cs.sw, shapes, cm.pairs, cs.sx, w, margin)
        if k_near >= 0:
            n_test = k_near
            listed = 1
        else:
            cs.sw.full[w] = cs.sw.full[w] + 1
    for n_p in range(n_test):
        p = n_p
        if listed != 0:
            p = cs.sw.near[w, n_p]
        sa = cm.pairs[p][0]
        sb = cm.pairs[p][1]
        xa = cs.sx[w, sa]
        xb = cs.sx[w, sb]
        if not pair_in_reach(shapes, sa, sb, xa, xb, margin):
            continue
        k = pair_context(shapes, w, p, sa, sb, margin)
        first = c.count[w]
        collide_pair(c, k, shapes, xa, xb)
        if c.count[w] != first + 1 or _single_point_pair(shapes.type[sa], shapes.type[sb]) == 0:
            continue
        while j0 < n_prev and cs.prev_pair[w, j0] < p:
            j0 = j0 + 1
        size = wp.min(shapes.bound[sa], shapes.bound[sb])
        if size < f64(0.0):
            size = wp.max(shapes.bound[sa], shapes.bound[sb])
        drift = f64(0.02) * size
        sep2 = (f64(0.1) * size) * (f64(0.1) * size)
        n = c.normal[w, first]
        j = j0
        while j < n_prev and cs.prev_pair[w, j] == p:
            q0 = _to_world(cs.bq, w, k.ba, cs.prev_anc0[w, j])
            q1 = _to_world(cs.bq, w, k.bb, cs.prev_anc1[w, j])
            d = q1 - q0
            dn = wp.dot(d, n)
            keep = int(0)
            if -dn >= -margin and wp.length(d - dn * n) <= drift:
                keep = int(1)
                mid = f64(0.5) * (q0 + q1)
                for i in range(first, c.count[w]):
                    e = mid - f64(0.5) * (c.point0[w, i] + c.point1[w, i])
                    e = e - wp.dot(e, n) * n
                    if wp.dot(e, e) < sep2:
                        keep = int(0)
            if keep == 1:
                i = c.count[w]
                if i - first >= 4:
                    break
                if i < c.depth.shape[1]:
                    c.pair[w, i] = p
                    c.shape0[w, i] = sa
                    c.shape1[w, i] = sb
                    c.body0[w, i] = k.ba
                    c.body1[w, i] = k.bb
                    c.point0[w, i] = q0
                    c.point1[w, i] = q0 + dn * n
                    c.normal[w, i] = n
                    c.depth[w, i] = -dn
                    c.count[w] = i + 1
                else:
                    c.overflow[w] = c.overflow[w] + 1
            j = j + 1


@wp.func
def contact_begin(cm: ContactModel, cs: ContactState, w: int, h: wp.float64, hk: wp.float64, nb: int,
                  gravity: wp.vec3d,
                  inv_mass: wp.array(dtype=wp.float64), pos: wp.array2d(dtype=wp.vec3d),
                  rot: wp.array2d(dtype=wp.quatd), vel: wp.array2d(dtype=wp.vec3d),
                  omega: wp.array2d(dtype=wp.vec3d), vfree: wp.array2d(dtype=wp.vec3d),
                  wfree: wp.array2d(dtype=wp.vec3d), iinv: wp.array2d(dtype=wp.mat33d), nr: int) -> int:
    """Detect contacts at the step start and build their rows; returns the contact count.

    vel/omega: the state's velocities (before this step); vfree/wfree: the velocities the
    joint solve produced without contact (the PGS starts from them). h: the step (gaps close
    over it); hk: its kick span (step.kick_span: a compliant contact's impulse is hk F).
    """
    z = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    gh = wp.length(gravity) * h
    vmax = f64(0.0)
    for b in range(nb):
        cs.bq[w, b] = wp.transformd(pos[w, b], rot[w, b])
        cs.dv[w, b] = z
        cs.dw[w, b] = z
        cs.pv[w, b] = z
        cs.pw[w, b] = z
        vmax = wp.max(vmax, wp.length(vel[w, b]) + wp.length(omega[w, b]) * cm.reach[b])
    for i in range(nr):
        cs.jlam[w, i] = f64(0.0)
        cs.pjlam[w, i] = f64(0.0)
    # speculative margin: two bodies closing at the largest point speed (+ one step of gravity)
    margin = cm.margin + f64(2.0) * h * (vmax + gh)
    contact_collide(cm, cs, w, margin)
    n_c = cs.c.count[w]
    cs.dropped[w] = cs.dropped[w] + cs.c.overflow[w]
    v_bounce = cm.v_bounce + f64(2.0) * gh
    v_stick = cm.v_stick + gh
    n_prev = cs.prev_count[w]
    j0 = int(0)
    for k in range(n_c):
        sa = cs.c.shape0[w, k]
        sb = cs.c.shape1[w, k]
        b0 = cs.c.body0[w, k]
        b1 = cs.c.body1[w, k]
        n = cs.c.normal[w, k]
        depth = cs.c.depth[w, k]
        p = f64(0.5) * (cs.c.point0[w, k] + cs.c.point1[w, k])
        cs.point[w, k] = p
        im0 = f64(0.0)
        im1 = f64(0.0)
        I0 = wp.mat33d()
        I1 = wp.mat33d()
        r0 = z
        r1 = z
        if b0 >= 0:
            im0 = inv_mass[b0]
            I0 = iinv[w, b0]
            r0 = p - pos[w, b0]
        if b1 >= 0:
            im1 = inv_mass[b1]
            I1 = iinv[w, b1]
            r1 = p - pos[w, b1]
        t1 = any_perp(n)
        t2 = wp.cross(n, t1)
        D = _rows(n, t1, t2)
        A0 = _rows(wp.cross(r0, n), wp.cross(r0, t1), wp.cross(r0, t2))
        A1 = _rows(wp.cross(r1, n), wp.cross(r1, t1), wp.cross(r1, t2))
        B0 = I0 * wp.transpose(A0)
        B1 = I1 * wp.transpose(A1)
        K = (im0 + im1) * wp.identity(n=3, dtype=wp.float64) + A0 * B0 + A1 * B1
        cs.dirs[w, k] = D
        cs.a0[w, k] = A0
        cs.a1[w, k] = A1
        cs.b0[w, k] = B0
        cs.b1[w, k] = B1
        cs.kblk[w, k] = K
        # match the previous step's contact: same pair (both lists are in pair order), nearest point
        pair = cs.c.pair[w, k]
        while j0 < n_prev and cs.prev_pair[w, j0] < pair:
            j0 = j0 + 1
        best = int(-1)
        bd = f64(1.0e300)
        j = j0
        while j < n_prev and cs.prev_pair[w, j] == pair:
            d2 = wp.length_sq(cs.prev_point[w, j] - p)
            if d2 < bd:
                bd = d2
                best = j
            j = j + 1
        u_free = _rel_vel(D, A0, A1, _get(vfree, w, b0), _get(wfree, w, b0), _get(vfree, w, b1), _get(wfree, w, b1))
        slip_ref = f64(0.0)
        if best >= 0:
            slip_ref = cs.prev_slip[w, best]
        else:
            u_old = _rel_vel(D, A0, A1, _get(vel, w, b0), _get(omega, w, b0), _get(vel, w, b1), _get(omega, w, b1))
            slip_ref = wp.sqrt(u_old[1] * u_old[1] + u_old[2] * u_old[2])
        mu = wp.min(cm.mu_s[w, sa], cm.mu_s[w, sb])
        if slip_ref > v_stick:
            mu = wp.min(cm.mu_d[w, sa], cm.mu_d[w, sb])
        e = wp.min(cm.rest[w, sa], cm.rest[w, sb])
        kind = KIND_HARD
        bn = f64(0.0)
        bp = f64(0.0)
        gam = f64(0.0)
        f0h = f64(0.0)
        rst = f64(0.0)
        if im0 + im1 <= f64(0.0):
            kind = KIND_OFF
        elif cm.smc != 0 or cm.soft[sa] != 0 or cm.soft[sb] != 0:
            kind = KIND_OFF
            if depth > f64(0.0):
                mstar = f64(1.0) / (im0 + im1)
                kn_a = cm.kn[sa]
                kn_b = cm.kn[sb]
                keff = f64(0.0)
                c = f64(0.0)
                F0 = f64(0.0)
                if not (wp.isnan(kn_a) and wp.isnan(kn_b)):
                    # Hooke with the authored coefficients (the mean where both are authored)
                    kn = kn_a
                    if wp.isnan(kn_a):
                        kn = kn_b
                    elif not wp.isnan(kn_b):
                        kn = f64(0.5) * (kn_a + kn_b)
                    gn_a = cm.gn[sa]
                    gn_b = cm.gn[sb]
                    if wp.isnan(gn_a) and wp.isnan(gn_b):
                        c = f64(-2.0) * _beta(e) * wp.sqrt(mstar * kn)  # damping ratio from e
                    elif wp.isnan(gn_a):
                        c = gn_b
                    elif wp.isnan(gn_b):
                        c = gn_a
                    else:
                        c = f64(0.5) * (gn_a + gn_b)
                    keff = kn
                    F0 = kn * depth
                else:
                    # Hertz from Young's modulus / Poisson ratio (Chrono's SMC model)
                    estar = f64(1.0) / (cm.hertz_c[sa] + cm.hertz_c[sb])
                    kap = cm.kappa[sa] + cm.kappa[sb]
                    rstar = f64(DEFAULT_CURVATURE_RADIUS)
                    if kap > f64(0.0):
                        rstar = f64(1.0) / kap
                    sq = wp.sqrt(rstar * depth)
                    keff = f64(2.0) * estar * sq  # dF/d(depth)
                    F0 = f64(4.0) / f64(3.0) * estar * sq * depth
                    c = f64(-2.0) * wp.sqrt(f64(5.0) / f64(6.0)) * _beta(e) * wp.sqrt(keff * mstar)
                den = hk * (h * keff + c)
                if den > f64(0.0):
                    kind = KIND_SOFT
                    gam = f64(1.0) / den
                    f0h = hk * F0
        else:
            gap = -depth
            if gap > f64(0.0):
                bn = -gap / h  # speculative: may approach until touching, no further
            if e > f64(0.0) and -u_free[0] > v_bounce and u_free[0] < bn:
                # an impact within this step: compressed to rest where it is (the first pass),
                # then the restitution impulse e * (compression impulse) (Poisson); the gap it
                # turns at is taken out by a position-only pull of (1 + e) gap, which puts the
                # bodies where an impact at the touching point would have left them
                rst = e
                bn = f64(0.0)
                if gap > f64(0.0):
                    bp = -(f64(1.0) + e) * gap / h
            if depth > cm.slop:
                bp = wp.min((depth - cm.slop) / h, cm.max_depenetration)
        cs.kind[w, k] = kind
        cs.bn[w, k] = bn
        cs.bp[w, k] = bp
        cs.gam[w, k] = gam
        cs.f0h[w, k] = f0h
        cs.mu[w, k] = mu
        cs.rest[w, k] = rst
        cs.rimp[w, k] = f64(0.0)
        cs.lamc[w, k] = z
        cs.plam[w, k] = f64(0.0)
        lam = z
        if best >= 0 and kind != KIND_OFF:
            Lw = cs.prev_lam[w, best]
            ln = wp.max(f64(0.0), wp.dot(Lw, n))
            lt1 = wp.dot(Lw, t1)
            lt2 = wp.dot(Lw, t2)
            lt = wp.sqrt(lt1 * lt1 + lt2 * lt2)
            if lt > mu * ln and lt > f64(0.0):
                s = mu * ln / lt
                lt1 = lt1 * s
                lt2 = lt2 * s
            lam = wp.vec3d(ln, lt1, lt2)
            _apply(cs, w, k, b0, b1, im0, im1, lam)
        cs.lam[w, k] = lam
    return n_c


@wp.func
def project_joints(w: int, nr: int, act: wp.array2d(dtype=wp.int32), row_b0: wp.array(dtype=wp.int32),
                   row_b1: wp.array(dtype=wp.int32), pat: RowPattern,
                   jl0: wp.array2d(dtype=wp.vec3d),
                   ja0: wp.array2d(dtype=wp.vec3d), jl1: wp.array2d(dtype=wp.vec3d),
                   ja1: wp.array2d(dtype=wp.vec3d), wl0: wp.array2d(dtype=wp.vec3d),
                   wa0: wp.array2d(dtype=wp.vec3d), wl1: wp.array2d(dtype=wp.vec3d),
                   wa1: wp.array2d(dtype=wp.vec3d), sdiag: wp.array2d(dtype=wp.float64),
                   Lf: wp.array2d(dtype=wp.float64), Dg: wp.array2d(dtype=wp.float64),
                   res: wp.array2d(dtype=wp.float64), dv: wp.array2d(dtype=wp.vec3d),
                   dw: wp.array2d(dtype=wp.vec3d), acc: wp.array2d(dtype=wp.float64)):
    """Joint block of the block Gauss-Seidel: impulses that make the joint rows' velocity
    change (G dv, plus the drives' compliance) vanish again, through the joint solve's LDL."""
    for i in range(nr):
        r = f64(0.0)
        if act[w, i] == 1:
            b0 = row_b0[i]
            b1 = row_b1[i]
            if b0 >= 0:
                r = r + wp.dot(jl0[w, i], dv[w, b0]) + wp.dot(ja0[w, i], dw[w, b0])
            if b1 >= 0:
                r = r + wp.dot(jl1[w, i], dv[w, b1]) + wp.dot(ja1[w, i], dw[w, b1])
            r = r + sdiag[w, i] * acc[w, i]
        res[w, i] = -r
    ldl_solve_rows(Lf, Dg, pat, res, w, nr, f64(1.0))
    for i in range(nr):
        if act[w, i] != 1:
            continue
        x = res[w, i]
        if x == f64(0.0):
            continue
        acc[w, i] = acc[w, i] + x
        b0 = row_b0[i]
        b1 = row_b1[i]
        if b0 >= 0:
            dv[w, b0] = dv[w, b0] + x * wl0[w, i]
            dw[w, b0] = dw[w, b0] + x * wa0[w, i]
        if b1 >= 0:
            dv[w, b1] = dv[w, b1] + x * wl1[w, i]
            dw[w, b1] = dw[w, b1] + x * wa1[w, i]


@wp.func
def _impulse_update(cs: ContactState, w: int, k: int, kind: int, K: wp.mat33d, u: wp.vec3d,
                    lam: wp.vec3d) -> wp.vec3d:
    """One projected Gauss-Seidel update of contact k: its new impulse (n, t1, t2) from its
    relative velocity u at impulse lam and its Delassus block K."""
    ln = lam[0]
    r = f64(0.0)
    den = K[0, 0]
    if kind == KIND_HARD:
        r = u[0] - cs.bn[w, k]
    else:
        g = cs.gam[w, k]
        r = u[0] + g * (ln - cs.f0h[w, k])
        den = den + g
    ln_new = wp.max(f64(0.0), ln - r / den)
    dln = ln_new - ln
    # tangent pair at the updated normal impulse: the exact 2x2 stick solution if it
    # lies in the friction disc; otherwise an isotropic step (1 / largest eigenvalue)
    # projected onto the disc, whose fixed point opposes the slip velocity (maximal
    # dissipation; projecting the anisotropic 2x2 solution would not)
    ut1 = u[1] + K[1, 0] * dln
    ut2 = u[2] + K[2, 0] * dln
    a = K[1, 1]
    bb = K[1, 2]
    cc = K[2, 2]
    det = a * cc - bb * bb
    x1 = lam[1]
    x2 = lam[2]
    if det > f64(0.0):
        x1 = lam[1] - (cc * ut1 - bb * ut2) / det
        x2 = lam[2] - (a * ut2 - bb * ut1) / det
    bound = cs.mu[w, k] * ln_new
    nt = wp.sqrt(x1 * x1 + x2 * x2)
    if nt > bound:
        half = f64(0.5) * (a - cc)
        kmax = f64(0.5) * (a + cc) + wp.sqrt(half * half + bb * bb)
        x1 = lam[1] - ut1 / kmax
        x2 = lam[2] - ut2 / kmax
        nt = wp.sqrt(x1 * x1 + x2 * x2)
        if nt > bound:
            sc = f64(0.0)
            if nt > f64(0.0):
                sc = bound / nt
            x1 = x1 * sc
            x2 = x2 * sc
    return wp.vec3d(ln_new, x1, x2)


@wp.func
def _position_update(pl: wp.float64, up: wp.float64, bpk: wp.float64, knn: wp.float64) -> wp.float64:
    """The new position-only (split) normal impulse: penetration beyond the slop is pushed
    out; an impact's gap is pulled shut (bpk < 0: signed, an equality row)."""
    pl_new = pl - (up - bpk) / knn
    if bpk >= f64(0.0):
        pl_new = wp.max(f64(0.0), pl_new)
    return pl_new


@wp.func
def _island_column(cs: ContactState, w: int, k: int):
    """Contact k's island: its first member in cs.imem, its size n, and the block of dmat in its
    first row and k's column (row a's is n * a further on)."""
    isl = cs.cisl[w, k]
    return cs.istart[w, isl], cs.isize[w, isl], cs.ibase[w, isl] + cs.cloc[w, k]


@wp.func
def _dslot(cs: ContactState, w: int, j: int, k: int) -> int:
    """The block of dmat that holds contact j's velocity per unit impulse at contact k (one island)."""
    first, n, slot = _island_column(cs, w, k)
    return slot + cs.cloc[w, j] * n


@wp.func
def _dense_push(cs: ContactState, w: int, k: int, dl: wp.vec3d):
    """Every contact's velocity after an impulse change dl at contact k (the others of its
    island: no other moves)."""
    first, n, slot = _island_column(cs, w, k)
    for a in range(n):
        j = cs.imem[w, first + a]
        cs.du[w, j] = cs.du[w, j] + cs.dmat[w, slot + a * n] * dl


@wp.func
def _comp_root(cs: ContactState, w: int, c: int) -> int:
    r = int(c)
    while cs.cpar[w, r] != r:
        up = cs.cpar[w, cs.cpar[w, r]]
        cs.cpar[w, r] = up  # path halving
        r = up
    return r


@wp.func
def _contact_comp(cm: ContactModel, cs: ContactState, w: int, k: int) -> int:
    """The row component of contact k's first body that is not the world."""
    c = _comp(cm, cs.c.body0[w, k])
    if c < 0:
        c = _comp(cm, cs.c.body1[w, k])
    return c


@wp.func
def _dense_layout(cm: ContactModel, cs: ContactState, w: int, n_c: int):
    """Group the contacts into islands: row components (cm.body_comp) joined by the contacts
    between them. An impulse at one island's contact moves no body of another, so the Delassus
    matrix is one block per island. Members keep the contacts' order; islands are numbered in
    the order of their first contact. Returns the blocks the islands take in dmat (sum of their
    sizes squared; one island of every contact: n_c^2) and the probe batches _build_dense
    will take (the most contacts touching one row component)."""
    for c in range(cm.n_comp):
        cs.cpar[w, c] = c
        cs.cisl_of[w, c] = -1
        cs.owner[w, c] = 0  # here: contacts touching component c
    batches = int(0)
    for k in range(n_c):
        ca = _comp(cm, cs.c.body0[w, k])
        cb = _comp(cm, cs.c.body1[w, k])
        if ca >= 0:
            cs.owner[w, ca] = cs.owner[w, ca] + 1
            batches = wp.max(batches, cs.owner[w, ca])
        if cb >= 0 and cb != ca:
            cs.owner[w, cb] = cs.owner[w, cb] + 1
            batches = wp.max(batches, cs.owner[w, cb])
        if ca >= 0 and cb >= 0:
            ra = _comp_root(cs, w, ca)
            rb = _comp_root(cs, w, cb)
            if ra != rb:
                cs.cpar[w, ra] = rb
    n_isl = int(0)
    for k in range(n_c):
        r = _comp_root(cs, w, _contact_comp(cm, cs, w, k))
        isl = cs.cisl_of[w, r]
        if isl < 0:
            isl = n_isl
            cs.cisl_of[w, r] = isl
            cs.isize[w, isl] = 0
            n_isl = n_isl + 1
        cs.cisl[w, k] = isl
        cs.cloc[w, k] = cs.isize[w, isl]
        cs.isize[w, isl] = cs.isize[w, isl] + 1
    blocks = int(0)
    first = int(0)
    for isl in range(n_isl):
        n = cs.isize[w, isl]
        cs.ibase[w, isl] = blocks
        cs.istart[w, isl] = first
        blocks = blocks + n * n
        first = first + n
    for k in range(n_c):
        cs.imem[w, cs.istart[w, cs.cisl[w, k]] + cs.cloc[w, k]] = k
    return blocks, batches


@wp.func
def _sweeps_stall(dmax: wp.float64, d2: wp.float64, tol: wp.float64, per_sweep: int, batches: int, used: int,
                  max_sweeps: int) -> int:
    """1 where the contact solve should go on to the Delassus matrix through the joints: the
    sweeps' rate (the largest change now against two sweeps before) says they will not reach
    tol within max_sweeps, or that the projections still to come (per_sweep each) cost more
    than building the matrix (3 per probe batch, 2 to finish). Without a rate (the first two
    sweeps, where dense_after <= 2): 1."""
    if used < 3 or not (d2 > f64(0.0)):
        return 1
    rate = wp.sqrt(dmax / d2)
    if not (rate < f64(1.0)):
        return 1
    left = wp.log(tol / dmax) / wp.log(rate)  # sweeps still to go at this rate
    if f64(used) + left > f64(max_sweeps):
        return 1
    if left * f64(per_sweep) > f64(3 * batches + 2):
        return 1
    return 0


@wp.func
def _sweep(cm: ContactModel, cs: ContactState, w: int, n_c: int, inv_mass: wp.array(dtype=wp.float64),
           vfree: wp.array2d(dtype=wp.vec3d), wfree: wp.array2d(dtype=wp.vec3d), second: int,
           dense: int):
    """One Gauss-Seidel sweep over the contacts; returns the largest contact velocity change
    and 1 where a position-only impulse changed (else 0: the position-only velocities of the
    free bodies are as before the sweep, so the joints need not answer them again).

    second = 0: the main pass (accumulated impulses cs.lam, hard and compliant contacts,
    position-only impulses); second = 1: the inelastic pass after restitution (fresh
    impulses cs.lamc, hard contacts only). dense = 0: each update moves the contact's two
    bodies (the joints answer after the sweep); dense = 1: it moves every contact's velocity
    through the Delassus matrix through the joints (_build_dense: the whole mechanism answers)."""
    dmax = f64(0.0)
    pmoved = int(0)
    for k in range(n_c):
        kind = cs.kind[w, k]
        if kind == KIND_OFF or (second != 0 and kind != KIND_HARD):
            continue
        b0 = cs.c.body0[w, k]
        b1 = cs.c.body1[w, k]
        im0, im1 = _inv_masses(inv_mass, b0, b1)
        D = cs.dirs[w, k]
        A0 = cs.a0[w, k]
        A1 = cs.a1[w, k]
        K = cs.kblk[w, k]
        u = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
        if dense != 0:
            K = cs.dmat[w, _dslot(cs, w, k, k)]
            u = cs.du[w, k]
        else:
            u = _rel_vel(D, A0, A1, _vel(vfree, cs.dv, w, b0), _vel(wfree, cs.dw, w, b0),
                         _vel(vfree, cs.dv, w, b1), _vel(wfree, cs.dw, w, b1))
        lam = cs.lam[w, k]
        if second != 0:
            lam = cs.lamc[w, k]
        lam_new = _impulse_update(cs, w, k, kind, K, u, lam)
        dl = lam_new - lam
        if dense != 0:
            _dense_push(cs, w, k, dl)
        else:
            _apply(cs, w, k, b0, b1, im0, im1, dl)
        if second != 0:
            cs.lamc[w, k] = lam_new
        else:
            cs.lam[w, k] = lam_new
        dmax = wp.max(dmax, wp.length(K * dl))
        if kind == KIND_HARD and second == 0:
            pl = cs.plam[w, k]
            bpk = cs.bp[w, k]
            if bpk != f64(0.0) or pl != f64(0.0):
                up = f64(0.0)
                if dense != 0:
                    up = cs.dup[w, k]
                else:
                    up = wp.dot(D[0], _get(cs.pv, w, b1) - _get(cs.pv, w, b0)) + wp.dot(A1[0], _get(cs.pw, w, b1)) \
                        - wp.dot(A0[0], _get(cs.pw, w, b0))
                pl_new = _position_update(pl, up, bpk, K[0, 0])
                dp = pl_new - pl
                if dp != f64(0.0):
                    if dense != 0:
                        first, n, slot = _island_column(cs, w, k)
                        for a in range(n):
                            j = cs.imem[w, first + a]
                            cs.dup[w, j] = cs.dup[w, j] + cs.dmat[w, slot + a * n][0, 0] * dp
                    else:
                        _apply_pos(cs, w, k, b0, b1, im0, im1, dp)
                    cs.plam[w, k] = pl_new
                    dmax = wp.max(dmax, wp.abs(K[0, 0] * dp))
                    pmoved = 1
    return dmax, pmoved


@wp.func
def _unit(d: int) -> wp.vec3d:
    e = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    if d == 0:
        e = wp.vec3d(f64(1.0), f64(0.0), f64(0.0))
    elif d == 1:
        e = wp.vec3d(f64(0.0), f64(1.0), f64(0.0))
    else:
        e = wp.vec3d(f64(0.0), f64(0.0), f64(1.0))
    return e


@wp.func
def _comp(cm: ContactModel, b: int) -> int:
    """Body b's row component, or -1 for the world."""
    if b < 0:
        return -1
    return cm.body_comp[b]


@wp.func
def _comp_owner(cm: ContactModel, cs: ContactState, w: int, b: int) -> int:
    """The contact probed in body b's component in this batch, or -1 (none, or the world)."""
    if b < 0:
        return -1
    return cs.owner[w, cm.body_comp[b]]


@wp.func
def _build_dense(cm: ContactModel, cs: ContactState, w: int, n_c: int, blocks: int, nb: int,
                 inv_mass: wp.array(dtype=wp.float64), vfree: wp.array2d(dtype=wp.vec3d),
                 wfree: wp.array2d(dtype=wp.vec3d), nr: int, act: wp.array2d(dtype=wp.int32),
                 row_b0: wp.array(dtype=wp.int32), row_b1: wp.array(dtype=wp.int32), pat: RowPattern,
                 jl0: wp.array2d(dtype=wp.vec3d), ja0: wp.array2d(dtype=wp.vec3d),
                 jl1: wp.array2d(dtype=wp.vec3d), ja1: wp.array2d(dtype=wp.vec3d),
                 wl0: wp.array2d(dtype=wp.vec3d), wa0: wp.array2d(dtype=wp.vec3d),
                 wl1: wp.array2d(dtype=wp.vec3d), wa1: wp.array2d(dtype=wp.vec3d),
                 sdiag: wp.array2d(dtype=wp.float64), Lf: wp.array2d(dtype=wp.float64),
                 Dg: wp.array2d(dtype=wp.float64), res: wp.array2d(dtype=wp.float64)):
    """The contacts' Delassus matrix through the joints, J S J^T with S = M^-1 - M^-1 G^T A^-1
    G M^-1: column (l, d) is every contact's velocity after a unit impulse d at contact l and
    the joints' exact answer to it (one joint projection through the factorised joint matrix).
    Then the contact velocities of the current impulses (dv, pv: projected after the sweep).

    The contacts are probed in batches: a batch takes contacts whose bodies' row components
    (cm.body_comp) no other contact of the batch touches, and one projection answers them all
    (the joint matrix has no entry between components, so each column is the one a projection
    of its contact alone gives, bit for bit). N robots on a floor: as many projections as one
    robot's contacts, not N times as many."""
    z = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    for b in range(blocks):  # the islands' blocks (_dense_layout)
        cs.dmat[w, b] = wp.mat33d()
    left = int(0)
    for l in range(n_c):
        cs.probed[w, l] = 1
        if cs.kind[w, l] != KIND_OFF:
            cs.probed[w, l] = 0
            left = left + 1
    while left > 0:
        for c in range(cm.n_comp):
            cs.owner[w, c] = -1
        for l in range(n_c):
            if cs.probed[w, l] != 0:
                continue
            ca = _comp(cm, cs.c.body0[w, l])
            cb = _comp(cm, cs.c.body1[w, l])
            free = int(1)
            if ca >= 0:
                if cs.owner[w, ca] >= 0:
                    free = 0
            if cb >= 0:
                if cs.owner[w, cb] >= 0:
                    free = 0
            if free != 0:
                if ca >= 0:
                    cs.owner[w, ca] = l
                if cb >= 0:
                    cs.owner[w, cb] = l
                cs.probed[w, l] = 2
        for d in range(3):
            for b in range(nb):
                cs.tv[w, b] = z
                cs.tw[w, b] = z
            for i in range(nr):
                cs.tacc[w, i] = f64(0.0)
            e = _unit(d)
            for l in range(n_c):
                if cs.probed[w, l] == 2:
                    b0 = cs.c.body0[w, l]
                    b1 = cs.c.body1[w, l]
                    im0, im1 = _inv_masses(inv_mass, b0, b1)
                    _apply_to(cs, w, l, b0, b1, im0, im1, e, cs.tv, cs.tw)
            project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag, Lf, Dg,
                           res, cs.tv, cs.tw, cs.tacc)
            for k in range(n_c):
                c0 = cs.c.body0[w, k]
                c1 = cs.c.body1[w, k]
                o0 = _comp_owner(cm, cs, w, c0)
                o1 = _comp_owner(cm, cs, w, c1)
                # each side answers the contact probed in its own component, the other side
                # then counts 0 (both sides in one: the contact's whole velocity, as one probe).
                # One _rel_vel call site: with three, the chains of bench_scale.py (no contact
                # at all) ran 10 % slower, the step kernel's code laid out otherwise
                for side in range(2):
                    o = o0
                    if side == 1:
                        o = o1
                        if o1 == o0:
                            o = -1
                    if o >= 0:
                        v0 = z
                        w0 = z
                        v1 = z
                        w1 = z
                        if o0 == o:
                            v0 = _get(cs.tv, w, c0)
                            w0 = _get(cs.tw, w, c0)
                        if o1 == o:
                            v1 = _get(cs.tv, w, c1)
                            w1 = _get(cs.tw, w, c1)
                        col = _rel_vel(cs.dirs[w, k], cs.a0[w, k], cs.a1[w, k], v0, w0, v1, w1)
                        slot = _dslot(cs, w, k, o)  # o is in k's island: k touches o's component
                        cs.dmat[w, slot] = cs.dmat[w, slot] + wp.outer(col, e)
        for l in range(n_c):
            if cs.probed[w, l] == 2:
                cs.probed[w, l] = 1
                left = left - 1
    for k in range(n_c):
        b0 = cs.c.body0[w, k]
        b1 = cs.c.body1[w, k]
        D = cs.dirs[w, k]
        A0 = cs.a0[w, k]
        A1 = cs.a1[w, k]
        cs.du[w, k] = _rel_vel(D, A0, A1, _vel(vfree, cs.dv, w, b0), _vel(wfree, cs.dw, w, b0),
                               _vel(vfree, cs.dv, w, b1), _vel(wfree, cs.dw, w, b1))
        cs.dup[w, k] = wp.dot(D[0], _get(cs.pv, w, b1) - _get(cs.pv, w, b0)) + wp.dot(A1[0], _get(cs.pw, w, b1)) \
            - wp.dot(A0[0], _get(cs.pw, w, b0))


@wp.func
def _dense_finish(cs: ContactState, w: int, n_c: int, nb: int, inv_mass: wp.array(dtype=wp.float64), nr: int,
                  act: wp.array2d(dtype=wp.int32), row_b0: wp.array(dtype=wp.int32),
                  row_b1: wp.array(dtype=wp.int32), pat: RowPattern,
                  jl0: wp.array2d(dtype=wp.vec3d), ja0: wp.array2d(dtype=wp.vec3d),
                  jl1: wp.array2d(dtype=wp.vec3d), ja1: wp.array2d(dtype=wp.vec3d),
                  wl0: wp.array2d(dtype=wp.vec3d), wa0: wp.array2d(dtype=wp.vec3d),
                  wl1: wp.array2d(dtype=wp.vec3d), wa1: wp.array2d(dtype=wp.vec3d),
                  sdiag: wp.array2d(dtype=wp.float64), Lf: wp.array2d(dtype=wp.float64),
                  Dg: wp.array2d(dtype=wp.float64), res: wp.array2d(dtype=wp.float64)):
    """The bodies' velocity changes (and the joints' impulses) of the final contact impulses,
    exactly: all impulses applied to the free bodies, then one joint projection."""
    z = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    for b in range(nb):
        cs.dv[w, b] = z
        cs.dw[w, b] = z
        cs.pv[w, b] = z
        cs.pw[w, b] = z
    for i in range(nr):
        cs.jlam[w, i] = f64(0.0)
        cs.pjlam[w, i] = f64(0.0)
    pushed = int(0)
    for k in range(n_c):
        if cs.kind[w, k] == KIND_OFF:
            continue
        b0 = cs.c.body0[w, k]
        b1 = cs.c.body1[w, k]
        im0, im1 = _inv_masses(inv_mass, b0, b1)
        L = cs.lam[w, k] + cs.lamc[w, k] + wp.vec3d(cs.rimp[w, k], f64(0.0), f64(0.0))
        _apply(cs, w, k, b0, b1, im0, im1, L)
        if cs.plam[w, k] != f64(0.0):
            _apply_pos(cs, w, k, b0, b1, im0, im1, cs.plam[w, k])
            pushed = 1
    project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag, Lf, Dg,
                   res, cs.dv, cs.dw, cs.jlam)
    if pushed != 0:  # (no position-only impulse: the projection of zeros, zeros)
        project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag, Lf, Dg,
                       res, cs.pv, cs.pw, cs.pjlam)


@wp.func
def contact_solve(cm: ContactModel, cs: ContactState, w: int, n_c: int, nb: int,
                  inv_mass: wp.array(dtype=wp.float64),
                  vfree: wp.array2d(dtype=wp.vec3d), wfree: wp.array2d(dtype=wp.vec3d), nr: int,
                  act: wp.array2d(dtype=wp.int32), row_b0: wp.array(dtype=wp.int32),
                  row_b1: wp.array(dtype=wp.int32), pat: RowPattern,
                  jl0: wp.array2d(dtype=wp.vec3d),
                  ja0: wp.array2d(dtype=wp.vec3d), jl1: wp.array2d(dtype=wp.vec3d),
                  ja1: wp.array2d(dtype=wp.vec3d), wl0: wp.array2d(dtype=wp.vec3d),
                  wa0: wp.array2d(dtype=wp.vec3d), wl1: wp.array2d(dtype=wp.vec3d),
                  wa1: wp.array2d(dtype=wp.vec3d), sdiag: wp.array2d(dtype=wp.float64),
                  Lf: wp.array2d(dtype=wp.float64), Dg: wp.array2d(dtype=wp.float64),
                  res: wp.array2d(dtype=wp.float64)):
    """Projected Gauss-Seidel over the contacts, joints re-imposed after every sweep; then
    restitution (Poisson: e times each impacting contact's compression impulse, all at once)
    and a second inelastic pass for whatever the restitution impulses push together.

    A step that has not converged after cm.dense_after sweeps, whose sweeps stall or would cost
    more than the matrix (_sweeps_stall), with joint rows and islands whose blocks fit in
    cm.n_dense^2 (_dense_layout), goes on with the Delassus matrix through the joints
    (_build_dense): the sweep over the contacts alone reaches a light body's contact only
    through its own mass, and may not converge at all with friction (a hand's finger tips on a
    table)."""
    used = int(0)
    dense = int(0)
    laid = int(0)  # 1: the islands were laid out (the contacts do not change within the solve)
    blocks = int(0)
    batches = int(0)
    d1 = f64(0.0)  # the largest change of the last sweep and of the one before
    d2 = f64(0.0)
    if nr > 0:
        # the joints answer the warm-start impulses before the first sweep reads the velocities
        # (block Gauss-Seidel from the joint block: the same fixed point). Else the first sweep
        # corrects the contacts for a mechanism that has not reacted yet: a resting crawler's
        # first change was 5e-3 m/s and its steps took 15-19 sweeps; now one. (Without a warm
        # start it projects zeros; testing for that moved the four-bar's speed by 8 %: code layout)
        project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag, Lf,
                       Dg, res, cs.dv, cs.dw, cs.jlam)
    for sweep in range(cm.max_sweeps):
        used = sweep + 1
        dmax = f64(0.0)
        if dense == 0:
            dmax, pmoved = _sweep(cm, cs, w, n_c, inv_mass, vfree, wfree, 0, 0)
            if nr > 0:
                project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag, Lf,
                               Dg, res, cs.dv, cs.dw, cs.jlam)
                if pmoved != 0:  # else the joints already answer the position-only velocities
                    project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag,
                                   Lf, Dg, res, cs.pv, cs.pw, cs.pjlam)
            if dmax > cm.tol and nr > 0 and cm.n_dense > 0 and cm.dense_after > 0 and used >= cm.dense_after:
                if laid == 0:
                    laid = 1
                    blocks, batches = _dense_layout(cm, cs, w, n_c)
                if blocks <= cm.n_dense * cm.n_dense and _sweeps_stall(dmax, d2, cm.tol, 1 + pmoved, batches, used,
                                                                       cm.max_sweeps) != 0:
                    _build_dense(cm, cs, w, n_c, blocks, nb, inv_mass, vfree, wfree, nr, act, row_b0, row_b1, pat, jl0,
                                 ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag, Lf, Dg, res)
                    dense = 1
            d2 = d1
            d1 = dmax
        else:
            dmax, pmoved = _sweep(cm, cs, w, n_c, inv_mass, vfree, wfree, 0, 1)
        if dmax <= cm.tol:
            break
    if used >= cm.max_sweeps and cm.max_sweeps > 1:
        cs.unconverged[w] = cs.unconverged[w] + 1
    bounced = int(0)
    for k in range(n_c):
        e = cs.rest[w, k]
        if e > f64(0.0) and cs.kind[w, k] == KIND_HARD:
            R = e * cs.lam[w, k][0]
            if R > f64(0.0):
                b0 = cs.c.body0[w, k]
                b1 = cs.c.body1[w, k]
                im0, im1 = _inv_masses(inv_mass, b0, b1)
                if dense != 0:
                    _dense_push(cs, w, k, wp.vec3d(R, f64(0.0), f64(0.0)))
                else:
                    _apply(cs, w, k, b0, b1, im0, im1, wp.vec3d(R, f64(0.0), f64(0.0)))
                cs.rimp[w, k] = R
                bounced = 1
    if bounced != 0:
        for sweep in range(cm.max_sweeps):
            used = used + 1
            if dense != 0:
                d_inelastic, p_unused = _sweep(cm, cs, w, n_c, inv_mass, vfree, wfree, 1, 1)
                if d_inelastic <= cm.tol:
                    break
            else:
                if nr > 0:
                    project_joints(w, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1, wa1, sdiag,
                                   Lf, Dg, res, cs.dv, cs.dw, cs.jlam)
                d_inelastic, p_unused = _sweep(cm, cs, w, n_c, inv_mass, vfree, wfree, 1, 0)
                if d_inelastic <= cm.tol:
                    break
    if dense != 0:
        _dense_finish(cs, w, n_c, nb, inv_mass, nr, act, row_b0, row_b1, pat, jl0, ja0, jl1, ja1, wl0, wa0, wl1,
                      wa1, sdiag, Lf, Dg, res)
    if used > cs.sweeps[w]:
        cs.sweeps[w] = used
    cs.dense_steps[w] = cs.dense_steps[w] + dense


@wp.func
def contact_kick(cs: ContactState, w: int, n_c: int, inv_mass: wp.array(dtype=wp.float64),
                 vfree: wp.array2d(dtype=wp.vec3d), wfree: wp.array2d(dtype=wp.vec3d),
                 vstar: wp.array2d(dtype=wp.vec3d), mom: wp.array2d(dtype=wp.vec3d), nr: int,
                 act: wp.array2d(dtype=wp.int32), lam: wp.array2d(dtype=wp.float64)):
    """Contact impulses (velocity and position-only) into the predictor for the second joint
    pass; joint impulses warm-started with the coupling's; the contact cache written."""
    for k in range(n_c):
        b0 = cs.c.body0[w, k]
        b1 = cs.c.body1[w, k]
        D = cs.dirs[w, k]
        A0 = cs.a0[w, k]
        A1 = cs.a1[w, k]
        L = cs.lam[w, k] + cs.lamc[w, k]
        slip = f64(0.0)
        if cs.kind[w, k] != KIND_OFF:
            Lp = L + wp.vec3d(cs.plam[w, k] + cs.rimp[w, k], f64(0.0), f64(0.0))
            lin = wp.transpose(D) * Lp
            if b1 >= 0:
                vstar[w, b1] = vstar[w, b1] + inv_mass[b1] * lin
                mom[w, b1] = mom[w, b1] + wp.transpose(A1) * Lp
            if b0 >= 0:
                vstar[w, b0] = vstar[w, b0] - inv_mass[b0] * lin
                mom[w, b0] = mom[w, b0] - wp.transpose(A0) * Lp
            u = _rel_vel(D, A0, A1, _vel(vfree, cs.dv, w, b0), _vel(wfree, cs.dw, w, b0),
                         _vel(vfree, cs.dv, w, b1), _vel(wfree, cs.dw, w, b1))
            slip = wp.sqrt(u[1] * u[1] + u[2] * u[2])
        cs.prev_pair[w, k] = cs.c.pair[w, k]
        cs.prev_point[w, k] = cs.point[w, k]
        cs.prev_lam[w, k] = wp.transpose(D) * L
        cs.prev_slip[w, k] = slip
        cs.prev_anc0[w, k] = _to_body(cs.bq, w, b0, cs.c.point0[w, k])
        cs.prev_anc1[w, k] = _to_body(cs.bq, w, b1, cs.c.point1[w, k])
    cs.prev_count[w] = n_c
    for i in range(nr):
        if act[w, i] == 1:
            lam[w, i] = lam[w, i] + cs.jlam[w, i] + cs.pjlam[w, i]


@wp.func
def contact_end(cs: ContactState, w: int, nb: int, vel: wp.array2d(dtype=wp.vec3d),
                omega: wp.array2d(dtype=wp.vec3d)):
    """The committed velocities lose the position-only part (it moved positions only)."""
    for b in range(nb):
        vel[w, b] = vel[w, b] - cs.pv[w, b]
        omega[w, b] = omega[w, b] - cs.pw[w, b]


# ----------------------------------------------------------------------------------------
# host side
# ----------------------------------------------------------------------------------------
@dataclass
class ContactOptions:
    """Contact solver parameters (SI). Defaults are justified in docs/solver.md, "Contact"."""

    margin: float = 1.0e-3  # m, minimum speculative margin (grows with speed)
    slop: float = 1.0e-5  # m, penetration the position correction leaves alone
    # m/s: the fastest penetration is undone (position only, no velocity is left behind). A start
    # that is deep inside another collider (a robot placed into its floor) is pushed out over
    # several steps instead of in one, which joints and limits could not follow.
    max_depenetration: float = 1.0
    v_bounce: float = 1.0e-3  # m/s (+ 2 |g| h): slower impacts do not bounce
    v_stick: float = 1.0e-3  # m/s (+ |g| h): slower slip uses static friction
    max_sweeps: int = 50
    tol: float = 1.0e-9  # m/s
    capacity: int | None = None  # contacts per world; None: see default_capacity
    # joint-coupled contact: a step with joint rows whose sweeps have not converged after
    # dense_after sweeps continues on the Delassus matrix through the joints when its islands
    # (mechanisms joined by contacts) fit: their contacts squared, summed, at most
    # dense_contacts^2 (one island: dense_contacts contacts; 16 robots of 5 contacts each: 400
    # of 2304). Memory: 72 dense_contacts^2 bytes per world; 0: never
    dense_contacts: int = 48
    dense_after: int = 8
    # which candidate pairs a step tests: "all" of them, or those a "sweep" along one axis finds
    # in reach (the same pairs, so the same contacts; linear instead of quadratic in the shapes);
    # "auto": the sweep once there are more than 8 candidate pairs per shape
    broadphase: str = "auto"


def default_capacity(table, pairs, dynamic_bodies: int) -> int:
    """Contacts per world: the most the pairs can produce (4 for the single-point MPR pairs,
    whose manifolds persist), capped at 16 per dynamic body + 32 (a resting box has 4 to 8;
    a packed sphere about 6); overflow is counted and warned."""
    pairs = np.asarray(pairs).reshape(-1, 2)
    ta, tb = np.asarray(table.type)[pairs[:, 0]], np.asarray(table.type)[pairs[:, 1]]
    lo, hi = np.minimum(ta, tb), np.maximum(ta, tb)
    single = (lo != SHAPE_PLANE_HOST) & (lo != SHAPE_SPHERE_HOST) & (hi > SHAPE_BOX_HOST)
    most = max_contacts(table, pairs) + 3 * int(np.sum(single))
    return int(max(1, min(most, 16 * dynamic_bodies + 32)))


def _com_table(table, model):
    """Copy of the shape table with poses relative to the bodies' COM frames (the solver's)."""
    import copy

    from usdphys.math3d import quat_conj, quat_mul, quat_rotate

    t = copy.copy(table)
    pos = np.array(table.local_pos, float).reshape(-1, 3)
    rot = np.array(table.local_rot, float).reshape(-1, 4)
    for s in range(len(table)):
        b = int(table.body[s])
        if b < 0:
            continue
        inv = quat_conj(model.body_com_rot[b])
        pos[s] = quat_rotate(inv, pos[s] - model.body_com_pos[b])
        rot[s] = quat_mul(inv, rot[s])
    t.local_pos = pos
    t.local_rot = rot / np.linalg.norm(rot, axis=1, keepdims=True) if len(rot) else rot
    return t


def contact_pairs(model, table) -> np.ndarray:
    """Candidate pairs after filtering, without pairs that have no dynamic body."""
    from usdphys.solver.broadphase import candidate_pairs

    excl = model.contact_exclude
    if excl is None:  # UsdPhysics default: jointed bodies do not collide (a joint to the
        # world does not switch off contact with every static shape)
        excl = [(int(a), int(b)) for a, b in zip(model.joint_body0, model.joint_body1) if a >= 0 and b >= 0]
    pairs = candidate_pairs(table, excl)
    if len(pairs) == 0:
        return pairs
    dyn = ~np.asarray(model.body_kinematic, bool) & (np.asarray(model.body_mass, float) > 0)
    body = np.asarray(table.body, int)

    def is_dyn(s):
        b = body[s]
        return (b >= 0) & dyn[np.maximum(b, 0)]

    keep = is_dyn(pairs[:, 0]) | is_dyn(pairs[:, 1])
    return pairs[keep]


# Colliders of one jointed mechanism that interpenetrate deeper than this (m) in the input pose
# are taken as not meant to collide (see initial_overlaps).
INITIAL_OVERLAP_SLOP = 1.0e-4
# Colliders of different parts overlapping more than this at the start are named: the contact
# corrects such a depth over several steps (max_depenetration), which the user should know.
START_DEPTH_WARN = 1.0e-3


def initial_overlaps(model, table, pairs: np.ndarray, slop: float = INITIAL_OVERLAP_SLOP, depths=None):
    """Candidate pairs between parts of one jointed mechanism (bodies connected through joints,
    the world counting as one part) that interpenetrate deeper than `slop` in world 0's input
    pose: (indices into pairs, deepest overlap in m).

    A rest pose in which two linked parts overlap means their colliders are not meant to touch
    each other (a robot's links, a cart inside its rails): MJCF says so with contype /
    conaffinity, which converted stages lose, and tools that build collision matrices for
    robots drop such pairs the same way. Hard contact would instead push the parts apart
    against their joints, which cannot both hold: the step would not converge. Free bodies are
    never part of a mechanism here: a free body resting in the ground is still pushed out.
    depths: the pairs' start_depths when the caller has them already (one narrow phase)."""
    pairs = np.asarray(pairs, np.int32).reshape(-1, 2)
    if len(pairs) == 0 or model.joint_count == 0:
        return np.zeros(0, np.int64), 0.0
    world = model.body_count
    parent = list(range(world + 1))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for b0, b1 in zip(model.joint_body0, model.joint_body1):
        a, b = find(world if b0 < 0 else int(b0)), find(world if b1 < 0 else int(b1))
        parent[a] = b
    body = np.asarray(table.body, int)
    joined = set(int(b) for jb in (model.joint_body0, model.joint_body1) for b in jb if b >= 0)

    def part(s):
        b = int(body[s])
        return find(world) if b < 0 else (find(b) if b in joined else -1 - b)

    same = [k for k, (s0, s1) in enumerate(pairs) if part(s0) == part(s1)]
    if not same:
        return np.zeros(0, np.int64), 0.0
    depth = start_depths(model, table, pairs[same]) if depths is None else np.asarray(depths)[same]
    hit = [same[k] for k in np.flatnonzero(depth > slop)]
    return np.asarray(hit, np.int64), float(depth.max()) if len(hit) else 0.0


def warn_overlaps(table, pairs: np.ndarray, hit, deepest: float, when: str) -> None:
    """One warning naming the collider pairs initial_overlaps found (`when`: which pose)."""
    names = [f"{table.paths[pairs[k][0]]} / {table.paths[pairs[k][1]]}" for k in hit[:3]]
    more = f" and {len(hit) - 3} more" if len(hit) > 3 else ""
    warn(f"{len(hit)} collider pair(s) of one jointed mechanism overlap {when} (deepest {deepest:.3g} m): "
         f"{'; '.join(names)}{more}; they are taken as not meant to collide and never do (filter them in the "
         "stage to say so)")


def start_depths(model, table, pairs: np.ndarray) -> np.ndarray:
    """Per pair: the deepest interpenetration (m, 0 if apart) in world 0's input pose."""
    from usdphys.solver.narrowphase import CollisionPipeline

    pairs = np.asarray(pairs, np.int32).reshape(-1, 2)
    depth = np.zeros(len(pairs))
    if len(pairs) == 0:
        return depth
    pos, rot, _, _ = model.com_state()
    pipe = CollisionPipeline(_com_table(table, model), pairs, 1, margin=0.0, device="cpu")
    q7 = np.concatenate([pos[:1], rot[:1]], axis=-1).reshape(1, -1, 7)
    pipe.collide(wp.array(q7, dtype=wp.transformd, device=pipe.device))
    c = pipe.numpy()[0]
    np.maximum.at(depth, np.asarray(c["pair"], int), np.maximum(np.asarray(c["depth"], float), 0.0))
    return depth


def set_pairs(cm: ContactModel, pairs: np.ndarray, table, mode: str, device) -> None:
    """The candidate pairs of cm (and their index for the sweep); table: the shape table the
    pairs index (its bounding radii), mode: ContactOptions.broadphase."""
    pairs = np.asarray(pairs, np.int32).reshape(-1, 2)
    cm.n_pairs = int(len(pairs))
    cm.pairs = wp.array(pairs if len(pairs) else np.zeros((1, 2), np.int32), dtype=wp.vec2i, device=device)
    cm.ix = pair_index(pairs, np.asarray(table.bound_radius, float), len(table), mode, device)


def set_row_components(cm: ContactModel, bodies: int, b0, b1, partner, device) -> None:
    """cm.body_comp: the bodies the constraint rows (b0[i], b1[i]; a coupling row also touches its
    partner row's bodies) connect, numbered 0 .. n_comp - 1. The joint matrix has no entry between
    rows of two components, so probing one contact in each at once (_build_dense) gives every
    column exactly as probing them one by one."""
    parent = list(range(max(int(bodies), 1)))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a, b):
        if a >= 0 and b >= 0:
            parent[find(a)] = find(b)

    b0, b1, partner = (np.asarray(x, int).reshape(-1) for x in (b0, b1, partner))
    for i in range(len(b0)):
        union(int(b0[i]), int(b1[i]))
        p = int(partner[i]) if i < len(partner) else -1
        if p >= 0:
            for a in (int(b0[i]), int(b1[i])):
                union(a, int(b0[p]))
                union(a, int(b1[p]))
    roots = {}
    comp = np.array([roots.setdefault(find(b), len(roots)) for b in range(len(parent))], np.int32)
    cm.body_comp = wp.array(comp, dtype=wp.int32, device=device)
    cm.n_comp = int(len(roots))


def put_contact_model(model, device, options: ContactOptions | None = None, row_bodies=None):
    """(ContactModel, info dict) for a Model, shared by all worlds; n_pairs = 0 when nothing
    collides. info: candidate pairs, contacts per world (capacity), method, the shape table.
    row_bodies: (b0, b1, partner) of the constraint rows (set_row_components; None: no rows)."""
    opts = options or ContactOptions()
    table = getattr(model, "shapes", None)
    B = max(model.body_count, 1)
    pairs = np.zeros((0, 2), np.int32)
    if table is not None and len(table):
        pairs = contact_pairs(model, table)
        if model.body_count:
            depth = start_depths(model, table, pairs)  # one narrow phase over the input pose
            hit, deepest = initial_overlaps(model, table, pairs, depths=depth)
            if len(hit):
                warn_overlaps(table, pairs, hit, deepest, "in the input pose")
                pairs = np.delete(pairs, hit, axis=0)
                depth = np.delete(depth, hit)
            deep = np.flatnonzero(depth > START_DEPTH_WARN)
            if len(deep):
                k = int(deep[np.argmax(depth[deep])])
                warn(f"{len(deep)} collider pair(s) start interpenetrating, deepest {depth[k]:.3g} m "
                     f"({table.paths[pairs[k][0]]} / {table.paths[pairs[k][1]]}); contact pushes them apart at "
                     f"most {opts.max_depenetration:g} m/s (ContactOptions.max_depenetration), not in one step")
    cm = ContactModel()
    cm.n_pairs = int(len(pairs))
    if cm.n_pairs:
        ct = _com_table(table, model)
        capacity = int(opts.capacity) if opts.capacity else default_capacity(
            table, pairs, int(np.sum(~np.asarray(model.body_kinematic, bool))))
    else:
        from usdphys.types.shapes import SHAPE_SPHERE, table_from_specs

        ct = table_from_specs([{"type": SHAPE_SPHERE, "dims": (1.0, 0, 0)}])
        capacity = 1
    S = len(ct)
    cm.shapes = shape_data(ct, device)
    set_pairs(cm, pairs, ct, opts.broadphase, device)

    def col(name, default):
        a = getattr(ct, name, None)
        return np.asarray(a, float) if a is not None else np.full(S, default)

    def farr(a):
        return wp.array(np.ascontiguousarray(a, dtype=np.float64), dtype=wp.float64, device=device)

    # materials: one row [1, shape]; usdphys.solver.io widens them to [world, shape] (per-world values)
    cm.mu_s = farr(col("static_friction", 0.5)[None])
    cm.mu_d = farr(col("dynamic_friction", 0.5)[None])
    cm.rest = farr(col("restitution", 0.0)[None])
    young = col("young_modulus", 2e7)
    nu = col("poisson_ratio", 0.3)
    cm.hertz_c = farr((1.0 - nu**2) / np.where(young > 0, young, np.inf))
    kappa = np.zeros(S)
    from usdphys.types.shapes import SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_SPHERE

    for s in range(S):
        typ = int(ct.type[s])
        r = float(ct.contact_radius[s]) if ct.contact_radius is not None else 0.0
        if typ in (SHAPE_SPHERE, SHAPE_CAPSULE, SHAPE_CYLINDER):
            r += float(ct.dims[s][0])
        elif typ == SHAPE_ELLIPSOID:  # Hertz needs one radius: the semi-axes' geometric mean
            r += float(np.prod(ct.dims[s])) ** (1.0 / 3.0)
        kappa[s] = 1.0 / r if r > 0 else 0.0
    cm.kappa = farr(kappa)
    kn = col("normal_stiffness", np.nan)
    cm.kn = farr(kn)
    cm.gn = farr(col("normal_damping", np.nan))
    cm.soft = wp.array(np.isfinite(kn).astype(np.int32), dtype=wp.int32, device=device)
    reach = np.zeros(B)
    if cm.n_pairs:
        for s in range(S):
            b = int(ct.body[s])
            if b >= 0 and np.isfinite(ct.bound_radius[s]):
                reach[b] = max(reach[b], float(np.linalg.norm(ct.local_pos[s])) + float(ct.bound_radius[s]))
    cm.reach = farr(reach)
    b0, b1, partner = row_bodies if row_bodies is not None else (np.zeros(0, int),) * 3
    set_row_components(cm, B, b0, b1, partner, device)
    method = str(getattr(model, "contact_method", "nsc") or "nsc").lower()
    cm.smc = 1 if method == "smc" else 0
    cm.margin = f64(opts.margin)
    cm.slop = f64(opts.slop)
    cm.max_depenetration = f64(opts.max_depenetration)
    cm.v_bounce = f64(opts.v_bounce)
    cm.v_stick = f64(opts.v_stick)
    cm.max_sweeps = int(opts.max_sweeps)
    cm.tol = f64(opts.tol)
    cm.n_dense = int(min(max(int(opts.dense_contacts), 0), capacity)) if cm.n_pairs else 0
    cm.dense_after = int(opts.dense_after)
    info = {"pairs": pairs, "capacity": capacity, "method": "smc" if cm.smc else "nsc", "table": table,
            "shape_table": ct, "broadphase": opts.broadphase}
    return cm, info


def make_contact_state(worlds: int, bodies: int, rows: int, capacity: int, cm: ContactModel, device,
                       zeros=None) -> ContactState:
    """Zeroed per-world contact buffers of cm: `capacity` contacts, `bodies` bodies, `rows` joint
    rows, a joint-coupled Delassus matrix of cm.n_dense contacts (0: none) and its batches' marks,
    the shapes' poses and the sweep's buffers.
    zeros(shape, dtype) allocates the [world, ...] arrays (io.world_zeros: the memory layout;
    None: plain wp.zeros), the narrow phase's contact records included."""
    W = int(worlds)
    B = max(int(bodies), 1)
    C = int(capacity)
    R = max(int(rows), 1)
    if zeros is None:
        def zeros(shape, dtype):
            return wp.zeros(shape, dtype=dtype, device=device)
    cs = ContactState()
    cs.c = allocate_contacts(W, C, device, zeros)
    cs.bq = zeros((W, B), wp.transformd)
    if cm.n_pairs:
        cs.sx = zeros((W, int(cm.shapes.type.shape[0])), wp.transformd)
    else:  # nothing collides: never read
        cs.sx = wp.zeros((1, 1), dtype=wp.transformd, device=device)
    cs.sw = sweep_state(W, cm.ix, device, zeros)
    cs.kind = zeros((W, C), wp.int32)
    for name in ("dirs", "a0", "a1", "b0", "b1", "kblk"):
        setattr(cs, name, zeros((W, C), wp.mat33d))
    for name in ("lam", "lamc", "point", "prev_point", "prev_lam", "prev_anc0", "prev_anc1"):
        setattr(cs, name, zeros((W, C), wp.vec3d))
    for name in ("plam", "bn", "bp", "gam", "f0h", "mu", "rest", "rimp", "prev_slip"):
        setattr(cs, name, zeros((W, C), wp.float64))
    cs.prev_count = wp.zeros(W, dtype=wp.int32, device=device)
    cs.prev_pair = zeros((W, C), wp.int32)
    for name in ("dv", "dw", "pv", "pw"):
        setattr(cs, name, zeros((W, B), wp.vec3d))
    cs.jlam = zeros((W, R), wp.float64)
    cs.pjlam = zeros((W, R), wp.float64)
    dense = int(cm.n_dense)
    nd = max(dense, 1)
    cs.dmat = zeros((W, nd * nd), wp.mat33d)
    nc = max(int(cm.n_comp), 1)

    def dense_only(shape, dtype):  # never read without the matrix: one shared entry
        return zeros(shape, dtype) if dense else wp.zeros((1, 1), dtype=dtype, device=device)

    cs.du = dense_only((W, C), wp.vec3d)
    cs.dup = dense_only((W, C), wp.float64)
    for name in ("cpar", "cisl_of"):
        setattr(cs, name, dense_only((W, nc), wp.int32))
    for name in ("cisl", "cloc", "isize", "istart", "ibase", "imem"):
        setattr(cs, name, dense_only((W, C), wp.int32))
    tb = B if dense else 1
    cs.tv = zeros((W, tb), wp.vec3d)
    cs.tw = zeros((W, tb), wp.vec3d)
    cs.tacc = zeros((W, R if dense else 1), wp.float64)
    cs.owner = dense_only((W, nc), wp.int32)
    cs.probed = dense_only((W, C), wp.int32)
    cs.dropped = wp.zeros(W, dtype=wp.int32, device=device)
    cs.sweeps = wp.zeros(W, dtype=wp.int32, device=device)
    cs.unconverged = wp.zeros(W, dtype=wp.int32, device=device)
    cs.dense_steps = wp.zeros(W, dtype=wp.int32, device=device)
    return cs


def contact_stats(cs: ContactState) -> dict:
    """Host view of the per-world contact diagnostics."""
    return {
        "dropped": cs.dropped.numpy().copy(),
        "sweeps": cs.sweeps.numpy().copy(),
        "unconverged": cs.unconverged.numpy().copy(),
        "dense_steps": cs.dense_steps.numpy().copy(),
        "count": cs.c.count.numpy().copy(),
        # steps whose pairs in reach overflowed the sweep's list (zeros where the sweep is off)
        "all_pairs_tested": (cs.sw.full.numpy().copy() if cs.sw.full.shape[0] == cs.prev_count.shape[0]
                             else np.zeros(cs.prev_count.shape[0], np.int32)),
    }


__all__ = ["ContactModel", "ContactOptions", "ContactState", "contact_begin", "contact_end", "contact_kick",
           "contact_solve", "contact_stats", "make_contact_state", "put_contact_model", "set_pairs",
           "set_row_components"]
