"""The `usdphys` command: a thin face over the Python API.

    convert      usdphys.converters.chrono.convert_file
    check        usdphys.usd.check.check_stage
    assemble     usdphys.usd.assemble.assemble_to_layer
    simulate     usdphys.simulate.simulate (+ Result.write_table)
    sweep        usdphys.sweep.sweep
    plot         usdphys.plot.plot
    render       usdphys.drawing.render
    plugin-path  usdphys.usd.plugin.plugin_path

Each subcommand is an argparse setup plus a function args -> exit status. pxr, Warp and the
converters load only once a command runs (so --help and --version stay quick), and the
schemas are registered before any command runs. Bad input raises UsdphysError: printed as
one clear line, exit 1, never a traceback.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

import numpy as np

from usdphys.errors import UsdphysError

# `usdphys assemble`: written, but some body stayed unresolved or some mate's frames do not
# coincide (listed); `usdphys sweep`: written, but some variants failed (their rows say why).
# 0 is complete, 1 bad input (nothing written).
EXIT_INCOMPLETE = 2
# Interrupted by Ctrl-C (SIGINT) / by SIGTERM: 128 + the signal's number, as a shell reports it.
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """Raised by the SIGTERM handler, so a terminated run unwinds exactly like Ctrl-C (temp
    files removed, nothing half-written) and only the exit status and the word differ."""


def _on_sigterm(signum, frame):
    raise Terminated()


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (with the command), not the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
ALLOW_MISSING_HELP = ("go on (with a warning) when a sublayer, reference, payload or asset names a missing "
                      "file; by default that is an error")


# ---------------------------------------------------------------------------- convert
def _convert_arguments(parser) -> None:
    parser.add_argument("input", help="Chrono YAML model file or simulation file (type: MBS, FSI, VEHICLE)")
    parser.add_argument("-o", "--output", required=True, help="output stage (.usda, .usdc or .usd)")


def _convert(args) -> int:
    src = Path(args.input)
    if src.suffix.lower() not in (".yaml", ".yml"):
        raise UsdphysError(f"{src}: unknown input format (expected a Chrono .yaml / .yml file)")
    if not src.is_file():
        raise UsdphysError(f"{src}: file not found")
    from usdphys.converters.chrono import convert_file

    convert_file(src, args.output)
    print(f"wrote {args.output}")
    return 0


# ---------------------------------------------------------------------------- check
def _check_arguments(parser) -> None:
    parser.add_argument("stage", help="USD file to check")
    parser.add_argument("--no-usd-core", action="store_true", help="skip usd-core's own validators")
    parser.add_argument("--quiet", "-q", action="store_true", help="print errors only")


def _check(args) -> int:
    from usdphys.usd.check import check_stage
    from usdphys.usd.stage import open_stage

    # Missing sublayers / references / payloads / assets are reported as findings (errors).
    findings = check_stage(open_stage(args.stage, allow_missing=True, report_missing=False),
                           usd_core=not args.no_usd_core)
    errors = [f for f in findings if f.severity == "error"]
    for f in findings:
        if f.severity == "error" or not args.quiet:
            print(f)
    warnings = len(findings) - len(errors)
    print(f"{args.stage}: {len(errors)} error(s), {warnings} warning(s)")
    return 1 if errors else 0


# ---------------------------------------------------------------------------- assemble
def _assemble_arguments(parser) -> None:
    parser.add_argument("input", help="USD stage to assemble (not modified)")
    parser.add_argument("-o", "--output", required=True, help="new layer to write (.usda/.usdc/.usd)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    parser.add_argument("--allow-missing", action="store_true", help=ALLOW_MISSING_HELP)


def _assemble(args) -> int:
    from usdphys.usd.assemble import assemble_to_layer
    from usdphys.usd.stage import check_output_path, export_layer_atomic

    out = check_output_path(args.output, args.input)
    layer, report = assemble_to_layer(args.input, out, allow_missing=args.allow_missing)
    export_layer_atomic(layer, out)
    if args.quiet:
        problems = [line for line in report.summary().splitlines() if line.startswith(("UNRESOLVED", "UNSATISFIED"))]
        if problems:
            print("\n".join(problems))
    else:
        print(report.summary())
        print(f"wrote {out}")
    return 0 if report.complete else EXIT_INCOMPLETE


# ---------------------------------------------------------------------------- simulate
def _simulate_arguments(parser) -> None:
    parser.add_argument("input", help="USD stage to simulate (never modified)")
    parser.add_argument("-o", "--output", required=True, help="result layer (.usda/.usdc/.usd); sublayers INPUT")
    parser.add_argument("--duration", type=float, default=None,
                        help="simulated seconds (default: mbd:endTime on the PhysicsScene, else 5)")
    parser.add_argument("--dt", type=float, default=None,
                        help="largest time step in seconds; rounded down to divide 1/fps "
                             "(default: mbd:timeStep on the PhysicsScene, else 0.001)")
    parser.add_argument("--fps", type=float, default=None, help="output frames per second (default 60)")
    parser.add_argument("--device", default=None,
                        help="Warp device: cpu or cuda (default: the one the environment variable USDPHYS_DEVICE names, "
                             "else the CPU, or the GPU when there is one and the run has at least 64 worlds per CPU "
                             "core: a GPU runs one world slower than a CPU core)")
    parser.add_argument("--worlds", type=int, default=1,
                        help="simulate N copies at once (benchmarking); world 0 is written")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads the worlds are spread over (default: every core when --worlds > 1)")
    parser.add_argument("--allow-missing", action="store_true", help=ALLOW_MISSING_HELP)
    parser.add_argument("--record", default=None, metavar="GROUPS",
                        help="also record bodies,joints,elements,world (comma-separated, or all): velocities, "
                             "joint coordinates and reactions, element forces, energies (docs/recording.md)")
    parser.add_argument("--table", default=None, metavar="FILE",
                        help="also write the recorded quantities as a table (.csv, or .parquet with pyarrow); "
                             "records all groups unless --record says which")
    parser.add_argument("--tol", type=float, default=None, metavar="TOL",
                        help="Newton stopping tolerance on the joints' residuals, m or rad (default 1e-12, "
                             "from 1e-15 to 1e-3); recorded reactions follow the motion to about mass x TOL / dt^2")
    parser.add_argument("--max-turn", type=float, default=None, metavar="RAD",
                        help="retry a step smaller (down to dt/256) where a body turns more than RAD within it "
                             "(default: off); may carry a thin rod through a near-singular pose, no guarantee "
                             "(docs/solver.md)")
    parser.add_argument("--laws", default=None, metavar="MODULE",
                        help="user force laws named by mbd:userLaw: a Python module (dotted name or .py file) "
                             "whose LAWS dict, or else whose @wp.func functions by name, supply them")


def _load_laws(spec: str) -> dict:
    """--laws: a module's LAWS dict, else its Warp functions by attribute name."""
    import importlib
    import importlib.util

    try:
        if spec.endswith(".py"):
            path = Path(spec)
            if not path.is_file():
                raise UsdphysError(f"--laws {spec}: file not found")
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except UsdphysError:
        raise
    except Exception as exc:  # the user's module failed to import: say where, in one line
        raise UsdphysError(f"--laws {spec}: cannot import it ({type(exc).__name__}: {exc})") from None
    laws = getattr(module, "LAWS", None)
    if laws is None:
        from usdphys.solver.forces import warp_functions

        laws = warp_functions(vars(module))
    if not isinstance(laws, dict) or not laws:
        raise UsdphysError(f"--laws {spec}: no laws found (define LAWS = {{name: warp_function}} or @wp.func functions)")
    return laws


def _simulate(args) -> int:
    from usdphys.simulate import simulate
    from usdphys.usd.stage import check_output_path

    check_output_path(args.output, args.input)  # fail before minutes of simulation
    record = args.record
    if args.table is not None:
        from usdphys.table import check_table_path

        check_table_path(args.table, args.input)
        if Path(args.table).resolve() == Path(args.output).resolve():
            raise UsdphysError(f"{args.table}: the table and the result layer must be different files")
        record = record or "all"
    from usdphys.types.recording import RecordGroups

    RecordGroups.parse(record)  # a bad group name fails before the run
    if args.device is not None:
        from usdphys.solver.warpinit import device_name_problem

        problem = device_name_problem(str(args.device))
        if problem is not None:
            hint = "; use --device cpu" if problem.startswith("no CUDA") else ""
            raise UsdphysError(f"--device {args.device}: {problem}{hint}")
    laws = _load_laws(args.laws) if args.laws else None
    result = simulate(args.input, duration=args.duration, dt=args.dt, fps=args.fps, device=args.device,
                      worlds=args.worlds, progress=True, allow_missing=args.allow_missing, record=record,
                      laws=laws, threads=args.threads, tol=args.tol, max_turn=args.max_turn)
    out = result.write(args.output)
    print(f"wrote {out}: {len(result.body_paths)} bodies, {len(result.times)} frames at {result.fps:g} fps "
          f"(dt = {result.dt:.6g} s)")
    reduced = int(np.max(result.reduced_steps)) if result.reduced_steps is not None else 0
    why = " or where a body turned more than --max-turn" if args.max_turn else ""
    print(f"largest joint residual {float(np.max(result.max_constraint_error)):.3g} m or rad; "
          f"{reduced} step(s) reduced to converge{why}")
    if args.table is not None:
        table = result.write_table(args.table)
        print(f"wrote {table}: {len(result.table()) - 1} columns")
    return 0


# ---------------------------------------------------------------------------- sweep
def _sweep_arguments(parser) -> None:
    parser.add_argument("input", help="USD stage every variant overrides (never modified)")
    parser.add_argument("--spec", required=True, help="sweep spec (.yaml): overrides, run settings, metrics "
                                                      "(docs/sweeps.md)")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                        help="folder for results.csv (+ results.parquet with pyarrow); a re-run skips the "
                             "variants already there")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="local: a process pool on this machine (default); ray: Ray tasks (usdphys[ray])")
    parser.add_argument("--address", default=None, help="Ray cluster to join (default: start Ray locally)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: every core; 1 runs in this process)")
    parser.add_argument("--layers", action="store_true",
                        help="also write each variant's result layer (its overrides and motion over INPUT) "
                             "to OUTDIR/layers/")
    parser.add_argument("--allow-missing", action="store_true", help=ALLOW_MISSING_HELP)


def _sweep(args) -> int:
    from usdphys.sweep import sweep

    s = sweep(args.input, args.spec, args.output, backend=args.backend, address=args.address,
              workers=args.workers, layers=args.layers, progress=True, allow_missing=args.allow_missing)
    print(f"wrote {s.table}{f' and {s.parquet.name}' if s.parquet else ''}: {s.variants} variants "
          f"({s.ran} run in {s.tasks} task(s), {s.skipped} already done, {s.failed} failed) in {s.wall_s:.1f} s")
    if s.warned:
        print(f"{s.warned} variant(s) warned: see the warnings column")
    return EXIT_INCOMPLETE if s.failed else 0


# ---------------------------------------------------------------------------- plot
def _plot_arguments(parser) -> None:
    parser.add_argument("result", help="result layer written by simulate --record, or its --table (.csv/.parquet)")
    parser.add_argument("-o", "--output", required=True, help="picture to write (.png, .svg or .pdf)")
    parser.add_argument("--what", default="joints,elements,energy",
                        help="groups to draw: bodies, joints, elements, energy (comma-separated; default "
                             "joints,elements,energy)")


def _plot(args) -> int:
    from usdphys.plot import plot

    fig = plot(args.result, args.output, what=args.what)
    print(f"wrote {args.output}: {len(fig.axes)} panel(s), {sum(len(a.lines) for a in fig.axes)} series")
    return 0


# ---------------------------------------------------------------------------- render
def _render_arguments(parser) -> None:
    parser.add_argument("result", help="result layer written by usdphys simulate (or any stage with time samples)")
    parser.add_argument("-o", "--output", required=True,
                        help="picture: .png (a strip of frames side by side), .gif or .mp4 (an animation)")
    parser.add_argument("--frames", default=None,
                        help="frames to draw: '0,30,60' or 'start:stop[:step]' (default: 6 evenly spaced for "
                             ".png, all for .gif / .mp4)")
    parser.add_argument("--size", default="480x360", help="WIDTHxHEIGHT of one frame in pixels (default 480x360)")
    parser.add_argument("--geometry", default="auto", choices=("auto", "visual", "collision"),
                        help="what to draw (default: visual shapes, else collision shapes)")
    parser.add_argument("--view", default=None,
                        help="AZIMUTH,ELEVATION in degrees about the stage's up axis (default: from the motion)")
    parser.add_argument("--fps", type=float, default=None, help="animation frames per second (default: real time)")


def _render(args) -> int:
    from usdphys.drawing import render

    out, _, scene = render(args.result, args.output, frames=args.frames, size=args.size, geometry=args.geometry,
                           view=args.view, fps=args.fps)
    print(f"wrote {out}: {len(scene.time_codes)} frame(s), {len(scene.meshes)} shape(s)")
    return 0


# ---------------------------------------------------------------------------- plugin-path
def _plugin_path_arguments(parser) -> None:
    parser.add_argument("--export", action="store_true", help="print a shell `export` line instead")


def _plugin_path(args) -> int:
    from usdphys.usd.plugin import plugin_path

    path = plugin_path()
    print(f"export PXR_PLUGINPATH_NAME={path}${{PXR_PLUGINPATH_NAME:+:$PXR_PLUGINPATH_NAME}}" if args.export else path)
    return 0


# name: (one-line help, argparse setup, run)
SUBCOMMANDS = {
    "convert": ("convert a Chrono YAML model or simulation file into a USD stage (.usda / .usdc)",
                _convert_arguments, _convert),
    "check": ("validate usdphys / NewtonJointAPI schemas on a stage (and run usd-core's validators)",
              _check_arguments, _check),
    "assemble": ("place bodies and systems from mate connectors (OpenPLX SNAP) into a new layer",
                 _assemble_arguments, _assemble),
    "simulate": ("simulate a UsdPhysics stage and write body motion as time samples in a new layer",
                 _simulate_arguments, _simulate),
    "sweep": ("simulate many variants of a stage (attribute overrides from a spec) on every core or a Ray "
              "cluster; one table row per variant", _sweep_arguments, _sweep),
    "plot": ("plot the quantities a simulation recorded (joints, elements, energy) into a .png / .svg / .pdf",
             _plot_arguments, _plot),
    "render": ("draw the bodies' shapes at chosen frames of a result: a PNG strip, a GIF or an MP4 (no display needed)",
               _render_arguments, _render),
    "plugin-path": ("print the folder to put on PXR_PLUGINPATH_NAME (usdview and other USD apps)",
                    _plugin_path_arguments, _plugin_path),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="usdphys", description="Multibody physics for OpenUSD.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (help_text, add_arguments, run) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(sp)
        sp.set_defaults(_run=run)
    return parser


def _version() -> str:
    from usdphys import __version__

    return f"usdphys {__version__}"


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    try:
        import usdphys.usd  # noqa: F401  (registers the schemas every command relies on)
    except ImportError as exc:  # e.g. schema registration refused (clash), said clearly
        print(f"usdphys: error: {exc}", file=sys.stderr)
        return 1
    # Only the main thread may set a handler (main() is also called in-process by tests).
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        # Every value read is checked for being finite where it matters; NumPy's own
        # floating-point warnings would only add lines (with source excerpts) before ours.
        with np.errstate(all="ignore"):
            return int(args._run(args) or 0)
    except UsdphysError as exc:
        print(f"usdphys {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except Terminated:
        print(f"usdphys {args.command}: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print(f"usdphys {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
