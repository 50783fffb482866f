"""Chrono YAML -> USD: the converter proper.

Reads a Chrono model file or simulation file (MBS; FSI and VEHICLE files for their multibody
part), validates it against model.schema.json / simulation.schema.json (ours), checks the
semantics the schema cannot express, and writes an in-memory Usd.Stage. It writes USD and
nothing else (never imports the solver). Layout and every field mapping: docs/converters.md.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.errors import UsdphysError, warn as _log_warning
from usdphys.usd.stage import check_output_path, export_stage_atomic

from . import frames as F
from .obj import read_obj
from .validate import validate
from .yamlio import Doc, format_path, load

RAD2DEG = 180.0 / math.pi
DEG2RAD = math.pi / 180.0
DEFAULT_GRAVITY = (0.0, 0.0, -9.8)  # Chrono simulation schema default
_LOCK = (1.0, -1.0)  # PhysicsLimitAPI low > high: the DOF is locked
_ALL_DOFS = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")

# Chrono joint type -> (USD prim type, free DOFs for a generic joint)
_JOINT_KIND = {
    "LOCK": ("PhysicsFixedJoint", None),
    "REVOLUTE": ("PhysicsRevoluteJoint", None),
    "PRISMATIC": ("PhysicsPrismaticJoint", None),
    "SPHERICAL": ("PhysicsSphericalJoint", None),
    "UNIVERSAL": ("PhysicsJoint", ("rotX", "rotY")),
    "POINT_LINE": ("PhysicsJoint", ("transX", "rotX", "rotY", "rotZ")),
    "POINT_PLANE": ("PhysicsJoint", ("transX", "transY", "rotX", "rotY", "rotZ")),
}
# motor guide / spindle -> (USD prim type, free DOFs for a generic joint, driven DOF token)
_GUIDE = {
    "PRISMATIC": ("PhysicsPrismaticJoint", None, "distance"),
    "SPHERICAL": ("PhysicsJoint", ("transZ", "rotX", "rotY", "rotZ"), "transZ"),
    "FREE": ("PhysicsJoint", _ALL_DOFS, "transZ"),
}
_SPINDLE = {
    "REVOLUTE": ("PhysicsRevoluteJoint", None, "angle"),
    "CYLINDRICAL": ("PhysicsJoint", ("transZ", "rotZ"), "rotZ"),
    "FREE": ("PhysicsJoint", _ALL_DOFS, "rotZ"),
}
_MODE = {"POSITION": "position", "SPEED": "velocity", "FORCE": "force"}


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------
def convert(path: str | os.PathLike, warnings: list | None = None) -> Usd.Stage:
    """Convert a Chrono YAML model or simulation file into an in-memory Usd.Stage.

    Bad input raises UsdphysError naming file:line and the field. Warnings go to the
    `usdphys` logger and, when a list is given, are appended to it as well.
    """
    conv = _Converter(warnings)
    return conv.run(Path(path))


def convert_file(input_path: str | os.PathLike, output_path: str | os.PathLike,
                 warnings: list | None = None) -> Usd.Stage:
    """Convert and write the stage atomically (nothing is written when conversion fails)."""
    out = check_output_path(output_path, input_path)
    stage = convert(input_path, warnings)
    export_stage_atomic(stage, out)
    return stage


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
@dataclass
class _Body:
    name: str
    path: Sdf.Path
    pos: np.ndarray
    rot: np.ndarray  # quaternion (w, x, y, z), body reference frame in the model frame
    com_pos: np.ndarray
    com_rot: np.ndarray
    fixed: bool
    index: int
    materials: dict = field(default_factory=dict)  # material name -> UsdShade.Material path

    @property
    def R(self) -> np.ndarray:
        return F.quat_to_mat(self.rot)

    def local_point(self, p_world) -> np.ndarray:
        return self.R.T @ (np.asarray(p_world, float) - self.pos)

    def local_rot(self, r_world: np.ndarray) -> np.ndarray:
        return F.quat_mul(F.quat_conj(self.rot), F.mat_to_quat(r_world))


class _Names:
    """Valid, unique prim names per parent scope (deterministic: order of appearance)."""

    def __init__(self):
        self.used: dict[str, set] = {}

    def make(self, parent: Sdf.Path | str, name: str) -> str:
        base = Tf.MakeValidIdentifier(str(name)) if name else "_"
        used = self.used.setdefault(str(parent), set())
        cand, k = base, 1
        while cand in used:
            cand = f"{base}_{k}"
            k += 1
        used.add(cand)
        return cand


def _v3d(v) -> Gf.Vec3d:
    return Gf.Vec3d(*(float(x) for x in v))


def _v3f(v) -> Gf.Vec3f:
    return Gf.Vec3f(*(float(x) for x in v))


def _qd(q) -> Gf.Quatd:
    return Gf.Quatd(float(q[0]), Gf.Vec3d(float(q[1]), float(q[2]), float(q[3])))


def _qf(q) -> Gf.Quatf:
    return Gf.Quatf(float(q[0]), Gf.Vec3f(float(q[1]), float(q[2]), float(q[3])))


def _set(prim: Usd.Prim, name: str, value) -> None:
    attr = prim.GetAttribute(name)
    if not attr.IsValid():  # a typo here is a bug in the converter, not bad input
        raise RuntimeError(f"{prim.GetPath()}: schema has no attribute {name}")
    attr.Set(value)


def _rel(prim: Usd.Prim, name: str, target: Sdf.Path | None) -> None:
    rel = prim.GetRelationship(name)
    if not rel.IsValid():
        rel = prim.CreateRelationship(name)
    rel.SetTargets([target] if target is not None else [])


# ---------------------------------------------------------------------------------------------
# The converter
# ---------------------------------------------------------------------------------------------
class _Converter:
    def __init__(self, warnings: list | None):
        self.warnings = warnings if warnings is not None else []
        self.names = _Names()

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        _log_warning(message)

    # -- entry: classify the input file -----------------------------------------------------
    def run(self, path: Path) -> Usd.Stage:
        if path.suffix.lower() not in (".yaml", ".yml"):
            raise UsdphysError(f"{path}: expected a Chrono YAML file (.yaml or .yml)")
        doc = load(path)
        if not isinstance(doc.data, dict):
            raise doc.error((), "expected a mapping at the top level (a Chrono model or simulation file)")
        self.sim = {"gravity": None, "time_step": None, "end_time": None, "contact_method": None}
        self.sim_doc: Doc | None = None  # any simulation file: the scene gets MbdSimulationAPI
        self.mbs_doc: Doc | None = None  # the MBS simulation file: base of a RELATIVE data_path
        self.extra_layer_data: dict = {}
        data = doc.data
        if "type" in data:
            kind = str(data["type"]).upper()
            if kind == "MBS":
                model_doc = self._read_mbs_simulation(doc)
            elif kind == "FSI":
                model_doc = self._read_fsi_simulation(doc)
            elif kind == "VEHICLE":
                return self._vehicle(doc)
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
        return self._model(model_doc)

    # -- simulation files ---------------------------------------------------------------------
    def _sub_file(self, doc: Doc, key: str) -> Path:
        rel = doc.data[key]
        p = (doc.path.parent / rel)
        if not p.is_file():
            raise doc.error((key,), f"file not found: {p}")
        return p

    def _read_simulation_block(self, doc: Doc) -> None:
        sim = doc.data.get("simulation") or {}
        if "gravity" in sim:
            self.sim["gravity"] = tuple(float(x) for x in sim["gravity"])
        if "end_time" in sim:
            self.sim["end_time"] = float(sim["end_time"])
        if "time_step" in sim:
            self.sim["time_step"] = (float(sim["time_step"]), doc, ("simulation", "time_step"))

    def _read_mbs_simulation(self, doc: Doc) -> Doc:
        self._warn_unknown(doc, validate(doc, "simulation.schema.json", "mbs_simulation"))
        self.sim_doc = self.sim_doc or doc
        self.mbs_doc = doc
        self._read_simulation_block(doc)
        self.extra_layer_data["chronoSimulationFile"] = doc.path.name
        if "solver" in doc.data:
            sdoc = load(self._sub_file(doc, "solver"))
            if not isinstance(sdoc.data, dict):
                raise sdoc.error((), "expected a mapping (a Chrono solver file)")
            self._warn_unknown(sdoc, validate(sdoc, "simulation.schema.json", "solver"))
            if "contact_method" in sdoc.data:
                self.sim["contact_method"] = str(sdoc.data["contact_method"]).lower()
            step = (sdoc.data.get("integrator") or {}).get("time_step")
            if step is not None:
                mine = self.sim["time_step"]
                if mine is not None and abs(mine[0] - float(step)) > 1e-15:
                    self.warn(f"{doc.where(mine[2])}: simulation.time_step {mine[0]} differs from the solver "
                              f"file's integrator.time_step {step} ({sdoc.path.name}); using {mine[0]}")
                elif mine is None:
                    self.sim["time_step"] = (float(step), sdoc, ("integrator", "time_step"))
        else:
            self.warn(f"{doc.where(())}: no solver file named: time step and contact method left to the simulator")
        mdoc = load(self._sub_file(doc, "model"))
        return mdoc

    def _read_fsi_simulation(self, doc: Doc) -> Doc:
        self._warn_unknown(doc, validate(doc, "simulation.schema.json", "fsi_simulation"))
        self.sim_doc = doc
        self.extra_layer_data["chronoFsiFile"] = doc.path.name
        fluid = doc.data.get("fluid")
        self.warn(f"{doc.where(('fluid',))}: FSI file: only the multibody part ({doc.data['mbs']}) is converted; "
                  f"the fluid ({fluid}) and the 'fsi' coupling block are not")
        gravity = (doc.data.get("simulation") or {}).get("gravity")
        mbs_doc = load(self._sub_file(doc, "mbs"))
        if not isinstance(mbs_doc.data, dict) or str(mbs_doc.data.get("type", "")).upper() != "MBS":
            raise doc.error(("mbs",), f"{mbs_doc.path} is not an MBS simulation file (type: MBS)")
        model = self._read_mbs_simulation(mbs_doc)
        if gravity is not None:  # the FSI file's gravity governs the coupled run
            self.sim["gravity"] = tuple(float(x) for x in gravity)
        return model

    def _vehicle(self, doc: Doc) -> Usd.Stage:
        self._warn_unknown(doc, validate(doc, "simulation.schema.json", "vehicle_simulation"))
        self._read_simulation_block(doc)
        name = "Vehicle"
        mpath = doc.path.parent / str(doc.data["model"])
        if mpath.is_file():
            mdoc = load(mpath)
            model = mdoc.data.get("model") if isinstance(mdoc.data, dict) else None
            if isinstance(model, dict) and isinstance(model.get("name"), str):
                name = model["name"]
        self.warn(f"{doc.where(('model',))}: VEHICLE simulation: Chrono::Vehicle JSON models are not converted; "
                  "the stage holds the physics scene only")
        self.sim_doc = doc
        return self._empty_stage(doc, name)

    # -- model files --------------------------------------------------------------------------
    def _warn_unknown(self, doc: Doc, unknown: list) -> None:
        for path, message in unknown:
            if path[:2] == ("model", "FEA") or path[:2] == ("model", "FEA_beams"):
                self.warn(f"{doc.where(path)}: {format_path(path)}: FEA content is not converted "
                          "(usdphys converts rigid multibody models only)")
            elif path[:2] == ("model", "load_controllers"):
                names = [c.get("name", "?") for c in doc.data["model"]["load_controllers"] or []
                         if isinstance(c, dict)]
                self.warn(f"{doc.where(path)}: {format_path(path)}: external load controllers "
                          f"({', '.join(map(str, names))}) are implemented by the host program; not converted")
            elif path == ("precice_adapter_config",):
                self.warn(f"{doc.where(path)}: precice_adapter_config: preCICE co-simulation settings are not "
                          "converted")
            elif path[:2] == ("model", "bodies") and path[-1] in ("lin_vel", "ang_vel") and len(path) == 4:
                pass  # said more precisely by _bodies()
            else:
                self.warn(message)

    def _model(self, doc: Doc) -> Usd.Stage:
        data = doc.data
        model = data.get("model")
        if not isinstance(model, dict):
            raise doc.error(("model",), "wrong type: expected a mapping")
        if "vehicle_json" in model and "bodies" not in model:
            self.warn(f"{doc.where(('model',))}: Chrono::Vehicle model (vehicle_json): not converted; "
                      "the stage holds the physics scene only")
            return self._empty_stage(doc, model.get("name") or "Vehicle")
        if "bodies" not in model and "FEA" not in model and "FEA_beams" not in model:
            raise doc.error(("model", "bodies"), "missing required field (an MBS model lists its bodies; "
                                                 f"this model has {', '.join(map(str, model)) or 'nothing'})")
        self._warn_unknown(doc, validate(doc, "model.schema.json"))
        if "bodies" not in model:
            self.warn(f"{doc.where(('model',))}: model has no rigid bodies (FEA only): the stage is empty "
                      "but for the physics scene")
        version = doc.raw.get(("chrono-version",))
        if "chrono-version" not in data:
            self.warn(f"{doc.where(())}: no chrono-version (Chrono's parser requires it)")
        elif str(version).split(".")[0] != "10":
            self.warn(f"{doc.where(('chrono-version',))}: chrono-version {version}: usdphys follows the "
                      "format of Chrono 10's parser")
        self.doc = doc
        self.deg = bool(model.get("angle_degrees", True))
        self.model = model
        stage = self._new_stage(doc, model.get("name") or "YAML model")
        self.stage = stage
        self.bodies: dict[str, _Body] = {}
        self._bodies()
        self._joints()
        self._constraints()
        self._tsdas()
        self._rsdas()
        self._motors()
        self._body_loads()
        return stage

    # -- stage skeleton -------------------------------------------------------------------------
    def _new_stage(self, doc: Doc, model_name: str) -> Usd.Stage:
        stage = Usd.Stage.CreateInMemory()
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
        root_name = Tf.MakeValidIdentifier(str(model_name)) or "Model"
        root = UsdGeom.Xform.Define(stage, f"/{root_name}").GetPrim()
        root.SetDisplayName(str(model_name))
        stage.SetDefaultPrim(root)
        self.root = root.GetPath()
        layer_data = {"chronoModelFile": doc.path.name, "convertedBy": f"usdphys {usdphys.__version__}"}
        version = doc.raw.get(("chrono-version",))
        if version is not None:
            layer_data["chronoVersion"] = str(version)  # raw text: 10.10 stays 10.10
        layer_data.update(self.extra_layer_data)
        stage.GetRootLayer().customLayerData = layer_data
        self._scene(stage)
        return stage

    def _empty_stage(self, doc: Doc, name: str) -> Usd.Stage:
        self.doc = doc
        return self._new_stage(doc, name)

    def _scene(self, stage: Usd.Stage) -> None:
        scene = UsdPhysics.Scene.Define(stage, self.root.AppendChild("PhysicsScene"))
        g = np.array(self.sim["gravity"] if self.sim["gravity"] is not None else DEFAULT_GRAVITY, float)
        mag = float(np.linalg.norm(g))
        scene.CreateGravityDirectionAttr(_v3f(g / mag if mag > 0 else (0.0, 0.0, -1.0)))
        scene.CreateGravityMagnitudeAttr(mag)
        if self.sim_doc is None:
            return
        prim = scene.GetPrim()
        prim.ApplyAPI("MbdSimulationAPI")
        if self.sim["time_step"] is not None:
            _set(prim, "mbd:timeStep", self.sim["time_step"][0])
        end = self.sim["end_time"]
        if end is not None and end > 0:  # Chrono: negative end_time = run forever
            _set(prim, "mbd:endTime", end)
        _set(prim, "mbd:contactMethod", self.sim["contact_method"] or "nsc")

    def _scope(self, *names: str) -> Sdf.Path:
        path = self.root
        for n in names:
            path = path.AppendChild(n)
            if not self.stage.GetPrimAtPath(path):
                UsdGeom.Scope.Define(self.stage, path)
        return path

    def _item_prim(self, scope: Sdf.Path, name: str, type_name: str, ypath: tuple) -> Usd.Prim:
        prim = self.stage.DefinePrim(scope.AppendChild(self.names.make(scope, name)), type_name)
        prim.SetDisplayName(str(name))
        prim.SetCustomDataByKey("chronoSource", f"{self.doc.path.name}:{self.doc.line(ypath)}")
        return prim

    # -- small readers with semantics -----------------------------------------------------------
    def _rotation(self, value, ypath: tuple) -> np.ndarray:
        if len(value) == 3:
            return F.euler_zyx(value, self.deg)
        q = np.asarray(value, float)
        n = float(np.linalg.norm(q))
        if n < 1e-12:
            raise self.doc.error(ypath, "quaternion has zero length")
        if abs(n - 1.0) > 1e-3:
            self.warn(self.doc.warning_text(ypath, f"quaternion length {n:.6g} is not 1 (Chrono does not "
                                                    "normalise it); normalised"))
        return q / n

    def _axis(self, item: dict, key: str, ypath: tuple) -> np.ndarray:
        if key not in item:
            raise self.doc.error(ypath + (key,), "missing required field")
        a = np.asarray(item[key], float)
        if np.linalg.norm(a) < 1e-12:
            raise self.doc.error(ypath + (key,), "axis has zero length")
        return a / np.linalg.norm(a)

    def _body_ref(self, item: dict, key: str, ypath: tuple) -> _Body:
        name = item[key]
        if name not in self.bodies:
            raise self.doc.error(ypath + (key,), f"no body named {name!r} in model.bodies")
        return self.bodies[name]

    def _two_bodies(self, item: dict, ypath: tuple) -> tuple[_Body, _Body]:
        b1 = self._body_ref(item, "body1", ypath)
        b2 = self._body_ref(item, "body2", ypath)
        if b1 is b2:
            raise self.doc.error(ypath + ("body2",), f"body1 and body2 are the same body {b1.name!r}")
        return b1, b2

    def _items(self, key: str):
        seen: dict[str, int] = {}
        for i, item in enumerate(self.model.get(key) or []):
            ypath = ("model", key, i)
            name = item["name"]
            if name in seen:
                raise self.doc.error(ypath + ("name",), f"duplicate name {name!r} in model.{key} "
                                                         f"(first at line {self.doc.line(('model', key, seen[name]))})")
            seen[name] = i
            yield i, item, ypath

    def _data_file(self, filename: str, ypath: tuple) -> Path:
        dp = self.model.get("data_path")
        if dp and str(dp["type"]).upper() == "RELATIVE":
            base = (self.mbs_doc.path.parent if self.mbs_doc is not None else self.doc.path.parent)
            p = base / dp.get("root", ".") / filename
        else:
            p = Path(filename)  # ABSOLUTE: as written (a relative one is relative to the working folder)
        if not p.is_file():
            mode = "RELATIVE" if dp and str(dp["type"]).upper() == "RELATIVE" else "ABSOLUTE"
            raise self.doc.error(ypath, f"file not found: {p} (data_path {mode})")
        return p

    # -- bodies -----------------------------------------------------------------------------------
    def _bodies(self) -> None:
        scope = self._scope("Bodies")
        for i, b, yp in self._items("bodies"):
            fixed = bool(b.get("fixed", False))
            pos = np.asarray(b["location"], float)
            rot = self._rotation(b["orientation"], yp + ("orientation",)) if "orientation" in b else np.array([1.0, 0, 0, 0])
            com = b.get("com") or {}
            com_pos = np.asarray(com.get("location", (0, 0, 0)), float)
            com_rot = (self._rotation(com["orientation"], yp + ("com", "orientation"))
                       if "orientation" in com else np.array([1.0, 0, 0, 0]))
            prim = self._item_prim(scope, b["name"], "Xform", yp)
            body = _Body(b["name"], prim.GetPath(), pos, rot, com_pos, com_rot, fixed, i)
            self.bodies[b["name"]] = body
            xf = UsdGeom.Xformable(prim)
            xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(_v3d(pos))
            xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(_qd(rot))
            rb = UsdPhysics.RigidBodyAPI.Apply(prim)
            if fixed:
                rb.CreateKinematicEnabledAttr(True)
                for key in ("initial_linear_velocity", "initial_angular_velocity"):
                    if key in b:
                        self.warn(self.doc.warning_text(yp + (key,), "ignored on a fixed body"))
            else:
                self._mass(prim, b, yp, com_pos, com_rot)
                if "initial_linear_velocity" in b:  # COM velocity, model frame
                    rb.CreateVelocityAttr(_v3f(b["initial_linear_velocity"]))
                if "initial_angular_velocity" in b:  # rad/s in COM-frame axes -> deg/s, world
                    w = body.R @ F.quat_to_mat(com_rot) @ np.asarray(b["initial_angular_velocity"], float)
                    rb.CreateAngularVelocityAttr(_v3f(w * RAD2DEG))
            for key in ("lin_vel", "ang_vel"):
                if key in b:  # already warned as unknown; say what to use instead
                    self.warn(self.doc.warning_text(
                        yp + (key,), f"Chrono's parser ignores '{key}' (use initial_"
                                     f"{'linear' if key == 'lin_vel' else 'angular'}_velocity); not converted"))
            self._materials(body, b, yp)
            self._collision(body, b, yp)
            self._visual(body, b, yp)

    def _mass(self, prim, b, yp, com_pos, com_rot) -> None:
        if "mass" not in b:
            raise self.doc.error(yp + ("mass",), "missing required field (the body is not fixed)")
        if "inertia" not in b:
            raise self.doc.error(yp + ("inertia",), "missing required field (the body is not fixed)")
        mass = float(b["mass"])
        if not mass > 0:
            raise self.doc.error(yp + ("mass",), f"must be > 0, got {b['mass']!r}")
        moments = [float(x) for x in b["inertia"]["moments"]]
        if min(moments) <= 0:
            raise self.doc.error(yp + ("inertia", "moments"), f"moments of inertia must be > 0, got {moments}")
        products = [float(x) for x in b["inertia"].get("products", (0, 0, 0))]
        tensor = F.inertia_tensor(moments, products)
        diag, r_p = F.principal_axes(tensor)
        if min(diag) <= 0:
            raise self.doc.error(yp + ("inertia", "products"),
                                 f"inertia tensor is not positive definite (principal moments {diag.tolist()})")
        a, bb, c = sorted(diag)
        if a + bb < c * (1 - 1e-6):
            self.warn(self.doc.warning_text(yp + ("inertia",), f"principal moments {diag.tolist()} violate the "
                                                               "triangle inequality (not a physical body)"))
        mapi = UsdPhysics.MassAPI.Apply(prim)
        mapi.CreateMassAttr(mass)
        mapi.CreateCenterOfMassAttr(_v3f(com_pos))
        mapi.CreateDiagonalInertiaAttr(_v3f(diag))
        axes = F.quat_mul(com_rot, F.mat_to_quat(r_p))  # principal frame in the body prim frame
        mapi.CreatePrincipalAxesAttr(_qf(axes))

    def _materials(self, body: _Body, b: dict, yp: tuple) -> None:
        contact = b.get("contact")
        if not contact:
            return
        seen = {}
        for j, m in enumerate(contact["materials"]):
            myp = yp + ("contact", "materials", j)
            if m["name"] in seen:
                raise self.doc.error(myp + ("name",), f"duplicate material name {m['name']!r} in this body")
            seen[m["name"]] = j
            scope = self._scope("Materials", Tf.MakeValidIdentifier(body.path.name))
            mat = UsdShade.Material.Define(self.stage, scope.AppendChild(self.names.make(scope, m["name"])))
            prim = mat.GetPrim()
            prim.SetDisplayName(str(m["name"]))
            pm = UsdPhysics.MaterialAPI.Apply(prim)
            mu = float(m.get("coefficient_of_friction", 0.8))
            pm.CreateStaticFrictionAttr(mu)
            pm.CreateDynamicFrictionAttr(mu)
            pm.CreateRestitutionAttr(float(m.get("coefficient_of_restitution", 0.01)))
            prim.ApplyAPI("MbdContactMaterialAPI")
            props = None
            for key in ("properties", "physical_properties"):
                if key in m:
                    props = m[key]
            if props is not None:
                young = props.get("Young_modulus", props.get("Youngs_modulus"))
                if young is None or "Poisson_ratio" not in props:
                    key = "properties" if "properties" in m else "physical_properties"
                    raise self.doc.error(myp + (key,), "needs Young_modulus (or Youngs_modulus) and Poisson_ratio")
                _set(prim, "mbd:youngModulus", float(young))
                _set(prim, "mbd:poissonRatio", float(props["Poisson_ratio"]))
            else:
                _set(prim, "mbd:youngModulus", 2e7)
                _set(prim, "mbd:poissonRatio", 0.3)
            coefs = m.get("Coefficients", m.get("coefficients"))
            if coefs is not None:
                for src, dst in (("normal_stiffness", "normalStiffness"), ("normal_damping", "normalDamping"),
                                 ("tangential_stiffness", "tangentialStiffness"),
                                 ("tangential_damping", "tangentialDamping")):
                    _set(prim, f"mbd:{dst}", float(coefs[src]))
            body.materials[m["name"]] = mat

    # -- geometry -------------------------------------------------------------------------------
    def _shape(self, parent: Sdf.Path, s: dict, yp: tuple, collision: bool, index: int) -> list[Usd.Prim]:
        kind = str(s["type"]).upper()
        name = self.names.make(parent, f"{kind.lower()}_{index}")
        path = parent.AppendChild(name)

        def need(key):
            if key not in s:
                raise self.doc.error(yp + (key,), f"missing required field (for {kind})")
            return s[key]

        loc = np.asarray(s.get("location", (0, 0, 0)), float)
        if kind in ("SPHERE", "BOX", "CYLINDER"):
            need("location")
        if kind == "SPHERE":
            g = UsdGeom.Sphere.Define(self.stage, path)
            r = float(need("radius"))
            g.CreateRadiusAttr(r)
            g.CreateExtentAttr([(-r, -r, -r), (r, r, r)])
            UsdGeom.Xformable(g).AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(_v3d(loc))
            return [g.GetPrim()]  # a sphere's orientation is irrelevant (Chrono ignores it too)
        if kind == "BOX":
            dims = np.asarray(need("dimensions"), float)
            rot = self._rotation(need("orientation"), yp + ("orientation",))
            g = UsdGeom.Cube.Define(self.stage, path)
            g.CreateSizeAttr(1.0)
            g.CreateExtentAttr([(-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)])
            xf = UsdGeom.Xformable(g)
            xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(_v3d(loc))
            xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(_qd(rot))
            xf.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(_v3d(dims))  # full lengths
            return [g.GetPrim()]
        if kind == "CYLINDER":
            r = float(need("radius"))
            h = float(need("length"))
            axis = self._axis(s, "axis", yp)
            g = UsdGeom.Cylinder.Define(self.stage, path)
            g.CreateRadiusAttr(r)
            g.CreateHeightAttr(h)
            g.CreateAxisAttr(UsdGeom.Tokens.z)
            g.CreateExtentAttr([(-r, -r, -h / 2), (r, r, h / 2)])
            xf = UsdGeom.Xformable(g)
            xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(_v3d(loc))
            xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(_qd(F.rotation_z_to(axis)))
            return [g.GetPrim()]
        # MESH / HULL from an OBJ file
        fname = str(need("filename"))
        fpath = self._data_file(fname, yp + ("filename",))
        if fpath.suffix.lower() != ".obj":
            raise self.doc.error(yp + ("filename",), f"only Wavefront OBJ meshes are supported, got {fpath.name}")
        mesh = read_obj(fpath)
        if kind == "HULL":  # one convex hull per OBJ group/object; Chrono ignores any pose here
            if len(mesh.groups) == 1:
                return [self._mesh_prim(path, mesh.points, mesh.groups[0].triangles)]
            UsdGeom.Xform.Define(self.stage, path)
            return [self._mesh_prim(path.AppendChild(self.names.make(path, g.name)), mesh.points, g.triangles)
                    for g in mesh.groups]
        prim = self._mesh_prim(path, mesh.points, mesh.triangles)
        rot = (self._rotation(s["orientation"], yp + ("orientation",)) if "orientation" in s
               else np.array([1.0, 0, 0, 0]))
        xf = UsdGeom.Xformable(prim)
        xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(_v3d(loc))
        xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(_qd(rot))
        scale = float(s.get("scale", 1.0))
        xf.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(scale, scale, scale))
        if collision and "contact_radius" in s:
            prim.ApplyAPI("MbdCollisionAPI")
            _set(prim, "mbd:contactRadius", float(s["contact_radius"]))
        return [prim]

    def _mesh_prim(self, path: Sdf.Path, points: list, triangles: list) -> Usd.Prim:
        used = sorted({i for t in triangles for i in t})
        remap = {old: new for new, old in enumerate(used)}
        pts = [points[i] for i in used]
        m = UsdGeom.Mesh.Define(self.stage, path)
        m.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in pts]))
        m.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(triangles)))
        m.CreateFaceVertexIndicesAttr(Vt.IntArray([remap[i] for t in triangles for i in t]))
        m.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        arr = np.asarray(pts, float)
        m.CreateExtentAttr([_v3f(arr.min(axis=0)), _v3f(arr.max(axis=0))])
        return m.GetPrim()

    def _collision(self, body: _Body, b: dict, yp: tuple) -> None:
        contact = b.get("contact")
        if not contact or not contact["shapes"]:
            return
        parent = body.path.AppendChild("Collision")
        UsdGeom.Imageable(UsdGeom.Scope.Define(self.stage, parent)).CreatePurposeAttr(UsdGeom.Tokens.guide)
        for j, s in enumerate(contact["shapes"]):
            syp = yp + ("contact", "shapes", j)
            mat = body.materials.get(s["material"])
            if mat is None:
                raise self.doc.error(syp + ("material",), f"no contact material named {s['material']!r} in "
                                                          f"body {body.name!r} (materials are per body)")
            kind = str(s["type"]).upper()
            for prim in self._shape(parent, s, syp, True, j):
                UsdPhysics.CollisionAPI.Apply(prim)
                if kind in ("MESH", "HULL"):
                    UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr(
                        UsdPhysics.Tokens.none if kind == "MESH" else UsdPhysics.Tokens.convexHull)
                UsdShade.MaterialBindingAPI.Apply(prim).Bind(
                    mat, UsdShade.Tokens.weakerThanDescendants, "physics")

    def _visual(self, body: _Body, b: dict, yp: tuple) -> None:
        vis = b.get("visualization")
        if not vis:
            return
        parent = body.path.AppendChild("Visual")
        UsdGeom.Scope.Define(self.stage, parent)
        if "model_file" in vis:
            fpath = self._data_file(str(vis["model_file"]), yp + ("visualization", "model_file"))
            suffix = fpath.suffix.lower()
            mpath = parent.AppendChild(self.names.make(parent, "model_file"))
            if suffix == ".obj":
                mesh = read_obj(fpath)
                self._mesh_prim(mpath, mesh.points, mesh.triangles)
            elif suffix in (".usd", ".usda", ".usdc", ".usdz"):
                # typeless def: the referenced prim's type composes through (absolute asset path)
                self.stage.DefinePrim(mpath).GetReferences().AddReference(str(fpath.resolve()))
            else:
                self.warn(self.doc.warning_text(yp + ("visualization", "model_file"),
                                                f"{fpath.suffix} model files are not converted (OBJ or USD only)"))
        for j, s in enumerate(vis.get("shapes") or []):
            syp = yp + ("visualization", "shapes", j)
            for prim in self._shape(parent, s, syp, False, j):
                color = s.get("color")
                if color is not None and min(color) >= 0:  # Chrono: [-1, -1, -1] = no colour
                    UsdGeom.Gprim(prim).CreateDisplayColorAttr([_v3f(color)])

    # -- joints -----------------------------------------------------------------------------------
    def _author_joint(self, scope: Sdf.Path, name: str, type_name: str, free: tuple | None,
                      b0: _Body, b1: _Body, pos, rmat, ypath: tuple) -> Usd.Prim:
        prim = self._item_prim(scope, name, type_name, ypath)
        joint = UsdPhysics.Joint(prim)
        joint.CreateBody0Rel().SetTargets([b0.path])
        joint.CreateBody1Rel().SetTargets([b1.path])
        joint.CreateLocalPos0Attr(_v3f(b0.local_point(pos)))
        joint.CreateLocalRot0Attr(_qf(b0.local_rot(rmat)))
        joint.CreateLocalPos1Attr(_v3f(b1.local_point(pos)))
        joint.CreateLocalRot1Attr(_qf(b1.local_rot(rmat)))
        if type_name in ("PhysicsRevoluteJoint", "PhysicsPrismaticJoint"):
            prim.GetAttribute("physics:axis").Set(UsdPhysics.Tokens.z)
        if type_name == "PhysicsJoint":
            for dof in _ALL_DOFS:
                if dof not in (free or ()):
                    lim = UsdPhysics.LimitAPI.Apply(prim, dof)
                    lim.CreateLowAttr(_LOCK[0])
                    lim.CreateHighAttr(_LOCK[1])
        return prim

    def _joints(self) -> None:
        scope = self._scope("Joints")
        for i, j, yp in self._items("joints"):
            kind = str(j["type"]).upper()
            b1, b2 = self._two_bodies(j, yp)
            pos = np.asarray(j["location"], float)
            if kind in ("REVOLUTE", "PRISMATIC"):
                rmat = F.frame_z(self._axis(j, "axis", yp))
            elif kind == "UNIVERSAL":
                a1 = self._axis(j, "axis1", yp)
                a2 = self._axis(j, "axis2", yp)
                if np.linalg.norm(np.cross(a1, a2)) < 1e-9:
                    raise self.doc.error(yp + ("axis2",), "axis1 and axis2 are parallel")
                rmat = F.frame_universal(a1, a2)
            else:
                rmat = np.eye(3)
                if kind in ("POINT_LINE", "POINT_PLANE") and "axis" in j:
                    what = "the line is the model X axis" if kind == "POINT_LINE" else "the plane normal is model Z"
                    self.warn(self.doc.warning_text(yp + ("axis",), f"ignored by Chrono's parser for {kind} "
                                                                     f"({what}); followed"))
            type_name, free = _JOINT_KIND[kind]
            prim = self._author_joint(scope, j["name"], type_name, free, b1, b2, pos, rmat, yp)
            if "bushing_data" in j:
                if kind in ("PRISMATIC", "POINT_LINE", "POINT_PLANE"):
                    raise self.doc.error(yp + ("bushing_data",), f"a bushing is not allowed on a {kind} joint")
                bd = j["bushing_data"]
                dof = bd.get("DOF") or {}
                prim.ApplyAPI("MbdBushingAPI")
                _set(prim, "mbd:bushing:linearStiffness", float(bd["stiffness_linear"]))
                _set(prim, "mbd:bushing:linearDamping", float(bd["damping_linear"]))
                _set(prim, "mbd:bushing:angularStiffness", float(bd["stiffness_rotational"]) * DEG2RAD)
                _set(prim, "mbd:bushing:angularDamping", float(bd["damping_rotational"]) * DEG2RAD)
                _set(prim, "mbd:bushing:freeLinearStiffness", float(dof.get("stiffness_linear", 0.0)))
                _set(prim, "mbd:bushing:freeLinearDamping", float(dof.get("damping_linear", 0.0)))
                _set(prim, "mbd:bushing:freeAngularStiffness", float(dof.get("stiffness_rotational", 0.0)) * DEG2RAD)
                _set(prim, "mbd:bushing:freeAngularDamping", float(dof.get("damping_rotational", 0.0)) * DEG2RAD)

    def _constraints(self) -> None:
        scope = self._scope("Joints")
        for i, c, yp in self._items("constraints"):
            kind = str(c["type"]).upper()
            b1, b2 = self._two_bodies(c, yp)
            p1 = np.asarray(c["point1"], float)
            p2 = np.asarray(c["point2"], float)
            d = p2 - p1
            if kind == "DISTANCE":
                prim = self._item_prim(scope, c["name"], "PhysicsDistanceJoint", yp)
                jt = UsdPhysics.DistanceJoint(prim)
                jt.CreateBody0Rel().SetTargets([b1.path])
                jt.CreateBody1Rel().SetTargets([b2.path])
                jt.CreateLocalPos0Attr(_v3f(b1.local_point(p1)))
                jt.CreateLocalRot0Attr(_qf(b1.local_rot(np.eye(3))))
                jt.CreateLocalPos1Attr(_v3f(b2.local_point(p2)))
                jt.CreateLocalRot1Attr(_qf(b2.local_rot(np.eye(3))))
                dist = float(np.linalg.norm(d))
                jt.CreateMinDistanceAttr(dist)
                jt.CreateMaxDistanceAttr(dist)
                for key in ("axis", "direction"):
                    if key in c:
                        self.warn(self.doc.warning_text(yp + (key,), "not used by a DISTANCE constraint"))
                continue
            z = self._axis(c, "axis", yp)
            if kind == "REVOLUTE-SPHERICAL":
                rmat = F.frame_z(z)
                type_name, dist = "MbdRevoluteSphericalJoint", float(np.linalg.norm(d))
                off = float(np.dot(d, z))
                if "direction" in c:
                    self.warn(self.doc.warning_text(yp + ("direction",), "not used by REVOLUTE-SPHERICAL"))
            else:
                dirn = self._axis(c, "direction", yp)
                y = dirn - np.dot(dirn, z) * z
                if np.linalg.norm(y) < 1e-9:
                    raise self.doc.error(yp + ("direction",), "direction is parallel to axis")
                y /= np.linalg.norm(y)
                x = np.cross(y, z)
                rmat = np.column_stack([x, y, z])
                type_name, dist = "MbdRevoluteTranslationalJoint", float(np.dot(d, x))
                off = float(np.dot(d, z))
            if abs(off) > 1e-9 * max(1.0, float(np.linalg.norm(d))):
                self.warn(self.doc.warning_text(yp, f"point2 - point1 has a component {off:.6g} along the axis: "
                                                     "the constraint is violated at the start"))
            prim = self._item_prim(scope, c["name"], type_name, yp)
            jt = UsdPhysics.Joint(prim)
            jt.CreateBody0Rel().SetTargets([b1.path])
            jt.CreateBody1Rel().SetTargets([b2.path])
            jt.CreateLocalPos0Attr(_v3f(b1.local_point(p1)))
            jt.CreateLocalRot0Attr(_qf(b1.local_rot(rmat)))
            jt.CreateLocalPos1Attr(_v3f(b2.local_point(p2)))
            jt.CreateLocalRot1Attr(_qf(b2.local_rot(rmat)))
            _set(prim, "mbd:distance", dist)

    # -- force elements ---------------------------------------------------------------------------
    def _law(self, t: dict, yp: tuple, rotational: bool) -> str:
        """Which Chrono functor the keys select (parser precedence); warn about ignored keys."""
        has = lambda k: k in t  # noqa: E731
        if not rotational and has("map_data"):
            law = "map"
        elif has("spring_curve_data"):
            law = "curves" if has("damping_curve_data") else "spring_curve"
        elif has("damping_curve_data"):
            law = "damper_curve"
        elif has("spring_coefficient"):
            law = "linear" if has("damping_coefficient") else "spring"
        elif has("damping_coefficient"):
            law = "damper"
        else:
            raise self.doc.error(yp, "needs spring_coefficient, damping_coefficient, spring_curve_data, "
                                     "damping_curve_data" + ("" if rotational else " or map_data"))
        used = {"map": {"map_data", "deformation", "preload"},
                "curves": {"spring_curve_data", "damping_curve_data", "preload"},
                "spring_curve": {"spring_curve_data", "preload"},
                "damper_curve": {"damping_curve_data"},
                "linear": {"spring_coefficient", "damping_coefficient", "preload"},
                "spring": {"spring_coefficient", "preload"},
                "damper": {"damping_coefficient"}}[law]
        for key in ("spring_coefficient", "damping_coefficient", "spring_curve_data", "damping_curve_data",
                    "map_data", "deformation", "preload", "degressivity_compression", "degressivity_expansion"):
            if has(key) and key not in used:
                self.warn(self.doc.warning_text(yp + (key,), f"ignored: Chrono's parser selects the '{law}' law "
                                                             "from the keys given and does not use this one"))
        if law in ("map", "curves", "spring_curve", "linear", "spring"):
            if not rotational and law != "map" and "free_length" not in t:
                raise self.doc.error(yp + ("free_length",), "missing required field (for a spring)")
            if rotational and "free_angle" not in t:
                raise self.doc.error(yp + ("free_angle",), "missing required field (for a spring)")
        return law

    def _curve(self, pairs, yp: tuple, xscale: float = 1.0) -> Vt.Vec2dArray:
        xs = [float(p[0]) for p in pairs]
        if any(b <= a for a, b in zip(xs, xs[1:])):
            raise self.doc.error(yp, "abscissae must be strictly ascending")
        return Vt.Vec2dArray([Gf.Vec2d(float(p[0]) * xscale, float(p[1])) for p in pairs])

    def _tsdas(self) -> None:
        scope = self._scope("ForceElements")
        for i, t, yp in self._items("tsdas"):
            b1, b2 = self._two_bodies(t, yp)
            law = self._law(t, yp, rotational=False)
            prim = self._item_prim(scope, t["name"], "MbdSpringDamper", yp)
            _rel(prim, "mbd:body0", b1.path)
            _rel(prim, "mbd:body1", b2.path)
            _set(prim, "mbd:localPos0", _v3d(b1.local_point(t["point1"])))
            _set(prim, "mbd:localPos1", _v3d(b2.local_point(t["point2"])))
            if law != "map" and "free_length" in t and law not in ("damper", "damper_curve"):
                _set(prim, "mbd:restLength", float(t["free_length"]))
            if law in ("linear", "spring"):
                _set(prim, "mbd:stiffness", float(t["spring_coefficient"]))
            if law in ("linear", "damper"):
                _set(prim, "mbd:damping", float(t["damping_coefficient"]))
            if law == "damper" and "degressivity_compression" in t:
                self.warn(self.doc.warning_text(yp, "degressive damper converted as a linear damper"))
            if law in ("curves", "spring_curve"):
                _set(prim, "mbd:springForceCurve", self._curve(t["spring_curve_data"], yp + ("spring_curve_data",)))
            if law in ("curves", "damper_curve"):
                _set(prim, "mbd:dampingForceCurve", self._curve(t["damping_curve_data"], yp + ("damping_curve_data",)))
            if law == "map":
                if "deformation" not in t:
                    raise self.doc.error(yp + ("deformation",), "missing required field (with map_data)")
                defs = [float(x) for x in t["deformation"]]
                if any(b <= a for a, b in zip(defs, defs[1:])):
                    raise self.doc.error(yp + ("deformation",), "must be strictly ascending")
                rows = t["map_data"]
                for r, row in enumerate(rows):
                    if len(row) != len(defs) + 1:
                        raise self.doc.error(yp + ("map_data", r), f"row has {len(row)} values; expected "
                                                                    f"1 velocity + {len(defs)} forces")
                vels = [float(r[0]) for r in rows]
                if any(b <= a for a, b in zip(vels, vels[1:])):
                    raise self.doc.error(yp + ("map_data",), "row velocities must be strictly ascending")
                _set(prim, "mbd:forceMapDeformation", Vt.DoubleArray(defs))
                _set(prim, "mbd:forceMapVelocity", Vt.DoubleArray(vels))
                _set(prim, "mbd:forceMapValues", Vt.DoubleArray([float(x) for r in rows for x in r[1:]]))
                if "free_length" in t:
                    self.warn(self.doc.warning_text(yp + ("free_length",), "not used by the map law (L0 = 0)"))
            if "preload" in t and law not in ("damper", "damper_curve"):
                _set(prim, "mbd:preload", float(t["preload"]))
            has_min, has_max = "minimum_length" in t, "maximum_length" in t
            if has_min != has_max:
                key = "minimum_length" if has_min else "maximum_length"
                self.warn(self.doc.warning_text(yp + (key,), "ignored: Chrono enables end stops only when both "
                                                             "minimum_length and maximum_length are given"))
            elif has_min and law in ("damper", "damper_curve"):
                self.warn(self.doc.warning_text(yp + ("minimum_length",), "ignored: a damper-only element has no "
                                                                          "end stops in Chrono"))
            elif has_min:
                if float(t["minimum_length"]) > float(t["maximum_length"]):
                    raise self.doc.error(yp + ("minimum_length",), "minimum_length > maximum_length")
                _set(prim, "mbd:minLength", float(t["minimum_length"]))
                _set(prim, "mbd:maxLength", float(t["maximum_length"]))
            vis = t.get("visualization")
            if vis:
                kind = str(vis["type"]).lower()
                _set(prim, "mbd:displayShape", kind)
                if kind == "spring":
                    _set(prim, "mbd:displayRadius", float(vis.get("radius", 0.05)))
                    _set(prim, "mbd:displayResolution", int(vis.get("resolution", 65)))
                    turns = float(vis.get("turns", 5))
                    if turns != round(turns):
                        self.warn(self.doc.warning_text(yp + ("visualization", "turns"), "rounded to an integer"))
                    _set(prim, "mbd:displayTurns", int(round(turns)))
                if "color" in vis:
                    _set(prim, "mbd:displayColor", _v3f(vis["color"]))

    def _rsdas(self) -> None:
        scope = self._scope("ForceElements")
        for i, t, yp in self._items("rsdas"):
            b1, b2 = self._two_bodies(t, yp)
            law = self._law(t, yp, rotational=True)
            axis = self._axis(t, "axis", yp)
            pos = np.asarray(t.get("location", (0, 0, 0)), float)
            rmat = F.frame_x_then_y90(axis)
            prim = self._item_prim(scope, t["name"], "MbdRotationalSpringDamper", yp)
            # theta = rotation of Chrono body2 relative to body1: body0 = body1, body1 = body2
            _rel(prim, "mbd:body0", b1.path)
            _rel(prim, "mbd:body1", b2.path)
            _set(prim, "mbd:localPos0", _v3d(b1.local_point(pos)))
            _set(prim, "mbd:localRot0", _qd(b1.local_rot(rmat)))
            _set(prim, "mbd:localPos1", _v3d(b2.local_point(pos)))
            _set(prim, "mbd:localRot1", _qd(b2.local_rot(rmat)))
            if "free_angle" in t and law not in ("damper", "damper_curve"):
                a = float(t["free_angle"])
                _set(prim, "mbd:restAngle", a if self.deg else a * RAD2DEG)
            if law in ("linear", "spring"):  # N m / rad -> N m / deg
                _set(prim, "mbd:stiffness", float(t["spring_coefficient"]) * DEG2RAD)
            if law in ("linear", "damper"):
                _set(prim, "mbd:damping", float(t["damping_coefficient"]) * DEG2RAD)
            if law in ("curves", "spring_curve"):  # abscissa rad -> deg (never scaled by angle_degrees)
                _set(prim, "mbd:springTorqueCurve",
                     self._curve(t["spring_curve_data"], yp + ("spring_curve_data",), RAD2DEG))
            if law in ("curves", "damper_curve"):  # rad/s -> deg/s
                _set(prim, "mbd:dampingTorqueCurve",
                     self._curve(t["damping_curve_data"], yp + ("damping_curve_data",), RAD2DEG))
            if "preload" in t and law not in ("damper", "damper_curve"):
                _set(prim, "mbd:preload", float(t["preload"]))

    # -- motors and functions ---------------------------------------------------------------------
    def _function(self, prim: Usd.Prim, f: dict, yp: tuple, scale: float) -> float | None:
        """Author MbdTimeFunctionAPI, values multiplied by `scale`; returns f(0) (unscaled) or None."""
        kind = str(f["type"]).upper()
        if kind == "CONTROLLER":
            return None

        def need(key):
            if key not in f:
                raise self.doc.error(yp + (key,), f"missing required field (for a {kind} function)")
            return f[key]

        prim.ApplyAPI("MbdTimeFunctionAPI")
        _set(prim, "mbd:function:type", kind.lower())
        f0 = 0.0
        if kind == "CONSTANT":
            v = float(need("value"))
            _set(prim, "mbd:function:value", v * scale)
            f0 = v
        elif kind == "POLYNOMIAL":
            c = [float(x) for x in need("coefficients")]
            _set(prim, "mbd:function:coefficients", Vt.DoubleArray([x * scale for x in c]))
            f0 = c[0]
        elif kind == "SINE":
            a, fr = float(need("amplitude")), float(need("frequency"))
            ph = float(f.get("phase", 0.0))
            ph_deg = ph if self.deg else ph * RAD2DEG  # phase follows angle_degrees
            _set(prim, "mbd:function:amplitude", a * scale)
            _set(prim, "mbd:function:frequency", fr)
            _set(prim, "mbd:function:phase", ph_deg)
            f0 = a * math.sin(ph_deg * DEG2RAD)
        elif kind == "RAMP":
            s, b = float(need("slope")), float(f.get("intercept", 0.0))
            _set(prim, "mbd:function:slope", s * scale)
            _set(prim, "mbd:function:intercept", b * scale)
            f0 = b
        elif kind == "DATA":
            pts = need("data")
            _set(prim, "mbd:function:data", self._curve(pts, yp + ("data",)))
            if scale != 1.0:
                _set(prim, "mbd:function:data",
                     Vt.Vec2dArray([Gf.Vec2d(float(p[0]), float(p[1]) * scale) for p in pts]))
            f0 = float(np.interp(0.0, [float(p[0]) for p in pts], [float(p[1]) for p in pts]))
        if "repeat" in f:
            r = f["repeat"]
            _set(prim, "mbd:function:repeat", True)
            _set(prim, "mbd:function:repeatStart", float(r["start"]))
            _set(prim, "mbd:function:repeatWidth", float(r["width"]))
            _set(prim, "mbd:function:repeatShift", float(r["shift"]))
            if kind != "CONSTANT":  # u(0) = f(start + fmod(shift, width)): not checked
                f0 = None
        return f0

    def _motors(self) -> None:
        jscope = self._scope("Joints")
        mscope = self._scope("Motors")
        for i, m, yp in self._items("motors"):
            kind = str(m["type"]).upper()
            b1, b2 = self._two_bodies(m, yp)
            axis = self._axis(m, "axis", yp)
            pos = np.asarray(m["location"], float)
            rmat = F.frame_x_then_y90(axis)
            if kind == "LINEAR":
                if "spindle" in m:
                    self.warn(self.doc.warning_text(yp + ("spindle",), "ignored on a LINEAR motor (use guide)"))
                guide = str(m.get("guide", "PRISMATIC")).upper()
                type_name, free, dof = _GUIDE[guide]
                suffix = "guide"
            else:
                if "guide" in m:
                    self.warn(self.doc.warning_text(yp + ("guide",), "ignored on a ROTATION motor (use spindle)"))
                guide = str(m.get("spindle", "REVOLUTE")).upper()
                type_name, free, dof = _SPINDLE[guide]
                suffix = "spindle"
            # Chrono actuates body1 relative to body2; MbdMotor's q is body1's joint frame relative
            # to body0's: so USD body0 = Chrono body2 and USD body1 = Chrono body1 (same sign).
            joint = self._author_joint(jscope, f"{m['name']}_{suffix}", type_name, free, b2, b1, pos, rmat, yp)
            motor = self._item_prim(mscope, m["name"], "MbdMotor", yp)
            _rel(motor, "mbd:joint", joint.GetPath())
            _set(motor, "mbd:dof", dof)
            act = str(m["actuation_type"]).upper()
            _set(motor, "mbd:mode", _MODE[act])
            angular = kind == "ROTATION" and act in ("POSITION", "SPEED")
            f = m["actuation_function"]
            f0 = self._function(motor, f, yp + ("actuation_function",), RAD2DEG if angular else 1.0)
            if str(f["type"]).upper() == "CONTROLLER":
                self.warn(self.doc.warning_text(yp + ("actuation_function", "type"),
                                                "CONTROLLER: the actuation comes from an external controller in "
                                                "the host program; motor authored with target 0 and no function"))
                _set(motor, "mbd:target", 0.0)
            elif act == "POSITION" and f0 is not None and abs(f0) > 1e-12:
                self.warn(self.doc.warning_text(yp + ("actuation_function",),
                                                f"POSITION function has f(0) = {f0:.6g}, but the motor frames "
                                                "coincide at t = 0: the bodies will jump"))

    def _body_loads(self) -> None:
        scope = self._scope("Loads")
        for i, ld, yp in self._items("body_loads"):
            body = self._body_ref(ld, "body", yp)
            kind = str(ld["type"]).upper()
            r_com = F.quat_to_mat(body.com_rot)
            vec = np.asarray(ld["load"], float)
            local = bool(ld["local_load"])
            if local:  # Chrono "local" = the COM frame -> body prim axes
                vec = r_com @ vec
            prim = self._item_prim(scope, ld["name"], "MbdForce" if kind == "FORCE" else "MbdTorque", yp)
            _rel(prim, "mbd:body1", body.path)
            _rel(prim, "mbd:body0", None)
            _set(prim, "mbd:resolveIn", "body1" if local else "world")
            if kind == "FORCE":
                for key in ("point", "local_point"):
                    if key not in ld:
                        raise self.doc.error(yp + (key,), "missing required field (for a FORCE load)")
                p = np.asarray(ld["point"], float)
                if bool(ld["local_point"]):
                    p_prim = body.com_pos + r_com @ p
                else:
                    p_prim = body.local_point(p)
                    self.warn(self.doc.warning_text(
                        yp + ("local_point",), "a global point is fixed in space in Chrono; converted to a point "
                                               "fixed on the body at its initial position"))
                _set(prim, "mbd:localPos1", _v3d(p_prim))
                _set(prim, "mbd:force", _v3d(vec))
            else:
                for key in ("point", "local_point"):
                    if key in ld:
                        self.warn(self.doc.warning_text(yp + (key,), "not used by a TORQUE load"))
                _set(prim, "mbd:torque", _v3d(vec))
            if "modulation_function" in ld:
                self._function(prim, ld["modulation_function"], yp + ("modulation_function",), 1.0)
