"""Initialise Warp once, quietly.

Warp's native library prints "Could not find or load the NVIDIA CUDA driver" to the
process's stderr on every machine without a GPU (CI, most laptops). That line is not news
to a CPU user, so it is filtered out; anything else Warp prints during init is passed on.
"""
from __future__ import annotations

import os
import sys
import tempfile

import warp as wp

_NOISE = "Could not find or load the NVIDIA CUDA driver"
_done = False


def init_warp() -> None:
    global _done
    if _done:
        return
    wp.config.quiet = True
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced (e.g. captured): plain init
        wp.init()
        _done = True
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), fd)
        try:
            wp.init()
        finally:
            os.dup2(saved, fd)
            os.close(saved)
        capture.seek(0)
        for line in capture.read().decode(errors="replace").splitlines():
            if _NOISE not in line:
                print(line, file=sys.stderr)
    _done = True


def cuda_device_count() -> int:
    """CUDA devices Warp can use here (0 on a machine without a driver), asked quietly."""
    init_warp()
    return wp.get_cuda_device_count()


def device_name_problem(name: str) -> str | None:
    """Why `name` is not a device a run can take here ("expected cpu, cuda or cuda:N", or no CUDA
    device on this machine), asked before Warp touches CUDA, which on a machine without a driver
    prints lines of its own; None when it is one (a CUDA index Warp lacks is Warp's to refuse)."""
    if name != "cpu" and name != "cuda" and not (name.startswith("cuda:") and name[5:].isdigit()):
        return "expected cpu, cuda or cuda:N"
    if name != "cpu" and cuda_device_count() == 0:
        return "no CUDA device on this machine"
    return None
