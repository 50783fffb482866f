"""Host cost of per-world row parameters: worlds that each set their own joint limits.

    python benchmarks/bench_parameters.py [--n 30 300] [--worlds 16 256 4096]

A hanging chain of N rods (chain.py) with every hinge limited to +-(1.5 + a per-world offset) rad,
replicated W times, each world its own limits. Side by side, in seconds of wall clock:
  world by world   the row table of every distinct world built on the host (io._exact_rows, the
                   method before the class templates; timed on at most 64 worlds and scaled)
  templates        io.per_world_rows as Solver and set_parameter call it: one world built and two
                   probed per class of values, the other worlds filled from the template
  set_parameter    Solver.set_parameter moving every world's limits again (same classes: only the
                   limit cells rewritten, then uploaded)
and whether the template columns equal the world-by-world ones (checked on the timed worlds).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chain import chain_model  # noqa: E402

EXACT_SAMPLE = 64  # worlds built one by one for the world-by-world column (then scaled)


def limited_chain(n: int, worlds: int):
    """Chain-n with hinge limits +-1.5 rad, replicated; world w's limits +-(1.5 + 0.5 w / W)."""
    model = chain_model(n)
    model.joint_lower[:, 4] = -1.5
    model.joint_upper[:, 4] = 1.5
    model = model.replicate(worlds)
    offset = np.linspace(0.0, 0.5, worlds)[:, None]
    lower, upper = model.parameter("joint.lower"), model.parameter("joint.upper")
    lower[:, :, 4] -= offset
    upper[:, :, 4] += offset
    model.set_parameter("joint.lower", lower)
    model.set_parameter("joint.upper", upper)
    return model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[30, 300])
    ap.add_argument("--worlds", type=int, nargs="+", default=[16, 256, 4096])
    args = ap.parse_args(argv)
    from usdphys.solver import Solver, io
    from usdphys.solver.warpinit import init_warp

    init_warp()
    print("per-world joint limits, every world its own; seconds (wall clock)")
    print(f"{'N':>4} {'worlds':>7} {'world by world':>15} {'templates':>10} {'set_parameter':>14}  equal")
    for n in args.n:
        for W in args.worlds:
            model = limited_chain(n, W)
            solver = Solver(model, "cpu", threads=1)
            dm = solver.dm
            names = tuple(k for k in io.ROW_PARAMETERS if k in model.world_parameters)
            sample = np.unique(np.linspace(0, W - 1, min(W, EXACT_SAMPLE)).astype(int))
            t0 = time.perf_counter()
            exact = io._exact_rows(model, dm.rows, dm.elements, dm.law_names, names, sample)
            by_world = (time.perf_counter() - t0) * W / sample.size
            t0 = time.perf_counter()
            columns, classes = io.per_world_rows(model, dm.rows, dm.elements, dm.law_names, {})
            templated = time.perf_counter() - t0
            equal = all(np.array_equal(np.broadcast_to(columns[c], exact[c].shape)[sample], exact[c][sample])
                        for c in exact)
            offset = np.linspace(0.1, 0.2, W)[:, None, None]
            t0 = time.perf_counter()
            solver.set_parameter("joint.upper", model.parameter("joint.upper") + offset)
            live = time.perf_counter() - t0
            scaled = "*" if sample.size < W else " "
            print(f"{n:>4} {W:>7} {by_world:>14.3g}{scaled} {templated:>10.3g} {live:>14.3g}  {equal}", flush=True)
    print(f"* timed on {EXACT_SAMPLE} worlds, scaled to all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
