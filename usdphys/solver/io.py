"""Host -> device: the solver's model, state and scratch (docs/solver.md, "Host / device layout").

Kernels take their data in groups of Warp structs (step.py), kept side by side rather than
nested because Warp passes structs to functions by value:

- model (``put_model``): ``ModelData`` + ``ContactModel``, read-only. Bodies, the full
  constraint row table (joint rows, then element rows), element columns, packed force laws,
  time functions, loads; shapes, candidate pairs, materials. Built once. The mechanism is
  shared by all worlds; the per-world parameters (usdphys.types.params: masses, inertias,
  gravity, row values and gains, friction efforts, contact materials) are [world, entry]
  arrays (world_array: one stored row, zero world stride, where no world varies them).
- state (``make_state``): ``StateData`` + ``RowState`` + ``ElementState`` + ``ContactState``,
  what one step hands to the next, per world; the step kernels update it in place. Poses and
  half-step velocities, the equal rows' impulse history (warm start), the element state, the
  previous step's contacts.
- ``Scratch`` (``make_scratch``): the step's work buffers (Jacobians, A, its LDL factor,
  impulses, residuals); only the factor is reused across steps, as a cache (step.py).
- ``Diagnostics`` (``make_diagnostics``) and ``FrameOutput`` (``make_output``): written by the
  kernels for the host.

Nothing here imports pxr: the input is a usdphys.types.model.Model (flat numpy arrays, SI).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import warp as wp

from usdphys.errors import UsdphysError
from usdphys.solver import forces, outputs
from usdphys.solver import step as K
from usdphys.solver.contact import ContactModel, ContactOptions, ContactState, make_contact_state, put_contact_model
from usdphys.solver.row_values import Classes, class_keys, fill, probe_template, refill, same_classes
from usdphys.solver.ldl import put_pattern
from usdphys.errors import UsdphysError, quiet
from usdphys.types.enums import RowKind, RowMode
from usdphys.types.model import MODE_EQUAL, MODE_LAW, MODE_LOWER, MODE_SOFT, MODE_UPPER, Model, RowTable, swing_sides
from usdphys.types.params import (ROW_PARAMETERS, base_values, check_world_parameters, parameter_view,
                                  structure_change_error, world_model)
from usdphys.types.rowgraph import RowPattern, row_pattern


@dataclass
class DeviceState:
    """make_state's result: the per-world state structs the step kernels update in place."""

    data: K.StateData  # poses, velocities
    rows: K.RowState  # equal-row impulse history (warm start)
    elements: forces.ElementState  # law-row forces, unwrapped angles, rates, motor references, stick flags, time
    contact: ContactState  # the previous step's contacts and impulses, contact counters


@dataclass
class DeviceModel:
    """put_model's result: the kernels' ModelData plus the host-side facts the driver needs."""

    data: K.ModelData  # kernel parameter
    contact: ContactModel  # kernel parameter; n_pairs = 0: nothing collides
    rows: RowTable  # the solver's full row table (joint rows, bushings applied, element rows)
    elements: forces.ElementRows  # row names (messages), motor rows and paths, laws, functions
    contact_info: dict  # candidate pairs, contacts per world (capacity), method, shape table
    inv_mass: np.ndarray  # (B,) world 0's; 0 for kinematic or massless bodies (the same bodies in every world)
    body_count: int
    row_count: int
    pattern: RowPattern  # the row system's elimination order and factor pattern (host copy)
    user_laws: tuple = ()  # Warp functions compiled into the kernels (forces.install_user_laws)
    law_names: dict = field(default_factory=dict)  # user law name -> index (user_law_table)
    row_columns: dict | None = None  # the row value columns in use, (Wv, R) each (per_world_rows)
    row_classes: Classes | None = None  # the classes row_columns were made from (per_world_rows)
    row_templates: dict = field(default_factory=dict)  # row_values.Template per class found so far
    gravity: np.ndarray = field(default=None)  # (W, 3) each world's gravity
    layout: str = "world_major"  # of the per-world arrays (world_array)

    @property
    def motor_count(self) -> int:
        return int(self.elements.motor_rows.shape[0])


def _arr(data, dtype, device, shape=None):
    a = np.ascontiguousarray(data, dtype=np.float64 if dtype not in (wp.int32,) else np.int32)
    if shape is not None:
        a = a.reshape(shape)
    return wp.array(a, dtype=dtype, device=device)


def _pad(a, n, width):
    """Per-body / per-row column with at least one entry (Warp arrays may not be empty)."""
    a = np.asarray(a, float).reshape(-1, width) if width else np.asarray(a).reshape(-1)
    if a.shape[0] == 0:
        return np.zeros((n, width) if width else (n,), dtype=a.dtype)
    return a


def row_frame_runs(rows) -> np.ndarray:
    """For each row, the first row of the run of consecutive rows with the same two bodies and
    the same four frames (p0, q0, p1, q1): a joint's rows, whose world frames the kernels
    compute once per run."""
    R = len(rows.b0)
    if R == 0:
        return np.zeros(0, np.int32)
    key = np.concatenate([np.asarray(rows.b0, float).reshape(R, 1), np.asarray(rows.b1, float).reshape(R, 1)]
                         + [np.asarray(a, float).reshape(R, -1) for a in (rows.p0, rows.q0, rows.p1, rows.q1)], axis=1)
    starts = np.r_[True, np.any(key[1:] != key[:-1], axis=1)]
    return np.maximum.accumulate(np.where(starts, np.arange(R), 0)).astype(np.int32)


def world_layout(device) -> str:
    """The default memory layout of [world, entry] arrays on `device`: "world_major" (each
    world's entries side by side: one CPU thread walks its own world's memory) or
    "world_minor" (each entry's worlds side by side: neighbouring GPU threads, i.e. worlds,
    read neighbouring addresses, coalesced)."""
    return "world_minor" if wp.get_device(device).is_cuda else "world_major"


def world_array(values, dtype, device, worlds: int, layout: str = "world_major"):
    """A [world, entry...] Warp array of `values` (Wv, n...) for `worlds` worlds; kernels index it
    [w, i] whatever the layout.

    Wv = 1, or all worlds equal: one row stored, seen by every world through a zero world
    stride (a parameter nobody varies costs one copy). Otherwise layout "world_major" stores
    (W, n) contiguously, "world_minor" stores (n, W) and views it as (W, n) with transposed
    strides. Values are bit-identical either way; only the addresses differ."""
    np_dtype = np.int32 if dtype in (wp.int32,) else np.float64
    vals = np.asarray(values, dtype=np_dtype)
    width = {wp.vec3d: 3, wp.quatd: 4}.get(dtype, 0)
    entry_shape = vals.shape[1:len(vals.shape) - (1 if width else 0)]
    if vals.shape[0] == 1 or bool(np.all(vals == vals[:1])):
        base = wp.array(np.ascontiguousarray(vals[:1]), dtype=dtype, device=device)
        strides = (0,) + tuple(base.strides[1:])
    elif vals.shape[0] != worlds:
        raise ValueError(f"{vals.shape[0]} worlds of values for {worlds} worlds")
    elif layout == "world_minor" and entry_shape:
        order = tuple(range(1, 1 + len(entry_shape))) + (0,) + tuple(range(1 + len(entry_shape), vals.ndim))
        base = wp.array(np.ascontiguousarray(vals.transpose(order)), dtype=dtype, device=device)
        strides = (base.strides[len(entry_shape)],) + tuple(base.strides[: len(entry_shape)])
    else:
        return wp.array(np.ascontiguousarray(vals), dtype=dtype, device=device)
    view = wp.array(ptr=base.ptr, dtype=dtype, shape=(worlds,) + entry_shape, strides=strides, device=device)
    view._usdphys_storage = base  # the view does not own its memory: keep the storage alive
    return view


def world_zeros(shape, dtype, device, layout: str = "world_major", world_axis: int = 0):
    """Zeros of `shape`, whose axis `world_axis` counts the worlds, for per-world state and work
    buffers: (W, n, ...) or, with world_axis = 1, (F, W, n, ...) frame outputs. "world_minor"
    stores the worlds last ([n, ..., W], [F, n, ..., W]) and returns the transposed view, so
    kernels index [w, i] / [f, w, i] either way (world_array says why); an array with no entry
    axis after its worlds is already side by side and stays plain."""
    if layout != "world_minor" or len(shape) < world_axis + 2:
        return wp.zeros(shape, dtype=dtype, device=device)
    rest = tuple(shape[:world_axis]) + tuple(shape[world_axis + 1:])
    base = wp.zeros(rest + (shape[world_axis],), dtype=dtype, device=device)
    strides = list(base.strides[:-1])
    strides.insert(world_axis, base.strides[-1])
    view = wp.array(ptr=base.ptr, dtype=dtype, shape=tuple(shape), strides=tuple(strides), device=device)
    view._usdphys_storage = base
    return view


def lever_length(rows: RowTable) -> float:
    """The model's typical lever arm (m): RMS distance of the rows' frames from their bodies'
    centres of mass, clipped to [1 mm, 1 km]. It weighs rotations against translations in the
    mass-free rank test, so the test does not depend on the unit of length."""
    arms = [np.asarray(p, float)[np.asarray(b) >= 0] for p, b in ((rows.p0, rows.b0), (rows.p1, rows.b1))]
    arms = np.concatenate([a.reshape(-1, 3) for a in arms])
    if arms.size == 0:
        return 1.0
    rms = float(np.sqrt(np.mean(np.sum(arms * arms, axis=1))))
    return float(np.clip(rms, 1e-3, 1e3)) if np.isfinite(rms) and rms > 0 else 1.0


def limit_ranges(model: Model, rows) -> tuple[np.ndarray, np.ndarray]:
    """Per row: for a twist limit row the [lower, upper] range (rad) of the joint DOF it bounds
    (the kernel starts the unwrapped coordinate inside it); for a cone's swing row its two
    sides (model.swing_sides, whose ratio weighs the tilt: step.row_form); (-inf, inf) else."""
    n = rows.count
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    kind, mode, src, axis = (np.asarray(a) for a in (rows.kind, rows.mode, rows.source, rows.axis))
    for i in np.flatnonzero((kind == RowKind.TWIST) & ((mode == RowMode.LOWER) | (mode == RowMode.UPPER))):
        j = int(src[i])
        if 0 <= j < model.joint_count:
            d = 3 + int(axis[i]) % 3  # axis 3..8: the same DOF measured another way (model.dof_row)
            lo[i] = model.joint_lower[j, d]
            hi[i] = model.joint_upper[j, d]
    swing = np.flatnonzero(kind == RowKind.SWING)  # only joints make them: src is a joint
    lo[swing], hi[swing] = swing_sides(np.asarray(model.joint_cone).reshape(-1, 2)[src[swing]]).T
    return lo, hi


def user_law_table(laws=None) -> tuple[dict[str, int], tuple]:
    """(name -> index, the laws in index order) for forces.build_element_rows and
    forces.install_user_laws. laws: {name: @wp.func} as named by mbd:userLaw."""
    if laws is None:
        laws = {}
    if not isinstance(laws, dict):
        raise UsdphysError(f"laws must be a dict of name -> Warp function, got {type(laws).__name__}")
    named = {}
    for name, fn in laws.items():
        if not isinstance(name, str) or not name.strip():
            raise UsdphysError(f"laws: a law's name must be a non-empty string (as in mbd:userLaw), got {name!r}")
        named[name] = forces.check_user_law(name, fn)
    order = sorted(named)  # a canonical order: the same set of laws is the same kernel
    return {n: i for i, n in enumerate(order)}, tuple(named[n] for n in order)



# Row columns that per-world parameters may change ([world, row] in ModelData); every other
# column is the mechanism's structure, identical in all worlds (checked).
_ROW_VALUE_COLUMNS = ("value", "stiffness", "damping", "target_vel", "max_force")
_EXTRA_VALUE_COLUMNS = ("fstatic", "fdynamic")
_ROW_STRUCTURE = ("source", "kind", "axis", "mode", "b0", "b1", "accel")
_EXTRA_STRUCTURE = ("law", "lawidx", "fn", "motor", "couple", "preload")


def _per_world(model: Model, name: str) -> np.ndarray:
    """(Wv, ...) values of a parameter: Wv = 1 when no world sets it."""
    if name in model.world_parameters:
        return np.asarray(model.world_parameters[name], float)
    return base_values(model, name)[None]


def varied_row_parameters(model: Model) -> tuple:
    """The row parameters some world of `model` sets, in ROW_PARAMETERS order."""
    return tuple(n for n in ROW_PARAMETERS if n in model.world_parameters)


PROBED_CLASSES = 16  # per_world_rows: classes of one or two worlds probed on a running Solver up to this count


def per_world_rows(model: Model, rows: RowTable, elements, law_names=None, templates: dict | None = None,
                   probe_all: bool = False) -> tuple[dict[str, np.ndarray], Classes | None]:
    """The row value columns per world ((Wv, R) each, Wv = 1 when no row parameter is set) and
    the classes they were made from (None when no world sets a row parameter): each world's
    columns are those of the single-world model with its values (Model.constraint_rows,
    forces.build_element_rows), built in full for one world of each class of values and filled
    from that class's row_values.Template for the others. A world whose rows differ in anything
    but values is an error. templates: found so far, {(names, class key): Template or False},
    kept between calls (a Solver's) and extended here. A class of one or two worlds is built
    world by world (a probe costs two builds) unless probe_all (a Solver whose values a loop
    changes: the template then serves every later call) and there are at most PROBED_CLASSES
    classes (worlds that each have their own, e.g. a random pattern of zero frictions, would
    pay three builds a world for templates a later call may never use)."""
    names = varied_row_parameters(model)
    lo, hi = limit_ranges(model, rows)
    base = {c: np.asarray(getattr(rows, c), float)[None] for c in _ROW_VALUE_COLUMNS}
    base.update({c: np.asarray(elements.extra[c], float)[None] for c in _EXTRA_VALUE_COLUMNS})
    base.update(lo=lo[None], hi=hi[None])
    if not names:
        return base, None
    W, R = model.world_count, rows.count
    keys = class_keys(model, names)
    joined = np.concatenate([np.zeros((W, 0), np.int8)] + list(keys.values()), axis=1)
    group, first, ids = np.empty(W, np.int64), [], {}
    for w in range(W):  # classes numbered in world order: a refusal names the first world it finds
        group[w] = ids.setdefault(joined[w].tobytes(), len(ids))
        if group[w] == len(first):
            first.append(w)
    templates = {} if templates is None else templates
    used = [None] * len(first)
    for g, w in enumerate(first):
        template = templates.get((names, joined[w].tobytes()))
        if template is None and (np.count_nonzero(group == g) > 2 or (probe_all and len(first) <= PROBED_CLASSES)):
            exact = _exact_rows(model, rows, elements, law_names, names, [int(w)])  # refuses a change of structure
            template = probe_template(model, int(w), names, {c: v[w] for c, v in exact.items()},
                                      lambda probe: _exact_rows(probe, rows, elements, law_names, names),
                                      rows=rows) or False
            templates[(names, joined[w].tobytes())] = template
        used[g] = template or None
    values = {n: parameter_view(model, n).reshape(W, -1) for n in names}
    # a column that no parameter fills and that is alike in every class stays one row for all worlds
    varies = set(base)
    if all(used):
        varies = {c for t in used for by in t.cells.values() for c in by}
        varies |= {c for c in base if any(not np.array_equal(t.columns[c], used[0].columns[c]) for t in used)}
    out = {c: np.empty((W, R)) if c in varies else np.asarray(used[0].columns[c])[None] for c in base}
    for g, template in enumerate(used):
        if template:
            fill(template, values, np.flatnonzero(group == g), out, varies)
    built = np.flatnonzero([used[g] is None for g in group])  # the worlds of classes without a template
    if built.size:
        exact = _exact_rows(model, rows, elements, law_names, names, built)  # one pass: one build per distinct world
        for c in out:
            out[c][built] = exact[c][built]
    return out, Classes(names=names, keys=keys, group=group, templates=used)


def _exact_rows(model: Model, rows: RowTable, elements, law_names, names, worlds=None) -> dict[str, np.ndarray]:
    """The value columns ((W, R) each; only the rows of `worlds` written, default all) of
    `worlds`, one build of the single-world model per distinct world; the error of
    params.structure_change_error where a world's rows differ from `rows` in structure."""
    W, R = model.world_count, rows.count
    worlds = range(W) if worlds is None else worlds
    out = {c: np.zeros((W, R)) for c in _ROW_VALUE_COLUMNS + _EXTRA_VALUE_COLUMNS + ("lo", "hi")}
    groups: dict[bytes, list[int]] = {}
    for w in worlds:
        key = b"".join(np.ascontiguousarray(model.world_parameters[n][w]).tobytes() for n in names)
        groups.setdefault(key, []).append(int(w))
    with quiet():  # the base build already warned about anything structural
        for ws in groups.values():
            mw = world_model(model, ws[0], names)
            er = forces.build_element_rows(mw, mw.constraint_rows(), law_names)
            t = er.rows
            same = t.count == R and all(np.array_equal(getattr(t, c), getattr(rows, c)) for c in _ROW_STRUCTURE) \
                and all(np.array_equal(er.extra[c], elements.extra[c]) for c in _EXTRA_STRUCTURE)
            if not same:
                n = min(t.count, R)
                diff = [i for i in range(n) if any(getattr(t, c)[i] != getattr(rows, c)[i] for c in _ROW_STRUCTURE)
                        or any(er.extra[c][i] != elements.extra[c][i] for c in _EXTRA_STRUCTURE)]
                what = elements.names[diff[0]] if diff else (elements.names[n] if n < R else er.names[n])
                raise structure_change_error(what, ws[0], names)
            wlo, whi = limit_ranges(mw, t)
            for c in _ROW_VALUE_COLUMNS:
                out[c][ws] = np.asarray(getattr(t, c), float)
            for c in _EXTRA_VALUE_COLUMNS:
                out[c][ws] = np.asarray(er.extra[c], float)
            out["lo"][ws] = wlo
            out["hi"][ws] = whi
    return out


def put_model(model: Model, device=None, contact: ContactOptions | None = None,
              laws=None, layout: str | None = None) -> DeviceModel:
    """Upload everything the step reads and never writes: the mechanism, shared by all worlds,
    and the per-world parameters ([world, entry] arrays, broadcast where no world varies them).

    contact: contact solver options (None: defaults); laws: {name: @wp.func} for the
    spring-dampers whose mbd:userLaw names them. The laws are compiled into the step kernel, so they are
    installed here and must be re-installed before launching (Solver.run does).
    layout: memory layout of the per-world arrays (world_array; None: world_layout(device))."""
    dev = wp.get_device(device)
    layout = layout or world_layout(dev)
    if layout not in ("world_major", "world_minor"):
        raise UsdphysError(f"layout must be 'world_major' or 'world_minor', got {layout!r}")
    check_world_parameters(model)
    W = model.world_count
    B = model.body_count
    rows = model.constraint_rows()
    # force elements, motors, bushings, NewtonJointAPI: extra rows + loads
    law_names, user_laws = user_law_table(laws)
    forces.install_user_laws(user_laws)
    elements = forces.build_element_rows(model, rows, law_names)
    rows = elements.rows
    R = rows.count
    Rn = max(R, 1)
    Bn = max(B, 1)
    m = K.ModelData()
    m.n_bodies = B
    m.n_rows = R
    m.row_kind = _arr(_pad(rows.kind, Rn, 0), wp.int32, dev)
    m.row_axis = _arr(_pad(rows.axis, Rn, 0), wp.int32, dev)
    m.row_mode = _arr(_pad(rows.mode, Rn, 0), wp.int32, dev)
    m.row_b0 = _arr(_pad(rows.b0, Rn, 0), wp.int32, dev)
    m.row_b1 = _arr(_pad(rows.b1, Rn, 0), wp.int32, dev)
    partner = np.asarray(elements.extra["partner"], np.int32)
    m.row_partner = _arr(_pad(partner, Rn, 0) if R else np.full(1, -1, np.int32), wp.int32, dev)
    m.row_ratio = _arr(_pad(np.asarray(elements.extra["ratio"], float), Rn, 0), wp.float64, dev)
    # elimination order and factor pattern (sparse LDL); a coupling row touches its partner's bodies
    pattern = row_pattern(rows.b0, rows.b1, partner)
    m.pat = put_pattern(pattern, dev)
    m.row_p0 = _arr(_pad(rows.p0, Rn, 3), wp.vec3d, dev)
    m.row_q0 = _arr(_pad(rows.q0, Rn, 4), wp.quatd, dev)
    m.row_p1 = _arr(_pad(rows.p1, Rn, 3), wp.vec3d, dev)
    m.row_q1 = _arr(_pad(rows.q1, Rn, 4), wp.quatd, dev)
    m.row_accel = _arr(_pad(rows.accel, Rn, 0), wp.int32, dev)
    m.row_frame = _arr(_pad(row_frame_runs(rows), Rn, 0), wp.int32, dev)
    m.geo_ang = wp.float64(1.0 / lever_length(rows) ** 2)
    m.max_turn = wp.float64(0.0)  # off unless the Solver is asked for it
    m.el = forces.element_data(elements, dev)
    m.has_elements = int(forces.has_elements(elements))
    # contact: shapes, candidate pairs, materials (per world when a study varies them)
    cm, contact_info = put_contact_model(model, dev, contact, row_bodies=(rows.b0, rows.b1, partner))
    if R == 0:
        cm.n_dense = 0  # no joints: the contact sweep alone is exact
    dm = DeviceModel(data=m, contact=cm, rows=rows, elements=elements, contact_info=contact_info,
                     inv_mass=np.zeros(Bn), body_count=B, row_count=R, pattern=pattern,
                     user_laws=user_laws, law_names=law_names, layout=layout)
    materials = {attr: getattr(cm, attr).numpy() for attr, _ in _MATERIAL_FIELDS}  # (1, S): the shapes' own
    arrays = parameter_arrays(dm, model, PARAMETER_GROUPS, materials)
    put_parameter_arrays(dm, arrays, dev, W)
    # modified Newton across steps (step.py, REFACTOR_EVERY) and extrapolated impulses: only when A cannot change by
    # more than the motion does, i.e. all rows are equal rows (no drives, limits, elements'
    # law / friction rows, whose diagonals or active sets change) and nothing collides
    modes = np.asarray(rows.mode)
    m.equal_only = int(R > 0 and bool(np.all(modes == MODE_EQUAL)) and cm.n_pairs == 0)
    # and with limits too, on the steps in which none holds (step_world's `quiet`): an inactive
    # limit row adds exact zeros, so a limit never reached leaves the motion bit for bit as it is
    hard_rows = R > 0 and bool(np.all(np.isin(modes, (MODE_EQUAL, MODE_LOWER, MODE_UPPER))))
    m.hard_only = int(hard_rows and cm.n_pairs == 0)
    # every other model (contact, drives, joint friction, limits that hold): the factor alone is
    # reused across steps, on the steps whose rows are the factor's (the hard active set, the
    # rows kept, each compliance on A's diagonal bit for bit: step.kept_as_factorised; a drive's
    # stays while h and its gains do). Impulses are not extrapolated (contact, drive, friction
    # and limit impulses change every step); the Newton iteration and the contact coupling run
    # on the aged factor, which the iteration refactorises where it converges slowly. Not with
    # acceleration drives, whose compliance scales with A's own diagonal, nor with force-element
    # (law) rows: with them dm_control's walker (joint damping and armature, on the floor)
    # diverged: the contact solve's joint projection through a six-step-old factor grew its
    # joint impulses to 3e10, and the run failed at t = 0.76 s at every step size (docs/solver.md,
    # step 2, with what was tried)
    soft_accel = (modes == MODE_SOFT) & np.asarray(rows.accel, dtype=bool) if R > 0 else False
    m.reuse_factor = int(R > 0 and not m.equal_only and not np.any(soft_accel) and not np.any(modes == MODE_LAW))
    return dm


# The per-world arrays each group of parameters feeds (put_parameter_arrays).
PARAMETER_GROUPS = ("gravity", "bodies", "rows", "materials")
_MATERIAL_FIELDS = (("mu_s", "shape.static_friction"), ("mu_d", "shape.dynamic_friction"),
                    ("rest", "shape.restitution"))


def parameter_group(name: str) -> str:
    """The group of arrays parameter `name` (usdphys.types.params.PARAMETERS) feeds."""
    if name == "gravity":
        return "gravity"
    if name.startswith("body."):
        return "bodies"
    if name in ROW_PARAMETERS:
        return "rows"
    return "materials"


def parameter_arrays(dm: DeviceModel, model: Model, groups, materials=None, changed: str | None = None) -> dict:
    """Host values ((Wv, ...) each) of the per-world arrays that the parameter `groups` feed, as
    `model` sets them; dm: the solver's model, whose mechanism `model` must share. Computed
    before anything is uploaded, so a refused value (a variant that changes which limits,
    drives or springs exist) leaves the solver as it was. materials: the shapes' own values
    ({attr: (1, S)}) when `model` varies none. changed: the one parameter that differs from the
    arrays in use (Solver.set_parameter); where its values keep every world's class, only its
    cells of the row columns are rewritten (row_values.refill) and the other columns stay the
    arrays in use."""
    out = {}
    if "gravity" in groups:
        out["gravity"] = _per_world(model, "gravity")  # (Wv, 3)
    if "bodies" in groups:
        dyn = ~np.asarray(model.body_kinematic, bool)
        mass = _per_world(model, "body.mass")  # (Wv, B)
        inertia = _per_world(model, "body.inertia")  # (Wv, B, 3)
        live = dyn[None] & (mass > 0)
        out["inv_mass"] = np.where(live, 1.0 / np.where(mass > 0, mass, 1.0), 0.0)
        out["inertia"] = np.where(inertia > 0, inertia, 1.0)
        out["inv_inertia"] = np.where(live[..., None] & (inertia > 0), 1.0 / np.where(inertia > 0, inertia, 1.0), 0.0)
    if "rows" in groups:
        cls = dm.row_classes
        if changed in ROW_PARAMETERS and dm.row_columns is not None and cls is not None and changed in cls.names \
                and varied_row_parameters(model) == cls.names \
                and same_classes(class_keys(model, (changed,)), cls.keys, (changed,)):  # its cells only
            # in place: the columns in use are this DeviceModel's own host copies, and nothing
            # after this point refuses the change (the classes were checked above)
            refilled = refill(dm.row_columns, cls, changed, parameter_view(model, changed).reshape(model.world_count, -1))
            if refilled is not None:
                out["rows"], out["row_classes"] = refilled[0], cls
                out["rows_rewritten"] = refilled[1]
        if "rows" not in out:
            out["rows"], out["row_classes"] = per_world_rows(model, dm.rows, dm.elements, dm.law_names,
                                                             dm.row_templates, probe_all=changed is not None)
    if "materials" in groups and dm.contact.n_pairs:
        for attr, name in _MATERIAL_FIELDS:
            if name in model.world_parameters:
                out[attr] = _per_world(model, name)
            elif materials is not None:
                out[attr] = materials[attr]
    elif "materials" in groups:  # nothing collides: the shapes' own values, never read
        out.update(materials or {})
    return out


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """a and b hold the same values in every world ((Wv, ...) each, Wv = 1 standing for all)."""
    try:
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    except ValueError:
        return False
    return bool(np.array_equal(np.broadcast_to(a, shape), np.broadcast_to(b, shape)))


def _assign_per_world(array, values: np.ndarray) -> bool:
    """Write (W, n) values into a [world, entry] Warp array where it stands (either layout):
    False, nothing written, where the array is stored once for all worlds (zero world stride)
    or has another shape. Ordered after the launches already queued on its device."""
    if array.strides[0] == 0 or tuple(array.shape) != np.shape(values):
        return False
    if array.device.is_cpu:
        np.copyto(array.numpy(), values)  # a view of the array's memory on the CPU: one copy
    else:
        array.assign(values)
    return True


def put_parameter_arrays(dm: DeviceModel, arrays: dict, device, worlds: int) -> None:
    """Upload parameter_arrays' values into dm's kernel structs ([world, entry] arrays, one
    stored row where every world is alike), replacing the arrays they had."""
    m, cm, layout = dm.data, dm.contact, dm.layout
    Bn, Rn = max(dm.body_count, 1), max(dm.row_count, 1)

    def per_world(values, dtype, n, width=0):
        """(Wv, k, ...) -> [world, max(k, 1)] Warp array (entries padded: Warp arrays are never empty)."""
        v = np.asarray(values)
        if v.shape[1] == 0:
            v = np.zeros((v.shape[0], n) + ((width,) if width else ()), v.dtype)
        return world_array(v, dtype, device, worlds, layout)

    if "gravity" in arrays:
        m.gravity = world_array(arrays["gravity"], wp.vec3d, device, worlds, layout)
        dm.gravity = np.broadcast_to(arrays["gravity"], (worlds, 3)).copy()
    if "inv_mass" in arrays:
        m.inv_mass = per_world(arrays["inv_mass"], wp.float64, Bn)
        m.inertia = per_world(arrays["inertia"], wp.vec3d, Bn, 3)
        m.inv_inertia = per_world(arrays["inv_inertia"], wp.vec3d, Bn, 3)
        dm.inv_mass = _pad(arrays["inv_mass"][0], Bn, 0)
    if "rows" in arrays:
        cols, before = arrays["rows"], dm.row_columns or {}
        rewritten = arrays.get("rows_rewritten", ())  # columns refilled in place: the same object, new values
        fields = (("value", m, "row_value"), ("stiffness", m, "row_k"), ("damping", m, "row_c"),
                  ("target_vel", m, "row_tv"), ("max_force", m, "row_fmax"), ("lo", m, "row_lo"),
                  ("hi", m, "row_hi"), ("fstatic", m.el, "fstatic"), ("fdynamic", m.el, "fdynamic"))
        for column, owner, attr in fields:  # a column that did not change keeps its array (a drive target: one)
            if column not in rewritten and column in before and (
                    before[column] is cols[column] or _same_values(before[column], cols[column])):
                continue
            values = np.minimum(cols[column], 1e300) if column == "max_force" else cols[column]
            if column in rewritten and _assign_per_world(getattr(owner, attr), values):
                continue
            setattr(owner, attr, per_world(values, wp.float64, Rn))  # m.el: through m, its nested struct's own
        dm.row_columns, dm.row_classes = cols, arrays.get("row_classes")
    for attr, _ in _MATERIAL_FIELDS:
        if attr in arrays:
            setattr(cm, attr, world_array(arrays[attr], wp.float64, device, worlds, layout))


def make_state(model: Model, device_model: DeviceModel, worlds: int | None = None, device=None) -> DeviceState:
    """The state at t = 0: the Model's initial COM-frame poses and velocities (one world of a
    single-world Model is repeated), empty impulse history, element and contact state zeroed.
    The velocities are v(0); the driver turns them into the leapfrog v(-h/2) once h is known."""
    dev = wp.get_device(device)
    W = model.world_count if worlds is None else int(worlds)
    B, R = device_model.body_count, device_model.row_count
    Rn = max(R, 1)
    pos, rot, vel, omega = model.com_state()
    if W != model.world_count:
        if model.world_count != 1:
            raise ValueError(f"model has {model.world_count} worlds, cannot make a state of {W}")
        pos, rot, vel, omega = (np.repeat(np.asarray(a).reshape(1, B, -1), W, axis=0) for a in (pos, rot, vel, omega))
    layout = device_model.layout  # the body and row state follow the parameters' layout
    st = K.StateData()
    for name, values, dtype in (("pos", pos, wp.vec3d), ("rot", rot, wp.quatd), ("vel", vel, wp.vec3d),
                                ("omega", omega, wp.vec3d)):
        arr = world_zeros((W, max(B, 1)), dtype, dev, layout)
        if B:
            arr.assign(np.ascontiguousarray(np.asarray(values, np.float64).reshape(W, B, -1)))
        setattr(st, name, arr)
    rs = K.RowState()
    for name in ("lwarm", "lwarm2", "lwarm3", "lwarm4", "lwarm5", "lwarm6"):
        setattr(rs, name, world_zeros((W, Rn), wp.float64, dev, layout))
    rs.run = wp.zeros(W, dtype=wp.int32, device=dev)
    def zeros(shape, dtype):
        return world_zeros(shape, dtype, dev, layout)

    es = forces.element_state(W, R, dev, zeros)
    cs = make_contact_state(W, B, R, device_model.contact_info["capacity"], device_model.contact, dev, zeros)
    return DeviceState(data=st, rows=rs, elements=es, contact=cs)


def make_scratch(device_model: DeviceModel, worlds: int, device=None) -> K.Scratch:
    """Work buffers of the step kernels (contents carry no meaning between steps, except the
    factorisation cache, which starts stale: fage = -1)."""
    dev = wp.get_device(device)
    W = int(worlds)
    Bn = max(device_model.body_count, 1)
    Rn = max(device_model.row_count, 1)
    layout = device_model.layout  # like the state: worlds side by side on a GPU

    def zeros(shape, dtype):
        return world_zeros(shape, dtype, dev, layout)

    sc = K.Scratch()
    for name in ("vstar", "mom", "pos1", "vel1", "omega1", "lbody1", "dv", "dL"):
        setattr(sc, name, zeros((W, Bn), wp.vec3d))
    sc.rot1 = zeros((W, Bn), wp.quatd)
    sc.iinv = zeros((W, Bn), wp.mat33d)
    for name in ("jl0", "ja0", "jl1", "ja1", "wl0", "wa0", "wl1", "wa1"):
        setattr(sc, name, zeros((W, Rn), wp.vec3d))
    for name in ("g0", "sdiag", "sdiag_f", "sshift", "sinv", "lam", "res", "Dinv", "ly", "dlam", "dres", "dstep",
                 "fprev"):
        setattr(sc, name, zeros((W, Rn), wp.float64))
    sc.act = zeros((W, Rn), wp.int32)
    sc.keep = zeros((W, Rn), wp.int32)
    sc.rank_indep = zeros((W, Rn), wp.int32)
    sc.rank_hard = zeros((W, Rn), wp.int32)
    sc.rank_age = wp.full(W, -1, dtype=wp.int32, device=dev)
    nnz = max(device_model.pattern.count, 1)  # A and its factor: the pattern's entries only
    sc.A = zeros((W, nnz), wp.float64)
    sc.Lf = zeros((W, nnz), wp.float64)
    sc.fage = wp.full(W, -1, dtype=wp.int32, device=dev)
    sc.fheld = wp.zeros(W, dtype=wp.int32, device=dev)
    sc.rfresh = wp.zeros(W, dtype=wp.int32, device=dev)
    sc.conv_err = wp.zeros(W, dtype=wp.float64, device=dev)
    return sc


def make_diagnostics(worlds: int, device=None) -> K.Diagnostics:
    dev = wp.get_device(device)
    W = int(worlds)
    dg = K.Diagnostics()
    dg.status = wp.zeros(W, dtype=wp.int32, device=dev)
    dg.fail_body = wp.zeros(W, dtype=wp.int32, device=dev)
    dg.fail_step = wp.zeros(W, dtype=wp.int32, device=dev)
    dg.max_error = wp.zeros(W, dtype=wp.float64, device=dev)
    dg.worst_row = wp.full(W, -1, dtype=wp.int32, device=dev)
    dg.init_error = wp.zeros(W, dtype=wp.float64, device=dev)
    dg.init_row = wp.full(W, -1, dtype=wp.int32, device=dev)
    dg.n_updates = wp.zeros(W, dtype=wp.int32, device=dev)
    dg.n_factor = wp.zeros(W, dtype=wp.int32, device=dev)
    dg.n_reduced = wp.zeros(W, dtype=wp.int32, device=dev)
    dg.fail_row = wp.full(W, -1, dtype=wp.int32, device=dev)
    dg.fail_err = wp.zeros(W, dtype=wp.float64, device=dev)
    dg.fail_time = wp.zeros(W, dtype=wp.float64, device=dev)
    dg.frame_error = wp.zeros(W, dtype=wp.float64, device=dev)
    return dg


def make_output(device_model: DeviceModel, worlds: int, frames: int, device=None,
                layout: outputs.OutputLayout | None = None) -> K.FrameOutput:
    """Poses, motor efforts and the recorded groups of `layout` (outputs.py) for frames
    0 .. frames (frame 0: the assembled start)."""
    dev = wp.get_device(device)

    def zeros(shape, dtype, world_axis=0):
        return world_zeros(shape, dtype, dev, device_model.layout, world_axis)

    return outputs.make_output(layout, device_model.body_count, device_model.motor_count, worlds, frames, dev,
                               zeros)


__all__ = ["DeviceModel", "DeviceState", "make_diagnostics", "make_output", "make_scratch", "make_state", "put_model"]
