"""Mechanism generators, USDA / MJCF writers, oracles and an isolated runner for the
property-based robustness campaign (tests/solver/test_robustness.py, benchmarks/campaign_long.py).

Everything is built from one plain description so the stage under test and the oracle's
model come from the same numbers. Stages are USDA text (Z up, metres, kg, gravity 9.81 -Z).
Links are rods along their local +X with the body frame at the centre of mass; inertia is
authored explicitly as (axial, transverse, transverse) so thin rods (axial / transverse down
to 1e-6) are exactly what the solver sees. Geometry (capsule or box) is visual only: no
CollisionAPI, so contact never acts and MuJoCo runs with contact disabled.

usdphys runs in a worker process with a wall-clock timeout, so a hang or a crash of the solver
becomes a reported result instead of a stuck CI job.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import traceback
from dataclasses import dataclass, field

import numpy as np


def f32(x):
    """x as the stage holds it: physics:mass, diagonalInertia, localPos0/1 and gravityMagnitude
    are float32 in UsdPhysics. The oracles take these same rounded numbers (the planar DAE all of
    them, MuJoCo's tree twin mass, inertia and gravity; float32 joint frames are the tree
    property's sensitivity check); a mechanism near a fold amplifies a 4e-8 relative
    difference 200x (a four-bar 1.5e-6 m off its reference)."""
    return float(np.float32(x))


G = f32(9.81)  # the stage writes 9.81 as a float
AX = "XYZ"
DOF_NAMES = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")


# ----------------------------------------------------------------------------- quaternions (w, x, y, z)
def qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def qconj(q):
    return np.array([q[0], -q[1], -q[2], -q[3]])


def qrot(q, v):
    return qmul(qmul(q, np.array([0.0, *v])), qconj(q))[1:]


def qmat(q):
    return np.column_stack([qrot(q, e) for e in np.eye(3)])


def qaxis(axis, angle):
    v = np.asarray(axis, float)
    v = v / np.linalg.norm(v)
    return np.array([math.cos(angle / 2), *(math.sin(angle / 2) * v)])


def quat_from_unit3(u):
    """A unit quaternion from three numbers in [0, 1) (Shoemake): uniform over rotations."""
    u1, u2, u3 = u
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    return np.array([b * math.cos(2 * math.pi * u3), a * math.sin(2 * math.pi * u2),
                     a * math.cos(2 * math.pi * u2), b * math.sin(2 * math.pi * u3)])


def v3(p):
    return "(" + ", ".join(repr(float(x)) for x in p) + ")"


def q4(q):
    return "(" + ", ".join(repr(float(x)) for x in q) + ")"


def fnum(x):
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


# ----------------------------------------------------------------------------- descriptions
@dataclass
class Link:
    parent: int  # -1: jointed to the world
    kind: str  # revolute | prismatic | spherical | d6
    axis: int = 0  # revolute / prismatic / spherical axis in the joint frame
    free: tuple = (False,) * 6  # d6: DOFs not locked (transX..rotZ)
    shape: str = "capsule"
    length: float = 0.5
    radius: float = 0.02
    mass: float = 1.0
    ratio: float = 1.0  # axial / transverse inertia
    rot: tuple = (1.0, 0.0, 0.0, 0.0)  # world orientation of the link (wxyz)
    jrot: tuple = (1.0, 0.0, 0.0, 0.0)  # world orientation of the joint frame at t = 0
    attach: float = 1.0  # joint point on the parent: x = (attach - 1/2) * L_parent
    limits: dict = field(default_factory=dict)  # dof index (0..5) -> (lo, hi) in m / deg
    q0: float = 0.0  # revolute: initial joint angle (deg) = the offset of frame 1 about the axis
    omega: float = 0.0  # revolute root link: initial angular speed about the joint axis (deg/s)
    friction: float = 0.0  # revolute / prismatic: Coulomb friction effort (N m or N, NewtonJointAPI)
    cone: tuple | None = None  # spherical: (coneAngle0Limit, coneAngle1Limit) in deg about the axis


def needle_cone(cone) -> bool:
    """A cone past 90 deg on one side and unequal (coneAngle0Limit, coneAngle1Limit in deg): its
    boundary's far end is a needle tip a whipped swing may stop at with a one-line message, the
    known limit the cone and friction properties accept (docs/solver.md, "Cone limits")."""
    return cone is not None and max(cone) > 90.0 and cone[0] != cone[1]


def inertia(link):
    it = link.mass * (link.length ** 2 / 12.0 + link.radius ** 2 / 4.0)
    return np.array([link.ratio * it, it, it])


def layout(links):
    """World COM positions, orientations and joint points of a tree description."""
    com, rot, jpt = [], [], []
    for ln in links:
        q = np.asarray(ln.rot, float)
        if ln.parent < 0:
            p = np.zeros(3)
        else:
            par = links[ln.parent]
            p = com[ln.parent] + qrot(rot[ln.parent], [(ln.attach - 0.5) * par.length, 0, 0])
        rot.append(q)
        jpt.append(p)
        com.append(p + qrot(q, [ln.length / 2, 0, 0]))
    return com, rot, jpt


def _scene():
    return '''#usda 1.0
(
    metersPerUnit = 1
    kilogramsPerUnit = 1
    upAxis = "Z"
)
def PhysicsScene "Scene" {
    vector3f physics:gravityDirection = (0, 0, -1)
    float physics:gravityMagnitude = 9.81
}
'''


def _body_usda(name, pos, q, mass, inert, shape="capsule", length=0.5, radius=0.02, vel=(0, 0, 0), angvel_deg=(0, 0, 0)):
    if shape == "capsule":
        geom = f'''def Capsule "geom" {{
        uniform token axis = "X"
        double height = {max(length - 2 * radius, 1e-6)!r}
        double radius = {radius!r}
    }}'''
    else:
        geom = f'''def Cube "geom" {{
        double size = 1
        float3 xformOp:scale = {v3((length, 2 * radius, 2 * radius))}
        uniform token[] xformOpOrder = ["xformOp:scale"]
    }}'''
    return f'''def Xform "{name}" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] ) {{
    double3 xformOp:translate = {v3(pos)}
    quatd xformOp:orient = {q4(q)}
    uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:orient"]
    float physics:mass = {float(mass)!r}
    point3f physics:centerOfMass = (0, 0, 0)
    float3 physics:diagonalInertia = {v3(inert)}
    vector3f physics:velocity = {v3(vel)}
    vector3f physics:angularVelocity = {v3(angvel_deg)}
    {geom}
}}
'''


def _joint_usda(name, typ, body0, body1, p0, r0, p1, r1, axis=None, extra="", schemas=""):
    b0 = f"rel physics:body0 = </{body0}>" if body0 else ""
    ax = f'uniform token physics:axis = "{axis}"' if axis else ""
    api = f'( prepend apiSchemas = [{schemas}] )' if schemas else ""
    return f'''def {typ} "{name}" {api} {{
    {b0}
    rel physics:body1 = </{body1}>
    point3f physics:localPos0 = {v3(p0)}
    quatf physics:localRot0 = {q4(r0)}
    point3f physics:localPos1 = {v3(p1)}
    quatf physics:localRot1 = {q4(r1)}
    {ax}
    {extra}
}}
'''


def tree_usda(links):
    com, rot, jpt = layout(links)
    out = [_scene()]
    for i, ln in enumerate(links):
        vel, w = (0, 0, 0), (0, 0, 0)
        if ln.parent < 0 and ln.omega:
            aw = qrot(np.asarray(ln.jrot, float), np.eye(3)[ln.axis])
            w = aw * ln.omega
            vel = np.cross(np.radians(w), com[i] - jpt[i])
        out.append(_body_usda(f"L{i}", com[i], rot[i], ln.mass, inertia(ln), ln.shape, ln.length, ln.radius, vel, w))
    for i, ln in enumerate(links):
        qj = np.asarray(ln.jrot, float)
        if ln.parent < 0:
            b0, p0, r0 = None, jpt[i], qj
        else:
            pr = rot[ln.parent]
            b0 = f"L{ln.parent}"
            p0 = qrot(qconj(pr), jpt[i] - com[ln.parent])
            r0 = qmul(qconj(pr), qj)
        p1 = (-ln.length / 2, 0, 0)
        r1 = qmul(qconj(rot[i]), qj)
        if ln.q0:
            r1 = qmul(r1, qaxis(np.eye(3)[ln.axis], math.radians(ln.q0)))
        extra, schemas = "", ""
        if ln.kind in ("revolute", "prismatic"):
            typ = "PhysicsRevoluteJoint" if ln.kind == "revolute" else "PhysicsPrismaticJoint"
            dof = (3 if ln.kind == "revolute" else 0) + ln.axis
            if dof in ln.limits:
                lo, hi = ln.limits[dof]
                extra = f"float physics:lowerLimit = {fnum(lo)}\n    float physics:upperLimit = {fnum(hi)}"
            if ln.friction:
                token = "angle" if ln.kind == "revolute" else "distance"
                extra += (f'\n    uniform token[] newton:dofs = ["{token}"]'
                          f"\n    uniform float[] newton:dynamicFrictionEffort = [{fnum(ln.friction)}]")
                schemas = '"NewtonJointAPI"'
            out.append(_joint_usda(f"J{i}", typ, b0, f"L{i}", p0, r0, p1, r1, AX[ln.axis], extra, schemas))
        elif ln.kind == "spherical":
            if ln.cone is not None:
                extra = (f"float physics:coneAngle0Limit = {fnum(ln.cone[0])}\n"
                         f"    float physics:coneAngle1Limit = {fnum(ln.cone[1])}")
            out.append(_joint_usda(f"J{i}", "PhysicsSphericalJoint", b0, f"L{i}", p0, r0, p1, r1, AX[ln.axis], extra))
        else:  # d6: generic PhysicsJoint, locked DOFs by low > high
            apis, lines = [], []
            for d, name in enumerate(DOF_NAMES):
                if not ln.free[d]:
                    lo, hi = 1.0, -1.0
                elif d in ln.limits:
                    lo, hi = ln.limits[d]
                else:
                    continue
                apis.append(f'"PhysicsLimitAPI:{name}"')
                lines.append(f"float limit:{name}:physics:low = {fnum(lo)}\n    float limit:{name}:physics:high = {fnum(hi)}")
            out.append(_joint_usda(f"J{i}", "PhysicsJoint", b0, f"L{i}", p0, r0, p1, r1, None,
                                   "\n    ".join(lines), ", ".join(apis)))
    return "".join(out)


def tree_mjcf(links, timestep, rotation_limits=False, limit_timeconst=2e-4):
    """The same tree for MuJoCo: bodies at their COM frames, joints in body frames, no limits,
    joint friction as frictionloss.

    rotation_limits: a joint with three free rotations becomes MuJoCo's three hinges in one body
    (the x-y-z sequence usdphys limits) with the link's rotation limits as hinge ranges, stiff
    and overdamped (solref limit_timeconst, damping ratio 20): an inelastic stop like usdphys'
    hard limit, reached as the time constant goes to zero.
    At damping ratio 1 MuJoCo's soft limit gives back part of the impact (a rod's first angle
    left its 30 deg limit 0.9 deg in 20 ms where usdphys' stayed on it; at ratio 20 the two
    agree to 0.02 deg)."""
    com, rot, jpt = layout(links)
    children = {i: [] for i in range(-1, len(links))}
    for i, ln in enumerate(links):
        children[ln.parent].append(i)

    def body(i, indent):
        ln = links[i]
        if ln.parent < 0:
            pos, q = com[i], rot[i]
        else:
            pr = rot[ln.parent]
            pos = qrot(qconj(pr), com[i] - com[ln.parent])
            q = qmul(qconj(pr), rot[i])
        ia = [f32(v) for v in inertia(ln)]  # what the stage holds (float32), as the mass
        # joint anchors stay float64: the stage rounds a child's anchor in its parent (localPos0)
        # and the parent's own anchor (localPos1) alike, so coincident pivots stay coincident;
        # rounding only this side would move them 1e-8 m apart (1.4e-6 m on a light link)
        anchor = "%r 0 0" % (-ln.length / 2)
        qj_body = qmul(qconj(rot[i]), np.asarray(ln.jrot, float))  # joint frame in the body frame

        def ax(k):
            return " ".join(repr(float(x)) for x in qrot(qj_body, np.eye(3)[k]))

        js = []
        # joint Coulomb friction as MuJoCo's frictionloss (a soft constraint: it creeps where
        # usdphys' friction row sticks exactly)
        loss = f' frictionloss="{ln.friction!r}"' if ln.friction else ""
        if ln.kind == "revolute":
            js.append(f'<joint type="hinge" pos="{anchor}" axis="{ax(ln.axis)}"{loss}/>')
        elif ln.kind == "prismatic":
            js.append(f'<joint type="slide" pos="{anchor}" axis="{ax(ln.axis)}"{loss}/>')
        elif ln.kind == "spherical":
            js.append(f'<joint type="ball" pos="{anchor}"/>')
        else:
            for k in range(3):
                if ln.free[k]:
                    js.append(f'<joint type="slide" pos="{anchor}" axis="{ax(k)}"/>')
            nrot = sum(ln.free[3:])
            if nrot == 3 and rotation_limits:
                for k in range(3):
                    rng = ""
                    if 3 + k in ln.limits:
                        lo, hi = ln.limits[3 + k]
                        rng = (f' limited="true" range="{max(lo, -1e6)!r} {min(hi, 1e6)!r}" solreflimit="{limit_timeconst!r} 20"'
                               f' solimplimit="0.9999 0.99999 0.0001"')
                    js.append(f'<joint type="hinge" pos="{anchor}" axis="{ax(k)}"{rng}/>')
            elif nrot == 3:
                js.append(f'<joint type="ball" pos="{anchor}"/>')
            elif nrot == 1:
                js.append(f'<joint type="hinge" pos="{anchor}" axis="{ax(3 + ln.free[3:].index(True) - 3)}"/>')
            elif nrot == 2:  # Cardan: about e0[i+1], then about the rotated e1[i+2] (MuJoCo applies a
                locked = ln.free[3:].index(False)  # body's joints in order, each axis in the moved frame)
                js.append(f'<joint type="hinge" pos="{anchor}" axis="{ax((locked + 1) % 3)}"/>')
                js.append(f'<joint type="hinge" pos="{anchor}" axis="{ax((locked + 2) % 3)}"/>')
        pad = " " * indent
        s = [f'{pad}<body name="L{i}" pos="{v3(pos)[1:-1].replace(",", "")}" quat="{q4(q)[1:-1].replace(",", "")}">',
             f'{pad}  <inertial pos="0 0 0" mass="{f32(ln.mass)!r}" diaginertia="{ia[0]!r} {ia[1]!r} {ia[2]!r}"/>']
        s += [pad + "  " + j for j in js]
        for c in children[i]:
            s.append(body(c, indent + 2))
        s.append(f"{pad}</body>")
        return "\n".join(s)

    bodies = "\n".join(body(i, 4) for i in children[-1])
    return f'''<mujoco>
  <option timestep="{timestep!r}" integrator="RK4" gravity="0 0 {-G!r}">
    <flag contact="disable"/>
  </option>
  <worldbody>
{bodies}
  </worldbody>
</mujoco>'''


def mujoco_positions(links, duration, timestep, rotation_limits=False, limit_timeconst=2e-4):
    """Body positions after `duration`, or None when MuJoCo found its own state non-finite or
    huge on the way: it then resets the simulation to qpos0 and carries on, and its answer is not
    a motion (two such runs at different dt agree with each other, so the convergence check alone
    would not see it)."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(tree_mjcf(links, timestep, rotation_limits, limit_timeconst))
    d = mujoco.MjData(m)
    n = int(round(duration / timestep))
    for _ in range(n):
        mujoco.mj_step(m, d)
    if mujoco_went_unstable(d):
        return None
    return np.array([d.xpos[m.body(f"L{i}").id] for i in range(len(links))])


def mujoco_went_unstable(d):
    """MuJoCo found its state non-finite or huge during the run (it then resets to qpos0 and
    carries on: what follows is not a motion)."""
    import mujoco

    bad = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQPOS)
    return any(d.warning[int(w)].number > 0 for w in bad)



def mujoco_hinge_positions(link, duration, timestep, hinge, joint_attrs="", position_actuator=None):
    """Body position after `duration` of one root link with three free rotations as MuJoCo's
    three hinges in one body (tree_mjcf with rotation_limits), hinge `hinge` (0, 1, 2: the x-y-z
    sequence's first, middle, last angle) given extra joint attributes (e.g. 'damping="2"') and
    optionally a position actuator (kp, kv, target in rad)."""
    import mujoco

    lines = tree_mjcf([link], timestep, rotation_limits=True).split("\n")
    hinges = [j for j, ln in enumerate(lines) if 'type="hinge"' in ln]
    assert len(hinges) == 3, "the link must have three free rotations"
    j = hinges[hinge]
    lines[j] = lines[j].replace('<joint type="hinge"', f'<joint name="driven" {joint_attrs} type="hinge"')
    xml = "\n".join(lines)
    if position_actuator is not None:
        kp, kv, _ = position_actuator
        xml = xml.replace("</mujoco>", f'  <actuator><position joint="driven" kp="{kp!r}" kv="{kv!r}"/></actuator>\n</mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if position_actuator is not None:
        d.ctrl[0] = position_actuator[2]
    for _ in range(int(round(duration / timestep))):
        mujoco.mj_step(m, d)
    return d.xpos[m.body("L0").id].copy()

# ----------------------------------------------------------------------------- planar loops
@dataclass
class Planar:
    """A planar mechanism in the XZ plane: bodies (x, z, phi) and pin / slider constraints.

    phi is the direction angle of the body's local +X from world +X towards +Z (3-D: a rotation
    of -phi about +Y). Pins join a point of body i to a point of body j (j = -1: the ground);
    sliders keep a body on a horizontal line with phi fixed.
    """
    name: str
    mass: list
    inert: list  # (axial, transverse, transverse): the planar inertia is the transverse one
    length: list
    q0: np.ndarray  # (3 nb,)
    pins: list  # (i, s_i (2,), j, s_j (2,) or ground point)
    sliders: list  # (i, z, phi)
    shape: list = None


def _R(phi):
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def planar_rhs(mech):
    nb = len(mech.mass)
    Mdiag = np.concatenate([[m, m, I[1]] for m, I in zip(mech.mass, mech.inert)])
    F = np.concatenate([[0.0, -G * m, 0.0] for m in mech.mass])

    def constraints(q, qd):
        rows, gam = [], []
        for (i, si, j, sj) in mech.pins:
            for comp in range(2):
                row = np.zeros(3 * nb)
                g = 0.0
                for (b, s, sign) in ((i, si, 1.0), (j, sj, -1.0)):
                    if b < 0:
                        continue
                    phi, w = q[3 * b + 2], qd[3 * b + 2]
                    Rs = _R(phi) @ s
                    dRs = np.array([-Rs[1], Rs[0]])  # d(R s)/dphi
                    row[3 * b + comp] += sign
                    row[3 * b + 2] += sign * dRs[comp]
                    g += sign * Rs[comp] * w * w  # gamma = -(d/dt Phi_q) qd = R s w^2
                rows.append(row)
                gam.append(g)
        for (i, z, phi) in mech.sliders:
            for k in (1, 2):
                row = np.zeros(3 * nb)
                row[3 * i + k] = 1.0
                rows.append(row)
                gam.append(0.0)
        return np.array(rows), np.array(gam)

    def rhs(t, y):
        q, qd = y[:3 * nb], y[3 * nb:]
        C, gam = constraints(q, qd)
        n, m = 3 * nb, len(C)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = np.diag(Mdiag)
        K[:n, n:] = C.T
        K[n:, :n] = C
        sol = np.linalg.solve(K, np.concatenate([F, gam]))
        return np.concatenate([qd, sol[:n]])

    return rhs, constraints


def planar_reference(mech, duration):
    """Reference motion by scipy (DOP853, rtol 1e-12): an index-1 DAE in planar coordinates,
    independent of usdphys (2-D, no quaternions, no Newton projection, no Schur complement).
    Returns COM positions (nb, 3) at `duration` and the minimum |det| of the constraint
    Jacobian's Gram matrix along the way (a near-singular configuration makes the reference
    itself ill-posed)."""
    from scipy.integrate import solve_ivp

    nb = len(mech.mass)
    rhs0, cons = planar_rhs(mech)
    calls = [0]

    def rhs(t, y):  # a reference that needs > 20000 evaluations sits on a singularity: give up
        calls[0] += 1
        if calls[0] > 20000:
            raise FloatingPointError("reference too stiff")
        return rhs0(t, y)

    y0 = np.concatenate([mech.q0, np.zeros(3 * nb)])
    ts = np.linspace(0, duration, 101)
    try:
        sol = solve_ivp(rhs, (0, duration), y0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=ts)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        # ValueError: the DAE's multipliers blew up to inf at a singular configuration (a
        # parallelogram through its flat pose) and math.cos(inf) refused: the oracle has no answer
        return None, 0.0
    if not sol.success:
        return None, 0.0
    sv = min(np.linalg.svd(cons(sol.y[:3 * nb, k], sol.y[3 * nb:, k])[0], compute_uv=False)[-1] for k in range(len(ts)))
    q = sol.y[:3 * nb, -1]
    return np.array([[q[3 * b], 0.0, q[3 * b + 1]] for b in range(nb)]), sv


def planar_usda(mech):
    """The planar mechanism as a 3-D stage: revolute joints about Y (redundant in 3-D, as
    every authored planar loop is), sliders as prismatic joints along X to the world."""
    nb = len(mech.mass)
    out = [_scene()]
    for b in range(nb):
        x, z, phi = mech.q0[3 * b: 3 * b + 3]
        shape = mech.shape[b] if mech.shape else "capsule"
        out.append(_body_usda(f"B{b}", (x, 0, z), qaxis([0, 1, 0], -phi), mech.mass[b], mech.inert[b], shape,
                              mech.length[b], 0.02))
    ident = (1.0, 0.0, 0.0, 0.0)
    for k, (i, si, j, sj) in enumerate(mech.pins):
        p1 = (si[0], 0.0, si[1])
        if j < 0:
            out.append(_joint_usda(f"P{k}", "PhysicsRevoluteJoint", None, f"B{i}", (sj[0], 0, sj[1]), ident, p1, ident, "Y"))
        else:
            out.append(_joint_usda(f"P{k}", "PhysicsRevoluteJoint", f"B{j}", f"B{i}", (sj[0], 0, sj[1]), ident, p1, ident, "Y"))
    for k, (i, z, phi) in enumerate(mech.sliders):
        x = mech.q0[3 * i]
        out.append(_joint_usda(f"S{k}", "PhysicsPrismaticJoint", None, f"B{i}", (x, 0, z), qaxis([0, 1, 0], -phi),
                               (0, 0, 0), ident, "X"))
    return "".join(out)


def _link_q(P, Q):
    ang = math.atan2(Q[1] - P[1], Q[0] - P[0])
    return [(P[0] + Q[0]) / 2, (P[1] + Q[1]) / 2, ang]


def circle_meet(B, D, b, c, upper=True):
    dx, dz = D[0] - B[0], D[1] - B[1]
    d = math.hypot(dx, dz)
    if d == 0 or d > b + c or d < abs(b - c):
        return None
    a = (b * b - c * c + d * d) / (2 * d)
    h = math.sqrt(max(b * b - a * a, 0.0))
    s = 1 if upper else -1
    return (B[0] + a * dx / d - s * h * dz / d, B[1] + a * dz / d + s * h * dx / d)


def _stage_numbers(lengths, masses, inerts):
    """Lengths, masses and inertias rounded to what the stage stores (float32), so that the planar
    reference integrates exactly the mechanism usdphys reads."""
    return ([f32(v) for v in lengths], [f32(v) for v in masses], [tuple(f32(c) for c in i) for i in inerts])


def fourbar(ground, crank, coupler, rocker, theta, masses, inerts, upper=True, shapes=None):
    (ground, crank, coupler, rocker), masses, inerts = _stage_numbers((ground, crank, coupler, rocker), masses, inerts)
    A, D = (0.0, 0.0), (ground, 0.0)
    B = (crank * math.cos(theta), crank * math.sin(theta))
    C = circle_meet(B, D, coupler, rocker, upper)
    if C is None:
        return None
    q0 = np.array(_link_q(A, B) + _link_q(B, C) + _link_q(D, C))
    L = [crank, coupler, rocker]
    pins = [(0, np.array([-crank / 2, 0]), -1, np.array(A)),
            (1, np.array([-coupler / 2, 0]), 0, np.array([crank / 2, 0])),
            (2, np.array([rocker / 2, 0]), 1, np.array([coupler / 2, 0])),
            (2, np.array([-rocker / 2, 0]), -1, np.array(D))]
    return Planar("fourbar", list(masses), list(inerts), L, q0, pins, [], shapes)


def slider_crank(crank, rod, theta, masses, inerts, shapes=None):
    (crank, rod), masses, inerts = _stage_numbers((crank, rod), masses, inerts)
    A = (0.0, 0.0)
    B = (crank * math.cos(theta), crank * math.sin(theta))
    if rod <= abs(B[1]):
        return None
    C = (B[0] + math.sqrt(rod * rod - B[1] ** 2), 0.0)
    q0 = np.array(_link_q(A, B) + _link_q(B, C) + [C[0], 0.0, 0.0])
    L = [crank, rod, 0.1]
    pins = [(0, np.array([-crank / 2, 0]), -1, np.array(A)),
            (1, np.array([-rod / 2, 0]), 0, np.array([crank / 2, 0])),
            (2, np.array([0.0, 0.0]), 1, np.array([rod / 2, 0]))]
    return Planar("slider_crank", list(masses), list(inerts), L, q0, pins, [(2, 0.0, 0.0)], shapes)


# ----------------------------------------------------------------------------- isolated runner
def _worker(conn):
    import io
    import contextlib

    import usdphys.usd  # noqa: F401
    from pxr import Usd

    from usdphys.errors import UsdphysError
    from usdphys.simulate import simulate

    # one step of a pendulum first: a cold kernel cache compiles the step here (about two minutes),
    # not inside the first job's timeout
    st = Usd.Stage.CreateInMemory()
    assert st.GetRootLayer().ImportFromString(tree_usda([Link(-1, "revolute")]))
    with contextlib.redirect_stderr(io.StringIO()):
        simulate(st, duration=1e-3, dt=1e-3, fps=1000)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        text, kw = job
        try:
            st = Usd.Stage.CreateInMemory()
            assert st.GetRootLayer().ImportFromString(text)
            with contextlib.redirect_stderr(io.StringIO()):
                r = simulate(st, **kw)
            conn.send(("ok", r.body_paths, r.positions, r.orientations, np.asarray(r.max_constraint_error)))
        except UsdphysError as e:
            conn.send(("usdphys_error", str(e)))
        except BaseException as e:  # noqa: BLE001 - any other exception is a finding
            conn.send(("exception", f"{type(e).__name__}: {e}", traceback.format_exc(limit=6)))


WORKER_START_TIMEOUT = 1800.0  # s: a cold build of the step kernels (CPU: about two minutes)


class Runner:
    """One persistent worker process; a job past its timeout kills it (a fresh one starts next)."""

    def __init__(self):
        self.proc = None
        self.conn = None

    def _start(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        try:
            ready = self.conn.poll(WORKER_START_TIMEOUT) and self.conn.recv() == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            code = self.proc.exitcode
            self.kill()
            raise RuntimeError(f"the usdphys worker did not start within {WORKER_START_TIMEOUT} s (exit code {code})")

    def run(self, text, timeout=60.0, **kw):
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((text, kw))
        if not self.conn.poll(timeout):
            self.kill()
            return ("timeout", f"no result after {timeout} s")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            code = self.proc.exitcode
            self.kill()
            return ("crash", f"worker died (exit code {code})")

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
        self.proc = None


_RUNNER = None


def run_usdphys(text, timeout=60.0, **kw):
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = Runner()
    return _RUNNER.run(text, timeout=timeout, **kw)


def simulate_text(text, **kw):
    """usdphys.simulate on a stage made from USD text, in this process (for recorded quantities
    and results compared bit for bit; run_usdphys isolates a run that may hang)."""
    import usdphys.usd  # noqa: F401  (the schemas registered before the stage is opened)
    from pxr import Usd

    from usdphys.simulate import simulate

    stage = Usd.Stage.CreateInMemory()
    assert stage.GetRootLayer().ImportFromString(text)
    return simulate(stage, **kw)


def body_positions(res, names):
    paths = [p.split("/")[-1] for p in res[1]]
    return np.array([res[2][-1, 0, paths.index(n)] for n in names])
