"""Host -> device: the solver's model, state and scratch (docs/solver.md, "Host / device layout").

Kernels take their data in groups of Warp structs (step.py), kept side by side rather than
nested because Warp passes structs to functions by value:

- model (``put_model``): ``ModelData`` + ``ContactModel``, read-only, shared by all worlds.
  Bodies, the full constraint row table (joint rows, then element rows), element columns,
  packed force laws, time functions, loads; shapes, candidate pairs, materials. Built once.
- state (``make_state``): ``StateData`` + ``RowState`` + ``ElementState`` + ``ContactState``,
  what one step hands to the next, per world; the step kernels update it in place. Poses and
  half-step velocities, the equal rows' impulse history (warm start), the element state, the
  previous step's contacts.
- ``Scratch`` (``make_scratch``): the step's work buffers (Jacobians, A, its LDL factor,
  impulses, residuals); only the factor is reused across steps, as a cache (step.py).
- ``Diagnostics`` (``make_diagnostics``) and ``FrameOutput`` (``make_output``): written by the
  kernels for the host.

Nothing here imports pxr: the input is a usdphys.types.model.Model (flat numpy arrays, SI).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import warp as wp

from usdphys.solver import forces
from usdphys.solver import step as K
from usdphys.solver.contact import ContactModel, ContactOptions, ContactState, make_contact_state, put_contact_model
from usdphys.solver.ldl import put_pattern
from usdphys.types.enums import RowKind, RowMode
from usdphys.types.model import MODE_EQUAL, Model, RowTable
from usdphys.types.rowgraph import RowPattern, row_pattern


@dataclass
class DeviceState:
    """make_state's result: the per-world state structs the step kernels update in place."""

    data: K.StateData  # poses, velocities
    rows: K.RowState  # equal-row impulse history (warm start)
    elements: forces.ElementState  # law-row forces, unwrapped angles, rates, motor references, stick flags, time
    contact: ContactState  # the previous step's contacts and impulses, contact counters


@dataclass
class DeviceModel:
    """put_model's result: the kernels' ModelData plus the host-side facts the driver needs."""

    data: K.ModelData  # kernel parameter
    contact: ContactModel  # kernel parameter; n_pairs = 0: nothing collides
    rows: RowTable  # the solver's full row table (joint rows, bushings applied, element rows)
    elements: forces.ElementRows  # row names (messages), motor rows and paths, laws, functions
    contact_info: dict  # candidate pairs, contacts per world (capacity), method, shape table
    inv_mass: np.ndarray  # (B,) 0 for kinematic or massless bodies
    body_count: int
    row_count: int
    pattern: RowPattern  # the row system's elimination order and factor pattern (host copy)
    axial_force_law: object = field(default=None)  # compiled into the kernels (forces.set_axial_force_law)

    @property
    def motor_count(self) -> int:
        return int(self.elements.motor_rows.shape[0])


def _arr(data, dtype, device, shape=None):
    a = np.ascontiguousarray(data, dtype=np.float64 if dtype not in (wp.int32,) else np.int32)
    if shape is not None:
        a = a.reshape(shape)
    return wp.array(a, dtype=dtype, device=device)


def _pad(a, n, width):
    """Per-body / per-row column with at least one entry (Warp arrays may not be empty)."""
    a = np.asarray(a, float).reshape(-1, width) if width else np.asarray(a).reshape(-1)
    if a.shape[0] == 0:
        return np.zeros((n, width) if width else (n,), dtype=a.dtype)
    return a


def lever_length(rows: RowTable) -> float:
    """The model's typical lever arm (m): RMS distance of the rows' frames from their bodies'
    centres of mass, clipped to [1 mm, 1 km]. It weighs rotations against translations in the
    mass-free rank test, so the test does not depend on the unit of length."""
    arms = [np.asarray(p, float)[np.asarray(b) >= 0] for p, b in ((rows.p0, rows.b0), (rows.p1, rows.b1))]
    arms = np.concatenate([a.reshape(-1, 3) for a in arms])
    if arms.size == 0:
        return 1.0
    rms = float(np.sqrt(np.mean(np.sum(arms * arms, axis=1))))
    return float(np.clip(rms, 1e-3, 1e3)) if np.isfinite(rms) and rms > 0 else 1.0


def twist_limit_ranges(model: Model, rows) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the [lower, upper] range (rad) of the joint DOF a twist limit row bounds;
    (-inf, inf) for every other row. The kernel starts the unwrapped coordinate inside it."""
    n = rows.count
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    kind, mode, src, axis = (np.asarray(a) for a in (rows.kind, rows.mode, rows.source, rows.axis))
    for i in np.flatnonzero((kind == RowKind.TWIST) & ((mode == RowMode.LOWER) | (mode == RowMode.UPPER))):
        j = int(src[i])
        if 0 <= j < model.joint_count:
            lo[i] = model.joint_lower[j, 3 + int(axis[i])]
            hi[i] = model.joint_upper[j, 3 + int(axis[i])]
    return lo, hi


def put_model(model: Model, device=None, contact: ContactOptions | None = None,
              axial_force_law=None) -> DeviceModel:
    """Upload everything the step reads and never writes, shared by all worlds.

    contact: contact solver options (None: defaults); axial_force_law: a user @wp.func for
    axial force elements (None: the built-in law). The law is compiled into the step kernel,
    so it is installed here and must be re-installed before launching (Solver.run does)."""
    dev = wp.get_device(device)
    B = model.body_count
    rows = model.constraint_rows()
    # force elements, motors, bushings, NewtonJointAPI: extra rows + loads
    forces.set_axial_force_law(axial_force_law)  # None: the built-in law
    elements = forces.build_element_rows(model, rows)
    rows = elements.rows
    R = rows.count
    Rn = max(R, 1)
    Bn = max(B, 1)

    m = K.ModelData()
    m.n_bodies = B
    m.n_rows = R
    m.gravity = wp.vec3d(*np.asarray(model.gravity, float))
    dyn = ~np.asarray(model.body_kinematic, bool)
    mass = np.asarray(model.body_mass, float)
    inertia = np.asarray(model.body_inertia, float).reshape(-1, 3)
    inv_mass = np.where(dyn & (mass > 0), 1.0 / np.where(mass > 0, mass, 1.0), 0.0)
    inv_inertia = np.where((dyn & (mass > 0))[:, None] & (inertia > 0), 1.0 / np.where(inertia > 0, inertia, 1.0), 0.0)
    m.inv_mass = _arr(_pad(inv_mass, Bn, 0), wp.float64, dev)
    m.inertia = _arr(_pad(np.where(inertia > 0, inertia, 1.0), Bn, 3), wp.vec3d, dev)
    m.inv_inertia = _arr(_pad(inv_inertia, Bn, 3), wp.vec3d, dev)
    m.row_kind = _arr(_pad(rows.kind, Rn, 0), wp.int32, dev)
    m.row_axis = _arr(_pad(rows.axis, Rn, 0), wp.int32, dev)
    m.row_mode = _arr(_pad(rows.mode, Rn, 0), wp.int32, dev)
    m.row_value = _arr(_pad(rows.value, Rn, 0), wp.float64, dev)
    m.row_b0 = _arr(_pad(rows.b0, Rn, 0), wp.int32, dev)
    m.row_b1 = _arr(_pad(rows.b1, Rn, 0), wp.int32, dev)
    pattern = row_pattern(rows.b0, rows.b1)  # elimination order and factor pattern (sparse LDL)
    m.pat = put_pattern(pattern, dev)
    m.row_p0 = _arr(_pad(rows.p0, Rn, 3), wp.vec3d, dev)
    m.row_q0 = _arr(_pad(rows.q0, Rn, 4), wp.quatd, dev)
    m.row_p1 = _arr(_pad(rows.p1, Rn, 3), wp.vec3d, dev)
    m.row_q1 = _arr(_pad(rows.q1, Rn, 4), wp.quatd, dev)
    m.row_k = _arr(_pad(rows.stiffness, Rn, 0), wp.float64, dev)
    m.row_c = _arr(_pad(rows.damping, Rn, 0), wp.float64, dev)
    m.row_tv = _arr(_pad(rows.target_vel, Rn, 0), wp.float64, dev)
    m.row_fmax = _arr(_pad(np.minimum(rows.max_force, 1e300), Rn, 0), wp.float64, dev)
    m.row_accel = _arr(_pad(rows.accel, Rn, 0), wp.int32, dev)
    lo, hi = twist_limit_ranges(model, rows)
    m.row_lo = _arr(_pad(lo, Rn, 0), wp.float64, dev)
    m.row_hi = _arr(_pad(hi, Rn, 0), wp.float64, dev)
    m.geo_ang = wp.float64(1.0 / lever_length(rows) ** 2)
    m.el = forces.element_data(elements, dev)
    m.has_elements = int(forces.has_elements(elements))
    # contact: shapes, candidate pairs, materials
    cm, contact_info = put_contact_model(model, dev, contact)
    # modified Newton across steps (step.py, REFACTOR_EVERY) and extrapolated impulses: only when A cannot change by
    # more than the motion does, i.e. all rows are equal rows (no drives, limits, elements'
    # law / friction rows, whose diagonals or active sets change) and nothing collides
    m.equal_only = int(R > 0 and bool(np.all(np.asarray(rows.mode) == MODE_EQUAL)) and cm.n_pairs == 0)
    return DeviceModel(data=m, contact=cm, rows=rows, elements=elements, contact_info=contact_info,
                       inv_mass=_pad(inv_mass, Bn, 0), body_count=B, row_count=R, pattern=pattern,
                       axial_force_law=axial_force_law)


def make_state(model: Model, device_model: DeviceModel, worlds: int | None = None, device=None) -> DeviceState:
    """The state at t = 0: the Model's initial COM-frame poses and velocities (one world of a
    single-world Model is repeated), empty impulse history, element and contact state zeroed.
    The velocities are v(0); the driver turns them into the leapfrog v(-h/2) once h is known."""
    dev = wp.get_device(device)
    W = model.world_count if worlds is None else int(worlds)
    B, R = device_model.body_count, device_model.row_count
    Rn = max(R, 1)
    pos, rot, vel, omega = model.com_state()
    if W != model.world_count:
        if model.world_count != 1:
            raise ValueError(f"model has {model.world_count} worlds, cannot make a state of {W}")
        pos, rot, vel, omega = (np.repeat(np.asarray(a).reshape(1, B, -1), W, axis=0) for a in (pos, rot, vel, omega))
    st = K.StateData()
    st.pos = _arr(pos, wp.vec3d, dev, (W, B, 3)) if B else wp.zeros((W, 1), dtype=wp.vec3d, device=dev)
    st.rot = _arr(rot, wp.quatd, dev, (W, B, 4)) if B else wp.zeros((W, 1), dtype=wp.quatd, device=dev)
    st.vel = _arr(vel, wp.vec3d, dev, (W, B, 3)) if B else wp.zeros((W, 1), dtype=wp.vec3d, device=dev)
    st.omega = _arr(omega, wp.vec3d, dev, (W, B, 3)) if B else wp.zeros((W, 1), dtype=wp.vec3d, device=dev)
    rs = K.RowState()
    for name in ("lwarm", "lwarm2", "lwarm3"):
        setattr(rs, name, wp.zeros((W, Rn), dtype=wp.float64, device=dev))
    es = forces.element_state(W, R, dev)
    cs = make_contact_state(W, B, R, device_model.contact_info["capacity"], dev)
    return DeviceState(data=st, rows=rs, elements=es, contact=cs)


def make_scratch(device_model: DeviceModel, worlds: int, device=None) -> K.Scratch:
    """Work buffers of the step kernels (contents carry no meaning between steps, except the
    factorisation cache, which starts stale: fage = -1)."""
    dev = wp.get_device(device)
    W = int(worlds)
    Bn = max(device_model.body_count, 1)
    Rn = max(device_model.row_count, 1)
    sc = K.Scratch()
    for name in ("vstar", "mom", "pos1", "vel1", "omega1", "dv", "dL"):
        setattr(sc, name, wp.zeros((W, Bn), dtype=wp.vec3d, device=dev))
    sc.rot1 = wp.zeros((W, Bn), dtype=wp.quatd, device=dev)
    sc.iinv = wp.zeros((W, Bn), dtype=wp.mat33d, device=dev)
    for name in ("jl0", "ja0", "jl1", "ja1", "wl0", "wa0", "wl1", "wa1"):
        setattr(sc, name, wp.zeros((W, Rn), dtype=wp.vec3d, device=dev))
    for name in ("g0", "sdiag", "sshift", "sinv", "lam", "res", "D", "ly"):
        setattr(sc, name, wp.zeros((W, Rn), dtype=wp.float64, device=dev))
    sc.act = wp.zeros((W, Rn), dtype=wp.int32, device=dev)
    sc.keep = wp.zeros((W, Rn), dtype=wp.int32, device=dev)
    sc.rank_indep = wp.zeros((W, Rn), dtype=wp.int32, device=dev)
    sc.rank_hard = wp.zeros((W, Rn), dtype=wp.int32, device=dev)
    sc.rank_age = wp.full(W, -1, dtype=wp.int32, device=dev)
    nnz = max(device_model.pattern.count, 1)  # A and its factor: the pattern's entries only
    sc.A = wp.zeros((W, nnz), dtype=wp.float64, device=dev)
    sc.Lf = wp.zeros((W, nnz), dtype=wp.float64, device=dev)
    sc.fage = wp.full(W, -1, dtype=wp.int32, device=dev)
    sc.rfresh = wp.zeros(W, dtype=wp.int32, device=dev)
    sc.conv_err = wp.zeros(W, dtype=wp.float64, device=dev)
    return sc


def make_diagnostics(worlds: int, device=None) -> K.Diagnostics:
    dev = wp.get_device(device)
    W = int(worlds)
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
    return dg


def make_output(device_model: DeviceModel, worlds: int, frames: int, device=None) -> K.FrameOutput:
    """Poses and motor efforts of frames 0 .. frames (frame 0: the assembled start)."""
    dev = wp.get_device(device)
    W = int(worlds)
    Bn = max(device_model.body_count, 1)
    out = K.FrameOutput()
    out.pos = wp.zeros((frames + 1, W, Bn), dtype=wp.vec3d, device=dev)
    out.rot = wp.zeros((frames + 1, W, Bn), dtype=wp.quatd, device=dev)
    out.eff = wp.zeros((frames + 1, W, max(device_model.motor_count, 1)), dtype=wp.float64, device=dev)
    return out


__all__ = ["DeviceModel", "DeviceState", "make_diagnostics", "make_output", "make_scratch", "make_state", "put_model"]
