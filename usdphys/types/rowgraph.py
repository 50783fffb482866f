"""The sparsity pattern of the constraint-row system and the order it is factorised in.

A = G M^-1 G^T couples two rows only where they share a body, so the LDL^T factor of A is
sparse: its pattern (A's pattern plus the fill the elimination order creates) is computed here
once, on the host, and the solver stores and visits only those entries (usdphys/solver/ldl.py).
For a tree eliminated from the leaves to the root there is no fill beyond A's own pattern, so
storage and work are linear in the number of bodies; a closed loop adds fill only along the
loop.

The order: the rows' own order (the reader's joint order, then the element rows) unless a
minimum-degree order of the joints saves more than a quarter of the factor's entries. Keeping
the authored order where it is good keeps the results bit for bit those of a dense LDL^T over
the rows in that order (and which of two redundant rows is dropped); the minimum-degree order
eliminates joints greedily by how many rows they touch, rows of one body pair kept together,
which for a kinematic tree is leaves first. NumPy and the standard library only: the memory
estimate (usdphys.simulate) sizes a run with it before Warp is started.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

# the minimum-degree order is taken only when it saves more than this share of the factor
REORDER_GAIN = 0.25


@dataclass(frozen=True)
class RowPattern:
    """The factor's pattern over R rows, in elimination positions p = 0 .. R-1.

    perm[p]: the row eliminated at position p; pos[i]: the position of row i. Row-wise (CSR)
    lower triangle with diagonal: position p owns entries lrow[p] .. lrow[p+1]-1, in ascending
    position of their column, the diagonal last; lcol is the column's ROW. diag[i]: row i's
    diagonal entry.
    ldot[e], for an entry e = (p, q) below the diagonal: where the factorisation's sum for it
    starts in row q's entries (the first column that row p can share: at or after row p's
    first column; the terms before it are exact zeros), lstop[e] where it ends (row q's
    diagonal). For assembling A, per entry: the later (li) and earlier (lj) of its two rows in
    the rows' own order, and which of their bodies coincide (lshare, bits: 1 b0 = b0, 2 b0 = b1,
    4 b1 = b0, 8 b1 = b1, of li against lj, world excluded; 0 for a fill entry)."""

    perm: np.ndarray
    pos: np.ndarray
    lrow: np.ndarray
    lcol: np.ndarray
    diag: np.ndarray
    ldot: np.ndarray
    lstop: np.ndarray
    li: np.ndarray
    lj: np.ndarray
    lshare: np.ndarray

    @property
    def count(self) -> int:
        """Stored entries (lower triangle and diagonal) of one factor."""
        return int(self.lrow[-1])


# lshare bit of an entry whose rows include a coupling row (its Jacobian adds its partner's):
# the solver computes such entries in full (step.py: coupled_entry) instead of from the bits
COUPLED = 16


def _bodies(b0: np.ndarray, b1: np.ndarray, partner: np.ndarray | None, i: int) -> set:
    """The bodies row i touches: its own, and its partner row's for a coupling row."""
    out = {int(b0[i]), int(b1[i])}
    if partner is not None and partner[i] >= 0:
        out |= {int(b0[partner[i]]), int(b1[partner[i]])}
    return {b for b in out if b >= 0}


def _groups(b0: np.ndarray, b1: np.ndarray, partner: np.ndarray | None = None):
    """Rows that touch the same bodies (e.g. the rows of one joint) form one group: they share
    every neighbour, so they are ordered together. Returns (group of each row, bodies of each group)."""
    key_to_group: dict[tuple, int] = {}
    group = np.empty(len(b0), dtype=np.int64)
    bodies: list[tuple] = []
    for i in range(len(b0)):
        key = tuple(sorted(_bodies(b0, b1, partner, i)))
        g = key_to_group.get(key)
        if g is None:
            g = key_to_group[key] = len(bodies)
            bodies.append(key)
        group[i] = g
    return group, bodies


def _min_degree(group: np.ndarray, bodies: list[tuple]) -> np.ndarray:
    """Row order from a greedy minimum-degree elimination of the groups (degree: rows of the
    neighbouring groups); ties go to the group that comes first in the rows' order."""
    n_groups = len(bodies)
    weight = np.bincount(group, minlength=n_groups)
    first_row = np.full(n_groups, len(group), dtype=np.int64)
    np.minimum.at(first_row, group, np.arange(len(group)))
    by_body: dict[int, list[int]] = {}
    for g, bs in enumerate(bodies):
        for b in bs:
            by_body.setdefault(b, []).append(g)
    adj = [set() for _ in range(n_groups)]
    for gs in by_body.values():
        for g in gs:
            adj[g].update(gs)
    for g in range(n_groups):
        adj[g].discard(g)

    def degree(g):
        return int(sum(weight[h] for h in adj[g]))

    heap = [(degree(g), int(first_row[g]), g) for g in range(n_groups)]
    heapq.heapify(heap)
    done = np.zeros(n_groups, bool)
    order = []
    while heap:
        d, _, g = heapq.heappop(heap)
        if done[g] or d != degree(g):
            continue
        done[g] = True
        order.append(g)
        nb = adj[g]
        for h in nb:  # eliminating g joins its neighbours into one clique (the fill)
            adj[h].discard(g)
            adj[h].update(x for x in nb if x != h)
        for h in nb:
            heapq.heappush(heap, (degree(h), int(first_row[h]), h))
        adj[g] = set()
    rank = np.empty(n_groups, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(n_groups)
    return np.lexsort((np.arange(len(group)), rank[group])).astype(np.int64)


def _symbolic(b0: np.ndarray, b1: np.ndarray, perm: np.ndarray, partner: np.ndarray | None = None) -> list[list[int]]:
    """Strictly lower pattern of L (positions, ascending) per position, for the order perm:
    A's pattern closed under elimination (row-wise, along the elimination tree)."""
    n = len(perm)
    pos = np.empty(n, dtype=np.int64)
    pos[perm] = np.arange(n)
    by_body: dict[int, list[int]] = {}
    for i in range(n):
        for b in _bodies(b0, b1, partner, i):
            by_body.setdefault(b, []).append(int(pos[i]))
    lower: list[set] = [set() for _ in range(n)]
    for ps in by_body.values():
        for p in ps:
            lower[p].update(q for q in ps if q < p)
    parent = np.full(n, -1, dtype=np.int64)
    mark = np.full(n, -1, dtype=np.int64)
    rows = []
    for p in range(n):
        mark[p] = p
        pattern = []
        for q in lower[p]:
            while mark[q] != p:  # walk up the elimination tree from q towards p
                pattern.append(q)
                mark[q] = p
                if parent[q] < 0:
                    parent[q] = p
                    break
                q = int(parent[q])
        pattern.sort()
        rows.append(pattern)
    return rows


def _pattern(perm: np.ndarray, rows: list[list[int]], b0: np.ndarray, b1: np.ndarray,
             partner: np.ndarray | None = None) -> RowPattern:
    n = len(perm)
    lrow = np.zeros(n + 1, dtype=np.int32)
    lrow[1:] = np.cumsum([len(r) + 1 for r in rows])
    lcol = np.empty(int(lrow[-1]), dtype=np.int32)
    for p, r in enumerate(rows):
        e0 = int(lrow[p])
        lcol[e0:e0 + len(r)] = r
        lcol[e0 + len(r)] = p
    diag = np.empty(n, dtype=np.int32)
    diag[perm] = lrow[1:] - 1
    pos = np.empty(n, dtype=np.int32)
    pos[perm] = np.arange(n)
    nnz = int(lrow[-1])
    ldot = np.zeros(nnz, dtype=np.int32)
    lstop = np.zeros(nnz, dtype=np.int32)
    for p, r in enumerate(rows):
        e0 = int(lrow[p])
        for k, q in enumerate(r):
            # row q's columns are ascending positions: skip those before row p's first column
            ldot[e0 + k] = int(lrow[q]) + int(np.searchsorted(lcol[lrow[q]:lrow[q + 1] - 1], r[0]))
            lstop[e0 + k] = int(lrow[q + 1]) - 1
    row_of = perm[np.repeat(np.arange(n), np.diff(lrow))]
    col_of = perm[lcol]
    li = np.maximum(row_of, col_of)
    lj = np.minimum(row_of, col_of)
    lshare = np.zeros(nnz, dtype=np.int32)
    for bit, (x, y) in zip((1, 2, 4, 8), ((b0, b0), (b0, b1), (b1, b0), (b1, b1))):
        lshare |= np.where((x[li] >= 0) & (x[li] == y[lj]), bit, 0).astype(np.int32)
    if partner is not None:
        lshare |= np.where((partner[li] >= 0) | (partner[lj] >= 0), COUPLED, 0).astype(np.int32)
    return RowPattern(perm=perm.astype(np.int32), pos=pos, lrow=lrow, lcol=col_of.astype(np.int32), diag=diag, ldot=ldot, lstop=lstop, li=li.astype(np.int32),
                      lj=lj.astype(np.int32), lshare=lshare)


def row_pattern(b0, b1, partner=None) -> RowPattern:
    """The elimination order and factor pattern of the rows whose bodies are b0[i], b1[i] (-1: world).
    partner[i] >= 0: row i is a coupling row whose Jacobian adds row partner[i]'s, so it also
    touches that row's bodies."""
    b0 = np.asarray(b0, dtype=np.int64).reshape(-1)
    b1 = np.asarray(b1, dtype=np.int64).reshape(-1)
    if partner is not None:
        partner = np.asarray(partner, dtype=np.int64).reshape(-1)
        if not np.any(partner >= 0):
            partner = None
    n = len(b0)
    natural = np.arange(n, dtype=np.int64)
    rows = _symbolic(b0, b1, natural, partner)
    fill = sum(len(r) for r in rows)
    if n > 2:
        group, bodies = _groups(b0, b1, partner)
        perm = _min_degree(group, bodies)
        if not np.array_equal(perm, natural):
            rows_md = _symbolic(b0, b1, perm, partner)
            if sum(len(r) for r in rows_md) < (1.0 - REORDER_GAIN) * fill:
                return _pattern(perm, rows_md, b0, b1, partner)
    return _pattern(natural, rows, b0, b1, partner)


__all__ = ["COUPLED", "REORDER_GAIN", "RowPattern", "row_pattern"]
