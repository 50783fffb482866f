"""Stage I/O: opening an input, a new layer over it, its stage metadata, safe atomic output.

Every command reads and writes through here, so they all fail the same way on bad input
(one line naming the file and the reason) and never leave half-written or private-mode
output behind.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pxr import Sdf, Tf, Usd

from usdphys.errors import UsdphysError

USD_EXTENSIONS = (".usda", ".usdc", ".usd")

# Stage metadata USD takes from the root layer only, so a layer over an input must repeat
# it. The time metadata matters too: a sublayer whose timeCodesPerSecond differs from the
# root's is retimed by USD.
STAGE_METADATA = (
    "upAxis",
    "metersPerUnit",
    "kilogramsPerUnit",
    "defaultPrim",
    "timeCodesPerSecond",
    "framesPerSecond",
    "startTimeCode",
    "endTimeCode",
)


def tf_message(exc: BaseException) -> str:
    """The human part of USD's first error: what follows "in file ... : "."""
    text = " ".join(str(exc).split())
    blocks = [b for b in text.split("Error in ") if b.strip()]
    first = blocks[0].strip() if blocks else text
    head, sep, tail = first.partition(" : ")
    return (tail if sep else first).strip().strip("'").strip() or type(exc).__name__


def open_stage(path: str | os.PathLike) -> Usd.Stage:
    """Open a USD file for reading, or raise a one-line UsdphysError that says why not."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise UsdphysError(f"{p}: no such file")
    if os.path.isdir(p):
        raise UsdphysError(f"{p}: is a folder, expected a USD file")
    if not os.access(p, os.R_OK):
        raise UsdphysError(f"{p}: file is not readable")
    # The layer first: a syntax error then reads as one, not as a composition failure.
    try:
        layer = Sdf.Layer.FindOrOpen(p)
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{p}: not a readable USD file ({tf_message(exc)}); cannot open as a USD stage") from None
    if layer is None:
        raise UsdphysError(f"{p}: not a readable USD file; cannot open as a USD stage")
    try:
        stage = Usd.Stage.Open(layer)
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{p}: cannot open as a USD stage ({tf_message(exc)})") from None
    if stage is None:
        raise UsdphysError(f"{p}: cannot open as a USD stage")
    return stage


def sublayer_path(input_path: str | os.PathLike, output_path: str | os.PathLike) -> str:
    """How a layer written at output_path names input_path: relative to the output's folder
    ("./" anchored so USD never searches for it), absolute only across drives."""
    inp = Path(input_path).resolve()
    try:
        rel = os.path.relpath(inp, Path(output_path).resolve().parent)
    except ValueError:  # another drive
        return inp.as_posix()
    rel = Path(rel).as_posix()
    return rel if rel.startswith(".") else "./" + rel


def new_layer_over(input_path: str | os.PathLike, output_path: str | os.PathLike,
                   tag: str = ".usda") -> Sdf.Layer:
    """A new anonymous layer whose one sublayer is the input, named relative to output_path."""
    layer = Sdf.Layer.CreateAnonymous(tag)
    layer.subLayerPaths = [sublayer_path(input_path, output_path)]
    return layer


def copy_stage_metadata(src: Sdf.Layer, dst: Sdf.Layer, keys=STAGE_METADATA) -> None:
    """Repeat src's authored stage metadata (of keys) on dst; unauthored keys stay unauthored."""
    for key in keys:
        if src.pseudoRoot.HasInfo(key):
            dst.pseudoRoot.SetInfo(key, src.pseudoRoot.GetInfo(key))


def check_output_path(output: str | os.PathLike, *inputs: str | os.PathLike) -> Path:
    """Validate an output path: USD extension, existing folder, not one of the inputs."""
    out = Path(output)
    if out.suffix.lower() not in USD_EXTENSIONS:
        raise UsdphysError(f"{out}: output must end in {', '.join(USD_EXTENSIONS)}")
    if not out.parent.resolve().is_dir():
        raise UsdphysError(f"{out}: folder {out.parent} does not exist")
    for inp in inputs:
        if inp is not None and Path(inp).exists() and out.resolve() == Path(inp).resolve():
            raise UsdphysError(f"{out}: refusing to overwrite the input file; choose another output")
    return out


def _umask() -> int:
    # /proc reads it without changing it (os.umask can only be read by setting it, which
    # races with other threads creating files).
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _atomic(path: Path, write) -> None:
    """Write through a temp file in the output's folder, then rename over path.

    The result gets the mode any tool would give a new file (0o666 minus the umask), not
    mkstemp's private 0600. Any failure leaves neither a partial output nor the temp file.
    """
    path = Path(path)
    # Short temp name: an output name near the file-name limit must not fail only because
    # of the temp file's extra characters.
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:64]}.", suffix=path.suffix, dir=path.parent)
    except OSError as exc:
        raise UsdphysError(f"{path}: cannot write: {_os_reason(exc)}") from None
    try:
        os.close(fd)
        try:
            ok = write(tmp)
        except Tf.ErrorException as exc:
            raise UsdphysError(f"{path}: USD could not write the file ({tf_message(exc)})") from None
        if not ok:
            raise UsdphysError(f"{path}: USD could not write the file")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        raise UsdphysError(f"{path}: cannot write: {_os_reason(exc)}") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:  # renamed into place already, or its folder is gone
            pass


def export_layer_atomic(layer: Sdf.Layer, path: str | os.PathLike) -> None:
    """Write an Sdf layer to path via a temp file + rename (no half-written output)."""
    _atomic(Path(path), lambda tmp: layer.Export(tmp))


def export_stage_atomic(stage: Usd.Stage, path: str | os.PathLike) -> None:
    """Write a stage's root layer to path atomically."""
    _atomic(Path(path), lambda tmp: stage.GetRootLayer().Export(tmp))
