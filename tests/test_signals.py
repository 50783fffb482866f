"""SIGINT (Ctrl-C) and SIGTERM during `usdphys simulate`: exit 130 / 143, one line on stderr,
no output file and no temporary file left in the output's folder.

The CLI runs in a subprocess; a small wrapper marks the moment the simulation loop starts
(a sentinel file, written on the first progress callback) so that the signal arrives during
the run, not while Python is still importing.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PENDULUM = Path(__file__).resolve().parents[1] / "assets" / "usd" / "pendulum.usda"

WRAPPER = """
import sys
from pathlib import Path
import usdphys.simulate as s

sentinel = Path(sys.argv[1])
original = s._Progress.__call__

def call(self, done, total):
    if not sentinel.exists():
        sentinel.write_text("running")
    return original(self, done, total)

s._Progress.__call__ = call
from usdphys.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signum,expect_rc,word", [(signal.SIGINT, 130, "interrupted"),
                                                    (signal.SIGTERM, 143, "terminated")])
def test_signal_during_simulate_leaves_nothing(tmp_path, signum, expect_rc, word):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "result.usda"
    sentinel = tmp_path / "started"
    cmd = [sys.executable, "-c", WRAPPER, str(sentinel), "simulate", str(PENDULUM), "-o", str(out),
           "--duration", "10000", "--fps", "30"]
    # the child gets SIGINT's default action whatever the test runner's: a runner started as a
    # background job has SIGINT ignored, which a child inherits (and Python then keeps ignoring)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not sentinel.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the simulation never started"
            time.sleep(0.05)
        time.sleep(0.3)  # well inside the loop
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == expect_rc, stderr
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("Warp CUDA warning")]
    assert lines == [f"usdphys simulate: {word}"], stderr
    assert "Traceback" not in stderr
    assert list(out_dir.iterdir()) == []  # no output, no temporary file
