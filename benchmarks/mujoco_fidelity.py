"""usdphys on converted MJCF against native MuJoCo on the original MJCF: body positions after 0.5 s.

    python benchmarks/mujoco_fidelity.py [--cache ~/.cache/usdphys-corpus] [--source suite|gymnasium]
                                         [--models humanoid,walker,...] [--mjcf a.xml,b.xml] [--equality]
                                         [--duration 0.5] [--dt 1e-3]

Models: the dm_control suite or, with --source gymnasium, gymnasium's MuJoCo tasks (from the wheels
benchmarks/corpus.py unpacks under <cache>/unz), converted with mujoco-usd-converter 0.8 (its own venv, <cache>/conv). Both sides run
the same mechanism (docs: foreign stages, "Comparing with native MuJoCo fairly"): the free joints
are removed from the MJCF before converting (floating bases welded to the world), contact,
actuation, friction loss, limits and equality constraints are off (MuJoCo disable flags; USD:
collisions disabled, joint limits removed in a session layer), tendon springs are zeroed in MuJoCo
(usdphys does not simulate tendons), joint springs, damping and armature stay on both sides, start
from qpos0 at rest. MuJoCo: RK4 at dt 1e-4 (the reference; its own dt convergence is printed).
Prints one row per model: the largest and the median body-origin difference, and the MuJoCo version
used. --mjcf runs your own MJCF files instead of the suite (e.g. the stiff-equality models of
tests/usd/test_mujoco_joint_fidelity.py); --equality keeps MuJoCo's equality constraints on (usdphys
simulates connect, weld and the linear joint equality as hard constraints: make them stiff in the
MJCF, solref 2e-4 / solimp 0.9999, for a tight comparison).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SUITE = "unz/dm_control-1.0.50-py3-none-any/dm_control/suite"
DEFAULT_MODELS = "acrobot,cartpole,pendulum,reacher,cheetah,walker,hopper,finger,humanoid"
# gymnasium's MuJoCo tasks (the wheel benchmarks/corpus.py unpacks): --source gymnasium
GYMNASIUM = "unz/gymnasium-1.4.0-py3-none-any/gymnasium/envs/mujoco/assets"
GYMNASIUM_MODELS = ("ant,half_cheetah,hopper,walker2d,humanoid,humanoidstandup,swimmer,reacher,pusher,"
                    "inverted_double_pendulum,inverted_pendulum")


def weld_floating(xml: str) -> str:
    """Remove free joints: the body is then welded to its parent (the world)."""
    xml = re.sub(r"<freejoint[^>]*/>", "", xml)
    return re.sub(r"<joint[^>]*type=\"free\"[^>]*/>", "", xml)


def mujoco_positions(xml_path: Path, duration: float, dt: float, equality: bool = False):
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(xml_path))
    D = mujoco.mjtDisableBit
    m.opt.disableflags |= int(D.mjDSBL_CONTACT | D.mjDSBL_ACTUATION | D.mjDSBL_FRICTIONLOSS | D.mjDSBL_LIMIT
                              | (0 if equality else D.mjDSBL_EQUALITY))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = dt
    m.tendon_stiffness[:] = 0.0
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    for _ in range(int(round(duration / dt))):
        mujoco.mj_step(m, d)
    # MuJoCo resets a state it finds non-finite or huge and carries on: then it has no answer
    W = mujoco.mjtWarning
    if any(d.warning[int(w)].number > 0 for w in (W.mjWARN_BADQACC, W.mjWARN_BADQVEL, W.mjWARN_BADQPOS)):
        raise RuntimeError(f"{xml_path.name}: MuJoCo went unstable and reset itself (dt {dt:g}); no reference")
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(m.nbody)]
    return {n: d.xpos[b].copy() for b, n in enumerate(names) if b > 0 and n}


def usdphys_positions(usd_path: Path, duration: float, dt: float):
    import usdphys.usd  # noqa: F401  (schemas before pxr's registry)
    from pxr import Sdf, Usd, UsdPhysics

    from usdphys.simulate import simulate

    stage = Usd.Stage.Open(str(usd_path))
    stage.SetEditTarget(stage.GetSessionLayer())
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            prim.CreateAttribute("physics:collisionEnabled", Sdf.ValueTypeNames.Bool).Set(False)
        if prim.IsA(UsdPhysics.RevoluteJoint) or prim.IsA(UsdPhysics.PrismaticJoint):
            for name in ("physics:lowerLimit", "physics:upperLimit"):
                attr = prim.GetAttribute(name)
                if attr and attr.HasAuthoredValue():
                    attr.Set(float("-inf") if "lower" in name else float("inf"))
    r = simulate(stage, duration=duration, dt=dt, fps=10)
    return {p.split("/")[-1]: r.positions[-1, 0, i] for i, p in enumerate(r.body_paths)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/usdphys-corpus"))
    ap.add_argument("--source", choices=("suite", "gymnasium"), default="suite",
                    help="the dm_control suite or gymnasium's MuJoCo tasks")
    ap.add_argument("--models", default="", help=f"comma-separated (suite default: {DEFAULT_MODELS}; "
                    f"gymnasium: {GYMNASIUM_MODELS})")
    ap.add_argument("--mjcf", default="", help="comma-separated MJCF files to run instead of the suite")
    ap.add_argument("--equality", action="store_true", help="keep MuJoCo's equality constraints on")
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--dt", type=float, default=1e-3, help="usdphys time step (s)")
    args = ap.parse_args(argv)
    import mujoco

    cache = Path(args.cache)
    suite = cache / (GYMNASIUM if args.source == "gymnasium" else SUITE)
    conv = cache / "conv" / "bin" / "mujoco_usd_converter"
    models = args.models or (GYMNASIUM_MODELS if args.source == "gymnasium" else DEFAULT_MODELS)
    files = [Path(f).resolve() for f in args.mjcf.split(",") if f]
    if not conv.exists() or (not files and not suite.is_dir()):
        print(f"needs {suite} and {conv}: run benchmarks/corpus.py first", file=sys.stderr)
        return 2
    print(f"MuJoCo {mujoco.__version__} (RK4, dt 1e-4) vs usdphys (dt {args.dt:g}) after {args.duration:g} s; "
          "bodies matched by name; distances of body origins in mm")
    print("| model | bodies | max diff | median diff | MuJoCo dt 2e-4 vs 1e-4 | note |")
    print("|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not files and (suite / "common").is_dir():
            shutil.copytree(suite / "common", tmp / "common")
        sources = files or [suite / f"{name}.xml" for name in models.split(",")]
        for src in sources:
            name = src.stem
            xml = tmp / f"{name}.xml"
            xml.write_text(weld_floating(src.read_text()))
            note = ""
            try:
                ref = mujoco_positions(xml, args.duration, 1e-4, args.equality)
                coarse = mujoco_positions(xml, args.duration, 2e-4, args.equality)
                conv_err = max(np.linalg.norm(coarse[k] - ref[k]) for k in ref)
                out = tmp / f"{name}_usd"
                r = subprocess.run([str(conv), str(xml), str(out)], capture_output=True, text=True, timeout=300)
                usd = next(iter(sorted(out.glob("*.usd*"))), out / "missing")  # named after the MJCF's model
                if not usd.exists():
                    raise RuntimeError(f"converter failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
                got = usdphys_positions(usd, args.duration, args.dt)
                common = [k for k in ref if k in got]
                diffs = np.array([np.linalg.norm(got[k] - ref[k]) for k in common])
                if len(common) < len(ref):
                    note = f"{len(ref) - len(common)} bodies not matched by name"
                print(f"| {name} | {len(common)} | {1e3 * diffs.max():.4g} | {1e3 * np.median(diffs):.4g} | "
                      f"{1e3 * conv_err:.2g} | {note} |", flush=True)
            except Exception as exc:  # noqa: BLE001  (one model's failure is a row, not the end)
                print(f"| {name} | - | - | - | - | {type(exc).__name__}: {str(exc).splitlines()[0][:300]} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
