"""Host cost of per-world row parameters: worlds that each set their own joint limits.

    python benchmarks/bench_parameters.py [--n 30 300] [--worlds 16 256 4096] [--device cuda:0]

A hanging chain of N rods (chain.py) with every hinge limited to +-(1.5 + a per-world offset) rad,
replicated W times, each world its own limits. Side by side, in seconds of wall clock:
  world by world   the row table of every distinct world built on the host (io._exact_rows, the
                   method before the class templates; timed on at most 64 worlds and scaled)
  templates        io.per_world_rows as Solver and set_parameter call it: one world built and two
                   probed per class of values, the other worlds filled from the template
  set_parameter    Solver.set_parameter moving every world's limits again (same classes: only the
                   limit cells rewritten where they stand, on the host and the device)
and whether the template columns equal the world-by-world ones (checked on the timed worlds).
Then a control loop's case: chain-N in W worlds, every hinge driven and limited, a running
Solver given new per-world drive targets, drive damping and upper limits between calls
(milliseconds a call, median of the calls after the first; the first, which probes the class,
in brackets), beside the time of one step of all W worlds.
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
    ap.add_argument("--loop", type=int, nargs=2, default=[30, 256], metavar=("N", "WORLDS"),
                    help="the control loop's chain and worlds")
    ap.add_argument("--device", default="cpu", help="where the Solver runs (set_parameter uploads there)")
    args = ap.parse_args(argv)
    import warp as wp

    from usdphys.solver import Solver, io
    from usdphys.solver.warpinit import init_warp

    init_warp()
    print("per-world joint limits, every world its own; seconds (wall clock)")
    print(f"{'N':>4} {'worlds':>7} {'world by world':>15} {'templates':>10} {'set_parameter':>14}  equal")
    for n in args.n:
        for W in args.worlds:
            model = limited_chain(n, W)
            solver = Solver(model, args.device, threads=1)
            dm = solver.dm
            names = io.varied_row_parameters(model)
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
            wp.synchronize_device(args.device)  # the upload done
            live = time.perf_counter() - t0
            scaled = "*" if sample.size < W else " "
            print(f"{n:>4} {W:>7} {by_world:>14.3g}{scaled} {templated:>10.3g} {live:>14.3g}  {equal}", flush=True)
    print(f"* timed on {EXACT_SAMPLE} worlds, scaled to all")
    control_loop(*args.loop, device=args.device)
    return 0


def control_loop(n: int, worlds: int, calls: int = 12, device="cpu") -> None:
    """set_parameter between calls on a running Solver (see the module docstring)."""
    import warp as wp

    from usdphys.solver import Solver

    model = chain_model(n)
    model.joint_drive_stiffness[:, 4] = 5.0
    model.joint_drive_damping[:, 4] = 0.5
    model.joint_lower[:, 4] = -1.5
    model.joint_upper[:, 4] = 1.5
    model = model.replicate(worlds)
    solver = Solver(model, device)
    solver.run(1, 2, 1e-3)
    rng = np.random.default_rng(7)
    cells = []
    for name, lo, hi in (("joint.drive_target_pos", -0.5, 0.5), ("joint.drive_damping", 0.2, 0.8),
                         ("joint.upper", 1.2, 1.8)):
        times = []
        for _ in range(calls):
            values = model.parameter(name)
            values[:, :, 4] = rng.uniform(lo, hi, values.shape[:2])
            t0 = time.perf_counter()
            solver.set_parameter(name, values)
            wp.synchronize_device(device)
            times.append(time.perf_counter() - t0)
        cells.append(f"{1e3 * np.median(times[1:]):.3g} [{1e3 * times[0]:.3g}]")
    t0 = time.perf_counter()
    solver.run(1, 10, 1e-3)
    wp.synchronize_device(device)
    step = (time.perf_counter() - t0) / 10
    print(f"\ncontrol loop ({device}): chain-{n}, {worlds} worlds, every hinge driven and limited; ms a set_parameter call "
          f"(median of {calls - 1}) [first call]")
    print(f"{'drive target':>16} {'drive damping':>16} {'upper limit':>16} {'one step':>10}")
    print(f"{cells[0]:>16} {cells[1]:>16} {cells[2]:>16} {1e3 * step:>10.3g}")


if __name__ == "__main__":
    raise SystemExit(main())
