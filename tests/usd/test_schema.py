"""Every schema in schemas/schema.usda: kind, types, variability, fallbacks, apply rules.

The expected tables below are the specification (NewtonJointAPI proposal, docs/schemas.md),
written by hand: they are not read back from the generated files.
"""
import math

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Sdf, Usd, UsdPhysics

REG = Usd.SchemaRegistry()
U, V = Sdf.VariabilityUniform, Sdf.VariabilityVarying

# schema -> {attribute: (type name, variability, fallback)}; fallback None = no fallback
TYPED = {
    "MbdSpringDamper": {
        "mbd:localPos0": ("point3d", V, (0, 0, 0)), "mbd:localPos1": ("point3d", V, (0, 0, 0)),
        "mbd:stiffness": ("double", V, 0.0), "mbd:damping": ("double", V, 0.0),
        "mbd:restLength": ("double", V, 0.0), "mbd:preload": ("double", V, 0.0),
        "mbd:springForceCurve": ("double2[]", V, []), "mbd:dampingForceCurve": ("double2[]", V, []),
        "mbd:forceMapDeformation": ("double[]", V, []), "mbd:forceMapVelocity": ("double[]", V, []),
        "mbd:forceMapValues": ("double[]", V, []),
        "mbd:minLength": ("double", V, None), "mbd:maxLength": ("double", V, None),
        "mbd:springMass": ("double", V, 0.0), "mbd:springMassFraction": ("double", V, 0.5),
        "mbd:displayShape": ("token", U, "none"),
    },
    "MbdAxialSpringDamper": {
        "mbd:axis": ("vector3d", V, (1, 0, 0)), "mbd:stiffness": ("double", V, 0.0),
        "mbd:damping": ("double", V, 0.0), "mbd:offset": ("double", V, 0.0),
        "mbd:velocityOffset": ("double", V, 0.0), "mbd:force": ("double", V, 0.0),
        "mbd:active": ("bool", V, True),
    },
    "MbdRotationalSpringDamper": {
        "mbd:localRot0": ("quatd", V, (1, 0, 0, 0)), "mbd:localRot1": ("quatd", V, (1, 0, 0, 0)),
        "mbd:restAngle": ("double", V, 0.0), "mbd:stiffness": ("double", V, 0.0),
        "mbd:damping": ("double", V, 0.0), "mbd:preload": ("double", V, 0.0),
        "mbd:springTorqueCurve": ("double2[]", V, []), "mbd:dampingTorqueCurve": ("double2[]", V, []),
    },
    "MbdForce": {
        "mbd:localPos1": ("point3d", V, (0, 0, 0)), "mbd:force": ("vector3d", V, (0, 0, 0)),
        "mbd:resolveIn": ("token", U, "world"),
    },
    "MbdTorque": {"mbd:torque": ("vector3d", V, (0, 0, 0)), "mbd:resolveIn": ("token", U, "world")},
    "MbdMotor": {
        "mbd:dof": ("token", U, "angle"), "mbd:mode": ("token", U, "velocity"), "mbd:target": ("double", V, 0.0),
    },
    "MbdRevoluteSphericalJoint": {"mbd:distance": ("double", V, None), "physics:body0": None},
    "MbdRevoluteTranslationalJoint": {"mbd:distance": ("double", V, None), "physics:localRot1": ("quatf", V, (1, 0, 0, 0))},
    "MbdMateConnector": {
        "mbd:position": ("point3d", V, (0, 0, 0)), "mbd:mainAxis": ("vector3d", V, (0, 0, 1)),
        "mbd:normal": ("vector3d", V, (1, 0, 0)),
    },
}
TYPED_RELS = {
    "MbdSpringDamper": ["mbd:body0", "mbd:body1"], "MbdAxialSpringDamper": ["mbd:body0", "mbd:body1"],
    "MbdRotationalSpringDamper": ["mbd:body0", "mbd:body1"], "MbdForce": ["mbd:body0", "mbd:body1"],
    "MbdTorque": ["mbd:body0", "mbd:body1"], "MbdMotor": ["mbd:joint"],
}

APIS = {
    "NewtonJointAPI": {
        "newton:dofs": ("token[]", U, []), "newton:armature": ("float[]", U, []),
        "newton:staticFrictionEffort": ("float[]", U, []), "newton:dynamicFrictionEffort": ("float[]", U, []),
        "newton:viscousDamping": ("float[]", U, []),
    },
    "MbdTimeFunctionAPI": {
        "mbd:function:type": ("token", U, "constant"), "mbd:function:value": ("double", V, 0.0),
        "mbd:function:coefficients": ("double[]", V, []), "mbd:function:amplitude": ("double", V, 0.0),
        "mbd:function:frequency": ("double", V, 0.0), "mbd:function:phase": ("double", V, 0.0),
        "mbd:function:shift": ("double", V, 0.0), "mbd:function:slope": ("double", V, 0.0),
        "mbd:function:intercept": ("double", V, 0.0), "mbd:function:data": ("double2[]", V, []),
        "mbd:function:repeat": ("bool", V, False), "mbd:function:repeatStart": ("double", V, 0.0),
        "mbd:function:repeatWidth": ("double", V, 1.0), "mbd:function:repeatShift": ("double", V, 0.0),
    },
    "MbdBushingAPI": {
        f"mbd:bushing:{n}": ("double", V, 0.0)
        for n in ("linearStiffness", "linearDamping", "angularStiffness", "angularDamping",
                  "freeLinearStiffness", "freeLinearDamping", "freeAngularStiffness", "freeAngularDamping")
    },
    "MbdMateAPI": {},
    "MbdSimulationAPI": {"mbd:timeStep": ("double", V, None), "mbd:endTime": ("double", V, None),
                         "mbd:contactMethod": ("token", U, "nsc")},
    "MbdContactMaterialAPI": {"mbd:youngModulus": ("double", V, 2e7), "mbd:poissonRatio": ("double", V, 0.3),
                              "mbd:normalStiffness": ("double", V, None)},
    "MbdCollisionAPI": {"mbd:contactRadius": ("double", V, 0.0)},
}

# API -> (a prim type it may be applied to, a prim type it must refuse); None = any prim
APPLY_RULES = {
    "NewtonJointAPI": ("PhysicsRevoluteJoint", "Xform"),
    "MbdBushingAPI": ("PhysicsSphericalJoint", "Xform"),
    "MbdMateAPI": ("PhysicsFixedJoint", "Cube"),
    "MbdTimeFunctionAPI": ("MbdMotor", "PhysicsRevoluteJoint"),
    "MbdSimulationAPI": ("PhysicsScene", "Xform"),
    "MbdContactMaterialAPI": ("Material", None),
    "MbdCollisionAPI": ("Mesh", None),
}


def _check_props(definition, props):
    for name, spec in props.items():
        if spec is None:  # inherited relationship
            assert definition.GetPropertyDefinition(name), name
            continue
        type_name, variability, fallback = spec
        prop = definition.GetAttributeDefinition(name)
        assert prop, f"missing {name}"
        assert str(prop.GetTypeName()) == type_name, name
        assert prop.GetVariability() == variability, name
        value = prop.GetFallbackValue()
        if fallback is None:
            assert value is None, f"{name} should have no fallback, has {value}"
        elif isinstance(fallback, tuple) and len(fallback) == 4:
            assert (value.GetReal(), *value.GetImaginary()) == fallback, name
        elif isinstance(fallback, (tuple, list)):
            assert list(value) == list(fallback), name
        else:
            assert value == fallback, name


@pytest.mark.parametrize("type_name", sorted(TYPED))
def test_typed_schema_definition(type_name):
    definition = REG.FindConcretePrimDefinition(type_name)
    assert definition is not None, f"{type_name} not registered"
    _check_props(definition, TYPED[type_name])
    for rel in TYPED_RELS.get(type_name, []):
        assert definition.GetRelationshipDefinition(rel), rel


@pytest.mark.parametrize("api", sorted(APIS))
def test_api_schema_definition(api):
    definition = REG.FindAppliedAPIPrimDefinition(api)
    assert definition is not None, f"{api} not registered"
    assert Usd.SchemaRegistry.GetSchemaKind(Usd.SchemaRegistry.GetTypeFromSchemaTypeName(api)) == Usd.SchemaKind.SingleApplyAPI
    _check_props(definition, APIS[api])


def test_mate_api_relationships():
    definition = REG.FindAppliedAPIPrimDefinition("MbdMateAPI")
    assert definition.GetRelationshipDefinition("mbd:connector0")
    assert definition.GetRelationshipDefinition("mbd:connector1")


def test_extra_joints_are_physics_joints():
    stage = Usd.Stage.CreateInMemory()
    for t in ("MbdRevoluteSphericalJoint", "MbdRevoluteTranslationalJoint"):
        prim = stage.DefinePrim(f"/{t}", t)
        assert prim.IsA(UsdPhysics.Joint), t
        assert prim.CanApplyAPI("NewtonJointAPI")


@pytest.mark.parametrize("api", sorted(APPLY_RULES))
def test_can_apply_only_where_allowed(api):
    allowed, refused = APPLY_RULES[api]
    stage = Usd.Stage.CreateInMemory()
    ok = stage.DefinePrim("/ok", allowed)
    assert ok.CanApplyAPI(api)
    ok.ApplyAPI(api)
    assert ok.HasAPI(api)
    if refused:
        bad = stage.DefinePrim("/bad", refused)
        assert not bad.CanApplyAPI(api)
        assert not bad.HasAPI(api)


def test_newton_joint_api_example_from_proposal():
    """The proposal's 3-DOF planar example reads back with fallbacks for the rest."""
    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString('''#usda 1.0
def PhysicsJoint "Foo" ( prepend apiSchemas = ["NewtonJointAPI"] )
{
    uniform token[] newton:dofs = [ "transX", "transY", "rotZ" ]
    uniform float[] newton:armature = [ 0.1, 0.2, 0.3 ]
    uniform float[] newton:dynamicFrictionEffort = [10.0, 10.0, 10.0]
}''')
    prim = stage.GetPrimAtPath("/Foo")
    assert prim.HasAPI("NewtonJointAPI")
    assert list(prim.GetAttribute("newton:dofs").Get()) == ["transX", "transY", "rotZ"]
    assert [round(x, 6) for x in prim.GetAttribute("newton:armature").Get()] == [0.1, 0.2, 0.3]
    assert list(prim.GetAttribute("newton:viscousDamping").Get()) == []  # unspecified -> empty
    assert not prim.GetAttribute("newton:viscousDamping").HasAuthoredValue()


def test_allowed_tokens_declared():
    motor = REG.FindConcretePrimDefinition("MbdMotor")
    assert list(motor.GetPropertyDefinition("mbd:mode").GetMetadata("allowedTokens")) == ["position", "velocity", "force"]
    fn = REG.FindAppliedAPIPrimDefinition("MbdTimeFunctionAPI")
    assert list(fn.GetPropertyDefinition("mbd:function:type").GetMetadata("allowedTokens")) == [
        "constant", "polynomial", "sine", "ramp", "data"]


def test_every_schema_is_documented():
    """Each schema and attribute carries a doc string (usdview shows it)."""
    for name in list(TYPED) + list(APIS):
        definition = REG.FindConcretePrimDefinition(name) or REG.FindAppliedAPIPrimDefinition(name)
        assert definition.GetDocumentation().strip(), name
        for prop in definition.GetPropertyNames():
            if prop.startswith(("mbd:", "newton:")):
                assert definition.GetPropertyDefinition(prop).GetDocumentation().strip(), f"{name}.{prop}"
