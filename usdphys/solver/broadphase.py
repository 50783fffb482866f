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
    excl = {(min(int(a), int(b)), max(int(a), int(b))) for a, b in exclude_body_pairs}
    out = []
    typ = table.type
    body = table.body
    no = table.group_no_collide
    for i in range(n):
        if not table.collision_enabled[i]:
            continue
        for j in range(i + 1, n):
            if not table.collision_enabled[j]:
                continue
            bi, bj = int(body[i]), int(body[j])
            if bi == bj:  # same body, or both static
                continue
            if (min(bi, bj), max(bi, bj)) in excl:
                continue
            if typ[i] == SHAPE_PLANE and typ[j] == SHAPE_PLANE:
                continue
            if (typ[i] == SHAPE_MESH and typ[j] in (SHAPE_PLANE, SHAPE_MESH)) or \
                    (typ[j] == SHAPE_MESH and typ[i] == SHAPE_PLANE):
                warn(f"{table.paths[i]} / {table.paths[j]}: a triangle mesh against a "
                     f"{SHAPE_NAMES[typ[i]] if typ[i] != SHAPE_MESH else SHAPE_NAMES[typ[j]]} is not supported: "
                     "this pair never collides")
                continue
            if (i, j) in table.filtered_pairs:
                continue
            if no is not None and no.size and any(no[g, h] for g in table.groups[i] for h in table.groups[j]):
                continue
            out.append((i, j) if (typ[i], i) <= (typ[j], j) else (j, i))
    out.sort(key=lambda p: (p[0], p[1]))
    return np.array(out, dtype=np.int32).reshape(-1, 2)
