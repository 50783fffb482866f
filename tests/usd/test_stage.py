"""Stage I/O shared by every command: opening, a new layer over an input, and atomic export
(the mode a new file gets, and what an I/O failure at each step leaves behind)."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Sdf

from usdphys.cli import main
from usdphys.errors import UsdphysError
from usdphys.usd import stage as stage_io
from usdphys.usd.stage import (
    copy_stage_metadata,
    export_layer_atomic,
    export_stage_atomic,
    new_layer_over,
    open_stage,
)

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CLOCK = ASSETS / "snap" / "clock" / "clock.usda"
SLIDER_CRANK = ASSETS / "chrono" / "slider_crank" / "mbs.yaml"


@pytest.fixture()
def umask():
    """Set the process umask for one test and put the old one back."""
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def small_layer() -> Sdf.Layer:
    layer = Sdf.Layer.CreateAnonymous(".usda")
    Sdf.CreatePrimInLayer(layer, "/World").specifier = Sdf.SpecifierDef
    return layer


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_one_line_naming(exc: pytest.ExceptionInfo, out: Path, code: int) -> None:
    msg = str(exc.value)
    assert "\n" not in msg
    assert str(out) in msg and os.strerror(code) in msg


# ---------------------------------------------------------------------------- mode
@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_output_mode_follows_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    out = tmp_path / "result.usda"
    export_layer_atomic(small_layer(), out)
    assert mode(out) == expected


def test_replacing_an_output_gives_it_the_umask_mode_too(tmp_path, umask):
    umask(0o022)
    out = tmp_path / "result.usdc"
    out.write_bytes(b"old")
    out.chmod(0o600)
    export_layer_atomic(small_layer(), out)
    assert mode(out) == 0o644 and Sdf.Layer.FindOrOpen(str(out)).GetPrimAtPath("/World")


def test_cli_result_is_0644_under_umask_022(tmp_path, umask, capsys):
    umask(0o022)
    out = tmp_path / "assembled.usda"
    assert main(["assemble", str(CLOCK), "-o", str(out), "-q"]) == 0
    assert mode(out) == 0o644


# ---------------------------------------------------------------------------- faults
class _FailingExport:
    """A layer whose Export writes half a file, then fails like a full disk."""

    def Export(self, path):  # noqa: N802  (Sdf.Layer's name)
        Path(path).write_text("#usda 1.0\n(half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def _enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_disk_full_while_writing_leaves_nothing(tmp_path):
    out = tmp_path / "result.usda"
    with pytest.raises(UsdphysError) as exc:
        export_layer_atomic(_FailingExport(), out)
    assert_one_line_naming(exc, out, errno.ENOSPC)
    assert os.listdir(tmp_path) == []


def test_usd_refusing_to_write_leaves_nothing(tmp_path):
    class Refuses:
        def Export(self, path):  # noqa: N802
            return False

    out = tmp_path / "result.usda"
    with pytest.raises(UsdphysError, match="USD could not write the file"):
        export_layer_atomic(Refuses(), out)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("step", ["replace", "chmod"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_failure_at_rename_or_chmod_keeps_the_old_output(tmp_path, monkeypatch, step, code):
    out = tmp_path / "result.usda"
    out.write_text("previous result")

    def fail(*_args, **_kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(stage_io.os, step, fail)
    with pytest.raises(UsdphysError) as exc:
        export_layer_atomic(small_layer(), out)
    assert_one_line_naming(exc, out, code)
    assert os.listdir(tmp_path) == ["result.usda"] and out.read_text() == "previous result"


def test_no_temp_file_possible_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "mkstemp", lambda *a, **k: _raise(errno.EACCES))
    out = tmp_path / "result.usda"
    with pytest.raises(UsdphysError) as exc:
        export_stage_atomic(None, out)
    assert_one_line_naming(exc, out, errno.EACCES)
    assert os.listdir(tmp_path) == []


def _raise(code):
    raise OSError(code, os.strerror(code))


def test_output_folder_removed_before_writing(tmp_path):
    out = tmp_path / "gone" / "result.usda"
    with pytest.raises(UsdphysError) as exc:
        export_layer_atomic(small_layer(), out)
    assert_one_line_naming(exc, out, errno.ENOENT)
    assert os.listdir(tmp_path) == []


def test_output_name_too_long(tmp_path):
    out = tmp_path / ("r" * 300 + ".usda")
    with pytest.raises(UsdphysError) as exc:
        export_layer_atomic(small_layer(), out)
    assert_one_line_naming(exc, out, errno.ENAMETOOLONG)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("command", ["assemble", "convert"])
def test_cli_disk_full_is_exit_1_one_line_no_traceback(tmp_path, monkeypatch, capsys, command):
    monkeypatch.setattr(stage_io.os, "replace", _enospc)
    out = tmp_path / "out.usda"
    if command == "assemble":
        argv = ["assemble", str(CLOCK), "-o", str(out)]
    else:
        argv = ["convert", str(SLIDER_CRANK), "-o", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"usdphys {command}: error: {out}: cannot write: {os.strerror(errno.ENOSPC)}"
    assert "Traceback" not in err and not out.exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith(".")] == []


# ---------------------------------------------------------------------------- opening, layers over inputs
def test_open_stage_says_why_in_one_line(tmp_path):
    with pytest.raises(UsdphysError, match="nope.usda: no such file"):
        open_stage(tmp_path / "nope.usda")
    with pytest.raises(UsdphysError, match="is a folder"):
        open_stage(tmp_path)
    bad = tmp_path / "bad.usda"
    bad.write_text('#usda 1.0\ndef Xform "A" {\n  nonsense\n')
    with pytest.raises(UsdphysError) as exc:
        open_stage(bad)
    msg = str(exc.value)
    assert msg.startswith(f"{bad}: not a readable USD file ({bad}:") and "\n" not in msg


def test_layer_over_names_the_input_relative_to_the_output(tmp_path):
    src = tmp_path / "in" / "robot.usda"
    assert list(new_layer_over(src, tmp_path / "out" / "r.usda").subLayerPaths) == ["../in/robot.usda"]
    assert list(new_layer_over(src, tmp_path / "in" / "r.usda").subLayerPaths) == ["./robot.usda"]


def test_stage_metadata_copies_only_what_is_authored():
    src = Sdf.Layer.CreateAnonymous(".usda")
    src.pseudoRoot.SetInfo("upAxis", "Z")
    src.pseudoRoot.SetInfo("timeCodesPerSecond", 30.0)
    src.defaultPrim = "World"
    dst = Sdf.Layer.CreateAnonymous(".usda")
    copy_stage_metadata(src, dst)
    assert dst.pseudoRoot.GetInfo("upAxis") == "Z" and dst.timeCodesPerSecond == 30 and dst.defaultPrim == "World"
    assert not dst.pseudoRoot.HasInfo("metersPerUnit") and not dst.pseudoRoot.HasInfo("framesPerSecond")
