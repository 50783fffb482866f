"""Where each joint drive's values sit in the solver's row table.

A drive value changed on a running Solver (Solver.set_parameter: a control loop setting targets
or gains between short calls) is written straight into its drive row's column, for every world
at once, instead of rebuilding the row table of every distinct world (io.per_world_rows, about
a millisecond a world). The map is trusted only after it reproduced, bit for bit, the row
columns that the full build makes for a probe of the model's drive values (verified_drive_map);
a model where it does not falls back to the full build.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from usdphys.errors import UsdphysError, quiet
from usdphys.types.model import MODE_SOFT, Model, RowTable, dof_row
from usdphys.types.params import parameter, structure_change_error, world_model

# drive parameter -> the row column it is written to (io's row value columns)
DRIVE_COLUMNS = {
    "joint.drive_target_pos": "value",
    "joint.drive_target_vel": "target_vel",
    "joint.drive_stiffness": "stiffness",
    "joint.drive_damping": "damping",
    "joint.drive_max_force": "max_force",
}
@dataclass(frozen=True)
class DriveMap:
    """The drive rows of a row table: row i drives DOF dof[i] of joint joint[i]."""

    row: np.ndarray
    joint: np.ndarray
    dof: np.ndarray


def find_drive_rows(model: Model, rows: RowTable) -> DriveMap:
    """The drive (soft) rows of the joints in `rows`, by the joint and DOF they measure."""
    found = []
    for i in np.flatnonzero(np.asarray(rows.mode) == MODE_SOFT):
        j = int(rows.source[i])
        if not 0 <= j < model.joint_count:
            continue
        locked = np.asarray(model.joint_locked[j], bool)
        for d in range(6):
            if not locked[d] and dof_row(locked, d) == (int(rows.kind[i]), int(rows.axis[i])):
                found.append((int(i), j, d))
                break
    a = np.array(found, dtype=np.int64).reshape(-1, 3)
    return DriveMap(row=a[:, 0], joint=a[:, 1], dof=a[:, 2])


def verified_drive_map(model: Model, rows: RowTable, full_build) -> DriveMap | None:
    """find_drive_rows, checked against the full build: full_build(probe) gives a model's row
    value columns ((Wv, R) each; io.per_world_rows, which refuses a change of structure). The
    probe has two worlds, world 0 of `model` and the same with every drive value moved (targets
    shifted, gains and bounds scaled, none switched on or off); the map must predict the second
    world's columns from the first's exactly. None where it does not (or nothing is driven)."""
    dmap = find_drive_rows(model, rows)
    if dmap.row.size == 0:
        return None
    probe = world_model(model, 0).replicate(2)
    shift = 0.125 * (1.0 + np.arange(model.joint_count * 6).reshape(model.joint_count, 6))
    moved = {}
    try:
        for name in DRIVE_COLUMNS:
            v = parameter(probe, name)[0]
            moved[name] = v + shift if name in ("joint.drive_target_pos", "joint.drive_target_vel") else v * (1.0 + shift)
            probe.set_parameter(name, np.stack([v, moved[name]]))
        with quiet():
            columns = full_build(probe)
    except UsdphysError:  # a moved value refused, or it changed the rows: no map
        return None
    for column, values in columns.items():
        both = np.broadcast_to(values, (2,) + np.shape(values)[1:])
        predicted = np.array(both[0])
        for name in (n for n, c in DRIVE_COLUMNS.items() if c == column):
            predicted[dmap.row] = moved[name][dmap.joint, dmap.dof]
        if not np.array_equal(predicted, both[1]):
            return None
    return dmap


def drive_columns(columns: dict, dmap: DriveMap, model: Model, name: str, worlds: int) -> dict:
    """The row value columns after drive parameter `name` of `model`: `columns` (the ones in
    use, (Wv, R) each) with that parameter's column made (W, R) and its values in its drive
    rows. A gain that would switch a drive on or off in some world is refused, as the full
    build refuses it."""
    if name in ("joint.drive_stiffness", "joint.drive_damping"):
        k, c = parameter(model, "joint.drive_stiffness"), parameter(model, "joint.drive_damping")
        driven = np.zeros((model.joint_count, 6), bool)
        driven[dmap.joint, dmap.dof] = True
        unlocked = ~np.asarray(model.joint_locked, bool)
        wrong = ((k > 0) | (c > 0)) != driven[None]
        wrong &= unlocked[None]
        if wrong.any():
            w, j, _ = (int(x[0]) for x in np.nonzero(wrong))
            raise structure_change_error(model.joint_paths[j], w, [name])
    column = DRIVE_COLUMNS[name]
    out = dict(columns)  # the other columns as they are (the same arrays: nothing to upload)
    out[column] = np.array(np.broadcast_to(columns[column], (worlds,) + np.shape(columns[column])[1:]))
    values = parameter(model, name)  # (W, J, 6)
    out[column][:, dmap.row] = values[:, dmap.joint, dmap.dof]
    return out
