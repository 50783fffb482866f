"""The sparse row-system LDL^T (usdphys/solver/ldl.py on usdphys.types.rowgraph's pattern) gives
the answer of a dense NumPy reference on random trees, loops and redundant rows.

Each example is a random mechanism: bodies hung on a random tree, joints of 1-6 rows per body
pair, extra loop-closing joints, rows listed in a random order (so the minimum-degree order is
taken sometimes), inverse masses spread over six orders (thin rods). Redundant rows are exact
combinations of other rows of the same joint, duplicates of a row, or a whole loop joint repeated.
As in the solver (step.py: factor_rows), the kept rows are decided on the mass-free G G^T with
RANK_TOL, then A = G M^-1 G^T is factorised over them and solved.
"""
from __future__ import annotations

import numpy as np
import pytest
import warp as wp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usdphys.solver.ldl import FACTOR_TOL, RANK_TOL, REG, RowPattern, ldl_factor, ldl_solve, put_pattern
from usdphys.solver.warpinit import init_warp
from usdphys.types.rowgraph import row_pattern


@wp.kernel
def _factor_and_solve(S: wp.array2d(dtype=wp.float64), A: wp.array2d(dtype=wp.float64),
                      Lf: wp.array2d(dtype=wp.float64), D: wp.array2d(dtype=wp.float64),
                      y: wp.array2d(dtype=wp.float64),
                      act: wp.array2d(dtype=wp.int32), keep: wp.array2d(dtype=wp.int32),
                      sdiag: wp.array2d(dtype=wp.float64), pat: RowPattern, x: wp.array2d(dtype=wp.float64), n: int):
    w = wp.tid()
    ldl_factor(S, S, D, y, act, sdiag, pat, w, n, RANK_TOL)  # the rank decision, in place
    for i in range(n):
        k = int(0)
        if D[w, i] != wp.float64(0.0):
            k = 1
        keep[w, i] = k
    ldl_factor(A, Lf, D, y, keep, sdiag, pat, w, n, FACTOR_TOL)
    ldl_solve(Lf, D, pat, x, w, n, wp.float64(1.0))


def _mechanism(data):
    """(b0, b1, G (R, 2, 6), inverse mass per body (B, 6))."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    n_bodies = data.draw(st.integers(1, 14))
    pairs = [(int(rng.integers(-1, k)) if k else -1, k) for k in range(n_bodies)]  # a tree
    for _ in range(data.draw(st.integers(0, 3))):  # loop-closing joints (a pair not yet jointed)
        a, b = sorted(rng.choice(np.arange(-1, n_bodies), 2, replace=False))
        if (int(a), int(b)) not in pairs:
            pairs.append((int(a), int(b)))
    rows = []  # (b0, b1, G)
    for b0, b1 in pairs:
        # a joint's rows are unit directions well apart, like the solver's rows in the mass-free
        # metric (unit axes, rotations weighted by the lever arm): orthonormal on the moving bodies
        dims = 6 if b0 < 0 else 12
        q, _ = np.linalg.qr(rng.normal(size=(dims, dims)))
        joint = []
        for k in range(int(rng.integers(1, 7))):
            g = np.zeros(12)
            g[12 - dims:] = q[:, k]
            joint.append(g.reshape(2, 6))
        kind = data.draw(st.sampled_from(["plain", "combination", "duplicate"]))
        if kind == "combination" and len(joint) >= 2:
            # coefficients of magnitude 0.5 .. 2: a nearly parallel pair would make the independent
            # row's own pivot a round-off question (the method's RANK_TOL, not the storage, decides it)
            c = rng.uniform(0.5, 2.0, 2) * rng.choice([-1.0, 1.0], 2)
            joint.append(c[0] * joint[0] + c[1] * joint[1])
        elif kind == "duplicate":
            joint.append(joint[int(rng.integers(len(joint)))].copy())
        rows += [(b0, b1, g) for g in joint]
    if data.draw(st.booleans()) and len(pairs) > n_bodies:  # a loop joint authored twice
        b0, b1 = pairs[-1]
        rows += [(b0, b1, g.copy()) for (c0, c1, g) in rows if (c0, c1) == (b0, b1)]
    order = rng.permutation(len(rows)) if data.draw(st.booleans()) else np.arange(len(rows))
    rows = [rows[k] for k in order]
    b0 = np.array([r[0] for r in rows])
    b1 = np.array([r[1] for r in rows])
    G = np.array([r[2] for r in rows])
    inv_mass = 10.0 ** rng.uniform(-3, 3, size=(n_bodies, 6))  # spread over six orders
    return b0, b1, G, inv_mass


def _dense(b0, b1, G, weight, n_bodies):
    """Dense G diag(weight) G^T; G[:, 0] acts on b0, G[:, 1] on b1, the world (-1) takes nothing."""
    R = len(b0)
    J = np.zeros((R, 6 * n_bodies))
    for i in range(R):
        for side, b in ((0, b0[i]), (1, b1[i])):
            if b >= 0:
                J[i, 6 * b:6 * b + 6] += G[i, side]
    return J @ (weight.reshape(-1)[:, None] * J.T), J


def _reference_ldl(A, perm, act, tol, reg):
    """Dense LDL^T in the order perm, with the solver's drop rule; returns D by row."""
    P = A[np.ix_(perm, perm)]
    n = len(perm)
    L = np.zeros((n, n))
    D = np.zeros(n)
    for j in range(n):  # sums in ascending order, term by term, as the kernel and the dense method
        if not act[perm[j]]:
            continue
        ajj = P[j, j]
        d = ajj * (1 + reg)
        for k in range(j):
            d = d - L[j, k] * L[j, k] * D[k]
        if ajj > 0 and d > tol * ajj:
            D[j] = d
            for i in range(j + 1, n):
                if act[perm[i]]:
                    s = P[i, j]
                    for k in range(j):
                        s = s - L[i, k] * L[j, k] * D[k]
                    L[i, j] = s / d
    out = np.zeros(n)
    out[perm] = D
    return out


@pytest.fixture(scope="module", autouse=True)
def _warp():
    init_warp()


@settings(max_examples=40, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_sparse_ldl_matches_a_dense_reference(data):
    b0, b1, G, inv_mass = _mechanism(data)
    R, B = len(b0), inv_mass.shape[0]
    pattern = row_pattern(b0, b1)
    S, J = _dense(b0, b1, G, np.ones((B, 6)), B)
    A, _ = _dense(b0, b1, G, inv_mass, B)
    # the pattern holds every entry of A (rows that share a body) and nothing above the diagonal
    stored = np.zeros((R, R), bool)
    for p in range(R):
        for e in range(pattern.lrow[p], pattern.lrow[p + 1]):
            stored[p, pattern.pos[pattern.lcol[e]]] = True
    Pa = A[np.ix_(pattern.perm, pattern.perm)]
    assert not np.any((Pa != 0) & ~(stored | stored.T))
    assert not np.any(np.triu(stored, 1))

    def values(M):
        P = M[np.ix_(pattern.perm, pattern.perm)]
        v = np.zeros(pattern.count)
        for p in range(R):
            for e in range(pattern.lrow[p], pattern.lrow[p + 1]):
                v[e] = P[p, pattern.pos[pattern.lcol[e]]]
        return v

    rhs = np.random.default_rng(R).normal(size=R)
    dev = "cpu"
    arr = lambda a, t=wp.float64: wp.array(np.asarray(a).reshape(1, -1), dtype=t, device=dev)  # noqa: E731
    Sw, Aw, Lw = arr(values(S)), arr(values(A)), arr(np.zeros(pattern.count))
    Dw, xw = arr(np.zeros(R)), arr(rhs)
    act = arr(np.ones(R, np.int32), wp.int32)
    keep = arr(np.zeros(R, np.int32), wp.int32)
    yw = arr(np.zeros(R))
    wp.launch(_factor_and_solve, dim=1, inputs=[Sw, Aw, Lw, Dw, yw, act, keep, arr(np.zeros(R)), put_pattern(pattern, dev),
                                                 xw, R], device=dev)
    kept = keep.numpy()[0].astype(bool)
    # the rank decision: the rows the dense reference keeps in the same order, and every exact
    # copy of a kept row (duplicates, a loop joint authored twice) is dropped
    ref_keep = _reference_ldl(S, pattern.perm, np.ones(R, bool), float(RANK_TOL), float(REG)) != 0
    np.testing.assert_array_equal(kept, ref_keep)
    seen = set()
    for i in pattern.perm:
        key = J[i].tobytes()
        if key in seen:
            assert not kept[i]
        elif kept[i]:
            seen.add(key)
    # the factor of A over the kept rows: pivots as the dense reference's, which sums in the same
    # order (only exact zero terms are skipped by the sparse one), so they differ at most by the
    # compiler's fused multiply-adds and the sparse one's products with reciprocal pivots (an ulp
    # an entry): 1e-10 of the row's diagonal leaves room for their amplification in nearly
    # dependent rows. The factor stores reciprocal pivots, 0 for a dropped row.
    Dinv = Dw.numpy()[0]
    D = np.divide(1.0, Dinv, out=np.zeros_like(Dinv), where=Dinv != 0)
    ref_D = _reference_ldl(A, pattern.perm, kept, float(FACTOR_TOL), float(REG))
    np.testing.assert_array_equal(D != 0, kept)
    assert np.all(np.abs(D - ref_D) <= 1e-10 * np.diag(A))
    # the solve: 0 on the dropped rows; on the kept ones A_KK x = b_K (with the solver's 1e-12
    # relative regularisation) to a backward error of 1e-12 of |A_KK| |x| + |b| (a stable LDL^T
    # of an SPD matrix: a few ulps times the row count)
    x = xw.numpy()[0]
    assert not np.any(x[~kept])
    K = np.flatnonzero(kept)
    AK = A[np.ix_(K, K)] + np.diag(np.diag(A)[K] * float(REG))
    res = AK @ x[K] - rhs[K]
    assert np.linalg.norm(res) <= 1e-12 * (np.linalg.norm(AK, 2) * np.linalg.norm(x[K]) + np.linalg.norm(rhs[K])) * R


def test_a_chain_needs_no_fill_and_a_tree_in_bad_order_is_reordered():
    # a chain of 100 joints, 5 rows each, joint k between bodies k-1 and k: A's own pattern
    n, rows = 100, 5
    b0 = np.repeat(np.arange(-1, n - 1), rows)
    b1 = np.repeat(np.arange(n), rows)
    pat = row_pattern(b0, b1)
    np.testing.assert_array_equal(pat.perm, np.arange(n * rows))  # the authored order is kept
    within, between = rows * (rows + 1) // 2, rows * rows
    assert pat.count == n * within + (n - 1) * between
    # a star of 30 chains of 10 joints, each chain listed root first: the authored order
    # fills the hub's clique into every chain; the minimum-degree order has no fill at all
    b0, b1, body = [], [], 0
    for _ in range(30):
        prev = 0 if body else -1
        for _ in range(10):
            body += 1
            b0 += [prev] * 2
            b1 += [body] * 2
            prev = body
    b0, b1 = np.array(b0), np.array(b1)
    pat = row_pattern(b0, b1)
    assert not np.array_equal(pat.perm, np.arange(len(b0)))
    shared = sum(1 for i in range(len(b0)) for j in range(i + 1)
                 if {b0[i], b1[i]} & {b0[j], b1[j]} - {-1})
    assert pat.count == shared  # no entry beyond A's own pattern
