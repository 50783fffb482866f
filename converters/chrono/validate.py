"""Validation of Chrono YAML files against the JSON-Schema documents we own.

model.schema.json / simulation.schema.json are package data next to this module. Errors
are mapped to `file:line: field: message`; `additionalProperties` violations (unknown keys)
become warnings, as Chrono's parser ignores unknown keys.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

import jsonschema
from jsonschema import validators

from usdphys.errors import UsdphysError

from .yamlio import Doc, format_path

MAX_ERRORS = 10


def _enum_caseless(validator, allowed, instance, schema):
    if not isinstance(instance, str):
        return  # the "type" keyword reports it
    if instance.upper() not in {a.upper() for a in allowed}:
        yield jsonschema.ValidationError(
            f"unknown value {instance!r}; expected one of {', '.join(allowed)} (any letter case)"
        )


_Validator = validators.extend(jsonschema.Draft202012Validator, {"enumCaseless": _enum_caseless})


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """A schema document shipped with the package (model.schema.json, simulation.schema.json)."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


def _subschema(name: str, definition: str | None) -> dict:
    schema = load_schema(name)
    if definition is None:
        return schema
    return {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}


_TYPE_WORDS = {"number": "a number", "string": "a string", "boolean": "true or false", "array": "a list",
               "object": "a mapping", "integer": "an integer"}


def _describe(value) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "a mapping"
    return "null (empty)" if value is None else type(value).__name__


def _message(error: jsonschema.ValidationError) -> tuple[tuple, str]:
    """(path, human message) for one jsonschema error."""
    path = tuple(error.absolute_path)
    v, val = error.validator, error.validator_value
    inst = error.instance
    if v == "required":
        missing = [f for f in val if isinstance(inst, dict) and f not in inst]
        field = missing[0] if missing else "?"
        return path + (field,), "missing required field"
    if v == "type":
        kinds = val if isinstance(val, list) else [val]
        want = " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)
        return path, f"wrong type: expected {want}, got {_describe(inst)}"
    if v in ("minItems", "maxItems") and isinstance(inst, list):
        s = error.schema
        lo, hi = s.get("minItems"), s.get("maxItems")
        want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
        return path, f"expected {want} items, got {len(inst)}"
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return path, f"must be {op} {val}, got {inst!r}"
    if v == "minLength":
        return path, "must not be empty"
    return path, error.message


def non_finite_paths(data, path: tuple):
    """Paths of every NaN or infinite number in data (YAML's .nan, .inf, or 1e400 overflowing)."""
    if isinstance(data, float) and not math.isfinite(data):
        yield path, data
    elif isinstance(data, dict):
        for k, v in data.items():
            yield from non_finite_paths(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from non_finite_paths(v, path + (i,))


def validate(doc: Doc, schema_name: str, definition: str | None = None, base: tuple = ()) -> list[tuple]:
    """Validate doc.data (or the part at `base`) against a schema.

    Raises UsdphysError listing every error (file:line: field: message), NaN and infinities
    included wherever they are; returns the unknown
    keys as (path, warning message) pairs."""
    data = doc.data
    for p in base:
        data = data[p]
    validator = _Validator(_subschema(schema_name, definition))
    errors, warnings = [], []
    for err in sorted(validator.iter_errors(data), key=lambda e: (doc.line(base + tuple(e.absolute_path)) or 0)):
        if err.validator == "additionalProperties":
            props = set(err.schema.get("properties", {}))
            extra = [k for k in err.instance if k not in props]
            path = base + tuple(err.absolute_path)
            for key in extra:
                line = doc.key_lines.get(path + (key,)) or doc.line(path)
                warnings.append((path + (key,),
                    f"{doc.path}:{line}: {format_path(path + (key,))}: unknown key, ignored "
                    "(Chrono's parser does not read it)"
                ))
            continue
        path, msg = _message(err)
        errors.append(f"{doc.where(base + path)}: {format_path(base + path)}: {msg}")
    # JSON Schema's "number" admits NaN and infinities; no Chrono quantity is meaningful as
    # one, and they would reach the stage (or the solver) silently
    for path, value in non_finite_paths(data, base):
        errors.append(f"{doc.where(path)}: {format_path(path)}: must be a finite number, got {value!r}")
    if errors:
        more = f"\n... and {len(errors) - MAX_ERRORS} more" if len(errors) > MAX_ERRORS else ""
        raise UsdphysError("\n".join(errors[:MAX_ERRORS]) + more)
    return warnings
