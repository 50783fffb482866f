"""Validation before simulating (usdphys.usd.reader.validate): impossible values are one-line
errors naming prim and attribute; relationships that lead nowhere usable are warnings that say
what was decided, and the stage still reads."""
from __future__ import annotations

import math

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas)
from pxr import Gf, Sdf, Usd

from test_stage_attribute_fuzz import RICH
from usdphys.errors import UsdphysError
from usdphys.usd.reader import read_stage

NAN, INF = float("nan"), float("inf")


def rich(**edits):
    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString(RICH)
    for path, value in edits.items():
        path = path.replace("__", ".")
        if isinstance(value, list):
            stage.GetRelationshipAtPath(path).SetTargets([Sdf.Path(p) for p in value])
        else:
            stage.GetAttributeAtPath(path).Set(value)
    return stage


ERRORS = [
    ("/World/A.xformOp:translate", Gf.Vec3d(NAN, 0, 0), "finite"),
    ("/World/A.xformOp:rotateXYZ", Gf.Vec3f(0, INF, 0), "finite"),
    ("/World/A.xformOp:scale", Gf.Vec3f(1, 0, 1), "non-zero scale"),
    ("/World/B.xformOp:transform", Gf.Matrix4d(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, NAN, 0, 0, 1), "finite"),
    ("/World/B.xformOp:transform", Gf.Matrix4d(0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1), "invertible"),
    ("/World/A.physics:principalAxes", Gf.Quatf(0, 0, 0, 0), "non-zero quaternion"),
    ("/World/A.physics:principalAxes", Gf.Quatf(NAN, 0, 0, 0), "non-zero quaternion"),
    ("/World/A.physics:mass", -1.0, ">= 0"),
    ("/World/A.physics:mass", NAN, ">= 0"),
    ("/World/B.physics:density", INF, ">= 0"),
    ("/World/A.physics:diagonalInertia", Gf.Vec3f(-0.01, 0.03, 0.04), ">= 0"),
    ("/World/A.physics:centerOfMass", Gf.Vec3f(0, -INF, 0), "finite"),
    ("/World/A.physics:velocity", Gf.Vec3f(0, NAN, 0), "finite"),
    ("/World/A/geom.radius", 0.0, "> 0"),
    ("/World/Scene.physics:gravityDirection", Gf.Vec3f(NAN, 0, -1), "finite"),
    ("/World/Scene.physics:gravityMagnitude", NAN, "finite"),
    ("/World/JA.physics:localPos0", Gf.Vec3f(0, INF, 1), "finite"),
    ("/World/JA.physics:localRot1", Gf.Quatf(0, 0, 0, 0), "non-zero quaternion"),
    ("/World/JA.physics:upperLimit", NAN, "a number"),
    ("/World/JA.drive:angular:physics:stiffness", -1.0, ">= 0"),
    ("/World/JA.drive:angular:physics:targetPosition", INF, "finite"),
]


@pytest.mark.parametrize("attr, value, expected", ERRORS, ids=[f"{a}={v}" for a, v, _ in ERRORS])
def test_impossible_values_are_one_line_errors(attr, value, expected):
    with pytest.raises(UsdphysError) as err:
        read_stage(rich(**{attr.replace(".", "__"): value}))
    msg = str(err.value)
    prim, name = attr.split(".")
    # transform ops are named prim.op (like every transform message), other attributes "prim: name"
    named = f"{prim}.{name} = " if name.startswith("xformOp:") else f"{prim}: {name} = "
    assert "\n" not in msg and msg.startswith(named) and expected in msg


def test_inertia_breaking_the_triangle_inequality_is_named_and_simulated(caplog):
    """(0.01, 0.02, 0.04): no rigid body has these moments, but shipped models do (a Chrono
    example has (0.2, 0.2, 0.534)) and the motion stays well posed: a warning, not an error."""
    with caplog.at_level("WARNING"):
        model, _ = read_stage(rich(**{"/World/A__physics:diagonalInertia": Gf.Vec3f(0.01, 0.02, 0.04)}))
    assert any(r.getMessage().startswith("/World/A: physics:diagonalInertia = (0.01, 0.02, 0.04) breaks the "
                                         "triangle inequality") for r in caplog.records)
    assert sorted(model.body_inertia[model.body_paths.index("/World/A")]) == pytest.approx([0.01, 0.02, 0.04])


def test_unset_sentinels_and_thin_bodies_stay_valid():
    """UsdPhysics' "not set" values read: a centre of mass of -inf, a gravity magnitude of -inf,
    zero mass and inertia (computed), a thin rod's (0, I, I), open limits."""
    read_stage(rich(**{"/World/A__physics:centerOfMass": Gf.Vec3f(-INF, -INF, -INF),
                       "/World/Scene__physics:gravityMagnitude": -INF,
                       "/World/A__physics:mass": 0.0, "/World/A__physics:diagonalInertia": Gf.Vec3f(0, 0.02, 0.02),
                       "/World/JA__physics:upperLimit": INF}))


@pytest.mark.parametrize("targets, said", [
    (["/World/Nowhere"], "targets /World/Nowhere, which does not exist: that side is the world"),
    (["/World/Scene"], "which is neither a rigid body nor transformable: that side is the world"),
    (["/World/A", "/World/B"], "has 2 targets; usd-core uses the first (/World/A)"),
])
def test_stray_joint_relationships_are_warnings_saying_what_was_decided(caplog, targets, said):
    with caplog.at_level("WARNING"):
        model, _ = read_stage(rich(**{"/World/JB__physics:body0": targets}))
    lines = [r.getMessage() for r in caplog.records if "/World/JB: physics:body0" in r.getMessage()]
    assert len(lines) == 1 and said in lines[0]
    assert "/World/JB" in model.joint_paths


def test_a_body_target_that_is_a_plain_xform_is_fixed_in_the_world(caplog):
    stage = rich()
    stage.DefinePrim("/World/Frame", "Xform")
    stage.GetRelationshipAtPath("/World/JB.physics:body0").SetTargets([Sdf.Path("/World/Frame")])
    with caplog.at_level("WARNING"):
        read_stage(stage)
    assert any("physics:body0 targets /World/Frame, which is not a rigid body: that side is fixed in the world"
               in r.getMessage() for r in caplog.records)


def test_the_model_root_as_body0_is_not_warned_about(caplog):
    """mujoco-usd-converter attaches root joints to the model's root prim (an ancestor of the
    body): the world, as meant; no warning."""
    stage = rich()
    stage.GetRelationshipAtPath("/World/JA.physics:body0").SetTargets([Sdf.Path("/World")])
    with caplog.at_level("WARNING"):
        read_stage(stage)
    assert not any("physics:body0" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("target, what", [("/World/Nowhere", "does not exist"),
                                          ("/World/Scene", "is not a PhysicsCollisionGroup")])
def test_a_filtered_group_that_is_not_a_group_is_ignored_with_a_warning(caplog, target, what):
    """A broken physics:filteredGroups reference (seen in the wild) drops that target only: the
    group still filters itself (its own target stays), and the model reads."""
    stage = rich()
    stage.GetRelationshipAtPath("/World/Group.physics:filteredGroups").SetTargets(
        [Sdf.Path("/World/Group"), Sdf.Path(target)])
    with caplog.at_level("WARNING"):
        model, _ = read_stage(stage)
    assert any(f"/World/Group: physics:filteredGroups targets {target}, which {what}; that target is ignored"
               in r.getMessage() for r in caplog.records)
    assert model.shapes is not None


def test_a_drive_type_token_is_not_taken_for_a_number():
    """drive:<dof>:physics:type is a token ("force" / "acceleration"): it is not a value to check
    (Newton's kamino stages author it; reading its letters as numbers was a traceback)."""
    stage = rich()
    joint = stage.GetPrimAtPath("/World/JA")
    joint.CreateAttribute("drive:angular:physics:type", Sdf.ValueTypeNames.Token).Set("force")
    model, _ = read_stage(stage)
    assert model.joint_count >= 1
