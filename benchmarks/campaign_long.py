"""Long robustness campaign: the `slow` hypothesis properties of tests/solver/test_robustness.py with many
examples (random seeds, shrinking on), then a summary of every failing example found.

    python benchmarks/campaign_long.py [--examples 300] [-k PATTERN] [--timeout 3600] [--seed N]

The seed (printed; random unless given) makes a campaign repeatable: the same seed draws the same
examples from the same code.

Each failing example is appended to a log (ROBUST_LOG) as it is found, so the summary survives a
timeout; the minimal (shrunk) examples are in pytest's output, also saved next to the log.
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=300)
    ap.add_argument("-k", default="long")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: a random one, printed)")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    out = Path(tempfile.mkdtemp(prefix="usdphys-campaign-"))
    log = out / "failures.log"
    env = dict(os.environ, ROBUST_LOG=str(log), ROBUST_LONG_EXAMPLES=str(a.examples))
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "slow", "-k", a.k, "-p", "no:cacheprovider",
           "-W", "ignore::DeprecationWarning", f"--hypothesis-seed={seed}", "tests/solver/test_robustness.py"]
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=a.timeout)
        text = r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += f"\n(campaign stopped after {a.timeout} s)\n"
    (out / "pytest.txt").write_text(text)
    counts = collections.Counter()
    if log.exists():
        for line in log.read_text().splitlines():
            if line.startswith("=== "):
                counts[line[4:].split(" (")[0][:120]] += 1
    print(f"examples per property: {a.examples}; seed {seed}; output in {out}")
    for line in text.splitlines():
        if line.startswith(("FAILED", "PASSED")) or " passed" in line or " failed" in line:
            print(line)
    print("\nfailing checks (including shrink steps):")
    for k, n in counts.most_common():
        print(f"{n:6d}  {k}")


if __name__ == "__main__":
    main()
