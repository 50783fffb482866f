"""Recorded quantities: what the frame kernel writes for the host besides poses (docs/recording.md).

The host asks for groups (``usdphys.types.recording.RecordGroups``): body velocities, joint
coordinates / rates / reactions / limit flags, element displacements / rates / forces and load
vectors, world energies and constraint residuals. ``plan_outputs`` turns the Model and the
solver's row table into an ``OutputPlan`` (read-only "probes": the rows to measure), and
``make_output`` sizes ``FrameOutput``: a group not asked for gets one-element arrays and a
zero flag, so the kernel skips it (no cost).

Timing. A frame's positions are those at the end of its last step. Its velocities, forces and
reactions are central: the kernel computes them after the FIRST step of the next frame, from
v(t_F) = (v(t_F - h/2) + v(t_F + h/2)) / 2 (the leapfrog velocities around t_F) and from the
impulses of the step that starts at t_F (a SHAKE impulse / h is the constraint force at the
step's start). The run's last frame is completed by one look-ahead step whose state the driver
then throws away (driver.py), so every frame is central and a run can still be continued.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import warp as wp

from usdphys.solver.forces import ElementData, law_force, time_fn
from usdphys.solver.mathx import ROW_DIST, ROW_TWIST, TWO_PI, eval_row, middle_branch, start_turn, turn_step
from usdphys.types.model import dof_row
from usdphys.types.enums import RowKind, RowLaw, RowMode

wp.set_module_options({"enable_backward": False})


@wp.struct
class OutputPlan:
    """Read-only: what to measure. Probes are rows (the solver's row kinds) evaluated at the
    frame's poses: the free DOFs of joints and the rows of force elements."""
    n_probes: int
    p_kind: wp.array(dtype=wp.int32)
    p_axis: wp.array(dtype=wp.int32)
    p_b0: wp.array(dtype=wp.int32)
    p_b1: wp.array(dtype=wp.int32)
    p_p0: wp.array(dtype=wp.vec3d)  # frames in the bodies' COM frames
    p_q0: wp.array(dtype=wp.quatd)
    p_p1: wp.array(dtype=wp.vec3d)
    p_q1: wp.array(dtype=wp.quatd)
    p_lo: wp.array(dtype=wp.float64)  # twist probes: the DOF's range (start of the multi-turn angle)
    p_hi: wp.array(dtype=wp.float64)
    p_row: wp.array(dtype=wp.int32)  # solver row whose law gives the force (-1: none)
    p_lower: wp.array(dtype=wp.int32)  # limit rows of a joint DOF (-1: none)
    p_upper: wp.array(dtype=wp.int32)
    p_energy: wp.array(dtype=wp.int32)  # 1: a linear law row whose potential the world energy adds
    n_joints: int  # joints whose reaction is recorded (0: not asked)
    j_b0: wp.array(dtype=wp.int32)
    j_b1: wp.array(dtype=wp.int32)
    j_p0: wp.array(dtype=wp.vec3d)  # joint frame 0 in body0's COM frame
    j_q0: wp.array(dtype=wp.quatd)
    row_joint: wp.array(dtype=wp.int32)  # per solver row: the joint whose reaction it adds to (-1: none)
    n_loads: int  # loads whose vector is recorded (0: not asked)
    mass: wp.array(dtype=wp.float64)  # (B,) 0 for kinematic bodies (no energy)
    inertia: wp.array(dtype=wp.vec3d)
    frame_dt: wp.float64


@wp.struct
class FrameOutput:
    """Written for the host at each output frame [frame, world, ...]. Arrays of a group not
    asked for have one element and their flag is 0."""
    pos: wp.array3d(dtype=wp.vec3d)  # [frame, world, body] COM-frame poses
    rot: wp.array3d(dtype=wp.quatd)
    eff: wp.array3d(dtype=wp.float64)  # [frame, world, motor]
    derived: int  # 1: velocities, probes, reactions or energies are recorded (needs vprev)
    # 1: frame 0 is the start of the motion and vel / omg[0] hold v(0) itself (the driver puts
    # it there): the leapfrog start's v(-h/2) = v(0) - h/2 g ignores the joints, so the central
    # average would not be v(0) at the very first frame
    start_exact: int
    want_world: int
    vel: wp.array3d(dtype=wp.vec3d)  # [frame, world, body] COM velocity, world axes
    omg: wp.array3d(dtype=wp.vec3d)  # angular velocity, world axes
    vprev: wp.array2d(dtype=wp.vec3d)  # [world, body] the half-step velocities before the step
    wprev: wp.array2d(dtype=wp.vec3d)
    pval: wp.array3d(dtype=wp.float64)  # [frame, world, probe] coordinate (m / rad, multi-turn)
    prate: wp.array3d(dtype=wp.float64)
    pforce: wp.array3d(dtype=wp.float64)  # law force, Exudyn's sign: positive resists an increase
    plim: wp.array3d(dtype=wp.int32)  # 1: a limit row of the DOF acts
    jforce: wp.array3d(dtype=wp.vec3d)  # [frame, world, joint] on body1, joint frame 0
    jtorque: wp.array3d(dtype=wp.vec3d)  # about frame 0's origin, frame 0 axes
    lvec: wp.array3d(dtype=wp.vec3d)  # [frame, world, load] world vector
    ekin: wp.array2d(dtype=wp.float64)  # [frame, world]
    epot: wp.array2d(dtype=wp.float64)
    resid: wp.array2d(dtype=wp.float64)  # largest hard-row residual of the frame's steps
    # [1] output frames written so far this run, counted on the device for a CUDA graph's
    # replays (bump_counter); other launches get the count from the host. Here, not a parameter
    # of advance_frames: a 1-D array among a CPU kernel's own parameters makes Warp build it
    # twice, for contiguous and strided arrays (the step's cold CPU build: 85 s instead of 71)
    done: wp.array(dtype=wp.int32)
    plan: OutputPlan


@wp.func
def frame_pose(out: FrameOutput, f: int, w: int, b: int):
    if b < 0:
        return wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0)), wp.quatd(
            wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    return out.pos[f, w, b], out.rot[f, w, b]


@wp.func
def frame_vel(out: FrameOutput, f: int, w: int, b: int):
    if b < 0:
        z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
        return z, z
    return out.vel[f, w, b], out.omg[f, w, b]


@wp.func
def save_prev(out: FrameOutput, vel: wp.array2d(dtype=wp.vec3d), omega: wp.array2d(dtype=wp.vec3d), nb: int,
              w: int):
    for b in range(nb):
        out.vprev[w, b] = vel[w, b]
        out.wprev[w, b] = omega[w, b]


@wp.func
def record_derived(out: FrameOutput, el: ElementData, row_k: wp.array(dtype=wp.float64),
                   row_c: wp.array(dtype=wp.float64), row_value: wp.array(dtype=wp.float64),
                   row_tv: wp.array(dtype=wp.float64), gravity: wp.vec3d,
                   inv_mass: wp.array(dtype=wp.float64), inv_inertia: wp.array(dtype=wp.vec3d),
                   vel: wp.array2d(dtype=wp.vec3d), omega: wp.array2d(dtype=wp.vec3d),
                   lam: wp.array2d(dtype=wp.float64), act: wp.array2d(dtype=wp.int32),
                   jl1: wp.array2d(dtype=wp.vec3d), ja1: wp.array2d(dtype=wp.vec3d),
                   nb: int, nr: int, w: int, f: int, t: wp.float64, h: wp.float64, hk: wp.float64):
    """Frame f's velocity-level quantities, after the step that starts at t_f (of size h, its
    kick spanning hk = (h' + h) / 2 after a step of h'): velocities (central), probe values /
    rates / forces, joint reactions (this step's impulses / hk), load vectors, energies."""
    pl = out.plan
    if f != 0 or out.start_exact == 0:
        # vprev is the velocity at t_f - h'/2, vel at t_f + h/2: interpolated to t_f
        a = wp.float64(0.5)
        if hk != h:
            a = wp.float64(0.5) * h / hk
        for b in range(nb):
            out.vel[f, w, b] = a * out.vprev[w, b] + (wp.float64(1.0) - a) * vel[w, b]
            out.omg[f, w, b] = a * out.wprev[w, b] + (wp.float64(1.0) - a) * omega[w, b]
    # probes: coordinate (multi-turn for angles), rate, law force, limit flag
    for p in range(pl.n_probes):
        b0 = pl.p_b0[p]
        b1 = pl.p_b1[p]
        x0, r0 = frame_pose(out, f, w, b0)
        x1, r1 = frame_pose(out, f, w, b1)
        v0, w0 = frame_vel(out, f, w, b0)
        v1, w1 = frame_vel(out, f, w, b1)
        kind = pl.p_kind[p]
        g, jl0, ja0, jlb, jab = eval_row(kind, pl.p_axis[p], pl.p_p0[p], pl.p_q0[p], pl.p_p1[p], pl.p_q1[p],
                                         x0, r0, x1, r1, wp.float64(0.0))  # probes are never POINT rows
        rate = wp.dot(jl0, v0) + wp.dot(ja0, w0) + wp.dot(jlb, v1) + wp.dot(jab, w1)
        q = g
        if kind == ROW_TWIST:
            if f == 0:  # the turn the solver's own coordinate starts on (step.start_turn)
                q = start_turn(g, pl.p_lo[p], pl.p_hi[p])
            elif pl.p_axis[p] == 7:
                # the middle angle of an x-y-z sequence goes on past the lock where its
                # measurement turns back: its branch is the first angle's, whose probe (the one
                # before, the joint's rotX) was just followed through the lock modulo pi
                first, ja, jb, jc, jd = eval_row(kind, 6, pl.p_p0[p], pl.p_q0[p], pl.p_p1[p], pl.p_q1[p],
                                                 x0, r0, x1, r1, wp.float64(0.0))
                base, sign = middle_branch(g, out.pval[f, w, p - 1], first)
                rate = sign * rate
                pred = out.pval[f - 1, w, p] + wp.float64(0.5) * pl.frame_dt * (out.prate[f - 1, w, p] + rate)
                q = base + TWO_PI * wp.round((pred - base) / TWO_PI)
            else:  # the turn nearest the trapezoidal prediction from the last frame (the first and
                # last x-y-z angles modulo pi: past the lock their measurement reads pi more)
                pred = out.pval[f - 1, w, p] + wp.float64(0.5) * pl.frame_dt * (out.prate[f - 1, w, p] + rate)
                q = pred + turn_step(pl.p_axis[p], g - pred)
        out.pval[f, w, p] = q
        out.prate[f, w, p] = rate
        r = pl.p_row[p]
        if r >= 0:
            fl = wp.float64(0.0)
            if not (kind == ROW_DIST and g <= wp.float64(0.0)):
                fl, dfg, dfv = law_force(el, r, row_k[r], row_c[r], row_value[r], row_tv[r], q, rate, t, 0)
            out.pforce[f, w, p] = -fl
        lim = int(0)
        lo = pl.p_lower[p]
        hi = pl.p_upper[p]
        if lo >= 0:
            if act[w, lo] == 1:
                lim = 1
        if hi >= 0:
            if act[w, hi] == 1:
                lim = 1
        out.plim[f, w, p] = lim
    # joint reactions: the impulses of the joint's rows on body1 over this step
    if pl.n_joints > 0:
        z = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
        for j in range(pl.n_joints):
            out.jforce[f, w, j] = z
            out.jtorque[f, w, j] = z
        for i in range(nr):
            j = pl.row_joint[i]
            if j < 0 or act[w, i] == 0:
                continue
            out.jforce[f, w, j] = out.jforce[f, w, j] + (lam[w, i] / hk) * jl1[w, i]
            out.jtorque[f, w, j] = out.jtorque[f, w, j] + (lam[w, i] / hk) * ja1[w, i]
        for j in range(pl.n_joints):
            x0, r0 = frame_pose(out, f, w, pl.j_b0[j])
            x1, r1 = frame_pose(out, f, w, pl.j_b1[j])
            P0 = x0 + wp.quat_rotate(r0, pl.j_p0[j])
            Q0 = r0 * pl.j_q0[j]
            F = out.jforce[f, w, j]
            T = out.jtorque[f, w, j]  # about body1's centre of mass (the origin for the world)
            T = T - wp.cross(P0 - x1, F)
            F = wp.quat_rotate_inv(Q0, F)
            T = wp.quat_rotate_inv(Q0, T)
            if f == 0 and out.start_exact != 0:
                # the first step of a motion also undoes the leapfrog start's half step of
                # gravity along the joints (its impulses are not the force at t = 0): unknown
                nan = wp.float64(wp.nan)
                F = wp.vec3d(nan, nan, nan)
                T = F
            out.jforce[f, w, j] = F
            out.jtorque[f, w, j] = T
    # loads: the vector at t_f (as forces.apply_loads applies it), world axes
    for e in range(pl.n_loads):
        v = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
        s = wp.float64(1.0)
        for c in range(4):
            u = time_fn(el, int(el.load_fn[e, c]), t)
            if c < 3:
                v[c] = u
            else:
                s = u
        xf, qf = frame_pose(out, f, w, int(el.load_frame[e]))
        out.lvec[f, w, e] = wp.quat_rotate(qf * el.load_rot[e], v * s)
    if out.want_world != 0:
        ek = wp.float64(0.0)
        ep = wp.float64(0.0)
        for b in range(nb):
            if pl.mass[b] <= wp.float64(0.0) or inv_mass[b] <= wp.float64(0.0):
                continue
            mb = wp.float64(1.0) / inv_mass[b]  # this world's mass and inertia (per-world parameters)
            v = out.vel[f, w, b]
            wb = wp.quat_rotate_inv(out.rot[f, w, b], out.omg[f, w, b])
            ii = inv_inertia[b]
            I = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
            for k in range(3):
                if ii[k] > wp.float64(0.0):
                    I[k] = wp.float64(1.0) / ii[k]
            ek = ek + wp.float64(0.5) * (mb * wp.dot(v, v) + I[0] * wb[0] * wb[0] + I[1] * wb[1] * wb[1]
                                         + I[2] * wb[2] * wb[2])
            ep = ep - mb * wp.dot(gravity, out.pos[f, w, b])
        for p in range(pl.n_probes):  # linear springs: V = k/2 (g - x0)^2 - P g  (f = -dV/dg)
            r = pl.p_row[p]
            if pl.p_energy[p] != 0:
                d = out.pval[f, w, p] - row_value[r]
                ep = ep + wp.float64(0.5) * row_k[r] * d * d - el.preload[r] * out.pval[f, w, p]
        out.ekin[f, w] = ek
        out.epot[f, w] = ep


# ----------------------------------------------------------------------------------------
# Host side: what to measure, the output buffers, and the arrays -> channels
# ----------------------------------------------------------------------------------------
_DOF_NAMES = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
_IDENT = np.array([0.0, 0.0, 0.0, 1.0])


@dataclass
class Probe:
    prim: str
    role: str  # 'dof', 'axial', 'tsda', 'rsda', or 'energy' (not reported)
    angular: bool
    dof: str = ""  # joint DOF token ('angle', 'distance', 'rotX', ...)
    limited: bool = False


@dataclass
class OutputLayout:
    """What a run records, on the host: the plan uploaded to the kernels and the names of
    what each output column belongs to."""

    groups: object  # usdphys.types.recording.RecordGroups
    plan: OutputPlan
    probes: list[Probe] = field(default_factory=list)
    joint_paths: list[str] = field(default_factory=list)
    load_paths: list[str] = field(default_factory=list)
    load_torque: list[bool] = field(default_factory=list)

    @property
    def derived(self) -> bool:
        g = self.groups
        return bool(g.bodies or g.world or self.probes or self.joint_paths or self.load_paths)


def _dof_token(locked: np.ndarray, d: int) -> str:
    free = [k for k in range(6) if not locked[k]]
    if len(free) == 1:
        return "angle" if d >= 3 else "distance"
    return _DOF_NAMES[d]


def plan_outputs(model, er, groups, frame_dt: float, device) -> OutputLayout:
    """The probes, joints and loads to record for `groups` (a RecordGroups), uploaded."""
    rows, names, ex = er.rows, er.names, er.extra
    R = rows.count
    kind, axis, mode, src = (np.asarray(a) for a in (rows.kind, rows.axis, rows.mode, rows.source))
    cols = {k: [] for k in ("kind", "axis", "b0", "b1", "p0", "q0", "p1", "q1", "lo", "hi", "row", "lower", "upper",
                            "energy")}
    probes: list[Probe] = []

    def add(probe, k, a, b0, b1, p0, q0, p1, q1, lo=-np.inf, hi=np.inf, row=-1, lower=-1, upper=-1, energy=0):
        for key, v in zip(cols, (k, a, b0, b1, p0, q0, p1, q1, lo, hi, row, lower, upper, energy)):
            cols[key].append(v)
        probes.append(probe)

    J = model.joint_count
    if groups.joints:
        for j in range(J):
            if model.joint_is_distance[j] or model.joint_composite[j]:
                continue  # no free DOF a row kind measures (their reactions are recorded)
            b0, b1 = int(model.joint_body0[j]), int(model.joint_body1[j])
            p0, q0 = model.frame_in_com(b0, model.joint_pos0[j], model.joint_rot0[j])
            p1, q1 = model.frame_in_com(b1, model.joint_pos1[j], model.joint_rot1[j])
            locked = np.asarray(model.joint_locked[j], bool)
            # The angles the solver limits and drives (model.dof_row): one free rotation, the two
            # Cardan angles of a universal joint (exact at any deflection), and the x-y-z angles of
            # a joint with three free rotations where its rotations are limited per axis (MuJoCo's
            # three hinges: the coordinates a user set limits on). A plain ball joint has no angle
            # per axis free of jumps (gimbal lock at 90 deg): its orientation is left to the bodies.
            free_rot = int(np.count_nonzero(~locked[3:]))
            per_axis = bool(np.any(np.isfinite(model.joint_lower[j, 3:]) | np.isfinite(model.joint_upper[j, 3:])))
            # (in DOF order: a middle x-y-z angle's probe (axis 7) follows its joint's first
            # angle's (axis 6), whose followed value record_derived reads for the branch)
            for d in range(6):
                if locked[d] or (d >= 3 and free_rot == 3 and not per_axis):
                    continue
                k, a = (int(v) for v in dof_row(locked, d))
                assert a != 7 or cols["axis"][-1] == 6, "a middle x-y-z angle's probe follows its first angle's"
                mine = (src == j) & (kind == k) & (axis == a)
                lower = np.flatnonzero(mine & (mode == RowMode.LOWER))
                upper = np.flatnonzero(mine & (mode == RowMode.UPPER))
                lo, hi = float(model.joint_lower[j, d]), float(model.joint_upper[j, d])
                add(Probe(model.joint_paths[j], "dof", d >= 3, _dof_token(locked, d), bool(lower.size or upper.size)),
                    k, a, b0, b1, p0, q0, p1, q1, lo if d >= 3 else -np.inf, hi if d >= 3 else np.inf,
                    lower=int(lower[0]) if lower.size else -1, upper=int(upper[0]) if upper.size else -1)
    el = model.elements
    roles = {}
    if el is not None and groups.elements:
        roles.update({p: "tsda" for p in el.spring_dampers.paths})
        roles.update({p: "axial" for p in el.axial_spring_dampers.paths})
        roles.update({p: "rsda" for p in el.rotational_spring_dampers.paths})
    law = np.asarray(ex["law"])
    for i in range(R):
        if mode[i] != RowMode.LAW:
            continue
        role = roles.get(names[i])
        energy = int(groups.world and law[i] == RowLaw.LINEAR)
        if role is None and not energy:
            continue
        add(Probe(names[i], role or "energy", kind[i] == RowKind.TWIST), int(kind[i]), int(axis[i]),
            int(rows.b0[i]), int(rows.b1[i]), rows.p0[i], rows.q0[i], rows.p1[i], rows.q1[i], row=i, energy=energy)

    joint_paths, row_joint = [], np.full(max(R, 1), -1, np.int32)
    jb0, jb1, jp0, jq0 = [], [], [], []
    if groups.joints and J:
        index = {p: j for j, p in enumerate(model.joint_paths)}
        motor = np.asarray(ex["motor"])
        for i in range(R):
            j = int(src[i]) if 0 <= int(src[i]) < J else (index.get(names[i], -1) if motor[i] == 0 else -1)
            row_joint[i] = j
        joint_paths = list(model.joint_paths)
        for j in range(J):
            b0 = int(model.joint_body0[j])
            p0, q0 = model.frame_in_com(b0, model.joint_pos0[j], model.joint_rot0[j])
            jb0.append(b0)
            jb1.append(int(model.joint_body1[j]))
            jp0.append(p0)
            jq0.append(q0)
    load_paths, load_torque = [], []
    if el is not None and groups.elements:
        lo = el.loads
        for e in range(len(lo)):
            if int(lo.body0[e]) < 0 and int(lo.body1[e]) < 0:
                continue  # as forces._loads: not uploaded
            load_paths.append(lo.paths[e])
            load_torque.append(bool(lo.torque[e]))

    def arr(a, dtype, width=0):
        shape = (-1, width) if width else (-1,)
        np_dtype = np.int32 if dtype is wp.int32 else np.float64
        a = np.asarray(a, np_dtype).reshape(shape)
        if a.shape[0] == 0:
            a = np.zeros((1,) + a.shape[1:], np_dtype)
            if dtype is wp.quatd:
                a[:] = _IDENT
        return wp.array(a, dtype=dtype, device=device)

    pl = OutputPlan()
    pl.n_probes = len(probes)
    pl.p_kind = arr(cols["kind"], wp.int32)
    pl.p_axis = arr(cols["axis"], wp.int32)
    pl.p_b0 = arr(cols["b0"], wp.int32)
    pl.p_b1 = arr(cols["b1"], wp.int32)
    pl.p_p0 = arr(cols["p0"], wp.vec3d, 3)
    pl.p_q0 = arr(cols["q0"], wp.quatd, 4)
    pl.p_p1 = arr(cols["p1"], wp.vec3d, 3)
    pl.p_q1 = arr(cols["q1"], wp.quatd, 4)
    pl.p_lo = arr(cols["lo"], wp.float64)
    pl.p_hi = arr(cols["hi"], wp.float64)
    pl.p_row = arr(cols["row"], wp.int32)
    pl.p_lower = arr(cols["lower"], wp.int32)
    pl.p_upper = arr(cols["upper"], wp.int32)
    pl.p_energy = arr(cols["energy"], wp.int32)
    pl.n_joints = len(joint_paths)
    pl.j_b0 = arr(jb0, wp.int32)
    pl.j_b1 = arr(jb1, wp.int32)
    pl.j_p0 = arr(jp0, wp.vec3d, 3)
    pl.j_q0 = arr(jq0, wp.quatd, 4)
    pl.row_joint = arr(row_joint, wp.int32)
    pl.n_loads = len(load_paths)
    dyn = ~np.asarray(model.body_kinematic, bool)
    pl.mass = arr(np.where(dyn, np.asarray(model.body_mass, float), 0.0), wp.float64)
    pl.inertia = arr(np.asarray(model.body_inertia, float).reshape(-1, 3), wp.vec3d, 3)
    pl.frame_dt = wp.float64(frame_dt)
    return OutputLayout(groups=groups, plan=pl, probes=probes, joint_paths=joint_paths, load_paths=load_paths,
                        load_torque=load_torque)


def make_output(layout: OutputLayout | None, bodies: int, motors: int, worlds: int, frames: int,
                device, zeros=None) -> FrameOutput:
    """Output buffers of frames 0 .. frames (frame 0: the assembled start); a group not asked
    for gets one-element arrays. zeros(shape, dtype, world_axis) allocates them (io.world_zeros:
    the memory layout of the worlds; None: plain wp.zeros)."""
    if zeros is None:
        def zeros(shape, dtype, world_axis=0):
            return wp.zeros(shape, dtype=dtype, device=device)
    F, W = frames + 1, int(worlds)
    Bn = max(bodies, 1)
    out = FrameOutput()
    out.pos = zeros((F, W, Bn), wp.vec3d, 1)
    out.rot = zeros((F, W, Bn), wp.quatd, 1)
    out.eff = zeros((F, W, max(motors, 1)), wp.float64, 1)
    derived = layout is not None and layout.derived
    g = layout.groups if layout is not None else None
    out.derived = int(derived)
    out.start_exact = 0
    out.want_world = int(bool(g and g.world))

    def sized(n, on, dtype):
        return zeros((F, W, max(n, 1)) if on else (1, 1, 1), dtype, 1)

    out.vel = sized(bodies, derived, wp.vec3d)
    out.omg = sized(bodies, derived, wp.vec3d)
    out.vprev = zeros((W, Bn) if derived else (1, 1), wp.vec3d, 0)
    out.wprev = zeros((W, Bn) if derived else (1, 1), wp.vec3d, 0)
    n_p = len(layout.probes) if derived else 0
    n_j = len(layout.joint_paths) if derived else 0
    n_l = len(layout.load_paths) if derived else 0
    out.pval = sized(n_p, n_p > 0, wp.float64)
    out.prate = sized(n_p, n_p > 0, wp.float64)
    out.pforce = sized(n_p, n_p > 0, wp.float64)
    out.plim = sized(n_p, n_p > 0, wp.int32)
    out.jforce = sized(n_j, n_j > 0, wp.vec3d)
    out.jtorque = sized(n_j, n_j > 0, wp.vec3d)
    out.lvec = sized(n_l, n_l > 0, wp.vec3d)
    world = bool(g and g.world)
    out.ekin = wp.zeros((F, W) if world else (1, 1), dtype=wp.float64, device=device)
    out.epot = wp.zeros((F, W) if world else (1, 1), dtype=wp.float64, device=device)
    out.resid = wp.zeros((F, W) if world else (1, 1), dtype=wp.float64, device=device)
    out.done = wp.zeros(1, dtype=wp.int32, device=device)
    if layout is not None:
        out.plan = layout.plan
    else:
        out.plan = _empty_plan(device)
    return out


def _empty_plan(device) -> OutputPlan:
    pl = OutputPlan()
    i1 = wp.zeros(1, dtype=wp.int32, device=device)
    f1 = wp.zeros(1, dtype=wp.float64, device=device)
    v1 = wp.zeros(1, dtype=wp.vec3d, device=device)
    q1 = wp.array(np.array([_IDENT]), dtype=wp.quatd, device=device)
    pl.n_probes = 0
    pl.n_joints = 0
    pl.n_loads = 0
    for name in ("p_kind", "p_axis", "p_b0", "p_b1", "p_row", "p_lower", "p_upper", "p_energy", "j_b0", "j_b1",
                 "row_joint"):
        setattr(pl, name, i1)
    for name in ("p_lo", "p_hi", "mass"):
        setattr(pl, name, f1)
    for name in ("p_p0", "p_p1", "j_p0", "inertia"):
        setattr(pl, name, v1)
    for name in ("p_q0", "p_q1", "j_q0"):
        setattr(pl, name, q1)
    pl.frame_dt = wp.float64(0.0)
    return pl


def read_outputs(out: FrameOutput, layout: OutputLayout | None, bodies: int, host=None) -> dict[str, np.ndarray]:
    """The recorded arrays as NumPy (frames + 1, worlds, ...), only those asked for, copied.
    host(array) -> NumPy (None: array.numpy()); the driver passes its kept CPU views."""
    if layout is None or not layout.derived:
        return {}
    if host is None:
        def host(a):
            return a.numpy()
    B = bodies
    res = {"vel": host(out.vel)[:, :, :B].copy(), "omega": host(out.omg)[:, :, :B].copy()}
    n_p, n_j, n_l = len(layout.probes), len(layout.joint_paths), len(layout.load_paths)
    if n_p:
        res.update(value=host(out.pval)[:, :, :n_p].copy(), rate=host(out.prate)[:, :, :n_p].copy(),
                   force=host(out.pforce)[:, :, :n_p].copy(), limit=host(out.plim)[:, :, :n_p].copy())
    if n_j:
        res.update(joint_force=host(out.jforce)[:, :, :n_j].copy(), joint_torque=host(out.jtorque)[:, :, :n_j].copy())
    if n_l:
        res.update(load=host(out.lvec)[:, :, :n_l].copy())
    if layout.groups.world:
        res.update(kinetic=host(out.ekin).copy(), potential=host(out.epot).copy(), residual=host(out.resid).copy())
    return res


_DEG = 180.0 / np.pi
# per probe role: (name, quantity, unit) of the coordinate, its rate and the force
_ELEMENT_NAMES = {
    "axial": (("displacementLocal", "length", "m"), ("velocityLocal", "velocity", "m/s"), ("forceLocal", "force", "N")),
    "tsda": (("distance", "length", "m"), ("velocityLocal", "velocity", "m/s"), ("forceLocal", "force", "N")),
    "rsda": (("rotation", "angle", "deg"), ("angularVelocityLocal", "angular velocity", "deg/s"),
             ("torqueLocal", "torque", "N m")),
}


def channels(layout: OutputLayout | None, arrays: dict, body_paths: list[str], motor_paths: list[str],
             motor_efforts, motor_angular, world_prim: str) -> list:
    """The recorded arrays as named Channels (usdphys.types.recording) in their stated units:
    SI, angles in degrees. Bodies, joints, elements (springs, loads, motors), world."""
    from usdphys.types.recording import Channel

    if layout is None:
        return []
    g = layout.groups
    out: list[Channel] = []
    if g.bodies:
        for b, path in enumerate(body_paths):
            out.append(Channel(path, "velocity", "bodies", "velocity", "m/s", arrays["vel"][:, :, b],
                               usd_name="physics:velocity"))
            out.append(Channel(path, "angularVelocity", "bodies", "angular velocity", "deg/s",
                               arrays["omega"][:, :, b] * _DEG, usd_name="physics:angularVelocity"))
    for p, pr in enumerate(layout.probes):
        scale = _DEG if pr.angular else 1.0
        value, rate = arrays["value"][:, :, p] * scale, arrays["rate"][:, :, p] * scale
        if pr.role == "dof":
            unit = "deg" if pr.angular else "m"
            out.append(Channel(pr.prim, f"coordinate:{pr.dof}", "joints", "angle" if pr.angular else "length", unit,
                               value))
            out.append(Channel(pr.prim, f"rate:{pr.dof}", "joints",
                               "angular velocity" if pr.angular else "velocity", unit + "/s", rate))
            if pr.limited:
                out.append(Channel(pr.prim, f"limitActive:{pr.dof}", "joints", "limit active", "1",
                                   arrays["limit"][:, :, p].astype(float)))
        elif pr.role in _ELEMENT_NAMES:
            (n0, q0, u0), (n1, q1, u1), (n2, q2, u2) = _ELEMENT_NAMES[pr.role]
            out.append(Channel(pr.prim, n0, "elements", q0, u0, value))
            out.append(Channel(pr.prim, n1, "elements", q1, u1, rate))
            out.append(Channel(pr.prim, n2, "elements", q2, u2, arrays["force"][:, :, p]))
    for j, path in enumerate(layout.joint_paths):
        out.append(Channel(path, "forceLocal", "joints", "force", "N", arrays["joint_force"][:, :, j]))
        out.append(Channel(path, "torqueLocal", "joints", "torque", "N m", arrays["joint_torque"][:, :, j]))
    if g.elements:
        for e, path in enumerate(layout.load_paths):
            torque = layout.load_torque[e]
            out.append(Channel(path, "torque" if torque else "force", "elements", "torque" if torque else "force",
                               "N m" if torque else "N", arrays["load"][:, :, e]))
        if motor_efforts is not None:
            for k, path in enumerate(motor_paths):
                ang = bool(motor_angular[k])
                out.append(Channel(path, "effort", "elements", "torque" if ang else "force", "N m" if ang else "N",
                                   np.asarray(motor_efforts)[:, :, k]))
    if g.world:
        out.append(Channel(world_prim, "kineticEnergy", "world", "energy", "J", arrays["kinetic"]))
        out.append(Channel(world_prim, "potentialEnergy", "world", "energy", "J", arrays["potential"]))
        out.append(Channel(world_prim, "constraintResidual", "world", "constraint residual", "m or rad",
                           arrays["residual"]))
    return out
