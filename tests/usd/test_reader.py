"""Stage -> Model: units, degrees, mass properties, joints, and stages from other tools."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from usdphys.errors import UsdphysError
from usdphys.solver import io
from usdphys.usd.reader import read_stage


def new_stage(up="Z", mpu=1.0, kpu=1.0, gravity=None):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, up)
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdPhysics.SetStageKilogramsPerUnit(stage, kpu)
    scene = UsdPhysics.Scene.Define(stage, "/scene")
    if gravity is not None:
        scene.CreateGravityMagnitudeAttr(gravity)
    return stage


def body(stage, path, pos=(0, 0, 0), mass=None, inertia=None, scale=None, cube=None):
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp().Set(Gf.Vec3d(*pos))
    if scale is not None:
        xf.AddScaleOp().Set(Gf.Vec3f(*scale))
    prim = xf.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    if mass is not None or inertia is not None:
        m = UsdPhysics.MassAPI.Apply(prim)
        if mass is not None:
            m.CreateMassAttr(mass)
        if inertia is not None:
            m.CreateDiagonalInertiaAttr(Gf.Vec3f(*inertia))
    if cube is not None:
        c = UsdGeom.Cube.Define(stage, f"{path}/shape")
        c.CreateSizeAttr(cube)
        UsdPhysics.CollisionAPI.Apply(c.GetPrim())
    return prim


def test_units_are_converted_to_si():
    # centimetre, gram, Y-up stage; gravity left to its default (earth gravity in stage units)
    stage = new_stage(up="Y", mpu=0.01, kpu=0.001)
    b = body(stage, "/b", pos=(0, 100, 0), mass=500.0, inertia=(1e4, 1e4, 1e4))
    UsdPhysics.RigidBodyAPI(b).CreateVelocityAttr(Gf.Vec3f(0, 0, 200))
    UsdPhysics.RigidBodyAPI(b).CreateAngularVelocityAttr(Gf.Vec3f(0, 90, 0))
    model, _ = read_stage(stage)
    np.testing.assert_allclose(model.gravity, [0, -9.81, 0], rtol=1e-6)  # float attr round-off
    np.testing.assert_allclose(model.body_pos[0, 0], [0, 1.0, 0])
    assert model.body_mass[0] == pytest.approx(0.5)  # 500 g
    np.testing.assert_allclose(model.body_inertia[0], 1e4 * 1e-3 * 1e-4)  # g cm^2 -> kg m^2
    np.testing.assert_allclose(model.body_lin_vel[0, 0], [0, 0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(model.body_ang_vel[0, 0], [0, math.pi / 2, 0], rtol=1e-6)  # deg/s -> rad/s


def test_mass_from_collider_and_density():
    stage = new_stage()
    body(stage, "/b", cube=0.1)  # 10 cm cube, default density 1000 kg/m^3 -> 1 kg
    model, _ = read_stage(stage)
    assert model.body_mass[0] == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(model.body_inertia[0], 1.0 * (0.1**2 + 0.1**2) / 12, rtol=1e-6)


def test_authored_mass_wins_and_scales_collider_inertia():
    stage = new_stage()
    body(stage, "/b", mass=3.0, cube=0.1)
    model, _ = read_stage(stage)
    assert model.body_mass[0] == pytest.approx(3.0)
    np.testing.assert_allclose(model.body_inertia[0], 3.0 * 0.02 / 12, rtol=1e-6)


def test_revolute_limit_and_drive_units():
    stage = new_stage()
    body(stage, "/b", mass=1.0, inertia=(1, 1, 1))
    j = UsdPhysics.RevoluteJoint.Define(stage, "/j")
    j.CreateBody1Rel().SetTargets(["/b"])
    j.CreateAxisAttr("Z")
    j.CreateLowerLimitAttr(-45.0)
    j.CreateUpperLimitAttr(90.0)
    d = UsdPhysics.DriveAPI.Apply(j.GetPrim(), "angular")
    d.CreateStiffnessAttr(2.0)  # N m / degree
    d.CreateDampingAttr(1.0)
    d.CreateTargetPositionAttr(30.0)
    model, _ = read_stage(stage)
    assert model.joint_body0[0] == -1 and model.joint_body1[0] == 0  # to the world
    assert list(model.joint_locked[0]) == [True] * 5 + [False]
    assert model.joint_lower[0, 5] == pytest.approx(-math.pi / 4)
    assert model.joint_upper[0, 5] == pytest.approx(math.pi / 2)
    assert model.joint_drive_stiffness[0, 5] == pytest.approx(2.0 * 180 / math.pi)
    assert model.joint_drive_target_pos[0, 5] == pytest.approx(math.pi / 6)


def test_generic_joint_locks_dofs_with_low_above_high():
    stage = new_stage()
    body(stage, "/a", mass=1.0, inertia=(1, 1, 1))
    body(stage, "/b", pos=(1, 0, 0), mass=1.0, inertia=(1, 1, 1))
    j = UsdPhysics.Joint.Define(stage, "/universal")
    j.CreateBody0Rel().SetTargets(["/a"])
    j.CreateBody1Rel().SetTargets(["/b"])
    j.CreateLocalPos0Attr(Gf.Vec3f(0.5, 0, 0))
    j.CreateLocalPos1Attr(Gf.Vec3f(-0.5, 0, 0))
    for dof in ("transX", "transY", "transZ", "rotX"):
        lim = UsdPhysics.LimitAPI.Apply(j.GetPrim(), dof)
        lim.CreateLowAttr(1.0)
        lim.CreateHighAttr(-1.0)
    lim = UsdPhysics.LimitAPI.Apply(j.GetPrim(), "rotY")
    lim.CreateLowAttr(-30.0)
    lim.CreateHighAttr(30.0)
    model, _ = read_stage(stage)
    assert list(model.joint_locked[0]) == [True, True, True, True, False, False]
    assert model.joint_upper[0, 4] == pytest.approx(math.radians(30))
    np.testing.assert_allclose(model.joint_pos0[0], [0.5, 0, 0])


def test_disabled_joint_is_skipped_and_joint_to_static_body_is_world(caplog):
    stage = new_stage()
    body(stage, "/b", pos=(0, 0, 1), mass=1.0, inertia=(1, 1, 1))
    base = body(stage, "/base", pos=(0, 0, 2), mass=1.0, inertia=(1, 1, 1))
    UsdPhysics.RigidBodyAPI(base).CreateRigidBodyEnabledAttr(False)  # static body
    j = UsdPhysics.SphericalJoint.Define(stage, "/ball")
    j.CreateBody0Rel().SetTargets(["/base"])
    j.CreateBody1Rel().SetTargets(["/b"])
    j.CreateLocalPos0Attr(Gf.Vec3f(0, 0, -0.5))
    j.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0.5))
    off = UsdPhysics.FixedJoint.Define(stage, "/off")
    off.CreateBody1Rel().SetTargets(["/b"])
    off.CreateJointEnabledAttr(False)
    model, _ = read_stage(stage)
    assert model.body_paths == ["/b"]
    assert model.joint_paths == ["/ball"]
    assert model.joint_body0[0] == -1
    np.testing.assert_allclose(model.joint_pos0[0], [0, 0, 1.5])  # static frame folded into world


def test_nested_and_scaled_bodies_and_joint_under_child():
    stage = new_stage()
    body(stage, "/outer", pos=(1, 0, 0), mass=1.0, inertia=(1, 1, 1), scale=(2, 2, 2))
    body(stage, "/outer/inner", pos=(0, 0, 1), mass=1.0, inertia=(1, 1, 1))
    j = UsdPhysics.RevoluteJoint.Define(stage, "/outer/inner/hinge")  # joint defined under the child
    j.CreateBody0Rel().SetTargets(["/outer"])
    j.CreateBody1Rel().SetTargets(["/outer/inner"])
    j.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 0.5))  # in outer's scaled frame: 1 m above its origin
    model, _ = read_stage(stage)
    assert model.body_paths == ["/outer", "/outer/inner"]
    np.testing.assert_allclose(model.body_pos[0, 1], [1, 0, 2])  # parent scale applies to the child
    np.testing.assert_allclose(model.joint_pos0[0], [0, 0, 1.0])  # scaled into metres


def test_elements_are_read_not_warned(caplog):
    """Force elements and NewtonJointAPI are simulated (no 'not simulated' warning);
    an element that connects nothing is an error naming its path."""
    stage = new_stage()
    body(stage, "/b", mass=1.0, inertia=(1, 1, 1), cube=0.1)
    spring = stage.DefinePrim("/spring", "MbdSpringDamper")
    spring.CreateRelationship("mbd:body1").SetTargets(["/b"])
    j = UsdPhysics.RevoluteJoint.Define(stage, "/j")
    j.CreateBody1Rel().SetTargets(["/b"])
    j.GetPrim().ApplyAPI("NewtonJointAPI")
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        model, _ = read_stage(stage)
    assert "not simulated yet" not in caplog.text
    assert model.elements.spring_dampers.paths == ["/spring"]
    spring.GetRelationship("mbd:body1").ClearTargets(True)
    with pytest.raises(UsdphysError, match="/spring: MbdSpringDamper connects no body"):
        read_stage(stage)


def test_instance_proxies_are_read():
    stage = new_stage()
    proto = stage.CreateClassPrim("/proto")
    UsdGeom.Xform.Define(stage, "/proto/link")
    p = stage.GetPrimAtPath("/proto/link")
    UsdPhysics.RigidBodyAPI.Apply(p)
    m = UsdPhysics.MassAPI.Apply(p)
    m.CreateMassAttr(2.0)
    m.CreateDiagonalInertiaAttr(Gf.Vec3f(1, 1, 1))
    inst = UsdGeom.Xform.Define(stage, "/robot").GetPrim()
    inst.GetInherits().AddInherit(proto.GetPath())
    inst.SetInstanceable(True)
    UsdGeom.Xform(inst).AddTranslateOp().Set(Gf.Vec3d(0, 0, 3))
    model, _ = read_stage(stage)
    assert model.body_paths == ["/robot/link"]  # found through the instance proxy
    np.testing.assert_allclose(model.body_pos[0, 0], [0, 0, 3])


def test_stage_defaults_from_simulation_api(tmp_path):
    from pathlib import Path

    model, defaults = read_stage(str(Path(__file__).resolve().parents[2] / "assets/usd/fourbar.usda"))
    assert defaults.time_step == pytest.approx(1e-3)
    assert defaults.end_time == pytest.approx(2.0)
    assert model.body_count == 3 and model.joint_count == 4


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(UsdphysError, match="no such file"):
        read_stage(str(tmp_path / "missing.usda"))
    bad = tmp_path / "bad.usda"
    bad.write_text("#usda 1.0\n def Xform 'x' {{{ nonsense\n")
    with pytest.raises(UsdphysError, match="bad.usda"):
        read_stage(str(bad))


def test_a_joint_no_impulse_can_act_on_is_named_and_left_out(caplog):
    """gymnasium's Adroit hands fix a kinematic (MuJoCo mocap) body to the world: neither side
    moves under an impulse, so the joint cannot act, and its rows only reported how far the
    float32 frames disagree (6e-9 m, the hands' largest joint residual). Left out with one line
    each; a joint from a kinematic body to a dynamic one stays."""
    stage = new_stage()
    for path in ("/mocap", "/carrier"):
        UsdPhysics.RigidBodyAPI(body(stage, path, pos=(0, 0, 1))).CreateKinematicEnabledAttr(True)
    body(stage, "/b", pos=(0, 0, 2), mass=1.0, inertia=(1, 1, 1))
    for name, b0, b1 in (("toWorld", None, "/mocap"), ("between", "/mocap", "/carrier"), ("kept", "/mocap", "/b")):
        j = UsdPhysics.FixedJoint.Define(stage, f"/{name}")
        if b0:
            j.CreateBody0Rel().SetTargets([b0])
        j.CreateBody1Rel().SetTargets([b1])
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        model, _ = read_stage(stage)
    assert model.joint_paths == ["/kept"]
    said = [r.getMessage() for r in caplog.records if "it cannot act" in r.getMessage()]
    assert len(said) == 2
    assert any(m.startswith("/toWorld: ") and "kinematic /mocap and the world" in m for m in said)
    assert any(m.startswith("/between: ") and "kinematic /mocap and /carrier" in m for m in said)


def test_kinematic_body_without_mass_is_not_warned_but_dynamic_is(caplog):
    """A kinematic body's mass never enters the dynamics (converted Chrono ground bodies)."""
    stage = new_stage()
    ground = body(stage, "/ground")
    UsdPhysics.RigidBodyAPI(ground).CreateKinematicEnabledAttr(True)
    body(stage, "/free")
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        read_stage(stage)
    assert "/ground" not in caplog.text
    assert "/free" in caplog.text and "no physics:mass" in caplog.text


def test_spherical_cone_limits_become_one_swing_row(caplog):
    """coneAngle0Limit / coneAngle1Limit (deg, about the joint's axis) -> Model.joint_cone (rad);
    the row holds the smaller semi-angle, its ratio the smaller over the larger (axis + 3 when
    the smaller is the second). UsdPhysics limits the cone only when both angles are >= 0: one
    alone is named in a warning and the joint swings freely."""
    from usdphys.types.enums import RowKind, RowMode

    stage = new_stage()
    body(stage, "/b", mass=1.0, inertia=(1, 1, 1))
    j = UsdPhysics.SphericalJoint.Define(stage, "/j")
    j.CreateBody1Rel().SetTargets(["/b"])
    j.CreateAxisAttr("Y")
    j.CreateConeAngle0LimitAttr(60.0)
    j.CreateConeAngle1LimitAttr(20.0)
    model, _ = read_stage(stage)
    assert model.joint_cone_axis[0] == 1
    np.testing.assert_allclose(model.joint_cone[0], np.radians([60.0, 20.0]))
    rows = model.constraint_rows()
    swing = np.flatnonzero(rows.kind == RowKind.SWING)
    assert swing.size == 1 and rows.axis[swing[0]] == 1 and rows.mode[swing[0]] == RowMode.UPPER
    assert rows.value[swing[0]] == pytest.approx(math.radians(20.0))
    # the kernel weighs the tilt by the ratio of the two sides (io.limit_ranges' columns, per world)
    lo, hi = io.limit_ranges(model, rows)
    assert (lo[swing[0]], hi[swing[0]]) == pytest.approx(np.radians([60.0, 20.0]))
    # both angles are per-world parameters through their attributes (degrees as authored)
    for k in (0, 1):
        (target,) = model.param_sources[f"/j.physics:coneAngle{k}Limit"].targets
        assert target[:2] == ("joint.cone", ("/j", k)) and target[2] == pytest.approx(math.pi / 180.0)
    j.CreateConeAngle1LimitAttr(-1.0)
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        model, _ = read_stage(stage)
    assert "/j" in caplog.text and "physics:coneAngle0Limit is authored but physics:coneAngle1Limit is -1" in caplog.text
    assert np.all(np.isinf(model.joint_cone[0]))
    assert not np.any(model.constraint_rows().kind == RowKind.SWING)
    # an infinite angle leaves the cone off too (usd-core), and the warning names that one
    j.CreateConeAngle0LimitAttr(math.inf)
    j.CreateConeAngle1LimitAttr(20.0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        model, _ = read_stage(stage)
    assert "physics:coneAngle1Limit is authored but physics:coneAngle0Limit is inf" in caplog.text
    assert np.all(np.isinf(model.joint_cone[0]))
    j.CreateConeAngle1LimitAttr(math.inf)  # both open: nothing to say
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="usdphys"):
        read_stage(stage)
    assert "coneAngle" not in caplog.text


@pytest.mark.parametrize("cone, rows", [
    ((0.5, 1.0), [("SWING", 2, 0.5, (0.5, 1.0))]),  # (kind, axis, value, the swing row's sides)
    ((1.0, 0.5), [("SWING", 2, 0.5, (1.0, 0.5))]),  # the smaller side second: a value, not another row
    ((0.7, 0.7), [("SWING", 2, 0.7, (0.7, 0.7))]),
    ((0.5, math.inf), [("SWING", 2, 0.5, (0.5, math.inf))]),
    ((0.0, 1.0), [("PERP", 3 * 0 + 2, 0.0, None), ("SWING", 2, 1.0, (math.inf, 1.0))]),  # flat towards e0[0]
    ((1.0, 0.0), [("PERP", 3 * 1 + 2, 0.0, None), ("SWING", 2, 1.0, (1.0, math.inf))]),
    ((0.0, 0.0), [("PERP", 3 * 0 + 2, 0.0, None), ("PERP", 3 * 1 + 2, 0.0, None)]),
    ((math.pi, 4.0), []),  # no swing reaches 180 deg past the bound
])
def test_cone_rows(cone, rows):
    from usdphys.types.enums import RowKind
    from usdphys.types.model import cone_rows, swing_sides

    got = [(RowKind(k).name, ax, v, tuple(swing_sides(cone)) if k == RowKind.SWING else None)
           for k, ax, _, v in cone_rows(2, *cone)]
    assert got == [(k, ax, pytest.approx(v), r) for k, ax, v, r in rows]
