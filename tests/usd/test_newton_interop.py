"""Beside Newton: both NewtonJointAPI forms read and check the same whichever definition the
process registered (fresh interpreters, both import orders)."""
import os
import subprocess
import sys

import numpy as np
import pytest

STAGE = '''#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "W" {
    def Xform "A" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsArticulationRootAPI"] ) {}
    def PhysicsRevoluteJoint "PerDof" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body1 = </W/A>
        uniform token[] newton:dofs = ["angle"]
        uniform float[] newton:armature = [0.5]
    }
    def PhysicsRevoluteJoint "Scalar" ( prepend apiSchemas = ["NewtonJointAPI"] ) {
        rel physics:body1 = </W/A>
        float newton:armature = 0.25
    }
}
'''

_CHECK = (
    "from pxr import Usd\n"
    "from usdphys.usd.check import check_stage\n"
    "s = Usd.Stage.Open(PATH)\n"
    "print(sorted((f.path, f.rule) for f in check_stage(s, usd_core=False)))\n"
)


def _python(code, *args):
    env = dict(os.environ)
    env.pop("PXR_PLUGINPATH_NAME", None)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd="/")


@pytest.mark.parametrize("prelude", ["import usdphys.usd\n", "import newton_usd_schemas\nimport usdphys.usd\n",
                                     "import usdphys.usd\ntry:\n    import newton_usd_schemas\nexcept Exception:\n    pass\n"])
def test_check_reports_each_form_in_every_import_order(tmp_path, prelude):
    if "newton_usd_schemas" in prelude and _python("import newton_usd_schemas").returncode != 0:
        pytest.skip("newton-usd-schemas not installed (pip install -e .[interop])")
    path = tmp_path / "forms.usda"
    path.write_text(STAGE)
    res = _python(prelude + f"PATH = {str(path)!r}\n" + _CHECK)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str([("/W/PerDof", "newton-per-dof-form"), ("/W/Scalar", "newton-scalar-form")])


# --- converted Chrono models in Newton -------------------------------------------------------
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHRONO = [os.path.join("assets", "chrono", "slider_crank", "mbs.yaml"),  # loop, ground as body1
          os.path.join("assets", "chrono-yaml", "data", "yaml", "mbs", "model_inverted_pendulum_load.yaml"),
          os.path.join("assets", "chrono-yaml", "data", "yaml", "mbs", "model_motors.yaml")]

_NEWTON_RUN = '''
import sys, numpy as np, newton
b = newton.ModelBuilder()
b.add_usd(sys.argv[1])
m = b.finalize(device="cpu")
s0, s1, c = m.state(), m.state(), m.control()
solver = newton.solvers.SolverXPBD(m, iterations=10)
for _ in range(500):
    s0.clear_forces(); solver.step(s0, s1, c, None, 1.0 / 500); s0, s1 = s1, s0
q = s0.body_q.numpy()
print("BODIES", m.body_count, "FINITE", bool(np.isfinite(q).all()))
'''


def _convert(src, out):
    from usdphys.cli import main
    assert main(["convert", os.path.join(REPO, src), "-o", str(out)]) == 0


@pytest.mark.parametrize("src", CHRONO)
def test_converted_chrono_model_has_one_articulation_root_per_connected_set(tmp_path, src):
    from pxr import Usd, UsdPhysics

    from usdphys.usd.articulation import orphan_joints
    out = tmp_path / "m.usda"
    _convert(src, out)
    stage = Usd.Stage.Open(str(out))
    assert orphan_joints(stage) == []
    simulated = {str(p.GetPath()) for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)
                 and UsdPhysics.RigidBodyAPI(p).GetRigidBodyEnabledAttr().Get() is not False}
    links = {b: {b} for b in simulated}  # bodies joined by any enabled joint, static ones excepted
    for p in stage.Traverse():
        if p.IsA(UsdPhysics.Joint):
            ends = [str(t) for r in ("physics:body0", "physics:body1") for t in p.GetRelationship(r).GetTargets()]
            ends = [e for e in ends if e in simulated]
            if len(ends) == 2:
                merged = links[ends[0]] | links[ends[1]]
                for b in merged:
                    links[b] = merged
    sets = {frozenset(s) for s in links.values()}
    roots = []  # the bodies each root marks: a root joint marks its bodies
    for p in stage.Traverse():
        if p.HasAPI(UsdPhysics.ArticulationRootAPI):
            if p.IsA(UsdPhysics.Joint):
                ends = [str(t) for r in ("physics:body0", "physics:body1") for t in p.GetRelationship(r).GetTargets()]
                roots.append(next(e for e in ends if e in simulated))
            else:
                roots.append(str(p.GetPath()))
    # two roots in one set: Newton's second articulation finds its bodies taken
    assert sorted(len([r for r in roots if r in s]) for s in sets) == [1] * len(sets), (sets, roots)


@pytest.mark.parametrize("src", CHRONO)
def test_converted_chrono_model_loads_and_simulates_in_newton(tmp_path, src):
    if _python("import newton").returncode != 0:
        pytest.skip("newton not installed (pip install -e .[interop])")
    out = tmp_path / "m.usda"
    _convert(src, out)
    res = _python(_NEWTON_RUN, str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("BODIES")][-1].split()
    assert int(line[1]) > 0 and line[3] == "True", res.stdout[-2000:]


def test_turned_joint_is_the_same_constraint(tmp_path):
    """The inverted pendulum's pendulum->cart revolute is turned to cart->pendulum so the tree
    hangs from the world; written either way round, usdphys moves the bodies the same."""
    from pxr import Usd

    from usdphys.simulate import simulate
    from usdphys.usd import articulation
    out = tmp_path / "m.usda"
    _convert(CHRONO[1], out)
    stage = Usd.Stage.Open(str(out))
    rev = stage.GetPrimAtPath("/Invertedd_pendulum_LOAD/Joints/rev_joint")
    assert [str(t) for t in rev.GetRelationship("physics:body0").GetTargets()] == ["/Invertedd_pendulum_LOAD/Bodies/cart"]
    turned = simulate(stage, duration=0.5, dt=1e-3, fps=20, device="cpu")
    articulation._turn_round(rev)  # back as the converter first wrote it
    assert [str(t) for t in rev.GetRelationship("physics:body0").GetTargets()] == ["/Invertedd_pendulum_LOAD/Bodies/pendulum"]
    original = simulate(stage, duration=0.5, dt=1e-3, fps=20, device="cpu")
    assert turned.body_paths == original.body_paths
    np.testing.assert_allclose(turned.positions, original.positions, atol=1e-9)
    np.testing.assert_allclose(abs(np.sum(turned.orientations * original.orientations, axis=-1)), 1.0, atol=1e-9)


def test_joint_with_signed_data_is_never_turned(tmp_path):
    """A limit (or a motor naming the joint) has a sign tied to body0 -> body1: not turnable."""
    from pxr import Usd

    from usdphys.usd import articulation
    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString(STAGE_TURN)
    # turning Limited would hang all three from the world; it may not, so C floats above A
    roots, excluded, turned = articulation.plan(stage, turn=True)
    assert turned == ["/W/Plain"]
    assert roots == ["/W/C"] and excluded == ["/W/Ground"]


STAGE_TURN = '''#usda 1.0
def Xform "W" {
    def Xform "A" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {}
    def Xform "B" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {}
    def Xform "C" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {}
    def PhysicsPrismaticJoint "Ground" {
        rel physics:body1 = </W/A>
    }
    def PhysicsRevoluteJoint "Plain" {
        rel physics:body0 = </W/B>
        rel physics:body1 = </W/A>
    }
    def PhysicsRevoluteJoint "Limited" {
        rel physics:body0 = </W/C>
        rel physics:body1 = </W/A>
        float physics:lowerLimit = 0
        float physics:upperLimit = 30
    }
}
'''


PENDULUM = '''#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
)
def PhysicsScene "Scene" {}
def Xform "Bob" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "PhysicsArticulationRootAPI"] ) {
    float physics:mass = 1
    float3 physics:diagonalInertia = (0.001, 0.001, 0.001)
    double3 xformOp:translate = (0.5, 0, -0.866)
    uniform token[] xformOpOrder = ["xformOp:translate"]
}
def PhysicsRevoluteJoint "Hinge" ( %s ) {
    uniform token physics:axis = "Y"
    rel physics:body1 = </Bob>
    point3f physics:localPos1 = (-0.5, 0, 0.866)
%s
}
'''
_FORMS = {
    "none": ("", ""),
    "per-DOF": ('prepend apiSchemas = ["NewtonJointAPI"]',
                '    uniform token[] newton:dofs = ["angle"]\n    uniform float[] newton:armature = [0.5]'),
    "scalar": ('prepend apiSchemas = ["NewtonJointAPI"]', "    float newton:armature = 0.5"),
}
_SIMULATE = (
    "from usdphys.simulate import simulate\n"
    "for name, path in PATHS:\n"
    "    r = simulate(path, duration=0.5, dt=1e-3, fps=10, device='cpu')\n"
    "    print(name, repr(float(r.positions[-1, 0, 0, 0])))\n"
)


@pytest.mark.parametrize("prelude", ["import usdphys.usd\n", "import newton_usd_schemas\nimport usdphys.usd\n",
                                     "import usdphys.usd\ntry:\n    import newton_usd_schemas\nexcept Exception:\n    pass\n"])
def test_both_forms_simulate_the_same_in_every_import_order(tmp_path, prelude):
    """A pendulum with armature 0.5 kg m^2 on its hinge, authored per-DOF and in the scalar form:
    both swing identically (the scalar form is broadcast to the one DOF) and slower than without
    armature, whichever NewtonJointAPI the process registered."""
    if "newton_usd_schemas" in prelude and _python("import newton_usd_schemas").returncode != 0:
        pytest.skip("newton-usd-schemas not installed (pip install -e .[interop])")
    paths = []
    for name, (api, attrs) in _FORMS.items():
        path = tmp_path / f"{name}.usda"
        path.write_text(PENDULUM % (api, attrs))
        paths.append((name, str(path)))
    res = _python(prelude + f"PATHS = {paths!r}\n" + _SIMULATE)
    assert res.returncode == 0, res.stderr
    x = {line.split()[0]: float(line.split()[1]) for line in res.stdout.strip().splitlines()}
    assert x["per-DOF"] == x["scalar"]  # same value, same rows, same arithmetic
    assert abs(x["per-DOF"] - x["none"]) > 1e-2  # armature 0.5 vs the bob's 1 kg m^2 slows the swing
