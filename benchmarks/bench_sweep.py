"""Sweep vs one process per variant: N slider-crank variants, wall time.

    python benchmarks/bench_sweep.py [--variants 64] [--processes 4] [--duration 0.5] [--workers N]

The README's slider-crank (assets/chrono/slider_crank/mbs.yaml, converted to out/slider_crank.usda;
contacts, a spring, a motor; dt 1e-4 s from the stage) with its crank mass and spring stiffness
varied on a grid. Two ways to run the same variants:

- `usdphys sweep` on every core: per-world parameters, so each task is one simulate call whose
  worlds are the variants (timed as one CLI process, start-up and table writing included);
- one `usdphys simulate` process per variant (each variant a small stage sublayering the
  input with its two overrides): timed on `--processes` variants, one after another, and
  extrapolated to N and to 1000 variants, sequentially and spread perfectly over the cores.

Both are then scaled to 1000 variants (the sweep linearly from its per-variant cost above its
fixed start-up, measured with a one-variant sweep). The numbers are printed side by side;
docs/sweeps.md holds the recorded ones.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / "out" / "slider_crank.usda"
CRANK_MASS = "/Slider_crank/Bodies/crank.physics:mass"
SPRING_K = "/Slider_crank/ForceElements/spring.mbd:stiffness"
USDPHYS = [sys.executable, "-m", "usdphys.cli"]


def spec(n: int, duration: float) -> dict:
    a = max(d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0)  # a x b = n exactly
    b = n // a
    return {"run": {"duration": duration, "fps": 60},
            "grid": {CRANK_MASS: {"linspace": [0.5, 1.5, a]}, SPRING_K: {"linspace": [25.0, 100.0, b]}},
            "metrics": [{"kind": "residual"}, {"kind": "pose", "prim": "/Slider_crank/Bodies/slider"},
                        {"kind": "joint", "prim": "/Slider_crank/Joints/ground_crank_spindle", "coordinate": "angle"},
                        {"kind": "motor_effort", "prim": "/Slider_crank/Motors/ground_crank"}]}


def run(cmd) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{proc.stderr}")
    return time.perf_counter() - t0


def time_sweep(tmp: Path, n: int, duration: float, workers: int) -> tuple[float, int]:
    import yaml

    sp = spec(n, duration)
    path = tmp / f"sweep-{n}.yaml"
    path.write_text(yaml.safe_dump(sp))
    out = tmp / f"sweep-{n}"
    shutil.rmtree(out, ignore_errors=True)
    wall = run(USDPHYS + ["sweep", str(STAGE), "--spec", str(path), "-o", str(out), "--workers", str(workers)])
    from usdphys.sweep import read_results

    rows = read_results(out / "results.csv")
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        sys.exit(f"{len(bad)} variants failed, e.g. {bad[0]['error']}")
    return wall, len(rows)


def time_processes(tmp: Path, k: int, duration: float) -> list[float]:
    """One `usdphys simulate` process per variant, each variant a layer over the input."""
    import usdphys.usd  # noqa: F401
    from usdphys.sweepspec import load_spec
    from usdphys.usd.overrides import override_layer
    from usdphys.usd.stage import export_layer_atomic, open_stage, sublayer_path

    variants = load_spec(spec(k, duration)).variants[:k]
    stage = open_stage(STAGE)
    times = []
    for i, v in enumerate(variants):
        layer = override_layer(stage, v)
        path = tmp / f"variant-{i}.usda"
        layer.subLayerPaths = [sublayer_path(STAGE, path)]
        export_layer_atomic(layer, path)
        times.append(run(USDPHYS + ["simulate", str(path), "-o", str(tmp / f"result-{i}.usda"),
                                    "--duration", str(duration)]))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=64)
    ap.add_argument("--processes", type=int, default=4, help="variants timed as one simulate process each")
    ap.add_argument("--duration", type=float, default=0.5, help="simulated seconds per variant")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    if not STAGE.exists():
        STAGE.parent.mkdir(exist_ok=True)
        run(USDPHYS + ["convert", str(REPO / "assets/chrono/slider_crank/mbs.yaml"), "-o", str(STAGE)])
    cores = args.workers
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        one, _ = time_sweep(tmp, 1, args.duration, cores)  # start-up + one variant
        wall, n = time_sweep(tmp, args.variants, args.duration, cores)
        per = time_processes(tmp, args.processes, args.duration)
    mean = sum(per) / len(per)
    per_variant = max(wall - one, 0.0) / max(n - 1, 1)
    print(f"slider-crank, {args.duration:g} s simulated per variant (dt 1e-4 s from the stage), {cores} core(s)")
    print(f"{'':44s} {'N = ' + str(n):>14s} {'N = 1000':>14s}")
    print(f"{'usdphys sweep, all cores (measured; 1000 extrapolated)':44s} {wall:12.1f} s "
          f"{one + per_variant * 999:12.1f} s")
    print(f"{'one simulate process per variant, sequential':44s} {mean * n:12.1f} s {mean * 1000:12.1f} s")
    print(f"{'  same, spread perfectly over the cores':44s} {mean * n / cores:12.1f} s {mean * 1000 / cores:12.1f} s")
    print(f"(one simulate process: {mean:.2f} s mean over {len(per)}: {', '.join(f'{t:.2f}' for t in per)}; "
          f"sweep: {one:.1f} s for 1 variant, {per_variant * 1000:.0f} ms per extra variant)")


if __name__ == "__main__":
    main()
