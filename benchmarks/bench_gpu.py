"""Many worlds on one GPU: usdphys vs Newton XPBD and MuJoCo-Warp (Newton's SolverMuJoCo), world-steps/s.

    python benchmarks/bench_gpu.py [--device cuda] [--worlds 1 64 1024 4096 16384] [--models fourbar chain30]
                                   [--steps 1000 200] [--peers xpbd mujoco] [--save OUT.npz] [--peer-timeout 240]

Models as in bench_worlds.py: the four-bar of assets/usd/fourbar.usda (a closed loop of 3-D
revolute joints) and a chain of 30 thin rods hinged about y, released horizontal; dt = 1 ms,
gravity 9.81. usdphys runs every world in one thread of one kernel launch per output frame
(replayed from a CUDA graph), float64. The peers run the same bodies and joints in a worker
process (importing newton loads its NewtonJointAPI, which cannot share a process with ours),
each step captured in a CUDA graph as Newton's own examples do, so neither side pays per-launch
overhead that a real application would not. World-steps/s = worlds * steps / wall time, after a
warm-up (kernels loaded), with the device synchronised before the clock is read. Loop error:
the largest distance between the two anchor points of any joint in any world at the end.
--save writes every usdphys run's final COM poses (world 0 and the last world) so a run on one
device can be compared with the same run on another (`--compare A.npz B.npz`).
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
from bench_solver import DT, _gap, load_fields, newton_model, save_fields
from bench_worlds import load


def bench_usdphys(name: str, worlds: int, steps: int, device: str):
    """(world-steps per wall second, largest joint gap, final COM pos / rot of world 0 and W-1, Newton stats)."""
    import warp as wp

    from usdphys.solver import Solver

    model = load(name).replicate(worlds)
    Solver(model, device).run(2, 10, DT)  # warm-up: kernels loaded, the graph path taken once
    solver = Solver(model, device)
    per_frame = max(1, steps // FRAMES)
    wp.synchronize_device(device)
    t0 = time.perf_counter()
    run = solver.run(FRAMES, per_frame, DT)  # returns host copies: the device is synchronised
    wall = time.perf_counter() - t0
    pos, rot = model.prim_from_com(run.pos[-1], run.rot[-1])
    ends = np.stack([run.pos[-1, 0], run.pos[-1, -1]]), np.stack([run.rot[-1, 0], run.rot[-1, -1]])
    stats = solver.newton_stats()
    per_step = {k: float(np.mean(v)) / (per_frame * FRAMES) for k, v in stats.items()}
    return worlds * per_frame * FRAMES / wall, _gap(model, pos, rot), ends, per_step, float(np.max(run.max_constraint_error))


def peer_worker(npz: str, worlds: int, steps: int, device: str, solver_name: str) -> None:
    """Runs in its own process: Newton's XPBD or MuJoCo-Warp on the exported bodies and joints."""
    import newton
    import warp as wp

    src = load_fields(npz)
    nb = len(src.body_mass)
    t_build = time.perf_counter()
    model = newton_model(src, worlds, device)
    t_build = time.perf_counter() - t_build
    if solver_name == "xpbd":
        solver = newton.solvers.SolverXPBD(model)
    elif solver_name == "mujoco":
        solver = newton.solvers.SolverMuJoCo(model)
    else:
        raise SystemExit(f"unknown peer {solver_name}")
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    control = model.control()
    batch = 10  # steps per graph replay (even: the two states swap back)

    def advance():
        nonlocal s0, s1
        for _ in range(batch):
            solver.step(s0, s1, control, None, DT)
            s0, s1 = s1, s0

    advance()  # warm-up: kernels compiled / loaded
    graph = None
    if wp.get_device(device).is_cuda:
        with wp.ScopedCapture(device=device) as cap:
            advance()
        graph = cap.graph
    wp.synchronize_device(device)
    reps = max(1, steps // batch)
    t0 = time.perf_counter()
    for _ in range(reps):
        if graph is not None:
            wp.capture_launch(graph)
        else:
            advance()
    wp.synchronize_device(device)
    el = time.perf_counter() - t0
    bq = s0.body_q.numpy().reshape(worlds, nb, 7).astype(float)
    print(f"BUILD {t_build}")
    print(f"RESULT {worlds * reps * batch / el} {_gap(src, bq[..., :3], bq[..., 3:])}")


def bench_peer(name: str, worlds: int, steps: int, device: str, solver_name: str, timeout: float):
    src = load(name)
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "model.npz")
        save_fields(src, npz)
        try:
            out = subprocess.run([sys.executable, __file__, "--peer-worker", npz, str(worlds), str(steps), device,
                                  solver_name], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"no result within {timeout:.0f} s") from None
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            _, sps, gap = line.split()
            return float(sps), float(gap)
    raise RuntimeError((out.stderr.strip().splitlines() or ["worker failed"])[-1])


def compare(a_path: str, b_path: str) -> None:
    """Largest difference of the saved final COM positions between two --save files."""
    a, b = np.load(a_path), np.load(b_path)
    for key in sorted(set(a.files) & set(b.files)):
        if key.endswith("_pos"):
            print(f"{key[:-4]:24s} largest position difference {np.max(np.abs(a[key] - b[key])):.3e} m")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--peer-worker":
        npz, worlds, steps, device, solver_name = argv[1:6]
        peer_worker(npz, int(worlds), int(steps), device, solver_name)
        return
    if argv and argv[0] == "--compare":
        compare(argv[1], argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--worlds", type=int, nargs="+", default=[1, 64, 1024, 4096, 16384])
    ap.add_argument("--models", nargs="+", default=["fourbar", "chain30"])
    ap.add_argument("--steps", type=int, nargs="+", default=[1000, 200],
                    help="steps per model (one value for all, or one per model)")
    ap.add_argument("--peers", nargs="*", default=["xpbd", "mujoco"])
    ap.add_argument("--peer-timeout", type=float, default=240.0, help="seconds for one peer run, build included")
    ap.add_argument("--save", default=None, help="npz of every usdphys run's final COM poses")
    args = ap.parse_args(argv)
    import importlib.util

    import warp as wp

    from usdphys.solver.warpinit import init_warp

    init_warp()
    peers = list(args.peers) if importlib.util.find_spec("newton") is not None else []
    if args.peers and not peers:
        print("newton not installed: `pip install -e .[bench]` for the side-by-side columns")
    dev = wp.get_device(args.device)
    print(f"device {dev.alias} ({dev.name}), Warp {wp.config.version}, dt {DT} s; world-steps/s (largest joint gap m)")
    cols = ["usdphys"] + [{"xpbd": "newton xpbd", "mujoco": "mujoco-warp"}.get(p, p) for p in peers]
    print(f"{'model':9s} {'worlds':>6s} {'steps':>5s} " + " ".join(f"{c:>22s}" for c in cols)
          + "   usdphys/xpbd  updates/step factor/step")
    saved = {}
    steps_of = dict(zip(args.models, args.steps if len(args.steps) == len(args.models) else args.steps[:1] * len(args.models)))
    for name in args.models:
        steps = steps_of[name]
        for worlds in args.worlds:
            cells = []
            try:
                sps, gap, ends, per_step, resid = bench_usdphys(name, worlds, steps, args.device)
                cells.append(f"{sps:12.4g} ({gap:7.1e})")
                saved[f"{name}_x{worlds}_pos"], saved[f"{name}_x{worlds}_rot"] = ends
            except Exception as exc:  # report, keep going
                print(f"  usdphys {name} x{worlds}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                sps, per_step = float("nan"), {"updates": float("nan"), "factorisations": float("nan")}
                cells.append(f"{'error':>22s}")
            rates = {}
            for p in peers:
                if p == "mujoco" and name == "fourbar":
                    cells.append(f"{'n/a (loop)':>22s}")  # Newton's MuJoCo bridge takes trees only
                    continue
                try:
                    nsps, ngap = bench_peer(name, worlds, steps, args.device, p, args.peer_timeout)
                    rates[p] = nsps
                    cells.append(f"{nsps:12.4g} ({ngap:7.1e})")
                except Exception as exc:  # report, keep going
                    print(f"  {p} {name} x{worlds}: {exc}", file=sys.stderr, flush=True)
                    cells.append(f"{'error':>22s}")
            ratio = f"{sps / rates['xpbd']:.2f}x" if "xpbd" in rates else "-"
            print(f"{name:9s} {worlds:6d} {steps:5d} " + " ".join(f"{c:>22s}" for c in cells)
                  + f"   {ratio:>12s}  {per_step['updates']:12.2f} {per_step['factorisations']:10.2f}", flush=True)
            if args.save:
                np.savez(args.save, **saved)


if __name__ == "__main__":
    main()
