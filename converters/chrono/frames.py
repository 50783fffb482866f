"""Rotations and frames as Chrono's YAML parser builds them (numpy, quaternions (w, x, y, z))."""
from __future__ import annotations

import itertools
import math

import numpy as np

DEG = math.pi / 180.0


def quat_mul(a, b) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def quat_conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_axis_angle(axis, angle_rad: float) -> np.ndarray:
    axis = np.asarray(axis, float)
    s = math.sin(angle_rad / 2.0)
    return np.array([math.cos(angle_rad / 2.0), axis[0] * s, axis[1] * s, axis[2] * s])


def euler_zyx(angles, degrees: bool) -> np.ndarray:
    """Chrono ReadCardanAngles: [a0, a1, a2] -> Qz(a0) * Qy(a1) * Qx(a2) (intrinsic Z-Y'-X'')."""
    a = np.asarray(angles, float) * (DEG if degrees else 1.0)
    q = quat_mul(quat_axis_angle((0, 0, 1), a[0]), quat_axis_angle((0, 1, 0), a[1]))
    return quat_mul(q, quat_axis_angle((1, 0, 0), a[2]))


def quat_to_mat(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def mat_to_quat(m) -> np.ndarray:
    """Rotation matrix -> unit quaternion with w >= 0 (Shepperd's method)."""
    m = np.asarray(m, float)
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return -q if q[0] < 0 else q


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
    return r @ quat_to_mat(quat_axis_angle((0, 1, 0), math.pi / 2))


def frame_universal(axis1, axis2) -> np.ndarray:
    """Chrono UNIVERSAL joint frame: X = axis1, Z = axis1 x axis2, Y = Z x X."""
    x = np.asarray(axis1, float)
    z = np.cross(x, np.asarray(axis2, float))
    y = np.cross(z, x)
    return np.column_stack([x / np.linalg.norm(x), y / np.linalg.norm(y), z / np.linalg.norm(z)])


def rotation_z_to(axis) -> np.ndarray:
    """Shortest rotation taking +Z onto `axis` (cylinders: only the axis matters)."""
    a = _normalized(axis)
    z = np.array([0.0, 0.0, 1.0])
    c = float(np.dot(z, a))
    if c < -1 + 1e-12:
        return np.array([0.0, 1.0, 0.0, 0.0])  # 180 deg about X
    v = np.cross(z, a)
    q = np.array([1.0 + c, v[0], v[1], v[2]])
    return q / np.linalg.norm(q)


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
