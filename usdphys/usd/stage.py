"""Stage I/O: opening an input, a new layer over it, its stage metadata, safe atomic output.

Every command reads and writes through here, so they all fail the same way on bad input
(one line naming the file and the reason) and never leave half-written or private-mode
output behind.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from pxr import Ar, Pcp, Sdf, Tf, Usd

from usdphys.errors import warn

from usdphys import outfile
from usdphys.errors import UsdphysError

USD_EXTENSIONS = (".usda", ".usdc", ".usd")
MAX_MESSAGE = 300  # characters of USD's own error text quoted in ours
# A text layer is parsed whole before anything can be checked, about 5 s per GiB even when
# it is one long run of nothing; larger ones are refused unread (binary .usdc is not: it is
# read lazily).
MAX_TEXT_LAYER_BYTES = 256 * 1024 * 1024

# Stage metadata USD takes from the root layer only, so a layer over an input must repeat
# it. The time metadata matters too: a sublayer whose timeCodesPerSecond differs from the
# root's is retimed by USD.
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


def tf_message(exc: BaseException) -> str:
    """The human part of USD's first error: what follows "in file ... : "."""
    text = " ".join(str(exc).split())
    blocks = [b for b in text.split("Error in ") if b.strip()]
    first = blocks[0].strip() if blocks else text
    head, sep, tail = first.partition(" : ")
    msg = (tail if sep else first).strip().strip("'").strip() or type(exc).__name__
    # The text parser quotes C++ grammar names and the rest of the offending input: keep the
    # message one readable line.
    msg = re.sub(r"pxrInternal_v\w*?__pxrReserved__(_?::)?", "", msg)
    return msg if len(msg) <= MAX_MESSAGE else msg[:MAX_MESSAGE - 3].rstrip() + "..."


def open_stage(path: str | os.PathLike, allow_missing: bool = False, report_missing: bool = True) -> Usd.Stage:
    """Open a USD file for reading, or raise a one-line UsdphysError that says why not.

    A sublayer, reference, payload or asset-valued attribute naming a file that does not
    exist is an error naming the layer and the missing path: USD itself only warns and
    composes what it can, which silently loses bodies. allow_missing=True turns each into a
    warning instead (report_missing=False: say nothing; `usdphys check` reports them itself).
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        raise UsdphysError(f"{p}: no such file")
    if os.path.isdir(p):
        raise UsdphysError(f"{p}: is a folder, expected a USD file")
    if not os.access(p, os.R_OK):
        raise UsdphysError(f"{p}: file is not readable")
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
            size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        raise UsdphysError(f"{p}: cannot read: {_os_reason(exc)}") from None
    if head.startswith(b"#usda") and size > MAX_TEXT_LAYER_BYTES:
        raise UsdphysError(f"{p}: text layer too large: {size} bytes (limit {MAX_TEXT_LAYER_BYTES} bytes); "
                           "convert it to binary .usdc (usdcat -o FILE.usdc) to read it")
    # The layer first: a syntax error then reads as one, not as a composition failure.
    try:
        layer = Sdf.Layer.FindOrOpen(p)
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{p}: not a readable USD file ({tf_message(exc)}); cannot open as a USD stage") from None
    except RecursionError:
        raise UsdphysError(f"{p}: not a readable USD file (nested too deeply); cannot open as a USD stage") from None
    if layer is None:
        raise UsdphysError(f"{p}: not a readable USD file; cannot open as a USD stage")
    try:
        stage = compose(layer)
    except Tf.ErrorException as exc:
        raise UsdphysError(f"{p}: cannot open as a USD stage ({tf_message(exc)})") from None
    if stage is None:
        raise UsdphysError(f"{p}: cannot open as a USD stage")
    problems = composition_problems(stage)
    if problems and not allow_missing:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsdphysError(f"{problems[0]}{more}; pass --allow-missing (allow_missing=True) to go on without it")
    if report_missing:
        for problem in problems:
            warn(f"{problem}; going on without it")
    return stage


def compose(layer: Sdf.Layer) -> Usd.Stage:
    """Usd.Stage.Open(layer) without USD's composition warnings: open_stage reports what is
    missing itself (composition_problems), once, naming the layer and the path as written;
    any other warning passes through unchanged."""
    with Tf.DiagnosticTrap() as trap:
        stage = Usd.Stage.Open(layer)
        trap.EraseMatching(lambda d: str(d.sourceFunction).endswith("_ReportErrors"))
    return stage


def _layer_name(layer: Sdf.Layer) -> str:
    return layer.realPath or layer.identifier


def _resolves(layer: Sdf.Layer, asset: str) -> bool:
    try:
        return bool(Ar.GetResolver().Resolve(Sdf.ComputeAssetPathRelativeToLayer(layer, asset)))
    except Tf.ErrorException:
        return False


def _list_op_items(list_op) -> list:
    items = []
    for name in ("explicitItems", "prependedItems", "addedItems", "appendedItems"):
        items.extend(getattr(list_op, name, None) or [])
    return items


def _asset_values(value) -> list[str]:
    if isinstance(value, Sdf.AssetPath):
        return [value.path]
    if value is not None and hasattr(value, "__iter__") and not isinstance(value, str):
        return [v.path for v in value if isinstance(v, Sdf.AssetPath)]
    return []


def composition_problems(stage: Usd.Stage) -> list[str]:
    """Every missing file a stage's layers name, one line each: `LAYER: missing KIND @PATH@
    (at PRIM[.ATTRIBUTE])`, in the order the layers are used; plus any other composition
    error USD found (a reference to a prim the referenced file lacks, a cycle, ...)."""
    problems: list[str] = []
    missing_layers: set[str] = set()
    asset_types = (Sdf.ValueTypeNames.Asset, Sdf.ValueTypeNames.AssetArray)
    for layer in stage.GetUsedLayers():
        if layer.anonymous:
            continue
        name = _layer_name(layer)
        for sub in layer.subLayerPaths:
            if not _resolves(layer, sub):
                missing_layers.add(Sdf.ComputeAssetPathRelativeToLayer(layer, sub))
                problems.append(f"{name}: missing sublayer @{sub}@")
        found: list[str] = []

        def visit(spec_path, layer=layer, name=name, found=found):
            spec = layer.GetObjectAtPath(spec_path)
            if isinstance(spec, Sdf.PrimSpec):
                for kind, list_op in (("reference", spec.referenceList), ("payload", spec.payloadList)):
                    for item in _list_op_items(list_op):
                        asset = item.assetPath
                        if asset and not _resolves(layer, asset):
                            missing_layers.add(Sdf.ComputeAssetPathRelativeToLayer(layer, asset))
                            found.append(f"{name}: missing {kind} @{asset}@ (at {spec_path})")
            elif isinstance(spec, Sdf.AttributeSpec) and spec.typeName in asset_types:
                values = _asset_values(spec.default) if spec.HasDefaultValue() else []
                for t in layer.ListTimeSamplesForPath(spec_path):
                    values += _asset_values(layer.QueryTimeSample(spec_path, t))
                for asset in dict.fromkeys(values):
                    if asset and not _resolves(layer, asset):
                        found.append(f"{name}: missing asset @{asset}@ (at {spec_path})")

        layer.Traverse(Sdf.Path.absoluteRootPath, visit)
        problems.extend(found)
    for err in stage.GetCompositionErrors():
        if err.errorType in (Pcp.ErrorType_InvalidAssetPath, Pcp.ErrorType_InvalidSublayerPath):
            continue  # named above, with the layer and the path as written
        site = getattr(err, "rootSite", None)
        where = str(site.path) if site is not None else "/"
        problems.append(f"{_layer_name(stage.GetRootLayer())}: composition error at {where}: "
                        f"{str(err.errorType).rpartition('_')[2]}")
    return problems


def sublayer_path(input_path: str | os.PathLike, output_path: str | os.PathLike) -> str:
    """How a layer written at output_path names input_path: relative to the output's folder
    ("./" anchored so USD never searches for it), absolute only across drives."""
    inp = Path(input_path).resolve()
    try:
        rel = os.path.relpath(inp, Path(output_path).resolve().parent)
    except ValueError:  # another drive
        return inp.as_posix()
    rel = Path(rel).as_posix()
    return rel if rel.startswith(".") else "./" + rel


def new_layer_over(input_path: str | os.PathLike, output_path: str | os.PathLike,
                   tag: str = ".usda") -> Sdf.Layer:
    """A new anonymous layer whose one sublayer is the input, named relative to output_path."""
    layer = Sdf.Layer.CreateAnonymous(tag)
    layer.subLayerPaths = [sublayer_path(input_path, output_path)]
    return layer


def copy_stage_metadata(src: Sdf.Layer, dst: Sdf.Layer, keys=STAGE_METADATA) -> None:
    """Repeat src's authored stage metadata (of keys) on dst; unauthored keys stay unauthored."""
    for key in keys:
        if src.pseudoRoot.HasInfo(key):
            dst.pseudoRoot.SetInfo(key, src.pseudoRoot.GetInfo(key))


def check_output_path(output: str | os.PathLike, *inputs: str | os.PathLike, extensions=USD_EXTENSIONS) -> Path:
    """Validate an output path: extension (USD by default), existing folder, not one of the inputs."""
    return outfile.check_output_path(output, *inputs, extensions=extensions)


def _os_reason(exc: OSError) -> str:
    return outfile.os_reason(exc)


def _usd_write(path: Path, write):
    """write(tmp) for outfile.write_atomic, with USD's errors said in one line."""
    def run(tmp):
        try:
            ok = write(tmp)
        except Tf.ErrorException as exc:
            raise UsdphysError(f"{path}: USD could not write the file ({tf_message(exc)})") from None
        if not ok:
            raise UsdphysError(f"{path}: USD could not write the file")
    return run


write_atomic = outfile.write_atomic  # any file (tables, pictures): usdphys/outfile.py


def export_layer_atomic(layer: Sdf.Layer, path: str | os.PathLike) -> None:
    """Write an Sdf layer to path via a temp file + rename (no half-written output)."""
    outfile.write_atomic(path, _usd_write(Path(path), lambda tmp: layer.Export(tmp)))


def export_stage_atomic(stage: Usd.Stage, path: str | os.PathLike) -> None:
    """Write a stage's root layer to path atomically."""
    outfile.write_atomic(path, _usd_write(Path(path), lambda tmp: stage.GetRootLayer().Export(tmp)))
