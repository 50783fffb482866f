"""Output files, USD or not: validate an output path, write a file atomically.

Pure Python (no pxr, no Warp), so the table writer and the plotter use the same rules as the
USD exports in usdphys/usd/stage.py: a known extension, an existing folder, never the input,
and a temp file in the output's folder renamed over it (no half-written output ever), with the
mode any tool would give a new file.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from usdphys.errors import UsdphysError


def check_output_path(output: str | os.PathLike, *inputs: str | os.PathLike, extensions) -> Path:
    """Validate an output path: extension, existing folder, not one of the inputs."""
    out = Path(output)
    if out.suffix.lower() not in extensions:
        raise UsdphysError(f"{out}: output must end in {', '.join(extensions)}")
    if not out.parent.resolve().is_dir():
        raise UsdphysError(f"{out}: folder {out.parent} does not exist")
    for inp in inputs:
        if inp is not None and Path(inp).exists() and out.resolve() == Path(inp).resolve():
            raise UsdphysError(f"{out}: refusing to overwrite the input file; choose another output")
    return out


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def umask() -> int:
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


def write_atomic(path: str | os.PathLike, write) -> Path:
    """Write through a temp file in the output's folder, then rename over path.

    write(tmp_path) writes the file; returning False (a USD export that failed) is an error.
    The result gets the mode any tool would give a new file (0o666 minus the umask), not
    mkstemp's private 0600. Any failure leaves neither a partial output nor the temp file.
    """
    path = Path(path)
    # Short temp name: an output name near the file-name limit must not fail only because
    # of the temp file's extra characters.
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:64]}.", suffix=path.suffix, dir=path.parent)
    except OSError as exc:
        raise UsdphysError(f"{path}: cannot write: {os_reason(exc)}") from None
    try:
        os.close(fd)
        if write(tmp) is False:
            raise UsdphysError(f"{path}: could not write the file")
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except OSError as exc:
        raise UsdphysError(f"{path}: cannot write: {os_reason(exc)}") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:  # renamed into place already, or its folder is gone
            pass
    return path
