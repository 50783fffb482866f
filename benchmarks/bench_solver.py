"""usdphys solver vs Newton (XPBD, Featherstone): world-steps per second, loop error, cold start.

    python benchmarks/bench_solver.py [--device cpu] [--steps 2000] [--worlds 1 256]

Newton is optional (`pip install -e .[bench]`); without it only usdphys is measured.
Both simulators get the same models (assets/usd/pendulum.usda, fourbar.usda: planar
four-bar closed with 3-D revolute joints), dt = 1 ms, gravity 9.81. World-steps/s =
worlds * steps / wall time, measured after a warm-up (kernels compiled). Loop error: the
largest distance between the two anchor points of any joint at the end of the run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _timing import time_solver

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets" / "usd"
DT = 1e-3


def _qrot(q, v):
    u, w = q[..., :3], q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _gap(model, pos, rot):
    """Largest anchor-point distance over all joints; model: anything with joint_* arrays."""
    worst = 0.0
    quat_rotate = _qrot
    for j in range(len(model.joint_body0)):
        pts = []
        for b, p in ((model.joint_body0[j], model.joint_pos0[j]), (model.joint_body1[j], model.joint_pos1[j])):
            pts.append(np.broadcast_to(p, pos[..., 0, :].shape) if b < 0 else pos[..., b, :] + quat_rotate(rot[..., b, :], p))
        worst = max(worst, float(np.max(np.linalg.norm(pts[0] - pts[1], axis=-1))))
    return worst


def bench_usdphys(name, worlds, steps, device):
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(str(ASSETS / f"{name}.usda"))
    model = model.replicate(worlds)
    rate, run, _ = time_solver(model, steps, DT, device)
    pos, rot = model.prim_from_com(run.pos[-1], run.rot[-1])
    return rate, _gap(model, pos, rot)


# Newton runs in a worker process: importing newton loads the newton-usd-schemas plugin,
# whose scalar NewtonJointAPI cannot share a process with usdphys' per-DOF one.
_FIELDS = ("body_pos", "body_rot", "body_mass", "body_inertia", "joint_body0", "joint_body1", "joint_pos0",
           "joint_pos1")


def save_fields(src, path):
    """Write a Model's _FIELDS arrays for a peer worker process (read back by load_fields)."""
    np.savez(path, **{f: getattr(src, f) for f in _FIELDS})


def _export(name, path):
    from usdphys.usd.reader import read_stage

    save_fields(read_stage(str(ASSETS / f"{name}.usda"))[0], path)


def newton_model(src, worlds, device):
    """Newton model of `src`'s bodies and Y-axis revolute joints (anything with the _FIELDS
    arrays), replicated to `worlds` worlds, finalized on `device`."""
    import newton
    import warp as wp

    nb = len(src.body_mass)
    b = newton.ModelBuilder(up_axis=newton.Axis.Z)
    ids = []
    for i in range(nb):
        p, q = src.body_pos[0, i], src.body_rot[0, i]
        inertia = np.diag(src.body_inertia[i])
        ids.append(b.add_link(xform=wp.transform(wp.vec3(*p), wp.quat(*q)), mass=float(src.body_mass[i]),
                              inertia=wp.mat33(*inertia.flatten()), lock_inertia=True))
    joints = []
    for j in range(len(src.joint_body0)):
        b0, b1 = int(src.joint_body0[j]), int(src.joint_body1[j])
        joints.append(b.add_joint_revolute(b0 if b0 < 0 else ids[b0], ids[b1],
                                           parent_xform=wp.transform(wp.vec3(*src.joint_pos0[j]), wp.quat_identity()),
                                           child_xform=wp.transform(wp.vec3(*src.joint_pos1[j]), wp.quat_identity()),
                                           axis=newton.Axis.Y))
    try:
        b.add_articulation(joints)  # XPBD solves joints independently of any tree
    except Exception:  # a loop: articulate the tree, keep the closing joint separate
        b.add_articulation(joints[:-1])
        b.add_articulation(joints[-1:])
    if worlds > 1:
        scene = newton.ModelBuilder(up_axis=newton.Axis.Z)
        scene.replicate(b, worlds)
        b = scene
    return b.finalize(device=device)


def load_fields(npz):
    """The _FIELDS arrays saved by save_fields, as attributes of one object (newton_model's input)."""
    data = np.load(npz)
    return SimpleNamespace(**{f: data[f] for f in _FIELDS})


def newton_worker(npz, worlds, steps, device, solver_name):
    import newton
    import warp as wp

    src = load_fields(npz)
    nb = len(src.body_mass)
    model = newton_model(src, worlds, device)
    if solver_name == "xpbd":
        solver = newton.solvers.SolverXPBD(model)
    else:
        solver = newton.solvers.SolverFeatherstone(model)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    control = model.control()
    for _ in range(10):  # warm-up (kernel compile / load)
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    wp.synchronize_device(device)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    wp.synchronize_device(device)
    el = time.perf_counter() - t0
    print(f"CPURATE {worlds * steps / max(time.process_time() - c0, 1e-9)}")  # world-steps per CPU second
    if solver_name == "featherstone":
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    bq = s0.body_q.numpy().reshape(worlds, nb, 7).astype(float)
    print(f"RESULT {worlds * steps / el} {_gap(src, bq[..., :3], bq[..., 3:])}")


def bench_newton(name, worlds, steps, device, solver_name):
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "model.npz")
        _export(name, npz)
        out = subprocess.run([sys.executable, __file__, "--newton-worker", npz, str(worlds), str(steps), device,
                              solver_name], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            if line.startswith("RESULT "):
                _, sps, gap = line.split()
                return float(sps), float(gap)
        raise RuntimeError((out.stderr.strip().splitlines() or ["newton worker failed"])[-1])


def cold_start(device):
    """Seconds from a fresh process to the first simulated frame, empty Warp kernel cache."""
    with tempfile.TemporaryDirectory() as cache:
        code = (
            "import time; t0 = time.perf_counter()\n"
            "import warp as wp\n"
            f"wp.config.kernel_cache_dir = {cache!r}\n"
            "from usdphys.simulate import simulate\n"
            f"simulate({str(ASSETS / 'pendulum.usda')!r}, duration=1/60, device={device!r})\n"
            "print(time.perf_counter() - t0)\n"
        )
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        total = time.perf_counter() - t0
        return total, float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--newton-worker":
        npz, worlds, steps, device, solver_name = argv[1:6]
        newton_worker(npz, int(worlds), int(steps), device, solver_name)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--worlds", type=int, nargs="+", default=[1, 256])
    ap.add_argument("--no-newton", action="store_true")
    args = ap.parse_args(argv)
    import importlib.util

    if importlib.util.find_spec("newton") is not None:
        have_newton = not args.no_newton
    else:
        have_newton = False
        print("newton not installed: `pip install newton` for the side-by-side columns")
    print(f"device {args.device}, dt {DT} s, {args.steps} steps; world-steps/s (loop error m)")
    print(f"{'model':10s} {'worlds':>6s} {'usdphys':>22s} {'newton xpbd':>22s} {'newton featherstone':>22s}")
    for name in ("pendulum", "fourbar"):
        for worlds in args.worlds:
            steps = args.steps  # every world count the same steps: a short run times the run's set-up
            cells = []
            sps, gap = bench_usdphys(name, worlds, steps if worlds > 1 or name != "pendulum" else 10 * steps, args.device)
            cells.append(f"{sps:12.4g} ({gap:7.1e})")
            for sname in ("xpbd", "featherstone"):
                if not have_newton:
                    cells.append(f"{'-':>22s}")
                    continue
                if sname == "featherstone" and name == "fourbar":
                    cells.append(f"{'n/a (no loops)':>22s}")
                    continue
                try:
                    nsps, ngap = bench_newton(name, worlds, steps, args.device, sname)
                    cells.append(f"{nsps:12.4g} ({ngap:7.1e})")
                except Exception as exc:  # report, keep going
                    print(f"  newton {sname} {name} x{worlds}: {exc}", file=sys.stderr)
                    cells.append(f"{'error':>22s}")
            print(f"{name:10s} {worlds:6d} " + " ".join(f"{c:>22s}" for c in cells), flush=True)
    total, inproc = cold_start(args.device)
    print(f"cold start (empty kernel cache) to first frame: {total:.2f} s process wall, {inproc:.2f} s after interpreter start")


if __name__ == "__main__":
    main()
