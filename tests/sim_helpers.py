"""Stage builders shared by the force-element simulation tests (tests/solver/: test_forces_sim,
test_motors, test_joint_friction). Stages are written as USDA text so every test also goes through the
reader (units, signs, frames) exactly as a user's file would. No tests here."""
from __future__ import annotations

import math

import numpy as np

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Usd

DEG = 180.0 / math.pi  # multiply radians (or per-radian values by 1/DEG) for USD's degrees


def v3(p) -> str:
    """USDA tuple of three numbers (full precision; NumPy scalars are fine)."""
    return "(" + ", ".join(repr(float(x)) for x in p) + ")"


def stage(body_text: str, gravity: float = 0.0, direction=(0, 0, -1), mpu: float = 1.0, kpu: float = 1.0,
          tcps: float = 24.0) -> Usd.Stage:
    text = f'''#usda 1.0
(
    metersPerUnit = {mpu}
    kilogramsPerUnit = {kpu}
    timeCodesPerSecond = {tcps}
    upAxis = "Z"
)
def PhysicsScene "Scene" {{
    vector3f physics:gravityDirection = ({direction[0]}, {direction[1]}, {direction[2]})
    float physics:gravityMagnitude = {gravity}
}}
{body_text}
'''
    st = Usd.Stage.CreateInMemory()
    assert st.GetRootLayer().ImportFromString(text)
    return st


def body(name: str, pos=(0, 0, 0), mass=1.0, inertia=(1, 1, 1), vel=(0, 0, 0), angvel_deg=(0, 0, 0),
         orient=None, extra: str = "") -> str:
    """A rigid body prim; angular velocity in degrees / s (UsdPhysics), orient (w, x, y, z)."""
    ops = '"xformOp:translate"'
    rot = ""
    if orient is not None:
        rot = f"quatd xformOp:orient = ({orient[0]}, {orient[1]}, {orient[2]}, {orient[3]})"
        ops += ', "xformOp:orient"'
    return f'''def Xform "{name}" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] ) {{
    double3 xformOp:translate = {v3(pos)}
    {rot}
    uniform token[] xformOpOrder = [{ops}]
    float physics:mass = {float(mass)!r}
    float3 physics:diagonalInertia = {v3(inertia)}
    vector3f physics:velocity = {v3(vel)}
    vector3f physics:angularVelocity = {v3(angvel_deg)}
    {extra}
}}
'''


def joint(kind: str, name: str, body1: str, body0: str | None = None, pos0=(0, 0, 0), pos1=(0, 0, 0),
          axis: str | None = None, extra: str = "", schemas: str = "") -> str:
    b0 = f"rel physics:body0 = </{body0}>" if body0 else ""
    ax = f'uniform token physics:axis = "{axis}"' if axis else ""
    api = f'( prepend apiSchemas = [{schemas}] )' if schemas else ""
    return f'''def {kind} "{name}" {api} {{
    {b0}
    rel physics:body1 = </{body1}>
    point3f physics:localPos0 = {v3(pos0)}
    point3f physics:localPos1 = {v3(pos1)}
    {ax}
    {extra}
}}
'''


def angle_about(q: np.ndarray, axis: int) -> np.ndarray:
    """Unwrapped rotation angle about a coordinate axis of xyzw quaternions (F, 4) that
    rotate about that axis only."""
    return np.unwrap(2.0 * np.arctan2(q[..., axis], q[..., 3]))


def damped(t, x0, v0, k, c, m):
    """Underdamped m x'' + c x' + k x = 0 with x(0) = x0, x'(0) = v0."""
    wn = math.sqrt(k / m)
    z = c / (2.0 * math.sqrt(k * m))
    wd = wn * math.sqrt(1.0 - z * z)
    return np.exp(-z * wn * t) * (x0 * np.cos(wd * t) + (v0 + z * wn * x0) / wd * np.sin(wd * t))
