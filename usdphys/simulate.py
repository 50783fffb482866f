"""Python API: simulate a stage (or a Model) and get every body's poses per frame.

    from usdphys.simulate import simulate
    res = simulate("robot.usda", duration=2.0, dt=1e-3, fps=60, worlds=1)
    res.positions      # (frames, worlds, bodies, 3) body prim origins, metres, world frame
    res.orientations   # (frames, worlds, bodies, 4) unit quaternions, (x, y, z, w)
    res.write("robot_result.usda")

    res = simulate("robot.usda", record="bodies,joints,elements,world")
    res.channel("/World/hinge", "coordinate:angle")   # (frames, worlds) degrees
    res.write_table("robot.csv")                      # docs/recording.md
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from usdphys.errors import UsdphysError
from usdphys.types.enums import RowKind
from usdphys.types.model import Model

DEFAULT_DT = 1.0e-3  # s, when neither the caller nor the stage (mbd:timeStep) says
DEFAULT_DURATION = 5.0  # s, when neither the caller nor the stage (mbd:endTime) says
DEFAULT_FPS = 60.0
# Requests beyond these are mistakes, not runs (10^9 frames of one body is 170 GB of poses;
# 10^10 steps at a microsecond each is three hours): refused before anything is allocated.
MAX_FRAMES = 1e9
MAX_STEPS = 1e10
# Result arrays held at once: the solver's frame buffer, its host copy and the prim-frame poses.
POSE_COPIES = 3
# Per-world solver vectors (usdphys/solver/io.py, forces.py, contact.py), rounded up: per row
# 8 vec3d + 13 float64 + 4 int32 of scratch, 6 float64 of warm-start history, 11 float64 + 1 int32
# of element state, 2 float64 of contact coupling (468 bytes); per body 8 vec3d + a quaternion +
# a 3x3 matrix of scratch, the state and the contact pass's velocity buffers (~554 bytes). Checked
# against the arrays a solver allocates per world (benchmarks/bench_scale.py: chain-300, 1.04 MB; charged 1.08 MB).
BYTES_PER_ROW = 472
BYTES_PER_BODY = 560
# Per contact a world can hold (usdphys/solver/contact.py make_contact_state, narrowphase.py
# allocate_contacts): 6 mat33d + 7 vec3d + 9 float64 + 2 int32 of contact state, 5 int32 +
# 3 vec3d + 1 float64 of the contact record (780 bytes).
BYTES_PER_CONTACT = 780
# Per collision shape: its world pose (56 bytes) and the sweep's order, key and share of the
# pairs in reach (4 + 8 + 8 x 4; usdphys/solver/broadphase.py).
BYTES_PER_SHAPE = 100


@dataclass
class Result:
    times: np.ndarray  # (F,) seconds, F = frames + 1 (t = 0 included)
    body_paths: list[str]
    positions: np.ndarray  # (F, W, B, 3) prim-frame origins, metres
    orientations: np.ndarray  # (F, W, B, 4) prim-frame orientations, xyzw
    fps: float
    dt: float  # the step actually used (divides the frame interval)
    substeps: int
    model: Model
    max_constraint_error: np.ndarray  # (W,) largest joint residual after any step (m or rad)
    stage: object = field(default=None, repr=False)
    input_path: str | None = None
    assembly_layer: object = field(default=None, repr=False)  # SNAP's transforms (session layer), if any
    # MbdMotor prims and their generalised force (N or N m on body1 along / about the DOF) in
    # the last step of every frame: (F, W, M); frame 0 holds 0
    motor_paths: list[str] = field(default_factory=list)
    motor_efforts: np.ndarray | None = None
    # (W,) steps that did not converge at dt and were retried as smaller steps (solver.md)
    reduced_steps: np.ndarray | None = None
    # the recorded quantities (record=...): one Channel per quantity and prim, values (F, W) or
    # (F, W, 3) in SI with angles in degrees (usdphys.types.recording, docs/recording.md)
    channels: list = field(default_factory=list)

    def channel(self, prim: str, name: str) -> np.ndarray:
        """The values of one recorded quantity, e.g. channel('/World/hinge', 'coordinate:angle')."""
        for ch in self.channels:
            if ch.prim == prim and ch.name == name:
                return ch.values
        known = sorted({f"{c.prim}.{c.name}" for c in self.channels})
        raise UsdphysError(f"{prim}: nothing recorded as '{name}' (recorded: {', '.join(known[:12]) or 'nothing'}"
                           f"{', ...' if len(known) > 12 else ''}); pass record=... to simulate")

    def table(self, world: int = 0) -> dict[str, np.ndarray]:
        """One world's recorded quantities as ordered columns 'prim.name [unit]' (time first)."""
        from usdphys.types.recording import table_columns

        self._check_world(world)
        return table_columns(self.times, self.channels, world)

    def write_table(self, path: str | os.PathLike, world: int = 0):
        """Write one world's recorded quantities as CSV (.csv) or Parquet (.parquet; needs pyarrow)."""
        from usdphys.table import write_table

        return write_table(path, self.table(world), input_path=self.input_path)

    def _check_world(self, world: int) -> None:
        if not 0 <= world < self.positions.shape[1]:
            raise UsdphysError(f"world {world} out of range (0..{self.positions.shape[1] - 1})")

    def write(self, path: str | os.PathLike, world: int = 0):
        """Write world `world` as a new layer over the input (atomic; the input is never touched)."""
        if self.stage is None:
            raise UsdphysError("this result was simulated from a Model, not a stage: nothing to write over")
        self._check_world(world)
        from usdphys.usd.record import write_result

        return write_result(self.stage, self.body_paths, self.positions[:, world], self.orientations[:, world],
                            self.fps, path, self.model.meters_per_unit, self.input_path,
                            extra_layer=self.assembly_layer, channels=self.channels, world=world)


def available_memory() -> int | None:
    """Bytes this process can still allocate: MemAvailable (free + reclaimable cache), capped
    by a cgroup v2 memory limit when there is one; free pages where /proc is missing; None
    where neither says."""
    avail = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            return None
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as fh:
            limit = fh.read().strip()
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as fh:
            used = int(fh.read().strip())
        if limit != "max":
            avail = min(avail, max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return avail


def memory_estimate(model: Model, frames: int, worlds: int, record: bool = False) -> tuple[int, int]:
    """(bytes, rows): what a run allocates that grows with frames, worlds and rows.

    Poses: (frames + 1) x worlds x bodies x (3 + 4) float64, held POSE_COPIES times; motor
    efforts likewise (twice); per world, the solver's row system: A and its LDL factor hold
    only the entries of the factor's sparse pattern (usdphys.types.rowgraph: every pair of rows
    that share a body, plus the fill of closed loops), 2 x 8 bytes each, plus BYTES_PER_ROW of
    row vectors (Jacobians, impulses, residuals, element state) and BYTES_PER_BODY of body
    vectors. Rows are the joints' rows plus at least one per force element (a lower bound:
    some elements take more; the pattern is the joint rows'). record: recorded quantities too,
    per frame and world about 6 numbers per body, 18 per joint (6 DOFs' coordinate, rate and
    flag; force and torque), 4 per row and 3 more (docs/recording.md), held twice (device and host).
    """
    import dataclasses

    from usdphys.types.rowgraph import row_pattern

    bodies = max(model.body_count, 1)
    joint_rows = model.constraint_rows()
    rows = joint_rows.count
    motors = 0
    el = model.elements
    if el is not None and dataclasses.is_dataclass(el):
        for f in dataclasses.fields(el):
            n = len(getattr(getattr(el, f.name), "paths", None) or [])
            rows += n
            if "motor" in f.name:
                motors += n
    rows = max(rows, 1)
    entries = row_pattern(joint_rows.b0, joint_rows.b1).count + (rows - joint_rows.count)
    poses = (frames + 1) * worlds * bodies * (3 + 4) * 8 * POSE_COPIES
    efforts = (frames + 1) * worlds * max(motors, 1) * 8 * 2
    solver = (entries * 2 * 8 + rows * BYTES_PER_ROW + bodies * BYTES_PER_BODY + _contact_bytes(model, bodies, rows)) * worlds
    recorded = 0
    if record:
        recorded = (frames + 1) * worlds * (6 * bodies + 18 * model.joint_count + 4 * rows + 3) * 8 * 2
    return poses + efforts + solver + recorded, rows


def _contact_bytes(model: Model, bodies: int, rows: int) -> int:
    """Contact buffers per world, an upper bound: the capacity at its cap (contact.default_capacity:
    16 per body + 32), the shapes' poses and sweep buffers, and with joint rows the Delassus matrix through the joints (3x3 blocks of
    at most ContactOptions.dense_contacts contacts) and its probe vectors."""
    if getattr(model, "shapes", None) is None or not len(model.shapes):
        return 0
    from usdphys.solver.contact import ContactOptions

    capacity = 16 * bodies + 32
    total = capacity * BYTES_PER_CONTACT + len(model.shapes) * BYTES_PER_SHAPE
    if model.joint_count:
        nd = min(ContactOptions().dense_contacts, capacity)
        # the matrix, the contacts' velocities and islands (6 numbers each; contact.py _dense_layout),
        # the probe buffers, and the batches' marks (_build_dense: a probe mark per contact; an owner,
        # a union-find parent and an island per row component, at most one per body)
        total += nd * nd * 72 + capacity * (24 + 8 + 6 * 4) + bodies * 2 * 24 + rows * 8 + capacity * 4 + bodies * 3 * 4
    return total


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} PB"


def check_memory(model: Model, frames: int, worlds: int, available: int | None = None, record: bool = False) -> int:
    """Refuse a run whose results and solver matrices would not fit in memory (a one-line
    UsdphysError with the figure and what lowers it) instead of failing with MemoryError
    halfway. Returns the estimate in bytes."""
    need, rows = memory_estimate(model, frames, worlds, record)
    available = available_memory() if available is None else available
    if available is not None and need > available:
        raise UsdphysError(
            f"this run needs about {_size(need)} of memory ({frames + 1} frames x {worlds} world(s) x "
            f"{model.body_count} bodies of poses, the solver's {rows}-row system per world) but "
            f"{_size(available)} is available; lower it with fewer frames (--fps, --duration) or "
            "fewer worlds (--worlds)" + (", or record fewer groups (--record)" if record else ""))
    return need


def _positive(name, value):
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsdphysError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise UsdphysError(f"{name} must be a positive number, got {value!r}")
    return v


class _Progress:
    """A tiny stderr progress bar, drawn only on a terminal (no dependency needed for 20 lines)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last = 0.0
        self.start = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        fill = int(width * done / max(total, 1))
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} frames {now - self.start:6.1f} s")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def simulate(stage_or_path, duration=None, dt=None, fps=None, device=None, worlds: int = 1,
             progress: bool = False, model: Model | None = None,
             allow_missing: bool = False, laws: dict | None = None, record=None,
             parameters: dict | None = None, overrides: dict | None = None,
             threads: int | None = None, tol: float | None = None, max_turn: float | None = None) -> Result:
    """Simulate a USD stage (Usd.Stage or file path) or a Model.

    duration / dt default to the stage's MbdSimulationAPI (mbd:endTime / mbd:timeStep on the
    PhysicsScene), else 5 s and 1 ms; fps defaults to 60. The step used is the largest one
    <= dt that divides the frame interval 1/fps. worlds > 1 replicates the model (the
    initial state of each world can be edited on a Model passed as `model`).
    laws: {name: Warp function} for the spring-dampers whose mbd:userLaw names them, each
    (t, displacement, velocity, stiffness, damping, offset) -> f, all wp.float64 (Exudyn's user
    function; docs/forces.md); an element naming a law not given is an error naming it.
    parameters: per-world parameters (usdphys.types.params.PARAMETERS), SI:
    {name: (W, ...) or one value for every world} or {(name, index): values of one entry},
    e.g. {"body.mass": masses (W, B), ("gravity", 2): [-9.81, -1.62]}.
    overrides: stage attributes in the stage's units, {"/World/crank.physics:mass": one
    value or (W,)}, mapped through the reader's provenance (Model.param_sources).
    device: "cpu", "cuda" or "cuda:N"; None: the CPU, or the GPU when there is one and the run
    has at least 64 worlds per CPU core (solver.driver.default_device: a GPU thread runs one world
    12-18x slower than a CPU core, docs/solver.md).
    threads: CPU threads the worlds are spread over (None: every core when worlds > 1).
    tol: the Newton stopping tolerance on the joints' residuals, m or rad, 1e-15 to 1e-3 (None:
    1e-12, usdphys.solver.driver.DEFAULT_TOL); recorded joint reactions agree with the recorded motion
    to about mass x tol / h^2 (docs/recording.md).
    max_turn: rad; a step in which a body turns more is retried smaller, down to dt/256 (None:
    off). May carry a thin rod's run through a passage near a singular pose where it stops
    otherwise, with no guarantee (docs/solver.md, "Globalised iteration").
    allow_missing: a sublayer, reference, payload or asset path naming a missing file is an
    error unless this is True (then a warning, and the stage is simulated without it).
    record: the groups recorded besides poses, 'bodies,joints,elements,world' (or 'all', a
    list, a RecordGroups): body velocities; joint coordinates, rates, limit flags and reactions;
    element displacements, rates and forces, load vectors and motor efforts; energies and
    constraint residuals. They land in Result.channels (docs/recording.md).
    """
    from usdphys.types.recording import RecordGroups

    groups = RecordGroups.parse(record)
    stage = None
    input_path = None
    defaults = None
    assembly_layer = None
    if isinstance(stage_or_path, Model):
        model = stage_or_path
    elif stage_or_path is not None:
        from usdphys.usd import reader
        from usdphys.usd.assemble import assemble_in_session
        from usdphys.usd.stage import open_stage

        if isinstance(stage_or_path, (str, os.PathLike)):
            input_path = os.fspath(stage_or_path)
            stage = open_stage(input_path, allow_missing=allow_missing)
        else:
            stage = stage_or_path
        assembly_layer = assemble_in_session(stage)
        read_model, defaults = reader.read_stage(stage)
        model = model or read_model
    if model is None:
        raise UsdphysError("nothing to simulate: pass a stage, a file path or a Model")

    if stage is not None and model.body_count == 0:
        raise UsdphysError(f"{input_path or stage.GetRootLayer().identifier}: nothing to simulate: no rigid bodies "
                           "(no prim has PhysicsRigidBodyAPI, or the prims that had one were not composed)")

    duration = _positive("duration", duration) or (defaults.end_time if defaults and defaults.end_time else DEFAULT_DURATION)
    dt = _positive("dt", dt) or (defaults.time_step if defaults and defaults.time_step else DEFAULT_DT)
    fps = _positive("fps", fps) or DEFAULT_FPS
    if isinstance(worlds, bool) or not isinstance(worlds, (int, np.integer)) or worlds < 1:
        raise UsdphysError(f"worlds must be a whole number >= 1, got {worlds!r}")
    frame_dt = 1.0 / fps
    substeps_f = frame_dt / dt
    frames_f = duration * fps
    if not (math.isfinite(frames_f) and frames_f <= MAX_FRAMES):
        raise UsdphysError(f"duration {duration:g} s at {fps:g} fps is more than {MAX_FRAMES:.0e} frames; "
                           "lower --duration or --fps")
    if not (math.isfinite(substeps_f) and substeps_f * max(frames_f, 1) <= MAX_STEPS):
        raise UsdphysError(f"dt {dt:g} s over {duration:g} s is more than {MAX_STEPS:.0e} steps; "
                           "use a larger --dt or a shorter --duration")
    substeps = max(1, math.ceil(substeps_f - 1e-9))
    h = frame_dt / substeps
    frames = max(1, math.ceil(frames_f - 1e-9))
    if model.world_count != worlds and model.world_count != 1:
        raise UsdphysError(f"model has {model.world_count} worlds but worlds={worlds} was asked")
    check_memory(model, frames, int(worlds), record=groups.any)  # before replicate(): that alone can be too big
    if model.world_count != worlds:
        model = model.replicate(worlds)
    if parameters or overrides:
        model = _with_parameters(model, parameters or {}, overrides or {})

    from usdphys.solver import Solver
    from usdphys.solver.driver import DEFAULT_TOL
    from usdphys.types.fixedmerge import merge_fixed_joints

    # bodies welded by fixed joints run as one rigid body (the same motion); recorded joint
    # reactions need the welds as joints, so a recording run keeps them
    solved, welds = (model, None) if groups.any else merge_fixed_joints(model)
    solver = Solver(solved, device=device, laws=laws, threads=threads, max_turn=max_turn,
                    tol=DEFAULT_TOL if tol is None else tol)
    run = solver.run(frames, substeps, h, progress=_Progress(progress), record=groups)
    com_pos, com_rot = (run.pos, run.rot) if welds is None else welds.expand(run.pos, run.rot)
    pos, rot = model.prim_from_com(com_pos, com_rot)
    from usdphys.solver.outputs import channels as make_channels

    er = solver.elements
    motor_angular = np.asarray(er.rows.kind)[np.asarray(er.motor_rows, int)] == RowKind.TWIST
    world_prim = (defaults.scene_path if defaults and defaults.scene_path else None) or _default_prim(stage)
    chans = make_channels(run.layout, run.outputs, list(model.body_paths), list(er.motor_paths), run.motor_effort,
                          motor_angular, world_prim)
    return Result(times=np.arange(frames + 1) / fps, body_paths=list(model.body_paths), positions=pos,
                  orientations=rot, fps=fps, dt=h, substeps=substeps, model=model,
                  max_constraint_error=run.max_constraint_error, stage=stage, input_path=input_path,
                  assembly_layer=assembly_layer, motor_paths=list(solver.elements.motor_paths),
                  motor_efforts=run.motor_effort, reduced_steps=run.reduced_steps, channels=chans)


def _default_prim(stage) -> str:
    """Where world quantities go on a stage without a PhysicsScene: its default prim, else /World."""
    if stage is not None:
        prim = stage.GetDefaultPrim()
        if prim:
            return str(prim.GetPath())
    return "/World"


def _with_parameters(model: Model, parameters: dict, overrides: dict) -> Model:
    """A copy of `model` (the caller's is not changed) with per-world parameters and stage
    attribute overrides applied (usdphys.types.params)."""
    import copy

    from usdphys.types.params import apply_override, split_attribute_path

    if not isinstance(parameters, dict) or not isinstance(overrides, dict):
        raise UsdphysError("parameters and overrides must be dicts")
    out = copy.copy(model)
    out.world_parameters = {k: np.array(v) for k, v in model.world_parameters.items()}
    for key, values in parameters.items():
        if isinstance(key, tuple) and len(key) >= 2 and isinstance(key[0], str):
            index = key[1:] if len(key) > 2 else key[1]
            out.set_parameter(key[0], values, index=index)
        elif isinstance(key, str):
            out.set_parameter(key, values)
        else:
            raise UsdphysError(f"parameters key {key!r}: expected a parameter name or (name, index)")
    for key, values in overrides.items():
        path, attr = split_attribute_path(key)
        apply_override(out, path, attr, values)
    return out
