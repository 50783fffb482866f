"""The per-step sweep (usdphys/solver/broadphase.py) against testing every candidate pair.

The sweep only chooses which candidate pairs a step hands to the narrow phase: the same pairs
the full loop would keep (those pair_in_reach accepts), in the same ascending order. So a run
must be the full loop's run bit for bit, not merely close: any difference is a pair the sweep
missed or added, or an order it changed. Scenes are generated (hypothesis): piles of spheres,
capsules, boxes and cylinders over a plane, some touching, some overlapping along every axis
but apart in space, thrown at each other so that the sweep's order changes between steps.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usdphys.solver import Solver
from usdphys.solver import broadphase
from usdphys.solver.broadphase import pair_index
from usdphys.solver.contact import ContactOptions
from usdphys.types.model import Model
from usdphys.types.shapes import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_PLANE, SHAPE_SPHERE, table_from_specs

KINDS = (SHAPE_SPHERE, SHAPE_CAPSULE, SHAPE_BOX, SHAPE_CYLINDER)


def pile(bodies) -> Model:
    """bodies: (kind, size, position, velocity) each; one shape per body, a plane at z = 0."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    specs = [{"type": SHAPE_PLANE}]
    for i, (kind, size, pos, vel) in enumerate(bodies):
        b = m.add_body(f"/b{i}", 1.0, [0.4 * size * size] * 3, pos=pos, lin_vel=vel)
        dims = {SHAPE_SPHERE: (size, 0, 0), SHAPE_CAPSULE: (0.5 * size, size, 0),
                SHAPE_BOX: (size, 0.7 * size, 0.5 * size), SHAPE_CYLINDER: (size, 0.6 * size, 0)}[kind]
        specs.append({"type": kind, "body": b, "dims": dims})
    m.shapes = table_from_specs(specs)
    return m


def run(model, mode, steps=120):
    solver = Solver(model, "cpu", contact=ContactOptions(broadphase=mode))
    out = solver.run(steps, 1, 2e-3)
    return out, solver.contact_stats(), solver


@st.composite
def piles(draw):
    n = draw(st.integers(3, 24))
    spread = draw(st.sampled_from([0.3, 1.0, 3.0]))  # packed (many overlaps) to sparse
    bodies = []
    for _ in range(n):
        kind = draw(st.sampled_from(KINDS))
        size = draw(st.floats(0.03, 0.15))
        pos = [draw(st.floats(-spread, spread)), draw(st.floats(-spread, spread)), draw(st.floats(0.2, 1.5))]
        vel = [draw(st.floats(-3, 3)), draw(st.floats(-3, 3)), draw(st.floats(-3, 1))]
        bodies.append((kind, size, pos, vel))
    return bodies


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(piles())
def test_the_sweep_runs_bit_for_bit_as_testing_every_pair(bodies):
    model = pile(bodies)
    ref, ref_stats, _ = run(model, "all")
    got, stats, solver = run(pile(bodies), "sweep")
    assert solver.cm.ix.sweep == 1
    assert np.array_equal(got.pos, ref.pos) and np.array_equal(got.rot, ref.rot)
    assert np.array_equal(stats["count"], ref_stats["count"])
    assert stats["all_pairs_tested"].sum() == 0


def test_a_full_list_falls_back_to_every_pair_with_the_same_run(monkeypatch):
    """Where the pairs in reach outgrow the sweep's list, that step tests every pair (counted),
    and the run is still the full loop's."""
    rng = np.random.default_rng(7)
    bodies = [(KINDS[i % 4], 0.1, [*rng.uniform(-0.2, 0.2, 2), 0.12 + 0.25 * i], [0, 0, 0]) for i in range(12)]
    ref, _, _ = run(pile(bodies), "all", steps=300)
    monkeypatch.setattr(broadphase, "NEAR_PER_SHAPE", 0)
    monkeypatch.setattr(broadphase, "NEAR_EXTRA", 3)
    got, stats, solver = run(pile(bodies), "sweep", steps=300)
    assert solver.cm.ix.near_cap == 3
    assert stats["all_pairs_tested"].sum() > 0  # the stack touches at more than 3 pairs
    assert np.array_equal(got.pos, ref.pos) and np.array_equal(got.rot, ref.rot)


def test_auto_sweeps_where_pairs_grow_as_the_square_of_the_shapes():
    """A few bodies over a floor test every pair (a handful per shape); a grid of 64 balls in one
    world (2,080 candidate pairs for 65 shapes) sweeps, with the same run."""
    few = pile([(SHAPE_SPHERE, 0.1, [0.3 * i, 0, 0.5], [0, 0, 0]) for i in range(4)])
    assert Solver(few, "cpu").cm.ix.sweep == 0
    grid = [(SHAPE_SPHERE, 0.1, [0.25 * (i % 8), 0.25 * (i // 8), 0.3 + 0.01 * i], [1.0, -0.5, 0]) for i in range(64)]
    ref, _, _ = run(pile(grid), "all", steps=200)
    got, _, solver = run(pile(grid), "auto", steps=200)
    assert solver.cm.ix.sweep == 1
    assert np.array_equal(got.pos, ref.pos)


def test_pair_index_lists_every_pair_from_both_shapes():
    pairs = np.array([[0, 3], [0, 5], [1, 2], [2, 5], [3, 4]], np.int32)
    bound = np.array([np.inf, 1.0, 1.0, 1.0, 1.0, 1.0])
    ix = pair_index(pairs, bound, 6, "sweep", "cpu")
    start, partner, pair = ix.start.numpy(), ix.partner.numpy(), ix.pair.numpy()
    seen = {(s, int(partner[e])): int(pair[e]) for s in range(6) for e in range(start[s], start[s + 1])}
    expect = {}
    for k, (a, b) in enumerate(pairs):
        expect[(int(a), int(b))] = expect[(int(b), int(a))] = k
    assert seen == expect
    for s in range(6):  # ascending partners: find_pair's binary search
        assert list(partner[start[s]:start[s + 1]]) == sorted(partner[start[s]:start[s + 1]])
    assert list(ix.bounded.numpy()[:ix.n_bounded]) == [1, 2, 3, 4, 5] and list(ix.unbounded.numpy()) == [0]
    with pytest.raises(ValueError, match="broadphase: expected one of auto, sweep, all"):
        pair_index(pairs, bound, 6, "grid", "cpu")
