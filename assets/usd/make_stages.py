"""Regenerate the hand-made test stages in this folder: `python assets/usd/make_stages.py`.

pendulum.usda   one link on a revolute joint to the world (Z up, metres)
fourbar.usda    planar four-bar closed with 3-D revolute joints (redundant loop), Z up
"""
from __future__ import annotations

import math
from pathlib import Path

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.usd import articulation

HERE = Path(__file__).resolve().parent


def _stage(path, up="Z", mpu=1.0):
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, up)
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(9.81)
    return stage


def _link(stage, path, center, angle, length, mass=1.0, width=0.05):
    """A box link along its local X, rotated by `angle` (rad) about Y, centred at `center`."""
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*center))
    half = -angle / 2.0  # rotation about +Y by -angle maps +X towards +Z for positive angle
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(math.cos(half), 0, math.sin(half), 0))
    prim = xf.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    m = UsdPhysics.MassAPI.Apply(prim)
    m.CreateMassAttr(mass)
    m.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, 0))
    i_t = mass * length * length / 12.0
    i_a = mass * width * width / 6.0
    m.CreateDiagonalInertiaAttr(Gf.Vec3f(i_a, i_t, i_t))
    geom = UsdGeom.Cube.Define(stage, f"{path}/geom")
    geom.CreateSizeAttr(1.0)
    geom.AddScaleOp().Set(Gf.Vec3f(length, width, width))
    return prim


def _revolute(stage, path, body0, body1, pos0, pos1, axis="Y"):
    j = UsdPhysics.RevoluteJoint.Define(stage, path)
    if body0:
        j.CreateBody0Rel().SetTargets([body0])
    j.CreateBody1Rel().SetTargets([body1])
    j.CreateAxisAttr(axis)
    j.CreateLocalPos0Attr(Gf.Vec3f(*pos0))
    j.CreateLocalPos1Attr(Gf.Vec3f(*pos1))
    return j


def pendulum(path=HERE / "pendulum.usda", length=1.0, angle_deg=30.0):
    stage = _stage(path)
    a = math.radians(angle_deg)
    # link hangs from the origin; rotated so its +X points from the pivot to the tip
    down = -math.pi / 2 + a  # link direction angle in the XZ plane, measured from +X towards +Z
    center = (0.5 * length * math.cos(down), 0.0, 0.5 * length * math.sin(down))
    _link(stage, "/World/link", center, down, length)
    _revolute(stage, "/World/pivot", None, "/World/link", (0, 0, 0), (-0.5 * length, 0, 0))
    articulation.author(stage)
    stage.GetRootLayer().Save()


def fourbar(path=HERE / "fourbar.usda"):
    stage = _stage(path)
    ground, crank, coupler, rocker = 2.0, 0.8, 1.8, 1.4
    th = math.radians(70.0)
    A = (0.0, 0.0)
    D = (ground, 0.0)
    B = (crank * math.cos(th), crank * math.sin(th))
    # C: |C - B| = coupler, |C - D| = rocker (upper solution)
    dx, dz = D[0] - B[0], D[1] - B[1]
    d = math.hypot(dx, dz)
    a = (coupler**2 - rocker**2 + d * d) / (2 * d)
    h = math.sqrt(coupler**2 - a * a)
    C = (B[0] + a * dx / d - h * dz / d, B[1] + a * dz / d + h * dx / d)

    def link(name, P, Q, L):
        ang = math.atan2(Q[1] - P[1], Q[0] - P[0])
        center = ((P[0] + Q[0]) / 2, 0.0, (P[1] + Q[1]) / 2)
        return _link(stage, f"/World/{name}", center, ang, L)

    link("crank", A, B, crank)
    link("coupler", B, C, coupler)
    link("rocker", D, C, rocker)
    _revolute(stage, "/World/jointA", None, "/World/crank", (0, 0, 0), (-crank / 2, 0, 0))
    _revolute(stage, "/World/jointB", "/World/crank", "/World/coupler", (crank / 2, 0, 0), (-coupler / 2, 0, 0))
    _revolute(stage, "/World/jointC", "/World/coupler", "/World/rocker", (coupler / 2, 0, 0), (rocker / 2, 0, 0))
    _revolute(stage, "/World/jointD", None, "/World/rocker", (ground, 0, 0), (-rocker / 2, 0, 0))
    sim = stage.GetPrimAtPath("/World/PhysicsScene")
    sim.ApplyAPI("MbdSimulationAPI")
    sim.CreateAttribute("mbd:timeStep", Sdf.ValueTypeNames.Double).Set(1e-3)
    sim.CreateAttribute("mbd:endTime", Sdf.ValueTypeNames.Double).Set(2.0)
    articulation.author(stage)  # the loop: tree-based importers (Newton) need it marked
    stage.GetRootLayer().Save()


if __name__ == "__main__":
    pendulum()
    fourbar()
