"""Reading Mbd* elements, loads, motors, bushings and NewtonJointAPI into SI tables."""
import math

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Usd

import reference.laws as np_ref
from usdphys.types import laws as law_types
from usdphys.solver import timefunc as tf
from usdphys.types import timefunc as tf_types
from usdphys.types.elements import MODE_FORCE, MODE_POSITION, MODE_VELOCITY, RESOLVE_BODY1, RESOLVE_WORLD
from usdphys.usd.reader.elements import read_elements
from usdphys.errors import UsdphysError

# Conversions multiply by factors like 0.01 or 180/pi: a few ulps, far below 1e-12 relative.
RTOL = 1e-12
BODIES = {"/W/A": 0, "/W/B": 1, "/W/Static": -1}
R2D = 180.0 / math.pi


def stage_from(body: str, mpu: float = 1.0, kpu: float = 1.0, tcps: float = 24.0) -> Usd.Stage:
    text = f'''#usda 1.0
(
    defaultPrim = "W"
    metersPerUnit = {mpu}
    kilogramsPerUnit = {kpu}
    timeCodesPerSecond = {tcps}
    upAxis = "Z"
)
def Xform "W" {{
    def Xform "A" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {{}}
    def Xform "B" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {{}}
    def Xform "Static" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {{
        double3 xformOp:translate = (10, 0, 0)
        float3 xformOp:rotateXYZ = (0, 0, 90)
        float3 xformOp:scale = (2, 2, 2)
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ", "xformOp:scale"]
    }}
    def Xform "NotABody" {{}}
    def PhysicsRevoluteJoint "Rev" {{
        rel physics:body0 = </W/A>
        rel physics:body1 = </W/B>
    }}
    def PhysicsPrismaticJoint "Pri" {{
        rel physics:body0 = </W/A>
        rel physics:body1 = </W/B>
    }}
{body}
}}
'''
    stage = Usd.Stage.CreateInMemory()
    assert stage.GetRootLayer().ImportFromString(text)
    return stage


def read(stage, **kw):
    return read_elements(stage, BODIES.__getitem__, **kw)


def fn_eval(elements, fn, t):
    """(u, du) through the Warp evaluator of the packed table."""
    u, du = tf.evaluate_packed_warp(elements.functions, np.full(np.size(t), fn), np.atleast_1d(t))
    return u, du


# -- MbdSpringDamper ---------------------------------------------------------------------------
SPRING = '''
    def MbdSpringDamper "S" {
        rel mbd:body0 = </W/A>
        rel mbd:body1 = </W/B>
        point3d mbd:localPos0 = (1, 2, 3)
        point3d mbd:localPos1 = (0, 0, -4)
        double mbd:stiffness = 50
        double mbd:damping = 5
        double mbd:restLength = 100
        double mbd:preload = 2
        double2[] mbd:dampingForceCurve = [(-10, -7), (10, 7)]
        double mbd:minLength = 20
        double mbd:maxLength = 300
        double mbd:springMass = 1000
        double mbd:springMassFraction = 0.25
    }
    def MbdSpringDamper "ToWorld" {
        rel mbd:body1 = </W/B>
        double mbd:stiffness = 1
    }
'''


def test_spring_damper_si():
    sd = read(stage_from(SPRING)).spring_dampers
    assert sd.paths == ["/W/S", "/W/ToWorld"]
    assert sd.body0.tolist() == [0, -1] and sd.body1.tolist() == [1, 1]
    np.testing.assert_array_equal(sd.local_pos0[0], [1, 2, 3])
    np.testing.assert_array_equal(sd.laws.law_f[0], [50, 5, 100, 2])
    assert sd.laws.law_i[0, law_types.LI_SPRING_N] == 0 and sd.laws.law_i[0, law_types.LI_DAMP_N] == 2
    assert sd.min_length[0] == 20 and sd.max_length[0] == 300
    assert np.isnan(sd.min_length[1]) and np.isnan(sd.max_length[1])  # unauthored: no stop
    assert sd.spring_mass.tolist() == [1000, 0] and sd.spring_mass_fraction.tolist() == [0.25, 0.5]


def test_spring_damper_unit_conversion_cm_g():
    # cm and g: length x 0.01, mass x 0.001, force unit g cm / s^2 = 1e-5 N, k unit g/s^2 = 1e-3 N/m
    sd = read(stage_from(SPRING, mpu=0.01, kpu=0.001)).spring_dampers
    np.testing.assert_allclose(sd.local_pos0[0], [0.01, 0.02, 0.03], rtol=RTOL)
    np.testing.assert_allclose(sd.laws.law_f[0], [0.05, 0.005, 1.0, 2e-5], rtol=RTOL)
    assert sd.min_length[0] == pytest.approx(0.2, rel=RTOL) and sd.max_length[0] == pytest.approx(3.0, rel=RTOL)
    assert sd.spring_mass[0] == pytest.approx(1.0, rel=RTOL)
    off = sd.laws.law_i[0, law_types.LI_DAMP_OFF]
    # damping curve (cm/s, dyn) -> (m/s, N): (-10, -7) -> (-0.1, -7e-5)
    np.testing.assert_allclose(sd.laws.data[off:off + 4], [-0.1, -7e-5, 0.1, 7e-5], rtol=RTOL)
    # the law itself: L = 1.5 m (150 cm), Ldot = 0.05 m/s: f = 2e-5 - 0.05 * 0.5 - C(0.05)
    f = np_ref.law_np(law_types.ScalarLaw(k=0.05, x0=1.0, preload=2e-5, damping_curve=[(-0.1, -7e-5), (0.1, 7e-5)]), 1.5, 0.05)[0]
    assert f == pytest.approx(2e-5 - 0.025 - 3.5e-5, rel=RTOL)


def test_spring_damper_map_read_row_major():
    sd = read(stage_from('''
    def MbdSpringDamper "M" {
        rel mbd:body1 = </W/B>
        double[] mbd:forceMapDeformation = [0, 1, 2]
        double[] mbd:forceMapVelocity = [-1, 1]
        double[] mbd:forceMapValues = [0, 10, 30, 5, 15, 35]
    }''')).spring_dampers
    li = sd.laws.law_i[0]
    assert (li[law_types.LI_MAP_NX], li[law_types.LI_MAP_NY]) == (3, 2)
    np.testing.assert_array_equal(sd.laws.data[li[law_types.LI_MAP_OFF]:li[law_types.LI_MAP_OFF] + 11], [0, 1, 2, -1, 1, 0, 10, 30, 5, 15, 35])


def test_static_body_points_and_frames_go_to_world():
    e = read(stage_from('''
    def MbdSpringDamper "S" {
        rel mbd:body0 = </W/Static>
        rel mbd:body1 = </W/A>
        point3d mbd:localPos0 = (1, 0, 0)
        point3d mbd:localPos1 = (1, 0, 0)
    }
    def MbdRotationalSpringDamper "R" {
        rel mbd:body0 = </W/Static>
        rel mbd:body1 = </W/A>
    }
    def MbdForce "F" {
        rel mbd:body0 = </W/Static>
        rel mbd:body1 = </W/A>
        uniform token mbd:resolveIn = "body0"
        vector3d mbd:force = (1, 0, 0)
    }''', mpu=0.5))
    sd = e.spring_dampers
    # static prim: translate (10, 0, 0), Rz 90, scale 2 -> local (1, 0, 0) is world (10, 2, 0) units
    np.testing.assert_allclose(sd.local_pos0[0], [5.0, 1.0, 0.0], rtol=RTOL, atol=1e-14)
    np.testing.assert_array_equal(sd.local_pos1[0], [0.5, 0, 0])  # dynamic body: its prim frame
    h = math.sqrt(0.5)
    np.testing.assert_allclose(e.rotational_spring_dampers.local_rot0[0], [0, 0, h, h], rtol=RTOL, atol=1e-15)
    np.testing.assert_array_equal(e.rotational_spring_dampers.local_rot1[0], [0, 0, 0, 1])
    assert e.loads.resolve_in.tolist() == [RESOLVE_WORLD]  # axes of the static body, folded in
    np.testing.assert_allclose(e.loads.world_rot[0], [0, 0, h, h], rtol=RTOL, atol=1e-15)


def test_body_scale_multiplies_attachment_points():
    sd = read(stage_from(SPRING), body_scale=lambda p: (2.0, 2.0, 0.5) if p == "/W/A" else (1.0, 1.0, 1.0)).spring_dampers
    np.testing.assert_array_equal(sd.local_pos0[0], [2, 4, 1.5])
    np.testing.assert_array_equal(sd.local_pos1[0], [0, 0, -4])


# -- axial and rotational ------------------------------------------------------------------------
def test_axial_spring_damper():
    ax = read(stage_from('''
    def MbdAxialSpringDamper "X" {
        rel mbd:body0 = </W/Static>
        rel mbd:body1 = </W/A>
        vector3d mbd:axis = (0, 3, 4)
        double mbd:stiffness = 2000
        double mbd:damping = 20
        double mbd:offset = 10
        double mbd:velocityOffset = 1
        double mbd:force = 3
        bool mbd:active = false
    }''', mpu=0.1)).axial_spring_dampers
    assert ax.body0.tolist() == [-1] and ax.body1.tolist() == [0]
    # body0 is static (index -1): its axis is rotated into the world (Rz 90: y -> -x)
    np.testing.assert_allclose(ax.axis[0], [-0.6, 0, 0.8], rtol=RTOL, atol=1e-15)
    assert ax.stiffness[0] == 2000 and ax.damping[0] == 20  # force/distance = kpu: unchanged
    np.testing.assert_allclose([ax.offset[0], ax.velocity_offset[0], ax.force[0]], [1.0, 0.1, 0.3], rtol=RTOL)
    assert ax.active.tolist() == [0]


def test_rotational_spring_damper_degrees_to_radians():
    rs = read(stage_from('''
    def MbdRotationalSpringDamper "R" {
        rel mbd:body0 = </W/A>
        rel mbd:body1 = </W/B>
        quatd mbd:localRot0 = (0.7071067811865476, 0.7071067811865476, 0, 0)
        double mbd:restAngle = 90
        double mbd:stiffness = 0.5
        double mbd:damping = 0.1
        double mbd:preload = 1
        double2[] mbd:springTorqueCurve = [(-180, 10), (180, -10)]
    }''')).rotational_spring_dampers
    np.testing.assert_allclose(rs.local_rot0[0], [0.7071067811865476, 0, 0, 0.7071067811865476], rtol=RTOL)  # xyzw
    np.testing.assert_array_equal(rs.local_rot1[0], [0, 0, 0, 1])
    np.testing.assert_allclose(rs.laws.law_f[0], [0.5 * R2D, 0.1 * R2D, math.pi / 2, 1.0], rtol=RTOL)
    off = rs.laws.law_i[0, law_types.LI_SPRING_OFF]
    np.testing.assert_allclose(rs.laws.data[off:off + 4], [-math.pi, 10, math.pi, -10], rtol=RTOL)
    # 5 degrees past rest with the curve: K(5 deg) = -10 * 5/180, no damping curve -> c term
    law = law_types.ScalarLaw(*rs.laws.law_f[0], spring_curve=[(-math.pi, 10), (math.pi, -10)])
    f = np_ref.law_np(law, math.radians(95.0), math.radians(2.0))[0]
    assert f == pytest.approx(1 + 10 * 5 / 180 - 0.1 * 2, rel=RTOL)


# -- loads -------------------------------------------------------------------------------------
def test_force_time_samples_times_function():
    e = read(stage_from('''
    def MbdForce "F" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) {
        rel mbd:body1 = </W/A>
        point3d mbd:localPos1 = (0, 0, 5)
        vector3d mbd:force.timeSamples = { 0: (0, 0, 0), 20: (10, 0, -4), 30: (10, 2, -4) }
        uniform token mbd:function:type = "ramp"
        double mbd:function:intercept = 1
        double mbd:function:slope = 0.5
    }
    def MbdTorque "T" {
        rel mbd:body0 = </W/B>
        rel mbd:body1 = </W/A>
        vector3d mbd:torque = (0, 0, 7)
        uniform token mbd:resolveIn = "body1"
    }''', tcps=10.0, kpu=2.0))
    ld = e.loads
    assert ld.paths == ["/W/F", "/W/T"] and ld.torque.tolist() == [0, 1]
    assert ld.body0.tolist() == [-1, 1] and ld.body1.tolist() == [0, 0]
    assert ld.resolve_in.tolist() == [RESOLVE_WORLD, RESOLVE_BODY1]
    np.testing.assert_array_equal(ld.local_pos1, [[0, 0, 5], [0, 0, 0]])
    # samples at 0, 2, 3 s (time codes / 10 per second); force unit kpu = 2: x2
    t = np.array([-1.0, 1.0, 2.5, 9.0])
    vec = np.stack([fn_eval(e, ld.vector_fn[0, i], t)[0] for i in range(3)], axis=1)
    np.testing.assert_allclose(vec, [[0, 0, 0], [10, 0, -4], [20, 2, -8], [20, 4, -8]], rtol=RTOL, atol=1e-15)
    scale = fn_eval(e, ld.scale_fn[0], t)[0]
    np.testing.assert_allclose(scale, 1 + 0.5 * t, rtol=RTOL)
    # the torque: constant 7 (x kpu x mpu^2 = 2), scale function 1
    tq = [fn_eval(e, ld.vector_fn[1, i], [0.3])[0][0] for i in range(3)]
    assert tq == [0.0, 0.0, 14.0] and fn_eval(e, ld.scale_fn[1], [5.0])[0][0] == 1.0


def test_held_interpolation_gives_steps():
    # interpolation is a property of the opened stage (Usd.Stage.SetInterpolationType)
    stage = stage_from('''
    def MbdForce "F" {
        rel mbd:body1 = </W/A>
        vector3d mbd:force.timeSamples = { 0: (1, 0, 0), 24: (3, 0, 0) }
    }''')
    stage.SetInterpolationType(Usd.InterpolationTypeHeld)
    e = read(stage)
    u, du = fn_eval(e, e.loads.vector_fn[0, 0], [0.5, 1.5])
    assert u.tolist() == [1.0, 3.0] and du.tolist() == [0.0, 0.0]


# -- motors ------------------------------------------------------------------------------------
def test_motors_functions_units_and_modes():
    e = read(stage_from('''
    def MbdMotor "Spin" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) {
        rel mbd:joint = </W/Rev>
        uniform token mbd:dof = "angle"
        uniform token mbd:mode = "velocity"
        uniform token mbd:function:type = "data"
        double2[] mbd:function:data = [(0, 0), (1, 180), (4, 180), (5, 0)]
        bool mbd:function:repeat = true
        double mbd:function:repeatStart = 0
        double mbd:function:repeatWidth = 16
        double mbd:function:repeatShift = 16
    }
    def MbdMotor "Slide" {
        rel mbd:joint = </W/Pri>
        uniform token mbd:dof = "distance"
        uniform token mbd:mode = "position"
        double mbd:target.timeSamples = { 0: 0, 48: 50 }
    }
    def MbdMotor "Push" {
        rel mbd:joint = </W/Rev>
        uniform token mbd:mode = "force"
        double mbd:target = 3
    }''', mpu=0.01, kpu=1000.0), joint_index={"/W/Rev": 0, "/W/Pri": 1}.__getitem__)
    m = e.motors
    assert m.paths == ["/W/Spin", "/W/Slide", "/W/Push"]
    assert m.joint_paths == ["/W/Rev", "/W/Pri", "/W/Rev"] and m.joint.tolist() == [0, 1, 0]
    assert m.dof == ["angle", "distance", "angle"] and m.angular.tolist() == [1, 0, 1]
    assert m.mode.tolist() == [MODE_VELOCITY, MODE_POSITION, MODE_FORCE]
    # angular speed in deg/s -> rad/s; repeat: t = 16.5 s is 0.5 s into the profile
    u, du = fn_eval(e, m.fn[0], [0.5, 16.5, 4.5])
    np.testing.assert_allclose(u, [math.pi / 2, math.pi / 2, math.pi / 2], rtol=RTOL)
    np.testing.assert_allclose(du, [math.pi, math.pi, -math.pi], rtol=RTOL)
    # 50 cm over 2 s (48 codes at 24/s) -> 0.25 m at 1 s, 0.25 m/s
    u, du = fn_eval(e, m.fn[1], [1.0])
    assert u[0] == pytest.approx(0.25, rel=RTOL) and du[0] == pytest.approx(0.25, rel=RTOL)
    # torque 3 (kg cm^2/s^2 with kpu = 1000 -> 1000 * 1e-4 = 0.1 N m per unit)
    assert fn_eval(e, m.fn[2], [7.0])[0][0] == pytest.approx(0.3, rel=RTOL)


# -- bushings and NewtonJointAPI -----------------------------------------------------------------
def test_bushing_units():
    b = read(stage_from('''
    def PhysicsRevoluteJoint "Bush" ( prepend apiSchemas = ["MbdBushingAPI"] ) {
        rel physics:body0 = </W/A>
        rel physics:body1 = </W/B>
        double mbd:bushing:linearStiffness = 1e7
        double mbd:bushing:linearDamping = 1e3
        double mbd:bushing:angularStiffness = 2
        double mbd:bushing:angularDamping = 0.5
        double mbd:bushing:freeAngularStiffness = 1
    }''', mpu=0.001), joint_index=lambda p: 7).bushings
    assert b.joint_paths == ["/W/Bush"] and b.joint.tolist() == [7]
    assert b.linear_stiffness[0] == 1e7 and b.linear_damping[0] == 1e3  # N/m: kpu only
    # torque unit in mm: 1e-6 N m; per degree -> per radian x 180/pi
    np.testing.assert_allclose([b.angular_stiffness[0], b.angular_damping[0], b.free_angular_stiffness[0]],
                               [2e-6 * R2D, 0.5e-6 * R2D, 1e-6 * R2D], rtol=RTOL)
    assert b.free_linear_stiffness[0] == 0 and b.free_angular_damping[0] == 0


def test_newton_per_dof_and_scalar_forms():
    j = read(stage_from('''
    def PhysicsJoint "Planar" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body0 = </W/A>
        uniform token[] newton:dofs = ["transX", "rotZ"]
        uniform float[] newton:armature = [0.5, 0.25]
        uniform float[] newton:dynamicFrictionEffort = [10, 2]
        uniform float[] newton:viscousDamping = [4, 0.5]
    }
    def PhysicsRevoluteJoint "NewtonStyle" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body0 = </W/A>
        float newton:armature = 0.5
        float newton:friction = 0.25
        float newton:damping = 2
    }
    def PhysicsJoint "Locked" ( prepend apiSchemas = ["NewtonJointAPI", "PhysicsLimitAPI:transX", "PhysicsLimitAPI:transY", "PhysicsLimitAPI:transZ", "PhysicsLimitAPI:rotX"] ) {
        rel physics:body0 = </W/A>
        float limit:transX:physics:low = 1
        float limit:transX:physics:high = -1
        float limit:transY:physics:low = 1
        float limit:transY:physics:high = -1
        float limit:transZ:physics:low = 1
        float limit:transZ:physics:high = -1
        float limit:rotX:physics:low = -10
        float limit:rotX:physics:high = 10
        float newton:friction = 1
    }''', mpu=0.01)).joint_dofs
    assert j.joint_paths == ["/W/Planar"] * 2 + ["/W/NewtonStyle"] + ["/W/Locked"] * 3
    assert j.dof == ["transX", "rotZ", "angle", "rotX", "rotY", "rotZ"]
    assert j.angular.tolist() == [0, 1, 1, 1, 1, 1] and j.scalar_form.tolist() == [0, 0, 1, 1, 1, 1]
    c = 1e-4  # torque unit at cm: kpu * mpu^2; force unit: 0.01
    np.testing.assert_allclose(j.armature[:3], [0.5, 0.25 * c, 0.5 * c], rtol=1e-6)  # float32 authored
    # only dynamic authored: static = dynamic
    np.testing.assert_allclose(j.static_friction[:2], [10 * 0.01, 2 * c], rtol=1e-6)
    np.testing.assert_allclose(j.dynamic_friction[:2], [10 * 0.01, 2 * c], rtol=1e-6)
    # viscous: linear force s / distance = kpu (unchanged); angular per degree -> per radian
    np.testing.assert_allclose(j.viscous_damping[:3], [4.0, 0.5 * c * R2D, 2 * c * R2D], rtol=1e-6)
    np.testing.assert_allclose(j.static_friction[2:], [0.25 * c, c, c, c], rtol=1e-6)
    np.testing.assert_allclose(j.dynamic_friction[2:], [0.25 * c, c, c, c], rtol=1e-6)


def test_empty_stage_gives_empty_tables():
    e = read(stage_from(""))
    assert len(e.spring_dampers) == len(e.loads) == len(e.motors) == len(e.bushings) == len(e.joint_dofs) == 0
    assert e.loads.vector_fn.shape == (0, 3) and e.spring_dampers.local_pos0.shape == (0, 3)
    assert e.functions.kinds.shape == (0, 4) and e.functions.data.shape == (1,)


# -- bad values ----------------------------------------------------------------------------------
BAD = [
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/B>\n double2[] mbd:springForceCurve = [(1, 0), (0, 1)] }',
     "/W/E: mbd:springForceCurve", "strictly ascending"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/B>\n double[] mbd:forceMapDeformation = [0, 1]\n double[] mbd:forceMapVelocity = [0]\n double[] mbd:forceMapValues = [1] }',
     "/W/E: mbd:forceMapValues", "expected len"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/B>\n double mbd:minLength = 2\n double mbd:maxLength = 1 }',
     "/W/E", "minLength"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/B>\n double mbd:stiffness = inf }', "/W/E: mbd:stiffness", "finite"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/B>\n double mbd:springMassFraction = 1.5 }', "/W/E: mbd:springMassFraction", "[0, 1]"),
    ('def MbdSpringDamper "E" { double mbd:stiffness = 1 }', "/W/E", "connects no body"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/NotABody> }', "/W/E: mbd:body1", "not a rigid body"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = </W/Nowhere> }', "/W/E: mbd:body1", "does not exist"),
    ('def MbdSpringDamper "E" { rel mbd:body1 = [</W/A>, </W/B>] }', "/W/E: mbd:body1", "2 targets"),
    ('def MbdAxialSpringDamper "E" { rel mbd:body1 = </W/B>\n vector3d mbd:axis = (0, 0, 0) }', "/W/E: mbd:axis", "zero vector"),
    ('def MbdForce "E" { rel mbd:body0 = </W/B> }', "/W/E: mbd:body1", "needs the body"),
    ('def MbdForce "E" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) { rel mbd:body1 = </W/B>\n uniform token mbd:function:type = "polynomial" }',
     "/W/E: MbdTimeFunctionAPI", "no coefficients"),
    ('def MbdMotor "E" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) { rel mbd:joint = </W/Rev>\n bool mbd:function:repeat = true\n double mbd:function:repeatWidth = 0 }',
     "/W/E: MbdTimeFunctionAPI", "repeatWidth"),
    ('def MbdMotor "E" { rel mbd:joint = </W/Rev>\n uniform token mbd:dof = "distance" }', "/W/E: mbd:dof", "not a DOF"),
    ('def MbdMotor "E" { rel mbd:joint = </W/A> }', "/W/E: mbd:joint", "not a PhysicsJoint"),
    ('def MbdMotor "E" { uniform token mbd:mode = "position" }', "/W/E: mbd:joint", "needs the joint"),
    ('def PhysicsRevoluteJoint "E" ( prepend apiSchemas = ["NewtonJointAPI"] ) { uniform token[] newton:dofs = ["angle"]\n uniform float[] newton:armature = [1, 2] }',
     "/W/E: newton:armature", "has 2 values"),
    ('def PhysicsRevoluteJoint "E" ( prepend apiSchemas = ["NewtonJointAPI"] ) { uniform token[] newton:dofs = ["angle"]\n uniform float[] newton:staticFrictionEffort = [1]\n uniform float[] newton:dynamicFrictionEffort = [2] }',
     "/W/E: newton:dynamicFrictionEffort", "exceeds"),
    ('def PhysicsRevoluteJoint "E" ( prepend apiSchemas = ["NewtonJointAPI"] ) { uniform token[] newton:dofs = ["angle"]\n uniform float[] newton:viscousDamping = [-1] }',
     "/W/E: newton:viscousDamping", ">= 0"),
    ('def PhysicsRevoluteJoint "E" ( prepend apiSchemas = ["NewtonJointAPI"] ) { uniform token[] newton:dofs = ["rotX"] }',
     "/W/E: newton:dofs", "not a DOF"),
    ('def PhysicsRevoluteJoint "E" ( prepend apiSchemas = ["NewtonJointAPI"] ) { float newton:damping = -2 }',
     "/W/E: newton:damping", ">= 0"),
    ('def PhysicsRevoluteJoint "E" ( prepend apiSchemas = ["MbdBushingAPI"] ) { double mbd:bushing:angularStiffness = -1 }',
     "/W/E: mbd:bushing:angularStiffness", ">= 0"),
]


@pytest.mark.parametrize("body, where, words", BAD, ids=[b[2] + "-" + b[1].split(": ")[-1] for b in BAD])
def test_bad_values_name_prim_and_attribute(body, where, words):
    with pytest.raises(UsdphysError) as exc:
        read(stage_from("    " + body.replace("{ ", "{\n ").replace(" }", "\n }")))
    assert where in str(exc.value) and words in str(exc.value), str(exc.value)


def test_unsimulated_body_is_reported():
    stage = stage_from(SPRING)
    with pytest.raises(UsdphysError, match="/W/S: mbd:body0 points at /W/A, which the model does not simulate"):
        read_elements(stage, {"/W/B": 0}.__getitem__)
