"""Per-world parameters: one Model replicated W times, each world with its own physical values.

A Model describes one mechanism; ``Model.replicate(W)`` gives W worlds that share it and differ
only in their initial state. The parameters named in ``PARAMETERS`` may differ per world too:

    model = model.replicate(4)
    model.set_parameter("body.mass", [1.0, 2.0, 3.0, 4.0], index="/World/crank")  # one body, per world
    model.set_parameter("gravity", g)                   # (4, 3) or (3,) for every world
    model.set_parameter("joint.upper", up)              # (4, J, 6) or (J, 6)
    model.parameter("body.mass")                        # (4, B): what each world simulates

Values are SI and radians (the Model's own units). A parameter no world sets is the Model's
value in every world; the solver uploads it once and lets every world read it (broadcast),
so an unused parameter costs nothing per world.

Only values change per world, never the structure: a limit, drive or spring must exist in the
Model (finite limit, positive gain) for its value to vary; setting a limit to +-inf in some
worlds, or a gain on a DOF the Model does not drive, is an error when the solver builds its
rows (usdphys.solver.io). Curve / map spring laws and everything not listed here are shared.

``ParamSource`` records where a value came from in the stage (prim, attribute, stage units):
the reader fills ``Model.param_sources`` so a study can turn an attribute override, written in
the stage's own units, into a parameter entry (``source_for`` / ``override_to_si``).

NumPy and the standard library only (usdphys.types).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from usdphys.errors import UsdphysError


@dataclass(frozen=True)
class Parameter:
    """One per-world parameter: its entries (what its first axis counts), per-entry shape,
    SI unit and the values it accepts."""

    name: str
    entries: str  # "" (one value per world), "bodies", "joints", "spring_dampers", ..., "shapes"
    shape: tuple  # per entry
    unit: str
    # "positive", "nonnegative", "unit" (0..1), "finite", "bound" (finite or +-inf, not NaN),
    # "angle" (a semi-angle: 0 or more, inf: open)
    accepts: str
    doc: str


def _p(name, entries, shape, unit, accepts, doc):
    return name, Parameter(name, entries, tuple(shape), unit, accepts, doc)


PARAMETERS: dict[str, Parameter] = dict([
    _p("gravity", "", (3,), "m/s^2", "finite", "gravity vector"),
    _p("body.mass", "bodies", (), "kg", "positive", "body mass"),
    _p("body.inertia", "bodies", (3,), "kg m^2", "positive", "principal moments of inertia (the body's principal axes)"),
    _p("joint.lower", "joints", (6,), "m or rad", "bound", "lower limit per DOF (transX..rotZ); only where the Model has one"),
    _p("joint.upper", "joints", (6,), "m or rad", "bound", "upper limit per DOF; only where the Model has one"),
    _p("joint.drive_stiffness", "joints", (6,), "N/m or N m/rad", "nonnegative", "drive stiffness per DOF; only driven DOFs"),
    _p("joint.drive_damping", "joints", (6,), "N s/m or N m s/rad", "nonnegative", "drive damping per DOF; only driven DOFs"),
    _p("joint.drive_target_pos", "joints", (6,), "m or rad", "finite", "drive target position per DOF"),
    _p("joint.drive_target_vel", "joints", (6,), "m/s or rad/s", "finite", "drive target velocity per DOF"),
    _p("joint.drive_max_force", "joints", (6,), "N or N m", "positive", "drive force bound per DOF (inf: none)"),
    _p("joint.min_distance", "joints", (), "m", "bound", "distance joint minimum; only where the Model has one"),
    _p("joint.max_distance", "joints", (), "m", "bound", "distance joint maximum; only where the Model has one"),
    _p("joint.cone", "joints", (2,), "rad", "angle",
       "spherical joint cone semi-angles (coneAngle0Limit, coneAngle1Limit); only where the Model has a cone, "
       "each side keeping whether it is 0, and the cone within 180 deg"),
    _p("spring.stiffness", "spring_dampers", (), "N/m", "finite", "MbdSpringDamper k (linear law only)"),
    _p("spring.damping", "spring_dampers", (), "N s/m", "finite", "MbdSpringDamper c (linear law only)"),
    _p("spring.rest_length", "spring_dampers", (), "m", "finite", "MbdSpringDamper rest length"),
    _p("axial_spring.stiffness", "axial_spring_dampers", (), "N/m", "finite", "MbdAxialSpringDamper k"),
    _p("axial_spring.damping", "axial_spring_dampers", (), "N s/m", "finite", "MbdAxialSpringDamper c"),
    _p("axial_spring.offset", "axial_spring_dampers", (), "m", "finite", "MbdAxialSpringDamper offset"),
    _p("rotational_spring.stiffness", "rotational_spring_dampers", (), "N m/rad", "finite",
       "MbdRotationalSpringDamper k (linear law only)"),
    _p("rotational_spring.damping", "rotational_spring_dampers", (), "N m s/rad", "finite",
       "MbdRotationalSpringDamper c (linear law only)"),
    _p("rotational_spring.rest_angle", "rotational_spring_dampers", (), "rad", "finite",
       "MbdRotationalSpringDamper rest angle"),
    _p("joint_dof.armature", "joint_dofs", (), "kg or kg m^2", "nonnegative", "NewtonJointAPI armature"),
    _p("joint_dof.viscous_damping", "joint_dofs", (), "N s/m or N m s/rad", "nonnegative",
       "NewtonJointAPI viscous damping"),
    _p("joint_dof.static_friction", "joint_dofs", (), "N or N m", "nonnegative", "NewtonJointAPI static friction effort"),
    _p("joint_dof.dynamic_friction", "joint_dofs", (), "N or N m", "nonnegative",
       "NewtonJointAPI dynamic friction effort"),
    _p("shape.static_friction", "shapes", (), "1", "nonnegative", "contact material static friction coefficient"),
    _p("shape.dynamic_friction", "shapes", (), "1", "nonnegative", "contact material dynamic friction coefficient"),
    _p("shape.restitution", "shapes", (), "1", "unit", "contact material restitution coefficient, 0..1"),
])

# parameters that change the solver's constraint rows (the rest are body, gravity or contact arrays)
ROW_PARAMETERS = tuple(n for n in PARAMETERS if n.split(".")[0] in
                       ("joint", "spring", "axial_spring", "rotational_spring", "joint_dof"))

# parameter -> (elements table attribute, column) for element parameters; packed-law columns
# (k, c, x0, preload) of the spring laws are addressed as ("laws", column)
_ELEMENT_FIELDS = {
    "spring.stiffness": ("spring_dampers", ("laws", 0)),
    "spring.damping": ("spring_dampers", ("laws", 1)),
    "spring.rest_length": ("spring_dampers", ("laws", 2)),
    "axial_spring.stiffness": ("axial_spring_dampers", "stiffness"),
    "axial_spring.damping": ("axial_spring_dampers", "damping"),
    "axial_spring.offset": ("axial_spring_dampers", "offset"),
    "rotational_spring.stiffness": ("rotational_spring_dampers", ("laws", 0)),
    "rotational_spring.damping": ("rotational_spring_dampers", ("laws", 1)),
    "rotational_spring.rest_angle": ("rotational_spring_dampers", ("laws", 2)),
    "joint_dof.armature": ("joint_dofs", "armature"),
    "joint_dof.viscous_damping": ("joint_dofs", "viscous_damping"),
    "joint_dof.static_friction": ("joint_dofs", "static_friction"),
    "joint_dof.dynamic_friction": ("joint_dofs", "dynamic_friction"),
}
_MODEL_FIELDS = {
    "gravity": "gravity", "body.mass": "body_mass", "body.inertia": "body_inertia",
    "joint.lower": "joint_lower", "joint.upper": "joint_upper",
    "joint.drive_stiffness": "joint_drive_stiffness", "joint.drive_damping": "joint_drive_damping",
    "joint.drive_target_pos": "joint_drive_target_pos", "joint.drive_target_vel": "joint_drive_target_vel",
    "joint.drive_max_force": "joint_drive_max_force", "joint.min_distance": "joint_dist_min",
    "joint.max_distance": "joint_dist_max", "joint.cone": "joint_cone",
}
_SHAPE_FIELDS = {"shape.static_friction": "static_friction", "shape.dynamic_friction": "dynamic_friction",
                 "shape.restitution": "restitution"}
_SHAPE_DEFAULTS = {"static_friction": 0.5, "dynamic_friction": 0.5, "restitution": 0.0}  # solver.contact's
_SINGULAR = {"bodies": "body", "joints": "joint", "shapes": "shape", "spring_dampers": "spring damper",
             "axial_spring_dampers": "axial spring damper", "rotational_spring_dampers": "rotational spring damper",
             "joint_dofs": "joint DOF ('joint path:dof')"}
DOF_NAMES = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")


@dataclass(frozen=True)
class ParamSource:
    """Where parameter entries came from: stage attribute ``path.attribute`` (stage units, as
    authored). Each target (parameter name, index, scale) is an entry fed by it: its SI value
    is ``stage value * scale`` (scale may be a vector of the entry's shape, e.g. gravity =
    gravityMagnitude * direction). index is an entry's index into one world's parameter array
    (first item a prim path or int, then components; () for gravity). One attribute may feed
    several entries: a body mass also scales the inertia derived from it."""

    path: str
    attribute: str
    targets: tuple  # ((name, index, scale), ...)

    @property
    def key(self) -> str:
        return f"{self.path}.{self.attribute}"


def add_source(model, path: str, attribute: str, name: str, index=(), scale=1.0) -> None:
    """Record that `path.attribute` (stage units) times `scale` is entry `index` of `name`."""
    _spec(name)
    key = f"{path}.{attribute}"
    prev = model.param_sources.get(key)
    sc = float(scale) if np.ndim(scale) == 0 else tuple(float(x) for x in np.ravel(scale))
    target = (name, tuple(index) if isinstance(index, tuple) else (index,), sc)
    model.param_sources[key] = ParamSource(str(path), str(attribute), (prev.targets if prev else ()) + (target,))


def drop_sources(model, name: str, entry: str) -> None:
    """Forget the sources of `name` entries of `entry` (its value no longer follows the attribute)."""
    for key, src in list(model.param_sources.items()):
        if any(t[0] == name and t[1][:1] == (entry,) for t in src.targets):
            del model.param_sources[key]


def _entry_names(model, entries: str) -> list[str]:
    if entries == "bodies":
        return list(model.body_paths)
    if entries == "joints":
        return list(model.joint_paths)
    if entries == "shapes":
        return list(model.shapes.paths) if model.shapes is not None else []
    el = model.elements
    if el is None:
        return []
    table = getattr(el, entries)
    if entries == "joint_dofs":  # one entry per (joint, DOF): 'joint path:dof token'
        return [f"{p}:{d}" for p, d in zip(table.joint_paths, table.dof)]
    return list(table.paths)


def base_values(model, name: str) -> np.ndarray:
    """The Model's own values of parameter `name`: (n, *shape), or (*shape) for gravity."""
    spec = _spec(name)
    if name in _MODEL_FIELDS:
        a = np.asarray(getattr(model, _MODEL_FIELDS[name]), float)
        return a.reshape((-1,) + spec.shape) if spec.entries else a.reshape(spec.shape)
    if name in _SHAPE_FIELDS:
        table = model.shapes
        if table is None:
            return np.zeros(0)
        col = getattr(table, _SHAPE_FIELDS[name], None)
        n = len(table)
        return np.full(n, _SHAPE_DEFAULTS[_SHAPE_FIELDS[name]]) if col is None else np.asarray(col, float).reshape(n)
    table_name, field = _ELEMENT_FIELDS[name]
    el = model.elements
    if el is None:
        return np.zeros(0)
    table = getattr(el, table_name)
    if isinstance(field, tuple):
        return np.asarray(table.laws.law_f, float).reshape(-1, 4)[: len(table), field[1]].copy()
    return np.asarray(getattr(table, field), float).reshape(len(table)).copy()


def _spec(name: str) -> Parameter:
    spec = PARAMETERS.get(name)
    if spec is None:
        raise UsdphysError(f"unknown parameter '{name}'; expected one of: {', '.join(PARAMETERS)}")
    return spec


def _check_values(name: str, spec: Parameter, values: np.ndarray) -> None:
    if spec.accepts == "bound":
        bad = np.isnan(values)
    elif spec.accepts == "positive":
        bad = ~(values > 0)  # NaN too
        if name != "joint.drive_max_force":  # the one positive parameter that may be inf (no bound)
            bad |= np.isinf(values)
    elif spec.accepts == "nonnegative":
        bad = ~np.isfinite(values) | (values < 0)
    elif spec.accepts == "angle":
        bad = ~(values >= 0)  # NaN too
    elif spec.accepts == "unit":
        bad = ~np.isfinite(values) | (values < 0) | (values > 1)
    else:
        bad = ~np.isfinite(values)
    if np.any(bad):
        v = float(values[bad].flat[0])  # 'inf', not numpy's 'np.float64(inf)'
        what = {"unit": "in [0, 1]", "angle": "0 or more (inf: open)"}.get(spec.accepts, spec.accepts)
        raise UsdphysError(f"parameter '{name}': value {v!r} is not {what} ({spec.unit})")


def _resolve_index(model, name: str, spec: Parameter, index) -> tuple:
    """index: an int, an entry name (prim path; 'path:dof' for joint_dofs), or a tuple of those
    and ints / DOF names for the per-entry components -> tuple of ints."""
    if not isinstance(index, tuple):
        index = (index,)
    names = _entry_names(model, spec.entries) if spec.entries else []
    out = []
    for k, i in enumerate(index):
        if k == 0 and spec.entries:
            n = len(names)
            if isinstance(i, str):
                if i not in names:
                    raise UsdphysError(f"parameter '{name}': no {_SINGULAR[spec.entries]} '{i}' in the model")
                i = names.index(i)
        else:
            n = spec.shape[k - (1 if spec.entries else 0)] if k - (1 if spec.entries else 0) < len(spec.shape) else 0
            if isinstance(i, str) and i in DOF_NAMES and n == 6:
                i = DOF_NAMES.index(i)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < n:
            raise UsdphysError(f"parameter '{name}': index {index!r} is out of range")
        out.append(int(i))
    return tuple(out)


def set_parameter(model, name: str, values, index=None) -> None:
    """Set parameter `name` of every world of `model` (in place).

    index None: values is (W, *full) or (*full) for every world, full = (entries, *shape);
    else values is (W, *rest) or (*rest) for the entry (and components) that index names."""
    spec = _spec(name)
    W = model.world_count
    base = base_values(model, name)
    stored = model.world_parameters.get(name)
    if stored is not None and stored.shape != (W,) + base.shape:
        raise UsdphysError(f"parameter '{name}' was set for {stored.shape[0]} worlds of shape {stored.shape[1:]}; the "
                           f"model now has {W} worlds of shape {base.shape}: set it again after replicate / editing")
    if spec.entries and base.shape[0] == 0:
        raise UsdphysError(f"parameter '{name}': the model has no {spec.entries.replace('_', ' ')}")
    try:
        vals = np.asarray(values, float)
    except (TypeError, ValueError):
        raise UsdphysError(f"parameter '{name}': values must be numbers") from None
    if index is None and vals.shape == (W,) + base.shape:  # every value given: nothing of the old kept
        cur, sel = None, None
    else:
        cur = np.array(model.world_parameters.get(name, np.broadcast_to(base, (W,) + base.shape)), float)
        if index is None:
            target = cur.shape[1:]
            sel = (slice(None),)
        else:
            idx = _resolve_index(model, name, spec, index)
            target = cur[(0,) + idx].shape
            sel = (slice(None),) + idx
        if vals.shape == target:
            vals = np.broadcast_to(vals, (W,) + target)
        elif vals.shape != (W,) + target:
            raise UsdphysError(f"parameter '{name}': values of shape {vals.shape} given; expected {(W,) + target} "
                               f"(per world) or {target} (every world)")
    _check_values(name, spec, vals)
    if cur is None:
        cur = np.array(vals)  # the model's own copy (the caller may reuse its array)
    else:
        cur[sel] = vals
    _check_linear_laws(model, name, cur, base)
    model.world_parameters[name] = cur


def _check_linear_laws(model, name: str, values: np.ndarray, base: np.ndarray) -> None:
    """Spring law columns vary only for linear laws: a curve or map law reads its packed table,
    which every world shares (the varied value would be ignored)."""
    field = _ELEMENT_FIELDS.get(name, (None, None))[1]
    if not isinstance(field, tuple):
        return
    table = getattr(model.elements, _ELEMENT_FIELDS[name][0])
    law_i = np.asarray(table.laws.law_i).reshape(-1, 7)
    changed = np.flatnonzero(np.any(values != base[None], axis=0))
    for e in changed:
        if law_i[e, 1] != 0 or law_i[e, 3] != 0 or law_i[e, 5] != 0:
            raise UsdphysError(f"parameter '{name}': {table.paths[e]} uses a curve or map law; only linear "
                               "spring laws vary per world")


def parameter(model, name: str) -> np.ndarray:
    """(W, ...) values of parameter `name` each world simulates (a copy of the caller's own)."""
    return np.array(parameter_view(model, name), float)


def parameter_view(model, name: str) -> np.ndarray:
    """parameter()'s values without the copy, for reading only: the stored array where a world
    sets them (a batch of thousands of worlds holds tens of MB), else the model's own values
    broadcast to every world."""
    if name in model.world_parameters:
        return np.asarray(model.world_parameters[name], float)
    base = base_values(model, name)
    return np.broadcast_to(base[None], (model.world_count,) + np.shape(base)) if _spec(name).entries or base.ndim \
        else base


class StructureChangeError(UsdphysError):
    """Per-world values that would add or remove a row: they cannot be a world of this model
    (a sweep then runs such a variant as a model of its own). world: the first such world."""

    def __init__(self, message: str, world: int):
        super().__init__(message)
        self.world = int(world)

    def __reduce__(self):  # picklable (a worker process may hand it back)
        return self.__class__, (str(self), self.world)


def structure_change_error(what: str, world: int, names) -> StructureChangeError:
    """The error for per-world values that would add or remove a row (a limit, drive or spring)
    in some world: `what` names the row's prim, `names` the parameters set."""
    return StructureChangeError(
        f"{what}: the per-world parameters of world {world} ({', '.join(names)}) change which limits, drives "
        "or springs exist; a world may change their values only (keep limits finite and gains positive "
        "where the model has them, +-inf / 0 where it has none)", world)


def check_world_parameters(model) -> None:
    """Every stored parameter has the model's world count and entry count (a Model edited
    after set_parameter, e.g. replicated again, is caught here)."""
    for name, vals in model.world_parameters.items():
        base = base_values(model, name)
        if vals.shape != (model.world_count,) + base.shape:
            raise UsdphysError(f"parameter '{name}' holds values for {vals.shape[0]} worlds of shape {vals.shape[1:]}, "
                               f"the model has {model.world_count} worlds of shape {base.shape}; set it again")


def _apply(model, name: str, values: np.ndarray) -> None:
    """Write one world's values of `name` into a (shallow-copied) single-world model."""
    if name in _MODEL_FIELDS:
        setattr(model, _MODEL_FIELDS[name], np.array(values, float))
        return
    if name in _SHAPE_FIELDS:
        model.shapes = dataclasses.replace(model.shapes, **{_SHAPE_FIELDS[name]: np.array(values, float)})
        return
    table_name, field = _ELEMENT_FIELDS[name]
    table = getattr(model.elements, table_name)
    if isinstance(field, tuple):
        law_f = np.array(table.laws.law_f, float).reshape(-1, 4)
        law_f[: len(table), field[1]] = values
        table = dataclasses.replace(table, laws=dataclasses.replace(table.laws, law_f=law_f))
    else:
        table = dataclasses.replace(table, **{field: np.array(values, float)})
    model.elements = dataclasses.replace(model.elements, **{table_name: table})


def world_model(model, w: int, names=None):
    """World `w` of `model` as a single-world Model: its initial state and its parameter values
    (only `names` when given). Shares every array it does not change."""
    import copy

    if not 0 <= w < model.world_count:
        raise UsdphysError(f"world {w} out of range (0..{model.world_count - 1})")
    out = copy.copy(model)
    for attr in ("body_pos", "body_rot", "body_lin_vel", "body_ang_vel"):
        setattr(out, attr, np.asarray(getattr(model, attr))[w: w + 1].copy())
    out.world_parameters = {}
    for name, vals in model.world_parameters.items():
        if names is None or name in names:
            _apply(out, name, vals[w])
    return out


def source_for(model, path: str, attribute: str) -> ParamSource:
    """The ParamSource of a stage attribute (prim path + attribute name as authored)."""
    key = f"{path}.{attribute}"
    src = model.param_sources.get(key)
    if src is None:
        known = sorted(model.param_sources)
        hint = f"; parameters come from e.g. {', '.join(known[:4])}" if known else ""
        raise UsdphysError(f"{key}: not a per-world parameter of this model (not authored, not simulated, or not a "
                           f"parameter){hint}")
    return src


def split_attribute_path(text: str) -> tuple[str, str]:
    """'/M/Bodies/crank.physics:mass' -> ('/M/Bodies/crank', 'physics:mass') (prim names have no '.')."""
    head, _, tail = str(text).rpartition("/")
    prim, dot, attr = tail.partition(".")
    if not head and not prim or not dot or not attr:
        raise UsdphysError(f"'{text}': expected a prim path and an attribute, e.g. /World/crank.physics:mass")
    return f"{head}/{prim}", attr


def apply_override(model, path: str, attribute: str, values) -> None:
    """Set the entries fed by stage attribute `path.attribute` from `values` in stage units:
    one value for every world or one per world (W,)."""
    src = source_for(model, path, attribute)
    W = model.world_count
    try:
        v = np.asarray(values, float)
    except (TypeError, ValueError):
        raise UsdphysError(f"{src.key}: override values must be numbers") from None
    if v.shape not in ((), (W,)):
        raise UsdphysError(f"{src.key}: override of shape {v.shape}; expected one value or {W} (one per world)")
    if not np.all(np.isfinite(v)):
        raise UsdphysError(f"{src.key}: override values must be finite numbers")
    v = np.broadcast_to(v, (W,))
    for name, index, scale in src.targets:
        scale = np.asarray(scale, float)
        si = v.reshape((W,) + (1,) * scale.ndim) * scale
        set_parameter(model, name, si, index=index if index else None)


__all__ = ["PARAMETERS", "ROW_PARAMETERS", "ParamSource", "Parameter", "add_source", "apply_override", "drop_sources", "base_values",
           "check_world_parameters", "parameter", "set_parameter", "source_for", "split_attribute_path", "StructureChangeError", "structure_change_error",
           "world_model"]
