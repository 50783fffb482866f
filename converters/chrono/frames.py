"""Rotations and frames as Chrono's YAML parser builds them.

Quaternions are (x, y, z, w) like the rest of the host (usdphys.math3d does the generic
quaternion algebra); Chrono's own scalar-first order appears only where YAML is read.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from usdphys import math3d as m3

DEG = math.pi / 180.0


QUAT_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


def quat_axis_angle(axis, angle_rad: float) -> np.ndarray:
    axis = np.asarray(axis, float)
    s = math.sin(angle_rad / 2.0)
    return np.array([axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle_rad / 2.0)])


def euler_zyx(angles, degrees: bool) -> np.ndarray:
    """Chrono ReadCardanAngles: [a0, a1, a2] -> Qz(a0) * Qy(a1) * Qx(a2) (intrinsic Z-Y'-X'')."""
    a = np.asarray(angles, float) * (DEG if degrees else 1.0)
    q = m3.quat_mul(quat_axis_angle((0, 0, 1), a[0]), quat_axis_angle((0, 1, 0), a[1]))
    return m3.quat_mul(q, quat_axis_angle((1, 0, 0), a[2]))


def _normalized(v) -> np.ndarray | None:
    v = np.asarray(v, float)
    n = np.linalg.norm(v)
    return v / n if n > 1e-12 else None


def _perp(a, sugg):
    """Chrono's loop: cross(a, sugg) normalised, nudging sugg[0] until it is not parallel."""
    sugg = np.array(sugg, float)
    while True:
        c = _normalized(np.cross(a, sugg))
        if c is not None:
            return c
        sugg[0] += 1.0


def frame_z(axis) -> np.ndarray:
    """Chrono ChMatrix33::SetFromAxisZ(axis, VECT_Y): Z = axis, X = Y_sugg x Z, Y = Z x X."""
    z = _normalized(axis)
    x = _perp_rev(z, (0.0, 1.0, 0.0))
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


def _perp_rev(z, sugg):
    sugg = np.array(sugg, float)
    while True:
        c = _normalized(np.cross(sugg, z))
        if c is not None:
            return c
        sugg[0] += 1.0


def frame_x_then_y90(axis) -> np.ndarray:
    """Motor / RSDA frame: SetFromAxisX(axis) then * QuatFromAngleY(pi/2), so Z = axis."""
    x = _normalized(axis)
    z = _perp(x, (0.0, 1.0, 0.0))
    y = np.cross(z, x)
    r = np.column_stack([x, y, z])
    return r @ m3.quat_to_matrix(quat_axis_angle((0, 1, 0), math.pi / 2))


def frame_universal(axis1, axis2) -> np.ndarray:
    """Chrono UNIVERSAL joint frame: X = axis1, Z = axis1 x axis2, Y = Z x X."""
    x = np.asarray(axis1, float)
    z = np.cross(x, np.asarray(axis2, float))
    y = np.cross(z, x)
    return np.column_stack([x / np.linalg.norm(x), y / np.linalg.norm(y), z / np.linalg.norm(z)])


def rotation_z_to(axis) -> np.ndarray:
    """Shortest rotation taking +Z onto `axis` (cylinders: only the axis matters)."""
    return m3.quat_between((0.0, 0.0, 1.0), _normalized(axis), half_turn_axis=(1.0, 0.0, 0.0))


def inertia_tensor(moments, products) -> np.ndarray:
    """Full tensor from moments [Ixx, Iyy, Izz] and products [Ixy, Ixz, Iyz] (Chrono's order;
    the entries are the matrix elements themselves, as ChBody::SetInertiaXY takes them)."""
    ixx, iyy, izz = moments
    ixy, ixz, iyz = products
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], float)


def principal_axes(tensor) -> tuple[np.ndarray, np.ndarray]:
    """(diagonal, R) with tensor = R diag R^T, det R = +1, R as close to identity as possible:
    eigenvectors are matched to the original axes (best permutation), signs made positive on
    the diagonal. A diagonal tensor gives its own diagonal and R = I exactly."""
    t = np.asarray(tensor, float)
    if np.allclose(t - np.diag(np.diag(t)), 0.0, atol=0.0):
        return np.diag(t).copy(), np.eye(3)
    vals, vecs = np.linalg.eigh(t)
    best = max(itertools.permutations(range(3)), key=lambda p: sum(abs(vecs[i, p[i]]) for i in range(3)))
    r = vecs[:, best].copy()
    d = vals[list(best)].copy()
    for i in range(3):
        if r[i, i] < 0:
            r[:, i] *= -1
    if np.linalg.det(r) < 0:
        k = int(np.argmin([abs(r[i, i]) for i in range(3)]))
        r[:, k] *= -1
    return d, r
