"""Third-party corpus: run usdphys on USD stages shipped by PyPI packages, one subprocess per stage.

    python benchmarks/corpus.py [--cache ~/.cache/usdphys-corpus] [--limit N] [--timeout 60] [--out docs/corpus.md]

Sources (downloaded into the cache, never committed):
  * newton==1.8.0 wheel: every *.usda / *.usd under newton/examples/assets and newton/tests/assets;
  * MJCF from the dm-control (suite, walkers, third-party arm and ant), gymnasium (its MuJoCo
    tasks) and gymnasium-robotics wheels, converted with
    mujoco-usd-converter in its own venv (<cache>/conv; it pins mujoco>=3.16,<3.17).
Each stage runs for 1 s at its default dt (the stage's, else usdphys' 1 ms) in a subprocess with a
timeout, recording: loaded, finite, largest constraint residual, wall time, one-line error.
With --limit the stages are sampled (every k-th, deterministic) and the table says so.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable

CHILD = r'''
import json, sys, time, math
import numpy as np
t0 = time.time()
out = {"loaded": False, "finite": None, "residual": None, "error": None}
try:
    import usdphys.usd  # noqa
    from usdphys.usd import reader
    from usdphys.simulate import simulate
    st = reader.open_stage(sys.argv[1])
    out["loaded"] = True
    r = simulate(st, duration=1.0)
    out["finite"] = bool(np.all(np.isfinite(r.positions)) and np.all(np.isfinite(r.orientations)))
    out["residual"] = float(np.max(r.max_constraint_error)) if np.size(r.max_constraint_error) else 0.0
    out["reduced"] = int(np.max(r.reduced_steps)) if r.reduced_steps is not None and np.size(r.reduced_steps) else 0
    out["bodies"] = len(r.body_paths)
    out["dt"] = r.dt
except BaseException as e:  # noqa
    out["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:160] if str(e) else type(e).__name__
out["wall"] = time.time() - t0
print("@@RESULT@@" + json.dumps(out))
'''


def sh(cmd, timeout, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def fetch(cache: Path, spec: str):
    dl = cache / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_")
    have = list(dl.glob(f"{name}-*.whl"))
    if not have:
        sh([PY, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dl), spec], 600)
        have = list(dl.glob(f"{name}-*.whl"))
    if not have:
        return None
    whl = sorted(have)[-1]
    dest = cache / "unz" / whl.stem
    if not dest.exists():
        zipfile.ZipFile(whl).extractall(dest)
    return whl, dest


def newton_stages(cache):
    got = fetch(cache, "newton==1.8.0")
    if not got:
        return []
    _, root = got
    files = []
    for pat in ("newton/examples/assets/**/*.usd*", "newton/tests/assets/**/*.usd*"):
        files += [p for p in glob.glob(str(root / pat), recursive=True) if p.endswith((".usd", ".usda"))]
    return [("newton 1.8.0", p, os.path.relpath(p, root)) for p in sorted(set(files))]


# (wheel, its MJCF models): the control suite, dm_control's walkers (CMU humanoid, rodent, dog,
# fruit fly), its Kinova arm and ant, gymnasium's classic MuJoCo tasks, gymnasium-robotics
MJCF_SOURCES = (
    ("dm-control", ["dm_control/suite/*.xml", "dm_control/locomotion/walkers/assets/*.xml",
                    "dm_control/locomotion/walkers/assets/*/*.xml", "dm_control/third_party/*/*.xml"]),
    ("gymnasium==1.4.0", ["gymnasium/envs/mujoco/assets/*.xml"]),  # pinned: mujoco_fidelity reads its folder
    ("gymnasium-robotics", ["gymnasium_robotics/envs/assets/**/*.xml"]),
)


def _root_tag(path) -> str:
    """The XML file's root element name ("" if it does not parse): MJCF models are <mujoco>."""
    import xml.etree.ElementTree as ET
    try:
        for _, elem in ET.iterparse(path, events=("start",)):
            return elem.tag
    except ET.ParseError:
        return ""
    return ""


def mjcf_stages(cache, limit_each=None):
    conv = cache / "conv" / "bin" / "mujoco_usd_converter"
    if not conv.exists():
        sh([PY, "-m", "venv", str(cache / "conv")], 300)
        sh([str(cache / "conv" / "bin" / "pip"), "install", "-q", "mujoco-usd-converter"], 900)
    if not conv.exists():
        return []
    out = []
    for spec, pats in MJCF_SOURCES:
        got = fetch(cache, spec)
        if not got:
            continue
        whl, root = got
        xmls = []
        for pat in pats:
            xmls += sorted(glob.glob(str(root / pat), recursive=True))
        xmls = [x for x in xmls if "common" not in x and "build_" not in x
                and not Path(x).name.startswith(("include", "shared", "robot", "asset", "materials", "scene"))]
        xmls = [x for x in xmls if _root_tag(x) == "mujoco"]  # not fragments (mujocoinclude) or configs
        if limit_each and len(xmls) > limit_each:
            step = len(xmls) / limit_each
            xmls = [xmls[int(i * step)] for i in range(limit_each)]
        for x in xmls:
            rel = os.path.relpath(x, root)
            dest = cache / "usd" / whl.stem / Path(rel).with_suffix("")
            found = sorted(glob.glob(str(dest / "*.usd*")))
            failed = dest / "CONVERSION_FAILED.txt"  # the converter may leave a partial stage behind
            err = failed.read_text().strip() if failed.exists() else None
            if not found and err is None:
                try:
                    r = sh([str(conv), x, str(dest)], 120)
                    found = sorted(glob.glob(str(dest / "*.usd*")))
                    said = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
                    broke = [i for i, ln in enumerate(said) if "Conversion failed" in ln]
                    if broke or not found:
                        err = " ".join(said[broke[0]:] if broke else said[-1:] or ["no output"])
                        err = err.split("runtime error:")[-1].split("Conversion failed:")[-1].strip()[:160]
                        dest.mkdir(parents=True, exist_ok=True)
                        failed.write_text(err + "\n")
                except subprocess.TimeoutExpired:
                    err = "converter timed out (120 s)"
            src = f"{whl.stem.split('-py')[0]} (MJCF)"
            out.append((src, found[0] if found and err is None else None, rel, err))
    return out


def run_stage(path, timeout):
    t0 = time.time()
    try:
        r = sh([PY, "-c", CHILD, path], timeout)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("@@RESULT@@")]
        if line:
            return json.loads(line[-1][len("@@RESULT@@"):])
        tail = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        return {"loaded": False, "finite": None, "residual": None, "wall": time.time() - t0,
                "error": f"crash (exit {r.returncode}): {tail[:140]}"}
    except subprocess.TimeoutExpired:
        return {"loaded": None, "finite": None, "residual": None, "wall": time.time() - t0,
                "error": f"timeout after {timeout} s (hang or too slow)"}


def yn(v):
    return "-" if v is None else ("y" if v else "n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/usdphys-corpus"))
    ap.add_argument("--limit", type=int, default=0, help="sample at most N stages in all (0: all)")
    ap.add_argument("--mjcf-each", type=int, default=6, help="MJCF models converted per package")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out", default=str(HERE.parent / "docs" / "corpus.md"))
    ap.add_argument("--only", default="", help="only the stages whose path contains this text")
    a = ap.parse_args(argv)
    cache = Path(a.cache)
    stages = [(s, p, rel, None) for s, p, rel in newton_stages(cache)] + mjcf_stages(cache, a.mjcf_each)
    stages = [st for st in stages if a.only in st[2]]
    total = len(stages)
    if a.limit and total > a.limit:
        step = total / a.limit
        stages = [stages[int(i * step)] for i in range(a.limit)]
    rows = []
    for src, path, rel, err in stages:
        if path is None:
            res = {"loaded": False, "finite": None, "residual": None, "wall": 0.0, "error": f"conversion failed: {err}"}
        else:
            res = run_stage(path, a.timeout)
        res.update(source=src, stage=rel)
        rows.append(res)
        print(f"{src:28s} {rel[:60]:60s} loaded={yn(res['loaded'])} finite={yn(res['finite'])} "
              f"res={res['residual'] if res['residual'] is None else format(res['residual'], '.2g')} "
              f"{res['wall']:.1f}s {res['error'] or ''}", flush=True)

    def ver(pkg, py=PY):
        try:
            return sh([py, "-c", f"import importlib.metadata as m; print(m.version('{pkg}'))"], 60).stdout.strip() or "?"
        except Exception:  # noqa: BLE001
            return "?"

    conv_py = str(cache / "conv" / "bin" / "python")
    lines = ["# Third-party corpus", "",
             "Made by `python benchmarks/corpus.py " + " ".join(argv if argv is not None else sys.argv[1:]) + "` "
             f"({time.strftime('%Y-%m-%d')}, CPU). Each stage: 1 s at its default dt, one subprocess per stage, "
             f"timeout {a.timeout:.0f} s.", "",
             f"Versions: usdphys {ver('usdphys')}, warp-lang {ver('warp-lang')}, usd-core {ver('usd-core')}; "
             "wheels " + ", ".join(sorted(w.stem.split("-py")[0] for w in (cache / "dl").glob("*.whl"))) + ", "
             f"mujoco-usd-converter {ver('mujoco-usd-converter', conv_py)} with mujoco {ver('mujoco', conv_py)}.", ""]
    if a.limit and total > a.limit:
        lines += [f"Sampled: {len(rows)} of {total} stages (every {total / a.limit:.2f}-th).", ""]
    if a.mjcf_each:
        lines += [f"MJCF: at most {a.mjcf_each} models per package (evenly spaced in name order).", ""]
    ok = sum(1 for r in rows if r["loaded"] and r["finite"] and not r["error"])

    def outcome(r):
        e = r["error"] or ""
        if not e:
            return "ran 1 s, finite" if r["finite"] else "not finite"
        if "nothing to simulate" in e:
            return "nothing to simulate (no rigid bodies): one line"
        if "did not converge" in e:
            return "stopped: a step did not converge even at dt/64 (one line naming time, joint, residual)"
        if "blew up" in e:
            return "blew up (one line)"
        if e.startswith("UsdphysError"):
            return "refused: unsupported or invalid input (one line)"
        if e.startswith("timeout"):
            return "timeout (hang or too slow)"
        if e.startswith("conversion failed"):
            return "MJCF conversion failed (not a usdphys run)"
        return "other error (a defect)"
    counts: dict = {}
    for r in rows:
        counts[outcome(r)] = counts.get(outcome(r), 0) + 1
    lines += [f"{ok} of {len(rows)} stages ran 1 s and stayed finite.", ""]
    lines += ["| outcome | stages |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])]
    lines += ["",
              "| source | stage | loaded | finite | steps reduced | max residual | wall s | error |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        res = "-" if r["residual"] is None else f"{r['residual']:.2g}"
        e = (r["error"] or "").replace(str(cache), "<cache>").replace("|", "\\|")
        red = "-" if r.get("reduced") is None else str(r["reduced"])
        lines.append(f"| {r['source']} | {r['stage']} | {yn(r['loaded'])} | {yn(r['finite'])} | {red} | {res} | "
                     f"{r['wall']:.1f} | {e} |")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
