"""Per-world row value columns without building the row table of every world.

io.per_world_rows builds a world's rows exactly as for a single-world model (Model.constraint_rows,
forces.build_element_rows): about 3 ms for a four-bar, 190 ms for a chain of 300 links. One build
per distinct world would make 4096 worlds that each set their own limits or damping minutes of
host work. But the rows' structure (which limit, drive, spring, armature or friction rows exist)
depends on the row parameters only through their classes (class_keys: whether a limit is
infinite, a gain or friction zero, and for a distance joint whether its minimum reaches its
maximum). Within one class each value is copied unchanged into fixed cells of the value columns
(a limit into its row's `value` and `lo` / `hi`, a drive target into its drive row's `value`, a
damping into its row's `damping`), and every other cell is the same in all worlds.

A Template records that for one class: the columns of one world built in full, and the cells
each parameter entry fills. The cells are found by building two probe worlds in which every
finite value is moved within its class by a factor (at zero, an offset) of its own, and the
template is trusted only when each cell that changed holds exactly one entry's value in all
three builds. The other worlds of the class are then filled from it with numpy. A class whose
probe finds a cell that is not a plain copy (none does today) is built world by world.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from usdphys.errors import UsdphysError, quiet
from usdphys.types.model import swing_sides
from usdphys.types.params import PARAMETERS, parameter, parameter_view, world_model

_DISTANCE = ("joint.min_distance", "joint.max_distance")
DISTANCE_ORDER = "distance order"  # class_keys' entry for min >= max of each distance joint


@dataclass(frozen=True)
class Template:
    """The value columns of one class of worlds: `columns` those of the world built in full
    ((R,) each), `cells` per parameter {column: (rows, entries)}: the cell (column, rows[k])
    holds the parameter's flat entry entries[k]."""

    columns: dict
    cells: dict


@dataclass
class Classes:
    """Which class each world of a build was in (names: the parameters varied, keys: their
    class_keys, group: each world's index into templates, templates: per group its Template,
    or None where its worlds were built one by one)."""

    names: tuple
    keys: dict
    group: np.ndarray
    templates: list


def class_keys(model, names) -> dict[str, np.ndarray]:
    """Per parameter in `names`, (W, n) int8: the class of each entry in each world, as far as
    the rows' structure can depend on it. The only conditions on these values in
    Model.constraint_rows and forces.build_element_rows: a limit or distance bound is finite
    (accepts 'bound': +-1 for +-inf, else 0), a gain, armature, damping or friction is positive
    ('positive' / 'nonnegative': 1 above 0, 2 for inf), a distance joint's minimum reaches
    its maximum (DISTANCE_ORDER), and for a cone ('angle', per joint) which semi-angle is 0
    and whether both reach 180 deg (model.cone_rows), and which is the smaller (not the rows,
    but which entry the swing row's value copies); a target, rest length or spring constant
    ('finite') has no class."""
    W = model.world_count
    out = {}
    for name in names:
        v = parameter_view(model, name).reshape(W, -1)  # NaN: a distance bound of a joint that has none
        accepts = PARAMETERS[name].accepts
        if accepts == "bound":
            out[name] = (v == np.inf).view(np.int8) - (v == -np.inf).view(np.int8)
        elif accepts in ("positive", "nonnegative"):
            out[name] = np.where(np.isinf(v), np.int8(2), (v > 0).view(np.int8))
        elif accepts == "angle":
            a, b = v.reshape(W, -1, 2)[..., 0], v.reshape(W, -1, 2)[..., 1]
            sides = swing_sides(v.reshape(W, -1, 2))
            smaller_second = sides[..., 1] < sides[..., 0]  # which entry the swing row's `value` copies
            out[name] = (8 * (np.minimum(a, b) >= np.pi) + 4 * (a == 0) + 2 * (b == 0) + smaller_second).astype(np.int8)
        else:
            out[name] = np.zeros((W, 0), np.int8)
    if any(n in names for n in _DISTANCE):
        lo, hi = (parameter_view(model, n).reshape(W, -1) for n in _DISTANCE)
        out[DISTANCE_ORDER] = (np.isfinite(lo) & np.isfinite(hi) & (lo >= hi)).astype(np.int8)
    return out


def same_classes(keys: dict, before: dict, names) -> bool:
    """The class keys of `names` (and the distance order where they include a distance bound)
    are those of `before`."""
    names = list(names) + ([DISTANCE_ORDER] if any(n in names for n in _DISTANCE) else [])
    return all(n in before and np.array_equal(keys[n], before[n]) for n in names)


def probe_template(model, w: int, names, columns: dict, full_build, rows=None) -> Template | None:
    """The Template of world w's class, or None. columns: world w's value columns ((R,) each),
    built in full; full_build(probe) gives a model's columns ((Wv, R) each) as io.per_world_rows
    does, raising UsdphysError where a world's rows differ in structure. rows: the row table
    (its structure), which places a cone's cells (cone_cells) instead of a probe."""
    probe = world_model(model, w).replicate(2)
    values = {n: parameter(probe, n)[0] for n in names}
    total = sum(v.size for v in values.values())
    owner: dict[tuple, list] = {}
    start = 0
    for name, v in values.items():
        if PARAMETERS[name].accepts == "angle":  # a cone's cells are known (cone_cells): not moved, not probed
            probe.world_parameters[name] = np.stack((v, v))
            start += v.size
            continue
        s = 0.0625 * (start + 1.0 + np.arange(v.size)).reshape(v.shape) / (total + 1.0)
        # a factor per entry keeps its sign, zero and inf; a zero that is no class of its own (a
        # target, a limit at 0) is moved off zero, as other worlds of the class may have it
        zero = (v == 0) & (PARAMETERS[name].accepts in ("finite", "bound"))
        moved = (np.where(zero, s, v * (1.0 + s)), np.where(zero, -0.5 * s, v * (1.0 - 0.5 * s)))
        # stored as set_parameter stores them, without its check: the values are the model's
        # own, moved within their classes, and NaN stays where a joint has no such value
        probe.world_parameters[name] = np.stack(moved)
        for e in np.flatnonzero(np.isfinite(v) & ((v != 0) | zero)):
            key = (v.flat[e], moved[0].flat[e], moved[1].flat[e])
            owner.setdefault(key, []).append((name, int(e)))
        start += v.size
    try:
        with quiet():
            built = full_build(probe)
    except UsdphysError:  # the moved values changed the rows: no template
        return None
    cells: dict = {n: {} for n in names}
    for column, base in columns.items():
        both = np.broadcast_to(built[column], (2, base.shape[0]))
        for r in np.flatnonzero(_differs(both[0], base) | _differs(both[1], base)):
            hit = owner.get((base[r], both[0, r], both[1, r]), ())
            if len(hit) != 1:  # not a plain copy of one entry
                return None
            name, e = hit[0]
            rows, entries = cells[name].setdefault(column, ([], []))
            rows.append(int(r))
            entries.append(e)
    if "joint.cone" in names:
        cells["joint.cone"] = cone_cells(rows, values["joint.cone"])
    return Template(columns=dict(columns),
                    cells={n: {c: (np.array(r, np.int64), np.array(e, np.int64)) for c, (r, e) in by.items()}
                           for n, by in cells.items()})


def cone_cells(rows, cone: np.ndarray) -> dict:
    """{column: (rows, entries)} of the cone semi-angles (J, 2) of a class of worlds (the class
    fixes which side is 0 and which the smaller): a swing row's `value` is its joint's smaller
    side, its `lo` and `hi` the two sides (model.cone_rows, model.swing_sides), except a flat
    side's (inf in every world of the class)."""
    from usdphys.types.enums import RowKind

    swing = np.flatnonzero(np.asarray(rows.kind) == RowKind.SWING)
    joint = np.asarray(rows.source)[swing].astype(np.int64)
    sides = swing_sides(cone)[joint]  # (n, 2)
    bound = 2 * joint + (sides[:, 1] < sides[:, 0])  # the smaller side (the first on a tie, as min)
    cells = {"value": (swing.astype(np.int64), bound)}
    for column, k in (("lo", 0), ("hi", 1)):
        kept = cone[joint, k] != 0.0
        cells[column] = (swing[kept].astype(np.int64), 2 * joint[kept] + k)
    return cells


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a != b) & ~(np.isnan(a) & np.isnan(b))


def fill(template: Template, values: dict, worlds: np.ndarray, out: dict, columns) -> None:
    """Write `columns` of `worlds` into out ((W, R) each) from the template and the worlds'
    values ({name: (W, n) flat entries})."""
    every = worlds.size == next(iter(values.values())).shape[0]  # all W worlds (out may hold (1, R) columns)
    for column in columns:
        out[column][slice(None) if every else worlds] = template.columns[column]
    for name, by in template.cells.items():
        for column, (rows, entries) in by.items():
            _write_cells(out[column], worlds, rows, values[name], entries)


def _write_cells(column: np.ndarray, worlds: np.ndarray, rows: np.ndarray, values: np.ndarray, entries) -> None:
    """column[w, rows[k]] = values[w, entries[k]] for the worlds w ((W, R) and (W, n) arrays)."""
    if worlds.size == column.shape[0]:  # every world: one index array, not a grid of two (several times faster)
        column[:, rows] = values[:, entries]
    else:
        column[np.ix_(worlds, rows)] = values[np.ix_(worlds, entries)]


def refill(in_use: dict, classes: Classes, name: str, values: np.ndarray) -> tuple | None:
    """The columns after only parameter `name` changed, its classes as before ((W, n) flat
    values): (columns, touched), the columns in use with that parameter's cells rewritten and
    the names of the columns it rewrote; every other column is the same array (nothing to copy
    or upload). None where some class has no template (nothing written then). A touched column
    that is a (W, R) array of its own is written where it is (a large batch then copies no
    column: the caller's columns in use change); one stored for all worlds, or a view of a
    template's, is copied first."""
    if any(t is None for t in classes.templates):
        return None
    out = dict(in_use)
    W = classes.group.shape[0]
    touched = sorted({c for t in classes.templates for c in t.cells[name]})
    for column in touched:
        col = in_use[column]
        own = isinstance(col, np.ndarray) and col.shape[0] == W and col.flags.owndata and col.flags.writeable
        if not own:
            out[column] = np.array(np.broadcast_to(col, (W,) + np.shape(col)[1:]))
    for g, t in enumerate(classes.templates):
        worlds = np.flatnonzero(classes.group == g)
        for column, (rows, entries) in t.cells[name].items():
            _write_cells(out[column], worlds, rows, values, entries)
    return out, tuple(touched)
