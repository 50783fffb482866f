"""The package's walls (docs/architecture.md, "Walls"), checked on the source and in fresh
interpreters so that a stray import fails here rather than as a slow or broken install:

* only `usdphys/usd/` and `converters/` talk to USD (`pxr`); only `usdphys/solver/` uses Warp;
* `usdphys/types/` and `usdphys/math3d.py` are NumPy and the standard library only, so a
  Model can be built, pickled and inspected with neither USD nor Warp installed;
* the converters write USD and never reach into the solver; the solver never reads USD;
* our schema's attribute and type names are spelled once, in the generated
  `usdphys/usd/tokens.py`, so a renamed attribute cannot leave a stale literal behind.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names)


def _sources():
    """(repo-relative posix path, dotted module name, parsed tree) of every shipped module."""
    for root, package in (("usdphys", "usdphys"), ("converters", "usdphys.converters")):
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO)
            parts = list(rel.with_suffix("").parts[1:])
            is_package = parts[-1:] == ["__init__"]
            if is_package:
                parts = parts[:-1]
            module = ".".join([package, *parts])
            yield rel.as_posix(), module, is_package, ast.parse(path.read_text(encoding="utf-8"))


def _imports(module: str, is_package: bool, tree: ast.AST):
    """(line, absolute module name) for every import, at any depth (lazy imports in functions
    count: they load the module all the same). `from a import b` yields both `a` and `a.b`,
    since b may be a submodule (`from usdphys import solver`)."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            yield node.lineno, target
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{target}.{alias.name}"


def _top(name: str) -> str:
    return name.split(".")[0]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


SOURCES = list(_sources())


def _violations(rule) -> list[str]:
    found = []
    for rel, module, is_package, tree in SOURCES:
        for line, name in _imports(module, is_package, tree):
            why = rule(rel, name)
            if why:
                found.append(f"{rel}:{line}: imports {name} ({why})")
    return sorted(set(found))


def test_sources_were_found():
    paths = {rel for rel, *_ in SOURCES}
    assert {"usdphys/__init__.py", "usdphys/usd/plugin.py", "usdphys/solver/step.py",
            "usdphys/types/model.py", "converters/chrono/state.py"} <= paths


def test_only_usd_and_converters_import_pxr():
    def rule(rel, name):
        if _top(name) == "pxr" and not rel.startswith(("usdphys/usd/", "converters/")):
            return "USD is read and written only in usdphys/usd/ and converters/"
    assert _violations(rule) == []


def test_only_solver_imports_warp():
    def rule(rel, name):
        if _top(name) == "warp" and not rel.startswith("usdphys/solver/"):
            return "Warp is used only in usdphys/solver/"
    assert _violations(rule) == []


def test_types_and_math3d_are_numpy_and_stdlib_only():
    # math3d is held to this same wall, so types/ may use it (Model's pose helpers do).
    allowed_inside = ("usdphys.types", "usdphys.errors", "usdphys.math3d")

    def rule(rel, name):
        if not (rel.startswith("usdphys/types/") or rel == "usdphys/math3d.py"):
            return None
        if _top(name) in STDLIB or _top(name) == "numpy":
            return None
        if any(_within(name, p) for p in allowed_inside):
            return None
        return "types/ and math3d.py use only numpy, the standard library, usdphys.types, usdphys.errors"
    assert _violations(rule) == []


def test_converters_never_import_the_solver():
    def rule(rel, name):
        if rel.startswith("converters/") and _within(name, "usdphys.solver"):
            return "a converter writes USD; simulating it is the reader's and solver's job"
    assert _violations(rule) == []


def test_solver_never_imports_usd_or_converters():
    def rule(rel, name):
        if rel.startswith("usdphys/solver/") and (_within(name, "usdphys.usd") or _within(name, "usdphys.converters")):
            return "the solver takes a Model (usdphys.types), never a stage"
    assert _violations(rule) == []


def _loaded_after(statement: str) -> set[str]:
    """Top-level names of the modules a fresh interpreter holds after `statement`."""
    code = f"import sys\n{statement}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.parametrize("statement, forbidden", [
    ("import usdphys", {"pxr", "warp"}),
    ("import usdphys.types.model, usdphys.types.elements, usdphys.types.laws, usdphys.types.shapes, "
     "usdphys.types.timefunc, usdphys.types.enums, usdphys.math3d, usdphys.errors", {"pxr", "warp"}),
    ("import usdphys.solver", {"pxr"}),
], ids=["usdphys", "types", "solver"])
def test_fresh_import_loads_neither(statement, forbidden):
    loaded = _loaded_after(statement)
    assert "usdphys" in loaded
    assert loaded & forbidden == set()


# A string that is exactly one of our attribute names (mbd:..., newton:...) or type names.
# Messages that mention an attribute in prose (with spaces) are not names and not matched.
_SCHEMA_NAME = re.compile(r"^(?:(?:mbd|newton):[A-Za-z]\w*(?::\w+)*|Mbd[A-Z]\w*|NewtonJointAPI)$")
# (file, literal) -> why it may not come from usdphys.usd.tokens
ALLOWED_LITERALS = {
    ("usdphys/usd/check.py", "newton:friction"):
        "newton-usd-schemas' scalar joint attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:damping"):
        "newton-usd-schemas' scalar joint attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:velocityLimit"):
        "newton-usd-schemas' scalar joint attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:limitStiffness"):
        "newton-usd-schemas' scalar joint attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:limitDamping"):
        "newton-usd-schemas' scalar joint attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:mimicJoint"):
        "newton-usd-schemas' NewtonMimicAPI relationship, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:mimicEnabled"):
        "newton-usd-schemas' NewtonMimicAPI attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:mimicCoef0"):
        "newton-usd-schemas' NewtonMimicAPI attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/check.py", "newton:mimicCoef1"):
        "newton-usd-schemas' NewtonMimicAPI attribute, not in our schema: tokens.py has no name for it",
    ("usdphys/usd/schemagen.py", "NewtonJointAPI"):
        "schemagen writes tokens.py: it must not import what it generates (the class it leaves out of plugin/without_newton_joint)",
    ("usdphys/usd/reader/stacked.py", "newton:jointsAddMobility"):
        "Newton's articulation flag (mujoco-usd-converter writes it), not in our schema: tokens.py has no name for it",
}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def test_schema_names_are_spelled_only_in_tokens():
    found, used_allowances = [], set()
    for rel, _module, _pkg, tree in SOURCES:
        if rel == "usdphys/usd/tokens.py":
            continue
        docs = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and _SCHEMA_NAME.match(node.value)):
                if (rel, node.value) in ALLOWED_LITERALS:
                    used_allowances.add((rel, node.value))
                else:
                    found.append(f"{rel}:{node.lineno}: {node.value!r} (use usdphys.usd.tokens.Tokens)")
    assert sorted(found) == []
    # an allowance nobody needs any more would hide the next literal added there
    assert set(ALLOWED_LITERALS) - used_allowances == set()


def test_the_schema_name_pattern_matches_what_tokens_holds():
    from usdphys.usd.tokens import Tokens

    names = [v for k, v in vars(Tokens).items() if not k.startswith("_")]
    ours = [v for v in names if v.startswith(("mbd:", "newton:", "Mbd")) or v == "NewtonJointAPI"]
    assert len(ours) > 80 and all(_SCHEMA_NAME.match(v) for v in ours)
    assert not _SCHEMA_NAME.match("mbd:axis is the zero vector")
