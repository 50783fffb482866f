"""Stage -> Model: UsdPhysics parsed by usd-core, our own schemas read from the prims.

Units: every value is converted to SI here (metersPerUnit, kilogramsPerUnit, UsdPhysics
degrees -> radians), so the solver never sees stage units. Velocities: physics:velocity
is read as the world-frame linear velocity of the centre of mass (distance / s) and
physics:angularVelocity as a world-frame angular velocity in DEGREES / s (UsdPhysics
writes "in the same space as the node's xform"; for bodies under an unrotated parent,
the usual case, that is the world frame; PhysX reads it that way too).

usd-core's UsdPhysics parser does the first pass; each concept has its module:

- usdphys.usd.reader.validate: impossible values (errors) and stray relationships (warnings) first;
- usdphys.usd.reader.bodies: rigid bodies, pose, velocities, mass properties;
- usdphys.usd.reader.joints: UsdPhysics and composite joints (limits, drives, frames);
- usdphys.usd.reader.stacked: 1-DOF joints stacked on one body pair (MJCF) -> one joint;
- usdphys.usd.reader.elements: force elements, loads, motors, bushings, NewtonJointAPI;
- usdphys.usd.reader.shapes: collision shapes, materials, collision filtering.

This module runs them in order (joints need body indices, elements need joint indices)
and reads the scene. What the solver does not simulate yet is named once per prim in a
warning, never dropped silently.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError, warn
from usdphys.types.model import Model
from usdphys.types.params import add_source, drop_sources
from usdphys.usd.gfconv import vec3
from usdphys.usd.reader.bodies import read_bodies, world_scale
from usdphys.usd.reader.joints import read_joints
from usdphys.usd.reader.mujoco import disabled_flags, name_unsimulated
from usdphys.usd.reader.stacked import drop_welded_dof_elements, merge_stacked_joints, remap_elements
from usdphys.usd.reader.validate import validate_stage
from usdphys.usd.tokens import Tokens

STANDARD_GRAVITY = 9.81  # m/s^2, when no PhysicsScene (or no valid magnitude) is authored
# MbdSimulationAPI attributes on the scene -> StageDefaults fields
_SIMULATION_DEFAULTS = ((Tokens.mbdTimeStep, "time_step"), (Tokens.mbdEndTime, "end_time"))
_CONTACT_METHODS = (Tokens.nsc, Tokens.smc)


@dataclass
class StageDefaults:
    """Simulation defaults found on the stage (MbdSimulationAPI); None when unauthored."""

    time_step: float | None = None
    end_time: float | None = None
    scene_path: str | None = None  # the PhysicsScene used (gravity); recorded world quantities go there


from usdphys.usd.stage import open_stage  # noqa: E402,F401  (one opener for every command; kept importable here)


class _Warner:
    """Warn once per (prim, topic)."""

    def __init__(self):
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, path, topic: str, message: str) -> None:
        key = (str(path), topic)
        if key not in self.seen:
            self.seen.add(key)
            warn(f"{path}: {message}")


def _load(stage: Usd.Stage):
    fn = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None)
    if fn is not None:
        return fn(stage, [Sdf.Path.absoluteRootPath])
    return UsdPhysics.LoadUsdPhysicsFromRange(stage, [Sdf.Path.absoluteRootPath])


# ---------------------------------------------------------------------------- main
# Stage unit metadata: every length, mass and time is multiplied by these, so a value far
# outside this range turns into inf or 0 (powers of metersPerUnit included) rather than a unit.
UNIT_SCALE_RANGE = (1e-12, 1e12)


def _unit_scale(source: str, key: str, value) -> float:
    v = float(value)
    lo, hi = UNIT_SCALE_RANGE
    if not (math.isfinite(v) and lo <= v <= hi):
        raise UsdphysError(f"{source}: stage metadata {key} = {value:g}: expected a positive number "
                           f"between {lo:g} and {hi:g}")
    return v


def read_stage(stage: Usd.Stage | str | os.PathLike) -> tuple[Model, StageDefaults]:
    """Read a stage (or a file path) into a one-world Model plus the stage's defaults."""
    if not isinstance(stage, Usd.Stage):
        stage = open_stage(stage)
    source = stage.GetRootLayer().identifier
    warner = _Warner()
    mpu = _unit_scale(source, "metersPerUnit", UsdGeom.GetStageMetersPerUnit(stage))
    kpu = _unit_scale(source, "kilogramsPerUnit", UsdPhysics.GetStageKilogramsPerUnit(stage))
    _unit_scale(source, "timeCodesPerSecond", stage.GetTimeCodesPerSecond())
    try:
        parsed = _load(stage)
    except Exception as exc:
        raise UsdphysError(f"{source}: UsdPhysics could not parse the stage ({exc})") from None

    by_type: dict[str, list] = {}
    for otype, (paths, descs) in parsed.items():
        name = str(otype).split(".")[-1]
        for p, d in zip(paths, descs):
            by_type.setdefault(name, []).append((p, d))

    model = Model()
    model.source = source
    model.meters_per_unit = mpu
    model.kilograms_per_unit = kpu
    defaults = StageDefaults()

    validate_stage(stage, by_type)  # impossible values: one-line errors before anything is read
    _read_scene(stage, by_type.get("Scene", []), model, defaults, warner)
    # usd-core's collider descriptions: the bodies' masses come from them
    shapes = {p: (name, d) for name, items in by_type.items() if name.endswith("Shape") for p, d in items}
    index, static_bodies = read_bodies(stage, by_type.get("RigidBody", []), shapes, model, mpu, kpu, warner)
    read_joints(stage, by_type, model, index, mpu, kpu, warner)
    merged, welded, left_drives = merge_stacked_joints(stage, model)
    _read_elements(stage, model, index, static_bodies, merged, welded, left_drives)
    scenes = by_type.get("Scene", [])
    mujoco_off = disabled_flags(stage.GetPrimAtPath(scenes[0][0]) if scenes else None)
    if "contact" in mujoco_off:
        model.shapes = None  # mjc:flag:contact = false: the model is meant without contact
    else:
        _read_contact(stage, model, index, by_type)
    if "gravity" in mujoco_off:
        model.gravity = np.zeros(3)
    if "limit" in mujoco_off:
        model.joint_lower[:] = -np.inf
        model.joint_upper[:] = np.inf
    name_unsimulated(stage)
    if model.body_count == 0:
        warn(f"{source}: no dynamic rigid body (UsdPhysics RigidBodyAPI) to simulate")
    return model, defaults


def _read_scene(stage: Usd.Stage, scenes: list, model: Model, defaults: StageDefaults, warner) -> None:
    """Gravity (SI) from the first PhysicsScene and MbdSimulationAPI's time step / end time."""
    source = model.source
    mpu = model.meters_per_unit
    up = UsdGeom.GetStageUpAxis(stage)
    up_vec = np.array([0, 1.0, 0]) if up == UsdGeom.Tokens.y else np.array([0, 0, 1.0])
    if not scenes:
        model.gravity = -up_vec * STANDARD_GRAVITY
        warn(f"{source}: no PhysicsScene; using standard gravity 9.81 m/s^2 along -{up}")
        return
    spath, sdesc = scenes[0]
    defaults.scene_path = str(spath)
    if len(scenes) > 1:
        warner(spath, "scenes", f"{len(scenes)} PhysicsScene prims; using this one for gravity for every body")
    gdir = vec3(sdesc.gravityDirection)
    n = np.linalg.norm(gdir)
    gdir = gdir / n if n > 0 else -up_vec
    gmag = float(sdesc.gravityMagnitude)
    # usd-core reports an unauthored magnitude as -inf: the standard value
    authored = math.isfinite(gmag) and gmag >= 0
    gmag = gmag * mpu if authored else STANDARD_GRAVITY
    model.gravity = gdir * gmag
    if authored:
        add_source(model, str(spath), "physics:gravityMagnitude", "gravity", (), gdir * mpu)
    sprim = stage.GetPrimAtPath(spath)
    for name, field in _SIMULATION_DEFAULTS:
        attr = sprim.GetAttribute(name)
        if attr and attr.HasAuthoredValue():
            val = attr.Get()
            if val is None or not math.isfinite(val) or val <= 0:
                raise UsdphysError(f"{source}: {spath}.{name} = {val}: expected a positive number of seconds")
            setattr(defaults, field, float(val))


def _read_elements(stage, model: Model, index: dict, static_bodies: set, merged: dict, welded: set,
                   left_drives: set) -> None:
    """Model.elements from usdphys.usd.reader.elements (SI, body PRIM frames); spring masses lumped."""
    from usdphys.usd.reader.elements import read_elements

    def body_index(path: str) -> int:
        if path in index:
            return index[path]
        if path in static_bodies:
            return -1
        raise KeyError(path)

    joints = {p: j for j, p in enumerate(model.joint_paths)}
    joints.update({p: j for p, (j, _, _) in merged.items()})  # stacked joints -> their merged joint
    elements = read_elements(stage, body_index, lambda p: joints.get(p, -1),
                             lambda p: world_scale(stage.GetPrimAtPath(p)))
    remap_elements(elements, merged)
    drop_welded_dof_elements(elements, welded, left_drives)
    model.elements = elements
    _record_element_sources(model, elements)


def _record_element_sources(model: Model, el) -> None:
    """Per-world parameter provenance of the spring-damper attributes (usdphys.types.params)."""
    from usdphys.types.elements import DEG, PER_DEG_TO_PER_RAD

    u = el.units
    specs = (
        (el.spring_dampers, "spring", ((Tokens.mbdStiffness, "stiffness", u.mass), (Tokens.mbdDamping, "damping", u.mass),
                                       (Tokens.mbdRestLength, "rest_length", u.length))),
        (el.axial_spring_dampers, "axial_spring", ((Tokens.mbdStiffness, "stiffness", u.mass),
                                                   (Tokens.mbdDamping, "damping", u.mass),
                                                   (Tokens.mbdOffset, "offset", u.length))),
        (el.rotational_spring_dampers, "rotational_spring",
         ((Tokens.mbdStiffness, "stiffness", u.torque * PER_DEG_TO_PER_RAD),
          (Tokens.mbdDamping, "damping", u.torque * PER_DEG_TO_PER_RAD), (Tokens.mbdRestAngle, "rest_angle", DEG))),
    )
    for table, prefix, attrs in specs:
        for path in table.paths:
            for attr, field, scale in attrs:
                add_source(model, path, str(attr), f"{prefix}.{field}", (path,), scale)


def _read_contact(stage, model: Model, index: dict, by_type: dict) -> None:
    """Model.shapes (usdphys.usd.reader.shapes.read_shapes), contact_method and contact_exclude.

    Joints with physics:collisionEnabled = false (the UsdPhysics default) stop contact between
    the bodies they join: two simulated bodies become an excluded body pair; a simulated body
    jointed to a static prim (static body, collider) loses contact with that prim's shapes only
    (filtered shape pairs), not with the rest of the static world.
    """
    from usdphys.usd.reader.shapes import read_shapes

    scenes = by_type.get("Scene", [])
    if scenes:
        sprim = stage.GetPrimAtPath(scenes[0][0])
        attr = sprim.GetAttribute(Tokens.mbdContactMethod) if sprim else None
        if attr and attr.HasAuthoredValue():
            method = str(attr.Get())
            if method not in _CONTACT_METHODS:
                raise UsdphysError(f"{scenes[0][0]}: {Tokens.mbdContactMethod} = {method!r}: expected 'nsc' or 'smc'")
            model.contact_method = method
    table = read_shapes(stage, lambda path: index.get(str(path), -1))
    exclude = set()
    if len(table):
        for kind, items in by_type.items():
            if not kind.endswith("Joint"):
                continue
            for p, d in items:
                if not getattr(d, "jointEnabled", True) or getattr(d, "collisionEnabled", False):
                    continue
                sides = []
                for body in (d.body0, d.body1):
                    key = str(body) if body and not body.isEmpty else ""
                    sides.append((index.get(key, -1), key))
                (b0, p0), (b1, p1) = sides
                if b0 >= 0 and b1 >= 0:
                    exclude.add((min(b0, b1), max(b0, b1)))
                    continue
                for (b, _), (_, other) in (((b0, p0), (b1, p1)), ((b1, p1), (b0, p0))):
                    if b < 0 or not other:
                        continue
                    mine = [s for s in range(len(table)) if int(table.body[s]) == b]
                    theirs = [s for s, sp in enumerate(table.paths) if int(table.body[s]) < 0
                              and (sp == other or sp.startswith(other + "/"))]
                    for i in mine:
                        for j in theirs:
                            table.filtered_pairs.add((min(i, j), max(i, j)))
    model.shapes = table if len(table) else None
    model.contact_exclude = sorted(exclude)
    if model.shapes is not None:
        _record_material_sources(stage, model, table)


def _record_material_sources(stage, model: Model, table) -> None:
    """Per-world parameter provenance of the physics materials: each attribute feeds every
    shape bound to the material (a dynamic friction authored alone is the static one too)."""
    for s, mpath in enumerate(getattr(table, "material_paths", None) or []):
        if mpath is None:
            continue
        api = UsdPhysics.MaterialAPI(stage.GetPrimAtPath(mpath))
        shape = table.paths[s]
        add_source(model, mpath, "physics:dynamicFriction", "shape.dynamic_friction", (shape,))
        add_source(model, mpath, "physics:restitution", "shape.restitution", (shape,))
        static_from_dynamic = (not api.GetStaticFrictionAttr().HasAuthoredValue()
                               and api.GetDynamicFrictionAttr().HasAuthoredValue())
        add_source(model, mpath, "physics:dynamicFriction" if static_from_dynamic else "physics:staticFriction",
                   "shape.static_friction", (shape,))
