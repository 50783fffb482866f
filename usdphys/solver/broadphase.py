"""Candidate shape pairs, computed once per model (filtering happens here, not per step).

The per-step narrow phase loops over this list only and culls each pair per world with
bounding spheres (`ShapeTable.bound_radius`) before any exact test.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from usdphys.errors import warn
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
