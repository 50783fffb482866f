"""Many robots in one world (a stage of replicated environments, as Newton's ant_multi):
steps/s against the number of robots, usdphys testing every candidate pair ("all") and sweeping
("sweep", what "auto" picks here), side by side with MuJoCo C (Euler) on the same scene.

    python benchmarks/bench_many_robots.py [--robots 1 4 16 64] [--steps 1000]

Scene: N crawlers on a floor, 1 m apart on a square grid; each a sphere torso (r 8 cm, free)
with four capsule legs (r 2.5 cm, 20 cm) on hinges limited to +-45 deg, dropped from 5 cm
up so that they fall, splay and settle; friction 0.5; dt 1 ms. MuJoCo runs the MJCF written
here; usdphys runs a Model built from MuJoCo's own compiled masses, inertias, frames and
geoms (so both integrate one mechanism). Candidate pairs grow as the square of the shapes
(every leg of one robot may touch every leg of another); the pairs in reach grow linearly.
CPU time per step, one thread, after a warm-up; the end columns: the torsos' mean height (m)
and the largest joint residual.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

DT = 1e-3
TORSO_R, LEG_R, LEG_LEN = 0.08, 0.025, 0.2
SPACING = 1.0


def mjcf(n: int) -> str:
    side = int(math.ceil(math.sqrt(n)))
    bodies = []
    for k in range(n):
        x, y = SPACING * (k % side), SPACING * (k // side)
        legs = []
        for j in range(4):
            a = math.pi / 4 + j * math.pi / 2
            d = np.array([math.cos(a), math.sin(a), 0.0])
            hinge = TORSO_R * d
            tip = LEG_LEN * (d * math.cos(math.pi / 4) + np.array([0, 0, -math.sin(math.pi / 4)]))
            axis = np.array([-d[1], d[0], 0.0])
            legs.append(
                f'<body name="leg{k}_{j}" pos="{hinge[0]:.6f} {hinge[1]:.6f} 0">'
                f'<joint type="hinge" axis="{axis[0]:.6f} {axis[1]:.6f} 0" range="-45 45" limited="true"/>'
                f'<geom type="capsule" fromto="0 0 0 {tip[0]:.6f} {tip[1]:.6f} {tip[2]:.6f}" size="{LEG_R}" mass="0.2"/>'
                "</body>")
        z = TORSO_R + LEG_LEN * math.sin(math.pi / 4) + LEG_R + 0.05
        bodies.append(f'<body name="torso{k}" pos="{x} {y} {z:.6f}"><freejoint/>'
                      f'<geom type="sphere" size="{TORSO_R}" mass="1"/>{"".join(legs)}</body>')
    return (f'<mujoco><option timestep="{DT}" integrator="Euler" gravity="0 0 -9.81"/>'
            '<default><geom friction="0.5 0 0" condim="3"/></default><worldbody>'
            '<geom type="plane" size="0 0 1"/>' + "".join(bodies) + "</worldbody></mujoco>")


def _xyzw(wxyz):
    return np.array([wxyz[1], wxyz[2], wxyz[3], wxyz[0]])


def usdphys_model(m, d):
    """usdphys Model of MuJoCo's compiled model (free and hinge joints, sphere / capsule / plane)."""
    import mujoco

    from usdphys.math3d import quat_conj, quat_mul, quat_rotate
    from usdphys.types.model import Model
    from usdphys.types.shapes import SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SPHERE, table_from_specs

    model = Model()
    model.gravity = np.array(m.opt.gravity, float)
    frame = {}  # mujoco body -> (usdphys body, COM position, COM rotation xyzw): body frames are COM frames
    for b in range(1, m.nbody):
        q = np.zeros(4)
        mujoco.mju_mat2Quat(q, d.ximat[b])
        rot = _xyzw(q)
        frame[b] = (model.add_body(f"/b{b}", float(m.body_mass[b]), m.body_inertia[b].astype(float),
                                   pos=d.xipos[b].copy(), rot=rot), d.xipos[b].copy(), rot)

    def local(b, p, r=None):
        if b == 0:
            return p, r
        _, x, q = frame[b]
        lp = quat_rotate(quat_conj(q), p - x)
        return lp, (quat_mul(quat_conj(q), r) if r is not None else None)

    for j in range(m.njnt):
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            continue
        b1 = int(m.jnt_bodyid[j])
        b0 = int(m.body_parentid[b1])
        anchor, axis = d.xanchor[j].copy(), d.xaxis[j].copy()
        # the joint frame: x along the hinge axis
        c = axis[0]
        qj = np.array([0.0, -axis[2], axis[1], 1.0 + c]) if c > -1 + 1e-12 else np.array([0.0, 0.0, 1.0, 0.0])
        qj = qj / np.linalg.norm(qj)
        p0, r0 = local(b0, anchor, qj)
        p1, r1 = local(b1, anchor, qj)
        lo, hi = np.full(6, -np.inf), np.full(6, np.inf)
        lo[3], hi[3] = m.jnt_range[j]
        model.add_joint(f"/j{j}", frame[b0][0] if b0 else -1, frame[b1][0], pos0=p0, rot0=r0, pos1=p1, rot1=r1,
                        locked=[True, True, True, False, True, True], lower=lo, upper=hi)
    specs = []
    for g in range(m.ngeom):
        b = int(m.geom_bodyid[g])
        q = np.zeros(4)
        mujoco.mju_mat2Quat(q, d.geom_xmat[g])
        pos, rot = local(b, d.geom_xpos[g].copy(), _xyzw(q))
        t = m.geom_type[g]
        mu = float(m.geom_friction[g][0])
        spec = {"body": frame[b][0] if b else -1, "pos": pos, "rot": rot, "static_friction": mu, "dynamic_friction": mu}
        if t == mujoco.mjtGeom.mjGEOM_PLANE:
            spec.update(type=SHAPE_PLANE)
        elif t == mujoco.mjtGeom.mjGEOM_SPHERE:
            spec.update(type=SHAPE_SPHERE, dims=(float(m.geom_size[g][0]), 0, 0))
        elif t == mujoco.mjtGeom.mjGEOM_CAPSULE:
            spec.update(type=SHAPE_CAPSULE, dims=(float(m.geom_size[g][0]), float(m.geom_size[g][1]), 0))
        else:
            raise ValueError(f"geom type {t} not in this benchmark")
        specs.append(spec)
    model.shapes = table_from_specs(specs)
    return model


def bench_usdphys(model, mode: str, steps: int):
    from usdphys.solver import Solver
    from usdphys.solver.contact import ContactOptions

    opts = ContactOptions(broadphase=mode)
    Solver(model, "cpu", contact=opts, threads=1).run(1, 10, DT)  # compile and load
    solver = Solver(model, "cpu", contact=opts, threads=1)
    t0 = time.process_time()
    run = solver.run(10, steps // 10, DT)
    cost = time.process_time() - t0
    return steps / cost, run, solver


def bench_mujoco(m, steps: int):
    import mujoco

    d = mujoco.MjData(m)
    t0 = time.process_time()
    for _ in range(steps):
        mujoco.mj_step(m, d)
    return steps / (time.process_time() - t0), d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--steps", type=int, default=1000)
    a = ap.parse_args(argv)
    import mujoco

    print(f"N crawlers in one world, CPU (one thread), dt {DT} s, {a.steps} steps from the drop; steps/s (CPU time) "
          "[torsos' mean height m at the end] (largest joint residual)")
    print(f"{'N':>4} {'shapes':>6} {'pairs':>7} {'usdphys all':>32} {'usdphys sweep':>32} {'mujoco euler':>22} "
          f"{'sweep/all':>9} {'sweep/mujoco':>12}")
    for n in a.robots:
        m = mujoco.MjModel.from_xml_string(mjcf(n))
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        model = usdphys_model(m, d)
        torsos = [i for i, p in enumerate(model.body_paths) if m.body_parentid[int(p[2:])] == 0]
        row = []
        for mode in ("all", "sweep"):
            rate, run, solver = bench_usdphys(model, mode, a.steps)
            h = float(np.mean(run.pos[-1, 0, torsos, 2]))
            row.append((rate, h, float(np.max(run.max_constraint_error)), len(solver.contact_info["pairs"])))
        rate_mj, dm = bench_mujoco(m, a.steps)
        h_mj = float(np.mean([dm.xipos[b][2] for b in range(1, m.nbody) if m.body_parentid[b] == 0]))
        cells = [f"{r:>11.4g} [{h:.4f}] ({e:.1e})" for r, h, e, _ in row]
        print(f"{n:>4} {len(model.shapes):>6} {row[0][3]:>7} {cells[0]:>32} {cells[1]:>32} "
              f"{f'{rate_mj:.4g} [{h_mj:.4f}]':>22} {row[1][0] / row[0][0]:>8.2f}x {row[1][0] / rate_mj:>11.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
