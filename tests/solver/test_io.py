"""usdphys.solver.io: the model is built once and shared by all worlds, the state carries a world
axis, the scratch starts with no reusable factorisation."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from usdphys.solver import io
from usdphys.solver.warpinit import init_warp
from usdphys.usd.reader import read_stage

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "usd"


@pytest.fixture(scope="module")
def fourbar():
    init_warp()
    model, _ = read_stage(str(ASSETS / "fourbar.usda"))
    return model


def test_put_model_holds_bodies_rows_and_contact(fourbar):
    dm = io.put_model(fourbar, "cpu")
    m = dm.data
    assert (m.n_bodies, m.n_rows) == (fourbar.body_count, dm.rows.count)
    assert dm.row_count == dm.rows.count > 0
    assert dm.contact.n_pairs == 0 and m.equal_only == 1
    assert m.row_b0.shape == (dm.rows.count,)
    # per-world parameters are [world, body]; one world here
    assert m.inv_mass.shape == (1, fourbar.body_count)
    np.testing.assert_array_equal(m.inv_mass.numpy()[0, : fourbar.body_count], dm.inv_mass[: fourbar.body_count])


def test_state_of_many_worlds_repeats_a_one_world_model(fourbar):
    dm = io.put_model(fourbar, "cpu")
    one = io.make_state(fourbar, dm, None, "cpu").data
    many = io.make_state(fourbar, dm, 3, "cpu").data
    rep = io.make_state(fourbar.replicate(3), dm, None, "cpu").data
    for name in ("pos", "rot", "vel", "omega"):
        a = getattr(many, name).numpy()
        assert a.shape[0] == 3
        np.testing.assert_array_equal(a, getattr(rep, name).numpy())
        np.testing.assert_array_equal(a[1], getattr(one, name).numpy()[0])
    rows = io.make_state(fourbar, dm, 3, "cpu").rows
    assert rows.lwarm.shape == (3, dm.row_count) and not rows.lwarm.numpy().any()
    with pytest.raises(ValueError):
        io.make_state(fourbar.replicate(2), dm, 3, "cpu")


def test_scratch_starts_without_a_factorisation(fourbar):
    dm = io.put_model(fourbar, "cpu")
    sc = io.make_scratch(dm, 2, "cpu")
    # A and its factor hold only the pattern's entries per world: every pair of rows that
    # share a body (plus the loop's fill), fewer than the dense lower triangle
    assert sc.A.shape == sc.Lf.shape == (2, dm.pattern.count)
    b0, b1, R = np.asarray(dm.rows.b0), np.asarray(dm.rows.b1), dm.row_count
    shared = sum(1 for i in range(R) for j in range(i + 1) if {b0[i], b1[i]} & {b0[j], b1[j]} - {-1})
    assert shared <= dm.pattern.count < R * (R + 1) // 2
    np.testing.assert_array_equal(sc.fage.numpy(), [-1, -1])
    out = io.make_output(dm, 2, 5, "cpu")
    assert out.pos.shape == (6, 2, fourbar.body_count) and out.eff.shape == (6, 2, 1)


def _array_bytes(obj, seen) -> int:
    import warp as wp

    total = 0
    for name in dir(obj):
        if name.startswith("_"):
            continue
        v = getattr(obj, name)
        if isinstance(v, wp.array) and id(v) not in seen:
            seen.add(id(v))
            total += v.capacity
        elif hasattr(v, "_cls"):  # a nested Warp struct
            total += _array_bytes(v, seen)
    return total


def test_memory_estimate_covers_what_a_world_allocates():
    # a hanging chain of 40 rods on revolute joints: what one more world costs the solver (state,
    # scratch, diagnostics) is what usdphys.simulate.memory_estimate charges per world, to 10 %
    from usdphys.simulate import memory_estimate
    from usdphys.solver import Solver
    from usdphys.types.model import Model

    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    prev = -1
    for k in range(40):
        b = m.add_body(f"/rod{k}", 1.0, [1e-3, 1e-3, 1e-9], pos=[0.0, 0.0, -0.1 * k - 0.05])
        m.add_joint(f"/j{k}", prev, b, pos0=[0.0, 0.0, 0.0] if prev < 0 else [0.0, 0.0, -0.05],
                    pos1=[0.0, 0.0, 0.05], locked=[True, True, True, True, False, True])
        prev = b

    def per_world(worlds):
        s = Solver(m.replicate(worlds), "cpu")
        seen = set()
        return sum(_array_bytes(x, seen) for x in (s.st, s.rs, s.es, s.cs, s.sc, s.dg))

    allocated = per_world(2) - per_world(1)
    charged = memory_estimate(m, 0, 2)[0] - memory_estimate(m, 0, 1)[0]
    poses = 1 * 40 * 7 * 8 * 3 + 8 * 2  # one frame of poses and efforts per world, not solver memory
    assert 0.9 * (charged - poses) <= allocated <= charged - poses


def test_memory_estimate_covers_contact_buffers():
    """A chain of capsules over a ground plane: the contact state (at the capacity's cap) and the
    Delassus matrix through the joints are charged too; the estimate stays an upper bound of what
    one more world allocates, and within 3x of it (the capacity's cap against what the pairs need)."""
    from usdphys.simulate import memory_estimate
    from usdphys.solver import Solver
    from usdphys.types.model import Model
    from usdphys.types.shapes import SHAPE_CAPSULE, SHAPE_PLANE, table_from_specs

    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    prev = -1
    specs = [{"type": SHAPE_PLANE, "body": -1, "dims": (0, 0, 0)}]
    for k in range(10):
        b = m.add_body(f"/rod{k}", 1.0, [1e-3, 1e-3, 1e-5], pos=[0.1 * k + 0.05, 0.0, 1.0])
        m.add_joint(f"/j{k}", prev, b, pos0=[0.0, 0.0, 1.0] if prev < 0 else [0.05, 0.0, 0.0],
                    pos1=[-0.05, 0.0, 0.0], locked=[True, True, True, True, False, True])
        specs.append({"type": SHAPE_CAPSULE, "body": b, "dims": (0.01, 0.04, 0)})
        prev = b
    m.shapes = table_from_specs(specs)

    def per_world(worlds):
        s = Solver(m.replicate(worlds), "cpu")
        seen = set()
        return sum(_array_bytes(x, seen) for x in (s.st, s.rs, s.es, s.cs, s.sc, s.dg))

    allocated = per_world(2) - per_world(1)
    charged = memory_estimate(m, 0, 2)[0] - memory_estimate(m, 0, 1)[0] - (10 * 7 * 8 * 3 + 8 * 2)
    assert allocated <= charged <= 3 * allocated, (allocated, charged)


def test_the_frame_kernels_parameters_fit_cuda(fourbar):
    """advance_frames takes its structs by value: the descriptors of ~250 arrays. CUDA 12.1+ on
    Volta or newer accepts 32,764 bytes of kernel parameters (4,096 before); a struct that
    keeps growing would first fail on a GPU, which CI never has, so the size is checked here."""
    import ctypes

    from usdphys.solver import Solver

    solver = Solver(fourbar)
    out = io.make_output(solver.dm, 1, 2, "cpu")
    structs = [solver.m, solver.cm, solver.st, solver.rs, solver.es, solver.cs, solver.sc, solver.dg, out]
    scalars = 7 * 4 + 8 * 3  # 7 ints, 3 doubles
    size = sum(ctypes.sizeof(s.__ctype__()) for s in structs) + scalars
    assert 10000 < size <= 32764, size  # ~14 KB today


def test_the_step_kernels_take_no_one_dimensional_array_of_their_own():
    """Warp builds a CPU kernel with a 1-D array among its own parameters twice (for contiguous
    and strided arrays), and the second copy of the step is dead weight: 85 s of cold CPU build
    instead of 71. Arrays belong in the groups (structs); a tiny kernel may take them."""
    import warp as wp

    from usdphys.solver import step as K

    for kernel in (K.advance_frames, K.assemble_worlds, K.start_elements):
        one_d = [a.label for a in kernel.adj.args if isinstance(a.type, wp.array) and a.type.ndim == 1]
        assert one_d == [], (kernel.key, one_d)


def test_rows_share_world_frames_within_a_joint_only(fourbar):
    """The kernels compute a row's world frames once per run of rows with the same bodies and
    frames: a joint's rows form one run, and rows of another joint never join it."""
    dm = io.put_model(fourbar, "cpu")
    rows = dm.rows
    first = io.row_frame_runs(rows)
    assert len(set(first.tolist())) == len(fourbar.joint_body0) and first[0] == 0
    for i in range(1, len(first)):
        same = (rows.b0[i], rows.b1[i]) == (rows.b0[i - 1], rows.b1[i - 1]) and all(
            np.array_equal(np.asarray(a)[i], np.asarray(a)[i - 1]) for a in (rows.p0, rows.q0, rows.p1, rows.q1))
        assert (first[i] == first[i - 1]) == same and first[i] <= i
    np.testing.assert_array_equal(dm.data.row_frame.numpy()[: len(first)], first)
