"""Mutation fuzz of stage attributes and relationships through `usdphys simulate` (in-process).

Every numeric attribute of a few small stages (bundled ones and one with NewtonJointAPI,
NewtonMimicAPI, MuJoCo springs, collision groups, several transform ops and mass properties) is
set in turn to NaN, inf, -inf, a negative number, zero and a huge number (every component of a
vector, quaternion or matrix at once, and one component alone); every relationship is pointed
at nothing, at a prim that does not exist and at a prim of the wrong kind. Each case must end
with exit 0 or 1, at most one error line, no traceback, within CASE_SECONDS, and leave no output
behind when it fails (the checks of tests/test_cli_fuzz.py).

The default run takes a seeded sample of DEFAULT_CASES cases (a few seconds); the slow run
(pytest -m slow) takes them all.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas)
from pxr import Gf, Sdf, Usd

from test_cli_fuzz import failed_badly, run_case

ROOT = Path(__file__).resolve().parents[1] / "assets"
SEED = 20261124
DEFAULT_CASES = 120
BAD = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "negative": -1.5, "zero": 0.0, "huge": 1e30}
BAD_INT = {"negative": -1, "zero": 0, "huge": 2 ** 31 - 1}

RICH = '''#usda 1.0
(
    defaultPrim = "World"
    kilogramsPerUnit = 1
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "World"
{
    def PhysicsScene "Scene"
    {
        vector3f physics:gravityDirection = (0, 0, -1)
        float physics:gravityMagnitude = 9.81
    }
    def PhysicsCollisionGroup "Group"
    {
        rel collection:colliders:includes = </World/A/geom>
        rel physics:filteredGroups = </World/Group>
    }
    def Xform "A" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] )
    {
        float physics:mass = 2
        point3f physics:centerOfMass = (0.1, 0, 0)
        float3 physics:diagonalInertia = (0.02, 0.03, 0.04)
        quatf physics:principalAxes = (1, 0, 0, 0)
        vector3f physics:velocity = (0, 0.1, 0)
        vector3f physics:angularVelocity = (0, 10, 0)
        double3 xformOp:translate = (0.5, 0, 1)
        float3 xformOp:rotateXYZ = (0, 10, 0)
        float3 xformOp:scale = (1, 1, 1)
        uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ", "xformOp:scale"]
        def Sphere "geom" ( prepend apiSchemas = ["PhysicsCollisionAPI"] )
        {
            double radius = 0.1
        }
    }
    def Xform "B" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] )
    {
        float physics:density = 500
        matrix4d xformOp:transform = ( (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (1, 0, 1, 1) )
        uniform token[] xformOpOrder = ["xformOp:transform"]
        def Capsule "geom" ( prepend apiSchemas = ["PhysicsCollisionAPI"] )
        {
            double radius = 0.05
            double height = 0.3
            uniform token axis = "X"
        }
    }
    def PhysicsRevoluteJoint "JA" ( prepend apiSchemas = ["NewtonJointAPI", "PhysicsDriveAPI:angular"] )
    {
        uniform token physics:axis = "Y"
        rel physics:body1 = </World/A>
        point3f physics:localPos0 = (0, 0, 1)
        point3f physics:localPos1 = (-0.5, 0, 0)
        quatf physics:localRot0 = (1, 0, 0, 0)
        quatf physics:localRot1 = (1, 0, 0, 0)
        float physics:lowerLimit = -90
        float physics:upperLimit = 90
        float drive:angular:physics:stiffness = 1
        float drive:angular:physics:damping = 0.1
        float drive:angular:physics:targetPosition = 5
        float drive:angular:physics:maxForce = 100
        float newton:armature = 0.01
        float newton:damping = 0.001
        float newton:friction = 0.01
        float newton:velocityLimit = 360
        float newton:limitStiffness = 10
        float newton:limitDamping = 0.1
        uniform double mjc:stiffness = 0.5
        uniform double mjc:springref = 10
    }
    def PhysicsRevoluteJoint "JB" ( prepend apiSchemas = ["NewtonMimicAPI"] )
    {
        uniform token physics:axis = "Y"
        rel physics:body0 = </World/A>
        rel physics:body1 = </World/B>
        point3f physics:localPos0 = (0.5, 0, 0)
        point3f physics:localPos1 = (0, 0, 0)
        rel newton:mimicJoint = </World/JA>
        float newton:mimicCoef0 = 0
        float newton:mimicCoef1 = -1
    }
}
'''

_SCALARS = (Sdf.ValueTypeNames.Float, Sdf.ValueTypeNames.Double, Sdf.ValueTypeNames.Half)
_INTS = (Sdf.ValueTypeNames.Int, Sdf.ValueTypeNames.UInt, Sdf.ValueTypeNames.Int64)


def _bad_values(value, type_name):
    """(label, value) mutants of one attribute value of type `type_name`."""
    if type_name in _INTS:
        return [(k, v if type_name != Sdf.ValueTypeNames.UInt else abs(v)) for k, v in BAD_INT.items()]
    if type_name in _SCALARS:
        return list(BAD.items())
    out = []
    if isinstance(value, (Gf.Quatf, Gf.Quatd, Gf.Quath)):
        for k, v in BAD.items():
            out.append((f"all {k}", type(value)(v, v, v, v)))
            out.append((f"w {k}", type(value)(v, *value.GetImaginary())))
        return out
    if isinstance(value, (Gf.Matrix4d, Gf.Matrix3d)):
        n = 4 if isinstance(value, Gf.Matrix4d) else 3
        rows = [[float(value[i][j]) for j in range(n)] for i in range(n)]
        for k, v in BAD.items():
            for i, j in ((n - 1, 0), (0, 0)):  # a translation (or last-row) entry, the linear part
                bad = [r[:] for r in rows]
                bad[i][j] = v
                out.append((f"[{i}][{j}] {k}", type(value)(*[x for r in bad for x in r])))
        return out
    if hasattr(value, "__len__") and len(value) and not isinstance(value, str):
        try:
            comps = [float(x) for x in value]
        except (TypeError, ValueError):
            return []  # arrays of vectors etc.: not numbers one by one
        for k, v in BAD.items():
            if type_name.isArray:
                out.append((f"[0] {k}", [v] + comps[1:]))
            else:
                out.append((f"all {k}", type(value)(*[v] * len(comps))))
                out.append((f"[0] {k}", type(value)(v, *comps[1:])))
        return out
    return []


def _cases(name: str, text: str) -> list[tuple[str, str, callable]]:
    """(stage name, case label, mutate(stage)) for every attribute and relationship."""
    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString(text)
    cases = []
    prims = list(stage.Traverse())
    for prim in prims:
        for attr in prim.GetAttributes():
            if not attr.HasAuthoredValue():
                continue
            value = attr.Get()
            for label, bad in _bad_values(value, attr.GetTypeName()):
                def mutate(st, path=attr.GetPath(), bad=bad):
                    st.GetAttributeAtPath(path).Set(bad)
                cases.append((name, f"{attr.GetPath()} = {label}", mutate))
        for rel in prim.GetRelationships():
            if not rel.HasAuthoredTargets():
                continue
            wrong = next((p.GetPath() for p in prims if p.GetTypeName() == "PhysicsScene"), prims[0].GetPath())
            for label, targets in (("empty", []), ("dangling", [Sdf.Path("/World/Nowhere")]),
                                   ("wrong kind", [wrong]), ("two targets", [prims[0].GetPath(), wrong])):
                def mutate(st, path=rel.GetPath(), targets=targets):
                    st.GetRelationshipAtPath(path).SetTargets(targets)
                cases.append((name, f"{rel.GetPath()} -> {label}", mutate))
    return cases


def _sources():
    return [("pendulum", (ROOT / "usd" / "pendulum.usda").read_text()),
            ("fourbar", (ROOT / "usd" / "fourbar.usda").read_text()),
            ("rich", RICH)]


ALL_CASES = [c for name, text in _sources() for c in _cases(name, text)]


def _run(cases, tmp_path, capfd):
    texts = dict(_sources())
    failures, counts = [], {0: 0, 1: 0, 2: 0}
    for n, (name, label, mutate) in enumerate(cases):
        stage = Usd.Stage.CreateInMemory()
        stage.GetRootLayer().ImportFromString(texts[name])
        mutate(stage)
        work = tmp_path / f"case{n}"
        work.mkdir()
        src = work / f"{name}.usda"
        text = stage.GetRootLayer().ExportToString()
        src.write_text(text)
        out_dir = tmp_path / f"out{n}"
        out_dir.mkdir()
        out = out_dir / "result.usda"
        rc, _, err, _ = run_case(["simulate", src, "-o", out, "--duration", "0.02", "--dt", "0.002"], capfd)
        if isinstance(rc, str):
            err = rc
        case = f"{name}: {label}"
        bad = failed_badly(case, rc, err, out_dir, out)
        if bad is None and src.read_text() != text:
            bad = f"{case}: input changed"
        if bad:
            failures.append(bad)
        else:
            counts[rc] += 1
        shutil.rmtree(work)
    print(f"stage attribute mutants: {len(cases)} cases, exits {counts}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n\n" + "\n\n".join(failures)


def test_attribute_and_relationship_mutants_sample(tmp_path, capfd):
    rng = random.Random(SEED)
    _run(rng.sample(ALL_CASES, min(DEFAULT_CASES, len(ALL_CASES))), tmp_path, capfd)


@pytest.mark.slow
def test_attribute_and_relationship_mutants_all(tmp_path, capfd):
    _run(ALL_CASES, tmp_path, capfd)
