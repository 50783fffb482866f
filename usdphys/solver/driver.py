"""Host side of the solver: uploads a Model, launches the frame kernel, checks for blow-ups.

Launch pattern: one `advance_frames` launch (plus a one-thread counter bump) per chunk of
output frames; every world runs all its substeps inside the kernel. On CUDA the pair is
captured once in a CUDA graph and replayed; on CPU the two launches are issued directly
(a few launches per output frame at most, none per step, body or joint).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import warp as wp

from usdphys.errors import UsdphysError, warn
from usdphys.solver.warpinit import init_warp
from usdphys.types.model import MODE_EQUAL, MODE_LOWER, MODE_UPPER, ROW_TWIST, Model
from usdphys.solver import forces
from usdphys.solver import step as K
from usdphys.solver.ldl import row_envelope
from usdphys.solver.contact import ContactOptions, contact_stats, setup_contact

# Newton stopping tolerance on hard-constraint residuals (m, or rad for angular rows):
# a few hundred ulps of a 1 m coordinate in double precision; tests ask for 1e-8 m.
DEFAULT_TOL = 1.0e-12
# Input poses whose joints are off by more than this (m / rad) get a warning at assembly.
ASSEMBLY_WARN = 1.0e-6
# Aim for about this many substeps (all worlds) per kernel launch between host checks.
STEPS_PER_LAUNCH = 4000


@dataclass
class SolverRun:
    """COM-frame poses at every output frame: pos (F+1, W, B, 3), rot (F+1, W, B, 4) xyzw."""

    pos: np.ndarray
    rot: np.ndarray
    max_constraint_error: np.ndarray  # (W,) largest hard-constraint residual after any step
    # (F+1, W, M) generalised force of every motor (N or N m, on body1 along / about its DOF)
    # in the last step of each frame; frame 0 is 0 (issue #5)
    motor_effort: np.ndarray | None = None
    # (W,) steps that did not converge at the full step and were retried as smaller steps
    reduced_steps: np.ndarray | None = None


def _arr(data, dtype, device, shape=None):
    a = np.ascontiguousarray(data, dtype=np.float64 if dtype not in (wp.int32,) else np.int32)
    if shape is not None:
        a = a.reshape(shape)
    return wp.array(a, dtype=dtype, device=device)


def _twist_limit_ranges(model: Model, rows) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the [lower, upper] range (rad) of the joint DOF a twist limit row bounds;
    (-inf, inf) for every other row. The kernel starts the unwrapped coordinate inside it."""
    n = rows.count
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    kind, mode, src, axis = (np.asarray(a) for a in (rows.kind, rows.mode, rows.source, rows.axis))
    for i in np.flatnonzero((kind == ROW_TWIST) & ((mode == MODE_LOWER) | (mode == MODE_UPPER))):
        j = int(src[i])
        if 0 <= j < model.joint_count:
            lo[i] = model.joint_lower[j, 3 + int(axis[i])]
            hi[i] = model.joint_upper[j, 3 + int(axis[i])]
    return lo, hi


class Solver:
    def __init__(self, model: Model, device: str | None = None, tol: float = DEFAULT_TOL,
                 contact: ContactOptions | None = None, axial_force_law=None):
        init_warp()  # quiet: no "CUDA driver not found" line on CPU-only machines
        self.model = model
        try:
            self.device = wp.get_device(device)
        except Exception as exc:  # unknown device name
            raise UsdphysError(f"device '{device}' is not available to Warp ({exc})") from None
        self.tol = float(tol)
        dev = self.device
        W, B = model.world_count, model.body_count
        self.rows = rows = model.constraint_rows()
        # force elements, motors, bushings, NewtonJointAPI (issue #5): extra rows + loads
        forces.set_axial_force_law(axial_force_law)  # None: the built-in law
        self._axial_law = axial_force_law  # re-installed by run(): the law is compiled into the kernel
        self.elements = forces.build_element_rows(model, rows)
        self.rows = rows = self.elements.rows
        R = rows.count
        Rn = max(R, 1)
        Bn = max(B, 1)
        self.W, self.B, self.R = W, B, R

        m = K.ModelData()
        m.n_bodies = B
        m.n_rows = R
        m.gravity = wp.vec3d(*np.asarray(model.gravity, float))
        dyn = ~np.asarray(model.body_kinematic, bool)
        mass = np.asarray(model.body_mass, float)
        inertia = np.asarray(model.body_inertia, float).reshape(-1, 3)
        inv_mass = np.where(dyn & (mass > 0), 1.0 / np.where(mass > 0, mass, 1.0), 0.0)
        inv_inertia = np.where((dyn & (mass > 0))[:, None] & (inertia > 0), 1.0 / np.where(inertia > 0, inertia, 1.0), 0.0)

        def pad(a, n, width):
            a = np.asarray(a, float).reshape(-1, width) if width else np.asarray(a).reshape(-1)
            if a.shape[0] == 0:
                return np.zeros((n, width) if width else (n,), dtype=a.dtype)
            return a

        self._inv_mass = pad(inv_mass, Bn, 0)
        self._started = False
        m.inv_mass = _arr(pad(inv_mass, Bn, 0), wp.float64, dev)
        m.inertia = _arr(pad(np.where(inertia > 0, inertia, 1.0), Bn, 3), wp.vec3d, dev)
        m.inv_inertia = _arr(pad(inv_inertia, Bn, 3), wp.vec3d, dev)
        m.row_kind = _arr(pad(rows.kind, Rn, 0), wp.int32, dev)
        m.row_axis = _arr(pad(rows.axis, Rn, 0), wp.int32, dev)
        m.row_mode = _arr(pad(rows.mode, Rn, 0), wp.int32, dev)
        m.row_value = _arr(pad(rows.value, Rn, 0), wp.float64, dev)
        m.row_b0 = _arr(pad(rows.b0, Rn, 0), wp.int32, dev)
        m.row_b1 = _arr(pad(rows.b1, Rn, 0), wp.int32, dev)
        m.row_first = _arr(pad(row_envelope(rows.b0, rows.b1), Rn, 0), wp.int32, dev)
        m.row_p0 = _arr(pad(rows.p0, Rn, 3), wp.vec3d, dev)
        m.row_q0 = _arr(pad(rows.q0, Rn, 4), wp.quatd, dev)
        m.row_p1 = _arr(pad(rows.p1, Rn, 3), wp.vec3d, dev)
        m.row_q1 = _arr(pad(rows.q1, Rn, 4), wp.quatd, dev)
        m.row_k = _arr(pad(rows.stiffness, Rn, 0), wp.float64, dev)
        m.row_c = _arr(pad(rows.damping, Rn, 0), wp.float64, dev)
        m.row_tv = _arr(pad(rows.target_vel, Rn, 0), wp.float64, dev)
        m.row_fmax = _arr(pad(np.minimum(rows.max_force, 1e300), Rn, 0), wp.float64, dev)
        m.row_accel = _arr(pad(rows.accel, Rn, 0), wp.int32, dev)
        lo, hi = _twist_limit_ranges(model, rows)
        m.row_lo = _arr(pad(lo, Rn, 0), wp.float64, dev)
        m.row_hi = _arr(pad(hi, Rn, 0), wp.float64, dev)
        m.el = forces.element_data(self.elements, dev)
        m.has_elements = int(forces.has_elements(self.elements))
        self.m = m

        pos, rot, vel, omega = model.com_state()
        st = K.StateData()
        st.pos = _arr(pos, wp.vec3d, dev, (W, B, 3)) if B else wp.zeros((W, 1), dtype=wp.vec3d, device=dev)
        st.rot = _arr(rot, wp.quatd, dev, (W, B, 4)) if B else wp.zeros((W, 1), dtype=wp.quatd, device=dev)
        st.vel = _arr(vel, wp.vec3d, dev, (W, B, 3)) if B else wp.zeros((W, 1), dtype=wp.vec3d, device=dev)
        st.omega = _arr(omega, wp.vec3d, dev, (W, B, 3)) if B else wp.zeros((W, 1), dtype=wp.vec3d, device=dev)
        self.st = st

        sc = K.Scratch()
        for name in ("vstar", "mom", "pos1", "vel1", "omega1", "dv", "dL"):
            setattr(sc, name, wp.zeros((W, Bn), dtype=wp.vec3d, device=dev))
        sc.rot1 = wp.zeros((W, Bn), dtype=wp.quatd, device=dev)
        sc.iinv = wp.zeros((W, Bn), dtype=wp.mat33d, device=dev)
        for name in ("jl0", "ja0", "jl1", "ja1", "wl0", "wa0", "wl1", "wa1"):
            setattr(sc, name, wp.zeros((W, Rn), dtype=wp.vec3d, device=dev))
        for name in ("g0", "sdiag", "sshift", "sinv", "lam", "lwarm", "lwarm2", "lwarm3", "res", "D", "qc", "qg", "dlam"):
            setattr(sc, name, wp.zeros((W, Rn), dtype=wp.float64, device=dev))
        sc.act = wp.zeros((W, Rn), dtype=wp.int32, device=dev)
        sc.A = wp.zeros((W, Rn, Rn), dtype=wp.float64, device=dev)
        sc.Lf = wp.zeros((W, Rn, Rn), dtype=wp.float64, device=dev)
        sc.els = forces.element_state(W, R, dev)
        self._time = 0.0  # simulated time before the next run() (time functions)
        self._elements_started = False
        self.sc = sc

        dg = K.Diagnostics()
        dg.status = wp.zeros(W, dtype=wp.int32, device=dev)
        dg.fail_body = wp.zeros(W, dtype=wp.int32, device=dev)
        dg.fail_step = wp.zeros(W, dtype=wp.int32, device=dev)
        dg.max_error = wp.zeros(W, dtype=wp.float64, device=dev)
        dg.worst_row = wp.full(W, -1, dtype=wp.int32, device=dev)
        dg.init_error = wp.zeros(W, dtype=wp.float64, device=dev)
        dg.init_row = wp.full(W, -1, dtype=wp.int32, device=dev)
        dg.n_updates = wp.zeros(W, dtype=wp.int32, device=dev)
        dg.n_factor = wp.zeros(W, dtype=wp.int32, device=dev)
        dg.n_reduced = wp.zeros(W, dtype=wp.int32, device=dev)
        dg.fail_row = wp.full(W, -1, dtype=wp.int32, device=dev)
        dg.fail_err = wp.zeros(W, dtype=wp.float64, device=dev)
        dg.fail_time = wp.zeros(W, dtype=wp.float64, device=dev)
        self.dg = dg
        self.counter = wp.zeros(1, dtype=wp.int32, device=dev)
        # contact (issue #7): shapes, candidate pairs and per-world contact buffers
        self.cm, self.cs, self.contact_info = setup_contact(model, W, R, dev, contact)
        # modified Newton across steps (step.py, REFACTOR_EVERY) and extrapolated impulses: only when A cannot change by
        # more than the motion does, i.e. all rows are equal rows (no drives, limits, elements'
        # law / friction rows, whose diagonals or active sets change) and nothing collides
        m.equal_only = int(R > 0 and bool(np.all(np.asarray(rows.mode) == MODE_EQUAL)) and self.cm.n_pairs == 0)
        sc.fage = wp.full(W, -1, dtype=wp.int32, device=dev)
        sc.rfresh = wp.zeros(W, dtype=wp.int32, device=dev)
        sc.conv_err = wp.zeros(W, dtype=wp.float64, device=dev)

    # ------------------------------------------------------------------
    def run(self, frames: int, substeps: int, dt: float,
            progress: Callable[[int, int], None] | None = None) -> SolverRun:
        """Advance `frames` output frames of `substeps` steps of `dt` seconds each."""
        W, B, dev = self.W, self.B, self.device
        Bn = max(B, 1)
        out_pos = wp.zeros((frames + 1, W, Bn), dtype=wp.vec3d, device=dev)
        out_rot = wp.zeros((frames + 1, W, Bn), dtype=wp.quatd, device=dev)
        h = wp.float64(dt)
        tol = wp.float64(self.tol)
        forces.set_axial_force_law(self._axial_law)  # this solver's law (no-op when unchanged)
        if not self._started:
            # Leapfrog start: the velocity the step uses is the half-step velocity v(-h/2) =
            # v(0) - h/2 g (dynamic bodies). Without it positions lag by g t h / 2 (first
            # order); with it free fall is exact and the scheme is Stormer-Verlet.
            vel = self.st.vel.numpy()
            dyn = (self._inv_mass > 0)[None, :B]
            vel[:, :B] -= np.where(dyn[..., None], 0.5 * dt * np.asarray(self.model.gravity, float), 0.0)
            self.st.vel.assign(vel)
            self._started = True
        wp.launch(K.assemble_worlds, dim=W,
                  inputs=[self.m, self.st, self.sc, self.dg, self.cm, self.cs, tol, out_pos, out_rot], device=dev)
        self._report_assembly()
        if not self._elements_started:  # leapfrog start of the element forces (issue #5)
            wp.launch(K.start_elements, dim=W, inputs=[self.m, self.st, self.sc, h, wp.float64(self._time)],
                      device=dev)
            self._elements_started = True
        n_mot = self.elements.motor_rows.shape[0]
        out_eff = wp.zeros((frames + 1, W, max(n_mot, 1)), dtype=wp.float64, device=dev)
        self.dg.max_error.zero_()
        self.dg.n_reduced.zero_()
        self.counter.zero_()

        chunk = max(1, min(frames, math.ceil(STEPS_PER_LAUNCH / max(1, substeps * W))))
        graph = None
        done = 0
        while done < frames:
            n = min(chunk, frames - done)
            args = [self.m, self.st, self.sc, self.dg, self.cm, self.cs, out_pos, out_rot, self.counter, n, substeps, h,
                    tol, wp.float64(self._time), out_eff]
            if dev.is_cuda and n == chunk and frames // chunk >= 2:
                if graph is None:
                    with wp.ScopedCapture(device=dev) as cap:
                        wp.launch(K.advance_frames, dim=W, inputs=args, device=dev)
                        wp.launch(K.bump_counter, dim=1, inputs=[self.counter, n], device=dev)
                    graph = cap.graph
                wp.capture_launch(graph)
            else:
                wp.launch(K.advance_frames, dim=W, inputs=args, device=dev)
                wp.launch(K.bump_counter, dim=1, inputs=[self.counter, n], device=dev)
            done += n
            status = self.dg.status.numpy()
            if status.any():
                self._raise_blowup(status, dt)
            if progress is not None:
                progress(done, frames)
        self._report_contact()
        pos = out_pos.numpy()[:, :, :B].astype(np.float64).reshape(frames + 1, W, B, 3)
        rot = out_rot.numpy()[:, :, :B].astype(np.float64).reshape(frames + 1, W, B, 4)
        self._time += frames * substeps * dt
        return SolverRun(pos=pos, rot=rot, max_constraint_error=self.dg.max_error.numpy().copy(),
                         motor_effort=out_eff.numpy()[:, :, :n_mot].copy(),
                         reduced_steps=self.dg.n_reduced.numpy().copy())

    def state(self):
        """Current COM-frame state as numpy: pos, rot (xyzw), vel (half-step), omega; each (W, B, k)."""
        B = self.B
        return (self.st.pos.numpy()[:, :B], self.st.rot.numpy()[:, :B], self.st.vel.numpy()[:, :B],
                self.st.omega.numpy()[:, :B])

    # ------------------------------------------------------------------
    def _row_source(self, row: int) -> str:
        if row < 0 or row >= self.R:
            return "?"
        return self.elements.names[row]

    def newton_stats(self) -> dict:
        """Per-world totals since the Solver was made (assembly included): Newton updates
        (linear solves) and LDL factorisations of the joint rows."""
        return {"updates": self.dg.n_updates.numpy().copy(), "factorisations": self.dg.n_factor.numpy().copy()}

    def contact_stats(self) -> dict:
        """Per-world contact diagnostics: dropped contacts, most PGS sweeps, unconverged steps."""
        return contact_stats(self.cs)

    def _report_contact(self) -> None:
        if self.cm.n_pairs == 0:
            return
        dropped = self.cs.dropped.numpy()
        if dropped.any():
            warn(f"contact buffer full ({self.contact_info['capacity']} contacts per world): {int(dropped.sum())} "
                 "contacts were dropped; pass a larger ContactOptions(capacity=...) to the Solver")
            self.cs.dropped.zero_()

    def _report_limits_at_start(self) -> None:
        """Name every limit the input pose already violates, with the amount (once per row)."""
        rows = self.rows
        mode = np.asarray(rows.mode)
        limit = np.flatnonzero((mode == MODE_LOWER) | (mode == MODE_UPPER))
        if limit.size == 0:
            return
        held = self.sc.els.rval.numpy()[:, limit]  # (W, n): the bound each limit starts with
        value = np.asarray(rows.value, float)[limit]
        off = np.max(np.abs(held - value[None, :]), axis=0)
        for k in np.flatnonzero(off > ASSEMBLY_WARN):
            i = int(limit[k])
            angular = int(rows.kind[i]) == int(ROW_TWIST)
            amount = f"{np.degrees(off[k]):.4g} deg" if angular else f"{off[k]:.4g} m"
            bound = f"{np.degrees(value[k]):.6g} deg" if angular else f"{value[k]:.6g} m"
            side = "lower" if mode[i] == MODE_LOWER else "upper"
            warn(f"{self._row_source(i)}: starts {amount} outside its {side} limit ({bound}); the limit holds "
                 "it where it starts (it cannot go further out and may move back in), nothing is moved at t = 0")

    def _report_assembly(self) -> None:
        self._report_limits_at_start()
        err = self.dg.init_error.numpy()
        rows = self.dg.init_row.numpy()
        w = int(np.argmax(err)) if err.size else 0
        if err.size and err[w] > ASSEMBLY_WARN:
            warn(f"{self._row_source(int(rows[w]))}: the joint's two frames do not coincide in the input "
                 f"(off by {err[w]:.3g} m or rad); bodies were moved onto the joints before t = 0")

    def _raise_blowup(self, status: np.ndarray, dt: float) -> None:
        w = int(np.flatnonzero(status)[0])
        world = f" in world {w}" if self.W > 1 else ""
        if status[w] == 3:
            row = int(self.dg.fail_row.numpy()[w])
            err = float(self.dg.fail_err.numpy()[w])
            t = float(self.dg.fail_time.numpy()[w])
            raise UsdphysError(
                f"the step at t = {t:.6g} s{world} did not converge, even reduced to dt/{2 ** K.MAX_HALVINGS}: "
                f"{self._row_source(row)} is still off by {err:.3g} m or rad (tolerance {self.tol * float(K.ACCEPT_FACTOR):.3g}). "
                "Check that the joints can all hold at once (consistent frames, limits that leave room), "
                "or try a smaller --dt."
            )
        body = int(self.dg.fail_body.numpy()[w])
        step = int(self.dg.fail_step.numpy()[w])
        what = "non-finite state (NaN/inf)" if status[w] == 1 else "runaway motion (speed or position beyond any physical range)"
        path = self.model.body_paths[body] if 0 <= body < self.B else "?"
        raise UsdphysError(
            f"simulation blew up at t = {step * dt:.6g} s{world}: body {path} has a {what}. "
            "Try a smaller --dt, or check masses, inertias, drive gains and joint frames."
        )
