"""Gf values <-> NumPy in the host convention of usdphys.math3d.

USD stores quaternions scalar-first (GfQuat: real, imaginary) and matrices for row vectors
(translation in the last row); the host code uses (x, y, z, w) quaternions and matrices that
act on column vectors. Every reader module converts through here, so the convention flip
happens in one place.
"""
from __future__ import annotations

import numpy as np
from pxr import Gf

IDENTITY_QUAT = (0.0, 0.0, 0.0, 1.0)


def vec3(v) -> np.ndarray:
    """GfVec3f / GfVec3d (or any 3-sequence) -> float64 (3,)."""
    return np.array([v[0], v[1], v[2]], dtype=np.float64)


def quat_xyzw(q) -> np.ndarray:
    """GfQuat (real, imaginary) -> (x, y, z, w), unchanged in length."""
    im = q.GetImaginary()
    return np.array([im[0], im[1], im[2], q.GetReal()], dtype=np.float64)


def unit_quat_xyzw(q) -> np.ndarray:
    """GfQuat -> unit (x, y, z, w); a zero quaternion (unauthored pose) reads as identity."""
    x = quat_xyzw(q)
    n = np.linalg.norm(x)
    return x / n if n > 0 else np.array(IDENTITY_QUAT)


def row_matrix(m) -> np.ndarray:
    """GfMatrix4d -> its 4x4 float64 array as USD stores it (row vectors: p' = p @ M)."""
    return np.array(m, dtype=np.float64)


def linear_and_translation(m) -> tuple[np.ndarray, np.ndarray]:
    """GfMatrix4d -> (3x3 linear part acting on column vectors, translation)."""
    a = row_matrix(m)
    return a[:3, :3].T, a[3, :3].copy()


def matrix_from_gf(m) -> np.ndarray:
    """GfMatrix4d (row-vector convention) -> 4x4 float64 acting on column vectors."""
    return row_matrix(m).T


def matrix_to_gf(m: np.ndarray) -> Gf.Matrix4d:
    """4x4 acting on column vectors -> GfMatrix4d (row-vector convention)."""
    return Gf.Matrix4d(np.asarray(m, float).T.tolist())


def quat_to_gf(q: np.ndarray, cls=Gf.Quatd):
    """(x, y, z, w) -> a Gf quaternion of type cls (Gf.Quatd, Gf.Quatf, ...)."""
    x, y, z, w = (float(v) for v in q)
    return cls(w, x, y, z)


def transform_fault(prim, time=None, ancestors: bool = True) -> str | None:
    """Why a prim's transform is not usable, naming the xformOp, or None.

    Looks at the prim and (ancestors=True) its ancestors, since a world transform is their
    product: the first xformOp holding a NaN or an infinity (a float overflow of a huge
    authored value included). USD itself turns some of these into a finite matrix (an
    infinite quaternion normalises to a made-up rotation), so the ops are read, not the matrix.
    """
    from pxr import Sdf, Usd, UsdGeom

    t = Usd.TimeCode.Default() if time is None else time
    p = prim
    while p and p.GetPath() != Sdf.Path.absoluteRootPath:
        xf = UsdGeom.Xformable(p)
        if xf:
            for op in xf.GetOrderedXformOps():
                value = op.Get(t)
                if value is None:
                    continue
                try:
                    numbers = np.asarray(value, dtype=np.float64)
                except (TypeError, ValueError):
                    numbers = np.array([float(x) for x in str(value).replace("(", " ").replace(")", " ")
                                        .replace(",", " ").split()], dtype=np.float64)
                if not np.all(np.isfinite(numbers)):
                    return f"{p.GetPath()}.{op.GetOpName()} = {value}: expected finite numbers"
        if not ancestors:
            break
        p = p.GetParent()
    return None
