"""Colliders of one jointed mechanism that overlap in the input pose are not collided; a free
body that starts in the ground is still pushed out. Models built in code (SI, xyzw)."""
from __future__ import annotations

import logging

import numpy as np

from usdphys.solver import Solver
from usdphys.types.model import Model
from usdphys.types.shapes import SHAPE_BOX, SHAPE_PLANE, SHAPE_SPHERE, table_from_specs

REVOLUTE_Y = [True, True, True, True, False, True]


def chain_with_overlapping_links(free_ball_depth=0.0):
    """A three-link chain 1 m above a ground plane: link a pinned to the world, a short link b
    hinged at a's end, and link c hinged to b and folded back along a, 5 cm lower, so the boxes
    of a and c (not jointed to each other) overlap by 5 cm. A free ball on the plane far away
    starts in it by free_ball_depth."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    a = m.add_body("/a", 1.0, [0.002, 0.02, 0.02], pos=[0.2, 0, 1.0])
    b = m.add_body("/b", 0.2, [0.001] * 3, pos=[0.4, 0, 0.975])
    c = m.add_body("/c", 1.0, [0.002, 0.02, 0.02], pos=[0.2, 0, 0.95])
    m.add_joint("/pin", -1, a, pos0=[0, 0, 1.0], pos1=[-0.2, 0, 0], locked=REVOLUTE_Y)
    m.add_joint("/elbow", a, b, pos0=[0.2, 0, 0], pos1=[0, 0, 0.025], locked=REVOLUTE_Y)
    m.add_joint("/wrist", b, c, pos0=[0, 0, -0.025], pos1=[0.2, 0, 0], locked=REVOLUTE_Y)
    ball = m.add_body("/ball", 1.0, [0.004] * 3, pos=[5.0, 0, 0.1 - free_ball_depth])
    specs = [
        {"type": SHAPE_BOX, "body": a, "dims": (0.15, 0.05, 0.05), "path": "/a/box"},
        {"type": SHAPE_BOX, "body": c, "dims": (0.15, 0.05, 0.05), "path": "/c/box"},
        {"type": SHAPE_SPHERE, "body": ball, "dims": (0.1, 0, 0), "path": "/ball/sphere"},
        {"type": SHAPE_PLANE, "body": -1, "dims": (0, 0, 0), "path": "/ground"},
    ]
    m.shapes = table_from_specs(specs)
    return m


def test_overlapping_links_are_not_collided_and_named(caplog):
    with caplog.at_level(logging.WARNING):
        run = Solver(chain_with_overlapping_links(), "cpu").run(50, 10, 1e-3)
    msgs = [r.getMessage() for r in caplog.records if "overlap in the input pose" in r.getMessage()]
    assert len(msgs) == 1 and "/a/box / /c/box" in msgs[0] and "1 collider pair" in msgs[0]
    # the folded chain swings down: it converges and stays finite, no step reduced
    assert run.reduced_steps[0] == 0
    assert np.all(np.isfinite(run.pos)) and run.max_constraint_error[0] < 1e-9


def test_a_free_body_starting_in_the_ground_is_still_pushed_out():
    run = Solver(chain_with_overlapping_links(free_ball_depth=0.02), "cpu").run(50, 10, 1e-3)
    z = run.pos[:, 0, 3, 2]
    assert z[0] < 0.0801  # it started 2 cm in
    assert z[-1] > 0.1 - 1e-3  # and rests on the plane after 0.5 s


def test_links_that_overlap_only_once_assembled_are_not_collided(caplog):
    """The same chain with link c authored 6 cm lower (1 cm clear of a in the input pose) but its
    wrist frame unchanged: the assembly puts c back on its joint, folded into a. That pair is
    named and dropped the same way (Newton's four_link_chain_articulation: joint frames 1 m off,
    links 10 cm inside each other once assembled). Without gravity nothing then moves."""
    m = chain_with_overlapping_links()
    m.gravity = np.zeros(3)
    m.body_pos[:, 2] += [0.0, 0.0, -0.06]  # link c, clear of a
    with caplog.at_level(logging.WARNING):
        solver = Solver(m, "cpu")
        run = solver.run(20, 10, 1e-3)
    msgs = [r.getMessage() for r in caplog.records]
    assert not any("overlap in the input pose" in s for s in msgs)
    once = [s for s in msgs if "overlap once the bodies are moved onto their joints" in s]
    assert len(once) == 1 and "/a/box / /c/box" in once[0]
    assert [tuple(p) for p in solver.contact_info["pairs"]].count((0, 1)) == 0  # a-c is gone
    # nothing pushes c out of a: collided, the pair drives the chain 0.1 m in this time; left
    # alone it stays within 1e-6 m (1.6e-7: the start velocity the assembly's last correction leaves)
    assert np.max(np.abs(run.pos[-1] - run.pos[0])) < 1e-6
    assert run.max_constraint_error[0] < 1e-9
