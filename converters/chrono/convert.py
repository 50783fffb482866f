"""Chrono YAML -> USD: the entry points and the order of the conversion.

Reads a Chrono model file or simulation file (MBS; FSI and VEHICLE files for their multibody
part), validates it against model.schema.json / simulation.schema.json (ours), checks the
semantics the schema cannot express, and writes an in-memory Usd.Stage. It writes USD and
nothing else (never imports the solver). Each concept has its module (state, scene,
simulation, bodies, shapes, joints, springs, motors, functions, loads); this one classifies
the input and runs them in order. Layout and every field mapping: docs/converters.md.
"""
from __future__ import annotations

import os
from pathlib import Path

from pxr import Usd

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.errors import UsdphysError
from usdphys.usd import articulation
from usdphys.usd.stage import check_output_path, export_stage_atomic

from . import bodies, joints, loads, motors, scene, simulation, springs
from .state import ConversionState
from .validate import validate
from .yamlio import Doc, load


def convert(path: str | os.PathLike, warnings: list | None = None) -> Usd.Stage:
    """Convert a Chrono YAML model or simulation file into an in-memory Usd.Stage.

    Bad input raises UsdphysError naming file:line and the field. Warnings go to the
    `usdphys` logger and, when a list is given, are appended to it as well.
    """
    st = ConversionState(warnings=warnings if warnings is not None else [])
    stage = _run(st, Path(path))
    # Tree markup for importers that need articulations (Newton); our reader ignores it.
    articulation.author(stage, turn=True)
    return stage


def convert_file(input_path: str | os.PathLike, output_path: str | os.PathLike,
                 warnings: list | None = None) -> Usd.Stage:
    """Convert and write the stage atomically (nothing is written when conversion fails)."""
    out = check_output_path(output_path, input_path)
    stage = convert(input_path, warnings)
    export_stage_atomic(stage, out)
    return stage


def _run(st: ConversionState, path: Path) -> Usd.Stage:
    """Classify the input file and convert the model it names."""
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise UsdphysError(f"{path}: expected a Chrono YAML file (.yaml or .yml)")
    doc = load(path)
    if not isinstance(doc.data, dict):
        raise doc.error((), "expected a mapping at the top level (a Chrono model or simulation file)")
    data = doc.data
    if "type" in data:
        kind = str(data["type"]).upper()
        if kind == "MBS":
            model_doc = simulation.read_mbs_simulation(st, doc)
        elif kind == "FSI":
            model_doc = simulation.read_fsi_simulation(st, doc)
        elif kind == "VEHICLE":
            return simulation.vehicle(st, doc)
        else:
            raise doc.error(("type",), f"a {data['type']} simulation file has no multibody model to "
                                       "convert; convert the MBS or FSI simulation file that uses it")
    elif "model" in data:
        model_doc = doc
    elif "contact_method" in data or "integrator" in data:
        raise doc.error((), "this is a Chrono solver file; convert the simulation file (type: MBS) "
                            "that names it, or the model file")
    else:
        raise doc.error((), "not a Chrono model file (no 'model' key) nor a simulation file (no 'type' key)")
    return _model(st, model_doc)


def _model(st: ConversionState, doc: Doc) -> Usd.Stage:
    data = doc.data
    model = data.get("model")
    if not isinstance(model, dict):
        raise doc.error(("model",), "wrong type: expected a mapping")
    if "vehicle_json" in model and "bodies" not in model:
        st.warn(f"{doc.where(('model',))}: Chrono::Vehicle model (vehicle_json): not converted; "
                "the stage holds the physics scene only")
        return scene.empty_stage(st, doc, model.get("name") or "Vehicle")
    if "bodies" not in model and "FEA" not in model and "FEA_beams" not in model:
        raise doc.error(("model", "bodies"), "missing required field (an MBS model lists its bodies; "
                                             f"this model has {', '.join(map(str, model)) or 'nothing'})")
    st.warn_unknown(doc, validate(doc, "model.schema.json"))
    if "bodies" not in model:
        st.warn(f"{doc.where(('model',))}: model has no rigid bodies (FEA only): the stage is empty "
                "but for the physics scene")
    version = doc.raw.get(("chrono-version",))
    if "chrono-version" not in data:
        st.warn(f"{doc.where(())}: no chrono-version (Chrono's parser requires it)")
    elif str(version).split(".")[0] != "10":
        st.warn(f"{doc.where(('chrono-version',))}: chrono-version {version}: usdphys follows the "
                "format of Chrono 10's parser")
    st.doc = doc
    st.deg = bool(model.get("angle_degrees", True))
    st.model = model
    stage = scene.new_stage(st, doc, model.get("name") or "YAML model")
    # bodies first: every other item refers to them by name
    bodies.convert_bodies(st)
    joints.convert_joints(st)
    joints.convert_constraints(st)
    springs.convert_tsdas(st)
    springs.convert_rsdas(st)
    motors.convert_motors(st)
    loads.convert_body_loads(st)
    return stage
