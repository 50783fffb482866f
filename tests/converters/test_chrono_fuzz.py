"""Mutation fuzz of the shipped Chrono models (docs/reliability.md): 3,000 seeded YAML mutants
(a line deleted, duplicated, re-indented or swapped, a value or list element replaced by a
wrong type, NaN, an infinity, a huge or negative number, an empty value, a list or a mapping,
a key renamed, the text truncated; one to three mutations each) go through convert_file in
process. The only acceptable outcomes are a written stage or UsdphysError; on an error no
output (nor a temporary file) is left, and the input is never changed. ~25 s on one core."""
from __future__ import annotations

import hashlib
import logging
import random
import re
import shutil
import traceback
import warnings as pywarnings
from pathlib import Path

import pytest

from usdphys.converters.chrono import convert_file
from usdphys.errors import UsdphysError

CHRONO = Path(__file__).resolve().parents[2] / "assets" / "chrono-yaml"
SHARDS, PER_SHARD = 4, 750  # 3,000 mutants; a shard's seed is its index

VALUES = [".nan", ".NaN", ".inf", "-.inf", "1e308", "1e400", "-1", "-1e9", "0", "-0", "", "~", "null", "[]", "{}",
          "[1, 2]", "[1, 2, 3]", "[1, 2, 3, 4]", "[[1, 2, 3]]", "[.nan, 0, 0]", "{a: 1}", "'text'", "true",
          "999999999999999999999", "1" * 5000, "[]]", "{", "&a 1", "*nope", "!!binary AAAA", "2001-12-14", "1.5"]
KEYS = ["name", "type", "body", "body1", "body2", "mass", "location", "load", "model", "shape", "x", "<<"]
OPS = ["delete", "value", "value", "value", "element", "element", "key", "duplicate", "truncate", "indent", "swap"]


def _keyed(lines):
    return [j for j, s in enumerate(lines) if ":" in s and not s.lstrip().startswith("#")]


def mutate(rng: random.Random, text: str) -> tuple[str, str]:
    """One mutation of text: (new text, what was done)."""
    lines = text.splitlines(keepends=True)
    op = rng.choice(OPS)
    i = rng.randrange(len(lines))
    if op == "delete":
        del lines[i]
    elif op == "value" and _keyed(lines):
        j = rng.choice(_keyed(lines))
        k = lines[j].index(":")
        lines[j] = lines[j][:k + 1] + " " + rng.choice(VALUES) + "\n"
    elif op == "element":
        flows = [j for j, s in enumerate(lines) if "[" in s and "]" in s]
        if flows:
            j = rng.choice(flows)
            tokens = list(re.finditer(r"[-+]?[0-9][0-9.eE+-]*|\b[A-Za-z_]+\b", lines[j]))
            if tokens:
                t = rng.choice(tokens)
                lines[j] = lines[j][:t.start()] + rng.choice(VALUES) + lines[j][t.end():]
    elif op == "key" and _keyed(lines):
        j = rng.choice(_keyed(lines))
        k = lines[j].index(":")
        head = lines[j][:k]
        indent = len(head) - len(head.lstrip(" -"))
        lines[j] = head[:indent] + rng.choice(KEYS) + lines[j][k:]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "truncate":
        return text[:rng.randrange(len(text) + 1)], op
    elif op == "indent":
        lines[i] = "  " + lines[i]
    elif op == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines), op


def _digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A writable copy of the Chrono tree: mutants sit beside their originals so relative
    references (data_path, sub files, meshes) resolve as they do for the real file."""
    root = tmp_path_factory.mktemp("chrono") / "chrono-yaml"
    shutil.copytree(CHRONO, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


@pytest.mark.parametrize("shard", range(SHARDS))
def test_mutants_convert_or_fail_cleanly(tree, tmp_path, shard):
    files = sorted(p for p in tree.rglob("*.yaml") if "schema" not in p.parts)
    originals = _digest(tree)
    rng = random.Random(shard)
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / "out.usda"
    counts = {"converted": 0, "UsdphysError": 0}
    bugs = []
    logging.disable(logging.WARNING)  # thousands of expected warnings
    try:
        for n in range(PER_SHARD):
            src = rng.choice(files)
            text, ops = src.read_text(encoding="utf-8"), []
            for _ in range(rng.choice([1, 1, 2, 3])):
                if text.strip():
                    text, op = mutate(rng, text)
                    ops.append(op)
            mutant = src.with_name("_mutant.yaml")
            mutant.write_text(text, encoding="utf-8")
            try:
                with pywarnings.catch_warnings():
                    pywarnings.simplefilter("ignore", RuntimeWarning)  # NumPy on huge values
                    convert_file(mutant, out, [])
                counts["converted"] += 1
                assert sorted(p.name for p in outdir.iterdir()) == ["out.usda"]
                out.unlink()
            except UsdphysError:
                counts["UsdphysError"] += 1
                assert list(outdir.iterdir()) == [], f"mutant {n} ({src.name}, {ops}) left output"
            except Exception as exc:  # noqa: BLE001  (collected: any other exception is a bug)
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                bugs.append(f"mutant {n} of {src.relative_to(tree)} ({', '.join(ops)}): "
                            f"{type(exc).__name__}: {exc} at {Path(frame.filename).name}:{frame.lineno}")
                for p in outdir.iterdir():
                    p.unlink()
            assert mutant.read_text(encoding="utf-8") == text, "the converter changed its input"
            mutant.unlink()
    finally:
        logging.disable(logging.NOTSET)
    assert bugs == [], f"{len(bugs)} mutants raised something else than UsdphysError:\n" + "\n".join(bugs[:20])
    assert sum(counts.values()) == PER_SHARD
    assert counts["converted"] > 0 and counts["UsdphysError"] > 0, counts  # both paths exercised
    assert _digest(tree) == originals  # no file of the tree touched
