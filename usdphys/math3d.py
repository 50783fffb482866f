"""Rotations and frames in NumPy: the one convention of the host code.

Quaternions are scalar-LAST, (x, y, z, w), like Warp and SciPy; matrices act on column
vectors. Conversions from and to USD's Gf types (scalar-first GfQuat, row-vector GfMatrix)
happen only at the USD edge (usdphys.usd).
"""
from __future__ import annotations

import numpy as np


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (..., 4) xyzw quaternions."""
    ax, ay, az, aw = np.moveaxis(np.asarray(a, float), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def quat_conj(q: np.ndarray) -> np.ndarray:
    q = np.array(q, float)
    q[..., :3] *= -1.0
    return q


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate (..., 3) vectors by (..., 4) xyzw unit quaternions."""
    q = np.asarray(q, float)
    v = np.asarray(v, float)
    u, w = q[..., :3], q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 4) xyzw -> (..., 3, 3) rotation matrices acting on column vectors."""
    eye = np.eye(3)
    cols = [quat_rotate(q, eye[i]) for i in range(3)]
    return np.stack(cols, axis=-1)


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """(3, 3) rotation matrix (column-vector convention) -> xyzw unit quaternion."""
    m = np.asarray(m, float)
    tr = np.trace(m)
    if tr > 0:
        s = np.sqrt(tr + 1.0) * 2
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    q = np.array(q)
    return q / np.linalg.norm(q)


def rigid_frame(matrix) -> np.ndarray:
    """The rigid frame of a USD local-to-world matrix (row-vector convention): same origin,
    rotation rows = X axis normalised, Y axis orthogonalised to it, Z = X x Y. Scale (also
    negative) and shear are dropped. The model's body frame must be this frame."""
    m = np.array(matrix, dtype=np.float64).reshape(4, 4)
    x = m[0, :3]
    y = m[1, :3]
    nx = np.linalg.norm(x)
    if nx == 0.0:
        raise ValueError("degenerate transform (zero scale)")
    x = x / nx
    y = y - np.dot(y, x) * x
    ny = np.linalg.norm(y)
    if ny == 0.0:
        raise ValueError("degenerate transform (zero scale)")
    y = y / ny
    out = np.eye(4)
    out[0, :3] = x
    out[1, :3] = y
    out[2, :3] = np.cross(x, y)
    out[3, :3] = m[3, :3]
    return out


def quat_from_matrix(r: np.ndarray) -> np.ndarray:
    """Quaternion (x, y, z, w) of a proper rotation matrix, w >= 0 (a canonical sign)."""
    q = matrix_to_quat(r)
    return q if q[3] >= 0.0 else -q


def polar_matrix(linear: np.ndarray) -> np.ndarray:
    """Nearest rotation to each (..., 3, 3) linear map, by polar decomposition (SVD): scale
    and shear removed, a reflection folded into the scale, so every result is proper."""
    u, _, vt = np.linalg.svd(np.asarray(linear, float))
    r = u @ vt
    flip = np.linalg.det(r) < 0
    if np.any(flip):
        u[..., -1] = np.where(flip[..., None], -u[..., -1], u[..., -1])
        r = u @ vt
    return r


def polar_rotation(linear: np.ndarray) -> np.ndarray:
    """Rotation part (x, y, z, w) of a 3x3 linear map on column vectors (polar_matrix)."""
    return matrix_to_quat(polar_matrix(linear))


def quat_between(a: np.ndarray, b: np.ndarray, half_turn_axis: np.ndarray) -> np.ndarray:
    """Shortest rotation (x, y, z, w) taking unit vector a onto unit vector b. Opposite
    vectors have no unique one: then half a turn about half_turn_axis (a unit vector
    perpendicular to a, chosen by the caller so its output stays stable)."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    c = float(np.dot(a, b))
    if c < -1.0 + 1e-12:
        h = np.asarray(half_turn_axis, float)
        return np.array([h[0], h[1], h[2], 0.0])
    v = np.cross(a, b)
    q = np.array([v[0], v[1], v[2], 1.0 + c])
    return q / np.linalg.norm(q)


def quat_normalized(q: np.ndarray) -> np.ndarray:
    """(..., 4) xyzw quaternions scaled to unit length; ValueError for a zero or non-finite one."""
    q = np.asarray(q, float)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if not np.all(np.isfinite(n)) or np.any(n == 0.0):
        raise ValueError("zero or non-finite quaternion")
    return q / n


def quat_sign_continuous(q: np.ndarray) -> np.ndarray:
    """(F, 4) xyzw sequence with each quaternion's sign chosen to agree with the one before,
    so interpolating between frames never takes the 360-degree way round."""
    q = np.array(q, float)
    for f in range(1, len(q)):
        if np.dot(q[f], q[f - 1]) < 0:
            q[f] = -q[f]
    return q
