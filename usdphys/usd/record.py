"""Results -> a NEW USD layer that sublayers the input and holds only body time samples.

For every simulated body prim the layer has an `over` with
    double3 xformOp:translate.timeSamples, quatd xformOp:orient.timeSamples
    uniform token[] xformOpOrder = [(!resetXformStack!,) translate, orient, (scale)]
Local transforms account for the parent's (possibly simulated) world transform; an
authored xformOp:scale is kept as it is, a scale hidden in another op (matrix, etc.) is
re-authored as xformOp:scale. Time code = frame index; timeCodesPerSecond =
framesPerSecond = fps. The input's stage metadata (upAxis, metersPerUnit,
kilogramsPerUnit, defaultPrim) is repeated because USD reads it from the root layer only.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

from usdphys.errors import UsdphysError
from usdphys.math3d import matrix_to_quat, polar_matrix, quat_sign_continuous, quat_to_matrix
from usdphys.usd.gfconv import matrix_from_gf, quat_to_gf
from usdphys.usd.stage import check_output_path, copy_stage_metadata, export_layer_atomic, new_layer_over


def build_layer(stage: Usd.Stage, body_paths: list[str], positions: np.ndarray, orientations: np.ndarray,
                fps: float, output_path: str | os.PathLike, meters_per_unit: float) -> Sdf.Layer:
    """Layer for one world: positions (F, B, 3) metres, orientations (F, B, 4) xyzw, world prim frames."""
    root = stage.GetRootLayer()
    if root.anonymous or not root.realPath:
        raise UsdphysError("writing a result needs a stage opened from a file (the result sublayers it)")
    frames = positions.shape[0]
    layer = new_layer_over(root.realPath, output_path)
    # The time metadata is the result's own (time code = frame index), not the input's.
    copy_stage_metadata(root, layer, ("upAxis", "metersPerUnit", "kilogramsPerUnit", "defaultPrim"))
    layer.timeCodesPerSecond = fps
    layer.framesPerSecond = fps
    layer.startTimeCode = 0
    layer.endTimeCode = frames - 1
    # Units stated even where the input leaves them to USD's fallbacks: the result reads
    # the same under any fallback configuration.
    resolved = {
        "upAxis": UsdGeom.GetStageUpAxis(stage),
        "metersPerUnit": float(UsdGeom.GetStageMetersPerUnit(stage)),
        "kilogramsPerUnit": float(UsdPhysics.GetStageKilogramsPerUnit(stage)),
    }
    for key, value in resolved.items():
        if not layer.pseudoRoot.HasInfo(key):
            layer.pseudoRoot.SetInfo(key, value)
    layer.comment = "usdphys simulate: body transforms as time samples over the sublayered input"

    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    index = {p: i for i, p in enumerate(body_paths)}
    inv_mpu = 1.0 / meters_per_unit
    # world affine per body per frame (stage units, column convention, with the body's scale)
    world_aff: dict[str, np.ndarray] = {}
    order = sorted(body_paths, key=lambda p: p.count("/"))
    for path in order:
        prim = stage.GetPrimAtPath(path)
        if not prim:
            raise UsdphysError(f"{path}: body prim not found in the input stage")
        i = index[path]
        m0 = matrix_from_gf(cache.GetLocalToWorldTransform(prim))
        lin0 = m0[:3, :3]
        pos = positions[:, i] * inv_mpu
        rot = orientations[:, i]
        R = quat_to_matrix(rot)  # (F, 3, 3)
        R0 = R[0]
        # world linear part keeps the authored scale: R(t) R(0)^T L0
        lin = R @ (R0.T @ lin0)
        aff = np.zeros((frames, 4, 4))
        aff[:, :3, :3] = lin
        aff[:, :3, 3] = pos
        aff[:, 3, 3] = 1.0
        world_aff[path] = aff

        xf = UsdGeom.Xformable(prim)
        reset = bool(xf.GetResetXformStack()) if xf else False
        # parent world transform per frame
        parent = prim.GetParent()
        anc = parent
        sim_anc = None
        while anc and not anc.IsPseudoRoot():
            if str(anc.GetPath()) in world_aff:
                sim_anc = str(anc.GetPath())
                break
            anc = anc.GetParent()
        if reset:
            P = np.broadcast_to(np.eye(4), (frames, 4, 4))
        elif sim_anc is None:
            P = np.broadcast_to(matrix_from_gf(cache.GetLocalToWorldTransform(parent)), (frames, 4, 4))
        else:
            A0 = matrix_from_gf(cache.GetLocalToWorldTransform(stage.GetPrimAtPath(sim_anc)))
            rel = np.linalg.inv(A0) @ matrix_from_gf(cache.GetLocalToWorldTransform(parent))
            P = world_aff[sim_anc] @ rel
        local = np.linalg.inv(P) @ aff
        t_local = local[:, :3, 3]
        # rotation of the local linear part (polar; scale kept separately)
        rl = polar_matrix(local[:, :3, :3])
        # continuous sign: a viewer interpolating between frames never turns 360 degrees
        q_local = quat_sign_continuous([matrix_to_quat(r) for r in rl])

        spec = Sdf.CreatePrimInLayer(layer, path)
        spec.specifier = Sdf.SpecifierOver
        t_attr = Sdf.AttributeSpec(spec, "xformOp:translate", Sdf.ValueTypeNames.Double3)
        o_attr = Sdf.AttributeSpec(spec, "xformOp:orient", Sdf.ValueTypeNames.Quatd)
        for f in range(frames):
            layer.SetTimeSample(t_attr.path, float(f), Gf.Vec3d(*t_local[f]))
            layer.SetTimeSample(o_attr.path, float(f), quat_to_gf(q_local[f], Gf.Quatd))
        ops = (["!resetXformStack!"] if reset else []) + ["xformOp:translate", "xformOp:orient"]
        local0 = matrix_from_gf(xf.GetLocalTransformation(Usd.TimeCode.Default())) if xf else np.eye(4)
        scale = np.linalg.norm(local0[:3, :3], axis=0)
        has_scale_op = prim.HasAttribute("xformOp:scale")
        if has_scale_op:
            ops.append("xformOp:scale")
        elif np.any(np.abs(scale - 1.0) > 1e-9):
            s_attr = Sdf.AttributeSpec(spec, "xformOp:scale", Sdf.ValueTypeNames.Double3)
            s_attr.default = Gf.Vec3d(*scale)
            ops.append("xformOp:scale")
        order_attr = Sdf.AttributeSpec(spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray,
                                       Sdf.VariabilityUniform)
        order_attr.default = Vt.TokenArray(ops)
    return layer


def merge_missing(src: Sdf.Layer, dst: Sdf.Layer) -> None:
    """Copy src's opinions into dst as overs wherever dst has none (dst's own ones win)."""

    def visit(path: Sdf.Path) -> None:
        spec = src.GetObjectAtPath(path)
        if path.IsPrimPath():
            if not dst.GetPrimAtPath(path):
                Sdf.CreatePrimInLayer(dst, path).specifier = Sdf.SpecifierOver
            for prop in spec.properties:
                if not dst.GetObjectAtPath(prop.path):
                    Sdf.CopySpec(src, prop.path, dst, prop.path)
            for child in spec.nameChildren:
                visit(child.path)

    for child in src.pseudoRoot.nameChildren:
        visit(child.path)


def add_channels(stage: Usd.Stage, layer: Sdf.Layer, channels, world: int, meters_per_unit: float) -> None:
    """Recorded quantities of one world as time samples (time code = frame index).

    Body velocities go to UsdPhysics' own physics:velocity / physics:angularVelocity (vector3f,
    stage distance units per second and degrees per second, world axes, the centre of mass's
    velocity: what usdphys' reader takes as an initial velocity). Every other quantity is a
    custom double / double3 (bool for limit flags) attribute usdphys:out:<name> in the units its
    customData['units'] states: SI, angles in degrees (docs/recording.md)."""
    for ch in channels:
        prim = stage.GetPrimAtPath(ch.prim)
        spec = layer.GetPrimAtPath(ch.prim)
        if not spec:
            spec = Sdf.CreatePrimInLayer(layer, ch.prim)
            # a prim the input lacks (world values of a stage with neither scene nor default prim)
            spec.specifier = Sdf.SpecifierOver if prim else Sdf.SpecifierDef
            if not prim:
                spec.typeName = "Scope"
        values = np.asarray(ch.values)[:, world]
        if ch.usd_name.startswith("physics:"):
            scale = 1.0 / meters_per_unit if ch.unit == "m/s" else 1.0
            attr = Sdf.AttributeSpec(spec, ch.usd_name, Sdf.ValueTypeNames.Vector3f)
            for f in range(values.shape[0]):
                layer.SetTimeSample(attr.path, float(f), Gf.Vec3f(*(values[f] * scale)))
            continue
        if ch.unit == "1":
            attr = Sdf.AttributeSpec(spec, ch.attribute, Sdf.ValueTypeNames.Bool, Sdf.VariabilityVarying, True)
            convert = bool
        elif ch.is_vector:
            attr = Sdf.AttributeSpec(spec, ch.attribute, Sdf.ValueTypeNames.Double3, Sdf.VariabilityVarying, True)
            convert = lambda v: Gf.Vec3d(*v)  # noqa: E731
        else:
            attr = Sdf.AttributeSpec(spec, ch.attribute, Sdf.ValueTypeNames.Double, Sdf.VariabilityVarying, True)
            convert = float
        attr.customData = {"units": ch.unit, "quantity": ch.quantity, "group": ch.group}
        for f in range(values.shape[0]):
            layer.SetTimeSample(attr.path, float(f), convert(values[f]))


def write_result(stage: Usd.Stage, body_paths, positions, orientations, fps, output_path, meters_per_unit,
                 input_path=None, extra_layer: Sdf.Layer | None = None, channels=(), world: int = 0) -> Path:
    """Build the layer and write it atomically; never overwrites the input.

    extra_layer (e.g. the session layer holding SNAP's solved transforms) is merged under
    the time samples, so the result shows the same assembled stage the solver saw.
    channels: recorded quantities (usdphys.types.recording.Channel) written for `world`.
    """
    out = check_output_path(output_path, input_path or stage.GetRootLayer().realPath)
    layer = build_layer(stage, body_paths, positions, orientations, fps, out, meters_per_unit)
    if channels:
        add_channels(stage, layer, channels, world, meters_per_unit)
    if extra_layer is not None:
        merge_missing(extra_layer, layer)
    export_layer_atomic(layer, out)
    return out


def read_channels(path: str | os.PathLike):
    """The recorded quantities of a result layer (add_channels' attributes, read from the
    layer alone, not the composed stage): (times in seconds, [Channel]) with values
    (frames, 1[, 3]) in the table's units (SI, degrees)."""
    from usdphys.types.recording import OUT_NAMESPACE, Channel

    layer = Sdf.Layer.FindOrOpen(os.fspath(path))
    if layer is None:
        raise UsdphysError(f"{path}: cannot open as a USD layer")
    fps = float(layer.timeCodesPerSecond or 24.0)
    mpu = float(layer.pseudoRoot.GetInfo("metersPerUnit")) if layer.pseudoRoot.HasInfo("metersPerUnit") else 0.01
    channels, frames = [], 0
    velocity = {"physics:velocity": ("velocity", "bodies", "velocity", "m/s", mpu),
                "physics:angularVelocity": ("angularVelocity", "bodies", "angular velocity", "deg/s", 1.0)}

    def visit(spec):
        nonlocal frames
        for prop in spec.properties:
            name = prop.name
            if not isinstance(prop, Sdf.AttributeSpec):
                continue
            times = layer.ListTimeSamplesForPath(prop.path)
            if not times:
                continue
            if name in velocity:
                short, group, quantity, unit, scale = velocity[name]
            elif name.startswith(OUT_NAMESPACE):
                data = dict(prop.customData)
                short, group, quantity, unit, scale = (name[len(OUT_NAMESPACE):], data.get("group", ""),
                                                       data.get("quantity", ""), data.get("units", ""), 1.0)
            else:
                continue
            vals = np.asarray([np.asarray(layer.QueryTimeSample(prop.path, t), float) for t in times]) * scale
            frames = max(frames, len(times))
            channels.append(Channel(str(spec.path), short, group, quantity, unit, vals.reshape(len(times), 1, -1)
                                    if vals.ndim == 2 else vals.reshape(len(times), 1), usd_name=name))
        for child in spec.nameChildren:
            visit(child)

    for child in layer.pseudoRoot.nameChildren:
        visit(child)
    if not channels:
        raise UsdphysError(f"{path}: no recorded quantities (physics:velocity or {OUT_NAMESPACE}* time samples); "
                           "simulate with --record")
    return np.arange(frames) / fps, channels
