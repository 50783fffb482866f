"""Safe file output: atomic writes and never overwriting the input."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pxr import Sdf, Usd

from usdphys.errors import UsdphysError

USD_EXTENSIONS = (".usda", ".usdc", ".usd")


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


def _atomic(path: Path, write) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        if not write(tmp):
            raise UsdphysError(f"{path}: USD could not write the file")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export_layer_atomic(layer: Sdf.Layer, path: str | os.PathLike) -> None:
    """Write an Sdf layer to path via a temp file + rename (no half-written output)."""
    _atomic(Path(path), lambda tmp: layer.Export(tmp))


def export_stage_atomic(stage: Usd.Stage, path: str | os.PathLike) -> None:
    """Write a stage's root layer to path atomically."""
    _atomic(Path(path), lambda tmp: stage.GetRootLayer().Export(tmp))
