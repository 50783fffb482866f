"""Beside Newton: both NewtonJointAPI forms read and check the same whichever definition the
process registered (fresh interpreters, both import orders)."""
import os
import subprocess
import sys

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


def _python(code):
    env = dict(os.environ)
    env.pop("PXR_PLUGINPATH_NAME", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")


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
