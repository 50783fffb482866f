"""Scalar force laws of the force elements as Warp functions (float64).

Everything here is in SI and RADIANS (the element reader, usdphys.usd.reader.elements, converts
stage units and degrees). The solver calls these ``@wp.func``s from its own kernels; the tests
compare them with NumPy references of their own (tests/reference/laws.py).
Signs and laws follow docs/schemas.md; docs/forces.md explains them and the integration plan.

The packed scalar law table (``law_i``, ``law_f``, ``data``) is laid out in usdphys.types.laws.

Warp functions (all float64; vec3d / quatd):

    piecewise_linear(x, data, offset, count) -> (y, dy/dx)         [usdphys.solver.timefunc]
    bilinear_extrap(x, y, data, offset, nx, ny) -> (F, dF/dx, dF/dy)
    scalar_law(x, xdot, k, c, x0, preload, spring_off, spring_n, damp_off, damp_n, data)
        -> (f, df/dx, df/dxdot)
    spring_damper_law(x, xdot, i, law_i, law_f, data) -> (f, df/dx, df/dxdot)
    line_kinematics(p0, p1, v0, v1) -> (L, Ldot, n)        n = (p0 - p1)/L, or 0 if L < LINE_EPS
    line_forces(n, f) -> (F0, F1)                          F0 = f n (at p0), F1 = -f n (at p1)
    axial_spring_damper(a, p0, p1, v0, v1, k, d, offset, velocity_offset, force, active)
        -> (f, F0, F1)                                     F0 = +f a, F1 = -f a
    twist_angle(q0, q1, theta_prev) -> theta               rotation of frame 1 rel. frame 0 about z0
    twist_rate(q0, w0, w1) -> thetadot                     (w1 - w0) . z0
    axis_torques(q0, T) -> (tau0, tau1)                    tau0 = -T z0, tau1 = +T z0
    joint_friction_effort(v, dynamic, viscous) -> e        sign(v) (dynamic + viscous |v|)
    spring_mass_position(p0, p1, fraction) -> p
    spring_mass_reactions(m, fraction, acc, gravity) -> (F0, F1)
"""
from __future__ import annotations

import math

import warp as wp

from usdphys.solver.timefunc import piecewise_linear
from usdphys.types.laws import LINE_EPS, PackedLaws


def laws_to_warp(packed: PackedLaws, device=None):
    """(law_i, law_f, data) as Warp arrays for spring_damper_law."""
    return (
        wp.array(packed.law_i, dtype=wp.int32, device=device),
        wp.array(packed.law_f, dtype=wp.float64, device=device),
        wp.array(packed.data, dtype=wp.float64, device=device),
    )

# Warp
# ----------------------------------------------------------------------------------------
@wp.func
def _cell(x: wp.float64, data: wp.array(dtype=wp.float64), offset: wp.int32, n: wp.int32):
    """Grid cell for linear interpolation/extrapolation on ascending data[offset:offset+n]:
    (i0, i1, t, 1/dx) with t unclamped (extrapolates); n == 1: (0, 0, 0, 0)."""
    zero = wp.float64(0.0)
    if n <= 1:
        return wp.int32(0), wp.int32(0), zero, zero
    lo = wp.int32(0)
    hi = n - 1
    if x >= data[offset + n - 1]:
        lo = n - 2
    elif x > data[offset]:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if data[offset + mid] <= x:
                lo = mid
            else:
                hi = mid
    inv = wp.float64(1.0) / (data[offset + lo + 1] - data[offset + lo])
    return lo, lo + 1, (x - data[offset + lo]) * inv, inv


@wp.func
def bilinear_extrap(
    x: wp.float64, y: wp.float64, data: wp.array(dtype=wp.float64), offset: wp.int32, nx: wp.int32, ny: wp.int32
):
    """(F, dF/dx, dF/dy) on the map at data[offset:] (layout in the module docstring)."""
    one = wp.float64(1.0)
    i0, i1, tx, ix = _cell(x, data, offset, nx)
    j0, j1, ty, iy = _cell(y, data, offset + nx, ny)
    vo = offset + nx + ny
    a = data[vo + j0 * nx + i0]
    b = data[vo + j0 * nx + i1]
    c = data[vo + j1 * nx + i0]
    d = data[vo + j1 * nx + i1]
    F = (one - tx) * (one - ty) * a + tx * (one - ty) * b + (one - tx) * ty * c + tx * ty * d
    dFx = ((one - ty) * (b - a) + ty * (d - c)) * ix
    dFy = ((one - tx) * (c - a) + tx * (d - b)) * iy
    return F, dFx, dFy


@wp.func
def scalar_law(
    x: wp.float64, xdot: wp.float64, k: wp.float64, c: wp.float64, x0: wp.float64, preload: wp.float64,
    spring_off: wp.int32, spring_n: wp.int32, damp_off: wp.int32, damp_n: wp.int32,
    data: wp.array(dtype=wp.float64),
):
    """(f, df/dx, df/dxdot) with f = preload - S(x - x0) - D(xdot) (linear or curves)."""
    S = k * (x - x0)
    dS = k
    if spring_n > 0:
        S, dS = piecewise_linear(x - x0, data, spring_off, spring_n)
    D = c * xdot
    dD = c
    if damp_n > 0:
        D, dD = piecewise_linear(xdot, data, damp_off, damp_n)
    return preload - S - D, -dS, -dD


@wp.func
def spring_damper_law(
    x: wp.float64, xdot: wp.float64, i: wp.int32,
    law_i: wp.array2d(dtype=wp.int32), law_f: wp.array2d(dtype=wp.float64), data: wp.array(dtype=wp.float64),
):
    """(f, df/dx, df/dxdot) of packed law row i (TSDA: x = L; RSDA: x = theta)."""
    preload = law_f[i, 3]
    if law_i[i, 5] > 0:
        F, Fx, Fy = bilinear_extrap(x, xdot, data, law_i[i, 4], law_i[i, 5], law_i[i, 6])
        return preload - F, -Fx, -Fy
    return scalar_law(x, xdot, law_f[i, 0], law_f[i, 1], law_f[i, 2], preload,
                      law_i[i, 0], law_i[i, 1], law_i[i, 2], law_i[i, 3], data)


@wp.func
def line_kinematics(p0: wp.vec3d, p1: wp.vec3d, v0: wp.vec3d, v1: wp.vec3d):
    """(L, Ldot, n): n = (p0 - p1)/L, the direction body0 is pushed by a positive f.
    L < LINE_EPS: n = 0 and Ldot = 0 (no NaN; the element then applies no force)."""
    d = p0 - p1
    L = wp.length(d)
    if L < wp.float64(LINE_EPS):
        return L, wp.float64(0.0), wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    n = d / L
    return L, wp.dot(v0 - v1, n), n


@wp.func
def line_forces(n: wp.vec3d, f: wp.float64):
    """(F0 at p0 on body0, F1 at p1 on body1) for scalar f (positive pushes apart)."""
    F0 = n * f
    return F0, -F0


@wp.func
def axial_spring_damper(
    a: wp.vec3d, p0: wp.vec3d, p1: wp.vec3d, v0: wp.vec3d, v1: wp.vec3d,
    k: wp.float64, d: wp.float64, offset: wp.float64, velocity_offset: wp.float64, force: wp.float64,
    active: wp.int32,
):
    """Exudyn LinearSpringDamper, a = unit axis of body0 in world axes:
    f = k (a.(p1-p0) - offset) + d (a.(v1-v0) - velocity_offset) + force;
    returns (f, F0 = +f a on body0 at p0, F1 = -f a on body1 at p1); inactive: zeros."""
    zero = wp.float64(0.0)
    if active == 0:
        z = wp.vec3d(zero, zero, zero)
        return zero, z, z
    f = k * (wp.dot(a, p1 - p0) - offset) + d * (wp.dot(a, v1 - v0) - velocity_offset) + force
    return f, a * f, a * (-f)


@wp.func
def twist_angle(q0: wp.quatd, q1: wp.quatd, theta_prev: wp.float64):
    """Rotation (rad) of frame q1 relative to frame q0 about q0's Z (swing-twist), unwrapped
    to within pi of theta_prev: continuous over turns when called every step with the last
    value (0 at assembly). Valid while it changes by less than pi per call."""
    two = wp.float64(2.0)
    pi = wp.float64(math.pi)
    qr = wp.quat_inverse(q0) * q1
    raw = two * wp.atan2(qr[2], qr[3])
    d = raw - theta_prev
    d = d - two * pi * wp.floor((d + pi) / (two * pi))
    return theta_prev + d


@wp.func
def twist_rate(q0: wp.quatd, w0: wp.vec3d, w1: wp.vec3d):
    """d theta / dt = (w1 - w0) . z0 (world angular velocities)."""
    z0 = wp.quat_rotate(q0, wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(1.0)))
    return wp.dot(w1 - w0, z0)


@wp.func
def axis_torques(q0: wp.quatd, T: wp.float64):
    """(tau0 = -T z0 on body0, tau1 = +T z0 on body1), world axes."""
    z0 = wp.quat_rotate(q0, wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(1.0)))
    return z0 * (-T), z0 * T


@wp.func
def joint_friction_effort(v: wp.float64, dynamic: wp.float64, viscous: wp.float64):
    """sign(v) (dynamic + viscous |v|), sign(0) = 0: the friction effort (NewtonJointAPI);
    the generalised force applied to the DOF is its NEGATIVE. SI / radians."""
    zero = wp.float64(0.0)
    if v > zero:
        return dynamic + viscous * v
    if v < zero:
        return -(dynamic - viscous * v)
    return zero


@wp.func
def spring_mass_position(p0: wp.vec3d, p1: wp.vec3d, fraction: wp.float64):
    """Where the spring's point mass sits: p0 + fraction (p1 - p0)."""
    return p0 + (p1 - p0) * fraction


@wp.func
def spring_mass_reactions(m: wp.float64, fraction: wp.float64, acc: wp.vec3d, gravity: wp.vec3d):
    """Forces on body0 (at p0) and body1 (at p1) from a point mass m kinematically on the
    line at `fraction` (Modelica LineForceWithMass): -m (1 - fraction) (acc - g) and
    -m fraction (acc - g); acc = acceleration of the mass point."""
    ag = acc - gravity
    return ag * (-m * (wp.float64(1.0) - fraction)), ag * (-m * fraction)
