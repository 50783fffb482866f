"""Warp multibody solver: maximal coordinates, one thread per world, a sparse row system per world.

The solver sees only a usdphys.types.model.Model (flat numpy arrays); it never imports pxr.
`Solver(model, device).run(frames, substeps, dt)` returns COM-frame poses per output frame.
`usdphys.solver.io` builds what the kernels take: the model (put_model), the per-world state
(make_state) and the step's scratch (make_scratch). `precompile_cuda(arch)` builds the CUDA
kernels ahead, on a machine with or without a GPU.
See docs/solver.md for the method.
"""
import warp as wp

wp.config.log_level = getattr(wp, "LOG_WARNING", 30)  # no banner / module-load lines on the CLI

from usdphys.solver.driver import Solver, SolverRun, precompile_cuda  # noqa: E402

__all__ = ["Solver", "SolverRun", "precompile_cuda"]
