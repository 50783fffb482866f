"""Where each joint drive's values sit in the solver's row table.

A drive value changed on a running Solver (Solver.set_parameter: a control loop setting targets
or gains between short calls) is written straight into its drive row's column, for every world
at once, instead of rebuilding the row table of every distinct world (io.per_world_rows, about
a millisecond a world). The map is trusted only after it reproduced, bit for bit, the row table
that the full build makes for a probe of the model's drive values (verified_drive_map); a model
where it does not falls back to the full build.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from usdphys.errors import UsdphysError, quiet
from usdphys.solver import forces
from usdphys.types.model import MODE_SOFT, Model, RowTable, dof_row
from usdphys.types.params import parameter, world_model

# drive parameter -> the row column it is written to (io's row value columns)
DRIVE_COLUMNS = {
    "joint.drive_target_pos": "value",
    "joint.drive_target_vel": "target_vel",
    "joint.drive_stiffness": "stiffness",
    "joint.drive_damping": "damping",
    "joint.drive_max_force": "max_force",
}
_MODEL_FIELDS = {
    "joint.drive_target_pos": "joint_drive_target_pos",
    "joint.drive_target_vel": "joint_drive_target_vel",
    "joint.drive_stiffness": "joint_drive_stiffness",
    "joint.drive_damping": "joint_drive_damping",
    "joint.drive_max_force": "joint_drive_max_force",
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


def _table(model: Model, law_names):
    with quiet():
        return forces.build_element_rows(model, model.constraint_rows(), law_names)


def verified_drive_map(model: Model, rows: RowTable, law_names) -> DriveMap | None:
    """find_drive_rows, checked: world 0 of `model` with every drive value moved (targets
    shifted, gains and bounds scaled, none switched on or off) must build exactly the row table
    that the map predicts from world 0's own. None where it does not (or nothing is driven)."""
    dmap = find_drive_rows(model, rows)
    if dmap.row.size == 0:
        return None
    base = world_model(model, 0)
    probe = world_model(model, 0)
    shift = 0.125 * (1.0 + np.arange(model.joint_count * 6).reshape(model.joint_count, 6))
    for name, attr in _MODEL_FIELDS.items():
        v = np.array(getattr(base, attr), float)
        moved = v + shift if name in ("joint.drive_target_pos", "joint.drive_target_vel") else v * (1.0 + shift)
        setattr(probe, attr, moved)
    want, have = _table(probe, law_names), _table(base, law_names)
    if want.rows.count != have.rows.count:
        return None
    # the same rows (the twist ranges follow from these and the limits), the same friction columns
    for column in ("source", "kind", "axis", "mode", "b0", "b1", "accel"):
        if not np.array_equal(getattr(want.rows, column), getattr(have.rows, column)):
            return None
    for column in ("fstatic", "fdynamic"):
        if not np.array_equal(want.extra[column], have.extra[column]):
            return None
    for name, column in DRIVE_COLUMNS.items():
        predicted = np.array(getattr(have.rows, column), float)
        predicted[dmap.row] = np.asarray(getattr(probe, _MODEL_FIELDS[name]))[dmap.joint, dmap.dof]
        if not np.array_equal(predicted, np.asarray(getattr(want.rows, column), float)):
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
            raise UsdphysError(
                f"{model.joint_paths[j]}: the per-world parameters of world {w} ({name}) change which limits, drives "
                "or springs exist; a world may change their values only (keep limits finite and gains positive "
                "where the model has them, +-inf / 0 where it has none)")
    column = DRIVE_COLUMNS[name]
    out = dict(columns)  # the other columns as they are (the same arrays: nothing to upload)
    out[column] = np.array(np.broadcast_to(columns[column], (worlds,) + np.shape(columns[column])[1:]))
    values = parameter(model, name)  # (W, J, 6)
    out[column][:, dmap.row] = values[:, dmap.joint, dmap.dof]
    return out
