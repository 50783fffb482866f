"""YAML loading that keeps line numbers (and raw scalar text) for every node.

PyYAML's composer gives each node a start_mark; we compose the document, then build plain
Python data from the node tree while recording, for every path (tuple of keys / indices),
the 1-based line of the value and the raw scalar text. Errors can then name file:line:field.

Two deliberate departures from PyYAML's YAML 1.1 defaults, both matching yaml-cpp (the
library Chrono's parser uses):
- `1e-4`, `2e5` (exponent without a dot) are floats, not strings;
- a mapping with a repeated key is an error (PyYAML silently keeps the last value).

Hostile input is refused before it costs much time or memory (limits below; docs/reliability.md):
the file size is checked before reading, nesting depth while composing (PyYAML's composer
recurses once per level, so deep nesting would otherwise end in a RecursionError), and
nodes produced by alias expansion while building (PyYAML shares aliased nodes, so a
"billion laughs" document composes cheaply and only explodes when expanded into data).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from usdphys.errors import UsdphysError

Path_ = tuple  # a field path: ("model", "bodies", 2, "mass")

# Limits on one YAML file. The largest Chrono example is ~20 KB, 450 lines, ~2,000 nodes,
# 8 levels deep: each limit leaves two orders of magnitude of headroom for real models.
MAX_FILE_BYTES = 4 * 1024 * 1024  # read and parsed by pure-Python PyYAML: ~10 s at this size
MAX_DEPTH = 64  # nested mappings / lists
MAX_NODES = 500_000  # values in the built data (scalars, lists, mappings), aliases expanded
ALIAS_FREE_NODES = 10_000  # nodes any document may produce through aliases ...
ALIAS_RATIO = 10  # ... or this many times its own (distinct, written) node count, if more

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Refused(Exception):
    """A limit hit inside the loader: (1-based line or None, message); load() adds the file."""


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2-style floats (1e5); resolvers copied, SafeLoader untouched.
    Composing counts distinct nodes and bounds the depth; merge keys (<<) are flattened with
    repeated keys collapsed, so nested merges of aliases cannot multiply a mapping's size."""

    def __init__(self, stream):
        super().__init__(stream)
        self.depth = 0
        self.distinct_nodes = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)  # an existing node: no new depth or node
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _Refused(mark.line + 1, f"nesting deeper than {MAX_DEPTH} levels (limit {MAX_DEPTH})")
            self.distinct_nodes += 1
            if self.distinct_nodes > MAX_NODES:
                mark = self.peek_event().start_mark
                raise _Refused(mark.line + 1, f"more than {MAX_NODES} values in one file (limit {MAX_NODES})")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def flatten_mapping(self, node):
        if not any(k.tag == _MERGE_TAG for k, _ in node.value):
            return  # also every later visit of an already flattened (aliased) node
        own, merged = [], {}  # merged: key -> (key node, value node); the first mapping merged wins
        for knode, vnode in node.value:
            if knode.tag != _MERGE_TAG:
                own.append((knode, vnode))
                continue
            subs = [vnode] if isinstance(vnode, yaml.MappingNode) else (
                vnode.value if isinstance(vnode, yaml.SequenceNode) else None)
            if subs is None:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"expected a mapping or list of mappings for merging, but found {vnode.id}", vnode.start_mark)
            for sub in subs:
                if not isinstance(sub, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"expected a mapping for merging, but found {sub.id}", sub.start_mark)
                self.flatten_mapping(sub)
                for k, v in sub.value:
                    merged.setdefault(_key_id(k), (k, v))
        own_keys = {_key_id(k) for k, _ in own}  # keys written in the mapping override merged ones
        node.value = [kv for key, kv in merged.items() if key not in own_keys] + own


def _key_id(knode):
    return (knode.tag, knode.value) if isinstance(knode, yaml.ScalarNode) else id(knode)


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
        with open(path, "rb") as f:
            # stat first: a huge file is refused unread; read one byte more than the limit
            # as well, for files whose size stat cannot tell (pipes, /proc)
            size = os.fstat(f.fileno()).st_size
            data = f.read(MAX_FILE_BYTES + 1) if size <= MAX_FILE_BYTES else b""
        if size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
            raise UsdphysError(f"{path}: file too large: {max(size, len(data))} bytes "
                               f"(limit {MAX_FILE_BYTES} bytes for a Chrono YAML file)")
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise UsdphysError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsdphysError(f"{path}: cannot read: {exc}") from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except _Refused as exc:
        raise _refusal(path, exc) from None
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
    budget = _Budget(alias_limit=max(ALIAS_FREE_NODES, ALIAS_RATIO * loader.distinct_nodes))
    try:
        doc.data = _build(doc, loader, node, (), budget, False)
    except _Refused as exc:
        raise _refusal(path, exc) from None
    return doc


def _refusal(path: Path, exc: _Refused) -> UsdphysError:
    line, message = exc.args
    return UsdphysError(f"{path}{f':{line}' if line else ''}: refused: {message}")


@dataclass
class _Budget:
    alias_limit: int
    nodes: int = 0
    alias_nodes: int = 0
    seen: set = field(default_factory=set)  # ids of nodes built once: meeting one again is an alias


def _count(budget: _Budget, node, path: tuple, in_alias: bool) -> bool:
    """Charge one built node; True when it (or an enclosing node) came through an alias."""
    budget.nodes += 1
    if budget.nodes > MAX_NODES:
        raise _Refused(node.start_mark.line + 1, f"more than {MAX_NODES} values once aliases are expanded "
                                                 f"(limit {MAX_NODES}), at {format_path(path)}")
    if not in_alias and id(node) in budget.seen:
        in_alias = True
    budget.seen.add(id(node))
    if in_alias:
        budget.alias_nodes += 1
        if budget.alias_nodes > budget.alias_limit:
            raise _Refused(
                node.start_mark.line + 1,
                f"alias expansion too large: more than {budget.alias_limit} values produced through aliases "
                f"(limit: {ALIAS_FREE_NODES} or {ALIAS_RATIO}x the file's own values), expanding the anchor "
                f"defined here into {format_path(path)} (an alias bomb?)")
    if len(path) > MAX_DEPTH:
        raise _Refused(node.start_mark.line + 1,
                       f"nesting deeper than {MAX_DEPTH} levels once aliases are expanded (limit {MAX_DEPTH})")
    return in_alias


def _build(doc: Doc, loader: _Loader, node, path: tuple, budget: _Budget, in_alias: bool):
    in_alias = _count(budget, node, path, in_alias)
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        try:
            loader.flatten_mapping(node)  # merge keys (<<)
        except yaml.MarkedYAMLError as exc:  # `<<: 1`: a merge of something not a mapping
            mark = exc.problem_mark or node.start_mark
            raise UsdphysError(f"{doc.path}:{mark.line + 1}: {format_path(path)}: bad merge key (<<): "
                               f"{exc.problem}") from None
        out: dict = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):  # checked before building: it may be an alias bomb
                raise UsdphysError(
                    f"{doc.path}:{knode.start_mark.line + 1}: {format_path(path)}: mapping key must be a scalar"
                )
            try:
                key = loader.construct_object(knode, deep=True)
            except (yaml.YAMLError, ValueError) as exc:
                raise UsdphysError(f"{doc.path}:{knode.start_mark.line + 1}: {format_path(path)}: "
                                   f"bad mapping key: {exc}") from None
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
            out[key] = _build(doc, loader, vnode, path + (key,), budget, in_alias)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(doc, loader, v, path + (i,), budget, in_alias) for i, v in enumerate(node.value)]
    doc.raw[path] = node.value
    try:
        return loader.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an integer of more than 4,300 digits
        raise UsdphysError(f"{doc.path}:{node.start_mark.line + 1}: {format_path(path)}: {exc}") from None
