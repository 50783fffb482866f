"""Each Chrono convention the converter follows, pinned with numbers.

Tolerances: USD stores UsdPhysics frames, masses and inertias as 32-bit floats, so values
read back carry ~1e-7 relative error; 1e-5 absolute is far below any convention mistake
(a wrong axis order or unit is an O(1) or factor-57 error)."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from usdphys.converters.chrono import convert

TOL = 1e-5
RAD2DEG = 180.0 / math.pi


def write_model(tmp_path, body: str, angle_degrees: bool = True, version: str = "10.0", name="M") -> str:
    text = f"chrono-version: {version}\n\nmodel:\n  name: {name}\n  angle_degrees: {str(angle_degrees).lower()}\n"
    text += textwrap.indent(textwrap.dedent(body).strip("\n"), "  ") + "\n"
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return str(path)


def conv(tmp_path, body, **kw):
    warnings: list[str] = []
    stage = convert(write_model(tmp_path, body, **kw), warnings)
    return stage, warnings


def rot_of(q) -> np.ndarray:
    """Gf quaternion -> 3x3 matrix (scipy takes scalar-last)."""
    im = q.GetImaginary()
    return Rotation.from_quat([im[0], im[1], im[2], q.GetReal()]).as_matrix()


def world_of(stage, path) -> np.ndarray:
    m = UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return np.array(m).T  # Gf row-vector convention -> column-vector 4x4


def joint_world_frames(stage, jpath):
    """(pos0, R0, pos1, R1): the joint frame as seen from body0 and from body1, in the world."""
    j = UsdPhysics.Joint(stage.GetPrimAtPath(jpath))
    out = []
    for i in (0, 1):
        body = (j.GetBody0Rel() if i == 0 else j.GetBody1Rel()).GetTargets()[0]
        w = world_of(stage, body)
        lp = np.array((j.GetLocalPos0Attr() if i == 0 else j.GetLocalPos1Attr()).Get())
        lr = rot_of((j.GetLocalRot0Attr() if i == 0 else j.GetLocalRot1Attr()).Get())
        out += [w[:3, :3] @ lp + w[:3, 3], w[:3, :3] @ lr]
    return out


TWO_BODIES = """
bodies:
  - name: A
    location: [1, 2, 3]
    orientation: [30, 45, -60]
    mass: 2
    inertia: {moments: [1, 1, 1]}
  - name: B
    location: [-1, 0.5, 2]
    orientation: [-20, 10, 70]
    mass: 3
    inertia: {moments: [1, 2, 2.5]}
"""


# --- orientation -------------------------------------------------------------------------
@pytest.mark.parametrize("degrees,angles", [(True, [30.0, 20.0, 10.0]), (False, [0.5, -0.3, 1.2])])
def test_euler_is_zyx_intrinsic(tmp_path, degrees, angles):
    stage, _ = conv(tmp_path, f"""
        bodies:
          - name: b
            location: [0, 0, 0]
            orientation: {angles}
            mass: 1
            inertia: {{moments: [1, 1, 1]}}
        """, angle_degrees=degrees)
    got = world_of(stage, "/M/Bodies/b")[:3, :3]
    want = Rotation.from_euler("ZYX", angles, degrees=degrees).as_matrix()
    assert np.allclose(got, want, atol=1e-12)
    # and not the other common readings
    assert not np.allclose(got, Rotation.from_euler("XYZ", angles, degrees=degrees).as_matrix(), atol=1e-3)


def test_quaternion_is_scalar_first_and_normalised(tmp_path):
    c, s = math.cos(math.radians(22.5)), math.sin(math.radians(22.5))
    stage, warnings = conv(tmp_path, f"""
        bodies:
          - name: b
            location: [0, 0, 0]
            orientation: [{c}, 0, 0, {s}]
            mass: 1
            inertia: {{moments: [1, 1, 1]}}
          - name: n
            location: [0, 0, 0]
            orientation: [0, 0, 0, 2]
            mass: 1
            inertia: {{moments: [1, 1, 1]}}
        """)
    r = world_of(stage, "/M/Bodies/b")[:3, :3]
    assert np.allclose(r @ [1, 0, 0], [math.sqrt(0.5), math.sqrt(0.5), 0], atol=1e-12)  # 45 deg about Z
    r = world_of(stage, "/M/Bodies/n")[:3, :3]
    assert np.allclose(r, np.diag([-1, -1, 1]), atol=1e-12)  # (0,0,0,2) -> 180 deg about Z
    assert any("model.bodies[1].orientation" in w and "length 2" in w for w in warnings)


# --- mass properties -----------------------------------------------------------------------
def test_com_frame_and_inertia_products(tmp_path):
    stage, _ = conv(tmp_path, """
        bodies:
          - name: b
            location: [1, 2, 3]
            orientation: [10, 20, 30]
            mass: 5
            com:
              location: [0.1, 0.2, 0.3]
              orientation: [90, 0, 0]
            inertia:
              moments: [2, 3, 4]
              products: [0.1, 0.2, 0.3]
        """)
    m = UsdPhysics.MassAPI(stage.GetPrimAtPath("/M/Bodies/b"))
    assert m.GetMassAttr().Get() == 5
    assert np.allclose(m.GetCenterOfMassAttr().Get(), [0.1, 0.2, 0.3], atol=TOL)  # body prim frame
    # products are [Ixy, Ixz, Iyz] (the parser's order), the matrix entries themselves
    i_com = np.array([[2, 0.1, 0.2], [0.1, 3, 0.3], [0.2, 0.3, 4]])
    r_com = Rotation.from_euler("ZYX", [90, 0, 0], degrees=True).as_matrix()
    want = r_com @ i_com @ r_com.T  # tensor about the COM in the body prim's axes
    d = np.array(m.GetDiagonalInertiaAttr().Get())
    r = rot_of(m.GetPrincipalAxesAttr().Get())
    assert np.allclose(r @ np.diag(d) @ r.T, want, atol=TOL)
    # the [Ixy, Iyz, Izx] reading of the prose spec would give a different tensor
    wrong = r_com @ np.array([[2, 0.1, 0.3], [0.1, 3, 0.2], [0.3, 0.2, 4]]) @ r_com.T
    assert not np.allclose(r @ np.diag(d) @ r.T, wrong, atol=1e-3)


def test_diagonal_inertia_keeps_axes(tmp_path):
    stage, _ = conv(tmp_path, """
        bodies:
          - name: b
            location: [0, 0, 0]
            mass: 1
            inertia: {moments: [1, 0.5, 1]}
        """)
    m = UsdPhysics.MassAPI(stage.GetPrimAtPath("/M/Bodies/b"))
    assert tuple(m.GetDiagonalInertiaAttr().Get()) == (1, 0.5, 1)
    assert m.GetPrincipalAxesAttr().Get() == Gf.Quatf(1, 0, 0, 0)


def test_initial_velocities_world_frame_degrees(tmp_path):
    stage, _ = conv(tmp_path, """
        bodies:
          - name: b
            location: [0, 0, 0]
            orientation: [90, 0, 0]
            mass: 1
            com: {location: [0, 0, 0], orientation: [0, 90, 0]}
            inertia: {moments: [1, 1, 1]}
            initial_linear_velocity: [1, 2, 3]
            initial_angular_velocity: [0, 0, 1]
        """)
    rb = UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/M/Bodies/b"))
    assert np.allclose(rb.GetVelocityAttr().Get(), [1, 2, 3], atol=TOL)
    # (0,0,1) rad/s in COM axes: COM Z = Rz(90) Ry(90) Z = world (0, 1, 0)... in deg/s
    r = Rotation.from_euler("ZYX", [90, 0, 0], degrees=True).as_matrix() @ \
        Rotation.from_euler("ZYX", [0, 90, 0], degrees=True).as_matrix()
    want = r @ [0, 0, 1] * RAD2DEG
    assert np.allclose(want, [0, RAD2DEG, 0], atol=1e-9)
    assert np.allclose(rb.GetAngularVelocityAttr().Get(), want, atol=1e-4)


def test_fixed_body_is_static_without_mass(tmp_path):
    # A body that never moves: static (rigidBodyEnabled = false) so that joints to it are joints
    # to the world for tree-based importers too; the prim keeps its pose and its relationships.
    stage, _ = conv(tmp_path, """
        bodies:
          - name: ground
            location: [0, 0, 1]
            fixed: true
          - name: b
            location: [0, 0, 0]
            mass: 1
            inertia: {moments: [1, 1, 1]}
        """)
    prim = stage.GetPrimAtPath("/M/Bodies/ground")
    assert prim.HasAPI(UsdPhysics.RigidBodyAPI)
    assert UsdPhysics.RigidBodyAPI(prim).GetRigidBodyEnabledAttr().Get() is False
    assert not UsdPhysics.RigidBodyAPI(prim).GetKinematicEnabledAttr().Get()
    assert not prim.HasAPI(UsdPhysics.MassAPI)


def test_all_fixed_bodies_stay_kinematic_without_mass(tmp_path):
    # with no free body a static-only stage would have nothing to simulate or record
    stage, _ = conv(tmp_path, """
        bodies:
          - name: ground
            location: [0, 0, 1]
            fixed: true
        """)
    prim = stage.GetPrimAtPath("/M/Bodies/ground")
    assert UsdPhysics.RigidBodyAPI(prim).GetKinematicEnabledAttr().Get() is True
    assert UsdPhysics.RigidBodyAPI(prim).GetRigidBodyEnabledAttr().Get() is not False
    assert not prim.HasAPI(UsdPhysics.MassAPI)


# --- joints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("jtype,extra,usd_type,free", [
    ("LOCK", "", "PhysicsFixedJoint", None),
    ("REVOLUTE", "axis: [1, 1, 0]", "PhysicsRevoluteJoint", None),
    ("PRISMATIC", "axis: [0, 1, 1]", "PhysicsPrismaticJoint", None),
    ("SPHERICAL", "", "PhysicsSphericalJoint", None),
    ("UNIVERSAL", "axis1: [1, 0, 0]\n    axis2: [0, 1, 1]", "PhysicsJoint", {"rotX", "rotY"}),
    ("point_line", "", "PhysicsJoint", {"transX", "rotX", "rotY", "rotZ"}),
    ("Point_Plane", "", "PhysicsJoint", {"transX", "transY", "rotX", "rotY", "rotZ"}),
])
def test_joint_frames(tmp_path, jtype, extra, usd_type, free):
    body = TWO_BODIES + f"""
joints:
  - name: j
    type: {jtype}
    body1: A
    body2: B
    location: [0.5, -0.25, 1.5]
    {extra}
"""
    stage, _ = conv(tmp_path, body)
    prim = stage.GetPrimAtPath("/M/Joints/j")
    assert prim.GetTypeName() == usd_type
    j = UsdPhysics.Joint(prim)
    assert j.GetBody0Rel().GetTargets()[0].name == "A" and j.GetBody1Rel().GetTargets()[0].name == "B"
    p0, r0, p1, r1 = joint_world_frames(stage, "/M/Joints/j")
    assert np.allclose(p0, [0.5, -0.25, 1.5], atol=TOL) and np.allclose(p1, p0, atol=TOL)
    assert np.allclose(r0, r1, atol=TOL)  # frames coincide at assembly
    if jtype in ("REVOLUTE", "PRISMATIC"):
        axis = np.array([1.0, 1, 0]) if jtype == "REVOLUTE" else np.array([0.0, 1, 1])
        assert prim.GetAttribute("physics:axis").Get() == "Z"
        assert np.allclose(r0[:, 2], axis / np.linalg.norm(axis), atol=TOL)
    elif jtype == "UNIVERSAL":  # X = axis1, Z = axis1 x axis2, Y = Z x X
        assert np.allclose(r0[:, 0], [1, 0, 0], atol=TOL)
        assert np.allclose(r0[:, 2], np.array([0, -1, 1]) / math.sqrt(2), atol=TOL)
        assert np.allclose(r0[:, 1], np.array([0, 1, 1]) / math.sqrt(2), atol=TOL)
    else:  # identity (model axes): POINT_LINE moves along model X, POINT_PLANE in model XY
        assert np.allclose(r0, np.eye(3), atol=TOL)
    if free is not None:
        locked = {d for d in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
                  if prim.HasAPI(UsdPhysics.LimitAPI, d)}
        assert locked == {"transX", "transY", "transZ", "rotX", "rotY", "rotZ"} - free
        for d in locked:
            lim = UsdPhysics.LimitAPI(prim, d)
            assert lim.GetLowAttr().Get() > lim.GetHighAttr().Get()  # low > high: locked


def test_bushing_units_per_degree(tmp_path):
    stage, _ = conv(tmp_path, TWO_BODIES + """
joints:
  - name: j
    type: revolute
    body1: A
    body2: B
    location: [0, 0, 0]
    axis: [0, 1, 0]
    bushing_data:
      stiffness_linear: 1e5
      damping_linear: 1e3
      stiffness_rotational: 180
      damping_rotational: 18
      DOF: {stiffness_linear: 0, damping_linear: 0, stiffness_rotational: 90, damping_rotational: 9}
""")
    prim = stage.GetPrimAtPath("/M/Joints/j")
    assert "MbdBushingAPI" in prim.GetAppliedSchemas()
    g = lambda n: prim.GetAttribute(f"mbd:bushing:{n}").Get()  # noqa: E731
    assert g("linearStiffness") == 1e5 and g("linearDamping") == 1e3  # `1e5` read as a float
    assert g("angularStiffness") == pytest.approx(math.pi)  # 180 N m/rad = pi N m/deg
    assert g("angularDamping") == pytest.approx(math.pi / 10)
    assert g("freeAngularStiffness") == pytest.approx(math.pi / 2)
    assert g("freeAngularDamping") == pytest.approx(math.pi / 20)


def test_constraints(tmp_path):
    stage, _ = conv(tmp_path, TWO_BODIES + """
constraints:
  - name: d
    type: DISTANCE
    body1: A
    body2: B
    point1: [0, 0, 0]
    point2: [3, 4, 0]
  - name: rs
    type: revolute-spherical
    body1: A
    body2: B
    point1: [0, 0, 0]
    point2: [2, 0, 0]
    axis: [0, 0, 1]
  - name: rt
    type: REVOLUTE-TRANSLATIONAL
    body1: A
    body2: B
    point1: [0, 0, 0]
    point2: [1.5, 2, 0]
    axis: [0, 0, 1]
    direction: [0, 1, 0]
""")
    d = UsdPhysics.DistanceJoint(stage.GetPrimAtPath("/M/Joints/d"))
    assert d.GetMinDistanceAttr().Get() == pytest.approx(5) and d.GetMaxDistanceAttr().Get() == pytest.approx(5)
    p0, _, p1, _ = joint_world_frames(stage, "/M/Joints/d")
    assert np.allclose(p0, [0, 0, 0], atol=TOL) and np.allclose(p1, [3, 4, 0], atol=TOL)
    rs = stage.GetPrimAtPath("/M/Joints/rs")
    assert rs.GetTypeName() == "MbdRevoluteSphericalJoint"
    assert rs.GetAttribute("mbd:distance").Get() == pytest.approx(2)
    p0, r0, p1, _ = joint_world_frames(stage, "/M/Joints/rs")
    assert np.allclose(r0[:, 2], [0, 0, 1], atol=TOL) and np.allclose(p1, [2, 0, 0], atol=TOL)
    rt = stage.GetPrimAtPath("/M/Joints/rt")
    assert rt.GetTypeName() == "MbdRevoluteTranslationalJoint"
    p0, r0, p1, r1 = joint_world_frames(stage, "/M/Joints/rt")
    assert np.allclose(r1[:, 1], [0, 1, 0], atol=TOL)  # sliding direction y1
    assert rt.GetAttribute("mbd:distance").Get() == pytest.approx(np.dot(p1 - p0, r1[:, 0]))
    assert rt.GetAttribute("mbd:distance").Get() == pytest.approx(1.5)


# --- spring-dampers -------------------------------------------------------------------------
def test_tsda_points_law_and_stops(tmp_path):
    stage, _ = conv(tmp_path, TWO_BODIES + """
tsdas:
  - name: s
    body1: A
    body2: B
    point1: [1, 2, 4]
    point2: [-1, 0.5, 1]
    spring_coefficient: 50
    damping_coefficient: 5
    free_length: 1.0
    preload: 7
    minimum_length: 0.5
    maximum_length: 3
    visualization: {type: SPRING, radius: 0.05, resolution: 80, turns: 15, color: [1, 0, 0]}
  - name: curves
    body1: A
    body2: B
    point1: [1, 2, 3]
    point2: [-1, 0.5, 2]
    free_length: 2
    spring_curve_data: [[-1, -100], [0, 0], [1, 300]]
    damping_curve_data: [[-1, -10], [1, 10]]
  - name: map
    body1: A
    body2: B
    point1: [1, 2, 3]
    point2: [-1, 0.5, 2]
    deformation: [0.1, 0.2, 0.3]
    map_data: [[-1, 1, 2, 3], [0, 0, 0, 0], [1, 4, 5, 6]]
""")
    s = stage.GetPrimAtPath("/M/ForceElements/s")
    a, b = world_of(stage, "/M/Bodies/A"), world_of(stage, "/M/Bodies/B")
    # body0 = Chrono body1; positive force pushes apart in both (no sign flip)
    assert s.GetRelationship("mbd:body0").GetTargets()[0].name == "A"
    assert np.allclose(a[:3, :3] @ np.array(s.GetAttribute("mbd:localPos0").Get()) + a[:3, 3], [1, 2, 4], atol=1e-12)
    assert np.allclose(b[:3, :3] @ np.array(s.GetAttribute("mbd:localPos1").Get()) + b[:3, 3], [-1, 0.5, 1], atol=1e-12)
    vals = {n: s.GetAttribute(f"mbd:{n}").Get() for n in
            ("stiffness", "damping", "restLength", "preload", "minLength", "maxLength", "displayShape",
             "displayTurns", "displayResolution", "displayRadius")}
    assert vals == {"stiffness": 50, "damping": 5, "restLength": 1.0, "preload": 7, "minLength": 0.5,
                    "maxLength": 3, "displayShape": "spring", "displayTurns": 15, "displayResolution": 80,
                    "displayRadius": 0.05}
    c = stage.GetPrimAtPath("/M/ForceElements/curves")
    assert [tuple(p) for p in c.GetAttribute("mbd:springForceCurve").Get()] == [(-1, -100), (0, 0), (1, 300)]
    assert [tuple(p) for p in c.GetAttribute("mbd:dampingForceCurve").Get()] == [(-1, -10), (1, 10)]
    m = stage.GetPrimAtPath("/M/ForceElements/map")
    assert list(m.GetAttribute("mbd:forceMapDeformation").Get()) == [0.1, 0.2, 0.3]
    assert list(m.GetAttribute("mbd:forceMapVelocity").Get()) == [-1, 0, 1]
    assert list(m.GetAttribute("mbd:forceMapValues").Get()) == [1, 2, 3, 0, 0, 0, 4, 5, 6]  # row per velocity


@pytest.mark.parametrize("degrees", [True, False])
def test_rsda_units_and_frame(tmp_path, degrees):
    free = 30 if degrees else 0.5
    stage, _ = conv(tmp_path, TWO_BODIES + f"""
rsdas:
  - name: r
    body1: A
    body2: B
    location: [0.5, 0, 0]
    axis: [0, 0, 2]
    spring_coefficient: 25
    damping_coefficient: 2
    free_angle: {free}
    preload: 3
  - name: rc
    body1: A
    body2: B
    axis: [1, 0, 0]
    free_angle: 0
    spring_curve_data: [[-1, -10], [1, 10]]
    damping_curve_data: [[-2, -1], [2, 1]]
""", angle_degrees=degrees)
    r = stage.GetPrimAtPath("/M/ForceElements/r")
    # theta = body2 relative to body1 -> body0 = Chrono body1
    assert r.GetRelationship("mbd:body0").GetTargets()[0].name == "A"
    assert r.GetAttribute("mbd:stiffness").Get() == pytest.approx(25 * math.pi / 180)  # N m / deg
    assert r.GetAttribute("mbd:damping").Get() == pytest.approx(2 * math.pi / 180)
    assert r.GetAttribute("mbd:restAngle").Get() == pytest.approx(30 if degrees else 0.5 * RAD2DEG)
    assert r.GetAttribute("mbd:preload").Get() == 3
    a, b = world_of(stage, "/M/Bodies/A"), world_of(stage, "/M/Bodies/B")
    z0 = a[:3, :3] @ rot_of(r.GetAttribute("mbd:localRot0").Get())[:, 2]
    z1 = b[:3, :3] @ rot_of(r.GetAttribute("mbd:localRot1").Get())[:, 2]
    assert np.allclose(z0, [0, 0, 1], atol=1e-9) and np.allclose(z1, [0, 0, 1], atol=1e-9)
    rc = stage.GetPrimAtPath("/M/ForceElements/rc")
    # curve abscissae are radians in Chrono whatever angle_degrees says -> degrees
    assert np.allclose(np.array(rc.GetAttribute("mbd:springTorqueCurve").Get()),
                       [[-RAD2DEG, -10], [RAD2DEG, 10]], atol=1e-9)
    assert np.allclose(np.array(rc.GetAttribute("mbd:dampingTorqueCurve").Get()),
                       [[-2 * RAD2DEG, -1], [2 * RAD2DEG, 1]], atol=1e-9)


# --- motors -----------------------------------------------------------------------------------
MOTOR_BODIES = """
bodies:
  - name: stator
    location: [0, 0, 0]
    orientation: [15, 0, 0]
    fixed: true
  - name: rotor
    location: [1, 0, 0]
    orientation: [0, 30, 0]
    mass: 1
    inertia: {moments: [1, 1, 1]}
"""


def _axis_angle(axis, deg):
    return Rotation.from_rotvec(np.asarray(axis, float) / np.linalg.norm(axis) * math.radians(deg)).as_matrix()


def test_rotation_motor_sign(tmp_path):
    axis = np.array([0.0, 1.0, 1.0])
    stage, _ = conv(tmp_path, MOTOR_BODIES + """
motors:
  - name: m
    type: ROTATION
    body1: rotor
    body2: stator
    location: [0.5, 0, 0]
    axis: [0, 1, 1]
    actuation_type: POSITION
    actuation_function: {type: RAMP, slope: 1.0}
""")
    motor = stage.GetPrimAtPath("/M/Motors/m")
    jpath = motor.GetRelationship("mbd:joint").GetTargets()[0]
    j = UsdPhysics.Joint(stage.GetPrimAtPath(jpath))
    assert stage.GetPrimAtPath(jpath).GetTypeName() == "PhysicsRevoluteJoint"
    assert motor.GetAttribute("mbd:dof").Get() == "angle" and motor.GetAttribute("mbd:mode").Get() == "position"
    # Chrono actuates body1 (rotor) relative to body2 (stator): USD body0 = stator, body1 = rotor
    assert j.GetBody0Rel().GetTargets()[0].name == "stator" and j.GetBody1Rel().GetTargets()[0].name == "rotor"
    # Turn the rotor by +20 deg about the Chrono axis (right hand), about the motor location:
    # the USD joint angle (frame 1 relative to frame 0, about Z) must be +20 deg.
    p0, r0, p1, r1 = joint_world_frames(stage, jpath)
    turn = _axis_angle(axis, 20.0)
    r1_turned = turn @ r1
    rel = r0.T @ r1_turned
    assert np.allclose(r0[:, 2], axis / np.linalg.norm(axis), atol=TOL)
    angle = math.degrees(math.atan2(rel[1, 0], rel[0, 0]))
    assert angle == pytest.approx(20.0, abs=1e-4)
    # rad/s -> deg/s: the ramp is scaled linearly
    assert motor.GetAttribute("mbd:function:slope").Get() == pytest.approx(RAD2DEG)


def test_linear_motor_sign(tmp_path):
    stage, _ = conv(tmp_path, MOTOR_BODIES + """
motors:
  - name: m
    type: LINEAR
    body1: rotor
    body2: stator
    location: [1, 0, 0]
    axis: [1, 1, 0]
    actuation_type: speed
    actuation_function: {type: CONSTANT, value: 2.0}
""")
    motor = stage.GetPrimAtPath("/M/Motors/m")
    jpath = motor.GetRelationship("mbd:joint").GetTargets()[0]
    assert stage.GetPrimAtPath(jpath).GetTypeName() == "PhysicsPrismaticJoint"
    assert motor.GetAttribute("mbd:dof").Get() == "distance" and motor.GetAttribute("mbd:mode").Get() == "velocity"
    assert motor.GetAttribute("mbd:function:value").Get() == 2.0  # linear: no unit change
    p0, r0, p1, r1 = joint_world_frames(stage, jpath)
    moved = p1 + 0.3 * np.array([1, 1, 0]) / math.sqrt(2)  # rotor moves +0.3 along the Chrono axis
    assert (r0.T @ (moved - p0))[2] == pytest.approx(0.3, abs=1e-6)  # USD coordinate: +0.3


@pytest.mark.parametrize("func,attrs", [
    ("{type: CONSTANT, value: 1.57}", {"type": "constant", "value": 1.57 * RAD2DEG}),
    ("{type: POLYNOMIAL, coefficients: [0, 1, 0.5]}", {"type": "polynomial", "coefficients": [0, RAD2DEG, 0.5 * RAD2DEG]}),
    ("{type: SINE, amplitude: 3.14, frequency: 0.05, phase: 1.5708}",
     {"type": "sine", "amplitude": 3.14 * RAD2DEG, "frequency": 0.05, "phase": 1.5708 * RAD2DEG}),
    ("{type: RAMP, slope: 2, intercept: 0.5}", {"type": "ramp", "slope": 2 * RAD2DEG, "intercept": 0.5 * RAD2DEG}),
    ("{type: DATA, data: [[0, 0], [1, 3.14]], repeat: {start: 0, width: 16, shift: 16}}",
     {"type": "data", "data": [(0, 0), (1, 3.14 * RAD2DEG)], "repeat": True, "repeatStart": 0, "repeatWidth": 16,
      "repeatShift": 16}),
])
def test_angular_motor_functions_in_degrees(tmp_path, func, attrs):
    # radians model (angle_degrees: false): the SINE phase is radians too -> degrees
    stage, _ = conv(tmp_path, MOTOR_BODIES + f"""
motors:
  - name: m
    type: ROTATION
    body1: rotor
    body2: stator
    location: [0, 0, 0]
    axis: [0, 0, 1]
    actuation_type: SPEED
    actuation_function: {func}
""", angle_degrees=False)
    motor = stage.GetPrimAtPath("/M/Motors/m")
    assert "MbdTimeFunctionAPI" in motor.GetAppliedSchemas()
    for key, want in attrs.items():
        got = motor.GetAttribute(f"mbd:function:{key}").Get()
        if isinstance(want, list):
            assert np.allclose(np.array(list(got), float), np.array(want, float), atol=1e-9), key
        else:
            assert got == pytest.approx(want), key


def test_sine_phase_degrees_model_and_torque_not_scaled(tmp_path):
    stage, _ = conv(tmp_path, MOTOR_BODIES + """
motors:
  - name: m
    type: ROTATION
    spindle: cylindrical
    body1: rotor
    body2: stator
    location: [0, 0, 0]
    axis: [0, 0, 1]
    actuation_type: FORCE
    actuation_function: {type: SINE, amplitude: 160, frequency: 2, phase: 90}
""")
    motor = stage.GetPrimAtPath("/M/Motors/m")
    assert motor.GetAttribute("mbd:function:amplitude").Get() == 160  # torque: no unit change
    assert motor.GetAttribute("mbd:function:phase").Get() == 90  # degrees model: kept
    joint = stage.GetPrimAtPath(motor.GetRelationship("mbd:joint").GetTargets()[0])
    assert joint.GetTypeName() == "PhysicsJoint" and motor.GetAttribute("mbd:dof").Get() == "rotZ"
    locked = {d for d in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ") if joint.HasAPI(UsdPhysics.LimitAPI, d)}
    assert locked == {"transX", "transY", "rotX", "rotY"}  # CYLINDRICAL: free in transZ and rotZ


@pytest.mark.parametrize("guide,typ,locked,dof", [
    ("FREE", "PhysicsJoint", set(), "transZ"),
    ("SPHERICAL", "PhysicsJoint", {"transX", "transY"}, "transZ"),
])
def test_linear_motor_guides(tmp_path, guide, typ, locked, dof):
    stage, _ = conv(tmp_path, MOTOR_BODIES + f"""
motors:
  - name: m
    type: LINEAR
    guide: {guide}
    body1: rotor
    body2: stator
    location: [0, 0, 0]
    axis: [0, 0, 1]
    actuation_type: FORCE
    actuation_function: {{type: CONSTANT, value: 200}}
""")
    motor = stage.GetPrimAtPath("/M/Motors/m")
    joint = stage.GetPrimAtPath(motor.GetRelationship("mbd:joint").GetTargets()[0])
    assert joint.GetTypeName() == typ and motor.GetAttribute("mbd:dof").Get() == dof
    got = {d for d in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ") if joint.HasAPI(UsdPhysics.LimitAPI, d)}
    assert got == locked


# --- body loads -------------------------------------------------------------------------------
def test_local_load_means_com_frame(tmp_path):
    stage, warnings = conv(tmp_path, """
bodies:
  - name: b
    location: [1, 0, 0]
    orientation: [0, 0, 90]
    mass: 1
    com: {location: [0.5, 0, 0], orientation: [90, 0, 0]}
    inertia: {moments: [1, 1, 1]}
body_loads:
  - name: f
    type: FORCE
    body: b
    load: [1, 0, 0]
    local_load: true
    point: [0, 1, 0]
    local_point: true
  - name: g
    type: force
    body: b
    load: [0, 0, -10]
    local_load: false
    point: [1, 0, 1]
    local_point: false
  - name: t
    type: TORQUE
    body: b
    load: [0, 0, 2]
    local_load: true
""")
    f = stage.GetPrimAtPath("/M/Loads/f")
    r_com = Rotation.from_euler("ZYX", [90, 0, 0], degrees=True).as_matrix()
    assert f.GetAttribute("mbd:resolveIn").Get() == "body1"
    assert np.allclose(f.GetAttribute("mbd:force").Get(), r_com @ [1, 0, 0], atol=1e-12)  # (0, 1, 0)
    assert np.allclose(f.GetAttribute("mbd:localPos1").Get(), np.array([0.5, 0, 0]) + r_com @ [0, 1, 0], atol=1e-12)
    assert f.GetRelationship("mbd:body1").GetTargets()[0].name == "b"
    g = stage.GetPrimAtPath("/M/Loads/g")
    assert g.GetAttribute("mbd:resolveIn").Get() == "world"
    assert tuple(g.GetAttribute("mbd:force").Get()) == (0, 0, -10)
    w = world_of(stage, "/M/Bodies/b")
    assert np.allclose(w[:3, :3] @ np.array(g.GetAttribute("mbd:localPos1").Get()) + w[:3, 3], [1, 0, 1], atol=1e-12)
    assert any("model.body_loads[1].local_point" in x for x in warnings)
    t = stage.GetPrimAtPath("/M/Loads/t")
    assert t.GetTypeName() == "MbdTorque"
    assert np.allclose(t.GetAttribute("mbd:torque").Get(), r_com @ [0, 0, 2], atol=1e-12)


# --- contact, geometry, files -----------------------------------------------------------------
OBJ = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\ng first\nf 1 2 3 4\ng second\nf 1/1/1 2/2/2 5/5/5\n"


def test_shapes_materials_and_meshes(tmp_path):
    (tmp_path / "data" / "meshes").mkdir(parents=True)
    (tmp_path / "data" / "meshes" / "quad.obj").write_text(OBJ)
    stage, _ = conv(tmp_path, """
data_path: {type: RELATIVE, root: data}
bodies:
  - name: b
    location: [0, 0, 0]
    mass: 1
    inertia: {moments: [1, 1, 1]}
    contact:
      materials:
        - name: steel
          coefficient_of_friction: 0.3
          coefficient_of_restitution: 0.2
          properties: {Young_modulus: 2e11, Poisson_ratio: 0.28}
          Coefficients: {normal_stiffness: 1e5, normal_damping: 30, tangential_stiffness: 1e4, tangential_damping: 3}
        - name: plain
      shapes:
        - {type: box, material: steel, dimensions: [1, 2, 3], location: [0, 0, 1], orientation: [90, 0, 0]}
        - {type: CYLINDER, material: plain, radius: 0.1, length: 2, axis: [1, 0, 0], location: [0, 0, 0]}
        - {type: MESH, material: plain, filename: meshes/quad.obj, scale: 2, contact_radius: 0.01}
        - {type: HULL, material: steel, filename: meshes/quad.obj}
    visualization:
      shapes:
        - {type: SPHERE, radius: 0.5, location: [0, 0, 0], color: [0.1, 0.2, 0.3]}
        - {type: SPHERE, radius: 0.5, location: [0, 0, 0]}
""")
    col = "/M/Bodies/b/Collision"
    box = stage.GetPrimAtPath(f"{col}/box_0")
    assert box.GetTypeName() == "Cube" and box.HasAPI(UsdPhysics.CollisionAPI)
    w = world_of(stage, box.GetPath())  # unit cube scaled to full lengths, then rotated
    assert np.allclose(np.linalg.norm(w[:3, :3], axis=0), [1, 2, 3], atol=1e-12)
    assert np.allclose(w[:3, :3] @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    cyl = UsdGeom.Cylinder(stage.GetPrimAtPath(f"{col}/cylinder_1"))
    assert cyl.GetHeightAttr().Get() == 2 and cyl.GetAxisAttr().Get() == "Z"
    assert np.allclose(world_of(stage, cyl.GetPath())[:3, :3] @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    mesh = stage.GetPrimAtPath(f"{col}/mesh_2")
    assert UsdPhysics.MeshCollisionAPI(mesh).GetApproximationAttr().Get() == "none"
    assert list(UsdGeom.Mesh(mesh).GetFaceVertexCountsAttr().Get()) == [3, 3, 3]  # quad fanned + triangle
    assert mesh.GetAttribute("mbd:contactRadius").Get() == 0.01
    hull = stage.GetPrimAtPath(f"{col}/hull_3")  # one convex hull per OBJ group
    parts = hull.GetChildren()
    assert [p.GetName() for p in parts] == ["first", "second"]
    assert all(UsdPhysics.MeshCollisionAPI(p).GetApproximationAttr().Get() == "convexHull" for p in parts)
    mat = UsdShade_bound(stage, f"{col}/box_0")
    assert mat == "/M/Materials/b/steel"
    m = stage.GetPrimAtPath(mat)
    pm = UsdPhysics.MaterialAPI(m)
    assert pm.GetStaticFrictionAttr().Get() == pytest.approx(0.3)
    assert pm.GetDynamicFrictionAttr().Get() == pytest.approx(0.3)
    assert pm.GetRestitutionAttr().Get() == pytest.approx(0.2)
    assert m.GetAttribute("mbd:youngModulus").Get() == 2e11 and m.GetAttribute("mbd:poissonRatio").Get() == 0.28
    assert m.GetAttribute("mbd:normalStiffness").Get() == 1e5 and m.GetAttribute("mbd:tangentialDamping").Get() == 3
    plain = stage.GetPrimAtPath("/M/Materials/b/plain")  # Chrono defaults
    assert UsdPhysics.MaterialAPI(plain).GetStaticFrictionAttr().Get() == pytest.approx(0.8)
    assert UsdPhysics.MaterialAPI(plain).GetRestitutionAttr().Get() == pytest.approx(0.01)
    assert plain.GetAttribute("mbd:youngModulus").Get() == 2e7
    assert not plain.GetAttribute("mbd:normalStiffness").HasAuthoredValue()
    vis = stage.GetPrimAtPath("/M/Bodies/b/Visual/sphere_0")
    assert not vis.HasAPI(UsdPhysics.CollisionAPI)
    assert np.allclose(UsdGeom.Gprim(vis).GetDisplayColorAttr().Get()[0], [0.1, 0.2, 0.3], atol=1e-7)
    assert not UsdGeom.Gprim(stage.GetPrimAtPath("/M/Bodies/b/Visual/sphere_1")).GetDisplayColorAttr().HasAuthoredValue()


def UsdShade_bound(stage, path):
    from pxr import UsdShade

    mat, _ = UsdShade.MaterialBindingAPI(stage.GetPrimAtPath(path)).ComputeBoundMaterial("physics")
    return str(mat.GetPath())


def test_stage_conventions_names_version_gravity(tmp_path):
    stage, _ = conv(tmp_path, """
bodies:
  - name: my body
    location: [0, 0, 0]
    fixed: true
  - name: my-body
    location: [0, 0, 0]
    fixed: true
""", version="10.10", name="Slider-crank")
    assert UsdGeom.GetStageUpAxis(stage) == "Z" and UsdGeom.GetStageMetersPerUnit(stage) == 1
    assert UsdPhysics.GetStageKilogramsPerUnit(stage) == 1
    assert stage.GetDefaultPrim().GetPath() == "/Slider_crank"
    assert stage.GetDefaultPrim().GetDisplayName() == "Slider-crank"
    assert stage.GetRootLayer().customLayerData["chronoVersion"] == "10.10"  # not 10.1
    kids = stage.GetPrimAtPath("/Slider_crank/Bodies").GetChildren()
    assert [(p.GetName(), p.GetDisplayName()) for p in kids] == [("my_body", "my body"), ("my_body_1", "my-body")]
    scene = UsdPhysics.Scene(stage.GetPrimAtPath("/Slider_crank/PhysicsScene"))
    assert tuple(scene.GetGravityDirectionAttr().Get()) == (0, 0, -1)
    assert scene.GetGravityMagnitudeAttr().Get() == pytest.approx(9.8)
    assert "MbdSimulationAPI" not in scene.GetPrim().GetAppliedSchemas()  # model file alone


def test_simulation_file_gravity_time_step_contact(tmp_path):
    write_model(tmp_path, TWO_BODIES)
    (tmp_path / "solver.yaml").write_text("chrono-version: 10.0\ncontact_method: NSC\nintegrator:\n  type: HHT\n  time_step: 2e-3\n")
    (tmp_path / "sim.yaml").write_text("chrono-version: 10.0\ntype: MBS\nmodel: model.yaml\nsolver: solver.yaml\n"
                                      "simulation:\n  end_time: 5\n  gravity: [0, -3, -4]\n")
    stage = convert(tmp_path / "sim.yaml")
    scene = stage.GetPrimAtPath("/M/PhysicsScene")
    assert np.allclose(scene.GetAttribute("physics:gravityDirection").Get(), [0, -0.6, -0.8], atol=1e-7)
    assert scene.GetAttribute("physics:gravityMagnitude").Get() == pytest.approx(5)
    assert scene.GetAttribute("mbd:timeStep").Get() == 2e-3
    assert scene.GetAttribute("mbd:endTime").Get() == 5
    assert scene.GetAttribute("mbd:contactMethod").Get() == "nsc"
    assert stage.GetRootLayer().customLayerData["chronoSimulationFile"] == "sim.yaml"
