"""Newton's own robot stages (the `newton` wheel's assets, read as they ship): usdphys against
Newton XPBD on the same stage, CPU, one world, steps/s side by side.

    python benchmarks/bench_newton_stages.py [--steps 500] [--dt 1e-3] [--stages ant_multi ant humanoid]

usdphys: read_stage + Solver (what `usdphys simulate` runs), its own contact, the stage's drives,
limits and joint properties; CPU time per step after a warm-up of 20 steps; the largest joint
residual of the timed steps and the factorisations and Newton updates a step (ModelData.reuse_factor:
a kept factor). Newton XPBD: ModelBuilder.add_usd + finalize on the CPU, 10 iterations, contacts
from model.collide every step (newton's examples do the same), in a worker process (importing
newton registers its own NewtonJointAPI schema, which cannot share a process with ours); CPU time
per step after the same warm-up. Both start from the stage's pose at rest and run the same dt.
These stages carry no ground collider (ant_multi's GroundPlane deletes its collision API; Newton's
examples add a ground in code), so the robots fall, driven, and the shapes of different robots are
candidate pairs that never touch (ant_multi: 343,520). The bodies' mean height at the end (m) is
printed beside each: both fall alike (XPBD's soft joints and its damping end in another pose).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

STAGES = {"ant_multi": "tests/assets/ant_multi.usda", "ant": "tests/assets/ant.usda",
          "humanoid": "examples/assets/humanoid.usda"}

_NEWTON = r'''
import json, sys, time, numpy as np
import warp as wp
import newton
path, steps, dt = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
b = newton.ModelBuilder()
b.add_usd(path)
m = b.finalize(device="cpu")
s0, s1, c = m.state(), m.state(), m.control()
solver = newton.solvers.SolverXPBD(m, iterations=10)
def run(n):
    global s0, s1
    for _ in range(n):
        s0.clear_forces()
        contacts = m.collide(s0)
        solver.step(s0, s1, c, contacts, dt)
        s0, s1 = s1, s0
run(20)
wp.synchronize()
t = time.process_time()
run(steps)
wp.synchronize()
cpu = time.process_time() - t
q = s0.body_q.numpy()
print("RESULT " + json.dumps({"bodies": m.body_count, "per_step": cpu / steps, "zmean": float(q[:, 2].mean()),
                              "finite": bool(np.isfinite(q).all())}))
'''


def newton_root() -> Path | None:
    spec = importlib.util.find_spec("newton")
    return Path(spec.origin).parent if spec and spec.origin else None


def bench_usdphys(path: Path, steps: int, dt: float) -> dict:
    import usdphys.usd  # noqa: F401  (our schemas before any stage is opened)
    from usdphys.solver import Solver
    from usdphys.usd.reader import read_stage
    from usdphys.errors import quiet

    with quiet():
        model = read_stage(str(path))[0]
    solver = Solver(model, "cpu")
    solver.run(1, 20, dt)  # compile / load kernels, settle the warm starts
    before = solver.newton_stats()
    t = time.process_time()
    run = solver.run(10, steps // 10, dt)
    cpu = time.process_time() - t
    after = solver.newton_stats()
    n = (steps // 10) * 10
    pos = run.pos[-1, 0]
    return {"bodies": len(model.body_paths), "per_step": cpu / n, "zmean": float(pos[:, 2].mean()),
            "residual": float(run.max_constraint_error.max()), "reduced": int(run.reduced_steps.max()),
            "factorisations": float(after["factorisations"][0] - before["factorisations"][0]) / n,
            "updates": float(after["updates"][0] - before["updates"][0]) / n}


def bench_newton(path: Path, steps: int, dt: float) -> dict:
    res = subprocess.run([sys.executable, "-c", _NEWTON, str(path), str(steps), str(dt)], capture_output=True,
                         text=True, timeout=1800)
    for line in res.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": tail[:120]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    ap.add_argument("--no-newton", action="store_true")
    a = ap.parse_args(argv)
    root = newton_root()
    if root is None:
        print("the newton wheel is not installed (pip install -e '.[interop]'): its stages are what this compares on")
        return 1
    ver = importlib.metadata.version("newton")
    print(f"Newton {ver}'s stages, CPU (one thread), dt {a.dt} s, {a.steps} steps after 20; us per step (CPU time) "
          "[bodies' mean height m at the end]")
    print(f"{'stage':10s} {'bodies':>6s} {'usdphys':>24s} {'newton xpbd':>24s} {'xpbd/usdphys':>12s}  usdphys: residual, "
          "reduced steps, factorisations / updates a step")
    for name in a.stages:
        path = root / STAGES[name]
        u = bench_usdphys(path, a.steps, a.dt)
        x = {} if a.no_newton else bench_newton(path, a.steps, a.dt)
        us = f"{u['per_step'] * 1e6:9.1f} [{u['zmean']:.4f}]"
        if "per_step" in x:
            xs = f"{x['per_step'] * 1e6:9.1f} [{x['zmean']:.4f}]"
            ratio = f"{x['per_step'] / u['per_step']:10.2f}x"
        else:
            xs, ratio = f"{x.get('error', '-')[:24]:>24s}", "-"
        print(f"{name:10s} {u['bodies']:6d} {us:>24s} {xs:>24s} {ratio:>12s}  {u['residual']:.1e}, {u['reduced']}, "
              f"{u['factorisations']:.3f} / {u['updates']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
