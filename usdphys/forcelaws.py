"""Scalar force laws of the force elements: Warp functions (float64) + NumPy references.

Everything here is in SI and RADIANS (the element reader, usdphys.elements, converts stage
units and degrees). The solver calls the ``@wp.func``s from its own kernels; the NumPy
functions are the references the tests compare against (and are handy in Python code).
Signs and laws follow docs/schemas.md; docs/forces.md explains them and the integration plan.

Packed scalar law (MbdSpringDamper and MbdRotationalSpringDamper share it; ``pack_laws``):

    law_i int32   (n, 7)  [spring_off, spring_n, damp_off, damp_n, map_off, map_nx, map_ny]
    law_f float64 (n, 4)  [k, c, x0, preload]
    data  float64 (m,)    shared buffer (>= 1 element)

  spring curve K: spring_n (x, y) pairs interleaved at data[spring_off:] (x = x - x0)
  damping curve C: damp_n (xdot, y) pairs at data[damp_off:]
  map F(x, xdot): data[map_off : +nx] deformation (= x itself, x0 unused), then ny
      velocities, then ny * nx values row-major per velocity (row j = velocity j).
  f = preload - S - D with S = K(x - x0) if spring_n > 0 else k (x - x0),
                           D = C(xdot)    if damp_n > 0   else c xdot;
  map_nx > 0: f = preload - F(x, xdot) (replaces both).

Warp functions (all float64; vec3d / quatd):

    piecewise_linear(x, data, offset, count) -> (y, dy/dx)         [usdphys.timefunc]
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
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import warp as wp

from usdphys.errors import UsdphysError
from usdphys.model import quat_mul, quat_to_matrix
from usdphys.timefunc import piecewise_linear

# Below this attachment distance (metres) the line of action is undefined: the direction is
# taken as the zero vector, so a spring-damper with coincident points applies no force
# (preload included) instead of NaN. Stateless, so it is the same on every world and step.
LINE_EPS = 1e-12

N_LAW_INT = 7
N_LAW_FLOAT = 4
LI_SPRING_OFF, LI_SPRING_N, LI_DAMP_OFF, LI_DAMP_N, LI_MAP_OFF, LI_MAP_NX, LI_MAP_NY = range(7)
LF_K, LF_C, LF_X0, LF_PRELOAD = range(4)


# ----------------------------------------------------------------------------------------
# Law specs and packing
# ----------------------------------------------------------------------------------------
@dataclass
class ScalarLaw:
    """One spring-damper law in SI/radians. Curves are (x, y) pairs with ascending x;
    the map is (deformation[nx], velocity[ny], values[ny * nx] row-major per velocity)."""

    k: float = 0.0
    c: float = 0.0
    x0: float = 0.0
    preload: float = 0.0
    spring_curve: Sequence[Sequence[float]] = ()
    damping_curve: Sequence[Sequence[float]] = ()
    map_deformation: Sequence[float] = ()
    map_velocity: Sequence[float] = ()
    map_values: Sequence[float] = ()
    label: str = field(default="force law", compare=False)

    def curve(self, which: str) -> np.ndarray:
        pts = np.asarray([tuple(p) for p in getattr(self, which)], dtype=np.float64).reshape(-1, 2)
        return pts

    def has_map(self) -> bool:
        return len(self.map_deformation) > 0 or len(self.map_velocity) > 0 or len(self.map_values) > 0

    def validate(self) -> "ScalarLaw":
        where = self.label
        for name in ("k", "c", "x0", "preload"):
            if not math.isfinite(float(getattr(self, name))):
                raise UsdphysError(f"{where}: {name} = {getattr(self, name)} is not finite")
        for which in ("spring_curve", "damping_curve"):
            pts = self.curve(which)
            if not np.all(np.isfinite(pts)):
                raise UsdphysError(f"{where}: {which} has non-finite values")
            if np.any(np.diff(pts[:, 0]) <= 0):
                raise UsdphysError(f"{where}: {which} abscissae must be strictly ascending")
        if self.has_map():
            xs = np.asarray(self.map_deformation, dtype=np.float64)
            ys = np.asarray(self.map_velocity, dtype=np.float64)
            vs = np.asarray(self.map_values, dtype=np.float64)
            if len(xs) == 0 or len(ys) == 0 or vs.size != len(xs) * len(ys):
                raise UsdphysError(f"{where}: force map has {vs.size} values; expected len(velocity) x len(deformation) = {len(ys)} x {len(xs)}")
            if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys)) and np.all(np.isfinite(vs))):
                raise UsdphysError(f"{where}: force map has non-finite values")
            if np.any(np.diff(xs) <= 0) or np.any(np.diff(ys) <= 0):
                raise UsdphysError(f"{where}: force map deformation and velocity must be strictly ascending")
        return self


@dataclass
class PackedLaws:
    law_i: np.ndarray  # int32 (n, 7)
    law_f: np.ndarray  # float64 (n, 4)
    data: np.ndarray  # float64 (m,), m >= 1

    def to_warp(self, device=None):
        return (
            wp.array(self.law_i, dtype=wp.int32, device=device),
            wp.array(self.law_f, dtype=wp.float64, device=device),
            wp.array(self.data, dtype=wp.float64, device=device),
        )


def pack_laws(laws: Sequence[ScalarLaw]) -> PackedLaws:
    n = len(laws)
    law_i = np.zeros((n, N_LAW_INT), dtype=np.int32)
    law_f = np.zeros((n, N_LAW_FLOAT), dtype=np.float64)
    buf: list[float] = []
    for e, law in enumerate(laws):
        law.validate()
        law_f[e] = (law.k, law.c, law.x0, law.preload)
        for which, off_col, n_col in (("spring_curve", LI_SPRING_OFF, LI_SPRING_N), ("damping_curve", LI_DAMP_OFF, LI_DAMP_N)):
            pts = law.curve(which)
            law_i[e, off_col] = len(buf)
            law_i[e, n_col] = len(pts)
            buf.extend(pts.reshape(-1).tolist())
        law_i[e, LI_MAP_OFF] = len(buf)
        if law.has_map():
            law_i[e, LI_MAP_NX] = len(law.map_deformation)
            law_i[e, LI_MAP_NY] = len(law.map_velocity)
            buf.extend(float(v) for v in law.map_deformation)
            buf.extend(float(v) for v in law.map_velocity)
            buf.extend(float(v) for v in law.map_values)
    return PackedLaws(law_i, law_f, np.asarray(buf if buf else [0.0], dtype=np.float64))


# ----------------------------------------------------------------------------------------
# NumPy references (scalars; SI / radians)
# ----------------------------------------------------------------------------------------
def curve_np(pts: np.ndarray, x: float) -> tuple[float, float]:
    """(y, dy/dx): piecewise linear, held constant outside, right-continuous slope."""
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    if len(pts) == 0:
        return 0.0, 0.0
    xs, ys = pts[:, 0], pts[:, 1]
    if len(xs) == 1 or x < xs[0]:
        return float(ys[0]), 0.0
    if x >= xs[-1]:
        return float(ys[-1]), 0.0
    i = int(np.searchsorted(xs, x, side="right") - 1)
    s = (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i])
    return float(ys[i] + s * (x - xs[i])), float(s)


def _cell_np(xs: np.ndarray, x: float) -> tuple[int, int, float, float]:
    if len(xs) == 1:
        return 0, 0, 0.0, 0.0
    i = int(np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2))
    inv = 1.0 / (xs[i + 1] - xs[i])
    return i, i + 1, (x - xs[i]) * inv, inv


def bilinear_np(xs, ys, values, x: float, y: float) -> tuple[float, float, float]:
    """(F, dF/dx, dF/dy): bilinear on the grid, linearly extrapolated outside;
    values row-major per y (values[j * nx + i] at (xs[i], ys[j]))."""
    xs = np.asarray(xs, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64).reshape(len(ys), len(xs))
    i0, i1, tx, ix = _cell_np(xs, x)
    j0, j1, ty, iy = _cell_np(ys, y)
    a, b, c, d = v[j0, i0], v[j0, i1], v[j1, i0], v[j1, i1]
    F = (1 - tx) * (1 - ty) * a + tx * (1 - ty) * b + (1 - tx) * ty * c + tx * ty * d
    dFx = ((1 - ty) * (b - a) + ty * (d - c)) * ix
    dFy = ((1 - tx) * (c - a) + tx * (d - b)) * iy
    return float(F), float(dFx), float(dFy)


def law_np(law: ScalarLaw, x: float, xdot: float) -> tuple[float, float, float]:
    """(f, df/dx, df/dxdot) of one ScalarLaw (reference for spring_damper_law)."""
    law.validate()
    if law.has_map():
        F, Fx, Fy = bilinear_np(law.map_deformation, law.map_velocity, law.map_values, x, xdot)
        return law.preload - F, -Fx, -Fy
    sc, dc = law.curve("spring_curve"), law.curve("damping_curve")
    S, dS = curve_np(sc, x - law.x0) if len(sc) else (law.k * (x - law.x0), law.k)
    D, dD = curve_np(dc, xdot) if len(dc) else (law.c * xdot, law.c)
    return law.preload - S - D, -dS, -dD


def line_kinematics_np(p0, p1, v0, v1) -> tuple[float, float, np.ndarray]:
    d = np.asarray(p0, dtype=np.float64) - np.asarray(p1, dtype=np.float64)
    L = float(np.linalg.norm(d))
    if L < LINE_EPS:
        return L, 0.0, np.zeros(3)
    n = d / L
    return L, float(np.dot(np.asarray(v0, dtype=np.float64) - np.asarray(v1, dtype=np.float64), n)), n


def axial_np(a, p0, p1, v0, v1, k, d, offset=0.0, velocity_offset=0.0, force=0.0, active=True):
    """(f, F0, F1) of the Exudyn LinearSpringDamper; a is the unit axis in world axes."""
    a = np.asarray(a, dtype=np.float64)
    if not active:
        return 0.0, np.zeros(3), np.zeros(3)
    dx = float(np.dot(a, np.asarray(p1, dtype=np.float64) - np.asarray(p0, dtype=np.float64)))
    dv = float(np.dot(a, np.asarray(v1, dtype=np.float64) - np.asarray(v0, dtype=np.float64)))
    f = k * (dx - offset) + d * (dv - velocity_offset) + force
    return f, f * a, -f * a


def twist_angle_np(q0, q1, theta_prev: float = 0.0) -> float:
    """Angle (rad) of frame 1 relative to frame 0 about z0, unwrapped next to theta_prev.
    Quaternions (x, y, z, w), frame orientations in the world."""
    q0 = np.asarray(q0, dtype=np.float64)
    inv = np.array([-q0[0], -q0[1], -q0[2], q0[3]]) / float(np.dot(q0, q0))
    qr = quat_mul(inv, np.asarray(q1, dtype=np.float64))
    raw = 2.0 * math.atan2(qr[2], qr[3])
    d = raw - theta_prev
    d -= 2.0 * math.pi * math.floor((d + math.pi) / (2.0 * math.pi))
    return theta_prev + d


def twist_rate_np(q0, w0, w1) -> float:
    z0 = quat_to_matrix(q0)[:, 2]
    return float(np.dot(np.asarray(w1, dtype=np.float64) - np.asarray(w0, dtype=np.float64), z0))


def axis_torques_np(q0, T: float) -> tuple[np.ndarray, np.ndarray]:
    z0 = quat_to_matrix(q0)[:, 2]
    return -T * z0, T * z0


def joint_friction_effort_np(v: float, dynamic: float, viscous: float) -> float:
    """sign(v) (dynamic + viscous |v|): the effort friction opposes motion with; the
    generalised force applied to the DOF is its negative. sign(0) = 0."""
    return float(np.sign(v) * (dynamic + viscous * abs(v)))


def spring_mass_reactions_np(m: float, fraction: float, acc, gravity) -> tuple[np.ndarray, np.ndarray]:
    ag = np.asarray(acc, dtype=np.float64) - np.asarray(gravity, dtype=np.float64)
    return -m * (1.0 - fraction) * ag, -m * fraction * ag


# ----------------------------------------------------------------------------------------
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
