"""`usdphys assemble INPUT -o OUTPUT`: SNAP assembly into a new layer over the input.

The output layer sublayers the input (by a path relative to the output's folder) and holds
only what SNAP authored: xformOps of the bodies / systems it placed or forced to the
identity, and localPos / localRot of joints that use mate connectors. It repeats the
input's stage metadata (USD reads stage metadata from the root layer only). The input is
never written.

Exit status: 0 assembled completely; 2 written, but some body stayed unresolved or some
mate's frames do not coincide (listed); 1 bad input (nothing written).
"""
from __future__ import annotations

import os
from pathlib import Path

from usdphys.errors import UsdphysError

HELP = "place bodies and systems from mate connectors (OpenPLX SNAP) into a new layer"

# Stage metadata USD takes from the root layer only. The time metadata matters too: a
# sublayer whose timeCodesPerSecond differs from the root's is retimed by USD.
STAGE_METADATA = (
    "upAxis",
    "metersPerUnit",
    "kilogramsPerUnit",
    "defaultPrim",
    "timeCodesPerSecond",
    "framesPerSecond",
    "startTimeCode",
    "endTimeCode",
)

EXIT_INCOMPLETE = 2


def add_arguments(parser) -> None:
    parser.add_argument("input", help="USD stage to assemble (not modified)")
    parser.add_argument("-o", "--output", required=True, help="new layer to write (.usda/.usdc/.usd)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only problems")


def _tf_message(exc) -> str:
    """The human part of a Tf error: what follows "in file ... : "."""
    text = " ".join(str(exc).split())
    head, sep, tail = text.partition(" : ")
    return (tail if sep else text).strip().strip("'").strip()


def _open_input(path: Path):
    from pxr import Sdf, Tf

    if not path.is_file():
        raise UsdphysError(f"{path}: no such file")
    try:
        layer = Sdf.Layer.FindOrOpen(str(path))
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{path}: not a readable USD file ({_tf_message(exc)})") from None
    if layer is None:
        raise UsdphysError(f"{path}: not a readable USD file")
    return layer


def build_layer(input_path: str | os.PathLike, output_path: str | os.PathLike):
    """Compose input under a new layer, assemble into it; returns (layer to write, report).

    The returned layer sublayers the input by a path relative to output_path's folder.
    """
    from pxr import Sdf, Tf, Usd

    import usdphys.usd.assemble as snap

    inp = Path(input_path)
    out = Path(output_path)
    in_layer = _open_input(inp)
    work = Sdf.Layer.CreateAnonymous("assembled.usda")
    work.subLayerPaths = [in_layer.identifier]
    for key in STAGE_METADATA:
        if in_layer.pseudoRoot.HasInfo(key):
            work.pseudoRoot.SetInfo(key, in_layer.pseudoRoot.GetInfo(key))
    try:
        stage = Usd.Stage.Open(work)
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{inp}: USD could not compose the stage ({_tf_message(exc)})") from None
    stage.SetEditTarget(Usd.EditTarget(work))
    report = snap.assemble(stage)

    final = Sdf.Layer.CreateAnonymous("assembled.usda")
    final.TransferContent(work)
    try:
        rel = os.path.relpath(inp.resolve(), out.resolve().parent)
    except ValueError:  # another drive
        rel = str(inp.resolve())
    final.subLayerPaths = [Path(rel).as_posix()]
    final.documentation = (
        f"SNAP assembly of {Path(rel).as_posix()} by `usdphys assemble`: transforms of bodies and "
        "systems placed from mate connectors, and joint frames computed from connectors."
    )
    return final, report


def run(args) -> int:
    from usdphys.usd.stage import check_output_path, export_layer_atomic

    out = check_output_path(args.output, args.input)
    layer, report = build_layer(args.input, out)
    export_layer_atomic(layer, out)
    if args.quiet:
        problems = [line for line in report.summary().splitlines() if line.startswith(("UNRESOLVED", "UNSATISFIED"))]
        if problems:
            print("\n".join(problems))
    else:
        print(report.summary())
        print(f"wrote {out}")
    return 0 if report.complete else EXIT_INCOMPLETE


__all__ = ["HELP", "add_arguments", "build_layer", "run"]
