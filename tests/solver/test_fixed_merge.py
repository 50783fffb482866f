"""Bodies welded by fixed joints run as one rigid body (usdphys.types.fixedmerge): the same
motion as the welds as joints, every original body's pose back, and a light body welded between
heavy ones no longer stalls the step. Models built in code (SI, xyzw)."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from usdphys.simulate import simulate
from usdphys.solver import Solver
from usdphys.types.fixedmerge import merge_fixed_joints
from usdphys.types.model import Model

LOCK_ALL = [True] * 6
REVOLUTE_Y = [True] * 4 + [False, True]


def zrot(angle):
    return [0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)]


def welded_pendulum(spin=(0.0, 0.0, 0.0), light=0.5):
    """A 2 kg link on a ball joint to the world, a second body welded to its end at a turned
    frame, and a third hinged to that one; the welded body's mass `light` kg."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    a = m.add_body("/a", 2.0, [0.01, 0.05, 0.05], pos=[0.5, 0, 1], com_pos=[0.05, 0.01, 0], ang_vel=spin)
    b = m.add_body("/b", light, [2e-3 * light, 4e-3 * light, 6e-3 * light], pos=[1.0, 0.1, 1.0], rot=zrot(0.6),
                   com_pos=[0.01, 0, 0.02], com_rot=[math.sin(0.1), 0, 0, math.cos(0.1)])
    c = m.add_body("/c", 1.0, [0.01, 0.02, 0.02], pos=[1.0 + 0.5 * math.cos(0.6), 0.1 + 0.5 * math.sin(0.6), 1.0],
                   rot=zrot(0.6))
    m.add_joint("/pin", -1, a, pos0=[0, 0, 1], pos1=[-0.5, 0, 0], locked=[True] * 3 + [False] * 3)
    m.add_joint("/weld", a, b, pos0=[0.5, 0.1, 0], pos1=[0, 0, 0], rot1=zrot(-0.6), locked=LOCK_ALL, kind="fixed")
    m.add_joint("/hinge", b, c, pos0=[0.25, 0, 0], pos1=[-0.25, 0, 0], locked=REVOLUTE_Y)
    return m


def test_merged_weld_moves_as_the_weld_joint():
    """The welded pair as one body and as two bodies with a fixed joint: SHAKE holds a weld
    exactly as a rigid body's motion, so the two agree to the Newton tolerance (1e-12 m per step,
    1000 steps: 1.3e-11 m measured)."""
    m = welded_pendulum()
    merged, welds = merge_fixed_joints(m)
    assert merged.body_count == 2 and merged.joint_paths == ["/pin", "/hinge"]
    assert math.isclose(merged.body_mass[0], 2.5)
    ref = Solver(m, "cpu").run(100, 10, 1e-4)
    got = Solver(merged, "cpu").run(100, 10, 1e-4)
    pos, rot = welds.expand(got.pos, got.rot)
    assert np.abs(ref.pos[-1] - ref.pos[0]).max() > 0.05  # it swings
    assert np.abs(pos - ref.pos).max() < 1e-9
    assert np.abs(np.abs(np.sum(rot * ref.rot, axis=-1)) - 1.0).max() < 1e-12


def test_welded_bodies_with_different_velocities_share_their_momentum():
    """The input spins the link and leaves the welded body at rest: the joints make the pair
    move together in the first step, conserving momentum (a perfectly inelastic weld); the merged
    body starts with that momentum. The two converge as dt^2 (1.8e-11, 4.5e-12, 1.1e-12 m at
    1e-4, 5e-5, 2.5e-5 s)."""
    m = welded_pendulum(spin=(0.3, 1.0, 0.2))
    merged, welds = merge_fixed_joints(m)
    diffs = []
    for sub, h in ((10, 1e-4), (20, 5e-5)):
        ref = Solver(m, "cpu").run(100, sub, h)
        got = Solver(merged, "cpu").run(100, sub, h)
        pos, _ = welds.expand(got.pos, got.rot)
        diffs.append(np.abs(pos - ref.pos).max())
    assert diffs[0] < 1e-9 and diffs[1] < 0.35 * diffs[0]


def test_simulate_reports_every_body_of_a_merged_weld(caplog):
    """simulate() merges the weld and writes back all three bodies; a recording run keeps the
    weld as a joint (its reaction is recorded); both give the same poses."""
    m = welded_pendulum(light=0.01)
    merged = simulate(m, duration=0.2, dt=1e-3, fps=50)
    kept = simulate(welded_pendulum(light=0.01), duration=0.2, dt=1e-3, fps=50, record="joints")
    assert merged.body_paths == ["/a", "/b", "/c"] and merged.positions.shape[2] == 3
    assert np.abs(merged.positions - kept.positions).max() < 1e-9
    assert any(c.prim == "/weld" for c in kept.channels)  # the weld's reaction, recorded


def test_a_light_anchor_welded_between_heavy_bodies_runs_merged_or_not():
    """dm_control's dog hangs each toe on a 0.3 g 'anchor' welded to a 165 g foot: a 32 g toe on
    a hinge with a limit, swinging onto it. As a body of its own, the anchor's 5e-9 kg m^2
    answered every impulse error with a large turn and steps were halved (until limits that held
    kept their impulse as the next step's warm start); merged into the foot it is not there. Both
    now run without a halved step and agree, converging to each other as dt^2 (2.2e-8 m at 1 ms,
    5.5e-9 m at 0.5 ms: the anchor's own inertia and the split of the step's impulses are what
    differ)."""
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    foot = m.add_body("/foot", 0.165, [2e-5, 1e-4, 1e-4], pos=[0.05, 0, 1.0])
    anchor = m.add_body("/anchor", 3e-4, [5e-9, 5e-9, 5e-9], pos=[0.1, 0, 1.0])
    toe = m.add_body("/toe", 0.032, [1e-6, 9e-6, 9e-6], pos=[0.13, 0, 1.0])
    m.add_joint("/ankle", -1, foot, pos0=[0, 0, 1.0], pos1=[-0.05, 0, 0], locked=REVOLUTE_Y)
    m.add_joint("/anchor_weld", foot, anchor, pos0=[0.05, 0, 0], pos1=[0, 0, 0], locked=LOCK_ALL, kind="fixed")
    j = m.add_joint("/toe_hinge", anchor, toe, pos0=[0, 0, 0], pos1=[-0.03, 0, 0], locked=REVOLUTE_Y)
    m.joint_lower[j, 4], m.joint_upper[j, 4] = -0.3, 0.3
    merged, welds = merge_fixed_joints(m)
    diffs = []
    for sub, h in ((10, 1e-3), (20, 5e-4)):
        run = Solver(merged, "cpu").run(100, sub, h)
        alone = Solver(m, "cpu").run(100, sub, h)
        for r in (run, alone):
            assert r.reduced_steps[0] == 0 and r.max_constraint_error[0] < 1e-9
        pos, _ = welds.expand(run.pos, run.rot)
        diffs.append(np.abs(pos - alone.pos).max())
    assert np.abs(alone.pos[-1] - alone.pos[0]).max() > 0.2  # it swings (0.26 m)
    assert diffs[0] < 1e-7 and diffs[1] < 0.35 * diffs[0], diffs


def test_welds_that_disagree_are_not_merged():
    """A second weld between the same pair 0.1 m off the first: the group's welds cannot all
    hold, so it stays as joints (the assembly then says which is off)."""
    m = welded_pendulum()
    m.add_joint("/weld2", 0, 1, pos0=[0.5, 0.2, 0], pos1=[0, 0, 0], locked=LOCK_ALL, kind="fixed")  # 0.1 m off
    merged, welds = merge_fixed_joints(m)
    assert welds is None and merged is m
