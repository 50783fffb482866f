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


def _merge_missing(src: Sdf.Layer, dst: Sdf.Layer) -> None:
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


def write_result(stage: Usd.Stage, body_paths, positions, orientations, fps, output_path, meters_per_unit,
                 input_path=None, extra_layer: Sdf.Layer | None = None) -> Path:
    """Build the layer and write it atomically; never overwrites the input.

    extra_layer (e.g. the session layer holding SNAP's solved transforms) is merged under
    the time samples, so the result shows the same assembled stage the solver saw.
    """
    out = check_output_path(output_path, input_path or stage.GetRootLayer().realPath)
    layer = build_layer(stage, body_paths, positions, orientations, fps, out, meters_per_unit)
    if extra_layer is not None:
        _merge_missing(extra_layer, layer)
    export_layer_atomic(layer, out)
    return out
