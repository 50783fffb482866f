"""MuJoCo's scene flags as mujoco-usd-converter writes them (mjc:flag:* on the PhysicsScene)."""
from __future__ import annotations

import logging

import numpy as np
from pxr import Sdf, Usd

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.simulate import simulate
from usdphys.usd.reader import read_stage

STAGE = '''#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
)
def PhysicsScene "PhysicsScene"
{
%s
}
def Cube "ground" (prepend apiSchemas = ["PhysicsCollisionAPI"])
{
    double size = 2
    double3 xformOp:translate = (0, 0, -1)
    uniform token[] xformOpOrder = ["xformOp:translate"]
}
def Xform "box" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
{
    float physics:mass = 1
    double3 xformOp:translate = (0, 0, 0.6)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    def Cube "geom" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        double size = 1
    }
}
def PhysicsPrismaticJoint "slide"
{
    uniform token physics:axis = "Z"
    rel physics:body1 = </box>
    point3f physics:localPos0 = (0, 0, 0.6)
    float physics:lowerLimit = -0.3
    float physics:upperLimit = 0.1
}
'''


def stage(flags: str) -> Usd.Stage:
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(STAGE % flags)
    return Usd.Stage.Open(layer)


def test_flags_unset_keep_contact_gravity_and_limits():
    model, _ = read_stage(stage(""))
    assert model.shapes is not None and len(model.shapes) == 2
    assert np.allclose(model.gravity, [0, 0, -9.81])
    assert np.isfinite(model.joint_lower[0, 2])


def test_contact_off_means_no_contact():
    """The box starts 10 cm above the ground: with contact it lands on it (centre at 0.5 m); with
    MuJoCo's contact flag off it falls through to its slide limit 0.3 m below the start."""
    with_contact = simulate(stage(""), duration=0.3, dt=1e-3, fps=100)
    off = simulate(stage("bool mjc:flag:contact = 0"), duration=0.3, dt=1e-3, fps=100)
    assert abs(with_contact.positions[-1, 0, 0, 2] - 0.5) < 1e-3  # resting on the ground (top at z = 0)
    assert abs(off.positions[-1, 0, 0, 2] - 0.3) < 1e-6  # at the lower limit: 0.6 - 0.3


def test_gravity_and_limit_flags():
    model, _ = read_stage(stage("bool mjc:flag:gravity = 0\n    bool mjc:flag:limit = 0"))
    assert np.all(model.gravity == 0.0)
    assert np.all(np.isinf(model.joint_lower)) and np.all(np.isinf(model.joint_upper))


def test_flags_not_honoured_are_named_once(caplog):
    with caplog.at_level(logging.WARNING):
        read_stage(stage("bool mjc:flag:equality = 0\n    bool mjc:flag:frictionloss = 0\n    bool mjc:flag:energy = 1"))
    lines = [r.getMessage() for r in caplog.records if "MuJoCo flags" in r.getMessage()]
    assert len(lines) == 1
    assert "mjc:flag:equality" in lines[0] and "mjc:flag:frictionloss" in lines[0]
    assert "energy" not in lines[0]  # authored true: nothing turned off


def test_tendons_and_actuators_are_named_once_per_kind(caplog):
    """Five actuators and one tendon (mujoco-usd-converter's MjcActuator / MjcTendon prims):
    one warning per kind with the count and the first three paths shortened."""
    st = stage("")
    for i in range(5):
        st.DefinePrim(f"/Model/Physics/Actuators/motor{i}", "MjcActuator")
    st.DefinePrim("/Model/Physics/tendon", "MjcTendon")
    with caplog.at_level(logging.WARNING):
        read_stage(st)
    act = [r.getMessage() for r in caplog.records if "actuators" in r.getMessage()]
    ten = [r.getMessage() for r in caplog.records if "tendons" in r.getMessage()]
    assert len(act) == 1 and len(ten) == 1
    assert "5 MuJoCo actuators (.../Actuators/motor0, .../Actuators/motor1, .../Actuators/motor2, ...)" in act[0]
    assert "1 MuJoCo tendons (.../Physics/tendon)" in ten[0] and "not simulated" in ten[0]


def test_constraint_softness_is_named_once(caplog):
    """mjc:solref / mjc:solimp (MuJoCo's soft limits, equalities and contacts) on several prims:
    one warning with the count saying that usdphys keeps them rigid."""
    from pxr import Sdf

    st = stage("")
    for i in range(4):
        prim = st.DefinePrim(f"/Model/Physics/j{i}")
        prim.CreateAttribute("mjc:solreflimit" if i % 2 else "mjc:solref", Sdf.ValueTypeNames.DoubleArray).Set([0.02, 1])
    with caplog.at_level(logging.WARNING):
        read_stage(st)
    soft = [r.getMessage() for r in caplog.records if "constraint softness" in r.getMessage()]
    assert len(soft) == 1 and "4 prims author MuJoCo constraint softness" in soft[0] and "rigid" in soft[0]


def test_higher_order_joint_equality_terms_are_named(caplog):
    """MjcEqualityJointAPI's quadratic and higher terms: one warning, the coupling stays linear."""
    st = stage("")
    st.GetRootLayer().ImportFromString(st.GetRootLayer().ExportToString().replace(
        'float physics:upperLimit = 0.1', '''float physics:upperLimit = 0.1
}
def Xform "box2" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
{
    float physics:mass = 1
    double3 xformOp:translate = (2, 0, 0.6)
    uniform token[] xformOpOrder = ["xformOp:translate"]
}
def PhysicsPrismaticJoint "follow" (prepend apiSchemas = ["NewtonMimicAPI", "MjcEqualityJointAPI"])
{
    uniform token physics:axis = "Z"
    rel physics:body1 = </box2>
    point3f physics:localPos0 = (2, 0, 0.6)
    rel newton:mimicJoint = </slide>
    uniform double mjc:coef2 = 0.5'''))
    with caplog.at_level(logging.WARNING):
        model, _ = read_stage(st)
    lines = [r.getMessage() for r in caplog.records if "mjc:coef2" in r.getMessage()]
    assert len(lines) == 1 and "/follow" in lines[0] and "linear" in lines[0]
    assert len(model.elements.couplings) == 1
