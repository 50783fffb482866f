"""Contact benchmark: N spheres falling into an open box, usdphys vs Newton, world-steps/s.

    python benchmarks/bench_contact.py [--device cpu] [--spheres 8 64] [--worlds 1 16] [--time 1.0]

Scene (the same for every simulator): spheres of radius 5 cm and 1 kg on a grid 12 cm apart
(+-1 cm horizontal jitter, fixed seed), layered from z = 0.2 m, dropped into a box (floor plane + four walls, 10 cm inside the grid),
friction 0.5, restitution 0, gravity 9.81, dt = 1 ms. World-steps/s = worlds * steps / wall
time for the whole fall and settling (`--time` seconds simulated), after a warm-up that
compiles the kernels. Quality columns at the end of the run: the deepest overlap of any
sphere with another sphere or a wall (mm), and the highest sphere speed (m/s: settled ~ 0).

Newton (`pip install newton`, optional) runs in a worker process: importing newton loads the
newton-usd-schemas plugin, whose scalar NewtonJointAPI cannot share a process with usdphys.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import subprocess
import sys
import time

import numpy as np
from _timing import time_solver

DT = 1e-3
R = 0.05
SPACING = 0.12
MU = 0.5


def scene(n: int):
    """Sphere centres (n, 3) and the box half width (m)."""
    side = int(math.ceil(math.sqrt(n))) if n <= 16 else int(math.ceil(n ** (1 / 3) - 1e-9))
    pts = []
    k = 0
    while len(pts) < n:
        for i in range(side):
            for j in range(side):
                if len(pts) < n:
                    pts.append(((i - (side - 1) / 2) * SPACING, (j - (side - 1) / 2) * SPACING, 0.2 + k * SPACING))
        k += 1
    half = (side - 1) / 2 * SPACING + R + 0.1
    # +-1 cm of horizontal jitter (fixed seed) so that the columns topple into a pile
    jitter = np.random.default_rng(0).uniform(-0.01, 0.01, (n, 3)) * np.array([1.0, 1.0, 0.0])
    return np.array(pts) + jitter, half


def quality(pos: np.ndarray, vel: np.ndarray, half: float):
    """Deepest overlap (m) of any sphere with another or with the floor / walls; top speed."""
    worst = 0.0
    for p in pos:
        d = np.linalg.norm(p[:, None] - p[None], axis=-1) + np.eye(len(p)) * 1e9
        worst = max(worst, float((2 * R - d).max()))
        worst = max(worst, float((R - p[:, 2]).max()), float((np.abs(p[:, :2]) + R - half).max()))
    return max(worst, 0.0), float(np.linalg.norm(vel, axis=-1).max())


def bench_usdphys(n, worlds, steps, device):
    from usdphys.types.shapes import SHAPE_PLANE, SHAPE_SPHERE, table_from_specs
    from usdphys.types.model import Model

    pts, half = scene(n)
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    mat = {"static_friction": MU, "dynamic_friction": MU, "restitution": 0.0}
    s2 = math.sqrt(0.5)
    walls = [((0, 0, 0), (0, 0, 0, 1)), ((half, 0, 0), (0, -s2, 0, s2)), ((-half, 0, 0), (0, s2, 0, s2)),
             ((0, half, 0), (s2, 0, 0, s2)), ((0, -half, 0), (-s2, 0, 0, s2))]
    specs = [{"type": SHAPE_PLANE, "pos": p, "rot": q, **mat} for p, q in walls]
    for i, p in enumerate(pts):
        b = m.add_body(f"/s{i}", 1.0, [0.4 * R * R] * 3, pos=p)
        specs.append({"type": SHAPE_SPHERE, "body": b, "dims": (R, 0, 0), **mat})
    m.shapes = table_from_specs(specs)
    m = m.replicate(worlds)
    rate, run, solver = time_solver(m, steps, DT, device)
    _, _, vel, _ = solver.state()
    return rate, quality(run.pos[-1], vel, half)


def newton_worker(n, worlds, steps, device, solver_name):
    import newton
    import warp as wp

    pts, half = scene(n)
    cfg = newton.ModelBuilder.ShapeConfig(mu=MU, restitution=0.0)
    b = newton.ModelBuilder(up_axis=newton.Axis.Z)
    for p in pts:
        body = b.add_body(xform=wp.transform(wp.vec3(*p), wp.quat_identity()), mass=1.0,
                          inertia=wp.mat33(*np.diag([0.4 * R * R] * 3).flatten()), lock_inertia=True)
        b.add_shape_sphere(body, radius=R, cfg=cfg)
    if worlds > 1:
        scene_b = newton.ModelBuilder(up_axis=newton.Axis.Z)
        scene_b.replicate(b, worlds)
        b = scene_b
    b.add_ground_plane(cfg=cfg)
    for x, y, hx, hy in ((half + 0.05, 0, 0.05, half), (-half - 0.05, 0, 0.05, half),
                         (0, half + 0.05, half, 0.05), (0, -half - 0.05, half, 0.05)):
        b.add_shape_box(-1, xform=wp.transform(wp.vec3(x, y, 0.5), wp.quat_identity()), hx=hx, hy=hy, hz=0.5, cfg=cfg)
    model = b.finalize(device=device)
    if solver_name == "xpbd":
        solver = newton.solvers.SolverXPBD(model)
    elif solver_name == "mujoco":
        solver = newton.solvers.SolverMuJoCo(model)
    else:
        solver = newton.solvers.SolverSemiImplicit(model)
    s0, s1 = model.state(), model.state()
    control = model.control()

    def step(a, c):
        contacts = model.collide(a)
        solver.step(a, c, control, contacts, DT)

    for _ in range(10):  # warm-up (kernel compile / load); the measured run starts over
        step(s0, s1)
        s0, s1 = s1, s0
    s0, s1 = model.state(), model.state()
    wp.synchronize_device(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step(s0, s1)
        s0, s1 = s1, s0
    wp.synchronize_device(device)
    el = time.perf_counter() - t0
    bq = s0.body_q.numpy().reshape(worlds, n, 7).astype(float)
    bqd = s0.body_qd.numpy().reshape(worlds, n, 6).astype(float)
    ovl, vmax = quality(bq[..., :3], bqd[..., :3], half)
    print(f"RESULT {worlds * steps / el} {ovl} {vmax}")


def bench_newton(n, worlds, steps, device, solver_name):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--newton-worker", str(n), str(worlds), str(steps),
                          device, solver_name], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            _, sps, ovl, vmax = line.split()
            return float(sps), (float(ovl), float(vmax))
    raise RuntimeError((out.stderr.strip().splitlines() or ["newton worker failed"])[-1])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--newton-worker":
        n, worlds, steps, device, solver_name = argv[1:6]
        newton_worker(int(n), int(worlds), int(steps), device, solver_name)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--spheres", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--worlds", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--time", type=float, default=1.0, help="simulated seconds per run")
    ap.add_argument("--newton", nargs="*", default=["xpbd", "semi"], help="Newton solvers to run beside")
    args = ap.parse_args(argv)
    solvers = args.newton if importlib.util.find_spec("newton") is not None else []
    if importlib.util.find_spec("newton") is None:
        print("newton not installed: `pip install newton` for the side-by-side columns")
    steps = int(round(args.time / DT))
    print(f"device {args.device}, dt {DT} s, {steps} steps (fall and settle); "
          "world-steps/s [deepest overlap mm, top speed m/s at the end]")
    head = f"{'spheres':>7s} {'worlds':>6s} {'usdphys':>28s}" + "".join(f" {'newton ' + s:>28s}" for s in solvers)
    print(head)
    for n in args.spheres:
        for worlds in args.worlds:
            cells = []
            sps, (ovl, vmax) = bench_usdphys(n, worlds, steps, args.device)
            cells.append(f"{sps:10.4g} [{ovl * 1e3:6.3f}, {vmax:7.1e}]")
            for sname in solvers:
                try:
                    nsps, (novl, nvmax) = bench_newton(n, worlds, steps, args.device, sname)
                    cells.append(f"{nsps:10.4g} [{novl * 1e3:6.3f}, {nvmax:7.1e}]")
                except Exception as exc:  # report, keep going
                    print(f"  newton {sname} {n} x{worlds}: {exc}", file=sys.stderr)
                    cells.append(f"{'error':>28s}")
            print(f"{n:7d} {worlds:6d} " + " ".join(f"{c:>28s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
