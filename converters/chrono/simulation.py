"""Chrono simulation files (MBS, FSI, VEHICLE) and their solver file: the settings that land on
the physics scene, and which model file to convert."""
from __future__ import annotations

from pathlib import Path

from pxr import Usd

from . import scene
from .state import ConversionState
from .validate import validate
from .yamlio import Doc, load


def _sub_file(doc: Doc, key: str) -> Path:
    rel = doc.data[key]
    p = (doc.path.parent / rel)
    if not p.is_file():
        raise doc.error((key,), f"file not found: {p}")
    return p


def _read_simulation_block(st: ConversionState, doc: Doc) -> None:
    sim = doc.data.get("simulation") or {}
    if "gravity" in sim:
        st.sim["gravity"] = tuple(float(x) for x in sim["gravity"])
    if "end_time" in sim:
        st.sim["end_time"] = float(sim["end_time"])
    if "time_step" in sim:  # kept with where it came from, to name it if the solver file disagrees
        st.sim["time_step"] = (float(sim["time_step"]), doc, ("simulation", "time_step"))


def read_mbs_simulation(st: ConversionState, doc: Doc) -> Doc:
    """Read an MBS simulation file and its solver file; returns the model document."""
    st.warn_unknown(doc, validate(doc, "simulation.schema.json", "mbs_simulation"))
    st.sim_doc = st.sim_doc or doc
    st.mbs_doc = doc
    _read_simulation_block(st, doc)
    st.extra_layer_data["chronoSimulationFile"] = doc.path.name
    if "solver" in doc.data:
        sdoc = load(_sub_file(doc, "solver"))
        if not isinstance(sdoc.data, dict):
            raise sdoc.error((), "expected a mapping (a Chrono solver file)")
        st.warn_unknown(sdoc, validate(sdoc, "simulation.schema.json", "solver"))
        if "contact_method" in sdoc.data:
            st.sim["contact_method"] = str(sdoc.data["contact_method"]).lower()
        step = (sdoc.data.get("integrator") or {}).get("time_step")
        if step is not None:
            mine = st.sim["time_step"]
            if mine is not None and abs(mine[0] - float(step)) > 1e-15:
                st.warn(f"{doc.where(mine[2])}: simulation.time_step {mine[0]} differs from the solver "
                        f"file's integrator.time_step {step} ({sdoc.path.name}); using {mine[0]}")
            elif mine is None:
                st.sim["time_step"] = (float(step), sdoc, ("integrator", "time_step"))
    else:
        st.warn(f"{doc.where(())}: no solver file named: time step and contact method left to the simulator")
    mdoc = load(_sub_file(doc, "model"))
    return mdoc


def read_fsi_simulation(st: ConversionState, doc: Doc) -> Doc:
    """Read an FSI simulation file: only its MBS part is converted; returns the model document."""
    st.warn_unknown(doc, validate(doc, "simulation.schema.json", "fsi_simulation"))
    st.sim_doc = doc
    st.extra_layer_data["chronoFsiFile"] = doc.path.name
    fluid = doc.data.get("fluid")
    st.warn(f"{doc.where(('fluid',))}: FSI file: only the multibody part ({doc.data['mbs']}) is converted; "
            f"the fluid ({fluid}) and the 'fsi' coupling block are not")
    gravity = (doc.data.get("simulation") or {}).get("gravity")
    mbs_doc = load(_sub_file(doc, "mbs"))
    if not isinstance(mbs_doc.data, dict) or str(mbs_doc.data.get("type", "")).upper() != "MBS":
        raise doc.error(("mbs",), f"{mbs_doc.path} is not an MBS simulation file (type: MBS)")
    model = read_mbs_simulation(st, mbs_doc)
    if gravity is not None:  # the FSI file's gravity governs the coupled run
        st.sim["gravity"] = tuple(float(x) for x in gravity)
    return model


def vehicle(st: ConversionState, doc: Doc) -> Usd.Stage:
    """A VEHICLE simulation file: the scene only (Chrono::Vehicle JSON is out of scope)."""
    st.warn_unknown(doc, validate(doc, "simulation.schema.json", "vehicle_simulation"))
    _read_simulation_block(st, doc)
    name = "Vehicle"
    mpath = doc.path.parent / str(doc.data["model"])
    if mpath.is_file():  # only to name the root prim after the vehicle model
        mdoc = load(mpath)
        model = mdoc.data.get("model") if isinstance(mdoc.data, dict) else None
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            name = model["name"]
    st.warn(f"{doc.where(('model',))}: VEHICLE simulation: Chrono::Vehicle JSON models are not converted; "
            "the stage holds the physics scene only")
    st.sim_doc = doc
    return scene.empty_stage(st, doc, name)
