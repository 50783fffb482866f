"""Modified Newton across steps (step.py REFACTOR_EVERY / REFACTOR_RATE): the LDL factor of an
earlier step is reused for models with only equal rows and no contact; the converged steps
keep the 1e-12 residual, so closed loops stay closed."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from usdphys.usd.reader import read_stage
from usdphys.solver import Solver

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "usd"


def test_fourbar_reuses_the_factorisation_and_stays_closed():
    model, _ = read_stage(str(ASSETS / "fourbar.usda"))
    model = model.replicate(2)
    s = Solver(model, "cpu")
    run = s.run(20, 100, 1e-3)  # 2 s
    st = s.newton_stats()
    steps = 2000
    assert s.m.equal_only == 1
    assert np.all(st["factorisations"] < 0.5 * steps)  # reused most steps
    assert np.all(st["updates"] >= steps)  # at least one Newton update per step
    assert run.max_constraint_error.max() <= 1e-12


def test_no_reuse_when_a_row_is_not_an_equal_row():
    """A joint-friction row (its active set changes, like limits, drives and law rows): a fresh
    factorisation every step."""
    from test_joint_friction import newton_api, wheel
    from sim_helpers import stage

    model, _ = read_stage(stage(wheel(2.0, 3.0, newton_api(dofs=["angle"], dynamicFrictionEffort=[4.0])),
                                gravity=9.81))
    assert np.any(model.constraint_rows().mode == 0)
    s = Solver(model, "cpu")
    assert s.m.equal_only == 0
    run = s.run(5, 100, 1e-3)
    assert s.newton_stats()["factorisations"][0] >= 500
    assert run.max_constraint_error.max() <= 1e-12
