"""Fail well beyond YAML: missing composition targets, stages with nothing to simulate, runs
too big for memory, hostile stage files, hostile mate connectors and command-line values.

Each case ends in one error line and exit 1 (2 for a malformed argument), never a
traceback, with no output file, no temporary file and the input unchanged.
"""
from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from usdphys import cli
from usdphys import simulate as sim_module
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate
from usdphys.usd.check import check_stage
from usdphys.usd.stage import MAX_TEXT_LAYER_BYTES, composition_problems, open_stage

ASSETS = Path(__file__).resolve().parents[1] / "assets"
PENDULUM = ASSETS / "usd" / "pendulum.usda"


def run_main(argv, capsys):
    """cli.main in-process: (exit status, stdout, stderr)."""
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def error_lines(err: str) -> list[str]:
    # Warp's note that this machine has no CUDA driver is not ours
    return [line for line in err.splitlines()
            if line.strip() and not line.startswith(("warning:", "Warp CUDA warning"))]


def assert_one_line_failure(rc, err, folder: Path, expect_rc=1, before=None):
    assert rc == expect_rc, err
    lines = error_lines(err)
    assert len(lines) == 1, err
    assert "Traceback" not in err
    if before is not None:
        assert sorted(p.name for p in folder.iterdir()) == before, "output or temporary file left behind"


# ---------------------------------------------------------------------------- composition
def pendulum_with(tmp_path: Path, arc: str) -> Path:
    """The pendulum stage plus one arc naming a file that does not exist."""
    shutil.copy(PENDULUM, tmp_path / "pendulum.usda")
    text = {
        "sublayer": '#usda 1.0\n(\n    subLayers = [@./missing_sub.usda@, @./pendulum.usda@]\n)\n',
        "reference": '#usda 1.0\n(\n    subLayers = [@./pendulum.usda@]\n)\n'
                     'over "World" {\n    def Xform "extra" (references = @./missing_ref.usda@</X>) {}\n}\n',
        "payload": '#usda 1.0\n(\n    subLayers = [@./pendulum.usda@]\n)\n'
                   'over "World" {\n    def Xform "extra" (payload = @./missing_pay.usda@</X>) {}\n}\n',
        "asset": '#usda 1.0\n(\n    subLayers = [@./pendulum.usda@]\n)\n'
                 'over "World" {\n    over "link" {\n        asset texture = @./missing_tex.png@\n    }\n}\n',
    }[arc]
    path = tmp_path / f"with_{arc}.usda"
    path.write_text(text)
    return path


MISSING = {"sublayer": "missing sublayer @./missing_sub.usda@", "reference": "missing reference @./missing_ref.usda@",
           "payload": "missing payload @./missing_pay.usda@", "asset": "missing asset @./missing_tex.png@ (at /World/link.texture)"}


@pytest.mark.parametrize("arc", sorted(MISSING))
def test_missing_composition_target_is_an_error_naming_layer_and_path(tmp_path, arc, capfd):
    capsys = capfd  # USD writes its warnings to file descriptor 2, not sys.stderr
    stage_path = pendulum_with(tmp_path, arc)
    text = stage_path.read_text()
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = run_main(["simulate", stage_path, "-o", tmp_path / "out.usda", "--duration", "0.05"], capsys)
    assert_one_line_failure(rc, err, tmp_path, before=before)
    assert f"{stage_path}: {MISSING[arc]}" in err and "--allow-missing" in err
    assert "Warning: in" not in err  # USD's own composition warning is replaced by ours
    assert stage_path.read_text() == text
    with pytest.raises(UsdphysError, match="missing"):
        simulate(str(stage_path), duration=0.05)


@pytest.mark.parametrize("arc", sorted(MISSING))
def test_allow_missing_downgrades_to_one_warning(tmp_path, arc, capfd, caplog):
    stage_path = pendulum_with(tmp_path, arc)
    out_path = tmp_path / "out.usda"
    rc, out, err = run_main(["simulate", stage_path, "-o", out_path, "--duration", "0.05", "--allow-missing"], capfd)
    assert rc == 0, err
    assert out_path.is_file()
    warnings = [r.getMessage() for r in caplog.records if MISSING[arc] in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].endswith("going on without it"), caplog.text
    assert "Warning: in" not in err
    res = simulate(str(stage_path), duration=0.05, allow_missing=True)
    assert res.body_paths == ["/World/link"]


@pytest.mark.parametrize("arc", sorted(MISSING))
def test_check_reports_missing_files_as_errors(tmp_path, arc, capsys):
    stage_path = pendulum_with(tmp_path, arc)
    rc, out, err = run_main(["check", stage_path, "--no-usd-core"], capsys)
    assert rc == 1
    assert f"error: /: {stage_path}: {MISSING[arc]}" in out and "[missing-file]" in out
    findings = check_stage(open_stage(stage_path, allow_missing=True, report_missing=False), usd_core=False)
    assert [f.rule for f in findings if f.severity == "error"] == ["missing-file"]


def test_assemble_refuses_missing_sublayer_unless_allowed(tmp_path, capsys):
    stage_path = pendulum_with(tmp_path, "sublayer")
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = run_main(["assemble", stage_path, "-o", tmp_path / "asm.usda"], capsys)
    assert_one_line_failure(rc, err, tmp_path, before=before)
    assert "missing sublayer @./missing_sub.usda@" in err
    rc, out, err = run_main(["assemble", stage_path, "-o", tmp_path / "asm.usda", "--allow-missing"], capsys)
    assert rc in (0, cli.EXIT_INCOMPLETE) and (tmp_path / "asm.usda").is_file()


def test_complete_stage_has_no_composition_problems():
    assert composition_problems(open_stage(PENDULUM)) == []


def test_reference_to_a_missing_prim_is_a_composition_error(tmp_path, capsys):
    shutil.copy(PENDULUM, tmp_path / "pendulum.usda")
    stage_path = tmp_path / "ref.usda"
    stage_path.write_text('#usda 1.0\ndef Xform "W" (references = @./pendulum.usda@</NoSuchPrim>) {}\n')
    with pytest.raises(UsdphysError, match="composition error at /W"):
        open_stage(stage_path)


def test_stage_without_rigid_bodies_is_refused_and_says_why(tmp_path, capsys):
    stage_path = tmp_path / "empty_scene.usda"
    stage_path.write_text('#usda 1.0\n(\n    upAxis = "Z"\n)\ndef Xform "World" {\n    def Cube "box" {}\n}\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = run_main(["simulate", stage_path, "-o", tmp_path / "out.usda"], capsys)
    assert_one_line_failure(rc, err, tmp_path, before=before)
    assert "nothing to simulate: no rigid bodies" in err


# ---------------------------------------------------------------------------- resources
def test_run_too_big_for_memory_is_refused_with_the_figure(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sim_module, "available_memory", lambda: 10_000_000)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = run_main(["simulate", PENDULUM, "-o", tmp_path / "out.usda", "--duration", "100",
                             "--fps", "1000", "--worlds", "10"], capsys)
    assert_one_line_failure(rc, err, tmp_path, before=before)
    assert "needs about" in err and "10.0 MB is available" in err
    assert "--fps, --duration" in err and "--worlds" in err


def test_estimate_counts_poses_efforts_and_matrices():
    stage = open_stage(PENDULUM)
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(stage)
    need, rows = sim_module.memory_estimate(model, frames=99, worlds=4)
    poses = 100 * 4 * 1 * 7 * 8 * sim_module.POSE_COPIES
    assert rows == 5  # a revolute joint: 3 positions + 2 rotations
    # the factor's pattern of one joint's rows (all on one body): its whole lower triangle
    entries = rows * (rows + 1) // 2
    solver = (entries * 2 * 8 + rows * sim_module.BYTES_PER_ROW + 1 * sim_module.BYTES_PER_BODY) * 4
    assert need == poses + 100 * 4 * 1 * 8 * 2 + solver
    with pytest.raises(UsdphysError, match="fewer worlds"):
        sim_module.check_memory(model, 99, 4, available=need - 1)
    assert sim_module.check_memory(model, 99, 4, available=need) == need


@pytest.mark.parametrize("args", [["--worlds", str(10**12)], ["--duration", "1e7", "--fps", "1000"]])
def test_absurd_runs_are_refused_before_allocating(tmp_path, args, capsys):
    # real available memory: refused by the estimate (or the frame cap), never MemoryError
    rc, out, err = run_main(["simulate", PENDULUM, "-o", tmp_path / "out.usda"] + args, capsys)
    assert_one_line_failure(rc, err, tmp_path, before=[])
    assert "MemoryError" not in err


def test_available_memory_is_a_positive_number():
    avail = sim_module.available_memory()
    assert avail is None or avail > 0


# ---------------------------------------------------------------------------- hostile stage files
def _deep(path: Path, n=20000):
    with open(path, "w") as fh:
        fh.write("#usda 1.0\n")
        fh.write("".join(f'def "a{i}" {{\n' for i in range(n)))
        fh.write("}\n" * n)


def _deep_value(path: Path, n=5000):
    path.write_text('#usda 1.0\ndef "A" {\n    double[] x = ' + "[" * n + "]" * n + "\n}\n")


HOSTILE = {
    "empty": lambda p: p.write_bytes(b""),
    "binary-garbage": lambda p: p.write_bytes(bytes((i * 7919 + 13) % 256 for i in range(4096))),
    "yaml-named-usda": lambda p: p.write_text("system:\n  name: x\n  bodies: [1, 2]\n"),
    "truncated": lambda p: p.write_text(PENDULUM.read_text()[:400]),
    "nul-bytes": lambda p: p.write_bytes(b"#usda 1.0\n" + b"\0" * 10000),
    "deep-prims": _deep,
    "deep-value": _deep_value,
    "usdc-magic-then-garbage": lambda p: p.write_bytes(b"PXR-USDC" + b"\xff" * 4000),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["check", "simulate"])
def test_hostile_stage_file_is_one_line(tmp_path, kind, command, capsys):
    path = tmp_path / "in.usda"
    HOSTILE[kind](path)
    data = path.read_bytes()
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = [command, path] + (["-o", tmp_path / "out.usda", "--duration", "0.05"] if command == "simulate" else [])
    rc, out, err = run_main(argv, capsys)
    assert rc == 1, err
    assert "Traceback" not in err and len(error_lines(err)) <= 1 and len(err) < 1000, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert path.read_bytes() == data


def test_folder_and_unreadable_file_are_one_line(tmp_path, capsys):
    folder = tmp_path / "stage.usda"
    folder.mkdir()
    rc, out, err = run_main(["check", folder], capsys)
    assert_one_line_failure(rc, err, tmp_path)
    assert "is a folder" in err
    unreadable = tmp_path / "secret.usda"
    shutil.copy(PENDULUM, unreadable)
    unreadable.chmod(0)
    try:
        if os.access(unreadable, os.R_OK):
            pytest.skip("running as a user who reads any file (root)")
        rc, out, err = run_main(["simulate", unreadable, "-o", tmp_path / "o.usda"], capsys)
        assert_one_line_failure(rc, err, tmp_path)
        assert "not readable" in err
    finally:
        unreadable.chmod(0o644)


def test_huge_text_layer_is_refused_unread(tmp_path, capsys):
    path = tmp_path / "huge.usda"
    with open(path, "wb") as fh:
        fh.write(b"#usda 1.0\n")
        fh.truncate(MAX_TEXT_LAYER_BYTES + 1)  # sparse: costs no disk
    import time

    t0 = time.perf_counter()
    rc, out, err = run_main(["check", path], capsys)
    assert time.perf_counter() - t0 < 5
    assert_one_line_failure(rc, err, tmp_path)
    assert "text layer too large" in err and "usdc" in err


# ---------------------------------------------------------------------------- hostile mate connectors
def connector_stage(path: Path, main_axis=(0, 0, 1), normal=(1, 0, 0), position=(0, 0, 0), target="/W/A/base"):
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(stage, "/W")
    anchor = stage.DefinePrim("/W/anchor", "MbdMateConnector")
    anchor.GetAttribute("mbd:position").Set(Gf.Vec3d(1, 2, 3))
    anchor.GetAttribute("mbd:mainAxis").Set(Gf.Vec3d(0, 0, 1))
    xf = UsdGeom.Xform.Define(stage, "/W/A")
    UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
    UsdPhysics.MassAPI.Apply(xf.GetPrim()).CreateMassAttr(1.0)
    base = stage.DefinePrim("/W/A/base", "MbdMateConnector")
    base.GetAttribute("mbd:position").Set(Gf.Vec3d(*position))
    base.GetAttribute("mbd:mainAxis").Set(Gf.Vec3d(*main_axis))
    base.GetAttribute("mbd:normal").Set(Gf.Vec3d(*normal))
    joint = UsdPhysics.FixedJoint.Define(stage, "/W/mate")
    joint.GetPrim().ApplyAPI("MbdMateAPI")
    joint.GetPrim().CreateRelationship("mbd:connector0").SetTargets(["/W/anchor"])
    joint.GetPrim().CreateRelationship("mbd:connector1").SetTargets([target])
    joint.CreateBody1Rel().SetTargets(["/W/A"])
    stage.Save()
    return path


BAD_CONNECTORS = {
    "nan-axis": dict(main_axis=(math.nan, 0, 1)),
    "inf-axis": dict(main_axis=(0, math.inf, 1)),
    "zero-axis": dict(main_axis=(0, 0, 0)),
    "tiny-axis": dict(main_axis=(0, 0, 1e-320)),
    "nan-normal": dict(normal=(math.nan, 0, 0)),
    "inf-position": dict(position=(math.inf, 0, 0)),
    "nan-position": dict(position=(0, math.nan, 0)),
    "huge-position": dict(position=(1e308, -1e308, 0)),
    "dangling-target": dict(target="/W/nowhere"),
    "target-is-a-body": dict(target="/W/A"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONNECTORS))
@pytest.mark.parametrize("command", ["assemble", "simulate"])
def test_bad_mate_connector_is_one_line_naming_the_prim(tmp_path, case, command, capsys):
    path = connector_stage(tmp_path / "mates.usda", **BAD_CONNECTORS[case])
    data = path.read_bytes()
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = [command, path, "-o", tmp_path / "out.usda"] + (["--duration", "0.05"] if command == "simulate" else [])
    rc, out, err = run_main(argv, capsys)
    assert rc == 1, (out, err)
    assert_one_line_failure(rc, err, tmp_path, before=before)
    assert "/W/" in err, err  # names the connector, the mate or the body
    assert path.read_bytes() == data


# ---------------------------------------------------------------------------- command-line values
BAD_ARGS = [
    (["--duration", "-1"], 1, "duration"), (["--duration", "0"], 1, "duration"),
    (["--duration", "nan"], 1, "duration"), (["--duration", "inf"], 1, "duration"),
    (["--duration", "1e308"], 1, "duration"), (["--dt", "-0.001"], 1, "dt"), (["--dt", "nan"], 1, "dt"),
    (["--dt", "1e-300"], 1, "dt"), (["--fps", "0"], 1, "fps"), (["--fps", "inf"], 1, "fps"),
    (["--fps", "1e308"], 1, "frames"), (["--worlds", "0"], 1, "worlds"), (["--worlds", "-3"], 1, "worlds"),
    (["--worlds", "nan"], 2, "--worlds"), (["--worlds", "1.5"], 2, "--worlds"), (["--duration", "abc"], 2, "--duration"),
    (["--device", "tpu"], 1, "--device tpu"), (["--device", "cuda:99"], 1, "cuda:99"),
]


@pytest.mark.parametrize("args,expect_rc,named", BAD_ARGS, ids=[" ".join(a) for a, _, _ in BAD_ARGS])
def test_bad_simulate_argument_is_one_line(tmp_path, args, expect_rc, named, capsys):
    rc, out, err = run_main(["simulate", PENDULUM, "-o", tmp_path / "out.usda"] + args, capsys)
    assert_one_line_failure(rc, err, tmp_path, expect_rc=expect_rc, before=[])
    assert named in err


def test_bad_usdphys_device_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("USDPHYS_DEVICE", "gpu")
    rc, out, err = run_main(["simulate", PENDULUM, "-o", tmp_path / "out.usda", "--duration", "0.01"], capsys)
    assert_one_line_failure(rc, err, tmp_path, expect_rc=1, before=[])
    assert "USDPHYS_DEVICE=gpu: expected cpu, cuda or cuda:N" in err


# ---------------------------------------------------------------------------- fuzz findings
def _pendulum_edit(tmp_path: Path, old: str, new: str) -> Path:
    text = PENDULUM.read_text()
    assert old in text
    path = tmp_path / "edited.usda"
    path.write_text(text.replace(old, new))
    return path


FUZZ_FINDINGS = {
    # a NaN / inf transform made the polar decomposition raise LinAlgError (SVD did not converge)
    "nan-translate": (("double3 xformOp:translate = (0.24999999999999994", "double3 xformOp:translate = (nan"),
                      "/World/link.xformOp:translate"),
    "inf-orient": (("quatd xformOp:orient = (0.8660254037844386", "quatd xformOp:orient = (inf"),
                   "/World/link.xformOp:orient"),
    # 1e308 in a float attribute overflows to inf: the model raised a bare ValueError
    "overflowing-principal-axes": (("float physics:mass = 1", "float physics:mass = 1\n        quatf physics:principalAxes = (1e308, 0, 0, 0)"),
                                   "/World/link: physics:principalAxes"),
    # metersPerUnit = -1e308 overflowed (OverflowError) in the unit conversions
    "huge-meters-per-unit": (("metersPerUnit = 1", "metersPerUnit = -1e308"), "metersPerUnit"),
    "zero-kilograms-per-unit": (("kilogramsPerUnit = 1", "kilogramsPerUnit = 0"), "kilogramsPerUnit"),
    # an infinite joint frame reached the solver: NumPy warnings, then "simulation blew up"
    "inf-joint-local-pos": (("point3f physics:localPos1 = (-0.5, 0, 0)", "point3f physics:localPos1 = (inf, 0, 0)"),
                            "/World/pivot: physics:localPos1"),
    "nan-joint-local-rot": (("point3f physics:localPos0 = (0, 0, 0)",
                             "point3f physics:localPos0 = (0, 0, 0)\n        quatf physics:localRot0 = (nan, 0, 0, 1)"),
                            "/World/pivot: physics:localRot0"),
}


@pytest.mark.parametrize("case", sorted(FUZZ_FINDINGS))
def test_fuzz_findings_are_one_line_naming_prim_and_attribute(tmp_path, case, capsys):
    (old, new), named = FUZZ_FINDINGS[case]
    path = _pendulum_edit(tmp_path, old, new)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    rc, out, err = run_main(["simulate", path, "-o", out_dir / "r.usda", "--duration", "0.05"], capsys)
    assert_one_line_failure(rc, err, out_dir, before=[])
    assert named in err, err


def test_nan_transform_in_a_mate_stage_names_the_op(tmp_path, capsys):
    path = connector_stage(tmp_path / "mates.usda")
    stage = Usd.Stage.Open(str(path))
    UsdGeom.Xformable(stage.GetPrimAtPath("/W/A")).AddTranslateOp().Set(Gf.Vec3d(math.nan, 0, 0))
    stage.Save()
    rc, out, err = run_main(["assemble", path, "-o", tmp_path / "out.usda"], capsys)
    assert_one_line_failure(rc, err, tmp_path)
    assert "/W/A.xformOp:translate" in err
