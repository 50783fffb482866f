"""SNAP assembly (usdphys.usd.assemble): the spec's snap_parent scenarios, dependency order,
redundancy, under-constraint, joint frames from connectors and bad connectors.

Expected values are computed here independently of the assembler, from the spec's
formulas (openplx-physics3d-snap.txt, "Three-Level SNAP Example") with numpy. Tolerance
1e-9: every number involved is O(1) and the computation is a handful of double-precision
4x4 products (error ~1e-15); 1e-9 leaves room for quaternion round trips only.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.usd.assemble import assemble, connector_frame, needs_assembly, plan
from usdphys.errors import UsdphysError

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "snap"
TOL = 1e-9


# ---- independent helpers (column vectors) ---------------------------------------------
def rot_from_to(u, v):
    """Shortest-arc rotation taking u to v (Rodrigues), as OpenPLX Math.Quat.fromTo."""
    u = np.asarray(u, float) / np.linalg.norm(u)
    v = np.asarray(v, float) / np.linalg.norm(v)
    axis = np.cross(u, v)
    s, c = np.linalg.norm(axis), float(np.dot(u, v))
    k = axis / s
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * kx + (1 - c) * kx @ kx


def hom(r=np.eye(3), t=(0, 0, 0)):
    m = np.eye(4)
    m[:3, :3] = r
    m[:3, 3] = t
    return m


def conn(position, main_axis, normal):
    """Connector frame: Z = main axis, X = normal (orthogonalised), Y = Z x X."""
    z = np.asarray(main_axis, float) / np.linalg.norm(main_axis)
    n = np.asarray(normal, float)
    x = n - n.dot(z) * z
    x /= np.linalg.norm(x)
    return hom(np.column_stack([x, np.cross(z, x), z]), position)


def open_asset(relative):
    """Open a shipped asset with every edit going to the session layer: the asset layers
    are shared (USD's layer registry) and must never be dirtied by a test."""
    stage = Usd.Stage.Open(str(ASSETS / relative))
    stage.SetEditTarget(Usd.EditTarget(stage.GetSessionLayer()))
    return stage


def local(stage, path):
    return np.array(UsdGeom.Xformable(stage.GetPrimAtPath(path)).GetLocalTransformation(), float).T


def world(stage, path):
    cache = UsdGeom.XformCache()
    return np.array(cache.GetLocalToWorldTransform(stage.GetPrimAtPath(path)), float).T


def connector_world(stage, path):
    prim = stage.GetPrimAtPath(path)
    return world(stage, prim.GetParent().GetPath()) @ connector_frame(prim)


N111 = (1, 1, 1)
A = conn((0.5, 0, 0), (0, 1, 0), (1, 0, 0))  # world_connector
M = conn((0, 0, -1 * 0.6), (0, 1, 0), (0, 0, 1))  # rod.connector: z = -size.z * 0.6
ROT_X = hom(rot_from_to((1, 0, 0), N111))
ROT_Y = hom(rot_from_to((0, 1, 0), N111))
inv = np.linalg.inv


def test_from_to_helper_is_right():
    # guards the expected values below: fromTo really takes u onto v
    assert np.allclose(ROT_X[:3, :3] @ [1, 0, 0], np.array(N111) / math.sqrt(3), atol=1e-15)
    assert np.allclose(ROT_Y[:3, :3] @ [0, 1, 0], np.array(N111) / math.sqrt(3), atol=1e-15)


# scenario file, root, solved prim (relative), expected transform from the spec's formula
SCENARIOS = [
    # SnapRod: S1, S2 set -> R = S2^-1 S1^-1 A M^-1
    ("snap_rod.usda", "/SnapRod", "rod_system/rod_system/rod", inv(ROT_Y) @ inv(ROT_X) @ A @ inv(M)),
    # SnapRodParent: S1, R set -> S2 = S1^-1 A M^-1 R^-1
    ("snap_rod_parent.usda", "/SnapRodParent", "rod_system/rod_system", inv(ROT_X) @ A @ inv(M) @ inv(ROT_Y)),
    # SnapRodParentParent: S2, R set -> S1 = A M^-1 R^-1 S2^-1
    ("snap_rod_parent_parent.usda", "/SnapRodParentParent", "rod_system", A @ inv(M) @ inv(ROT_Y) @ inv(ROT_X)),
]


@pytest.mark.parametrize("filename,root,solved,expected", SCENARIOS, ids=["R", "S2", "S1"])
def test_snap_rod_scenarios_match_spec_formula(filename, root, solved, expected):
    stage = open_asset(f"snap_rod/{filename}")
    assert needs_assembly(stage)
    report = assemble(stage)
    target = f"{root}/{solved}"
    assert [p.path for p in report.placed] == [target]
    assert report.placed[0].mate == f"{root}/world_lock" and not report.placed[0].forced
    assert report.complete and not report.unresolved and not report.unsatisfied
    np.testing.assert_allclose(local(stage, target), expected, rtol=0, atol=TOL)
    # and the rod's connector now sits exactly on the world connector
    np.testing.assert_allclose(
        connector_world(stage, f"{root}/rod_system/rod_system/rod/connector"), A, rtol=0, atol=TOL
    )
    assert not needs_assembly(stage)


def test_all_undefined_forces_two_identities_in_spec_order():
    # World alone: S1, S2 and R all undefined on one mate's path (redundant): SNAP forces the
    # first undefined from connector0 (the rod) then RodParent, and solves S1 = A M^-1.
    stage = open_asset("snap_rod/world.usda")
    report = assemble(stage)
    assert report.forced_identity == ["/World/rod_system/rod_system/rod", "/World/rod_system/rod_system"]
    assert [p.path for p in report.snapped] == ["/World/rod_system"]
    np.testing.assert_allclose(local(stage, "/World/rod_system"), A @ inv(M), rtol=0, atol=TOL)
    np.testing.assert_allclose(local(stage, "/World/rod_system/rod_system"), np.eye(4), atol=0)
    np.testing.assert_allclose(local(stage, "/World/rod_system/rod_system/rod"), np.eye(4), atol=0)
    # hand-checked: S1 = translate (1.1, 0, 0), 90 degrees about Y
    np.testing.assert_allclose(local(stage, "/World/rod_system")[:3, 3], [1.1, 0, 0], atol=TOL)


# ---- programmatic stages ---------------------------------------------------------------
def new_stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(stage, "/W")
    return stage


def body(stage, path, translate=None):
    xf = UsdGeom.Xform.Define(stage, path)
    UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
    if translate is not None:
        xf.AddTranslateOp().Set(Gf.Vec3d(*translate))
    return xf.GetPrim()


def connector(stage, path, position=(0, 0, 0), main_axis=(0, 0, 1), normal=(1, 0, 0)):
    prim = stage.DefinePrim(path, "MbdMateConnector")
    prim.GetAttribute("mbd:position").Set(Gf.Vec3d(*position))
    prim.GetAttribute("mbd:mainAxis").Set(Gf.Vec3d(*main_axis))
    if normal is not None:
        prim.GetAttribute("mbd:normal").Set(Gf.Vec3d(*normal))
    return prim


def mate(stage, path, c0, c1, b0=None, b1=None, kind=UsdPhysics.FixedJoint):
    j = kind.Define(stage, path)
    prim = j.GetPrim()
    prim.ApplyAPI("MbdMateAPI")
    prim.CreateRelationship("mbd:connector0").SetTargets([c0])
    prim.CreateRelationship("mbd:connector1").SetTargets([c1])
    if b0:
        j.CreateBody0Rel().SetTargets([b0])
    if b1:
        j.CreateBody1Rel().SetTargets([b1])
    return j


def chain_stage():
    """World connector -> A (fixed) -> B (revolute) -> C (prismatic); joints authored in
    REVERSE dependency order so that one pass cannot place everything in file order."""
    s = new_stage()
    connector(s, "/W/anchor", (1, 2, 3), (0, 0, 1), (1, 0, 0))
    body(s, "/W/A")
    connector(s, "/W/A/base", (0, 0, -0.5), (0, 0, 1), (1, 0, 0))
    connector(s, "/W/A/top", (0, 0, 0.5), (0, 1, 0), (1, 0, 0))
    body(s, "/W/B")
    connector(s, "/W/B/hinge", (-0.3, 0, 0), (0, 1, 0), (1, 0, 0))
    connector(s, "/W/B/slot", (0.3, 0, 0), (1, 0, 0), (0, 0, 1))
    body(s, "/W/C")
    connector(s, "/W/C/slider", (0, 0, 0), (1, 0, 0), (0, 0, 1))
    mate(s, "/W/j3_BC", "/W/B/slot", "/W/C/slider", "/W/B", "/W/C", UsdPhysics.PrismaticJoint)
    mate(s, "/W/j2_AB", "/W/A/top", "/W/B/hinge", "/W/A", "/W/B", UsdPhysics.RevoluteJoint)
    mate(s, "/W/j1_WA", "/W/anchor", "/W/A/base", None, "/W/A")
    return s


def test_chain_snaps_in_dependency_order():
    s = chain_stage()
    report = assemble(s)
    assert [(p.path, p.mate) for p in report.placed] == [
        ("/W/A", "/W/j1_WA"), ("/W/B", "/W/j2_AB"), ("/W/C", "/W/j3_BC"),
    ]
    assert report.complete and report.forced_identity == []
    # expected world positions by hand: A's base on the anchor -> A at (1, 2, 3.5); B's hinge
    # (-0.3 along B's X) on A's top (1, 2, 4) with the same axes -> B at (1.3, 2, 4);
    # C's slider on B's slot -> C at (1.6, 2, 4); no rotation anywhere.
    for path, pos in (("/W/A", (1, 2, 3.5)), ("/W/B", (1.3, 2, 4)), ("/W/C", (1.6, 2, 4))):
        np.testing.assert_allclose(world(s, path), hom(t=pos), rtol=0, atol=TOL)
    for j in ("/W/j1_WA", "/W/j2_AB", "/W/j3_BC"):
        c0, c1 = (s.GetPrimAtPath(j).GetRelationship(f"mbd:connector{i}").GetTargets()[0] for i in (0, 1))
        np.testing.assert_allclose(connector_world(s, c0), connector_world(s, c1), rtol=0, atol=TOL)


def test_redundant_loop_forces_identity():
    # two free bodies held to each other by two consistent mates, nothing to the world:
    # no mate can start (each side has one unknown) -> the first is forced to identity.
    s = new_stage()
    body(s, "/W/P")
    body(s, "/W/Q")
    connector(s, "/W/P/c1", (1, 0, 0), (0, 0, 1), (1, 0, 0))
    connector(s, "/W/P/c2", (1, 0, 1), (0, 0, 1), (1, 0, 0))
    connector(s, "/W/Q/c1", (0, 0, 0), (1, 0, 0), (0, 1, 0))
    connector(s, "/W/Q/c2", (1, 0, 0), (1, 0, 0), (0, 1, 0))  # Q x=1 -> P z=1
    mate(s, "/W/m1", "/W/P/c1", "/W/Q/c1", "/W/P", "/W/Q")
    mate(s, "/W/m2", "/W/P/c2", "/W/Q/c2", "/W/P", "/W/Q")
    report = assemble(s)
    assert report.forced_identity == ["/W/P"]
    assert [p.path for p in report.snapped] == ["/W/Q"]
    np.testing.assert_allclose(local(s, "/W/P"), np.eye(4), atol=0)
    # Q: its X goes to P's Z, its Y to P's X; its origin at P's (1, 0, 0)
    expected_q = hom(np.column_stack([[0, 0, 1], [1, 0, 0], [0, 1, 0]]), (1, 0, 0))
    np.testing.assert_allclose(local(s, "/W/Q"), expected_q, rtol=0, atol=TOL)
    assert report.unsatisfied == []  # m2 closes the loop consistently
    assert report.complete


def test_inconsistent_closing_mate_is_reported():
    s = new_stage()
    body(s, "/W/P")
    body(s, "/W/Q")
    connector(s, "/W/P/c1", (1, 0, 0))
    connector(s, "/W/P/c2", (1, 0, 1))
    connector(s, "/W/Q/c1", (0, 0, 0))
    connector(s, "/W/Q/c2", (0, 0, 1.25))  # 0.25 off
    mate(s, "/W/m1", "/W/P/c1", "/W/Q/c1", "/W/P", "/W/Q")
    mate(s, "/W/m2", "/W/P/c2", "/W/Q/c2", "/W/P", "/W/Q")
    report = assemble(s)
    assert [c.joint for c in report.unsatisfied] == ["/W/m2"]
    assert report.unsatisfied[0].position_error == pytest.approx(0.25, abs=1e-12)
    assert not report.complete


def test_under_constrained_body_is_reported_not_guessed():
    s = chain_stage()
    loose = body(s, "/W/Loose")  # undefined transform, no mate
    body(s, "/W/Placed", translate=(5, 0, 0))  # defined: not reported
    report = assemble(s)
    assert report.unresolved == ["/W/Loose"]
    assert not report.complete
    assert not UsdGeom.Xformable(loose).GetXformOpOrderAttr().HasAuthoredValue()
    assert "UNRESOLVED /W/Loose" in report.summary()


def test_nested_system_on_path_is_placed_through_depth():
    # body inside two systems, the outer one defined: the inner system is the only unknown
    s = new_stage()
    outer = UsdGeom.Xform.Define(s, "/W/Outer")
    outer.AddRotateZOp().Set(90.0)
    UsdGeom.Xform.Define(s, "/W/Outer/Inner")  # undefined system
    b = body(s, "/W/Outer/Inner/B", translate=(0, 0, 1))
    connector(s, "/W/Outer/Inner/B/c", (0, 0, 0), (0, 0, 1), (1, 0, 0))
    connector(s, "/W/target", (3, 0, 0), (0, 0, 1), (0, 1, 0))
    mate(s, "/W/lock", "/W/Outer/Inner/B/c", "/W/target", b.GetPath(), None)
    report = assemble(s)
    assert [p.path for p in report.placed] == ["/W/Outer/Inner"]
    np.testing.assert_allclose(
        connector_world(s, "/W/Outer/Inner/B/c"), conn((3, 0, 0), (0, 0, 1), (0, 1, 0)), rtol=0, atol=TOL
    )


def test_plain_joint_frames_act_as_connectors():
    # no MbdMateAPI: localPos/localRot are the connector frames (no body0: world frame)
    s = new_stage()
    b = body(s, "/W/B")
    j = UsdPhysics.RevoluteJoint.Define(s, "/W/hinge")
    j.CreateBody1Rel().SetTargets([b.GetPath()])
    j.CreateLocalPos0Attr().Set(Gf.Vec3f(0, 0, 2))
    j.CreateLocalPos1Attr().Set(Gf.Vec3f(0.5, 0, 0))
    report = assemble(s)
    assert [p.path for p in report.placed] == ["/W/B"]
    np.testing.assert_allclose(world(s, "/W/B"), hom(t=(-0.5, 0, 2)), rtol=0, atol=TOL)
    assert report.joint_frames == []  # plain joints keep their frames


def test_connector_joint_frames_are_authored_consistently():
    stage = open_asset("clock/clock.usda")
    assemble(stage)
    for jp in ("/Clock/hand_pin", "/Clock/face_mount"):
        j = UsdPhysics.Joint(stage.GetPrimAtPath(jp))
        frames = []
        for i in (0, 1):
            pos = (j.GetLocalPos0Attr() if i == 0 else j.GetLocalPos1Attr()).Get()
            q = (j.GetLocalRot0Attr() if i == 0 else j.GetLocalRot1Attr()).Get()
            targets = (j.GetBody0Rel() if i == 0 else j.GetBody1Rel()).GetTargets()
            m = np.array(Gf.Matrix4d(Gf.Rotation(Gf.Quatd(q)), Gf.Vec3d(pos)), float).T
            frames.append((world(stage, targets[0]) if targets else np.eye(4)) @ m)
        # float32 attributes: 1e-6 is a few float ulps at these magnitudes (<= 1.5)
        np.testing.assert_allclose(frames[0], frames[1], rtol=0, atol=1e-6)
    # the hand's frame 1 is its pivot connector: origin, joint Z = main axis (0, 0, -1)
    j = UsdPhysics.Joint(stage.GetPrimAtPath("/Clock/hand_pin"))
    assert tuple(j.GetLocalPos1Attr().Get()) == (0, 0, 0)
    rot = Gf.Rotation(Gf.Quatd(j.GetLocalRot1Attr().Get()))
    np.testing.assert_allclose(rot.TransformDir(Gf.Vec3d(0, 0, 1)), (0, 0, -1), atol=1e-7)
    np.testing.assert_allclose(rot.TransformDir(Gf.Vec3d(1, 0, 0)), (0, 1, 0), atol=1e-7)


def test_revolute_axis_x_is_put_on_the_main_axis():
    s = chain_stage()
    j = UsdPhysics.RevoluteJoint(s.GetPrimAtPath("/W/j2_AB"))
    j.CreateAxisAttr().Set("X")
    assemble(s)
    rot0 = Gf.Rotation(Gf.Quatd(j.GetLocalRot0Attr().Get()))
    # A/top main axis is A's +Y: the joint's X axis must be there, right-handed frame
    np.testing.assert_allclose(rot0.TransformDir(Gf.Vec3d(1, 0, 0)), (0, 1, 0), atol=1e-7)
    # cyclic: joint Y = connector X (the normal, A's +X)
    np.testing.assert_allclose(rot0.TransformDir(Gf.Vec3d(0, 1, 0)), (1, 0, 0), atol=1e-7)


def test_clock_parts_sit_where_the_connectors_say():
    stage = open_asset("clock/clock.usda")
    report = assemble(stage)
    assert [p.path for p in report.placed] == ["/Clock/Face", "/Clock/Hand"]  # dependency order
    # face: back centre on the wall point (0, 0, 1.5), front towards +X, twelve o'clock up
    face_rot = np.column_stack([[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    np.testing.assert_allclose(world(stage, "/Clock/Face"), hom(face_rot, (0.01, 0, 1.5)), rtol=0, atol=TOL)
    # hand: pivot 0.015 in front of the face centre, pointing at twelve (tip straight up)
    np.testing.assert_allclose(world(stage, "/Clock/Hand"), hom(face_rot, (0.025, 0, 1.5)), rtol=0, atol=TOL)
    np.testing.assert_allclose(
        connector_world(stage, "/Clock/Face/pin"), connector_world(stage, "/Clock/Hand/pivot"), rtol=0, atol=TOL
    )


def test_unauthored_normal_is_computed_not_an_error():
    s = new_stage()
    c = connector(s, "/W/c", main_axis=(1, 0, 0), normal=None)  # default normal would be parallel
    f = connector_frame(c)
    np.testing.assert_allclose(f[:3, 2], (1, 0, 0), atol=0)
    assert abs(f[:3, 0] @ f[:3, 2]) < 1e-15 and np.isclose(np.linalg.det(f[:3, :3]), 1.0)


def test_normal_is_orthogonalised():
    s = new_stage()
    c = connector(s, "/W/c", main_axis=(0, 0, 2), normal=(1, 0, 5))
    np.testing.assert_allclose(connector_frame(c), conn((0, 0, 0), (0, 0, 1), (1, 0, 0)), atol=1e-15)


def test_session_edit_target_leaves_root_layer_alone():
    stage = open_asset("clock/clock.usda")
    root_text = stage.GetRootLayer().ExportToString()
    assemble(stage)
    assert stage.GetRootLayer().ExportToString() == root_text
    assert not stage.GetRootLayer().dirty
    assert "xformOp:orient" in stage.GetSessionLayer().ExportToString()


def test_needs_assembly():
    assert needs_assembly(chain_stage())
    plain = new_stage()
    body(plain, "/W/B")  # undefined but no mate: nothing SNAP could do
    assert not needs_assembly(plain)
    # connector joint frames out of date -> needed even when every transform is defined
    s = chain_stage()
    assemble(s)
    assert not needs_assembly(s)
    UsdPhysics.Joint(s.GetPrimAtPath("/W/j2_AB")).GetLocalPos0Attr().Set(Gf.Vec3f(9, 9, 9))
    assert needs_assembly(s)
    assert plan(s).placed == []


# ---- bad input -------------------------------------------------------------------------
def _layers_text(stage):
    return stage.GetRootLayer().ExportToString(), stage.GetSessionLayer().ExportToString()


def _expect_error(stage, *fragments):
    before = _layers_text(stage)
    with pytest.raises(UsdphysError) as info:
        assemble(stage)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    assert _layers_text(stage) == before  # nothing half-authored
    return str(info.value)


def test_parallel_normal_is_an_error_naming_the_prim():
    s = chain_stage()
    s.GetPrimAtPath("/W/B/hinge").GetAttribute("mbd:normal").Set(Gf.Vec3d(0, -3, 0))
    _expect_error(s, "/W/B/hinge", "mbd:normal", "parallel to mbd:mainAxis")


def test_zero_main_axis_is_an_error():
    s = chain_stage()
    s.GetPrimAtPath("/W/A/top").GetAttribute("mbd:mainAxis").Set(Gf.Vec3d(0, 0, 0))
    _expect_error(s, "/W/A/top: mbd:mainAxis is zero")


def test_connector_must_be_a_mate_connector():
    s = chain_stage()
    s.GetPrimAtPath("/W/j2_AB").GetRelationship("mbd:connector1").SetTargets(["/W/B"])
    _expect_error(s, "/W/j2_AB: mbd:connector1 targets /W/B", "expected an MbdMateConnector")


def test_missing_connector_target():
    s = chain_stage()
    s.GetPrimAtPath("/W/j2_AB").GetRelationship("mbd:connector0").SetTargets(["/W/A/nothing"])
    _expect_error(s, "/W/j2_AB: mbd:connector0 targets /W/A/nothing, which does not exist")
    s.GetPrimAtPath("/W/j2_AB").GetRelationship("mbd:connector0").ClearTargets(True)
    _expect_error(s, "/W/j2_AB: MbdMateAPI is applied but mbd:connector0 names no connector")


def test_connector_on_the_wrong_body():
    s = chain_stage()
    UsdPhysics.Joint(s.GetPrimAtPath("/W/j2_AB")).GetBody1Rel().SetTargets(["/W/C"])
    _expect_error(s, "/W/j2_AB", "belongs to rigid body /W/B", "physics:body1 is /W/C")


def test_mate_api_on_a_non_joint():
    s = chain_stage()
    s.GetPrimAtPath("/W/A").ApplyAPI("MbdMateAPI")
    _expect_error(s, "/W/A: MbdMateAPI applies to PhysicsJoint prims only")


def test_transform_inside_an_instance_is_an_error_before_authoring():
    stage = open_asset("snap_rod/world.usda")
    stage.GetPrimAtPath("/World/rod_system").SetInstanceable(True)  # rod and RodParent become proxies
    _expect_error(stage, "/World/rod_system/rod_system/rod: inside an instance")


def test_reset_xform_stack_on_a_mate_path_is_an_error():
    stage = open_asset("snap_rod/snap_rod.usda")
    UsdGeom.Xformable(stage.GetPrimAtPath("/SnapRod/rod_system/rod_system")).SetResetXformStack(True)
    _expect_error(stage, "/SnapRod/rod_system/rod_system: resets the transform stack")


def test_broken_plain_joint_is_listed_as_ignored_not_fatal():
    s = chain_stage()
    j = UsdPhysics.RevoluteJoint.Define(s, "/W/plain")
    j.CreateBody0Rel().SetTargets(["/W/A", "/W/B"])
    report = assemble(s)
    assert report.complete
    assert report.ignored == [("/W/plain", "unusable frames: /W/plain: physics:body0 has 2 targets; expected at most one")]
    assert "ignored  /W/plain" in report.summary()
