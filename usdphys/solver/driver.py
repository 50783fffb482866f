"""Host side of the solver: uploads a Model (io.py), launches the frame kernel, checks for blow-ups.

Launch pattern: one `advance_frames` launch per chunk of output frames; every world runs all
its substeps inside the kernel. The host passes each launch the frames written before it; on
CUDA the launch and a one-thread counter bump are captured once in a CUDA graph and replayed,
and the graph's launch reads that count from the device (a few launches per output frame at
most, none per step, body or joint). A Solver's first run starts with `assemble_worlds` (the
projection onto the joints); a later run's first frame launch writes its frame 0.
"""
from __future__ import annotations

import copy
import functools
import math
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import warp as wp

from usdphys.errors import UsdphysError, warn
from usdphys.math3d import quat_mul, quat_rotate
from usdphys.solver.warpinit import device_name_problem, init_warp
from usdphys.types.enums import RowKind, RowMode
from usdphys.types import params
from usdphys.types.model import Model
from usdphys.solver import forces, io
from usdphys.solver import outputs as outputs_mod
from usdphys.solver import step as K
from usdphys.solver.contact import ContactOptions, contact_stats, set_pairs

# Newton stopping tolerance on hard-constraint residuals (m, or rad for angular rows):
# a few hundred ulps of a 1 m coordinate in double precision; tests ask for 1e-8 m.
DEFAULT_TOL = 1.0e-12
# The tolerances a run may ask for: below MIN_TOL round-off of a 1 m coordinate (2e-16 a unit)
# leaves nothing to converge to, and a joint that may be MAX_TOL (1 mm or mrad) off is no joint.
MIN_TOL = 1.0e-15
MAX_TOL = 1.0e-3
# Input poses whose joints are off by more than this (m / rad) get a warning at assembly.
ASSEMBLY_WARN = 1.0e-6
# Aim for about this many substeps (all worlds) per kernel launch between host checks.
STEPS_PER_LAUNCH = 4000
# CUDA threads per block for the step kernels. One thread runs a whole world, so a launch has as
# many threads as worlds: small blocks spread a few thousand worlds over every multiprocessor
# (Warp's default of 256 would put 4096 worlds on 16 of an H100's 132). Every launch of the
# module uses this one size, since Warp compiles the module once per block size.
CUDA_BLOCK_DIM = 32


@dataclass
class SolverRun:
    """COM-frame poses at every output frame: pos (F+1, W, B, 3), rot (F+1, W, B, 4) xyzw."""

    pos: np.ndarray
    rot: np.ndarray
    max_constraint_error: np.ndarray  # (W,) largest hard-constraint residual after any step
    # (F+1, W, M) generalised force of every motor (N or N m, on body1 along / about its DOF)
    # in the last step of each frame; frame 0 is 0
    motor_effort: np.ndarray | None = None
    # (W,) steps that did not converge at the full step and were retried as smaller steps
    reduced_steps: np.ndarray | None = None
    # the recorded groups (outputs.read_outputs: vel, omega, value, rate, force, limit, joint_force,
    # joint_torque, load, kinetic, potential, residual), each (F+1, W, ...); layout names them
    outputs: dict = field(default_factory=dict)
    layout: outputs_mod.OutputLayout | None = None


# A step that stops on a three-rotation joint's first or last angle while the middle one is this
# close to +-90 deg (its sequence's lock) says so: the joints' Jacobians grow as 1 / cos(middle),
# 29x at 88 deg.
SEQUENCE_LOCK_NOTE_DEG = 80.0
# A step that stops while a body turns more than this in one step (rad, at the step's start)
# names the body, its spin and, for a thin body, its smallest inertia: near a pose where its
# joints leave it free about that axis it speeds up within a step faster than the step's frozen
# directions follow (a rod of axial ratio 1e-5 on a Cardan joint: 585 rad/s at its stop).
FAST_TURN_NOTE = 0.1
THIN_BODY_NOTE = 1e-3  # smallest / largest principal inertia below which the body is called thin
# Seconds a module load may take before the user is told that it is compiling (a cold build of
# the step kernels: about two minutes on the CPU, 10-25 minutes on CUDA).
COMPILE_NOTICE_AFTER = 5.0
# Worlds per CPU core from which a run that names no device takes the GPU. One GPU thread runs a
# whole world 12-18x slower than a CPU core, so a GPU pays only with many worlds: on an H200 against
# one core of the 2-core CI machine, 42 (four-bar) to 51 (chain of 30 rods) worlds break even
# (docs/solver.md, "Measured on a GPU"); a cold CUDA start also compiles the step for minutes.
GPU_WORLDS_PER_CORE = 64
# A Solver keeps the frame buffers of its last run for the next one of as many frames recording
# the same quantities, up to this many bytes.
REUSED_OUTPUT_BYTES = 16 << 20


def cpu_cores() -> int:
    """The cores this process may run on (os.cpu_count(), or fewer where it is pinned)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


DEVICE_ENV = "USDPHYS_DEVICE"  # the device of every run that names none, where set (cpu, cuda, cuda:N)


def default_device(worlds: int) -> str:
    """The device for a run of `worlds` worlds that names none: the one USDPHYS_DEVICE names where
    it is set (for one process and every process it starts: the suite on a GPU machine), else
    Warp's preferred CUDA device when there is one and the run has at least GPU_WORLDS_PER_CORE
    worlds per CPU core, else the CPU."""
    init_warp()
    forced = os.environ.get(DEVICE_ENV, "").strip()
    if forced:
        problem = device_name_problem(forced)
        if problem is not None:
            hint = "; unset it or set cpu" if problem.startswith("no CUDA") else ""
            raise UsdphysError(f"{DEVICE_ENV}={forced}: {problem}{hint}")
        return forced
    if wp.get_cuda_device_count() == 0 or worlds < GPU_WORLDS_PER_CORE * cpu_cores():
        return "cpu"
    return str(wp.get_preferred_device())


# (device, block size, installed set of user laws) for which the step module is loaded: a run
# there skips the load and its compile notice's timer (~0.2 ms a run).
_LOADED: set = set()


def load_step_module(device, block_dim: int | None, announce_after: float | None = None) -> None:
    """Load the step kernels for `device` (compiling them on a cold cache). With announce_after,
    a load still running after that many seconds is compiling: say so (a cold build takes about two
    minutes on the CPU and 10-25 minutes on CUDA, and would otherwise look like a hang)."""
    dev = wp.get_device(device)
    notice = None
    if announce_after is not None:
        took = "10-25 minutes with NVRTC" if dev.is_cuda else "about two minutes"
        notice = threading.Timer(announce_after, warn, [
            f"{dev.alias}: compiling the solver's kernels (first use with this Warp version, block size and set "
            f"of force laws; {took}); Warp caches them for later runs"])
        notice.daemon = True
        notice.start()
    try:
        wp.load_module(K, device=dev, block_dim=block_dim)
    finally:
        if notice is not None:
            notice.cancel()


def precompile_cuda(arch: int = 90, laws=None) -> list:
    """Compile the step kernels for the CUDA architecture `arch` (90: H100 / H200; 80: A100 ...)
    into Warp's kernel cache (wp.config.kernel_cache_dir, WARP_CACHE_PATH), on any machine, with a
    GPU or without: a GPU machine that shares the cache then loads them instead of spending the
    10-25 minutes a cold NVRTC build takes. laws: the user force laws the runs will pass (each
    set is its own variant of the kernels). Returns the paths written."""
    init_warp()
    forces.install_user_laws(io.user_law_table(laws)[1])
    module = wp.get_module(K.__name__)
    before = module.options["block_dim"]
    _LOADED.clear()  # the module's options change here: later runs load through load_step_module
    wp.set_module_options({"block_dim": CUDA_BLOCK_DIM}, module=K)  # the variant the driver launches
    try:
        return wp.compile_aot_module(K, arch=int(arch), use_ptx=False)
    finally:  # the caller's module as it was (Warp's default block size for launches naming none)
        wp.set_module_options({"block_dim": before}, module=K)


def default_threads(device, worlds: int) -> int:
    """CPU threads for `worlds` worlds: every core this process may run on (os.cpu_count(), or
    fewer where the process is pinned) when there is more than one world, one otherwise; 1 on
    CUDA (one launch runs every world)."""
    if wp.get_device(device).is_cuda or worlds <= 1:
        return 1
    return max(1, min(cpu_cores(), worlds))


def _number_in(what: str, value, low: float, high: float, shown: str, open_low: bool = False) -> float:
    """value as a float when it is a number in [low, high] ((low, high] with open_low), else one
    UsdphysError naming `what` and the range as `shown`."""
    if not isinstance(value, bool) and isinstance(value, (int, float, np.floating, np.integer)):
        v = float(value)
        if (low < v if open_low else low <= v) and v <= high:  # false for NaN
            return v
    raise UsdphysError(f"{what} must be a number in {shown}, got {value!r}")


class Solver:
    def __init__(self, model: Model, device: str | None = None, tol: float = DEFAULT_TOL,
                 contact: ContactOptions | None = None, laws=None, threads: int | None = None,
                 layout: str | None = None, max_turn: float | None = None):
        """device: a Warp device name (None: default_device, the CPU unless there are many worlds
        and a GPU). threads: CPU threads the worlds are spread over (None: default_threads); each
        thread runs a contiguous range of worlds, and a world's result does not depend on the split.
        layout: memory layout of the per-world parameters (io.world_layout; None: the device's).
        max_turn: rad, in (0, 3.14]; a step in which a body turns more is retried smaller, down to
        dt/2^MAX_HALVINGS (None: off, the default). May carry a thin rod's run through a passage
        near a singular pose where it stops otherwise, or stop one that runs otherwise: measured,
        no guarantee (docs/solver.md, "Globalised iteration"); a fast rotor would be retried at
        every step."""
        init_warp()  # quiet: no "CUDA driver not found" line on CPU-only machines
        self.model = model
        if device is None:
            device = default_device(model.world_count)
        try:
            self.device = wp.get_device(device)
        except Exception as exc:  # unknown device name
            raise UsdphysError(f"device '{device}' is not available to Warp ({exc})") from None
        self.tol = _number_in("tol (the Newton stopping tolerance, m or rad)", tol, MIN_TOL, MAX_TOL,
                              f"[{MIN_TOL:g}, {MAX_TOL:g}]")
        self.max_turn = None if max_turn is None else _number_in(
            "max_turn (rad a body may turn in one step before the step is retried smaller)", max_turn, 0.0, math.pi,
            "(0, pi]", open_low=True)
        dev = self.device
        W = model.world_count
        if threads is None:
            threads = default_threads(dev, W)
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise UsdphysError(f"threads must be a whole number >= 1, got {threads!r}")
        self.threads = 1 if dev.is_cuda else int(min(threads, W))
        self.block_dim = CUDA_BLOCK_DIM if dev.is_cuda else None  # None: Warp's CPU default
        # model (read-only, shared by all worlds), state (carried between steps, updated in
        # place), scratch (the step's work buffers), diagnostics: see io.py
        self.dm = io.put_model(model, dev, contact=contact, laws=laws, layout=layout)
        self.m, self.cm = self.dm.data, self.dm.contact
        if self.max_turn is not None:
            self.m.max_turn = wp.float64(self.max_turn)
        self.elements = self.dm.elements
        self.rows = self.dm.rows
        self.contact_info = self.dm.contact_info
        self.W, self.B, self.R = W, self.dm.body_count, self.dm.row_count
        state = io.make_state(model, self.dm, W, dev)
        self.st, self.rs, self.es, self.cs = state.data, state.rows, state.elements, state.contact
        self.sc = io.make_scratch(self.dm, W, dev)
        self.dg = io.make_diagnostics(W, dev)
        self._started = False  # leapfrog start of the velocities done
        self._projected = False  # the input pose projected onto the joints (the first run)
        self._overlaps_checked = False  # collider pairs checked in the assembled pose
        self._elements_started = False
        # the time origin of the current step size, the step size, and the steps taken since: a
        # step's time is origin + k dt, in one call or in many alike (not a rounded running sum)
        self._clock = (0.0, None, 0)
        # (frames, OutputLayout or None, FrameOutput) of the last run when small, for the next
        # (_output_buffers)
        self._kept_out = None
        # recorded advance_frames launches (CPU): (what they were recorded for, one per world
        # range, the numbers last set in them)
        self._frames_cmds = None
        # NumPy views (CPU, _host): of the Solver's own arrays, and of the current output buffer's
        self._views, self._out_views = {}, {}
        self._layout = None  # (groups, frame time, OutputLayout) of the last run that recorded outputs
        self._carried = None  # the state, scratch and diagnostic arrays (NumPy views on the CPU): _look_ahead
        self._pool = None  # worker threads of _in_parallel, made at the first launch that needs them

    @property
    def _time(self) -> float:
        """Simulated time before the next run() (time functions)."""
        origin, dt, k = self._clock
        return origin if dt is None else origin + k * dt

    # ------------------------------------------------------------------
    def run(self, frames: int, substeps: int, dt: float,
            progress: Callable[[int, int], None] | None = None, record=None) -> SolverRun:
        """Advance `frames` output frames of `substeps` steps of `dt` seconds each. The first call
        projects the input pose onto the joints (frame 0); a later one goes on from where the last
        ended (its frame 0 is that call's last frame): a run in several calls is the run in one.

        record: a usdphys.types.recording.RecordGroups (or its text, 'bodies,joints,...'):
        the quantities recorded besides poses (outputs.py); None records poses only."""
        from usdphys.types.recording import RecordGroups

        W, B, dev = self.W, self.B, self.device
        groups = RecordGroups.parse(record)
        layout = self._output_layout(groups, substeps * dt) if groups.any else None
        out = self._output_buffers(frames, layout)
        h = wp.float64(dt)
        tol = wp.float64(self.tol)
        # the user laws are compiled into the kernel: this solver's (no-op when unchanged)
        forces.install_user_laws(self.dm.user_laws)
        # built here, not at the first launch, so a law Warp cannot compile is one line, and a
        # cold build is announced instead of sitting silent for a minute (CPU) or many (CUDA)
        loaded = (str(dev), self.block_dim, forces.user_law)  # user_law: one object per set of laws
        if loaded not in _LOADED:
            try:
                load_step_module(dev, self.block_dim, COMPILE_NOTICE_AFTER)
            except Exception as exc:  # Warp's codegen / compiler error about the user's code
                if not self.dm.user_laws:
                    raise
                parts = [p.strip() for p in str(exc).replace("\n", " ").split(";") if p.strip()]
                raise UsdphysError("a user force law does not compile: " + "; ".join(parts[-2:])) from None
            _LOADED.add(loaded)
        if not self._started:
            # Leapfrog start: the velocity the step uses is the half-step velocity v(-h/2) =
            # v(0) - h/2 g (dynamic bodies). Without it positions lag by g t h / 2 (first
            # order); with it free fall is exact and the scheme is Stormer-Verlet.
            vel = self.st.vel.numpy()
            if out.derived and B:  # frame 0's recorded velocities: v(0) itself (outputs.py)
                wp.copy(out.vel[0], self.st.vel)
                wp.copy(out.omg[0], self.st.omega)
                out.start_exact = 1
            dyn = (self.dm.inv_mass > 0)[None, :B]
            vel[:, :B] -= np.where(dyn[..., None], 0.5 * dt * self.dm.gravity[:, None, :], 0.0)
            self.st.vel.assign(vel)
            self._started = True
        if self.threads > 1:  # loaded here, so that no two threads compile it (_in_parallel)
            wp.load_module(K, device=dev)
        return self._run(out, layout, frames, substeps, dt, h, tol, progress)

    def _output_buffers(self, frames: int, layout):
        """The frame buffers of a run. A run reuses those of the last run when that had as many
        frames, recorded the same (the same OutputLayout, _output_layout) and they are small:
        stepping in short calls (a loop of a few steps a call) would otherwise spend most of its time
        allocating them (~1 ms with recorded quantities). A reused buffer is zeroed and its
        flags reset as make_output leaves a new one; the results are copies."""
        kept = self._kept_out
        if kept is not None and kept[0] == frames and kept[1] is layout:
            out = kept[2]
            if self.device.is_cpu:  # the views of all its own arrays, made with it
                for _, view in self._out_views.values():
                    view.fill(0)
            else:
                for a in _struct_arrays([out], nested=False):
                    a.zero_()
            out.start_exact = 0
            return out
        out = io.make_output(self.dm, self.W, frames, self.device, layout)
        own = _struct_arrays([out], nested=False)  # not out.plan: the layout's, read-only
        self._out_views = {id(a): (a, a.numpy()) for a in own} if self.device.is_cpu else {}
        self._kept_out = (frames, layout, out) if sum(a.capacity for a in own) <= REUSED_OUTPUT_BYTES else None
        return out

    def _zero(self, arr: wp.array) -> None:
        """arr = 0 for one of the Solver's own arrays; on the CPU through its kept NumPy view
        (_host): zero_() costs a few us each."""
        if self.device.is_cpu:
            self._host(arr).fill(0)
        else:
            arr.zero_()

    def _launch(self, kernel, args: list) -> None:
        """Launch `kernel` over every world, one launch per world range (_world_ranges) at once;
        its last parameter is the first world of the launch."""
        self._in_parallel([functools.partial(wp.launch, kernel, dim=b - a, inputs=args + [a], device=self.device,
                                             block_dim=self.block_dim) for a, b in self._world_ranges()])

    def _world_ranges(self) -> list[tuple[int, int]]:
        """The contiguous world ranges launched at once, one per CPU thread (all worlds on CUDA)."""
        bounds = np.linspace(0, self.W, self.threads + 1).round().astype(int)
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def _in_parallel(self, calls: list) -> None:
        """Run launches of disjoint world ranges at once: the first on this thread, the others on
        the Solver's worker threads. Warp's CPU launch runs its threads one after the other but
        releases the GIL while it runs, so this uses every core. The workers live as long as the
        Solver: making them at every run() cost ~0.3 ms here, a step of 30 four-bars."""
        if len(calls) == 1:
            calls[0]()
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="usdphys-worlds")
            weakref.finalize(self, self._pool.shutdown, wait=False)
        jobs = [self._pool.submit(call) for call in calls[1:]]
        try:
            calls[0]()
        finally:
            for job in jobs:
                job.result()

    def _output_layout(self, groups, frame_dt: float):
        """The recording plan of a run (outputs.plan_outputs), kept for the next run that records
        the same groups at the same frame time: planning and uploading it takes a few ms, as long
        as many short calls."""
        if self._layout is None or self._layout[0] != groups or self._layout[1] != frame_dt:
            self._layout = (groups, frame_dt, outputs_mod.plan_outputs(self.model, self.elements, groups, frame_dt,
                                                                       self.device))
        return self._layout[2]

    def _host(self, arr: wp.array, output: bool = False) -> np.ndarray:
        """arr as NumPy: on the CPU a view made once (wp.array.numpy() builds a new one at each
        call, ~9 us, a large share of a short call's host time); elsewhere a copy from the
        device. output: arr belongs to the current output buffer, whose views go with it. The
        array is kept with its view, so its id names nothing else."""
        if not self.device.is_cpu:
            return arr.numpy()
        views = self._out_views if output else self._views
        hit = views.get(id(arr))
        if hit is None or hit[0] is not arr:
            hit = (arr, arr.numpy())
            views[id(arr)] = hit
        return hit[1]

    def _launch_frames(self, args: list) -> None:
        """advance_frames over every world (args: its parameters before w0). On the CPU each
        world range's launch is recorded once and replayed with this call's numbers: wp.launch
        packs every parameter anew (~250 array descriptors, ~70 us), most of the host time of a
        call of one step. A recorded launch holds the structs' own ctypes
        objects, which Warp updates in place when a field is assigned (cm.pairs after the overlap
        check), so it reads what a new launch would; another output buffer or struct object is
        recorded anew. A solver's user laws, so its variant of the step module, never change,
        and the recorded launch keeps that variant's CPU executable loaded (Warp unloads one
        only when nothing holds it) while solvers with other laws run between its calls."""
        dev = self.device
        if not dev.is_cpu:
            self._launch(K.advance_frames, args)
            return
        owners = args[:9]  # the structs and the output buffer
        if self._frames_cmds is None or any(a is not b for a, b in zip(self._frames_cmds[0], owners)):
            cmds = [wp.launch(K.advance_frames, dim=b - a, inputs=args + [a], device=dev, block_dim=self.block_dim,
                              record_cmd=True) for a, b in self._world_ranges()]
            self._frames_cmds = (owners, cmds, [None] * len(args))
        cmds, last = self._frames_cmds[1], self._frames_cmds[2]
        for i in range(9, len(args)):  # the numbers of this launch that changed (w0 stays the range's)
            if last[i] is None or last[i] != args[i]:  # != also for a NaN
                for cmd in cmds:
                    cmd.set_param_at_index(i, args[i])
                last[i] = args[i]
        self._in_parallel([cmd.launch for cmd in cmds])

    def _run(self, out, layout, frames, substeps, dt, h, tol, progress) -> SolverRun:
        W, B, dev = self.W, self.B, self.device
        origin, clock_dt, k0 = self._clock
        if clock_dt != dt or k0 + (frames + 1) * substeps >= 2**31:  # another step size (or int32 full)
            origin, k0 = self._time, 0
        t0 = wp.float64(origin)
        # the first run projects the input pose onto the joints; a later one goes on from where
        # the last one ended (already on them, to the tolerance), warm start and factor included
        project = 0 if self._projected else 1
        first = 1 - project  # a later run's frame 0 is written by its first frame launch
        if project:
            self._launch(K.assemble_worlds, [self.m, self.cm, self.st, self.rs, self.es, self.cs, self.sc, self.dg,
                                             out, tol, 1])
            self._report_assembly()
            self._projected = True
        if not self._overlaps_checked:
            self._drop_assembled_overlaps()
            self._overlaps_checked = True
        if not self._elements_started:  # leapfrog start of the element forces
            self._launch(K.start_elements, [self.m, self.st, self.es, self.sc, h, wp.float64(self._time)])
            self._elements_started = True
        n_mot = self.dm.motor_count
        self._zero(self.dg.max_error)
        self._zero(self.dg.n_reduced)

        chunk = max(1, min(frames, math.ceil(STEPS_PER_LAUNCH / max(1, substeps * W))))
        graph = None
        done = 0
        while done < frames:
            n = min(chunk, frames - done)
            args = [self.m, self.cm, self.st, self.rs, self.es, self.cs, self.sc, self.dg, out, n,
                    substeps, h, tol, t0, k0]
            if dev.is_cuda and n == chunk and frames // chunk >= 2:
                # one recorded launch replayed for every chunk: the frame offset is counted on the device
                if graph is None:
                    with wp.ScopedCapture(device=dev) as cap:
                        wp.launch(K.advance_frames, dim=W, inputs=args + [-1, first, 0, 0], device=dev,
                                  block_dim=self.block_dim)
                        wp.launch(K.bump_counter, dim=1, inputs=[out.done, n], device=dev,
                                  block_dim=self.block_dim)
                    graph = cap.graph
                wp.capture_launch(graph)
            else:
                self._launch_frames(args + [done, first, 0])
                if dev.is_cuda:  # a graph launched later in this run reads the count from the device
                    wp.launch(K.bump_counter, dim=1, inputs=[out.done, n], device=dev, block_dim=self.block_dim)
            done += n
            status = self._host(self.dg.status)
            if status.any():
                self._raise_blowup(status, dt)
            if progress is not None:
                progress(done, frames)
        if first and frames == 0:  # no frame launched: frame 0 alone
            self._launch(K.assemble_worlds, [self.m, self.cm, self.st, self.rs, self.es, self.cs, self.sc, self.dg,
                                             out, tol, 0])
        if out.derived:
            self._look_ahead(out, frames, substeps, h, tol, t0, k0)
        self._report_contact()
        pos = self._host(out.pos, True)[:, :, :B].astype(np.float64).reshape(frames + 1, W, B, 3)
        rot = self._host(out.rot, True)[:, :, :B].astype(np.float64).reshape(frames + 1, W, B, 4)
        self._clock = (origin, dt, k0 + frames * substeps)
        result = SolverRun(pos=pos, rot=rot, max_constraint_error=self._host(self.dg.max_error).copy(),
                           motor_effort=self._host(out.eff, True)[:, :, :n_mot].copy(),
                           reduced_steps=self._host(self.dg.n_reduced).copy(),
                           outputs=outputs_mod.read_outputs(out, layout, B, lambda a: self._host(a, True)),
                           layout=layout)
        if self._kept_out is None:
            # an output buffer that is not kept for the next run: nothing here keeps it alive
            self._out_views, self._frames_cmds = {}, None
        return result

    def _look_ahead(self, out, frames: int, substeps: int, h, tol, t0, k0: int) -> None:
        """Complete the last frame's central velocities and forces (outputs.py) with one more
        step, then put every state, scratch and diagnostic array back as it was: the run ends
        where it ended, and a later run() continues from there. A look-ahead step that does not
        converge leaves that frame's velocity-level values NaN."""
        if self._carried is None:  # made once by io.py, never replaced: listed (and viewed) once
            arrays = _struct_arrays([self.st, self.rs, self.es, self.cs, self.sc, self.dg])
            self._carried = [self._host(a) for a in arrays] if self.device.is_cpu else arrays
        if self.device.is_cpu:  # NumPy copies through kept views: wp.clone and wp.copy take ~25 us an array
            saved = [(v, v.copy()) for v in self._carried]
        else:
            saved = [(a, wp.clone(a)) for a in self._carried]
        self._launch_frames([self.m, self.cm, self.st, self.rs, self.es, self.cs, self.sc, self.dg, out, 1,
                             substeps, h, tol, t0, k0, frames, 0, 1])
        failed = self._host(self.dg.status) != 0  # a new array: the status is put back below
        put_back = np.copyto if self.device.is_cpu else wp.copy
        for dst, src in saved:
            put_back(dst, src)
        if failed.any():
            for name in ("vel", "omg", "pval", "prate", "pforce", "jforce", "jtorque", "lvec", "ekin", "epot"):
                a = getattr(out, name)
                if a.shape[0] == frames + 1:
                    v = a.numpy()
                    v[frames, failed] = np.nan
                    a.assign(v)

    def set_parameter(self, name: str, values, index=None) -> None:
        """Change a per-world parameter (usdphys.types.params.PARAMETERS) from the next run() on,
        as Model.set_parameter takes it (values per world or for every world; index an entry).
        Between short calls this is how a loop acts on the worlds it steps: drive targets and
        gains, gravity, masses, springs, friction. The run goes on from where it ended, with its
        state, clock and warm start; only the values change. Called before the first run, the
        run is the run of a Solver made from a model with that value.

        Structure is fixed as for Model.set_parameter: a value that would add or remove a limit,
        drive or spring is refused (UsdphysError) and nothing changes. A row parameter (drive
        targets and gains, limits, springs, joint friction) whose new values keep each world's
        class (a limit infinite or not, a gain zero or not) is written into its cells of the row
        columns directly (solver/row_values.py); the first change of a class costs two or three
        builds of the row table;
        a body parameter makes the next step factorise afresh (a kept factor was of the old
        masses); a drive gain does where a factor is kept, because the step finds its compliance
        on the diagonal changed (step.kept_as_factorised)."""
        model = copy.copy(self.model)  # the caller's Model stays as it was
        model.world_parameters = dict(self.model.world_parameters)
        params.set_parameter(model, name, values, index)
        group = io.parameter_group(name)
        arrays = io.parameter_arrays(self.dm, model, (group,), changed=name)  # raises before anything is replaced
        io.put_parameter_arrays(self.dm, arrays, self.device, self.W)
        self.model = model
        if group == "bodies":
            self.sc.fage.fill_(-1)

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
        """Per-world contact diagnostics: dropped contacts, most PGS sweeps, unconverged steps, steps on
        the Delassus matrix through the joints."""
        return contact_stats(self.cs)

    def _report_contact(self) -> None:
        if self.cm.n_pairs == 0:
            return
        dropped = self.cs.dropped.numpy()
        if dropped.any():
            warn(f"contact buffer full ({self.contact_info['capacity']} contacts per world): {int(dropped.sum())} "
                 "contacts were dropped; pass a larger ContactOptions(capacity=...) to the Solver")
            self.cs.dropped.zero_()
        unconverged = self.cs.unconverged.numpy()
        if unconverged.any():
            # Projected Gauss-Seidel stops at max_sweeps like every contact solver; what it
            # leaves is approximate contact impulses (the joints still hold exactly), and the
            # user should know how often that happened.
            warn(f"contact did not converge within {int(self.cm.max_sweeps)} sweeps in {int(unconverged.max())} "
                 f"step(s) (tolerance {float(self.cm.tol):.3g} m/s): those steps' contact impulses are approximate; "
                 "light bodies jointed to heavy ones converge slowly (docs/contact.md)")
            self.cs.unconverged.zero_()

    def _report_limits_at_start(self) -> None:
        """Name every limit the input pose already violates, with the amount (once per row)."""
        rows = self.rows
        mode = np.asarray(rows.mode)
        moving = np.asarray(self.elements.extra["moving"]) != 0  # velocity limits: bounds that move
        limit = np.flatnonzero(((mode == RowMode.LOWER) | (mode == RowMode.UPPER)) & ~moving)
        if limit.size == 0:
            return
        held = self.es.rval.numpy()[:, limit]  # (W, n): the bound each limit starts with
        # each world's own bound (per-world limits and cones), not the model's
        value = np.broadcast_to(np.asarray(self.dm.row_columns["value"], float), (self.W, self.R))[:, limit]
        off_w = np.abs(held - value)
        worst = np.argmax(off_w, axis=0)  # per limit, the world that starts furthest out
        for k in np.flatnonzero(off_w[worst, np.arange(limit.size)] > ASSEMBLY_WARN):
            i, w = int(limit[k]), int(worst[k])
            off, bound = off_w[w, k], value[w, k]
            angular = int(rows.kind[i]) in (RowKind.TWIST, RowKind.SWING)
            amount = f"{np.degrees(off):.4g} deg" if angular else f"{off:.4g} m"
            bound = f"{np.degrees(bound):.6g} deg" if angular else f"{bound:.6g} m"
            side = "lower" if mode[i] == RowMode.LOWER else "upper"
            where = f" (world {w}, the furthest out)" if self.W > 1 else ""
            warn(f"{self._row_source(i)}: starts {amount} outside its {side} limit ({bound}){where}; the limit "
                 "holds it where it starts (it cannot go further out and may move back in), nothing is moved at t = 0")

    def _drop_assembled_overlaps(self) -> None:
        """Collider pairs of one jointed mechanism that interpenetrate once the assembly has put
        the bodies on their joints (world 0) are dropped like those overlapping in the input pose
        (contact.initial_overlaps): a stage whose joint frames disagree by a metre lands links
        inside each other, and pushing them apart fights the joints."""
        import copy

        from usdphys.solver.contact import initial_overlaps, warn_overlaps

        info, cm, model = self.contact_info, self.cm, self.model
        pairs = np.asarray(info["pairs"]).reshape(-1, 2)
        if cm.n_pairs == 0 or model.joint_count == 0 or not len(pairs) or self.B == 0:
            return
        com_pos, com_rot = self.st.pos.numpy()[:1, :self.B], self.st.rot.numpy()[:1, :self.B]
        start = model.com_state()[0][:1]
        if np.max(np.abs(com_pos - start)) <= ASSEMBLY_WARN:
            return  # the assembly moved nothing: the input pose's check stands
        assembled = copy.copy(model)
        assembled.body_pos, assembled.body_rot = model.prim_from_com(com_pos, com_rot)
        hit, deepest = initial_overlaps(assembled, info["table"], pairs)
        if not len(hit):
            return
        warn_overlaps(info["table"], pairs, hit, deepest, "once the bodies are moved onto their joints")
        pairs = np.delete(pairs, hit, axis=0)
        info["pairs"] = pairs
        set_pairs(cm, pairs, info["shape_table"], info["broadphase"], self.device)
        self.cs.sw.ready.zero_()  # the sweep's order indexed the old pairs' shapes

    def _report_assembly(self) -> None:
        self._report_limits_at_start()
        # what the projection onto the joints left: more than ASSEMBLY_WARN means no pose holds
        # every joint at once (e.g. two joints on one body pair at different anchors), and the
        # first step could only fail on it
        left = self.dg.max_error.numpy()
        w = int(np.argmax(left)) if left.size else 0
        if left.size and left[w] > ASSEMBLY_WARN:
            row = int(self.dg.worst_row.numpy()[w])
            world = f" in world {w}" if self.W > 1 else ""
            raise UsdphysError(
                f"the joints cannot all hold at once{world}: moved onto them before t = 0, the bodies still leave "
                f"{self._row_source(row)} off by {left[w]:.3g} m or rad; check joints that constrain the same "
                "bodies (frames, anchors, a fixed or equality joint beside a hinge)")
        err = self.dg.init_error.numpy()
        rows = self.dg.init_row.numpy()
        w = int(np.argmax(err)) if err.size else 0
        if err.size and err[w] > ASSEMBLY_WARN:
            row = int(rows[w])
            if 0 <= row < self.R and int(self.elements.extra["partner"][row]) >= 0:
                warn(f"{self._row_source(row)}: the input pose breaks its coupling to "
                     f"{self._row_source(int(self.elements.extra['partner'][row]))} (off by {err[w]:.3g} m or rad); "
                     "bodies were moved onto the coupling before t = 0")
            else:
                warn(f"{self._row_source(row)}: the joint's two frames do not coincide in the input "
                     f"(off by {err[w]:.3g} m or rad); bodies were moved onto the joints before t = 0")

    def _sequence_lock_note(self, row: int, w: int) -> str:
        """Why a step stopped near the lock of a three-rotation joint's x-y-z sequence: the middle
        angle near +-90 deg at the step's start, where the first and last angles turn about almost
        one axis and their split is ill-conditioned (docs/solver.md, "Stop 34"). The stopping row
        itself, or else any row on a first or last angle (a limit, a drive, a lock, friction): the
        iteration diverges through the whole tree, so the row it ends on may be another joint's;
        and a limit need not have held in the last step, since near the lock those angles move
        1 / cos(middle) times faster than the bodies turn (5.8x at 80 deg)."""
        rows = self.rows
        mode = np.asarray(rows.mode)
        kind = np.asarray(rows.kind)
        axis = np.asarray(rows.axis)
        on_angle = (kind == RowKind.TWIST) & np.isin(axis, (6, 8))
        acting = on_angle & (mode != RowMode.CARRIER)
        candidates = ([row] if 0 <= row < self.R and on_angle[row] else []) + [
            int(i) for i in np.flatnonzero(acting) if i != row]
        rot = self.state()[1][w]
        identity = np.array([0.0, 0.0, 0.0, 1.0])
        for i in candidates:
            b0, b1 = int(rows.b0[i]), int(rows.b1[i])
            r0 = rot[b0] if b0 >= 0 else identity
            r1 = rot[b1] if b1 >= 0 else identity
            a = quat_rotate(quat_mul(r0, np.asarray(rows.q0[i], float)), np.array([1.0, 0.0, 0.0]))
            c = quat_rotate(quat_mul(r1, np.asarray(rows.q1[i], float)), np.array([0.0, 0.0, 1.0]))
            middle = math.degrees(math.atan2(float(np.dot(c, a)), float(np.linalg.norm(np.cross(c, a)))))
            if abs(middle) < SEQUENCE_LOCK_NOTE_DEG:
                continue
            angle = "rotX" if int(axis[i]) == 6 else "rotZ"
            what = {RowMode.LOWER: "a limit", RowMode.UPPER: "a limit", RowMode.EQUAL: "a lock",
                    RowMode.FRICTION: "friction"}.get(int(mode[i]), "a drive")
            who = f"its {angle}" if i == row else f"{self._row_source(i)} has {what} on its {angle}, which"
            return (f"; {who} is an angle of the x-y-z sequence, and rotY was at {middle:.1f} deg, near the "
                    f"sequence's lock at +-90 deg where rotX and rotZ turn about one axis: limit rotY inside "
                    f"(-90, 90) deg, or leave {angle} without limits and drives")
        return ""

    def _fast_body_note(self, w: int, dt: float) -> str:
        """The body that turned fastest at the start of a step that stopped, where it turned more
        than FAST_TURN_NOTE in one step; "" otherwise."""
        omega = self.state()[3][w]
        live = self.m.inv_mass.numpy()
        live = live[min(w, live.shape[0] - 1)][: self.B] > 0
        turn = np.where(live, np.linalg.norm(omega, axis=1), 0.0) * dt
        if not turn.size or not np.max(turn) > FAST_TURN_NOTE:
            return ""
        b = int(np.argmax(turn))
        ratio = self._inertia_ratio(w, b)
        thin = (f", and its inertia about one axis is {ratio:.2g} of its largest (a thin body, which its joints "
                "may leave nearly free about that axis)") if ratio < THIN_BODY_NOTE else ""
        spin = float(np.linalg.norm(omega[b]))
        return (f"; {self.model.body_paths[b]} turned at {math.degrees(spin):.3g} deg/s at the step's start "
                f"({math.degrees(spin * dt):.3g} deg in one step){thin}: a motion faster than the step resolves")

    def _inertia_ratio(self, w: int, b: int) -> float:
        """Body b's smallest principal inertia over its largest in world w (1 for a massless one)."""
        inertia = self.m.inertia.numpy()
        inertia = inertia[min(w, inertia.shape[0] - 1)][b]
        return float(np.min(inertia) / np.max(inertia)) if np.max(inertia) > 0 else 1.0

    def _thin_body_note(self, row: int, w: int) -> str:
        """A body of the stopping row whose inertia about one axis is below THIN_BODY_NOTE of its
        largest, where no body turned fast (_fast_body_note says more then); "" otherwise. Through
        such an axis the step's iteration, whose Jacobians are the step start's, contracts poorly
        even when nothing moves fast (docs/reliability.md: a thin rod carrying friction and a cone)."""
        if not 0 <= row < self.R:
            return ""
        for b in (int(self.rows.b0[row]), int(self.rows.b1[row])):
            if 0 <= b < self.B:
                ratio = self._inertia_ratio(w, b)
                if ratio < THIN_BODY_NOTE:
                    return (f"; {self.model.body_paths[b]}, a body of that joint, has an inertia about one axis "
                            f"{ratio:.2g} of its largest (a thin body: the iteration converges poorly through "
                            "that axis)")
        return ""

    def _raise_blowup(self, status: np.ndarray, dt: float) -> None:
        w = int(np.flatnonzero(status)[0])
        world = f" in world {w}" if self.W > 1 else ""
        if status[w] == 3:
            row = int(self.dg.fail_row.numpy()[w])
            err = float(self.dg.fail_err.numpy()[w])
            t = float(self.dg.fail_time.numpy()[w])
            if not np.isfinite(err) or err >= 1e299:
                what = f"the motion became non-finite (an impulse overflowed) near {self._row_source(row)}"
            elif err > 1.0:  # far beyond any joint's travel in one step: the iteration ran away
                what = f"the Newton iteration diverged ({self._row_source(row)} off by {err:.3g} m or rad)"
            else:
                what = (f"{self._row_source(row)} is still off by {err:.3g} m or rad "
                        f"(tolerance {self.tol * float(K.ACCEPT_FACTOR):.3g})")
            what += self._sequence_lock_note(row, w)
            fast = self._fast_body_note(w, dt)
            what += fast or self._thin_body_note(row, w)
            contact = ("; colliders that overlap at the start push against the joints: filter them "
                       "(physics:filteredPairs, collision groups, physics:collisionEnabled)") if self.cm.n_pairs else ""
            turn = "" if self.max_turn else ", or --max-turn 0.1 (steps retried smaller where a body turns fast)"
            raise UsdphysError(
                f"the step at t = {t:.6g} s{world} did not converge, even reduced to dt/{2 ** K.MAX_HALVINGS}: "
                f"{what}. Check that the joints can all hold at once (consistent frames, limits that leave "
                f"room){contact}; or try a smaller --dt{turn}."
            )
        body = int(self.dg.fail_body.numpy()[w])
        step = int(self.dg.fail_step.numpy()[w])
        what = "non-finite state (NaN/inf)" if status[w] == 1 else "runaway motion (speed or position beyond any physical range)"
        path = self.model.body_paths[body] if 0 <= body < self.B else "?"
        raise UsdphysError(
            f"simulation blew up at t = {step * dt:.6g} s{world}: body {path} has a {what}. "
            "Try a smaller --dt, or check masses, inertias, drive gains and joint frames."
        )


def _struct_arrays(structs, nested: bool = True) -> list:
    """Every Warp array in the given struct instances (and in the structs they hold, if nested)."""
    arrays = []
    for s in structs:
        for name in s._cls.vars:
            v = getattr(s, name)
            if isinstance(v, wp.array):
                arrays.append(v)
            elif nested and hasattr(v, "_cls"):
                arrays.extend(_struct_arrays([v]))
    return arrays
