"""The result layer: structure, metadata, and that composing it reproduces the simulated poses."""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.math3d import quat_rotate
from usdphys.simulate import simulate

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "usd"


def make_nested_stage(path: Path):
    """cm stage, Y up: a scaled parent Xform holding a pendulum body, which holds a child body
    fixed to it (nested rigid bodies), plus a scale inside a matrix op on the child."""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, "Y")
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, "/Robot")
    stage.SetDefaultPrim(root.GetPrim())
    root.AddTranslateOp().Set(Gf.Vec3d(10, 0, 0))
    root.AddScaleOp().Set(Gf.Vec3f(2, 2, 2))
    UsdPhysics.Scene.Define(stage, "/Robot/scene")
    arm = UsdGeom.Xform.Define(stage, "/Robot/arm")
    arm.AddTranslateOp().Set(Gf.Vec3d(0, -25, 0))  # 50 cm below the pivot in world (scale 2)
    arm.AddScaleOp().Set(Gf.Vec3f(1, 3, 1))
    for prim in (arm.GetPrim(),):
        UsdPhysics.RigidBodyAPI.Apply(prim)
        m = UsdPhysics.MassAPI.Apply(prim)
        m.CreateMassAttr(1000.0)
        m.CreateDiagonalInertiaAttr(Gf.Vec3f(1e4, 1e4, 1e4))
        # swinging at 30 deg/s about Z through the pivot 50 cm above: v = w x r (cm/s)
        UsdPhysics.RigidBodyAPI(prim).CreateAngularVelocityAttr(Gf.Vec3f(0, 0, 30))
        UsdPhysics.RigidBodyAPI(prim).CreateVelocityAttr(Gf.Vec3f(50 * math.radians(30), 0, 0))
    tip = UsdGeom.Xform.Define(stage, "/Robot/arm/tip")
    # 5 units below in the arm's frame = 30 cm below in the world (arm world scale 6 in Y)
    tip.AddTransformOp().Set(Gf.Matrix4d().SetScale(Gf.Vec3d(0.5, 0.5, 0.5)) * Gf.Matrix4d().SetTranslate(Gf.Vec3d(0, -5, 0)))
    UsdPhysics.RigidBodyAPI.Apply(tip.GetPrim())
    UsdPhysics.RigidBodyAPI(tip.GetPrim()).CreateAngularVelocityAttr(Gf.Vec3f(0, 0, 30))
    UsdPhysics.RigidBodyAPI(tip.GetPrim()).CreateVelocityAttr(Gf.Vec3f(80 * math.radians(30), 0, 0))  # 80 cm from the pivot
    m = UsdPhysics.MassAPI.Apply(tip.GetPrim())
    m.CreateMassAttr(100.0)
    m.CreateDiagonalInertiaAttr(Gf.Vec3f(100, 100, 100))
    j = UsdPhysics.RevoluteJoint.Define(stage, "/Robot/pivot")
    j.CreateBody1Rel().SetTargets(["/Robot/arm"])
    j.CreateAxisAttr("Z")
    j.CreateLocalPos0Attr(Gf.Vec3f(10, 0, 0))  # world frame, stage units (the /Robot origin)
    j.CreateLocalPos1Attr(Gf.Vec3f(0, 50 / 6, 0))  # in the arm's scaled frame (world scale 2 * 3 in Y)
    f = UsdPhysics.FixedJoint.Define(stage, "/Robot/arm/tip/weld")
    f.CreateBody0Rel().SetTargets(["/Robot/arm"])
    f.CreateBody1Rel().SetTargets(["/Robot/arm/tip"])
    f.CreateLocalPos0Attr(Gf.Vec3f(0, -5, 0))  # the tip origin: 5 * 6 = 30 cm below the arm origin
    stage.GetRootLayer().Save()
    return stage


@pytest.fixture()
def nested(tmp_path):
    src = tmp_path / "robot.usda"
    make_nested_stage(src)
    return src


def test_layer_structure_and_metadata(nested, tmp_path):
    before = hashlib.sha256(nested.read_bytes()).hexdigest()
    res = simulate(str(nested), duration=0.5, dt=1e-3, fps=20)
    out = tmp_path / "out" / "result.usda"
    out.parent.mkdir()
    res.write(out)
    assert hashlib.sha256(nested.read_bytes()).hexdigest() == before  # input untouched
    layer = Sdf.Layer.FindOrOpen(str(out))
    assert list(layer.subLayerPaths) == ["../robot.usda"]
    assert layer.timeCodesPerSecond == 20 and layer.framesPerSecond == 20
    assert layer.startTimeCode == 0 and layer.endTimeCode == 10
    info = layer.pseudoRoot
    assert info.GetInfo("upAxis") == "Y"
    assert info.GetInfo("metersPerUnit") == pytest.approx(0.01)
    assert info.GetInfo("kilogramsPerUnit") == pytest.approx(1.0)
    assert layer.defaultPrim == "Robot"
    arm = layer.GetPrimAtPath("/Robot/arm")
    assert arm.specifier == Sdf.SpecifierOver
    assert arm.attributes["xformOp:translate"].typeName == Sdf.ValueTypeNames.Double3
    assert arm.attributes["xformOp:orient"].typeName == Sdf.ValueTypeNames.Quatd
    assert list(arm.attributes["xformOpOrder"].default) == ["xformOp:translate", "xformOp:orient", "xformOp:scale"]
    assert "xformOp:scale" not in arm.attributes  # authored scale op kept in the input, not copied
    tip = layer.GetPrimAtPath("/Robot/arm/tip")
    assert tip.attributes["xformOp:scale"].default == Gf.Vec3d(0.5, 0.5, 0.5)  # scale hidden in a matrix
    assert layer.ListTimeSamplesForPath("/Robot/arm.xformOp:translate") == [float(i) for i in range(11)]
    # only overs with transform ops: nothing else is authored
    names = set()
    layer.Traverse("/", lambda p: names.add(p.name) if p.IsPropertyPath() else None)
    assert names <= {"xformOp:translate", "xformOp:orient", "xformOp:scale", "xformOpOrder"}


def test_composed_result_reproduces_simulated_poses(nested, tmp_path):
    res = simulate(str(nested), duration=0.5, dt=1e-3, fps=20)
    assert np.max(np.abs(res.positions[-1, 0, 0] - res.positions[0, 0, 0])) > 0.01  # it swung
    out = tmp_path / "result.usda"
    res.write(out)
    stage = Usd.Stage.Open(str(out))
    assert UsdGeom.GetStageUpAxis(stage) == "Y"
    for f in (0, 5, 10):
        cache = UsdGeom.XformCache(Usd.TimeCode(f))
        for b, path in enumerate(res.body_paths):
            m = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(path))
            got = np.array(m.ExtractTranslation()) * 0.01
            # double-precision transforms composed back: 1e-9 m covers the polar decomposition
            # and matrix inverse round-off on centimetre-scale numbers
            np.testing.assert_allclose(got, res.positions[f, 0, b], atol=1e-9)
            # authored scale survives: arm world scale 2 * (1, 3, 1), tip 2 * 1 * 0.5
            scale = np.linalg.norm(np.array(m)[:3, :3], axis=1)
            expect = [2, 6, 2] if path.endswith("arm") else [1, 3, 1]
            np.testing.assert_allclose(scale, expect, rtol=1e-9)
            # rotation: rows of the (row-vector) matrix are the scaled world axes
            r_usd = np.array(m)[:3, :3] / scale[:, None]
            r_sim = np.stack([quat_rotate(res.orientations[f, 0, b], e) for e in np.eye(3)])
            np.testing.assert_allclose(r_usd, r_sim, atol=1e-9)
    # the weld (fixed joint) keeps the tip 30 cm below the arm origin along the arm's -Y
    arm, tip = res.body_paths.index("/Robot/arm"), res.body_paths.index("/Robot/arm/tip")
    off = res.positions[:, 0, tip] - res.positions[:, 0, arm]
    expect = quat_rotate(res.orientations[:, 0, arm], np.array([0, -0.30, 0]))
    np.testing.assert_allclose(off, expect, atol=1e-9)
