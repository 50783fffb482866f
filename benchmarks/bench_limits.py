"""Joint limits on the scale benchmark's chain: what a limit on every hinge costs, reached or not.

    python benchmarks/bench_limits.py [--sizes 30 100] [--limits 170 20] [--repeat 3]

The chain of bench_scale.py (N thin rods, revolute joints, one world, CPU, dt 1 ms) with each
hinge limited to +-lim deg, beside the same chain without limits and MuJoCo (Euler) with the same
ranges (`limited="true"`; MuJoCo's limits are soft: its poses differ where a limit acts). Prints
steps/s (CPU time, best of --repeat), Newton updates and factorisations a step, and the tip's
height at the end: a limit never reached (+-170 deg) must leave usdphys' tip where the free
chain's is.
"""
from __future__ import annotations

import argparse
import math
import time

from bench_scale import DT, LINK, _axis_z, bench_mujoco, steps_for
from chain import chain_model

CLOCK = time.process_time


def limited_chain(n: int, lim):
    m = chain_model(n)
    if lim is not None:
        m.joint_lower[:, 4] = -math.radians(lim)
        m.joint_upper[:, 4] = math.radians(lim)
    return m


def bench_usdphys(n: int, lim, repeat: int):
    from usdphys.solver import Solver

    model, steps = limited_chain(n, lim), steps_for(n)
    Solver(model, "cpu").run(1, 10, DT)  # kernels loaded
    rate = 0.0
    for _ in range(repeat):
        solver = Solver(model, "cpu")
        t0 = CLOCK()
        run = solver.run(1, steps, DT)
        rate = max(rate, steps / (CLOCK() - t0))
    stats = solver.newton_stats()
    tip = run.pos[-1, 0, -1] + (LINK / 2) * _axis_z(run.rot[-1, 0, -1])
    return (rate, stats["updates"][0] / steps, stats["factorisations"][0] / steps, float(tip[2]),
            float(run.max_constraint_error[0]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 100])
    ap.add_argument("--limits", type=float, nargs="+", default=[170.0, 20.0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    print(f"chain of N thin rods, revolute joints limited to +-lim deg, one world, CPU, dt {DT} s; "
          "steps/s (cpu time), updates and factorisations a step, tip height m at the end")
    print(f"{'N':>4} {'lim':>5} {'usdphys':>12} {'upd':>5} {'fac':>5} {'tip':>10} {'residual':>9}"
          f" {'mujoco euler':>13} {'tip':>10} {'x euler':>8}")
    for n in a.sizes:
        for lim in [None] + list(a.limits):
            rate, upd, fac, tip, err = bench_usdphys(n, lim, a.repeat)
            mrate, _, mtip = bench_mujoco(n, "revolute", "Euler", a.repeat, lim)
            shown = "-" if lim is None else f"{lim:g}"
            print(f"{n:>4} {shown:>5} {rate:>12.4g} {upd:>5.2f} {fac:>5.2f} {tip:>10.4f} {err:>9.1e}"
                  f" {mrate:>13.4g} {mtip:>10.4f} {rate / mrate:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
