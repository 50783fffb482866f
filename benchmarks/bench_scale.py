"""Scale: one world of a hanging chain of N thin rods, usdphys vs MuJoCo (Euler, RK4) and Newton Featherstone.

    python benchmarks/bench_scale.py [--n 10 30 100 300] [--joint revolute|spherical] [--no-newton] [--clock cpu|wall]
                                     [--repeat 3] [--steps-per-call K] [--record GROUPS]

The chain (benchmarks/chain.py): N rods of 10 cm, 1 kg, axial inertia 1e-6 of the transverse,
revolute joints about y (or spherical), released straight at 45 deg from the vertical, dt = 1 ms,
gravity 9.81, one world, CPU. Every simulator runs the same number of steps from the same
start (max(200, 40000 / N): at least 0.2 s of swing), after a warm-up; steps/s = steps / time,
where time is the process's CPU time by default (every simulator here steps on one thread; on
a machine shared with other jobs CPU time is what stays comparable between runs) or the wall
clock (--clock wall). Memory per world: for usdphys every per-world array of the solver (state, scratch,
diagnostics; the model is shared by all worlds), measured as the difference between a
2-world and a 1-world solver; for MuJoCo what one MjData allocates (its arena and buffer).
Newton's memory is not measured (its state is spread over the model). The tip column is the
free end's height (m) at the end of the run: the simulators integrate the same motion
(MuJoCo Euler is first order, so it differs the most). Newton is stepped for at most
NEWTON_BUDGET seconds per chain; where that ends the run early its rate is measured on the steps
it did and its tip is not shown (nan). --steps-per-call K: usdphys advances in Solver.run calls
of K steps (a loop of short calls; each call's launches and result copies are counted), as MuJoCo does
here anyway (one mj_step call from Python per step); Newton is unchanged. --record GROUPS:
each usdphys call also records GROUPS (e.g. bodies: velocities, which MuJoCo has in qvel).
With N = 30 and 300 both in the table, the step-time ratio of the two is printed twice: from the
table's rows, and from runs of the two chains taken in turn (interleaved_ratio says why).

MuJoCo builds the chain in MJCF (nested bodies, one hinge or ball joint each, the rods' inertia
given explicitly, no geoms, so nothing collides). Newton runs in a worker process (importing
newton loads its scalar NewtonJointAPI, which cannot share a process with usdphys').
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time

import numpy as np

from chain import AXIAL, LINK, MASS, TILT, TRANSVERSE, chain_model

DT = 1e-3
CLOCK = time.process_time  # --clock wall: time.perf_counter
NEWTON_BUDGET = 60.0  # s of stepping for Newton per chain; its rate is then measured on the steps done


def steps_for(n: int) -> int:
    return max(200, 40000 // n)


def _struct_bytes(obj, seen=None) -> int:
    """Bytes held by the Warp arrays of a Warp struct instance (nested structs included)."""
    import warp as wp

    seen = set() if seen is None else seen
    total = 0
    for name in dir(obj):
        if name.startswith("_"):
            continue
        v = getattr(obj, name)
        if isinstance(v, wp.array):
            if id(v) not in seen:
                seen.add(id(v))
                total += v.capacity
        elif hasattr(v, "_cls"):  # a nested Warp struct
            total += _struct_bytes(v, seen)
    return total


def _solver_bytes(solver) -> int:
    return sum(_struct_bytes(s) for s in (solver.st, solver.rs, solver.es, solver.cs, solver.sc, solver.dg))


def bench_usdphys(n: int, joint: str, repeat: int = 1, per_call: int = 0, record=None):
    from usdphys.solver import Solver

    model = chain_model(n, joint)
    steps = steps_for(n)
    per_call = per_call if 0 < per_call < steps else steps
    calls = [per_call] * (steps // per_call) + ([steps % per_call] if steps % per_call else [])
    Solver(model, "cpu").run(1, 10, DT)  # warm-up: kernels compiled / loaded
    rate = 0.0
    for _ in range(repeat):  # the best of `repeat` runs from the same start
        solver = Solver(model, "cpu")
        worst = 0.0  # the largest joint residual of all calls
        t0 = CLOCK()
        for k in calls:
            run = solver.run(1, k, DT, record=record)
            worst = max(worst, float(run.max_constraint_error[0]))
        rate = max(rate, steps / (CLOCK() - t0))
    per_world = _solver_bytes(Solver(model.replicate(2), "cpu")) - _solver_bytes(solver)
    tip = run.pos[-1, 0, -1] + (LINK / 2) * _axis_z(run.rot[-1, 0, -1])
    stats = solver.newton_stats()
    return rate, per_world, float(tip[2]), worst, \
        stats["factorisations"][0] / steps, solver.dm.pattern.count, solver.R


def _axis_z(q):
    """Body z axis in the world of an xyzw quaternion."""
    x, y, z, w = q
    return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])


def chain_mjcf(n: int, joint: str, integrator: str, limit: float | None = None) -> str:
    """The chain in MJCF: body k's frame at rod k's top end, the rod along its -z; limit: each
    hinge limited to +-limit deg (bench_limits.py)."""
    rng = "" if limit is None else f' limited="true" range="{-limit} {limit}"'
    jt = f'<joint type="hinge" axis="0 1 0"{rng}/>' if joint == "revolute" else '<joint type="ball"/>'
    inertial = (f'<inertial pos="0 0 {-LINK / 2}" mass="{MASS}" '
                f'diaginertia="{TRANSVERSE!r} {TRANSVERSE!r} {AXIAL!r}"/>')
    body = ""
    for k in reversed(range(n)):
        pos = "0 0 0" if k == 0 else f"0 0 {-LINK}"
        extra = f' euler="0 {-math.degrees(TILT)!r} 0"' if k == 0 else ""
        body = f'<body name="rod{k}" pos="{pos}"{extra}>{jt}{inertial}{body}</body>'
    return (f'<mujoco><compiler angle="degree"/><option timestep="{DT}" integrator="{integrator}" '
            f'gravity="0 0 -9.81"><flag contact="disable"/></option><worldbody>{body}</worldbody></mujoco>')


def bench_mujoco(n: int, joint: str, integrator: str, repeat: int = 1, limit: float | None = None):
    import mujoco

    model = mujoco.MjModel.from_xml_string(chain_mjcf(n, joint, integrator, limit))
    data = mujoco.MjData(model)
    for _ in range(10):
        mujoco.mj_step(model, data)
    steps = steps_for(n)
    rate = 0.0
    for _ in range(repeat):
        mujoco.mj_resetData(model, data)
        t0 = CLOCK()
        for _ in range(steps):
            mujoco.mj_step(model, data)
        rate = max(rate, steps / (CLOCK() - t0))
    # the tip: the last body's frame origin plus its rod (along its -z)
    R = data.xmat[-1].reshape(3, 3)
    tip = data.xpos[-1] + R @ np.array([0.0, 0.0, -LINK])
    return rate, int(data.narena + data.nbuffer), float(tip[2])


def newton_worker(n: int, joint: str, clock: str):
    global CLOCK
    CLOCK = time.perf_counter if clock == "wall" else time.process_time
    import newton
    import warp as wp

    src = chain_model(n, joint)
    pos, rot = src.body_pos[0], src.body_rot[0]
    b = newton.ModelBuilder(up_axis=newton.Axis.Z)  # gravity 9.81 along -z by default
    ids, joints = [], []
    for i in range(n):
        inertia = np.diag(src.body_inertia[i])
        ids.append(b.add_link(xform=wp.transform(wp.vec3(*pos[i]), wp.quat(*rot[i])), mass=float(src.body_mass[i]),
                              inertia=wp.mat33(*inertia.flatten()), lock_inertia=True))
    for j in range(n):
        b0, b1 = int(src.joint_body0[j]), int(src.joint_body1[j])
        parent = -1 if b0 < 0 else ids[b0]
        px = wp.transform(wp.vec3(*src.joint_pos0[j]), wp.quat(*src.joint_rot0[j]))
        cx = wp.transform(wp.vec3(*src.joint_pos1[j]), wp.quat(*src.joint_rot1[j]))
        if joint == "revolute":
            joints.append(b.add_joint_revolute(parent, ids[b1], parent_xform=px, child_xform=cx, axis=newton.Axis.Y))
        else:
            joints.append(b.add_joint_ball(parent, ids[b1], parent_xform=px, child_xform=cx))
    b.add_articulation(joints)
    model = b.finalize(device="cpu")
    solver = newton.solvers.SolverFeatherstone(model)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    control = model.control()
    for _ in range(10):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    steps = steps_for(n)
    wp.synchronize_device("cpu")
    t0 = CLOCK()
    done = 0
    while done < steps and CLOCK() - t0 < NEWTON_BUDGET:  # a slow peer is timed on fewer steps
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        done += 1
    wp.synchronize_device("cpu")
    rate = done / (CLOCK() - t0)
    tip = float("nan")  # only comparable after the same number of steps
    if done == steps:
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        bq = s0.body_q.numpy()[-1].astype(float)
        tip = (bq[:3] + (LINK / 2) * _axis_z(bq[3:]))[2]
    print(f"RESULT {rate} {tip}")


def bench_newton(n: int, joint: str, clock: str):
    out = subprocess.run([sys.executable, __file__, "--newton-worker", str(n), joint, clock], capture_output=True,
                         text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            _, rate, tip = line.split()
            return float(rate), float(tip)
    raise RuntimeError((out.stderr.strip().splitlines() or ["newton worker failed"])[-1])


def _mb(b):
    return f"{b / 1e6:.3f} MB"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--newton-worker":
        newton_worker(int(argv[1]), argv[2], argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 30, 100, 300])
    ap.add_argument("--joint", choices=["revolute", "spherical"], default="revolute")
    ap.add_argument("--no-newton", action="store_true")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu", help="CPU time of the process, or wall clock")
    ap.add_argument("--repeat", type=int, default=3,
                    help="usdphys and MuJoCo: the best of this many runs (a shared machine's noise is ~10 %%)")
    ap.add_argument("--steps-per-call", type=int, default=0,
                    help="usdphys: steps per Solver.run call (default: all in one call)")
    ap.add_argument("--record", default=None,
                    help="usdphys: what each call records besides poses, e.g. 'bodies' (velocities, as MuJoCo's qvel)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    calls = f"usdphys in calls of {args.steps_per_call} steps, " if args.steps_per_call > 0 else ""
    calls += f"recording {args.record}, " if args.record else ""
    print(f"chain of N thin rods, {args.joint} joints, one world, CPU, dt {DT} s; {calls}steps/s ({args.clock} time) "
          f"[memory per world] (tip height m at the end)")
    print(f"{'N':>4} {'rows':>5} {'entries':>7} {'usdphys':>34} {'mujoco euler':>30} {'mujoco rk4':>30} "
          f"{'newton featherstone':>22}")
    base = None
    for n in args.n:
        rate, mem, tip, err, fact, entries, rows = bench_usdphys(n, args.joint, args.repeat, args.steps_per_call,
                                                                   args.record)
        eu = bench_mujoco(n, args.joint, "Euler", args.repeat)
        rk = bench_mujoco(n, args.joint, "RK4", args.repeat)
        nw = "-"
        if not args.no_newton:
            try:
                r, t = bench_newton(n, args.joint, args.clock)
                nw = f"{r:.4g} ({t:.4f})"
            except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
                nw = f"failed: {str(exc)[:40]}"
        print(f"{n:>4} {rows:>5} {entries:>7} {f'{rate:.4g} [{_mb(mem)}] ({tip:.4f})':>34} "
              f"{f'{eu[0]:.4g} [{_mb(eu[1])}] ({eu[2]:.4f})':>30} {f'{rk[0]:.4g} [{_mb(rk[1])}] ({rk[2]:.4f})':>30} "
              f"{nw:>22}", flush=True)
        print(f"      usdphys: largest joint residual {err:.1e}, factorisations per step {fact:.2f}; "
              f"x MuJoCo Euler {rate / eu[0]:.2f}, x RK4 {rate / rk[0]:.2f}", flush=True)
        if base is None and n == 30:
            base = rate
        if base is not None and n == 300 and args.steps_per_call <= 0:  # the target is about the step
            print(f"      step time N=300 / N=30: {base / rate:.1f}x (target <= 12x)", flush=True)
            print(f"      the same, the two chains run in turn ({args.repeat} rounds, best of each): "
                  f"{interleaved_ratio(args.joint, args.repeat, args.record):.1f}x", flush=True)


def interleaved_ratio(joint: str, rounds: int, record=None) -> float:
    """Step time of N = 300 over N = 30 from usdphys runs of the two chains taken in turn. The
    table measures them minutes apart, with the peers in between, and a shared machine's speed
    drifts by more than the 12x target's margin over that time; taken in turn, both sides of the
    ratio see the same machine."""
    best30 = best300 = 0.0
    for _ in range(rounds):
        best30 = max(best30, bench_usdphys(30, joint, 1, 0, record)[0])
        best300 = max(best300, bench_usdphys(300, joint, 1, 0, record)[0])
    return best30 / best300


if __name__ == "__main__":
    main()
