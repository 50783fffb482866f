"""The stage skeleton: units, the root prim, layer metadata and the physics scene."""
from __future__ import annotations

import numpy as np
from pxr import Tf, Usd, UsdGeom, UsdPhysics

import usdphys
from usdphys.usd.tokens import Tokens

from .state import ConversionState, set_attr, v3f
from .yamlio import Doc

DEFAULT_GRAVITY = (0.0, 0.0, -9.8)  # Chrono simulation schema default


def new_stage(st: ConversionState, doc: Doc, model_name: str) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    root_name = Tf.MakeValidIdentifier(str(model_name)) or "Model"
    root = UsdGeom.Xform.Define(stage, f"/{root_name}").GetPrim()
    root.SetDisplayName(str(model_name))
    stage.SetDefaultPrim(root)
    st.root = root.GetPath()
    st.stage = stage
    layer_data = {"chronoModelFile": doc.path.name, "convertedBy": f"usdphys {usdphys.__version__}"}
    version = doc.raw.get(("chrono-version",))
    if version is not None:
        layer_data["chronoVersion"] = str(version)  # raw text: 10.10 stays 10.10
    layer_data.update(st.extra_layer_data)
    stage.GetRootLayer().customLayerData = layer_data
    _scene(st, stage)
    return stage


def empty_stage(st: ConversionState, doc: Doc, name: str) -> Usd.Stage:
    """A stage with the physics scene only (inputs whose model is out of scope)."""
    st.doc = doc
    return new_stage(st, doc, name)


def _scene(st: ConversionState, stage: Usd.Stage) -> None:
    scene = UsdPhysics.Scene.Define(stage, st.root.AppendChild("PhysicsScene"))
    g = np.array(st.sim["gravity"] if st.sim["gravity"] is not None else DEFAULT_GRAVITY, float)
    mag = float(np.linalg.norm(g))
    scene.CreateGravityDirectionAttr(v3f(g / mag if mag > 0 else (0.0, 0.0, -1.0)))
    scene.CreateGravityMagnitudeAttr(mag)
    if st.sim_doc is None:  # a bare model file: the simulator picks its own settings
        return
    prim = scene.GetPrim()
    prim.ApplyAPI(Tokens.MbdSimulationAPI)
    if st.sim["time_step"] is not None:
        set_attr(prim, Tokens.mbdTimeStep, st.sim["time_step"][0])
    end = st.sim["end_time"]
    if end is not None and end > 0:  # Chrono: negative end_time = run forever
        set_attr(prim, Tokens.mbdEndTime, end)
    set_attr(prim, Tokens.mbdContactMethod, st.sim["contact_method"] or Tokens.nsc)
