"""In-kernel dense LDL^T factorisation and solve on per-world scratch matrices.

Rows with act != 1 are skipped (inactive or clamped); a pivot that falls below
PIVOT_TOL times its diagonal marks a row linearly dependent on earlier rows (redundant
constraint, e.g. a planar loop closed with 3-D joints): it is dropped (D = 0) and its
multiplier stays unchanged. For a consistent system (constraints that can all hold) that
gives the same motion as the pseudo-inverse.
"""
from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})

# Relative pivot below which a row counts as dependent. Exactly redundant rows give
# pivots ~1e-16 relative (round-off); genuinely independent rows of a well-posed
# mechanism are many orders above 1e-10. See docs/solver.md.
PIVOT_TOL = wp.constant(wp.float64(1.0e-10))
# Relative diagonal regularisation (compliance): keeps nearly dependent rows bounded;
# the Newton iteration on the true residual removes its effect on the converged answer.
REG = wp.constant(wp.float64(1.0e-12))


@wp.func
def ldl_factor(A: wp.array3d(dtype=wp.float64), Lf: wp.array3d(dtype=wp.float64),
               D: wp.array2d(dtype=wp.float64), act: wp.array2d(dtype=wp.int32),
               sdiag: wp.array2d(dtype=wp.float64), w: int, n: int):
    for j in range(n):
        D[w, j] = wp.float64(0.0)
        if act[w, j] != 1:
            continue
        ajj = A[w, j, j] + sdiag[w, j]
        d = ajj * (wp.float64(1.0) + REG)
        for k in range(j):
            if D[w, k] != wp.float64(0.0):
                l = Lf[w, j, k]
                d = d - l * l * D[w, k]
        if ajj <= wp.float64(0.0) or d <= PIVOT_TOL * ajj:
            continue
        D[w, j] = d
        for i in range(j + 1, n):
            if act[w, i] != 1:
                continue
            s = A[w, i, j]
            for k in range(j):
                if D[w, k] != wp.float64(0.0):
                    s = s - Lf[w, i, k] * Lf[w, j, k] * D[w, k]
            Lf[w, i, j] = s / d


@wp.func
def ldl_solve(Lf: wp.array3d(dtype=wp.float64), D: wp.array2d(dtype=wp.float64),
              x: wp.array2d(dtype=wp.float64), w: int, n: int):
    """Solve in place: x <- A^-1 x on the rows kept by ldl_factor (others -> 0)."""
    for i in range(n):
        if D[w, i] == wp.float64(0.0):
            x[w, i] = wp.float64(0.0)
            continue
        s = x[w, i]
        for k in range(i):
            if D[w, k] != wp.float64(0.0):
                s = s - Lf[w, i, k] * x[w, k]
        x[w, i] = s
    for i in range(n):
        if D[w, i] != wp.float64(0.0):
            x[w, i] = x[w, i] / D[w, i]
    for ii in range(n):
        i = n - 1 - ii
        if D[w, i] == wp.float64(0.0):
            continue
        s = x[w, i]
        for k in range(i + 1, n):
            if D[w, k] != wp.float64(0.0):
                s = s - Lf[w, k, i] * x[w, k]
        x[w, i] = s
