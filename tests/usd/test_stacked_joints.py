"""Stacked 1-DOF joints on one body pair (what mujoco-usd-converter writes for an MJCF body with
several hinges) against native MuJoCo.

The USDA mirrors the converter's output: the jointed body is the articulation root carrying
newton:jointsAddMobility = 1, one PhysicsRevoluteJoint per MJCF hinge under it, in MJCF order,
body0 = the world. MuJoCo runs the MJCF written here (RK4, dt 1e-4: converged far below 1e-6 m).
Tolerance 1e-4 m on the centre of mass after 0.5 s: usdphys' difference converges at second order
in dt (1.0e-6 m at dt = 2 ms, 2.6e-7 m at 1 ms, 7e-8 m at 0.5 ms for all four stacks), so the
tolerance holds at any dt up to ~20 ms-equivalent error, while welding (no merge) or a wrong
composition order misses by centimetres.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

mujoco = pytest.importorskip("mujoco")

import usdphys.usd  # noqa: E402,F401  (registers the schemas before pxr builds its registry)
from pxr import Usd  # noqa: E402

from usdphys.errors import UsdphysError  # noqa: E402
from usdphys.math3d import quat_rotate, quat_to_matrix  # noqa: E402
from usdphys.simulate import simulate  # noqa: E402

ANCHOR = np.array([0.0, 0.0, 1.0])
COM = np.array([0.1, 0.05, -0.3])
MASS, INERTIA = 1.3, (0.02, 0.03, 0.04)
W0 = np.array([1.5, -2.0, 3.0])  # rad/s, initial angular velocity (world = body axes at q = 0)
AXES = {"X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1)}
DURATION = 0.5


def mjcf(axes, pos=None):
    pos = pos or [(0, 0, 0)] * len(axes)  # each hinge's point in the body frame
    joints = "".join(f'<joint name="j{i}" type="hinge" axis="{" ".join(map(str, AXES[a]))}" '
                     f'pos="{" ".join(map(str, pos[i]))}"/>' for i, a in enumerate(axes))
    return f"""<mujoco><option timestep="1e-4" integrator="RK4" gravity="0 0 -9.81"/>
<worldbody><body name="b" pos="{' '.join(map(str, ANCHOR))}">{joints}
<inertial pos="{' '.join(map(str, COM))}" mass="{MASS}" diaginertia="{' '.join(map(str, INERTIA))}"/>
</body></worldbody></mujoco>"""


def mujoco_com(axes, pos=None):
    m = mujoco.MjModel.from_xml_string(mjcf(axes, pos))
    d = mujoco.MjData(m)
    # qvel: joint rates whose sum of axis * rate is W0 (the axes are orthogonal unit vectors at q = 0)
    d.qvel[:] = [float(np.dot(W0, AXES[a])) for a in axes]
    mujoco.mj_forward(m, d)
    for _ in range(int(round(DURATION / m.opt.timestep))):
        mujoco.mj_step(m, d)
    return d.xipos[1].copy()


# a stage with gravity and the world prim open: the jointed body "b" and a closing brace follow
_HEAD = """#usda 1.0
(
    defaultPrim = "World"
    metersPerUnit = 1
    kilogramsPerUnit = 1
    upAxis = "Z"
)
def Xform "World"
{
    def PhysicsScene "Scene"
    {
        vector3f physics:gravityDirection = (0, 0, -1)
        float physics:gravityMagnitude = 9.81
    }
"""


def _stage_of(text: str) -> Usd.Stage:
    """An in-memory stage of a USDA text (usda() or _stack_usda())."""
    stage = Usd.Stage.CreateInMemory()
    assert stage.GetRootLayer().ImportFromString(text)
    return stage


def usda(axes, flag=True, pos=None, mjc=()):
    """mjc: the joints (by index) that carry MjcJointAPI, as mujoco-usd-converter writes them."""
    pos = np.asarray(pos or [(0, 0, 0)] * len(axes), float)
    w = sum((np.dot(W0, AXES[a]) * np.array(AXES[a]) for a in axes), np.zeros(3))
    # the body origin moves about each hinge's point at that hinge's rate (MuJoCo's qvel above)
    v = sum((np.dot(W0, AXES[a]) * np.cross(AXES[a], -pos[i]) for i, a in enumerate(axes)), np.zeros(3))
    v = v + np.cross(w, COM)
    joints = "".join(f"""
        def PhysicsRevoluteJoint "j{i}"{' ( prepend apiSchemas = ["MjcJointAPI"] )' if i in mjc else ""}
        {{
            uniform token physics:axis = "{a}"
            rel physics:body0 = </World>
            rel physics:body1 = </World/b>
            point3f physics:localPos0 = ({', '.join(map(str, ANCHOR + pos[i]))})
            point3f physics:localPos1 = ({', '.join(map(str, pos[i]))})
            quatf physics:localRot0 = (1, 0, 0, 0)
            quatf physics:localRot1 = (1, 0, 0, 0)
        }}""" for i, a in enumerate(axes))
    mob = "uniform bool newton:jointsAddMobility = 1" if flag else ""
    return _HEAD + f"""    def Xform "b" (
        prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "PhysicsArticulationRootAPI"]
    )
    {{
        {mob}
        double3 xformOp:translate = ({', '.join(map(str, ANCHOR))})
        uniform token[] xformOpOrder = ["xformOp:translate"]
        float physics:mass = {MASS}
        point3f physics:centerOfMass = ({', '.join(map(str, COM))})
        float3 physics:diagonalInertia = ({', '.join(map(str, INERTIA))})
        vector3f physics:angularVelocity = ({', '.join(repr(float(x)) for x in np.degrees(w))})
        vector3f physics:velocity = ({', '.join(repr(float(x)) for x in v)})
        {joints}
    }}
}}
"""


def usdphys_com(axes, flag=True, dt=1e-3, pos=None, mjc=()):
    stage = _stage_of(usda(axes, flag, pos, mjc))
    r = simulate(stage, duration=DURATION, dt=dt, fps=10)
    return r.positions[-1, 0] + quat_rotate(r.orientations[-1, 0], COM)


@pytest.mark.parametrize("axes", [("Y", "X"), ("X", "Z"), ("X", "Y", "Z"), ("X", "Z", "Y")])
def test_stacked_hinges_match_mujoco(axes):
    ref = mujoco_com(axes)
    got = usdphys_com(axes)
    assert np.linalg.norm(ref - ANCHOR - COM) > 0.05  # the body really moved
    assert np.linalg.norm(got - ref) < 1e-4, (got, ref)


@pytest.mark.parametrize("axes, pos", [
    (("X", "Y"), [(0, 0, 0.1), (0.05, 0, -0.05)]),  # an MJCF ankle: two hinges 0.16 m apart
    (("Y", "Z"), [(0.02, -0.03, 0.0), (0, 0.08, 0.04)]),
])
def test_two_hinges_apart_match_mujoco(axes, pos):
    """Two hinges at different points of one body (dm_control's humanoid ankles) move as MuJoCo's:
    the second hinge's point keeps its place in the frame that turns with the first."""
    ref = mujoco_com(axes, pos)
    got = usdphys_com(axes, pos=pos)
    fine = usdphys_com(axes, pos=pos, dt=5e-4)
    assert np.linalg.norm(ref - ANCHOR - COM) > 0.03  # the body really moved (4.5 and 15 cm)
    # usdphys is second order in dt (Stormer-Verlet): the 1e-3 run's error is ~4x the 5e-4 run's
    # (measured 1.7e-7 -> 4.5e-8 m and 2.9e-7 -> 7.6e-8 m); both far inside 1e-4 m of MuJoCo's RK4
    assert np.linalg.norm(got - ref) < 1e-4, (got, ref)
    assert np.linalg.norm(fine - ref) < 0.5 * np.linalg.norm(got - ref) + 1e-9


def test_composition_order_matters():
    # MuJoCo's universal joint X-then-Z is not Z-then-X (5.8 cm apart after 0.5 s): the matches above
    # hold only because the reader keeps the joints' order
    ref = mujoco_com(("X", "Z"))
    assert np.linalg.norm(usdphys_com(("Z", "X")) - ref) > 1e-2


def test_without_flag_the_pair_is_welded_with_one_warning(caplog):
    with caplog.at_level(logging.WARNING):
        got = usdphys_com(("X", "Y"), flag=False)
    welds = [r.getMessage() for r in caplog.records if "weld" in r.getMessage()]
    assert len(welds) == 1 and "/World/b" in welds[0]
    assert np.linalg.norm(got - ANCHOR - COM) < 1e-6


def test_a_drive_on_a_welded_stack_is_named_when_it_becomes_one_joint(caplog):
    """Two hinges without the flag weld the pair and become one fixed joint; a UsdPhysics drive
    on the second (which the fixed joint replaces) acts on no free DOF: it is named as left out,
    not dropped with its joint in silence."""
    text = usda(("X", "Y"), flag=False).replace(
        'def PhysicsRevoluteJoint "j1"\n', 'def PhysicsRevoluteJoint "j1" ( prepend apiSchemas = ["PhysicsDriveAPI:angular"] )\n', 1)
    i = text.rindex("quatf physics:localRot1")
    text = text[:i] + "float drive:angular:physics:stiffness = 5\n            " + text[i:]
    stage = _stage_of(text)
    with caplog.at_level(logging.WARNING):
        r = simulate(stage, duration=0.01, dt=1e-3, fps=100)
    assert r.model.joint_count == 1 and r.model.joint_type == ["fixed"]
    left = [m.getMessage() for m in caplog.records if "left out (no free DOF to act on)" in m.getMessage()]
    assert len(left) == 1 and "1 welded stacked joint(s) (/World/b/j1)" in left[0], left


_FREE_HINGE = """
    def Xform "c" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] )
    {
        double3 xformOp:translate = (0, 0, 3)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        float physics:mass = 1
        float3 physics:diagonalInertia = (0.1, 0.1, 0.1)
    }
    def PhysicsRevoluteJoint "jc"
    {
        uniform token physics:axis = "X"
        rel physics:body0 = </World>
        rel physics:body1 = </World/c>
        point3f physics:localPos0 = (0, 0, 3)
        quatf physics:localRot0 = (1, 0, 0, 0)
        quatf physics:localRot1 = (1, 0, 0, 0)
    }
"""


def _welded_stack_with(extra: str, mimic_leader: str | None = None) -> Usd.Stage:
    """The welding two-hinge stack (no flag) plus extra prims; mimic_leader: j1 follows that joint."""
    text = usda(("X", "Y"), flag=False)
    text = text.rstrip().rstrip("}") + extra + "}\n"
    if mimic_leader:
        text = text.replace('def PhysicsRevoluteJoint "j1"\n', 'def PhysicsRevoluteJoint "j1" ( prepend apiSchemas = ["NewtonMimicAPI"] )\n', 1)
        i = text.index("quatf physics:localRot1", text.index('"j1"'))
        text = text[:i] + f"rel newton:mimicJoint = <{mimic_leader}>\n            float newton:mimicCoef1 = 1\n            " + text[i:]
    stage = _stage_of(text)
    return stage


@pytest.mark.parametrize("joint", ["j0", "j1"])
def test_a_motor_on_a_welded_stack_is_left_out_and_named_whichever_joint_it_drives(joint, caplog):
    """The first joint of a welding stack becomes its fixed joint, the others are dropped: a
    motor on either drives a DOF that cannot move. Both are left out with the same one line
    naming the motor (the first was an error, the others a 'joint not simulated' warning)."""
    motor = f"""
    def MbdMotor "M"
    {{
        rel mbd:joint = </World/b/{joint}>
        uniform token mbd:dof = "angle"
        uniform token mbd:motorType = "velocity"
        double mbd:value = 1.0
    }}
"""
    with caplog.at_level(logging.WARNING):
        r = simulate(_welded_stack_with(motor), duration=0.01, dt=1e-3, fps=100)
    assert r.model.joint_type == ["fixed"] and len(r.model.elements.motors) == 0
    left = [m.getMessage() for m in caplog.records if "left out (no free DOF to act on)" in m.getMessage()]
    assert left == [f"motor /World/M on welded stacked joint /World/b/{joint}: left out (no free DOF to act on)"]
    assert not [m for m in caplog.records if "not simulated" in m.getMessage()]


def test_a_coupling_to_a_welded_stack_is_refused_and_one_inside_it_left_out(caplog):
    """A coupling between a welded stack's joint and a free joint would hold the free one still:
    refused with one line naming both; a coupling between two joints of the welded stack acts on
    nothing and is left out, named."""
    with pytest.raises(UsdphysError, match="/World/b/j1: its coupling to /World/jc involves /World/b/j1, "
                       "a joint of a stack that welds its body pair"):
        simulate(_welded_stack_with(_FREE_HINGE, mimic_leader="/World/jc"), duration=0.01, dt=1e-3, fps=100)
    with caplog.at_level(logging.WARNING):
        r = simulate(_welded_stack_with("", mimic_leader="/World/b/j0"), duration=0.01, dt=1e-3, fps=100)
    assert r.model.joint_type == ["fixed"] and len(r.model.elements.couplings) == 0
    left = [m.getMessage() for m in caplog.records if "left out (no free DOF to act on)" in m.getMessage()]
    assert left == ["coupling of welded stacked joints /World/b/j1 to /World/b/j0: left out (no free DOF to act on)"]


@pytest.mark.parametrize("bushed, free", [("j0", 1), ("j1", 0)])
def test_a_bushing_on_a_welding_stacks_joint_keeps_the_stack_as_authored(bushed, free, caplog):
    """MbdBushingAPI on one joint of a welding stack (X hinge j0, Y hinge j1, no flag) makes that
    joint's locked DOFs compliant while the other joint stays hard: the body turns about the other
    hinge's axis only, against the bushing. Held as one fixed joint, the bushing made the whole
    weld compliant (j0) or was dropped with its joint as "not simulated" (j1)."""
    text = usda(("X", "Y"), flag=False).replace(
        f'def PhysicsRevoluteJoint "{bushed}"\n',
        f'def PhysicsRevoluteJoint "{bushed}" ( prepend apiSchemas = ["MbdBushingAPI"] )\n', 1)
    i = text.index("quatf physics:localRot1", text.index(f'"{bushed}"'))
    text = (text[:i] + "double mbd:bushing:linearStiffness = 1e5\n            double mbd:bushing:angularStiffness = 10\n"
            "            " + text[i:])
    stage = _stage_of(text)
    with caplog.at_level(logging.WARNING):
        r = simulate(stage, duration=0.3, dt=1e-3, fps=100)
    assert r.model.joint_type == ["revolute", "revolute"] and len(r.model.elements.bushings) == 1
    assert not [m for m in caplog.records if "not simulated" in m.getMessage()]
    q = np.asarray(r.orientations).reshape(-1, 4)  # xyzw
    assert np.abs(q[:, free]).max() > 1e-3  # it turns (0.013-0.018 of the quaternion: ~2 deg)
    others = [k for k in range(3) if k != free]
    assert np.abs(q[:, others]).max() < 1e-10  # about that axis only: the hard hinge holds (1e-12)
    assert float(np.max(r.max_constraint_error)) < 1e-11


def test_a_welding_stack_whose_joints_disagree_is_named():
    """A welding stack is held as one fixed joint only where its joints agree on one pose; two
    hinges whose frames sit 1 cm apart stay two joints, and the assembly names the one it cannot
    hold (as for any joints that disagree)."""
    text = usda(("X", "Y"), flag=False)
    old = "point3f physics:localPos1 = (0.0, 0.0, 0.0)"
    i = text.rfind(old)
    stage = _stage_of(text[:i] + "point3f physics:localPos1 = (0.0, 0.01, 0.0)" + text[i + len(old):])
    with pytest.raises(UsdphysError, match="cannot all hold at once.*/World/b/j1 off by 0.01 m"):
        simulate(stage, duration=0.1, dt=1e-3, fps=10)


def test_mujoco_joints_add_without_the_flag(caplog):
    """Joints that all carry MjcJointAPI are MuJoCo's, whose DOFs always add: the converter
    authors the flag only on articulation roots, and gymnasium pusher's object (two slides to the
    world outside any) was welded. With MjcJointAPI on one joint only, UsdPhysics semantics stay."""
    ref = mujoco_com(("X", "Y"))
    with caplog.at_level(logging.WARNING):
        got = usdphys_com(("X", "Y"), flag=False, mjc=(0, 1))
    assert not [r for r in caplog.records if "weld" in r.getMessage()]
    assert np.linalg.norm(got - ref) < 1e-4, (got, ref)
    assert np.linalg.norm(usdphys_com(("X", "Y"), flag=False, mjc=(0,)) - ANCHOR - COM) < 1e-6


def test_springs_of_a_welded_stack_are_left_out_with_one_warning(caplog):
    """Three hinges at different points that cannot form one joint weld the pair; a viscous
    damping and an armature on one of them act on a DOF that cannot move. As compliant rows
    beside the hard rows locking the same direction they made the row system singular (dm_control's
    dog: the scapula); they are left out, named, and the pair stays welded, as one fixed joint."""
    pos = [(0, 0, 0.1), (0.05, 0, -0.05), (0, 0.04, 0)]
    text = usda(("X", "Y", "Z"), flag=True, pos=pos).replace(
        'def PhysicsRevoluteJoint "j0"\n        {',
        'def PhysicsRevoluteJoint "j0" ( prepend apiSchemas = ["NewtonJointAPI"] )\n        {\n'
        '            uniform token[] newton:dofs = ["angle"]\n'
        '            uniform float[] newton:viscousDamping = [0.5]\n'
        '            uniform float[] newton:armature = [0.01]')
    assert "newton:armature" in text
    stage = _stage_of(text)
    with caplog.at_level(logging.WARNING):
        r = simulate(stage, duration=0.2, dt=1e-3, fps=10)
    left = [m.getMessage() for m in caplog.records if "left out (no free DOF to act on)" in m.getMessage()]
    assert len(left) == 1 and "1 welded stacked joint(s) (/World/b/j0)" in left[0]
    assert r.model.elements is None or "/World/b/j0" not in r.model.elements.joint_dofs.joint_paths
    com = r.positions[-1, 0] + quat_rotate(r.orientations[-1, 0], COM)
    assert np.linalg.norm(com - ANCHOR - COM) < 1e-6  # welded: nothing moves
    # held as one fixed joint, not as fifteen dependent rows whose float32 frames disagreed by 3.4e-8
    assert r.model.joint_count == 1 and r.model.joint_type == ["fixed"]
    assert float(np.max(r.max_constraint_error)) < 1e-11


# ------------------------------------------------------------------ generated stacks against MuJoCo
def _x_onto(a):
    """(w, x, y, z): the rotation taking +X onto the unit vector a (a joint frame whose X axis is a)."""
    c = float(a[0])
    if c < -1.0 + 1e-12:
        return np.array([0.0, 0.0, 0.0, 1.0])
    q = np.array([1.0 + c, *np.cross([1.0, 0.0, 0.0], a)])
    return q / np.linalg.norm(q)


@st.composite
def generated_stacks(draw):
    """Joints of one MJCF body along an orthonormal frame turned anywhere, in any order and sign:
    two hinges at two points, two hinges at one point after a slide along the frame's third
    axis, or three hinges at one point; any centre of mass, inertia and start rate."""
    v = draw(st.lists(st.floats(-1, 1), min_size=4, max_size=4))
    assume(np.linalg.norm(v) > 0.1)
    q = np.array(v) / np.linalg.norm(v)
    frame = quat_to_matrix(np.array([q[1], q[2], q[3], q[0]]))  # xyzw
    perm = draw(st.permutations([0, 1, 2]))
    sign = [draw(st.sampled_from([1.0, -1.0])) for _ in range(3)]
    dirs = [sign[k] * frame[:, perm[k]] for k in range(3)]
    point = st.lists(st.floats(-0.1, 0.1), min_size=3, max_size=3).map(np.array)
    case = draw(st.sampled_from(["two apart", "slide and two", "three"]))
    if case == "two apart":
        joints = [("hinge", dirs[0], draw(point)), ("hinge", dirs[1], draw(point))]
    else:
        p = draw(point)
        joints = [("hinge", dirs[k], p) for k in range(2 if case == "slide and two" else 3)]
        if case == "slide and two":
            joints.insert(0, ("slide", dirs[2], np.zeros(3)))
    com = np.array(draw(st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3)))
    inertia = tuple(draw(st.lists(st.floats(0.02, 0.04), min_size=3, max_size=3)))  # a valid inertia
    w0 = np.array(draw(st.lists(st.floats(-3, 3), min_size=3, max_size=3)))
    return joints, com, inertia, w0


def _stack_mjcf(joints, com, inertia):
    js = "".join(f'<joint name="j{i}" type="{kind}" axis="{" ".join(map(repr, map(float, a)))}" '
                 f'pos="{" ".join(map(repr, map(float, p)))}"/>' for i, (kind, a, p) in enumerate(joints))
    return f"""<mujoco><option timestep="1e-4" integrator="RK4" gravity="0 0 -9.81"/>
<worldbody><body name="b" pos="{' '.join(map(str, ANCHOR))}">{js}
<inertial pos="{' '.join(map(repr, map(float, com)))}" mass="{MASS}" diaginertia="{' '.join(map(repr, inertia))}"/>
</body></worldbody></mujoco>"""


def _stack_usda(joints, com, inertia, w0):
    def v3(x):
        return "(" + ", ".join(repr(float(c)) for c in x) + ")"
    rates = [float(np.dot(w0, a)) if kind == "hinge" else 0.0 for kind, a, _ in joints]
    w = sum((r * a for r, (_, a, _) in zip(rates, joints)), np.zeros(3))
    v = sum((r * np.cross(a, -p) for r, (_, a, p) in zip(rates, joints)), np.zeros(3)) + np.cross(w, com)
    prims = ""
    for i, (kind, a, p) in enumerate(joints):
        q = _x_onto(a)
        prims += f"""
        def Physics{"Revolute" if kind == "hinge" else "Prismatic"}Joint "j{i}" ( prepend apiSchemas = ["MjcJointAPI"] )
        {{
            uniform token physics:axis = "X"
            rel physics:body0 = </World>
            rel physics:body1 = </World/b>
            point3f physics:localPos0 = {v3(ANCHOR + p)}
            point3f physics:localPos1 = {v3(p)}
            quatf physics:localRot0 = {v3(q)}
            quatf physics:localRot1 = {v3(q)}
        }}"""
    return _HEAD + f"""    def Xform "b" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] )
    {{
        double3 xformOp:translate = {v3(ANCHOR)}
        uniform token[] xformOpOrder = ["xformOp:translate"]
        float physics:mass = {MASS}
        point3f physics:centerOfMass = {v3(com)}
        float3 physics:diagonalInertia = {v3(inertia)}
        vector3f physics:angularVelocity = {v3(np.degrees(w))}
        vector3f physics:velocity = {v3(v)}
        {prims}
    }}
}}
"""


@settings(derandomize=True, max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(generated_stacks())
def test_generated_stacks_match_mujoco(stack):
    """Any stack the reader merges moves as MuJoCo's joints: the centre of mass after 0.5 s
    within 1e-4 m (the tolerance above; a wrong order, sign, frame or anchor misses by
    centimetres). The joints carry MjcJointAPI and no flag, as the converter writes bodies outside
    an articulation. Merging also gives the float32 frames one consistent reading: the stage
    holds each axis as a float32 quaternion, MuJoCo the float64 axis (1e-7 rad apart)."""
    joints, com, inertia, w0 = stack
    m = mujoco.MjModel.from_xml_string(_stack_mjcf(joints, com, inertia))
    d = mujoco.MjData(m)
    d.qvel[:] = [float(np.dot(w0, a)) if kind == "hinge" else 0.0 for kind, a, _ in joints]
    mujoco.mj_forward(m, d)
    for _ in range(int(round(DURATION / m.opt.timestep))):
        mujoco.mj_step(m, d)
    ref = d.xipos[1].copy()
    stage = _stage_of(_stack_usda(joints, com, inertia, w0))
    r = simulate(stage, duration=DURATION, dt=1e-3, fps=10)
    assert r.model.joint_count == 1  # merged, not welded
    got = r.positions[-1, 0] + quat_rotate(r.orientations[-1, 0], com)
    assert np.linalg.norm(got - ref) < 1e-4, (got, ref)
