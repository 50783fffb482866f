"""`usdphys simulate` and the Python API: defaults, exit codes, no output on failure."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usdphys.cli import main
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "usd"


@pytest.fixture()
def fourbar(tmp_path):
    dst = tmp_path / "fourbar.usda"
    shutil.copy(ASSETS / "fourbar.usda", dst)
    return dst


def test_cli_writes_result_with_stage_defaults(fourbar, tmp_path, capsys):
    out = tmp_path / "fourbar_result.usda"
    assert main(["simulate", str(fourbar), "-o", str(out)]) == 0
    layer = Sdf.Layer.FindOrOpen(str(out))
    # mbd:endTime = 2 s on the PhysicsScene, default 60 fps -> frames 0..120
    assert layer.endTimeCode == 120 and layer.timeCodesPerSecond == 60
    assert "3 bodies, 121 frames" in capsys.readouterr().out


def test_cli_options_override_defaults(fourbar, tmp_path):
    out = tmp_path / "r.usdc"
    assert main(["simulate", str(fourbar), "-o", str(out), "--duration", "0.5", "--fps", "10",
                 "--dt", "0.002", "--device", "cpu", "--worlds", "2"]) == 0
    layer = Sdf.Layer.FindOrOpen(str(out))
    assert layer.endTimeCode == 5 and layer.framesPerSecond == 10


def test_cli_missing_input_is_exit_1(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "nope.usda"), "-o", str(tmp_path / "o.usda")]) == 1
    err = capsys.readouterr().err
    assert "nope.usda: no such file" in err and "Traceback" not in err


def test_cli_refuses_to_overwrite_input(fourbar, capsys):
    before = fourbar.read_bytes()
    assert main(["simulate", str(fourbar), "-o", str(fourbar)]) == 1
    assert fourbar.read_bytes() == before


def test_blow_up_exits_1_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "rocket.usda"
    stage = Usd.Stage.CreateNew(str(src))
    UsdPhysics.Scene.Define(stage, "/scene")
    b = UsdGeom.Xform.Define(stage, "/rocket").GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(b)
    UsdPhysics.RigidBodyAPI(b).CreateVelocityAttr(Gf.Vec3f(0, 0, 1e6))  # 10 km/s in cm units
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.GetRootLayer().Save()
    out = tmp_path / "rocket_result.usda"
    assert main(["simulate", str(src), "-o", str(out), "--duration", "0.1"]) == 1
    err = capsys.readouterr().err
    assert "blew up at t = " in err and "/rocket" in err
    assert not out.exists() and not list(tmp_path.glob(".rocket_result*"))


def test_cli_tolerance_holds_the_joints_to_it(fourbar, tmp_path, capsys):
    # the four-bar's redundant loop at 1e-14 instead of the default 1e-12: the run says so
    out = tmp_path / "tight.usda"
    assert main(["simulate", str(fourbar), "-o", str(out), "--duration", "0.5", "--tol", "1e-14"]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("largest joint residual")][0]
    assert float(line.split()[3]) <= 1e-14


@pytest.mark.parametrize("bad", [["--dt", "0"], ["--fps", "-1"], ["--duration", "nan"], ["--worlds", "0"],
                                 ["--tol", "0"], ["--tol", "1e-16"], ["--tol", "nan"]])
def test_cli_bad_numbers(fourbar, tmp_path, bad, capsys):
    assert main(["simulate", str(fourbar), "-o", str(tmp_path / "o.usda"), *bad]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_python_api_shapes_and_time_axis(fourbar):
    res = simulate(str(fourbar), duration=0.1, fps=50, worlds=3)
    assert res.times.shape == (6,) and res.times[-1] == pytest.approx(0.1)
    assert res.positions.shape == (6, 3, 3, 3) and res.orientations.shape == (6, 3, 3, 4)
    np.testing.assert_allclose(np.linalg.norm(res.orientations, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(res.positions[:, 0], res.positions[:, 2])  # identical worlds
    assert res.dt == pytest.approx(1e-3)  # mbd:timeStep divides 1/50 s exactly
    with pytest.raises(UsdphysError, match="world 7 out of range"):
        res.write(fourbar.parent / "x.usda", world=7)
