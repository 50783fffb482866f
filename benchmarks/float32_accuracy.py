"""What float32 would do to the row system: condition number of A = G M^-1 G^T and a float32 solve.

    python benchmarks/float32_accuracy.py [--n 10 30 100]

For chains of N thin rods (benchmarks/chain.py: axial inertia 1e-6 of the transverse), the same
chains with the axial inertia equal to the transverse ("thick"), and the
four-bar of assets/usd/fourbar.usda, one step is taken on the CPU and the solver's own iteration
matrix A (the rows it keeps, from its sparse pattern) is read back and made dense. Printed: the
rows kept, cond(A) (largest / smallest eigenvalue), and the relative error of x = A^-1 b solved in
float32 against float64 for a random b (numpy's LU, the best float32 can do here). A Newton update
through a factor with relative error e contracts the residual at best by e per update, so a
float32 factor helps only where e is well below 1; and a float32 position (ulp 6e-8 m at 1 m)
cannot meet the solver's 1e-12 m tolerance at all. docs/solver.md, "float32".
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from chain import TRANSVERSE, chain_model

ROOT = Path(__file__).resolve().parents[1]


def row_system(model) -> np.ndarray:
    """The dense A of the rows the solver keeps, after one step of 1 ms."""
    from usdphys.solver import Solver

    solver = Solver(model, "cpu")
    solver.run(1, 1, 1e-3)
    pattern = solver.dm.pattern
    li, lj = np.asarray(pattern.li), np.asarray(pattern.lj)
    entries = solver.sc.A.numpy()[0][: len(li)]
    A = np.zeros((solver.R, solver.R))
    A[li, lj] = entries
    A[lj, li] = entries
    keep = solver.sc.keep.numpy()[0][: solver.R] != 0
    return A[np.ix_(keep, keep)]


def report(label: str, A: np.ndarray) -> None:
    eig = np.linalg.eigvalsh(A)
    b = np.random.default_rng(0).normal(size=A.shape[0])
    x64 = np.linalg.solve(A, b)
    x32 = np.linalg.solve(A.astype(np.float32), b.astype(np.float32)).astype(np.float64)
    err = np.linalg.norm(x32 - x64) / np.linalg.norm(x64)
    print(f"{label:>10} {A.shape[0]:>5} {eig[-1] / eig[0]:>10.2e} {err:>12.1e}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 30, 100])
    args = ap.parse_args(argv)
    from usdphys.usd.reader import read_stage

    print(f"{'model':>10} {'rows':>5} {'cond(A)':>10} {'f32 solve':>12}")
    for n in args.n:
        report(f"chain-{n}", row_system(chain_model(n)))
        thick = chain_model(n)  # the same chain of rods as thick as long: axial inertia = transverse
        thick.body_inertia = np.full_like(np.asarray(thick.body_inertia), TRANSVERSE)
        report(f"thick-{n}", row_system(thick))
    report("four-bar", row_system(read_stage(str(ROOT / "assets" / "usd" / "fourbar.usda"))[0]))


if __name__ == "__main__":
    main()
