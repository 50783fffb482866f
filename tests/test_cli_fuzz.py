"""Seeded fuzz of what the CLI reads besides YAML: mutated stage files and hostile argument
values, through `usdphys check` and `usdphys simulate` in-process.

Every case must end with exit 0, 1 or 2, at most one error line, no traceback, within a time
bound; a failure writes nothing (no output, no temporary file), a success writes its output,
and the input is never changed.
"""
from __future__ import annotations

import random
import re
import shutil
import signal
import time
import warnings
from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas)
from usdphys import cli

ROOT = Path(__file__).resolve().parents[1] / "assets"
# Every bundled stage, with its folder (SNAP assets reference their neighbours).
STAGES = sorted(p for p in ROOT.rglob("*.usda") if "chrono-yaml" not in p.parts)
SEED = 20260524
STAGE_CASES = 200
ARG_CASES = 100
CASE_SECONDS = 20  # one case; the whole fuzz runs in well under a minute
NUMBER = re.compile(r"(?<![\w.@/])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w@])")
BAD_NUMBERS = ["nan", "inf", "-inf", "1e308", "-1e308", "-1", "0", "1e-320"]


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def run_case(argv, capfd):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    t0 = time.perf_counter()
    caught: list = []
    try:
        # Python warnings reach a CLI user's terminal as extra lines: they count as output here.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                rc = cli.main([str(a) for a in argv])
            except SystemExit as exc:
                rc = exc.code
    except Hang:
        rc = "hang"
    except Exception:  # a bug: reported with the case, after the other cases ran
        import traceback

        rc = "Traceback " + traceback.format_exc(limit=-3)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capfd.readouterr()
    err += "".join(f"{w.category.__name__}: {w.message}\n" for w in caught
                   if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning)))
    return rc, out, err, time.perf_counter() - t0


def error_lines(err: str) -> list[str]:
    # warnings (ours, USD's own diagnostics, Warp's note about a missing CUDA driver) are not errors
    return [line for line in err.splitlines() if line.strip()
            and not line.startswith(("warning:", "Warning: in", "Warp CUDA warning", "Warp UserWarning"))]


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    kind = rng.choice(["delete-line", "number", "number", "number", "truncate", "duplicate-line"])
    if kind == "delete-line" and lines:
        i = rng.randrange(len(lines))
        return "".join(lines[:i] + lines[i + 1:]), f"delete line {i + 1}"
    if kind == "duplicate-line" and lines:
        i = rng.randrange(len(lines))
        return "".join(lines[:i + 1] + lines[i:]), f"duplicate line {i + 1}"
    if kind == "truncate":
        n = rng.randrange(len(text))
        return text[:n], f"truncate at {n}"
    spots = list(NUMBER.finditer(text))
    if not spots:
        return text[: len(text) // 2], "truncate at half"
    m = rng.choice(spots)
    bad = rng.choice(BAD_NUMBERS)
    line = text.count("\n", 0, m.start()) + 1
    return text[: m.start()] + bad + text[m.end():], f"line {line}: {m.group()} -> {bad}"


def failed_badly(case, rc, err, out_dir: Path, out: Path | None) -> str | None:
    """What is wrong with how a case ended, or None."""
    if rc == "hang":
        return f"{case}: no answer in {CASE_SECONDS} s"
    if rc not in (0, 1, 2) or "Traceback" in err or len(error_lines(err)) > 1:
        return f"{case}: exit {rc}\n{err}"
    left = sorted(p.name for p in out_dir.iterdir())
    if left != ([out.name] if out is not None and rc == 0 else []):
        return f"{case}: left {left}"
    return None


def test_stage_mutants_check_and_simulate(tmp_path, capfd):
    rng = random.Random(SEED)
    counts = {0: 0, 1: 0, 2: 0}
    failures: list[str] = []
    for n in range(STAGE_CASES):
        src = rng.choice(STAGES)
        work = tmp_path / f"case{n}"
        shutil.copytree(src.parent, work)  # neighbours too: references resolve as shipped
        target = work / src.name
        text, what = mutate(src.read_text(), rng)
        target.write_text(text)
        out_dir = tmp_path / f"out{n}"
        out_dir.mkdir()
        case = f"{src.relative_to(ROOT)} [{what}]"
        if n % 2:
            argv, out = ["check", target, "--no-usd-core"], None
        else:
            out = out_dir / "result.usda"
            argv = ["simulate", target, "-o", out, "--duration", "0.05"]
        rc, stdout, err, elapsed = run_case(argv, capfd)
        if isinstance(rc, str):
            err = rc
        bad = failed_badly(case, rc, err, out_dir, out)
        if bad is None and target.read_text() != text:
            bad = f"{case}: input changed"
        if bad:
            failures.append(bad)
        else:
            counts[rc] += 1
    print(f"stage mutants: {STAGE_CASES} cases, exits {counts}")
    assert not failures, "\n\n".join(failures)


VALUES = {
    "--duration": ["-1", "0", "nan", "inf", "-inf", "1e308", "1e-308", "0.05", "abc", ""],
    "--dt": ["-1", "0", "nan", "inf", "1e308", "1e-308", "0.001", "0.02"],
    "--fps": ["-1", "0", "nan", "inf", "1e308", "1e-308", "30", "240"],
    "--worlds": ["-1", "0", "1", "2", "nan", "1e308", str(10**12), "1.5"],
    "--device": ["cpu", "tpu", "cuda:99", "", "cuda"],
    "--tol": ["-1", "0", "nan", "inf", "1e-308", "1e-16", "1e-15", "1e-13", "1e-6", "1", "abc"],
    "--max-turn": ["-1", "0", "nan", "inf", "1e-308", "0.1", "3.2", "abc"],
}


def test_argument_values_are_refused_in_one_line(tmp_path, capfd):
    rng = random.Random(SEED + 1)
    pendulum = ROOT / "usd" / "pendulum.usda"
    data = pendulum.read_bytes()
    counts = {0: 0, 1: 0, 2: 0}
    failures: list[str] = []
    for n in range(ARG_CASES):
        out_dir = tmp_path / f"out{n}"
        out_dir.mkdir()
        out = out_dir / "result.usda"
        argv = ["simulate", pendulum, "-o", out]
        chosen = rng.sample(sorted(VALUES), rng.randint(1, 3))
        for option in chosen:
            argv += [option, rng.choice(VALUES[option])]
        if "--duration" not in chosen:
            argv += ["--duration", "0.05"]  # keep the valid cases short
        rc, stdout, err, elapsed = run_case(argv, capfd)
        if isinstance(rc, str):
            err = rc
        case = " ".join(str(a) for a in argv[4:])
        bad = failed_badly(case, rc, err, out_dir, out)
        if bad:
            failures.append(bad)
        else:
            counts[rc] += 1
    assert pendulum.read_bytes() == data
    print(f"argument values: {ARG_CASES} cases, exits {counts}")
    assert not failures, "\n\n".join(failures)
