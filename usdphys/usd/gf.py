"""Gf <-> NumPy at the USD edge: the host code's one convention is usdphys.math3d's.

Gf quaternions are scalar-first (w, x, y, z) and GfMatrix4d acts on row vectors; NumPy
values are (x, y, z, w) quaternions and matrices acting on column vectors.
"""
from __future__ import annotations

import numpy as np
from pxr import Gf


def matrix_from_gf(m) -> np.ndarray:
    """Gf.Matrix4d (row-vector convention) -> 4x4 float64 acting on column vectors."""
    return np.array(m, dtype=float).T


def matrix_to_gf(m: np.ndarray) -> Gf.Matrix4d:
    """4x4 acting on column vectors -> Gf.Matrix4d (row-vector convention)."""
    return Gf.Matrix4d(np.asarray(m, float).T.tolist())


def quat_from_gf(q) -> np.ndarray:
    """Gf.Quat[dfh] -> (x, y, z, w) float64."""
    x, y, z = q.GetImaginary()
    return np.array([x, y, z, q.GetReal()], dtype=float)


def quat_to_gf(q: np.ndarray, cls=Gf.Quatd):
    """(x, y, z, w) -> a Gf quaternion of type cls (Gf.Quatd, Gf.Quatf, ...)."""
    x, y, z, w = (float(v) for v in q)
    return cls(w, x, y, z)
