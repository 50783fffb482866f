"""Many worlds on the CPU: usdphys on 1..N threads vs Newton XPBD, world-steps per second.

    python benchmarks/bench_worlds.py [--worlds 256] [--steps 200] [--threads 1 2] [--models fourbar chain30]

Models: the four-bar of assets/usd/fourbar.usda (a closed loop) and a chain of 30 thin rods
hanging from the world by revolute joints (built here, released horizontal), replicated to
`--worlds` worlds, dt = 1 ms. usdphys spreads the worlds over `--threads` CPU threads (world
ranges launched from a thread pool: Warp's CPU launch releases the GIL); Newton XPBD runs the
same bodies and joints in a worker process (bench_solver.py's). World-steps/s = worlds *
steps / wall time after a warm-up. Loop error: the largest distance between the two anchor
points of any joint in any world at the end. Newton is optional (`pip install -e .[bench]`).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import FRAMES
from bench_solver import ASSETS, DT, _gap, save_fields

REVOLUTE_Y = [True, True, True, True, False, True]


def chain_model(n: int, length: float = 0.1, mass: float = 0.1):
    """n thin rods along +X from the origin, each hinged about Y to the one before (the first to
    the world); rod inertia m L^2 / 12 across, 1e-6 of that along the rod (a thin rod)."""
    from usdphys.types.model import Model

    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    across = mass * length**2 / 12.0
    for i in range(n):
        m.add_body(f"/rod{i}", mass, [1e-6 * across, across, across], pos=[(i + 0.5) * length, 0.0, 0.0])
    for i in range(n):
        m.add_joint(f"/hinge{i}", i - 1, i, pos0=[i * length, 0, 0] if i == 0 else [0.5 * length, 0, 0],
                    pos1=[-0.5 * length, 0, 0], locked=REVOLUTE_Y, kind="revolute")
    return m


def load(name: str):
    if name == "fourbar":
        from usdphys.usd.reader import read_stage

        return read_stage(str(ASSETS / "fourbar.usda"))[0]
    if name.startswith("chain"):
        return chain_model(int(name[len("chain"):]))
    raise SystemExit(f"unknown model '{name}' (fourbar, chainN)")


def bench_usdphys(name: str, worlds: int, steps: int, threads: int):
    """(world-steps per wall second, per CPU second of all threads, largest joint gap)."""
    from usdphys.solver import Solver

    model = load(name).replicate(worlds)
    Solver(model, "cpu", threads=threads).run(1, 10, DT)  # warm-up: kernels compiled and loaded
    solver = Solver(model, "cpu", threads=threads)
    per_frame = steps // FRAMES
    t0, c0 = time.perf_counter(), time.process_time()
    run = solver.run(FRAMES, per_frame, DT)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    pos, rot = model.prim_from_com(run.pos[-1], run.rot[-1])
    n = worlds * per_frame * FRAMES
    return n / wall, n / cpu, _gap(model, pos, rot)


def bench_newton_xpbd(name: str, worlds: int, steps: int):
    """bench_solver.py's Newton worker on this model's bodies and Y-axis revolute joints."""
    src = load(name)
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "model.npz")
        save_fields(src, npz)
        out = subprocess.run([sys.executable, str(Path(__file__).with_name("bench_solver.py")), "--newton-worker", npz,
                              str(worlds), str(steps), "cpu", "xpbd"], capture_output=True, text=True)
    cpu = float("nan")
    for line in out.stdout.splitlines():
        if line.startswith("CPURATE "):
            cpu = float(line.split()[1])
        if line.startswith("RESULT "):
            _, sps, gap = line.split()
            return float(sps), cpu, float(gap)
    raise RuntimeError((out.stderr.strip().splitlines() or ["newton worker failed"])[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=["fourbar", "chain30"])
    ap.add_argument("--no-newton", action="store_true")
    args = ap.parse_args(argv)
    import importlib.util

    have_newton = not args.no_newton and importlib.util.find_spec("newton") is not None
    print(f"cpu ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}), {args.worlds} worlds, dt {DT} s, "
          f"{args.steps} steps")
    print("world-steps per wall second [per CPU second, all threads] (largest joint gap m); on a machine shared "
          "with other work the wall rate of N threads is capped by the cores left free, the CPU rate is not")
    cols = [f"usdphys {t} thread{'s' if t > 1 else ''}" for t in args.threads] + ["newton xpbd", "best usdphys/xpbd"]
    print(f"{'model':9s} " + " ".join(f"{c:>34s}" for c in cols))
    for name in args.models:
        cells, best = [], 0.0
        for t in args.threads:
            sps, cps, gap = bench_usdphys(name, args.worlds, args.steps, t)
            best = max(best, sps)
            cells.append(f"{sps:10.4g} [{cps:10.4g}] ({gap:7.1e})")
        ratio = "-"
        if have_newton:
            try:
                nsps, ncps, ngap = bench_newton_xpbd(name, args.worlds, args.steps)
                cells.append(f"{nsps:10.4g} [{ncps:10.4g}] ({ngap:7.1e})")
                ratio = f"{best / nsps:.2f}x"
            except Exception as exc:  # report, keep going
                print(f"  newton xpbd {name}: {exc}", file=sys.stderr)
                cells.append("error")
        else:
            cells.append("-")
        cells.append(ratio)
        print(f"{name:9s} " + " ".join(f"{c:>34s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
