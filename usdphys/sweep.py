"""Sweeps: many variants of one stage, on every local core or a Ray cluster (docs/sweeps.md).

    from usdphys.sweep import sweep
    summary = sweep("mechanism.usda", "sweep.yaml", "out/")       # out/results.csv (+ .parquet)
    summary = sweep("mechanism.usda", spec_dict, "out/", backend="ray", address="ray://head:10001")

The spec (usdphys.sweepspec) lists variants as attribute overrides in stage units. Overrides
that are per-world parameters (Model.param_sources: masses, gains, gravity, ...) vary per world;
the others (a joint frame, a centre of mass, a start pose) change the model, so they are
authored in the stage's session layer (usdphys.usd.overrides) and the stage is read again.
Variants with the same model overrides form batches, one simulate call each with a world per
variant; batches are packed into tasks, and a task runs in one worker process on one thread
(threads=1: the pool already uses every core).

The table has one row per variant: its id, hash, status ('ok' or 'error'), error, the override
values and the metrics. It is rewritten atomically after every finished task, so an
interrupted sweep loses only the tasks that were running; a re-run skips every variant whose
hash (stage file, overrides, run settings, metrics) is already a row. A variant that fails is
a row with its error and the sweep goes on.
"""
from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from usdphys.errors import UsdphysError
from usdphys.sweepspec import Metric, SweepSpec, file_digest, load_spec, parse_key, variant_hash

RESULTS = "results.csv"
LAYERS = "layers"
BACKENDS = ("local", "ray")
FIXED_COLUMNS = ("variant", "hash", "status", "error", "warnings")
MAX_TASK = 64  # variants per task by default at most: a task is what an interruption can lose


@dataclass
class Batch:
    """Variants that share one model: the same model overrides (`model_keys`' values, authored
    in the session layer), per-world parameter overrides of their own. One simulate call, one
    world per variant."""

    model_overrides: dict  # {key: value}: what changes the model itself (empty: the stage as it is)
    variants: list[tuple[int, str, dict]]  # (id, hash, all of the variant's overrides)
    world_keys: list[str]  # the keys that are per-world parameters


@dataclass
class Task:
    """What one worker runs: picklable, self-contained (the worker opens the stage itself)."""

    stage_path: str
    run: dict
    metrics: list[Metric]
    batches: list[Batch]
    layers_dir: str | None = None
    allow_missing: bool = False

    @property
    def variants(self) -> list[tuple[int, str, dict]]:
        return [v for b in self.batches for v in b.variants]


@dataclass
class SweepSummary:
    table: Path
    variants: int
    ran: int
    skipped: int
    failed: int
    tasks: int
    wall_s: float
    parquet: Path | None = None
    warned: int = 0  # rows with warnings (their warnings column says which)
    rows: list[dict] = field(default_factory=list, repr=False)


# ---------------------------------------------------------------------------- metrics
def metric_columns(metric: Metric) -> list[str]:
    if metric.kind == "pose":
        return [f"{metric.prim}.position.{c} [m]" for c in "xyz"] + [f"{metric.prim}.orientation.{c}" for c in "xyzw"]
    if metric.kind == "residual":
        return ["max constraint residual [m or rad]"]
    if metric.kind == "joint":
        return [f"{metric.prim}.coordinate:{metric.coordinate}.{s}" for s in metric.stats]
    return [f"{metric.prim}.effort.{s} [N or N m]" for s in metric.stats]


def _number(v) -> str:
    return repr(float(v))  # repr round-trips every double: a table read back equals what ran


def _metrics_of(res, w: int, metrics: list[Metric]) -> dict:
    row: dict[str, str] = {}
    for m in metrics:
        cols = metric_columns(m)
        if m.kind == "pose":
            b = res.body_paths.index(m.prim)
            vals = list(res.positions[-1, w, b]) + list(res.orientations[-1, w, b])
        elif m.kind == "residual":
            vals = [res.max_constraint_error[w]]
        elif m.kind == "joint":
            series = np.asarray(res.channel(m.prim, f"coordinate:{m.coordinate}"))[:, w]
            unit = next(c.unit for c in res.channels if c.prim == m.prim and c.name == f"coordinate:{m.coordinate}")
            cols = [f"{c} [{unit}]" for c in cols]
            pick = {"min": lambda: series.min(), "max": lambda: series.max(), "final": lambda: series[-1]}
            vals = [json.dumps([float(x) for x in series]) if s == "series" else pick[s]() for s in m.stats]
        else:
            k = res.motor_paths.index(m.prim)
            effort = np.asarray(res.motor_efforts)[1:, w, k]  # frame 0 holds no step yet
            pick = {"min": effort.min, "max": effort.max, "final": lambda: effort[-1]}
            vals = [pick[s]() for s in m.stats]
        for c, v in zip(cols, vals):
            if isinstance(v, str):
                row[c] = v
                continue
            if not math.isfinite(float(v)):
                raise UsdphysError(f"{c} is not finite ({v}): the run went wrong")
            row[c] = _number(v)
    return row


# ---------------------------------------------------------------------------- worker
def run_task(task: Task) -> list[dict]:
    """Run one task's variants; every variant gives a row (status 'error' with the message
    when it fails). Runs in a worker process (local pool or Ray) or in this one. usdphys'
    warnings go to the rows' warnings column, not to the worker's stderr (where a thousand
    variants would repeat them without saying whose they are)."""
    from usdphys.errors import logger

    handler = _Collect()
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        return _run_task(task, handler)
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _Collect:
    """A logging handler keeping the messages since the last take()."""

    level = 0

    def __init__(self):
        self.messages: list[str] = []

    def handle(self, record) -> None:
        self.messages.append(record.getMessage())

    def take(self) -> str:
        out = "; ".join(dict.fromkeys(" ".join(m.split()) for m in self.messages))
        self.messages = []
        return out


def _run_task(task: Task, collect: _Collect) -> list[dict]:
    import importlib

    import usdphys.usd  # noqa: F401  (schemas registered before any stage exists)

    # looked up at call time (not `from ... import simulate`), so a test can count the calls
    simulate_module = importlib.import_module("usdphys.simulate")

    groups = "joints" if any(m.kind == "joint" for m in task.metrics) else None
    settings = dict(duration=task.run.get("duration"), dt=task.run.get("dt"), fps=task.run.get("fps"),
                    allow_missing=task.allow_missing, record=groups, threads=1)
    stage = None
    rows = []
    for batch in task.batches:
        target = task.stage_path
        if batch.model_overrides:
            from usdphys.usd.overrides import override_in_session
            from usdphys.usd.stage import open_stage

            if stage is None:
                stage = open_stage(task.stage_path, allow_missing=task.allow_missing)
            override_in_session(stage, batch.model_overrides)  # this batch's model; the input is untouched
            target = stage
        rows += _run_batch(simulate_module.simulate, task, target, batch.variants, batch.world_keys, settings, collect)
    return rows


def _run_batch(simulate, task: Task, target, variants, world_keys, settings, collect: _Collect) -> list[dict]:
    """One simulate call with a world per variant. Where a variant's values would change the
    model's rows, that variant runs as its own model and the rest as a batch again; where the
    call fails otherwise, each variant alone, so each row gets its own outcome."""
    from usdphys.types.params import StructureChangeError

    W = len(variants)
    overrides = {k: np.array([v[2][k] for v in variants], float) if W > 1 else variants[0][2][k] for k in world_keys}
    try:
        res = simulate(target, worlds=W, overrides=overrides, **settings)
    except StructureChangeError as exc:
        # values that add or remove a row (gains or a cone side set to 0, a distance joint closed):
        # that variant runs as its own model, the others as a batch again
        collect.take()
        w = exc.world if 0 <= exc.world < W else 0
        rest = variants[:w] + variants[w + 1:]
        return [_run_as_model(simulate, task, variants[w], settings, collect)] + (
            _run_batch(simulate, task, target, rest, world_keys, settings, collect) if rest else [])
    except UsdphysError as exc:
        if W == 1:
            return [dict(_error_row(variants[0], str(exc)), warnings=collect.take())]
        collect.take()
        return [row for v in variants for row in _run_batch(simulate, task, target, [v], world_keys, settings, collect)]
    warnings = collect.take()  # the model's: every world of the batch shares them
    return [dict(_row(task, v, res, w), warnings=warnings) for w, v in enumerate(variants)]


def _run_as_model(simulate, task: Task, variant, settings, collect: _Collect) -> dict:
    """A variant whose values add or remove a row of the stage's model (cannot be one of its
    worlds): every override authored in a session layer, the stage read as a model of its own."""
    from usdphys.usd.overrides import override_in_session
    from usdphys.usd.stage import open_stage

    stage = open_stage(task.stage_path, allow_missing=task.allow_missing)
    override_in_session(stage, variant[2])
    try:
        res = simulate(stage, worlds=1, **settings)
    except UsdphysError as exc:
        return dict(_error_row(variant, str(exc)), warnings=collect.take())
    return dict(_row(task, variant, res, 0), warnings=collect.take())


def _row(task: Task, variant, res, w: int) -> dict:
    vid, h, overrides = variant
    try:
        row = {"variant": str(vid), "hash": h, "status": "ok", "error": "", "warnings": ""}
        row.update({k: _number(v) for k, v in overrides.items()})
        row.update(_metrics_of(res, w, task.metrics))
        if task.layers_dir is not None:
            _write_layer(task, variant, res, w)
        return row
    except UsdphysError as exc:
        return _error_row(variant, str(exc))


def _error_row(variant, message: str) -> dict:
    vid, h, overrides = variant
    row = {"variant": str(vid), "hash": h, "status": "error", "error": " ".join(message.split()), "warnings": ""}
    row.update({k: _number(v) for k, v in overrides.items()})
    return row


def _write_layer(task: Task, variant, res, w: int) -> None:
    from usdphys.usd.overrides import override_layer
    from usdphys.usd.record import write_result
    from usdphys.usd.stage import open_stage

    stage = res.stage if res.stage is not None else open_stage(task.stage_path, allow_missing=task.allow_missing)
    extra = override_layer(stage, variant[2], res.assembly_layer)
    out = Path(task.layers_dir) / f"variant-{variant[0]:06d}.usda"
    write_result(stage, res.body_paths, res.positions[:, w], res.orientations[:, w], res.fps, out,
                 res.model.meters_per_unit, task.stage_path, extra_layer=extra, channels=res.channels, world=w)


# ---------------------------------------------------------------------------- table
def read_results(path: Path) -> list[dict]:
    """Rows of a results table written by a sweep (CSV)."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or list(reader.fieldnames[:len(FIXED_COLUMNS)]) != list(FIXED_COLUMNS):
                raise UsdphysError(f"{path}: not a sweep results table (expected columns "
                                   f"{', '.join(FIXED_COLUMNS)} first); choose another output folder")
            return [dict(r) for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsdphysError(f"{path}: cannot read: {exc}") from None


def _columns(spec: SweepSpec, rows: list[dict]) -> list[str]:
    cols = list(FIXED_COLUMNS) + list(spec.keys)
    for m in spec.metrics:
        for c in metric_columns(m):
            if m.kind == "joint":
                c = next((k for r in rows for k in r if k.startswith(c + " [")), c)
            cols.append(c)
    return list(dict.fromkeys(cols))


def write_results(outdir: Path, spec: SweepSpec, rows: list[dict], parquet: bool) -> Path | None:
    """results.csv (and results.parquet when pyarrow is there), each written atomically."""
    from usdphys.outfile import write_atomic

    rows = sorted(rows, key=lambda r: int(r["variant"]))
    cols = _columns(spec, rows)

    def write_csv(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=cols, restval="", extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)

    write_atomic(outdir / RESULTS, write_csv)
    if not parquet:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = {}
    for c in cols:
        vals = [r.get(c, "") for r in rows]
        if c in ("variant",):
            data[c] = pa.array([int(v) for v in vals], pa.int64())
        elif c in FIXED_COLUMNS or c.endswith("series [deg]") or ".series [" in c:
            data[c] = pa.array(vals, pa.string())
        else:
            data[c] = pa.array([float(v) if v != "" else None for v in vals], pa.float64())
    table = pa.table(data)
    out = outdir / "results.parquet"
    write_atomic(out, lambda tmp: pq.write_table(table, tmp))
    return out


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------- planning
def plan(stage_path: str, spec: SweepSpec, done: set[str], task_size: int | None, workers: int,
         layers_dir: str | None, allow_missing: bool) -> tuple[list[Task], list[tuple[int, str, dict]]]:
    """(tasks to run, every variant as (id, hash, overrides)). Checks every key and metric
    against the stage first: a bad one is a one-line error naming the spec's line."""
    from usdphys.usd.overrides import check_overrides, describe_stage

    info = describe_stage(stage_path, allow_missing=allow_missing)
    for key in spec.keys:
        try:
            check_overrides(info["stage"], [key])
        except UsdphysError as exc:
            raise UsdphysError(f"{spec.where(key)}: {exc}") from None
    for i, m in enumerate(spec.metrics):
        known = {"pose": ("bodies", "body"), "joint": ("joints", "joint"), "motor_effort": ("motors", "motor")}.get(m.kind)
        if known and m.prim not in info[known[0]]:
            raise UsdphysError(f"{spec.where(f'metrics[{i}]')}.prim: {m.prim} is not a simulated {known[1]} "
                               f"(the stage has: {', '.join(info[known[0]][:6]) or 'none'})")
    world_keys = [k for k in spec.keys
                  if parse_key(k)[2] is None and f"{parse_key(k)[0]}.{parse_key(k)[1]}" in info["parameter_keys"]]
    model_keys = [k for k in spec.keys if k not in world_keys]
    digest = file_digest(stage_path)
    variants = [(i, variant_hash(v, spec.run, spec.metrics, digest), v) for i, v in enumerate(spec.variants)]
    pending = [v for v in variants if v[1] not in done]
    size = task_size or spec.task_size or max(1, min(MAX_TASK, math.ceil(len(pending) / (4 * max(workers, 1)))))
    # variants sharing their model overrides share a model: worlds of one batch
    groups: dict[tuple, list] = {}
    for v in pending:
        groups.setdefault(tuple(v[2][k] for k in model_keys), []).append(v)
    tasks: list[Task] = []
    room = 0
    for values, members in groups.items():
        model_overrides = dict(zip(model_keys, values))
        while members:
            if room == 0:
                tasks.append(Task(stage_path, spec.run, spec.metrics, [], layers_dir, allow_missing))
                room = size
            take, members = members[:room], members[room:]
            tasks[-1].batches.append(Batch(model_overrides, take, world_keys))
            room -= len(take)
    return tasks, variants


# ---------------------------------------------------------------------------- backends
def _run_local(tasks: list[Task], workers: int):
    """Yield each task's rows as it finishes: in this process for one worker, else on a
    process pool (spawned workers: the parent has USD threads running, which fork would copy)."""
    if workers == 1:
        for t in tasks:
            yield run_task(t)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    finished = False
    try:
        futures = [pool.submit(run_task, t) for t in tasks]
        for f in as_completed(futures):
            yield f.result()
        finished = True
    finally:
        if not finished:
            # interrupted (Ctrl-C, SIGTERM, an error): stop the running tasks now rather than wait
            # for them; their variants are not in the table and run again on the next call
            # (Python 3.14 has pool.terminate_workers(); before it, the pool's own processes)
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
        pool.shutdown(wait=finished, cancel_futures=True)


def _ray():
    try:
        import ray
    except ImportError:
        raise UsdphysError("--backend ray needs Ray (pip install 'usdphys[ray]')") from None
    return ray


def _run_ray(tasks: list[Task], address: str | None, workers: int | None):
    ray = _ray()
    started = False
    if not ray.is_initialized():
        kwargs = {"address": address} if address else ({"num_cpus": workers} if workers else {})
        try:
            ray.init(ignore_reinit_error=True, include_dashboard=False, logging_level="ERROR", **kwargs)
        except Exception as exc:  # Ray's own connection errors have many types
            raise UsdphysError(f"Ray did not start{f' at {address}' if address else ''}: {exc}") from None
        started = True
    remote = ray.remote(num_cpus=1)(run_task)
    refs = [remote.remote(t) for t in tasks]
    try:
        while refs:
            ready, refs = ray.wait(refs, num_returns=1)
            yield ray.get(ready[0])
    finally:
        for r in refs:
            ray.cancel(r, force=True)
        if started:
            ray.shutdown()


class _Progress:
    """'sweep [#####.....] 50/100 variants, 2 failed, 12.3 s' on stderr (a terminal only)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled and sys.stderr.isatty()
        self.start = time.perf_counter()

    def __call__(self, done: int, failed: int) -> None:
        if not self.enabled:
            return
        fill = int(30 * done / max(self.total, 1))
        sys.stderr.write(f"\rsweep [{'#' * fill}{'.' * (30 - fill)}] {done}/{self.total} variants, {failed} failed, "
                         f"{time.perf_counter() - self.start:.1f} s")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------------- entry
def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (containers, taskset)
    except AttributeError:
        return os.cpu_count() or 1


def sweep(stage_path, spec, outdir, backend: str = "local", address: str | None = None,
          workers: int | None = None, layers: bool = False, progress: bool = False,
          task_size: int | None = None, allow_missing: bool = False) -> SweepSummary:
    """Run every variant of `spec` (a YAML path or a dict) over the stage file and write
    outdir/results.csv (+ results.parquet with pyarrow; + layers/variant-NNNNNN.usda with
    layers=True). Variants already in outdir's table (same hash) are not run again.

    backend 'local': a process pool of `workers` processes (default: every core; 1 runs in
    this process); 'ray': Ray tasks, on a local Ray (`ray.init()`) or the cluster at `address`."""
    t0 = time.perf_counter()
    if backend not in BACKENDS:
        raise UsdphysError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if address is not None and backend != "ray":
        raise UsdphysError("an address is for the ray backend (--backend ray --address ADDR)")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsdphysError(f"workers must be a whole number >= 1, got {workers!r}")
    if backend == "ray":
        _ray()  # before anything is planned or written
    stage_path = os.fspath(stage_path)
    if not Path(stage_path).is_file():
        raise UsdphysError(f"{stage_path}: file not found")
    spec = spec if isinstance(spec, SweepSpec) else load_spec(spec)
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise UsdphysError(f"{out}: exists and is not a folder")
    if not out.parent.resolve().is_dir():
        raise UsdphysError(f"{out}: folder {out.parent} does not exist")
    table = out / RESULTS
    previous = read_results(table) if table.exists() else []
    layers_dir = str((out / LAYERS).resolve()) if layers else None
    local_workers = workers or _cores()
    tasks, variants = plan(str(Path(stage_path).resolve()), spec, {r["hash"] for r in previous}, task_size,
                           local_workers, layers_dir, allow_missing)
    ids = {h: i for i, h, _ in variants}
    stale = [r for r in previous if r["hash"] not in ids]
    if stale:
        raise UsdphysError(f"{table}: {len(stale)} row(s) belong to another sweep (a different stage file, run "
                           "settings, metrics or override values); choose another output folder or delete it")
    out.mkdir(exist_ok=True)  # only now: a bad spec or stage leaves nothing behind
    if layers:
        (out / LAYERS).mkdir(exist_ok=True)
    rows = {r["hash"]: dict(r, variant=str(ids[r["hash"]])) for r in previous}
    parquet = _has_pyarrow()
    skipped = len(rows)
    bar = _Progress(len(variants), progress)
    failed = sum(r["status"] != "ok" for r in rows.values())
    bar(len(rows), failed)
    runner = _run_local(tasks, local_workers) if backend == "local" else _run_ray(tasks, address, workers)
    pq_path = None
    if not tasks:
        pq_path = write_results(out, spec, list(rows.values()), parquet)
    try:
        for task_rows in runner:
            for r in task_rows:
                rows[r["hash"]] = r
                failed += r["status"] != "ok"
            pq_path = write_results(out, spec, list(rows.values()), parquet)
            bar(len(rows), failed)
    finally:
        runner.close()  # an interruption stops the pool / cancels the Ray tasks now
    final = sorted(rows.values(), key=lambda r: int(r["variant"]))
    return SweepSummary(table=table, variants=len(variants), ran=len(rows) - skipped, skipped=skipped,
                        failed=sum(r["status"] != "ok" for r in final), tasks=len(tasks),
                        wall_s=time.perf_counter() - t0, parquet=pq_path,
                        warned=sum(bool(r.get("warnings")) for r in final), rows=final)


__all__ = ["BACKENDS", "SweepSummary", "Task", "read_results", "run_task", "sweep", "write_results"]
