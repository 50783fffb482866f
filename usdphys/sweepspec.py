"""A sweep's spec: what to vary, how to run each variant, what to keep (docs/sweeps.md).

    spec = load_spec("sweep.yaml")      # or load_spec({...}) from Python
    spec.variants                       # [{"/World/bob.physics:mass": 1.5, ...}, ...] in stage units
    spec.run                            # {"duration": 2.0, "dt": 0.001, "fps": 100}
    spec.metrics                        # [Metric(kind="joint", prim="/World/hinge", ...), ...]

The YAML is checked against SPEC_SCHEMA (jsonschema) and then for what a schema cannot say
(prim paths, ranges); every problem is one UsdphysError naming file:line and the key. An
override key is a prim path and an attribute as authored ('/M/Bodies/crank.physics:mass'),
optionally with a component index for a vector attribute ('/World/bob.physics:centerOfMass[2]').
Values are in the stage's units. No USD, no Warp: the stage is checked by usdphys.usd.overrides.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from usdphys.errors import UsdphysError

STATS = ("min", "max", "final", "series")
METRIC_KINDS = ("pose", "joint", "residual", "motor_effort")
SAMPLE_METHODS = ("uniform", "latin_hypercube")
MAX_VARIANTS = 1_000_000  # a spec asking for more is a typo (a grid of six 100-value lists), not a study

_NUMBER = {"type": "number"}
SPEC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "run": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"duration": {"type": "number", "exclusiveMinimum": 0},
                           "dt": {"type": "number", "exclusiveMinimum": 0},
                           "fps": {"type": "number", "exclusiveMinimum": 0}},
        },
        "grid": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "anyOf": [
                    {"type": "array", "items": _NUMBER, "minItems": 1},
                    {"type": "object", "additionalProperties": False, "required": ["linspace"],
                     "properties": {"linspace": {"type": "array", "items": _NUMBER, "minItems": 3, "maxItems": 3}}},
                ],
            },
        },
        "samples": {
            "type": "object",
            "additionalProperties": False,
            "required": ["method", "count", "ranges"],
            "properties": {
                "method": {"enum": list(SAMPLE_METHODS)},
                "count": {"type": "integer", "minimum": 1},
                "seed": {"type": "integer", "minimum": 0},
                "ranges": {"type": "object", "minProperties": 1,
                           "additionalProperties": {"type": "array", "items": _NUMBER, "minItems": 2, "maxItems": 2}},
            },
        },
        "metrics": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind"],
                "properties": {"kind": {"enum": list(METRIC_KINDS)},
                               "prim": {"type": "string", "minLength": 1},
                               "coordinate": {"type": "string", "minLength": 1},
                               "stats": {"type": "array", "minItems": 1, "items": {"enum": list(STATS)}}},
            },
        },
        "tasks": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"size": {"type": "integer", "minimum": 1}},
        },
    },
}

_KEY = re.compile(r"^(/[^.\[\]]*)\.([^/.\[\]]+)(?:\[(\d+)\])?$")


@dataclass(frozen=True)
class Metric:
    """One thing kept per variant: a body's final pose, a joint coordinate's statistics, the
    largest constraint residual, or a motor's effort extremes."""

    kind: str
    prim: str = ""
    coordinate: str = ""
    stats: tuple = ()


@dataclass
class SweepSpec:
    keys: list[str]  # override keys, grid keys first, in the spec's order
    variants: list[dict]  # one {key: value} per variant, stage units
    run: dict  # duration / dt / fps given (absent: the stage's or simulate's defaults)
    metrics: list[Metric]
    task_size: int | None = None
    source: str = "spec"  # file name for messages
    lines: dict = field(default_factory=dict)  # key -> 1-based line in the spec file (when read from one)

    def where(self, key: str) -> str:
        """'sweep.yaml:12: /World/bob.physics:mass' (or just the key)."""
        line = self.lines.get(key)
        return f"{self.source}:{line}: {key}" if line else f"{self.source}: {key}"


def parse_key(key: str) -> tuple[str, str, int | None]:
    """'/World/bob.physics:centerOfMass[2]' -> ('/World/bob', 'physics:centerOfMass', 2)."""
    m = _KEY.match(str(key))
    if not m or m.group(1) in ("", "/"):
        raise ValueError("expected a prim path and an attribute, e.g. /World/crank.physics:mass "
                         "(a vector attribute's component as /World/bob.physics:centerOfMass[2])")
    return m.group(1), m.group(2), None if m.group(3) is None else int(m.group(3))


def load_spec(spec) -> SweepSpec:
    """A spec from a YAML file path or a dict (the same keys), validated."""
    import jsonschema

    from usdphys.converters.chrono.validate import _message, non_finite_paths
    from usdphys.converters.chrono.yamlio import Doc, format_path, load

    if isinstance(spec, dict):
        doc = Doc(path=Path("spec"), data=spec)
    elif isinstance(spec, (str, Path)):
        doc = load(spec)
    else:
        raise UsdphysError(f"sweep spec: expected a YAML file path or a dict, got {type(spec).__name__}")
    if not isinstance(doc.data, dict):
        raise UsdphysError(f"{doc.path}: a sweep spec is a mapping (run, grid, samples, metrics, tasks)")
    errors = sorted(jsonschema.Draft202012Validator(SPEC_SCHEMA).iter_errors(doc.data),
                    key=lambda e: (doc.line(tuple(e.absolute_path)) or 0, len(e.absolute_path)))
    for err in errors:
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = set(err.schema.get("properties", {}))
            extra = [k for k in err.instance if k not in known]
            path = tuple(err.absolute_path) + (extra[0],)
            raise doc.error(path, f"unknown key (expected one of: {', '.join(sorted(known))})")
        if err.validator == "anyOf":
            branch = 1 if isinstance(err.instance, dict) else 0  # the form it was meant to be
            inner = [e for e in err.context if e.relative_schema_path[0] == branch]
            if isinstance(err.instance, (dict, list)) and inner:
                err = max(inner, key=lambda e: len(e.absolute_path))
            else:
                raise doc.error(tuple(err.absolute_path),
                                "expected a list of numbers or {linspace: [start, stop, count]}")
            if err.validator == "additionalProperties":
                raise doc.error(tuple(err.absolute_path), "unknown key (expected linspace)")
        path, msg = _message(err)
        raise doc.error(path, msg)
    data = doc.data
    if "grid" not in data and "samples" not in data:
        raise doc.error((), "nothing to vary: give a grid and/or samples")
    for path, _ in non_finite_paths(data, ()):
        raise doc.error(path, "must be a finite number")

    lines: dict[str, int] = {}
    axes: list[tuple[str, list[float]]] = []
    for key, values in (data.get("grid") or {}).items():
        _check_key(doc, ("grid", key), key)
        lines[key] = doc.line(("grid", key))
        if isinstance(values, dict):
            start, stop, count = values["linspace"]
            if count != int(count) or count < 1:
                raise doc.error(("grid", key, "linspace", 2), f"the count must be a whole number >= 1, got {count!r}")
            values = np.linspace(float(start), float(stop), int(count)).tolist()
        axes.append((key, [float(v) for v in values]))
    sampled: list[str] = []
    rows = [()]
    samples = data.get("samples")
    if samples:
        for key, (lo, hi) in samples["ranges"].items():
            _check_key(doc, ("samples", "ranges", key), key)
            if key in lines:
                raise doc.error(("samples", "ranges", key), "varied twice (also in grid)")
            if not hi >= lo:
                raise doc.error(("samples", "ranges", key), f"range [{lo}, {hi}]: the low end is above the high end")
            lines[key] = doc.line(("samples", "ranges", key))
            sampled.append(key)
        rows = [tuple(r) for r in _sample(samples, doc)]
    count = math.prod(len(v) for _, v in axes) * len(rows)
    if count > MAX_VARIANTS:
        raise doc.error(("grid",) if axes else ("samples", "count"),
                        f"{count} variants; at most {MAX_VARIANTS} in one sweep")
    keys = [k for k, _ in axes] + sampled
    variants = []
    for combo in itertools.product(*(v for _, v in axes)):
        for r in rows:
            variants.append(dict(zip(keys, list(combo) + list(r))))

    metrics = []
    for i, m in enumerate(data.get("metrics") or [{"kind": "residual"}]):
        kind = m["kind"]
        if kind != "residual" and "prim" not in m:
            raise doc.error(("metrics", i, "prim"), f"a {kind} metric names its prim (missing)")
        if kind == "joint" and "coordinate" not in m:
            raise doc.error(("metrics", i, "coordinate"), "a joint metric names its coordinate (e.g. angle, distance)")
        for extra in ("coordinate", "stats"):
            if extra in m and not (kind == "joint" or (extra == "stats" and kind == "motor_effort")):
                raise doc.error(("metrics", i, extra), f"not used by a {kind} metric")
        if kind in ("pose", "joint", "motor_effort") and not str(m["prim"]).startswith("/"):
            raise doc.error(("metrics", i, "prim"), f"expected an absolute prim path, got {m['prim']!r}")
        default = {"joint": ("min", "max", "final"), "motor_effort": ("min", "max")}.get(kind, ())
        stats = tuple(dict.fromkeys(m.get("stats", default)))
        if kind == "motor_effort" and "series" in stats:
            raise doc.error(("metrics", i, "stats"), "a motor effort keeps min, max and final")
        metric = Metric(kind, str(m.get("prim", "")), str(m.get("coordinate", "")), stats)
        if metric in metrics:
            raise doc.error(("metrics", i), "the same metric twice")
        metrics.append(metric)
    for i, m in enumerate(metrics):
        lines[f"metrics[{i}]"] = doc.line(("metrics", i))
    return SweepSpec(keys=keys, variants=variants, run=dict(data.get("run") or {}), metrics=metrics,
                     task_size=(data.get("tasks") or {}).get("size"), source=str(doc.path), lines=lines)


def _check_key(doc, path, key) -> None:
    try:
        parse_key(key)
    except ValueError as exc:
        raise doc.error(path, str(exc)) from None


def _sample(samples: dict, doc) -> np.ndarray:
    """(count, keys) points: uniform random or a Latin hypercube, reproducible from the seed."""
    lo, hi = np.array(list(samples["ranges"].values()), float).T
    count, seed = int(samples["count"]), samples.get("seed", 0)
    if count > MAX_VARIANTS:
        raise doc.error(("samples", "count"), f"{count} samples; at most {MAX_VARIANTS} in one sweep")
    if samples["method"] == "uniform":
        unit = np.random.default_rng(seed).random((count, len(lo)))
    else:
        try:
            from scipy.stats import qmc
        except ImportError:
            raise doc.error(("samples", "method"), "latin_hypercube needs scipy (pip install 'usdphys[sweep]'); "
                                                   "or use uniform") from None
        try:
            sampler = qmc.LatinHypercube(d=len(lo), rng=np.random.default_rng(seed))
        except TypeError:  # scipy < 1.15 names it seed
            sampler = qmc.LatinHypercube(d=len(lo), seed=np.random.default_rng(seed))
        unit = sampler.random(count)
    return lo + (hi - lo) * unit


def variant_hash(overrides: dict, run: dict, metrics: list[Metric], stage_digest: str) -> str:
    """A stable name of one variant's result: the stage file's digest, its overrides (exact
    doubles), the run settings and the metrics kept. A re-run with the same hash is skipped."""
    payload = {
        "stage": stage_digest,
        "overrides": sorted((k, float(v).hex()) for k, v in overrides.items()),
        "run": sorted((k, float(v).hex()) for k, v in run.items()),
        "metrics": [[m.kind, m.prim, m.coordinate, list(m.stats)] for m in metrics],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def file_digest(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


__all__ = ["METRIC_KINDS", "Metric", "SPEC_SCHEMA", "STATS", "SweepSpec", "file_digest", "load_spec", "parse_key",
           "variant_hash"]
