"""`usdphys check`: one failing stage per rule, with the message asserted."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Usd

from usdphys.usd.check import check_stage

REPO = Path(__file__).resolve().parents[2]
MISTAKES = REPO / "assets" / "schema" / "hand_authored_mistakes.usda"

HEADER = '''#usda 1.0
(
    defaultPrim = "W"
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "W" {
    def Xform "A" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsArticulationRootAPI"] ) {}
    def Xform "B" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {}
    def Xform "NotABody" {}
    def PhysicsRevoluteJoint "Rev" {
        rel physics:body0 = </W/A>
        rel physics:body1 = </W/B>
    }
'''


def stage_from(body: str) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    body = body.replace("{ ", "{\n").replace(" }", "\n}")  # usda wants one property per line
    stage.GetRootLayer().ImportFromString(HEADER + body + "\n}\n")
    return stage


def findings(body: str):
    return [f for f in check_stage(stage_from(body)) if not f.rule.startswith("usd:")]


def without_per_dof_note(found):
    return [f for f in found if f.rule != "newton-per-dof-form"]


def only(body: str, rule: str):
    hits = [f for f in findings(body) if f.rule == rule]
    assert hits, f"no {rule} finding; got {[str(f) for f in findings(body)]}"
    return hits


def test_clean_stage_has_no_findings():
    # per-DOF data always carries the one interop note that Newton does not read it
    assert without_per_dof_note(check_stage(stage_from('''
    def PhysicsJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body1 = </W/A>
        uniform token[] newton:dofs = ["transX", "rotZ"]
        uniform float[] newton:armature = [0.1, 0.2]
        uniform float[] newton:staticFrictionEffort = [2, 2]
        uniform float[] newton:dynamicFrictionEffort = [1, 2]
    }'''))) == []


@pytest.mark.parametrize("body, rule, path, text", [
    ('def Xform "X" ( prepend apiSchemas = ["NewtonJointAPI"] ) {}',
     "newton-apply-target", "/W/X", "applies only to PhysicsJoint prims"),
    ('def PhysicsJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) { rel physics:body1 = </W/A>\n'
     ' uniform token[] newton:dofs = ["rotX", "rotX"] }',
     "newton-duplicate-dof", "/W/J", "names 'rotX' more than once"),
    ('def PhysicsPrismaticJoint "P" ( prepend apiSchemas = ["NewtonJointAPI"] ) { rel physics:body1 = </W/A>\n'
     ' uniform token[] newton:dofs = ["angle"] }',
     "newton-invalid-dof", "/W/P", "'angle' is not a DOF of a PhysicsPrismaticJoint; expected one of: distance"),
    ('def PhysicsFixedJoint "F" ( prepend apiSchemas = ["NewtonJointAPI"] ) { rel physics:body1 = </W/A>\n'
     ' uniform token[] newton:dofs = ["transX"] }',
     "newton-invalid-dof", "/W/F", "expected one of: none"),
    ('def PhysicsJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) { rel physics:body1 = </W/A>\n'
     ' uniform token[] newton:dofs = ["transX", "transY", "rotZ"]\n uniform float[] newton:viscousDamping = [1, 2] }',
     "newton-array-length", "/W/J", "newton:viscousDamping has 2 values but newton:dofs has 3"),
    ('def PhysicsJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) { rel physics:body1 = </W/A>\n'
     ' uniform token[] newton:dofs = ["transX"]\n uniform float[] newton:armature = [-0.5] }',
     "newton-negative-value", "/W/J", "newton:armature[0] (transX) = -0.5: must be a finite value >= 0"),
    ('def PhysicsRevoluteJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) { rel physics:body1 = </W/A>\n'
     ' uniform token[] newton:dofs = ["angle"]\n uniform float[] newton:staticFrictionEffort = [1]\n'
     ' uniform float[] newton:dynamicFrictionEffort = [3] }',
     "newton-friction-order", "/W/J", "dynamicFrictionEffort[0] (angle) = 3 exceeds newton:staticFrictionEffort[0] = 1"),
    ('def MbdMotor "M" { rel mbd:joint = </W/Rev>\n uniform token mbd:mode = "SPEED" }',
     "unknown-token", "/W/M.mbd:mode", "'SPEED' is not an allowed value of mbd:mode; expected one of: position, velocity, force"),
    ('def MbdForce "L" { rel mbd:body1 = [</W/A>, </W/B>] }',
     "relationship-arity", "/W/L.mbd:body1", "has 2 targets; expected at most one"),
    ('def MbdSpringDamper "S" { rel mbd:body0 = </W/A>\n rel mbd:body1 = </W/Gone> }',
     "relationship-missing-target", "/W/S.mbd:body1", "points at /W/Gone, which does not exist; expected a rigid body"),
    ('def MbdSpringDamper "S" { rel mbd:body0 = </W/NotABody> }',
     "relationship-wrong-target", "/W/S.mbd:body0", "points at /W/NotABody (Xform), which is not a rigid body"),
    ('def MbdMotor "M" { rel mbd:joint = </W/A> }',
     "relationship-wrong-target", "/W/M.mbd:joint", "which is not a PhysicsJoint"),
    ('def PhysicsFixedJoint "J" ( prepend apiSchemas = ["MbdMateAPI"] ) { rel mbd:connector0 = </W/A> }',
     "relationship-wrong-target", "/W/J.mbd:connector0", "which is not an MbdMateConnector"),
    ('def MbdRotationalSpringDamper "R" {}',
     "element-missing-body", "/W/R", "connects no body"),
    ('def MbdTorque "T" { rel mbd:body0 = </W/A> }',
     "element-missing-body", "/W/T", "MbdTorque needs mbd:body1"),
    ('def MbdAxialSpringDamper "X" { rel mbd:body0 = </W/A>\n vector3d mbd:axis = (0, 0, 0) }',
     "axis-zero", "/W/X", "mbd:axis is the zero vector"),
    ('def Xform "Sys" { def MbdMateConnector "C" { vector3d mbd:mainAxis = (0, 0, 2)\n vector3d mbd:normal = (0, 0, -1) } }',
     "connector-axis", "/W/Sys/C", "is parallel to mbd:mainAxis"),
    ('def MbdSpringDamper "S" { rel mbd:body0 = </W/A>\n double2[] mbd:springForceCurve = [(0, 0), (1, 5), (0.5, 7)] }',
     "curve-order", "/W/S", "mbd:springForceCurve abscissae must be strictly ascending"),
    ('def MbdSpringDamper "S" { rel mbd:body0 = </W/A>\n double[] mbd:forceMapDeformation = [0, 1, 2]\n'
     ' double[] mbd:forceMapVelocity = [-1, 1]\n double[] mbd:forceMapValues = [1, 2, 3, 4, 5] }',
     "map-shape", "/W/S", "has 5 values; expected len(forceMapVelocity) x len(forceMapDeformation) = 2 x 3"),
    ('def MbdSpringDamper "S" { rel mbd:body0 = </W/A>\n double mbd:minLength = 2\n double mbd:maxLength = 1 }',
     "length-stops", "/W/S", "mbd:minLength 2.0 exceeds mbd:maxLength 1.0"),
    ('def MbdMotor "M" {}',
     "motor-joint", "/W/M", "MbdMotor needs mbd:joint"),
    ('def MbdMotor "M" { rel mbd:joint = </W/Rev>\n uniform token mbd:dof = "distance" }',
     "motor-dof", "/W/M", "mbd:dof 'distance' is not a DOF of /W/Rev (PhysicsRevoluteJoint); expected one of: angle"),
    ('def MbdMotor "M" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) { rel mbd:joint = </W/Rev>\n'
     ' uniform token mbd:function:type = "data" }',
     "function-data", "/W/M", "mbd:function:type is 'data' but mbd:function:data is empty"),
    ('def MbdMotor "M" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) { rel mbd:joint = </W/Rev>\n'
     ' uniform token mbd:function:type = "polynomial" }',
     "function-data", "/W/M", "but mbd:function:coefficients is empty"),
    ('def MbdMotor "M" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) { rel mbd:joint = </W/Rev>\n'
     ' bool mbd:function:repeat = true\n double mbd:function:repeatWidth = 0 }',
     "function-repeat", "/W/M", "mbd:function:repeatWidth = 0.0: must be > 0"),
    ('def Xform "X" ( prepend apiSchemas = ["MbdBushingAPI"] ) {}',
     "api-apply-target", "/W/X", "MbdBushingAPI cannot be applied here"),
])
def test_rule(body, rule, path, text):
    hits = only(body, rule)
    assert any(f.path == path and text in f.message and f.severity == "error" for f in hits), [str(f) for f in hits]


def test_scalar_newton_form_is_a_warning_not_an_error():
    hits = findings('''def PhysicsRevoluteJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body1 = </W/A>
        float newton:armature = 0.1
        float newton:friction = 0.2
    }''')
    assert [f.rule for f in hits] == ["newton-scalar-form"]
    assert hits[0].severity == "warning" and "broadcast to every DOF" in hits[0].message


def test_scalar_armature_is_not_a_usd_core_type_error():
    """newton-usd-schemas' `float newton:armature` (what mujoco-usd-converter writes on every
    joint with armature) against our per-DOF `float[]`: usd-core's validator called it a type
    mismatch error, 16 of them on gymnasium's kitchen, on a stage usdphys reads and runs. The
    scalar-form warning says it once; a real type mismatch is still usd-core's error."""
    found = check_stage(stage_from('''def PhysicsRevoluteJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body1 = </W/A>
        float newton:armature = 0.1
    }
    def Xform "M" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] ) {
        int physics:mass = 2
    }'''))
    mismatch = [f for f in found if "AttributeTypeMismatch" in f.rule]
    assert len(mismatch) == 1 and mismatch[0].severity == "error" and "physics:mass" in mismatch[0].message, \
        [str(f) for f in found]
    assert [f.rule for f in found if f.path == "/W/J"] == ["newton-scalar-form"]


def test_friction_compared_only_where_both_authored():
    """The proposal's own example authors dynamic friction alone: not an error."""
    assert without_per_dof_note(findings('''def PhysicsJoint "J" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body1 = </W/A>
        uniform token[] newton:dofs = ["transX", "transY", "rotZ"]
        uniform float[] newton:dynamicFrictionEffort = [10.0, 10.0, 10.0]
    }''')) == []


def test_usd_core_validators_are_reported():
    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString('#usda 1.0\ndef Xform "W" {}\n')
    rules = {f.rule for f in check_stage(stage)}
    assert "usd:usdGeomValidators:StageMetadataChecker.MissingUpAxisMetadata" in rules
    assert "usd:usdGeomValidators:StageMetadataChecker.MissingMetersPerUnitMetadata" in rules


def _usdphys():
    beside = Path(sys.executable).with_name("usdphys")
    return str(beside) if beside.exists() else shutil.which("usdphys")


def test_hand_authored_stage_every_mistake_explained():
    """The new-user file: each MISTAKE line is named, exit 1, no traceback."""
    res = subprocess.run([_usdphys(), "check", str(MISTAKES)], capture_output=True, text=True)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    out = res.stdout
    expected = [
        "/World/Hinge: newton:dofs token 'rotX' is not a DOF of a PhysicsRevoluteJoint",
        "/World/Hinge: newton:armature has 1 values but newton:dofs has 2",
        "/World/Hinge: newton:dynamicFrictionEffort[0] (angle) = 0.8 exceeds newton:staticFrictionEffort[0] = 0.5",
        "/World/Hinge: newton:viscousDamping[0] (angle) = -0.01: must be a finite value >= 0",
        "/World/Planar: newton:dofs names 'transX' more than once",
        "/World/Motor.mbd:mode: 'speed' is not an allowed value of mbd:mode",
        "/World/Spring.mbd:body0: mbd:body0 points at /World/Marker (Xform), which is not a rigid body",
        "/World/Spring.mbd:body1: mbd:body1 points at /World/Bob, which does not exist",
    ]
    for line in expected:
        assert line in out, f"missing: {line}\n---\n{out}"
    planted = MISTAKES.read_text().count("# MISTAKE")
    assert out.count("error: ") == planted == len(expected)


def test_cli_clean_stage_exits_zero(tmp_path):
    path = tmp_path / "ok.usda"
    stage = stage_from("")  # keep a reference: the root layer lives only as long as the stage
    stage.GetRootLayer().Export(str(path))
    res = subprocess.run([_usdphys(), "check", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().endswith("0 error(s), 0 warning(s)")


def test_cli_missing_and_unreadable_input(tmp_path):
    res = subprocess.run([_usdphys(), "check", str(tmp_path / "nope.usda")], capture_output=True, text=True)
    assert res.returncode == 1 and "no such file" in res.stderr and "Traceback" not in res.stderr
    bad = tmp_path / "bad.usda"
    bad.write_text("#usda 1.0\ndef Xform \"W\" {\n  this is not usda\n")
    res = subprocess.run([_usdphys(), "check", str(bad)], capture_output=True, text=True)
    assert res.returncode == 1 and "cannot open as a USD stage" in res.stderr and "Traceback" not in res.stderr
