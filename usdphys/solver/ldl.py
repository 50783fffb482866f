"""In-kernel dense LDL^T factorisation and solve on per-world scratch matrices.

Rows with act != 1 are skipped (inactive or clamped); a pivot that falls below a relative
tolerance times its diagonal marks a row linearly dependent on earlier rows (redundant
constraint, e.g. a planar loop closed with 3-D joints): it is dropped (D = 0) and its
multiplier stays unchanged. For a consistent system (constraints that can all hold) that
gives the same motion as the pseudo-inverse.

Which rows are dependent is a property of the constraint directions G alone, so the solver
decides it on a mass-free matrix (RANK_TOL, step.py: factor_rows) and then factorises
A = G M^-1 G^T over the independent rows with only a round-off guard (FACTOR_TOL). Deciding
it on A itself mixes in M^-1: a thin rod (axial inertia 1e-6 of the transverse) spreads A's
diagonal over six orders, and round-off then passes for independence or the other way round.

Envelope (skyline) storage: row i of A is zero left of column first[i] (the first row that
shares a body with it; `row_envelope`), and LDL^T makes no fill-in left of the envelope, so
the loops start there. Entries of Lf outside the envelope are never written (they stay 0);
columns of skipped or dropped rows are written as 0, so the solves need no pivot tests.
The arithmetic is the same as a dense LDL^T with those tests: only exact zeros are skipped.
"""
from __future__ import annotations

import numpy as np
import warp as wp

wp.set_module_options({"enable_backward": False})

# Relative pivot of the mass-free matrix below which a row counts as dependent. Exactly
# redundant rows give pivots ~1e-16 relative (round-off); independent rows of a mechanism
# away from a singular configuration are many orders above. See docs/solver.md.
RANK_TOL = wp.constant(wp.float64(1.0e-9))
# Round-off guard of the second factorisation (independent rows only): pivots of rows that are
# independent in G stay positive whatever the mass ratios; this only catches breakdown.
FACTOR_TOL = wp.constant(wp.float64(1.0e-13))
# Relative diagonal regularisation (compliance): keeps nearly dependent rows bounded;
# the Newton iteration on the true residual removes its effect on the converged answer.
REG = wp.constant(wp.float64(1.0e-12))


def row_envelope(b0, b1, partner=None) -> np.ndarray:
    """first[i] = the smallest j <= i whose row shares a body (index >= 0) with row i. A row
    with a partner (a coupling row, step.py) also touches its partner's bodies."""
    b0 = np.asarray(b0).reshape(-1)
    b1 = np.asarray(b1).reshape(-1)
    first = np.arange(len(b0), dtype=np.int32)
    seen: dict[int, int] = {}  # body -> first row that touches it
    for i in range(len(b0)):
        bodies = [int(b0[i]), int(b1[i])]
        p = -1 if partner is None or len(partner) == 0 else int(partner[i])
        if p >= 0:
            bodies += [int(b0[p]), int(b1[p])]
        for b in bodies:
            if b >= 0:
                first[i] = min(first[i], seen.setdefault(b, i))
    return first


@wp.func
def ldl_factor(A: wp.array3d(dtype=wp.float64), Lf: wp.array3d(dtype=wp.float64),
               D: wp.array2d(dtype=wp.float64), act: wp.array2d(dtype=wp.int32),
               sdiag: wp.array2d(dtype=wp.float64), first: wp.array(dtype=wp.int32), w: int, n: int,
               pivot_tol: wp.float64):
    """LDL^T of A (+ sdiag on the diagonal) over the rows with act == 1; a pivot below
    pivot_tol times its diagonal marks a dependent row (D = 0). A may be Lf itself (in place:
    each entry is read just before its factor entry is written)."""
    for j in range(n):
        D[w, j] = wp.float64(0.0)
        d = wp.float64(0.0)
        keep = int(0)
        fj = first[j]
        if act[w, j] == 1:
            ajj = A[w, j, j] + sdiag[w, j]
            d = ajj * (wp.float64(1.0) + REG)
            for k in range(fj, j):
                l = Lf[w, j, k]
                d = d - l * l * D[w, k]
            if ajj > wp.float64(0.0) and d > pivot_tol * ajj:
                keep = 1
        if keep == 0:  # skipped or dependent: a zero column
            for i in range(j + 1, n):
                if first[i] <= j:
                    Lf[w, i, j] = wp.float64(0.0)
            continue
        D[w, j] = d
        for i in range(j + 1, n):
            fi = first[i]
            if fi > j:
                continue
            if act[w, i] != 1:
                Lf[w, i, j] = wp.float64(0.0)
                continue
            s = A[w, i, j]
            for k in range(wp.max(fi, fj), j):
                s = s - Lf[w, i, k] * Lf[w, j, k] * D[w, k]
            Lf[w, i, j] = s / d


@wp.func
def ldl_solve(Lf: wp.array3d(dtype=wp.float64), D: wp.array2d(dtype=wp.float64),
              first: wp.array(dtype=wp.int32), x: wp.array2d(dtype=wp.float64), w: int, n: int):
    """Solve in place: x <- A^-1 x on the rows kept by ldl_factor (others -> 0)."""
    for i in range(n):
        if D[w, i] == wp.float64(0.0):
            x[w, i] = wp.float64(0.0)
            continue
        s = x[w, i]
        for k in range(first[i], i):
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
            if first[k] <= i:
                s = s - Lf[w, k, i] * x[w, k]
        x[w, i] = s
