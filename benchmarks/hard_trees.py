"""Which runs of the hard thin-rod trees stop: the named trees of tests/solver/test_robustness.py
(thin rods passing near singular poses), each run at several step sizes, with and without
`max_turn`, printed as one table.

    python benchmarks/hard_trees.py [--duration 3] [--dt 1e-3 0.95e-3 0.8e-3 0.5e-3] [--max-turn 0.1]

Through these passages nearby runs separate (docs/solver.md, "Globalised iteration"), so one run
that stops or does not says little about a change to the step; how many of the table's runs stop
does. A step size is cut to a whole number of steps a 10 ms frame (0.95 ms -> 0.91 ms, 0.8 -> 0.77).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "solver"))

TREES = ("CARDAN_THIN_ROD_RETRIED_SMALLER", "THIN_ROD_ON_BALL_JOINT", "THIN_ROD_THROUGH_CARDAN_LOCK",
         "THIN_ROD_ON_ITS_LIMIT_LOCKED_TO_A_LINK", "HEAVY_THIN_ROD_SPINNING_UNDER_A_TILTED_HINGE")


def run_one(text: str, duration: float, dt: float, max_turn):
    """'ok (N retried)' or 'stop at T s'."""
    from pxr import Usd

    from usdphys.errors import UsdphysError
    from usdphys.simulate import simulate

    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString(text)
    try:
        r = simulate(stage, duration=duration, dt=dt, fps=100, max_turn=max_turn)
    except UsdphysError as exc:
        msg = str(exc)
        at = msg.find("t = ")
        return "stop at " + (msg[at + 4:msg.index(" s", at)] + " s" if at >= 0 else msg[:60])
    return f"ok ({int(r.reduced_steps[0])} retried)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--dt", type=float, nargs="+", default=[1e-3, 0.95e-3, 0.8e-3, 0.5e-3])
    ap.add_argument("--max-turn", type=float, default=0.1)
    a = ap.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    import robustness_helpers as H
    import test_robustness as T

    import usdphys.usd  # noqa: F401  (the schema plugin)

    t0 = time.time()
    stops = {None: 0, a.max_turn: 0}
    print(f"{'tree':46s} {'dt ms':>6s}  {'off':22s}  max_turn {a.max_turn}")
    for name in TREES:
        text = H.tree_usda(getattr(T, name))
        for dt in a.dt:
            cells = []
            for turn in (None, a.max_turn):
                cell = run_one(text, a.duration, dt, turn)
                stops[turn] += cell.startswith("stop")
                cells.append(cell)
            h = 10.0 / math.ceil(10e-3 / dt - 1e-9)  # ms: the step simulate() takes (whole steps a frame)
            print(f"{name:46s} {h:6.3f}  {cells[0]:22s}  {cells[1]}", flush=True)
    n = len(TREES) * len(a.dt)
    print(f"stops: {stops[None]} of {n} off, {stops[a.max_turn]} of {n} with max_turn {a.max_turn} "
          f"({a.duration:g} s each; {time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
