"""Driven mechanisms: usdphys vs Newton XPBD, world-steps/s and tracking error.

    python benchmarks/bench_driven.py [--device cpu] [--steps 2000] [--worlds 1 256] [--no-newton]

1. Slider-crank (crank 0.25 m, rod 1 m, slider on a prismatic; the planar loop closed with
   3-D revolutes) whose crank is driven at a constant 1 rev/s, gravity 9.81, dt = 1 ms.
   usdphys: an MbdMotor in velocity mode (a rheonomic row: the crank angle is the integral
   of the speed exactly). Newton XPBD: the same bodies and joints, the crank joint with a
   velocity drive (target_vel = 2 pi rad/s, target_kd = 1e4; XPBD has no rheonomic motor).
   Reported: world-steps/s after warm-up, and after 2 s the crank angle error against
   2 pi t and the slider's distance from the closed form x = r cos q + sqrt(l^2 - r^2 sin^2 q)
   of the commanded angle (tracking + loop error, metres).
2. Chrono's own slider-crank (assets/chrono-yaml/data/yaml/mbs/mbs.yaml: speed motor with
   a repeated data function, a TSDA and a second slider; converted by usdphys.converters),
   usdphys only.

Newton runs in a worker process: `import newton` loads the newton-usd-schemas plugin, whose
scalar NewtonJointAPI cannot share a process with ours.
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _timing import time_solver

ROOT = Path(__file__).resolve().parents[1]
CHRONO = ROOT / "assets" / "chrono-yaml" / "data" / "yaml" / "mbs" / "mbs.yaml"
DT = 1e-3
R_CRANK, L_ROD, OMEGA = 0.25, 1.0, 2 * math.pi
DURATION = 2.0


def slider_crank_usda() -> str:
    r, l = R_CRANK, L_ROD

    def body(name, x, m, i):
        return f'''def Xform "{name}" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] ) {{
    double3 xformOp:translate = ({x}, 0, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    float physics:mass = {m}
    float3 physics:diagonalInertia = ({i}, {i}, {i})
}}
'''

    def rev(name, b0, b1, p0, p1, kind="PhysicsRevoluteJoint", axis="Y"):
        rel0 = f"rel physics:body0 = </W/{b0}>" if b0 else ""
        return f'''def {kind} "{name}" {{
    {rel0}
    rel physics:body1 = </W/{b1}>
    point3f physics:localPos0 = ({p0}, 0, 0)
    point3f physics:localPos1 = ({p1}, 0, 0)
    uniform token physics:axis = "{axis}"
}}
'''

    parts = [body("crank", r / 2, 1.0, 0.0625), body("rod", r + l / 2, 0.5, 0.0625), body("slider", r + l, 2.0, 0.125),
             rev("crank_pin", None, "crank", 0.0, -r / 2), rev("crank_rod", "crank", "rod", r / 2, -l / 2),
             rev("rod_slider", "rod", "slider", l / 2, 0.0), rev("rail", None, "slider", r + l, 0.0,
                                                                 "PhysicsPrismaticJoint", "X"),
             f'''def MbdMotor "drive" ( prepend apiSchemas = ["MbdTimeFunctionAPI"] ) {{
    rel mbd:joint = </W/crank_pin>
    uniform token mbd:dof = "angle"
    uniform token mbd:mode = "velocity"
    uniform token mbd:function:type = "constant"
    double mbd:function:value = {math.degrees(OMEGA)}
}}
''']
    inner = "".join(parts).replace("\n", "\n    ")
    return f'''#usda 1.0
(
    defaultPrim = "W"
    metersPerUnit = 1
    kilogramsPerUnit = 1
    upAxis = "Z"
)
def PhysicsScene "Scene" {{
    vector3f physics:gravityDirection = (0, 0, -1)
    float physics:gravityMagnitude = 9.81
}}
def Xform "W" {{
    {inner}
}}
'''


def slider_x(q):
    return R_CRANK * np.cos(q) + np.sqrt(L_ROD ** 2 - (R_CRANK * np.sin(q)) ** 2)


def _qrot(q, v):
    u, w = q[..., :3], q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def errors(body_pos, body_rot, t):
    """(crank angle error, slider error vs the closed form of the commanded angle), max over
    worlds; body order crank, rod, slider; prim frames (W, 3, .)."""
    x_axis = _qrot(body_rot[:, 0], np.array([1.0, 0.0, 0.0]))
    q = np.arctan2(-x_axis[:, 2], x_axis[:, 0])  # rotation about +Y
    dq = (q - OMEGA * t + math.pi) % (2 * math.pi) - math.pi
    return float(np.max(np.abs(dq))), float(np.max(np.abs(body_pos[:, 2, 0] - slider_x(OMEGA * t))))


def usdphys_stage():
    import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
    from pxr import Usd

    st = Usd.Stage.CreateInMemory()
    st.GetRootLayer().ImportFromString(slider_crank_usda())
    return st


def bench_usdphys(stage, worlds, steps, device):
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(stage)
    model = model.replicate(worlds)
    rate, run, _ = time_solver(model, steps, DT, device)
    return rate, run, model


def bench_usdphys_slider_crank(worlds, steps, device):
    stage = usdphys_stage()
    sps, _, _ = bench_usdphys(stage, worlds, steps, device)
    from usdphys.simulate import simulate

    r = simulate(stage, duration=DURATION, dt=DT, fps=10, worlds=worlds, device=device)
    names = [p.rsplit("/", 1)[-1] for p in r.body_paths]
    idx = [names.index(n) for n in ("crank", "rod", "slider")]
    dq, dx = errors(r.positions[-1][:, idx], r.orientations[-1][:, idx], DURATION)
    return sps, dq, dx


# ------------------------------------------------------------------------------ Newton
def newton_worker(worlds, steps, device):
    import newton
    import warp as wp

    r, l = R_CRANK, L_ROD
    b = newton.ModelBuilder(up_axis=newton.Axis.Z)

    def link(x, m, i):
        return b.add_link(xform=wp.transform(wp.vec3(x, 0.0, 0.0), wp.quat_identity()), mass=m,
                          inertia=wp.mat33(i, 0.0, 0.0, 0.0, i, 0.0, 0.0, 0.0, i), lock_inertia=True)

    crank, rod, slider = link(r / 2, 1.0, 0.0625), link(r + l / 2, 0.5, 0.0625), link(r + l, 2.0, 0.125)

    def tf(x):
        return wp.transform(wp.vec3(x, 0.0, 0.0), wp.quat_identity())

    j0 = b.add_joint_revolute(-1, crank, parent_xform=tf(0.0), child_xform=tf(-r / 2), axis=newton.Axis.Y,
                              target_kd=1.0e4, target_vel=OMEGA, actuator_mode=newton.JointTargetMode.VELOCITY)
    j1 = b.add_joint_revolute(crank, rod, parent_xform=tf(r / 2), child_xform=tf(-l / 2), axis=newton.Axis.Y)
    j2 = b.add_joint_revolute(rod, slider, parent_xform=tf(l / 2), child_xform=tf(0.0), axis=newton.Axis.Y)
    j3 = b.add_joint_prismatic(-1, slider, parent_xform=tf(r + l), child_xform=tf(0.0), axis=newton.Axis.X)
    b.add_articulation([j0, j1, j2])
    b.add_articulation([j3])  # the loop-closing joint (XPBD solves every joint alike)
    if worlds > 1:
        scene = newton.ModelBuilder(up_axis=newton.Axis.Z)
        scene.replicate(b, worlds)
        b = scene
    model = b.finalize(device=device)
    solver = newton.solvers.SolverXPBD(model)
    control = model.control()

    def simulate(n):
        s0, s1 = model.state(), model.state()
        newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
        for _ in range(n):
            solver.step(s0, s1, control, None, DT)
            s0, s1 = s1, s0
        wp.synchronize_device(device)
        return s0

    simulate(10)  # warm-up
    t0 = time.perf_counter()
    simulate(steps)
    el = time.perf_counter() - t0
    s = simulate(int(round(DURATION / DT)))
    bq = s.body_q.numpy().reshape(worlds, 3, 7).astype(float)
    dq, dx = errors(bq[..., :3], bq[..., 3:], DURATION)
    print(f"RESULT {worlds * steps / el} {dq} {dx}")


def bench_newton(worlds, steps, device):
    out = subprocess.run([sys.executable, __file__, "--newton-worker", str(worlds), str(steps), device],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return tuple(float(v) for v in line.split()[1:])
    raise RuntimeError((out.stderr.strip().splitlines() or ["newton worker failed"])[-1])


def bench_chrono(worlds, steps, device):
    from usdphys.converters.chrono import convert

    stage = convert(CHRONO, [])
    sps, run, _ = bench_usdphys(stage, worlds, steps, device)
    return sps, float(np.max(run.max_constraint_error))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--newton-worker":
        newton_worker(int(argv[1]), int(argv[2]), argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--worlds", type=int, nargs="+", default=[1, 256])
    ap.add_argument("--no-newton", action="store_true")
    args = ap.parse_args(argv)
    import importlib.util
    import logging

    logging.disable(logging.WARNING)
    have_newton = not args.no_newton and importlib.util.find_spec("newton") is not None
    if not have_newton and not args.no_newton:
        print("newton not installed: `pip install newton` for the side-by-side column")
    print(f"device {args.device}, dt {DT} s; world-steps/s; after {DURATION} s: crank angle error (rad) / "
          "slider error vs closed form (m)")
    print(f"{'model':14s} {'worlds':>6s} {'usdphys (motor row)':>34s} {'newton xpbd (velocity drive)':>34s}")
    for worlds in args.worlds:
        steps = args.steps if worlds == 1 else max(200, args.steps // 10)
        sps, dq, dx = bench_usdphys_slider_crank(worlds, steps, args.device)
        cells = [f"{sps:10.4g} ({dq:7.1e} / {dx:7.1e})"]
        if have_newton:
            try:
                nsps, ndq, ndx = bench_newton(worlds, steps, args.device)
                cells.append(f"{nsps:10.4g} ({ndq:7.1e} / {ndx:7.1e})")
            except Exception as exc:  # report, keep going
                print(f"  newton x{worlds}: {exc}", file=sys.stderr)
                cells.append("error")
        else:
            cells.append("-")
        print(f"{'slider-crank':14s} {worlds:6d} " + " ".join(f"{c:>34s}" for c in cells), flush=True)
    if CHRONO.is_file():
        for worlds in args.worlds:
            steps = args.steps if worlds == 1 else max(200, args.steps // 10)
            sps, err = bench_chrono(worlds, steps, args.device)
            print(f"{'chrono mbs':14s} {worlds:6d} {f'{sps:10.4g} (joint residual {err:7.1e})':>34s} {'-':>34s}",
                  flush=True)
    else:
        print(f"(skipped Chrono's slider-crank: {CHRONO} not found)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
