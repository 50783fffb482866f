"""Shared by the benchmark scripts: time usdphys's solver on a Model the same way everywhere."""
from __future__ import annotations

import time

FRAMES = 10  # output frames per timed run; steps are split evenly over them


def time_solver(model, steps: int, dt: float, device):
    """Warm up (compile / load kernels), then time `steps` steps.

    Returns (world-steps per second, the run, the solver that made it)."""
    from usdphys.solver import Solver

    Solver(model, device).run(1, 10, dt)
    solver = Solver(model, device)
    per_frame = steps // FRAMES
    t0 = time.perf_counter()
    run = solver.run(FRAMES, per_frame, dt)
    elapsed = time.perf_counter() - t0
    return model.world_count * per_frame * FRAMES / elapsed, run, solver
