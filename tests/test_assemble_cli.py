"""`usdphys assemble` end to end, as a new user runs it: reference two supplier assets into
one stage, assemble, open the result with pxr and check where the parts are.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Sdf, Usd, UsdGeom

from usdphys.usd.assemble import connector_frame

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "snap"
TOL = 1e-9  # double-precision transforms written as translate + orient (quatd) and read back


def usdphys_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "usdphys"
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("usdphys")
    return [found] if found else [sys.executable, "-m", "usdphys.cli"]


def run_cli(*args, cwd=None):
    return subprocess.run(usdphys_cmd() + list(args), capture_output=True, text=True, cwd=cwd, timeout=120)


def world(stage, path):
    return np.array(UsdGeom.XformCache().GetLocalToWorldTransform(stage.GetPrimAtPath(path)), float).T


def connector_world(stage, path):
    prim = stage.GetPrimAtPath(path)
    return world(stage, prim.GetParent().GetPath()) @ connector_frame(prim)


SHOP = """#usda 1.0
(
    defaultPrim = "Shop"
    upAxis = "Z"
    metersPerUnit = 1
    kilogramsPerUnit = 1
    timeCodesPerSecond = 60
)

def Xform "Shop"
{{
    def Xform "Wall"
    {{
        double3 xformOp:translate = (2, 3, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]

        def MbdMateConnector "hook"
        {{
            point3d mbd:position = (0, 0, 1.5)
            vector3d mbd:mainAxis = (0, -1, 0)
            vector3d mbd:normal = (0, 0, 1)
        }}
    }}

    def "Face" (prepend references = @{face}@) {{ }}
    def "Hand" (prepend references = @{hand}@) {{ }}

    def PhysicsRevoluteJoint "pin" (prepend apiSchemas = ["MbdMateAPI"])
    {{
        rel physics:body0 = </Shop/Face>
        rel physics:body1 = </Shop/Hand>
        rel mbd:connector0 = </Shop/Face/pin>
        rel mbd:connector1 = </Shop/Hand/pivot>
    }}

    def PhysicsFixedJoint "hang" (prepend apiSchemas = ["MbdMateAPI"])
    {{
        rel physics:body1 = </Shop/Face>
        rel mbd:connector0 = </Shop/Wall/hook>
        rel mbd:connector1 = </Shop/Face/mount>
    }}
}}
"""


@pytest.fixture()
def shop(tmp_path):
    src = tmp_path / "shop.usda"
    src.write_text(
        SHOP.format(face=(ASSETS / "clock" / "clock_face.usda").as_posix(),
                    hand=(ASSETS / "clock" / "clock_hand.usda").as_posix())
    )
    return src


def test_new_user_references_two_assets_and_assembles(shop, tmp_path):
    before = shop.read_bytes()
    out = tmp_path / "out" / "shop_assembled.usda"
    out.parent.mkdir()
    result = run_cli("assemble", str(shop), "-o", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("placed   /Shop/Face  by /Shop/hang")
    assert lines[1].startswith("placed   /Shop/Hand  by /Shop/pin")
    assert "2 mate(s): 2 placed, 0 forced to identity, 0 unresolved, 0 unsatisfied" in result.stdout
    assert shop.read_bytes() == before  # input untouched, byte for byte

    layer = Sdf.Layer.FindOrOpen(str(out))
    assert list(layer.subLayerPaths) == ["../shop.usda"]  # relative: moves with the input
    stage = Usd.Stage.Open(str(out))
    # stage metadata repeated in the new root layer
    assert UsdGeom.GetStageUpAxis(stage) == "Z"
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1  # USD default: 0.01
    assert stage.GetTimeCodesPerSecond() == 60
    assert stage.GetDefaultPrim().GetPath() == Sdf.Path("/Shop")
    # the parts sit where the connectors say
    np.testing.assert_allclose(connector_world(stage, "/Shop/Face/mount"),
                               connector_world(stage, "/Shop/Wall/hook"), rtol=0, atol=TOL)
    np.testing.assert_allclose(connector_world(stage, "/Shop/Hand/pivot"),
                               connector_world(stage, "/Shop/Face/pin"), rtol=0, atol=TOL)
    # by hand: hook at (2, 3, 1.5); its main axis into the wall (-Y) is
    # the face's -Z, so the face looks towards +Y, twelve o'clock up: face origin 0.01 in front of the hook
    face = world(stage, "/Shop/Face")
    np.testing.assert_allclose(face[:3, 3], (2, 3 + 0.01, 1.5), rtol=0, atol=TOL)
    np.testing.assert_allclose(face[:3, :3] @ (0, 0, 1), (0, 1, 0), atol=TOL)  # front
    np.testing.assert_allclose(face[:3, :3] @ (0, 1, 0), (0, 0, 1), atol=TOL)  # twelve
    hand = world(stage, "/Shop/Hand")
    np.testing.assert_allclose(hand[:3, 3], (2, 3 + 0.025, 1.5), rtol=0, atol=TOL)
    np.testing.assert_allclose(hand[:3, :3] @ (0, 1, 0), (0, 0, 1), atol=TOL)  # hand at twelve
    # nothing but the solved transforms and joint frames in the new layer
    text = out.read_text()
    assert "xformOpOrder" in text and "physics:localPos0" in text and "def " not in text


def test_shipped_clock_assembles(tmp_path):
    src = ASSETS / "clock" / "clock.usda"
    before = src.read_bytes()
    out = tmp_path / "clock.usda"
    result = run_cli("assemble", str(src), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert src.read_bytes() == before
    stage = Usd.Stage.Open(str(out))
    np.testing.assert_allclose(world(stage, "/Clock/Hand")[:3, 3], (0.025, 0, 1.5), rtol=0, atol=TOL)


def test_unresolved_body_exits_2_and_still_writes(shop, tmp_path):
    text = shop.read_text().replace(
        'def "Hand"', 'def Xform "Spare" (prepend apiSchemas = ["PhysicsRigidBodyAPI"]) { }\n    def "Hand"'
    )
    shop.write_text(text)
    out = tmp_path / "o.usda"
    result = run_cli("assemble", str(shop), "-o", str(out))
    assert result.returncode == 2
    assert "UNRESOLVED /Shop/Spare" in result.stdout
    assert out.is_file()


def test_bad_connector_exits_1_names_the_prim_and_writes_nothing(shop, tmp_path):
    text = shop.read_text().replace("vector3d mbd:normal = (0, 0, 1)", "vector3d mbd:normal = (0, 2, 0)")
    shop.write_text(text)
    before = shop.read_bytes()
    out = tmp_path / "o.usda"
    result = run_cli("assemble", str(shop), "-o", str(out))
    assert result.returncode == 1
    assert result.stderr.startswith("usdphys assemble: error: /Shop/Wall/hook: mbd:normal (0, 2, 0) "
                                    "is parallel to mbd:mainAxis (0, -1, 0)")
    assert "Traceback" not in result.stderr
    assert not out.exists() and list(tmp_path.glob(".o.*")) == []
    assert shop.read_bytes() == before


def test_refuses_to_overwrite_input(shop):
    before = shop.read_bytes()
    result = run_cli("assemble", str(shop), "-o", str(shop))
    assert result.returncode == 1
    assert "refusing to overwrite the input" in result.stderr
    assert shop.read_bytes() == before


def test_missing_input(tmp_path):
    result = run_cli("assemble", str(tmp_path / "nope.usda"), "-o", str(tmp_path / "o.usda"))
    assert result.returncode == 1
    assert "nope.usda: no such file" in result.stderr


def test_malformed_input_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.usda"
    bad.write_text('#usda 1.0\ndef Xform "A" {\n  nonsense\n')
    out = tmp_path / "o.usda"
    result = run_cli("assemble", str(bad), "-o", str(out))
    assert result.returncode == 1
    assert f"usdphys assemble: error: {bad}: not a readable USD file ({bad}:" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
