"""Which shape pairs a step tests: the candidate pairs, computed once per model (filtering
happens here, not per step), and the per-step sweep that finds the candidates in reach.

The contact pass (contact.contact_collide) culls candidate pairs per world with bounding
spheres (`ShapeTable.bound_radius`, narrowphase.pair_in_reach) before any exact test, either
looping over all of them or over those the sweep lists (docs/contact.md, section 2).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import warp as wp

from usdphys.errors import warn
from usdphys.solver.narrowphase import ShapeData, pair_in_reach
from usdphys.types.shapes import SHAPE_MESH, SHAPE_NAMES, SHAPE_PLANE, ShapeTable


def candidate_pairs(
    table: ShapeTable,
    exclude_body_pairs: Iterable[tuple[int, int]] = (),
) -> np.ndarray:
    """(P, 2) int32 array of shape index pairs (a, b) that may collide, with
    type[a] <= type[b] (ties: a < b), sorted; the narrow phase relies on that order.

    A pair is dropped when: either shape has physics:collisionEnabled = false; both shapes
    belong to the same body (or both to the world); the unordered body pair is in
    `exclude_body_pairs` (bodies joined by a joint whose physics:collisionEnabled is false:
    the caller decides); a collision group of one filters a group of the other; the pair
    is in `table.filtered_pairs`; both are planes.
    """
    n = len(table)
    typ = np.asarray(table.type, int)
    body = np.asarray(table.body, int)
    enabled = np.asarray(table.collision_enabled, bool)
    plane, mesh = typ == int(SHAPE_PLANE), typ == int(SHAPE_MESH)
    partners: dict[int, set[int]] = {}  # body -> bodies it must not collide with (joints)
    for a, b in exclude_body_pairs:
        partners.setdefault(int(a), set()).add(int(b))
        partners.setdefault(int(b), set()).add(int(a))
    filtered: dict[int, list[int]] = {}
    for a, b in table.filtered_pairs:
        filtered.setdefault(min(a, b), []).append(max(a, b))
    no = table.group_no_collide
    member = None  # (shape, group) membership, for the group filter
    if no is not None and no.size:
        member = np.zeros((n, no.shape[0]), bool)
        for k, gs in enumerate(table.groups):
            member[k, list(gs)] = True
    out_i, out_j = [], []
    # one NumPy pass per shape over the later shapes: O(n^2) work, but no Python loop per pair
    for i in range(n):
        if not enabled[i]:
            continue
        j = np.arange(i + 1, n)
        keep = enabled[j] & (body[j] != body[i])  # same body, or both static
        if partners.get(int(body[i])):
            keep &= ~np.isin(body[j], list(partners[int(body[i])]))
        keep &= ~(plane[i] & plane[j])
        unsupported = keep & ((mesh[i] & (plane[j] | mesh[j])) | (plane[i] & mesh[j]))
        for k in j[unsupported]:
            warn(f"{table.paths[i]} / {table.paths[k]}: a triangle mesh against a "
                 f"{SHAPE_NAMES[typ[i]] if typ[i] != SHAPE_MESH else SHAPE_NAMES[typ[k]]} is not supported: "
                 "this pair never collides")
        keep &= ~unsupported
        if i in filtered:
            keep &= ~np.isin(j, filtered[i])
        if member is not None and member[i].any():
            blocked = no[member[i]].any(axis=0)  # groups that one of i's groups does not collide with
            if blocked.any():
                keep &= ~member[j][:, blocked].any(axis=1)
        j = j[keep]
        first = (typ[i] < typ[j]) | ((typ[i] == typ[j]) & (i < j))  # type[a] <= type[b], ties a < b
        out_i.append(np.where(first, i, j))
        out_j.append(np.where(first, j, i))
    if not out_i:
        return np.zeros((0, 2), np.int32)
    a, b = np.concatenate(out_i), np.concatenate(out_j)
    order = np.lexsort((b, a))
    return np.stack([a[order], b[order]], axis=1).astype(np.int32).reshape(-1, 2)


# ------------------------------------------------------------------------ the per-step sweep
# Testing every candidate pair costs O(shapes^2) a step once a stage holds many robots (Newton's
# ant_multi: 577 shapes, 166,000 pairs, 77 % of the step). The sweep sorts the shapes' bounding
# intervals along one axis (insertion sort from the last step's order: nearly sorted, so about
# linear), walks the overlaps, and looks each overlapping shape pair up among the candidates.
# It hands the contact pass the same pairs the full loop would test (those pair_in_reach
# accepts), in the same ascending order, so contacts are identical bit for bit either way.
f64 = wp.float64

# "auto" sweeps once the candidate pairs outnumber this many per shape (a handful of bodies on a
# floor tests every pair: a few pairs per shape, cheaper than sorting)
SWEEP_PAIRS_PER_SHAPE = 8
# pairs in reach a world may list per shape (+ NEAR_EXTRA); beyond, that step tests every pair
NEAR_PER_SHAPE = 8
NEAR_EXTRA = 64
BROADPHASE_MODES = ("auto", "sweep", "all")


@wp.struct
class PairIndex:
    """Shared by all worlds: the candidate pairs seen from each shape, for the sweep."""

    sweep: int  # 1: find the pairs in reach by the sweep; 0: test every candidate pair
    start: wp.array(dtype=wp.int32)  # [S + 1]: shape s's partners are partner[start[s]:start[s + 1]]
    partner: wp.array(dtype=wp.int32)  # partner shapes, ascending for each shape
    pair: wp.array(dtype=wp.int32)  # the candidate pair index of (s, partner)
    bounded: wp.array(dtype=wp.int32)  # shapes of finite extent that are in some pair
    n_bounded: int
    unbounded: wp.array(dtype=wp.int32)  # planes that are in some pair
    n_unbounded: int
    near_cap: int  # columns of SweepState.near


@wp.struct
class SweepState:
    """Per world: the sweep's order (kept between steps) and this step's pairs in reach."""

    ready: wp.array(dtype=wp.int32)  # [W] 1: order holds a permutation of the bounded shapes
    axis: wp.array(dtype=wp.int32)  # [W] the axis swept along (0, 1, 2)
    order: wp.array2d(dtype=wp.int32)  # [W, n_bounded] positions into PairIndex.bounded, by key
    key: wp.array2d(dtype=wp.float64)  # [W, n_bounded] lower end of each bounded shape's interval
    near: wp.array2d(dtype=wp.int32)  # [W, near_cap] pair indices in reach, ascending
    full: wp.array(dtype=wp.int32)  # [W] steps whose pairs in reach overflowed near: every pair tested


def pair_index(pairs: np.ndarray, bound: np.ndarray, shape_count: int, mode: str, device) -> PairIndex:
    """The PairIndex of candidate pairs (P, 2) over shape_count shapes; bound: the shapes'
    bounding radii (< 0 or inf: a plane). mode: "auto", "sweep" or "all" (ContactOptions.broadphase)."""
    if mode not in BROADPHASE_MODES:
        raise ValueError(f"broadphase: expected one of {', '.join(BROADPHASE_MODES)}, got {mode!r}")
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    S, P = max(int(shape_count), 1), len(pairs)
    s = np.concatenate([pairs[:, 0], pairs[:, 1]])
    t = np.concatenate([pairs[:, 1], pairs[:, 0]])
    p = np.concatenate([np.arange(P), np.arange(P)])
    order = np.lexsort((t, s))
    start = np.zeros(S + 1, np.int64)
    np.add.at(start, s + 1, 1)
    used = np.zeros(S, bool)
    used[s] = True
    finite = np.isfinite(bound) & (np.asarray(bound, float) >= 0)
    bounded = np.flatnonzero(used & finite[:S])
    unbounded = np.flatnonzero(used & ~finite[:S])
    ix = PairIndex()
    ix.sweep = int(P > 0 and (mode == "sweep" or (mode == "auto" and P > SWEEP_PAIRS_PER_SHAPE * S)))

    def iarr(a):
        a = np.asarray(a, np.int32)
        return wp.array(a if a.size else np.zeros(1, np.int32), dtype=wp.int32, device=device)

    ix.start = iarr(np.cumsum(start))
    ix.partner = iarr(t[order])
    ix.pair = iarr(p[order])
    ix.bounded, ix.n_bounded = iarr(bounded), int(len(bounded))
    ix.unbounded, ix.n_unbounded = iarr(unbounded), int(len(unbounded))
    ix.near_cap = int(min(P, NEAR_PER_SHAPE * S + NEAR_EXTRA)) if ix.sweep else 1
    return ix


def sweep_state(worlds: int, ix: PairIndex, device, zeros) -> SweepState:
    """Zeroed per-world sweep buffers (zeros(shape, dtype): the [world, ...] layout); where the
    sweep is off, one placeholder entry each (no memory per world)."""
    ss = SweepState()
    if not ix.sweep:
        ss.ready = ss.axis = ss.full = wp.zeros(1, dtype=wp.int32, device=device)
        ss.order = ss.near = wp.zeros((1, 1), dtype=wp.int32, device=device)
        ss.key = wp.zeros((1, 1), dtype=wp.float64, device=device)
        return ss
    W = int(worlds)
    ss.ready = wp.zeros(W, dtype=wp.int32, device=device)
    ss.axis = wp.zeros(W, dtype=wp.int32, device=device)
    ss.order = zeros((W, max(ix.n_bounded, 1)), wp.int32)
    ss.key = zeros((W, max(ix.n_bounded, 1)), wp.float64)
    ss.near = zeros((W, max(ix.near_cap, 1)), wp.int32)
    ss.full = wp.zeros(W, dtype=wp.int32, device=device)
    return ss


@wp.func
def find_pair(ix: PairIndex, s: int, t: int) -> int:
    """The candidate pair index of shapes s and t, or -1 (binary search in s's partners)."""
    lo = ix.start[s]
    hi = ix.start[s + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        u = ix.partner[mid]
        if u == t:
            return ix.pair[mid]
        if u < t:
            lo = mid + 1
        else:
            hi = mid
    return -1


@wp.func
def sift_down(a: wp.array2d(dtype=wp.int32), w: int, root: int, end: int):
    r = root
    while 2 * r + 1 < end:
        c = 2 * r + 1
        if c + 1 < end:  # (Warp evaluates both sides of an `and`: no read past end)
            if a[w, c + 1] > a[w, c]:
                c = c + 1
        if a[w, r] >= a[w, c]:
            return
        tmp = a[w, r]
        a[w, r] = a[w, c]
        a[w, c] = tmp
        r = c


@wp.func
def heap_sort(a: wp.array2d(dtype=wp.int32), w: int, n: int):
    """a[w, 0:n] ascending, in place (no recursion, O(n log n))."""
    i = n // 2
    while i > 0:
        i = i - 1
        sift_down(a, w, i, n)
    e = n
    while e > 1:
        e = e - 1
        tmp = a[w, 0]
        a[w, 0] = a[w, e]
        a[w, e] = tmp
        sift_down(a, w, 0, e)


@wp.func
def half_width(shapes: ShapeData, s: int, margin: wp.float64) -> wp.float64:
    """Half the extent of shape s's interval: its bound and the whole margin, a little grown,
    so that intervals apart imply pair_in_reach false in floating point too."""
    return shapes.bound[s] * f64(1.000000001) + margin + f64(1.0e-12)


@wp.func
def pairs_in_reach(ix: PairIndex, ss: SweepState, shapes: ShapeData, pairs: wp.array(dtype=wp.vec2i),
                   sx: wp.array2d(dtype=wp.transformd), w: int, margin: wp.float64) -> int:
    """The candidate pairs of world w that pair_in_reach accepts at the shape poses sx, into
    ss.near[w, 0:k] ascending; returns k, or -1 when they do not fit (then test every pair)."""
    n = ix.n_bounded
    if ss.ready[w] == 0:
        for i in range(n):
            ss.order[w, i] = i
        ss.ready[w] = 1
    # the axis along which the centres spread most; kept unless another spreads twice as far
    # (an axis that flips every step would re-sort every step)
    mean = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    for i in range(n):
        mean = mean + wp.transform_get_translation(sx[w, ix.bounded[i]])
    if n > 0:
        mean = mean / f64(n)
    var = wp.vec3d(f64(0.0), f64(0.0), f64(0.0))
    for i in range(n):
        d = wp.transform_get_translation(sx[w, ix.bounded[i]]) - mean
        var = var + wp.cw_mul(d, d)
    a = ss.axis[w]
    best = a
    for k in range(3):
        if var[k] > f64(2.0) * var[best]:
            best = k
    ss.axis[w] = best
    for i in range(n):
        s = ix.bounded[i]
        ss.key[w, i] = wp.transform_get_translation(sx[w, s])[best] - half_width(shapes, s, margin)
    # insertion sort of the last order by this step's keys
    for i in range(1, n):
        v = ss.order[w, i]
        kv = ss.key[w, v]
        j = i - 1
        while j >= 0:
            if ss.key[w, ss.order[w, j]] <= kv:
                break
            ss.order[w, j + 1] = ss.order[w, j]
            j = j - 1
        ss.order[w, j + 1] = v
    count = int(0)
    cap = ix.near_cap
    for i in range(n):
        s = ix.bounded[ss.order[w, i]]
        cs = wp.transform_get_translation(sx[w, s])
        hi = cs[best] + half_width(shapes, s, margin)
        j = i + 1
        while j < n:
            u = ss.order[w, j]
            if ss.key[w, u] > hi:
                break
            j = j + 1
            t = ix.bounded[u]
            # pair_in_reach's test of two bounded shapes, first (it is symmetric in s and t, bit
            # for bit): most intervals that overlap along one axis are far apart in space
            if wp.length(wp.transform_get_translation(sx[w, t]) - cs) > shapes.bound[s] + shapes.bound[t] + margin:
                continue
            p = find_pair(ix, s, t)
            if p < 0:
                continue
            if count >= cap:
                return -1
            ss.near[w, count] = p
            count = count + 1
    for i in range(ix.n_unbounded):
        s = ix.unbounded[i]
        for e in range(ix.start[s], ix.start[s + 1]):  # (two planes are never a candidate pair)
            p = ix.pair[e]
            sa = pairs[p][0]
            sb = pairs[p][1]
            if pair_in_reach(shapes, sa, sb, sx[w, sa], sx[w, sb], margin):
                if count >= cap:
                    return -1
                ss.near[w, count] = p
                count = count + 1
    heap_sort(ss.near, w, count)
    return count
