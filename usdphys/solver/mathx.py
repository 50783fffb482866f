"""Small double-precision helpers shared by the solver kernels (Warp functions).

Quaternions are wp.quatd, scalar last (x, y, z, w). Frames are (origin, orientation) in
world coordinates; body index -1 is the world (identity pose).
"""
from __future__ import annotations

import warp as wp

from usdphys.types.enums import RowKind, RowMode

wp.set_module_options({"enable_backward": False})

# constraint-row kinds and modes, derived from the shared enums
ROW_LIN = wp.constant(int(RowKind.LIN))
ROW_PERP = wp.constant(int(RowKind.PERP))
ROW_TWIST = wp.constant(int(RowKind.TWIST))
ROW_DIST = wp.constant(int(RowKind.DIST))
ROW_LIN1 = wp.constant(int(RowKind.LIN1))
ROW_POINT = wp.constant(int(RowKind.POINT))
ROW_CROSS = wp.constant(int(RowKind.CROSS))
ROW_SWING = wp.constant(int(RowKind.SWING))
MODE_EQUAL = wp.constant(int(RowMode.EQUAL))
MODE_LOWER = wp.constant(int(RowMode.LOWER))
MODE_UPPER = wp.constant(int(RowMode.UPPER))
MODE_SOFT = wp.constant(int(RowMode.SOFT))
MODE_LAW = wp.constant(int(RowMode.LAW))
MODE_FRICTION = wp.constant(int(RowMode.FRICTION))

PI = wp.constant(wp.float64(3.141592653589793))
# rad: how far outside its range an input angle may be and still start on the range's bound
# (float32 poses carry ~1e-7 rad of round-off)
START_TOL = wp.constant(wp.float64(1.0e-6))
TWO_PI = wp.constant(wp.float64(6.283185307179586))


@wp.func
def basis(i: int) -> wp.vec3d:
    v = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    v[i] = wp.float64(1.0)
    return v


@wp.func
def wrap_angle(a: wp.float64) -> wp.float64:
    """Map an angle into (-pi, pi] in O(1): a value many turns away (or 1e30) costs the same."""
    return a - TWO_PI * wp.ceil((a - PI) / TWO_PI)


@wp.func
def quat_axis(q: wp.quatd, k: int) -> wp.vec3d:
    """Axis k of the frame q: quat_rotate(q, basis(k)) without building the basis vector (a
    vector written with a run-time index and read back costs a store-forwarding stall)."""
    c = wp.float64(2.0) * q[3] * q[3] - wp.float64(1.0)
    w2 = q[3] * wp.float64(2.0)
    if k == 0:
        d = wp.float64(2.0) * q[0]
        return wp.vec3d(c + q[0] * d, q[1] * d + q[2] * w2, q[2] * d - q[1] * w2)
    if k == 1:
        d = wp.float64(2.0) * q[1]
        return wp.vec3d(q[0] * d - q[2] * w2, c + q[1] * d, q[2] * d + q[0] * w2)
    d = wp.float64(2.0) * q[2]
    return wp.vec3d(q[0] * d + q[1] * w2, q[1] * d - q[0] * w2, c + q[2] * d)


@wp.func
def cmul(a: wp.vec3d, b: wp.vec3d) -> wp.vec3d:
    return wp.vec3d(a[0] * b[0], a[1] * b[1], a[2] * b[2])


@wp.func
def cayley_unnormalised(v: wp.vec3d, h: wp.float64) -> wp.quatd:
    """The Cayley map of h*skew(v) (axis v, angle 2 atan(h|v|/2)) as a quaternion of length
    sqrt(1 + |h v / 2|^2): a unit quaternion times it needs one normalisation, not two."""
    half = v * (wp.float64(0.5) * h)
    return wp.quatd(half[0], half[1], half[2], wp.float64(1.0))


@wp.func
def free_rotation(l: wp.vec3d, inertia: wp.vec3d, inv_inertia: wp.vec3d, h: wp.float64):
    """One implicit-midpoint step of the torque-free Euler equations in the body frame.

    l: angular momentum in the body (principal) frame at the step start. Solves
    l+ = l + h (lm x I^-1 lm), lm = (l + l+)/2, by Newton. Returns (omega_mid, l+).
    The midpoint rule conserves |l| and l.I^-1.l exactly (quadratic invariants), and
    with the orientation update R+ = R cay(h omega_mid) the world momentum R l is
    conserved exactly too: l+ = cay(-h omega_mid) l.
    """
    lp = l
    eye = wp.identity(n=3, dtype=wp.float64)
    scale = wp.length(l) + wp.float64(1.0e-300)
    for it in range(8):
        lm = wp.float64(0.5) * (l + lp)
        om = cmul(inv_inertia, lm)
        F = lp - l - h * wp.cross(lm, om)
        if wp.length(F) <= wp.float64(1.0e-15) * scale:
            break
        dI = wp.mat33d(inv_inertia[0], wp.float64(0.0), wp.float64(0.0),
                       wp.float64(0.0), inv_inertia[1], wp.float64(0.0),
                       wp.float64(0.0), wp.float64(0.0), inv_inertia[2])
        Jm = eye - (wp.float64(0.5) * h) * (wp.skew(lm) * dI - wp.skew(om))
        lp = lp - wp.inverse(Jm) * F
    lm2 = wp.float64(0.5) * (l + lp)
    return cmul(inv_inertia, lm2), lp


@wp.func
def euler_xyz(k: int, Q0: wp.quatd, Q1: wp.quatd):
    """Angle k of frame 1 relative to frame 0 as the sequence R = Rx(q0) Ry(q1) Rz(q2) (MuJoCo's
    three hinges in one body, Newton's D6), and the world vector J with dq_k/dt = J . (w1 - w0).

    With a = e0_x, c = e1_z and u = c x a (|u| = cos q1, u = cos q1 * the middle axis):
    q0 = atan2(-c.e0_y, c.e0_z), q1 = atan2(c.a, |u|), q2 = atan2(-a.e1_y, a.e1_x); the rates
    solve w = q0' a + q1' u/|u| + q2' c by the dual basis. q0 and q2 are undefined where
    q1 = +-90 deg (gimbal lock): there their Jacobians grow as 1 / cos q1.
    """
    a = quat_axis(Q0, 0)
    c = quat_axis(Q1, 2)
    u = wp.cross(c, a)
    uu = wp.max(wp.dot(u, u), wp.float64(1.0e-300))
    g = wp.float64(0.0)
    J = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    if k == 0:
        g = wp.atan2(-wp.dot(c, quat_axis(Q0, 1)), wp.dot(c, quat_axis(Q0, 2)))
        J = wp.cross(u, c) / uu
    elif k == 1:
        lu = wp.sqrt(uu)
        g = wp.atan2(wp.dot(c, a), lu)
        J = u / lu
    else:
        g = wp.atan2(-wp.dot(a, quat_axis(Q1, 1)), wp.dot(a, quat_axis(Q1, 0)))
        J = wp.cross(a, u) / uu
    return g, J


@wp.func
def sequence_limit(axis: int, Q0: wp.quatd, Q1: wp.quatd, b: wp.float64):
    """A limit b on the first (axis 6) or last (axis 8) angle of the x-y-z sequence (euler_xyz)
    as a well-conditioned function of the two frames: (h, J) with h = cos q1 sin(q - b) and
    dh/dt = J . (w1 - w0). q itself has Jacobians growing as 1 / cos q1 near the sequence's lock,
    where q0 and q2 turn about almost one axis; h is a dot product of two unit vectors, one fixed
    in each frame (first angle: e1z against -(e0y cos b + e0z sin b); last: e0x against
    -(e1y cos b + e1x sin b)), |J| = 1 on the limit's surface however close to the lock, and
    h = 0 holds there exactly where q = b does."""
    cb = wp.cos(b)
    sb = wp.sin(b)
    if axis == 6:
        c = quat_axis(Q1, 2)
        n = -(quat_axis(Q0, 1) * cb + quat_axis(Q0, 2) * sb)
        return wp.dot(c, n), wp.cross(c, n)
    a = quat_axis(Q0, 0)
    n = -(quat_axis(Q1, 1) * cb + quat_axis(Q1, 0) * sb)
    return wp.dot(a, n), wp.cross(n, a)


@wp.func
def plane_angle(Q: wp.quatd, v: wp.vec3d, i: int, j: int) -> wp.float64:
    """Angle of v in the plane of frame Q's axes i, j, from axis i towards axis j."""
    return wp.atan2(wp.dot(v, quat_axis(Q, j)), wp.dot(v, quat_axis(Q, i)))


@wp.func
def swing_angle(axis: int, Q0: wp.quatd, Q1: wp.quatd, ratio: wp.float64):
    """A cone limit's measure and its angular Jacobian (for body 1; body 0's is its negative).

    With a = axis % 3, the direction of e1[a] in frame 0 is (x, rho c, rho s) along e0[a],
    e0[a+1], e0[a+2]: the swing theta = atan2(rho, x) from the cone's axis, tilted towards
    e0[a+1] by c and towards e0[a+2] by s. The measure is theta sqrt((wc c)^2 + (ws s)^2), with
    (wc, ws) = (1, ratio) for axis < 3 and (ratio, 1) for axis >= 3: on an ellipse of semi-angles
    A and B (A towards e0[a+1]) it reads A on the boundary when ratio = A / B. Exact in the
    angle (not a tangent or sine of it), so a cone up to 180 deg holds; undefined only where e1[a]
    points along the axis (theta = 0, far inside any cone, taken as tilted towards e0[a+1]) or
    against it (theta = 180 deg)."""
    a = axis % 3
    e0 = quat_axis(Q0, a)
    ej = quat_axis(Q0, (a + 1) % 3)
    ek = quat_axis(Q0, (a + 2) % 3)
    v = quat_axis(Q1, a)
    x = wp.dot(v, e0)
    y = wp.dot(v, ej)
    z = wp.dot(v, ek)
    rho = wp.sqrt(y * y + z * z)
    theta = wp.atan2(rho, x)
    c = wp.float64(1.0)
    s = wp.float64(0.0)
    over = wp.float64(1.0)  # theta / rho, -> 1 as the swing vanishes
    if rho > wp.float64(1.0e-300):
        c = y / rho
        s = z / rho
        over = theta / rho
    wc = wp.float64(1.0)
    ws = ratio
    if axis >= 3:
        wc = ratio
        ws = wp.float64(1.0)
    F = wp.sqrt(wc * wc * c * c + ws * ws * s * s)
    # gradient in frame 0 of theta F over the unit sphere: F grad(theta) + theta grad(F), with
    # grad(theta) = (-rho, x c, x s) and grad(F) = D (0, s, -c) / rho, D = c s (wc^2 - ws^2) / F
    D = wp.float64(0.0)
    if F > wp.float64(0.0):
        D = c * s * (wc * wc - ws * ws) / F
    gx = -F * rho
    gy = F * x * c + over * D * s
    gz = F * x * s - over * D * c
    # d/dt (theta F) = W . (v x grad) with W the relative angular velocity in frame 0
    vy = rho * c
    vz = rho * s
    return theta * F, e0 * (vy * gz - vz * gy) + ej * (vz * gx - x * gz) + ek * (x * gy - vy * gx)


@wp.func
def row_frames(p0: wp.vec3d, q0: wp.quatd, p1: wp.vec3d, q1: wp.quatd, x0: wp.vec3d, r0: wp.quatd, x1: wp.vec3d,
               r1: wp.quatd):
    """World frames (P0, Q0), (P1, Q1) of a row's frames (p0, q0) in body 0 at pose (x0, r0) and
    (p1, q1) in body 1 at (x1, r1). Shared by the rows of one joint (row_frame in the solver)."""
    return x0 + wp.quat_rotate(r0, p0), r0 * q0, x1 + wp.quat_rotate(r1, p1), r1 * q1


@wp.func
def eval_row(kind: int, axis: int, p0: wp.vec3d, q0: wp.quatd, p1: wp.vec3d, q1: wp.quatd,
             x0: wp.vec3d, r0: wp.quatd, x1: wp.vec3d, r1: wp.quatd, frac: wp.float64):
    """Value g of one constraint row and its velocity Jacobian.

    (x0, r0), (x1, r1): COM-frame poses of the two bodies (identity for the world);
    (p0, q0), (p1, q1): the row's frames in those bodies; frac: the row's shape parameter
    (step.row_form): where ROW_POINT's point sits on the line from P0 (0) to P1 (1), a
    ROW_SWING cone's ratio, unused by the other kinds. Returns
    (g, jl0, ja0, jl1, ja1) with dg/dt = jl0.v0 + ja0.w0 + jl1.v1 + ja1.w1 (world frame).
    """
    P0, Q0, P1, Q1 = row_frames(p0, q0, p1, q1, x0, r0, x1, r1)
    return eval_row_in(kind, axis, P0, Q0, P1, Q1, x0, x1, frac)


@wp.func
def eval_row_in(kind: int, axis: int, P0: wp.vec3d, Q0: wp.quatd, P1: wp.vec3d, Q1: wp.quatd, x0: wp.vec3d,
                x1: wp.vec3d, frac: wp.float64):
    """eval_row from the row's world frames (row_frames) and the bodies' centres x0, x1."""
    z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    g = wp.float64(0.0)
    jl0 = z
    ja0 = z
    jl1 = z
    ja1 = z
    if kind == ROW_LIN:
        e = quat_axis(Q0, axis)
        d = P1 - P0
        g = wp.dot(e, d)
        jl0 = -e
        ja0 = wp.cross(e, P1 - x0)
        jl1 = e
        ja1 = wp.cross(P1 - x1, e)
    elif kind == ROW_PERP:
        a = axis // 3
        b = axis - 3 * a
        u = quat_axis(Q0, a)
        v = quat_axis(Q1, b)
        g = wp.dot(u, v)
        ja0 = wp.cross(u, v)
        ja1 = -ja0
    elif kind == ROW_TWIST and axis < 3:  # about e0[axis]: where e1[axis+1] points in e0's plane
        i = (axis + 1) % 3
        j = (axis + 2) % 3
        k = quat_axis(Q0, axis)
        g = plane_angle(Q0, quat_axis(Q1, i), i, j)
        ja0 = -k
        ja1 = k
    elif kind == ROW_TWIST and axis >= 6:  # angle axis - 6 of the x-y-z sequence (three free rotations)
        g, ja1 = euler_xyz(axis - 6, Q0, Q1)
        ja0 = -ja1
    elif kind == ROW_TWIST:  # about e1[a] (a Cardan joint's second axis): where e0[a+2] points in e1's plane
        a = axis - 3
        i = (a + 1) % 3
        j = (a + 2) % 3
        k = quat_axis(Q1, a)
        g = plane_angle(Q1, quat_axis(Q0, j), j, i)
        ja0 = -k
        ja1 = k
    elif kind == ROW_CROSS:  # along e0[a] x e1[b]: both turn, so their rotation enters too
        a = axis // 3
        b = axis - 3 * a
        ea = quat_axis(Q0, a)
        eb = quat_axis(Q1, b)
        u = wp.cross(ea, eb)
        d = P1 - P0
        g = wp.dot(u, d)
        # d/dt (u . d): u . (v1 + w1 x (P1 - x1) - v0 - w0 x (P0 - x0)) + d . ((w0 x ea) x eb + ea x (w1 x eb))
        jl0 = -u
        ja0 = wp.cross(u, P0 - x0) + wp.cross(ea, wp.cross(eb, d))
        jl1 = u
        ja1 = wp.cross(P1 - x1, u) + wp.cross(eb, wp.cross(d, ea))
    elif kind == ROW_LIN1:  # along an axis of frame 1 (revolute-translational joint)
        e = quat_axis(Q1, axis)
        g = wp.dot(e, P1 - P0)
        jl0 = -e
        ja0 = wp.cross(e, P0 - x0)
        jl1 = e
        ja1 = wp.cross(e, x1 - P0)
    elif kind == ROW_POINT:  # world axis `axis` of the point (1 - frac) P0 + frac P1
        e = basis(axis)
        a0 = wp.float64(1.0) - frac
        g = wp.dot(e, P0 * a0 + P1 * frac)
        jl0 = e * a0
        ja0 = wp.cross(P0 - x0, e) * a0
        jl1 = e * frac
        ja1 = wp.cross(P1 - x1, e) * frac
    elif kind == ROW_SWING:  # frac: the cone's ratio (swing_angle)
        g, ja1 = swing_angle(axis, Q0, Q1, frac)
        ja0 = -ja1
    else:  # ROW_DIST
        d = P1 - P0
        L = wp.length(d)
        n = basis(0)
        if L > wp.float64(1.0e-300):
            n = d / L
        g = L
        jl0 = -n
        ja0 = wp.cross(n, P0 - x0)
        jl1 = n
        ja1 = wp.cross(P1 - x1, n)
    return g, jl0, ja0, jl1, ja1


@wp.func
def turn_step(axis: int, dg: wp.float64) -> wp.float64:
    """How far a twist row's angle turned between two poses a step or less apart, from the
    change dg of its wrapped value: dg wrapped into (-pi, pi]; for the first and last angles of a
    joint's x-y-z sequence (axis 6, 8) into (-pi/2, pi/2]. Those two are measured with the middle
    angle kept within +-90 deg, so where the joint swings through the sequence's lock (middle
    angle 90 deg) the measurement moves to the decomposition's other branch and both jump by
    exactly pi while nothing turned (a rod swinging down a vertical plane read 180 deg on a
    +-170 deg limit of its last angle, or a damper on that angle read a half turn within one
    step, and stopped). A real turn of over pi/2 in one step is far beyond any step the solver
    converges. Every turn of a twist row between two poses goes through here (limits' unwrapped
    angles, drives, friction, force elements); a difference from a target angle does not (a
    target may lie anywhere on the circle)."""
    if axis == 6 or axis == 8:
        return dg - PI * wp.ceil((dg - wp.float64(0.5) * PI) / PI)
    return wrap_angle(dg)


@wp.func
def middle_branch(g: wp.float64, first_followed: wp.float64, first_measured: wp.float64):
    """The middle angle of an x-y-z sequence measured as g (within +-90 deg), read on the branch
    the first angle was followed on: past the lock the decomposition's other branch,
    (q0, q1, q2) = (q0 + pi, pi - q1, q2 + pi), and there the first angle followed through the
    lock (its turns counted modulo pi, turn_step) reads pi off its measurement. Returns (g, 1),
    or (pi - g, -1) on the other branch, where the measurement turns against the angle; the
    caller picks the turn (a multiple of 2 pi)."""
    if wp.cos(first_followed - first_measured) < wp.float64(0.0):
        return PI - g, wp.float64(-1.0)
    return g, wp.float64(1.0)


@wp.func
def start_turn(g: wp.float64, lo: wp.float64, hi: wp.float64) -> wp.float64:
    """The multi-turn value of a wrapped angle g in (-pi, pi] to start from: g itself when it
    lies in [lo, hi] or the range is open there, else g + 2 pi k for the k that brings it into
    the range, else the turn nearest to the range. O(1) for any range (even +-1e30). An angle
    within START_TOL outside the range counts as on its bound: a pose authored at a limit
    (float32 quaternions) must not start a whole turn away from it."""
    q = g
    if q < lo - START_TOL:
        q = g + TWO_PI * wp.ceil((lo - g) / TWO_PI)
        if q > hi:  # no turn fits: take the nearer of the two around the range
            below = q - TWO_PI
            if lo - below < q - hi:
                q = below
    elif q > hi + START_TOL:
        q = g - TWO_PI * wp.ceil((g - hi) / TWO_PI)
        if q < lo:
            above = q + TWO_PI
            if above - hi < lo - q:
                q = above
    return q
