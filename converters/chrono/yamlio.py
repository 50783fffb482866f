"""YAML loading that keeps line numbers (and raw scalar text) for every node.

PyYAML's composer gives each node a start_mark; we compose the document, then build plain
Python data from the node tree while recording, for every path (tuple of keys / indices),
the 1-based line of the value and the raw scalar text. Errors can then name file:line:field.

Two deliberate departures from PyYAML's YAML 1.1 defaults, both matching yaml-cpp (the
library Chrono's parser uses):
- `1e-4`, `2e5` (exponent without a dot) are floats, not strings;
- a mapping with a repeated key is an error (PyYAML silently keeps the last value).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from usdphys.errors import UsdphysError

Path_ = tuple  # a field path: ("model", "bodies", 2, "mass")


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2-style floats (1e5); resolvers copied, SafeLoader untouched."""


_Loader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def format_path(path: Path_) -> str:
    """("model", "bodies", 2, "mass") -> 'model.bodies[2].mass'."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "(document)"


@dataclass
class Doc:
    """A loaded YAML file: data plus a line for every field path."""

    path: Path
    data: Any
    lines: dict = field(default_factory=dict)  # path tuple -> 1-based line of the value
    key_lines: dict = field(default_factory=dict)  # path tuple -> 1-based line of the key
    raw: dict = field(default_factory=dict)  # path tuple -> raw scalar text

    def line(self, path: Path_) -> int | None:
        """Line of the field at path (its key when it has one), or of the nearest enclosing
        field that exists (a missing field is reported at its parent's key)."""
        path = tuple(path)
        while True:
            if path in self.key_lines:
                return self.key_lines[path]
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]

    def where(self, path: Path_) -> str:
        line = self.line(path)
        return f"{self.path}:{line}" if line else f"{self.path}"

    def error(self, path: Path_, message: str) -> UsdphysError:
        """An error naming file:line and the field."""
        return UsdphysError(f"{self.where(path)}: {format_path(tuple(path))}: {message}")

    def warning_text(self, path: Path_, message: str) -> str:
        return f"{self.where(path)}: {format_path(tuple(path))}: {message}"


def load(path: str | Path) -> Doc:
    """Load one YAML file into a Doc; syntax errors become UsdphysError with the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsdphysError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsdphysError(f"{path}: cannot read: {exc}") from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        what = " ".join(s for s in (exc.context, exc.problem) if s)
        raise UsdphysError(f"{path}{line}: YAML syntax error: {what}") from None
    except yaml.YAMLError as exc:
        raise UsdphysError(f"{path}: YAML error: {exc}") from None
    finally:
        loader.dispose()
    doc = Doc(path=path, data=None)
    if node is None:
        doc.data = {}
        return doc
    doc.data = _build(doc, loader, node, ())
    return doc


def _build(doc: Doc, loader: _Loader, node, path: tuple):
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # merge keys (<<)
        out: dict = {}
        for knode, vnode in node.value:
            key = loader.construct_object(knode, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise UsdphysError(
                    f"{doc.path}:{knode.start_mark.line + 1}: {format_path(path)}: mapping key must be a scalar"
                )
            if isinstance(key, bool) or not isinstance(key, str):
                key = str(knode.value)  # e.g. `on:` or `1:` used as a name
            if key in out:
                raise UsdphysError(
                    f"{doc.path}:{knode.start_mark.line + 1}: {format_path(path + (key,))}: duplicate key "
                    f"(first at line {doc.key_lines[path + (key,)]})"
                )
            doc.key_lines[path + (key,)] = knode.start_mark.line + 1
            out[key] = _build(doc, loader, vnode, path + (key,))
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(doc, loader, v, path + (i,)) for i, v in enumerate(node.value)]
    doc.raw[path] = node.value
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise UsdphysError(f"{doc.path}:{node.start_mark.line + 1}: {format_path(path)}: {exc}") from None
