"""In-kernel sparse LDL^T factorisation and solve of the constraint-row system, per world.

Rows with act != 1 are skipped (inactive or clamped); a pivot that falls below a relative
tolerance times its diagonal marks a row linearly dependent on earlier rows (redundant
constraint, e.g. a planar loop closed with 3-D joints): it is dropped (its reciprocal pivot
stored as 0) and its multiplier stays unchanged. For a consistent system (constraints that can all hold) that
gives the same motion as the pseudo-inverse.

Which rows are dependent is a property of the constraint directions G alone, so the solver
decides it on a mass-free matrix (RANK_TOL, step.py: factor_rows) and then factorises
A = G M^-1 G^T over the independent rows with only a round-off guard (FACTOR_TOL). Deciding
it on A itself mixes in M^-1: a thin rod (axial inertia 1e-6 of the transverse) spreads A's
diagonal over six orders, and round-off then passes for independence or the other way round.

Sparse storage (usdphys.types.rowgraph, computed once on the host): rows are eliminated in
the order perm, and each world stores only the entries of the factor's pattern (A's pattern
plus fill), row-wise with the diagonal last: [world, entry] arrays, linear in the number of
bodies for trees. The factorisation is up-looking (row by row; L[i,j] from the scattered row i
against row j's entries); the forward substitution sums along each row, the back substitution
scatters each finished unknown along its row to the earlier rows (no column index, no long
chain of dependent sums). Entries of skipped or dropped rows' columns are written as 0, so the
solves need no pivot tests. The factorisation's sums are those of a dense LDL^T in the order
perm with only exact zeros skipped, in the same order of summation; entries and solves
multiply by reciprocal pivots instead of dividing (a division's latency sat on the chain of
dependent entries: the factorisation of a 100-rod chain took 58 us, 47 us this way), and the
back substitution sums in another order than a dense one (round-off only).
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


@wp.struct
class RowPattern:
    """The factor's pattern (usdphys.types.rowgraph.RowPattern) on the device: perm / pos
    (position <-> row), lrow / lcol (row-wise entries, diagonal last; lcol holds rows), diag (row -> its
    diagonal entry), ldot / lstop (the range of each entry's sum in its column's row), li / lj /
    lshare (each entry's two rows and the bodies they share, for assembling A)."""
    perm: wp.array(dtype=wp.int32)
    pos: wp.array(dtype=wp.int32)
    lrow: wp.array(dtype=wp.int32)
    lcol: wp.array(dtype=wp.int32)
    diag: wp.array(dtype=wp.int32)
    ldot: wp.array(dtype=wp.int32)
    lstop: wp.array(dtype=wp.int32)
    li: wp.array(dtype=wp.int32)
    lj: wp.array(dtype=wp.int32)
    lshare: wp.array(dtype=wp.int32)


def put_pattern(pattern, device) -> RowPattern:
    """Upload a usdphys.types.rowgraph.RowPattern (empty index arrays get one dummy entry)."""
    p = RowPattern()
    for name in ("perm", "pos", "lrow", "lcol", "diag", "ldot", "lstop", "li", "lj",
                 "lshare"):
        a = np.asarray(getattr(pattern, name), dtype=np.int32)
        if a.size == 0:
            a = np.zeros(1, dtype=np.int32)
        setattr(p, name, wp.array(a, dtype=wp.int32, device=device))
    return p


@wp.func
def ldl_factor(A: wp.array2d(dtype=wp.float64), Lf: wp.array2d(dtype=wp.float64),
               Dinv: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64),
               act: wp.array2d(dtype=wp.int32), sdiag: wp.array2d(dtype=wp.float64), pat: RowPattern,
               w: int, n: int, pivot_tol: wp.float64):
    """LDL^T of A (+ sdiag on the diagonal) over the rows with act == 1; a pivot below
    pivot_tol times its diagonal marks a dependent row. Dinv holds the reciprocal pivots 1 / D,
    by row, 0 for a skipped or dependent row (the solves multiply instead of divide). A and Lf
    hold the pattern's entries; A may be Lf itself (in place: each entry is read just before its
    factor entry is written; the diagonal entries are only read). y: a work row (by row), all
    zero on entry and on return: the row being factorised, scattered, so that each entry's sum
    runs over the other row's entries without searching. y holds L[i,k] D[k] (the entry's sum
    before its division), so a term of a later sum is one product and the pivot's sum
    sum_k L[i,k]^2 D[k] is sum_k L[i,k] y[k]."""
    p = int(-1)  # loops count up from -1 and indices are tested >= 0: see ldl_solve
    while p < n - 1:
        p += 1
        i = pat.perm[p]
        e0 = pat.lrow[p]
        ed = pat.lrow[p + 1] - 1  # the diagonal
        if i < 0 or e0 < 0:  # never
            continue
        Dinv[w, i] = wp.float64(0.0)
        if act[w, i] != 1:  # skipped: a zero row
            e = e0
            while e < ed:
                Lf[w, e] = wp.float64(0.0)
                e += 1
            continue
        ld = wp.float64(0.0)  # sum_k L[i,k]^2 D[k]
        e = e0
        while e < ed:
            j = pat.lcol[e]
            if j >= 0:
                rj = Dinv[w, j]
                l = wp.float64(0.0)  # column of a skipped or dependent row: 0
                s = wp.float64(0.0)
                if rj != wp.float64(0.0):
                    s = A[w, e]
                    # L[i,k] D[k] (in y, 0 where row i has no entry) against row j's entries, k
                    # ascending, from the first column row i can share (ldot)
                    f = pat.ldot[e]
                    stop = pat.lstop[e]
                    if f >= 0:
                        while f < stop:
                            k = pat.lcol[f]
                            if k >= 0:
                                s = s - y[w, k] * Lf[w, f]
                            f += 1
                    l = s * rj
                    ld = ld + l * s
                Lf[w, e] = l
                y[w, j] = s
            e += 1
        ajj = A[w, ed] + sdiag[w, i]
        d = ajj * (wp.float64(1.0) + REG) - ld
        e = e0
        while e < ed:
            j = pat.lcol[e]
            if j >= 0:
                y[w, j] = wp.float64(0.0)
            e += 1
        if ajj > wp.float64(0.0) and d > pivot_tol * ajj:
            Dinv[w, i] = wp.float64(1.0) / d


@wp.func
def ldl_solve(Lf: wp.array2d(dtype=wp.float64), Dinv: wp.array2d(dtype=wp.float64), pat: RowPattern,
              x: wp.array2d(dtype=wp.float64), w: int, n: int, scale: wp.float64):
    """Solve in place: x <- A^-1 (scale x) on the rows kept by ldl_factor (others -> 0); x by
    row. The forward substitution reads each right-hand side times scale (a Newton update's
    -1 / h), so the update needs no pass of its own over the rows.
    The loops over entries are while loops: Warp's range() carries its step's sign into the loop
    test, and on the CPU the solve of a 100-rod chain's pattern took 31 us that way against 22.
    The tests that an index read from the pattern, or a loop's first one, is >= 0 never fail: they
    tell the C++ compiler so, and it drops the wrap of negative indices (Python's a[-1]) that Warp
    puts in every array access, a few integer operations each; loops over rows count up from -1
    for the same reason (step.py's docstring). A 100-rod chain's pattern: the solve 16.8 -> 9.1
    us, the factorisation 47 -> 22 us."""
    e = int(0)
    p = int(-1)
    while p < n - 1:
        p += 1
        i = pat.perm[p]
        stop = pat.lrow[p + 1] - 1  # the diagonal: the row's entries are e .. stop - 1
        if i >= 0 and e >= 0:
            if Dinv[w, i] == wp.float64(0.0):
                x[w, i] = wp.float64(0.0)
            else:
                s = x[w, i] * scale
                while e < stop:
                    k = pat.lcol[e]
                    if k >= 0:
                        s = s - Lf[w, e] * x[w, k]
                    e += 1
                x[w, i] = s
        e = stop + 1
    i = int(-1)
    while i < n - 1:
        i += 1
        x[w, i] = x[w, i] * Dinv[w, i]
    # L^T x = y, rows last to first: once x_i is final, its row's entries L[i, j] pass x_i on to
    # the earlier rows j (row-wise storage, no column index, and no single chain of sums)
    p = n - 1
    while p >= 0:
        i = pat.perm[p]
        xi = wp.float64(0.0)
        if i >= 0:
            xi = x[w, i]
        if xi != wp.float64(0.0):  # 0 also for skipped / dropped rows
            e = pat.lrow[p]
            stop = pat.lrow[p + 1] - 1
            if e >= 0:
                while e < stop:
                    j = pat.lcol[e]
                    if j >= 0:
                        x[w, j] = x[w, j] - Lf[w, e] * xi
                    e += 1
        p -= 1
