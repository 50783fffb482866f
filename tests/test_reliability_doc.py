"""docs/reliability.md names, for each guarantee, the test that shows it: every named test
must exist (a renamed or deleted test would leave a guarantee unbacked)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _functions(path: Path) -> set:
    return {n.name for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.FunctionDef)}


def test_every_test_named_in_reliability_md_exists():
    doc = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    qualified = set(re.findall(r"`(tests/[\w/]+\.py)::(\w+)", doc))
    bare = set(re.findall(r"`(test_\w+)", doc))  # in a table whose heading names the file
    assert len(qualified) >= 10 and len(bare) >= 9  # the regexes still find the tables
    missing = [f"{f}::{t}" for f, t in sorted(qualified)
               if not (REPO / f).is_file() or t not in _functions(REPO / f)]
    every = set().union(*(_functions(p) for p in (REPO / "tests").rglob("test_*.py")))
    missing += sorted(bare - every)
    assert missing == []
