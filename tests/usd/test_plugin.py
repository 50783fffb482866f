"""Plugin registration: fresh interpreters, early registry, beside newton-usd-schemas, staleness."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from usdphys import plugin_path
from usdphys.usd.schemagen import GENERATED_FILES, PLUGIN_DIR, TOKENS_MODULE, generate, tokens_source

REPO = Path(__file__).resolve().parents[2]


def _console_script() -> str:
    """The installed `usdphys` command (beside this interpreter, or on PATH)."""
    beside = Path(sys.executable).with_name("usdphys")
    return str(beside) if beside.exists() else "usdphys"


def _python(code: str, env_extra=None, drop_plugin_env=True):
    env = dict(os.environ)
    if drop_plugin_env:
        env.pop("PXR_PLUGINPATH_NAME", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")


def test_plugin_dir_is_up_to_date(tmp_path):
    """plugin/ must be what usdGenSchema makes from schemas/schema.usda today."""
    generate(tmp_path)
    for name in GENERATED_FILES:
        fresh = (tmp_path / name).read_text()
        committed = (PLUGIN_DIR / name).read_text()
        assert fresh == committed, f"plugin/{name} is stale: run `python -m usdphys.usd.schemagen`"
    fresh_tokens = tokens_source(tmp_path / "generatedSchema.usda")
    assert fresh_tokens == TOKENS_MODULE.read_text(), "usdphys/usd/tokens.py is stale: run `python -m usdphys.usd.schemagen`"


def test_tokens_name_every_schema_property():
    from usdphys.usd.tokens import Tokens

    assert Tokens.MbdSpringDamper == "MbdSpringDamper"
    assert Tokens.mbdRestLength == "mbd:restLength"
    assert Tokens.newtonDofs == "newton:dofs"
    assert Tokens.mbdFunctionType == "mbd:function:type"


def test_plugin_path_command_prints_the_plugin_folder():
    out = subprocess.run([sys.executable, "-m", "usdphys.cli", "plugin-path"], capture_output=True, text=True, check=True)
    assert Path(out.stdout.strip()) == plugin_path()
    assert (Path(out.stdout.strip()) / "plugInfo.json").is_file()


def test_fresh_interpreter_sees_schemas_with_only_the_env_var():
    """What a usdview user does: PXR_PLUGINPATH_NAME=$(usdphys plugin-path), no usdphys import."""
    code = (
        "import sys; from pxr import Usd\n"
        "assert 'usdphys' not in sys.modules\n"
        "r = Usd.SchemaRegistry()\n"
        "assert r.FindConcretePrimDefinition('MbdSpringDamper') is not None\n"
        "assert r.FindAppliedAPIPrimDefinition('NewtonJointAPI') is not None\n"
        "s = Usd.Stage.CreateInMemory(); j = s.DefinePrim('/j', 'PhysicsRevoluteJoint')\n"
        "j.ApplyAPI('NewtonJointAPI'); print(j.GetAttribute('newton:dofs').GetTypeName())\n"
    )
    res = _python(code, {"PXR_PLUGINPATH_NAME": str(plugin_path())})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "token[]"
    # and without the variable the same interpreter knows nothing of them
    res = _python("from pxr import Usd; print(Usd.SchemaRegistry().FindConcretePrimDefinition('MbdSpringDamper'))")
    assert res.stdout.strip() == "None"


def test_import_registers_before_first_stage():
    res = _python("import usdphys.usd\nfrom pxr import Usd\nprint(Usd.SchemaRegistry().FindConcretePrimDefinition('MbdMotor') is not None)")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"


def test_registry_built_too_early_says_what_to_do():
    res = _python("from pxr import Usd\ns = Usd.Stage.CreateInMemory(); s.DefinePrim('/a', 'Xform')\nimport usdphys.usd")
    assert res.returncode != 0
    assert "SchemaRegistrationError" in res.stderr
    assert "Import usdphys.usd before using pxr.Usd" in res.stderr
    assert f"PXR_PLUGINPATH_NAME={plugin_path()}" in res.stderr


def test_registry_built_early_is_fine_when_env_var_is_set():
    res = _python(
        "from pxr import Usd\ns = Usd.Stage.CreateInMemory(); s.DefinePrim('/a', 'Xform')\nimport usdphys.usd\nprint('ok')",
        {"PXR_PLUGINPATH_NAME": str(plugin_path())},
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def _has_newton_usd_schemas():
    return _python("import newton_usd_schemas").returncode == 0


_NEEDS_NEWTON_SCHEMAS = pytest.mark.skipif(not _has_newton_usd_schemas(), reason="newton-usd-schemas not installed (pip install -e .[dev])")
_FORM = (
    "from pxr import Plug, Usd\n"
    "from usdphys.usd.plugin import newton_joint_form, ensure_registered\n"
    "ensure_registered()\n"
    "print(newton_joint_form(), Usd.SchemaRegistry().FindConcretePrimDefinition('MbdMotor') is not None,"
    " Plug.Registry().GetPluginWithName('usdphys').resourcePath.rstrip('/').split('/')[-1])\n"
)


@_NEEDS_NEWTON_SCHEMAS
def test_beside_newton_usd_schemas_imported_first():
    """Newton's scalar NewtonJointAPI stays; every Mbd* schema of ours registers beside it."""
    res = _python("import newton_usd_schemas\nimport usdphys.usd\n" + _FORM)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["scalar", "True", "without_newton_joint"]


@_NEEDS_NEWTON_SCHEMAS
def test_newton_usd_schemas_imported_after_keeps_ours():
    """USD refuses the second NewtonJointAPI definition; usdphys keeps the per-DOF one and works."""
    res = _python("import usdphys.usd\ntry:\n    import newton_usd_schemas\nexcept Exception as e:\n    print('refused:', 'NewtonJointAPI' in str(e))\n" + _FORM)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["refused:", "True", "per-DOF", "True", "plugin"]


def test_foreign_newton_joint_api_on_the_plugin_path_registers_the_rest(tmp_path):
    """A plugin on PXR_PLUGINPATH_NAME claiming NewtonJointAPI: the CLI works beside it."""
    (tmp_path / "plugInfo.json").write_text(
        '{"Plugins": [{"Name": "fakeNewton", "Type": "resource", "Root": ".", "ResourcePath": ".",'
        ' "LibraryPath": "", "Info": {"Types": {"FakeNewtonJointAPI": {"schemaIdentifier": "NewtonJointAPI",'
        ' "bases": ["UsdAPISchemaBase"], "schemaKind": "singleApplyAPI", "autoGenerated": true}}}}]}'
    )
    env = dict(os.environ, PXR_PLUGINPATH_NAME=str(tmp_path))
    res = subprocess.run([_console_script(), "plugin-path"], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    res = _python("import usdphys.usd\n" + _FORM, {"PXR_PLUGINPATH_NAME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[1:] == ["True", "without_newton_joint"]


def test_hand_authored_stage_opens_in_a_plain_usd_process_with_the_plugin_path():
    """What usdview does with the new user's file: the schemas apply, fallbacks show."""
    mistakes = REPO / "assets" / "schema" / "hand_authored_mistakes.usda"
    code = (
        "from pxr import Usd\n"
        f"s = Usd.Stage.Open({str(mistakes)!r})\n"
        "h = s.GetPrimAtPath('/World/Hinge'); m = s.GetPrimAtPath('/World/Motor')\n"
        "print(h.HasAPI('NewtonJointAPI'), m.IsA(Usd.Typed), m.GetPrimDefinition().GetAttributeDefinition('mbd:dof').GetFallbackValue())\n"
    )
    res = _python(code, {"PXR_PLUGINPATH_NAME": str(plugin_path())})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "True", "angle"]
