"""NumPy references of the force laws (SI, radians), for tests to compare the Warp laws with.

Written independently of usdphys.solver.laws: scalar Python, same signs and conventions
(docs/schemas.md, docs/forces.md).
"""
from __future__ import annotations

import math

import numpy as np

from usdphys.math3d import quat_mul, quat_to_matrix
from usdphys.types.laws import LINE_EPS, ScalarLaw

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
