"""Attribute overrides for a sweep: checked against a stage, authored in a layer over it.

A sweep varies attributes as authored ('/World/bob.physics:mass', or one component of a vector
attribute, '/World/bob.physics:centerOfMass[2]'), in stage units. Overrides that map to
per-world parameters (Model.param_sources) run as worlds of one model; the others (a joint
frame, a centre of mass, a start pose) change the model itself, so they are authored in the
stage's session layer and the stage is read again (the input file is never touched). A
variant's result layer carries its overrides too (``override_layer``), so usdview shows the
variant that was simulated.
"""
from __future__ import annotations

from pxr import Gf, Sdf, Usd

from usdphys.errors import UsdphysError
from usdphys.sweepspec import parse_key

_VECTORS = (Gf.Vec2d, Gf.Vec2f, Gf.Vec2h, Gf.Vec3d, Gf.Vec3f, Gf.Vec3h, Gf.Vec4d, Gf.Vec4f, Gf.Vec4h)


def _attribute(stage: Usd.Stage, key: str):
    path, name, comp = parse_key(key)
    prim = stage.GetPrimAtPath(path)
    if not prim:
        raise UsdphysError(f"no prim {path} in the stage")
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        raise UsdphysError(f"{path} has no authored attribute {name} (a sweep varies authored values)")
    if attr.GetNumTimeSamples() > 0:
        raise UsdphysError(f"{path}.{name} is time-sampled; a sweep overrides single values only")
    value = attr.Get()
    if comp is None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsdphysError(f"{path}.{name} holds a {attr.GetTypeName()}, not a number"
                               + ("; name one component, e.g. [0]" if isinstance(value, _VECTORS) else ""))
    else:
        if not isinstance(value, _VECTORS):
            raise UsdphysError(f"{path}.{name} holds a {attr.GetTypeName()}, not a vector: drop the [{comp}]")
        if comp >= len(value):
            raise UsdphysError(f"{path}.{name} has {len(value)} components; [{comp}] is out of range")
    return attr, comp, value


def check_overrides(stage: Usd.Stage, keys) -> None:
    """Every key names an authored, untimed number (or vector component) of the stage."""
    for key in keys:
        _attribute(stage, key)


def author_overrides(stage: Usd.Stage, layer: Sdf.Layer, overrides: dict) -> None:
    """Write {key: value} (stage units) into `layer` as overs of the stage's attributes, with
    the attributes' own types (a component replaces that component of the composed vector)."""
    merged: dict[tuple[str, str], tuple] = {}
    for key, v in overrides.items():
        attr, comp, value = _attribute(stage, key)
        target = tuple(parse_key(key)[:2])
        if target in merged:  # another component of the same vector was set already
            value = merged[target][2]
        if comp is None:
            value = type(value)(v)
        else:
            parts = list(value)
            parts[comp] = float(v)
            value = type(value)(*parts)
        merged[tuple(parse_key(key)[:2])] = (attr, comp, value)
    for (path, name), (attr, _, value) in merged.items():
        spec = Sdf.CreatePrimInLayer(layer, path)
        if spec.specifier != Sdf.SpecifierDef:
            spec.specifier = Sdf.SpecifierOver
        aspec = spec.attributes.get(name) or Sdf.AttributeSpec(spec, name, attr.GetTypeName(), attr.GetVariability())
        aspec.default = value


def override_in_session(stage: Usd.Stage, overrides: dict) -> None:
    """Replace what the session layer holds by these overrides (one variant's model)."""
    session = stage.GetSessionLayer()
    session.Clear()
    author_overrides(stage, session, overrides)


def override_layer(stage: Usd.Stage, overrides: dict, assembly_layer: Sdf.Layer | None = None) -> Sdf.Layer:
    """An anonymous layer with the overrides (and, beneath them, SNAP's transforms): what a
    variant's result layer carries besides its motion."""
    from usdphys.usd.record import merge_missing

    layer = Sdf.Layer.CreateAnonymous(".usda")
    author_overrides(stage, layer, overrides)
    if assembly_layer is not None:
        merge_missing(assembly_layer, layer)
    return layer


def describe_stage(path, allow_missing: bool = False) -> dict:
    """What a sweep plans with, read once: the attribute keys that are per-world parameters,
    and the bodies, joints and motors (for checking metrics)."""
    from usdphys.usd import reader
    from usdphys.usd.assemble import assemble_in_session
    from usdphys.usd.stage import open_stage

    stage = open_stage(path, allow_missing=allow_missing)
    assemble_in_session(stage)
    model, _ = reader.read_stage(stage)
    motors = list(model.elements.motors.paths) if model.elements is not None else []
    return {"stage": stage, "parameter_keys": set(model.param_sources), "bodies": list(model.body_paths),
            "joints": list(model.joint_paths), "motors": motors}


__all__ = ["author_overrides", "check_overrides", "describe_stage", "override_in_session", "override_layer"]
