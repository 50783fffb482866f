"""Every Chrono YAML file copied into assets/chrono-yaml: MBS model and simulation files (and
FSI / VEHICLE / FEA files for their multibody part) convert to a stage that opens, parses with
usd-core's UsdPhysics parser and passes `usdphys check`; non-MBS files (solver files, SPH/TDPF
fluid files) are refused with a clear message."""
from __future__ import annotations

from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Usd, UsdPhysics

from usdphys.converters.chrono import convert, convert_file
from usdphys.errors import UsdphysError

REPO = Path(__file__).resolve().parents[2]
CHRONO = REPO / "assets" / "chrono-yaml"  # verbatim Chrono files, upstream layout (see its README.md)
FILES = sorted(p for p in CHRONO.rglob("*.yaml") if "schema" not in p.parts)


def _expected(path: Path) -> str:
    """'ok' or 'refused' for each copied file, by what it is."""
    name = path.name
    if name.startswith("solver_") or name == "mbs_solver.yaml":
        return "refused"  # solver settings only: convert the simulation file that names it
    if name in ("sph.yaml", "tdpf.yaml", "model_sph.yaml", "model_tdpf.yaml"):
        return "refused"  # fluid-only: no multibody model
    return "ok"


def _rel(p: Path) -> str:
    return str(p.relative_to(CHRONO))


def test_the_chrono_tree_is_what_we_expect():
    # Guard against an empty glob hiding every case: the snapshot has these files.
    names = {_rel(p) for p in FILES}
    assert "data/yaml/mbs/mbs.yaml" in names and "data/yaml/fsi/sphere_decay/fsi_sphere_decay.yaml" in names
    assert sum(_expected(p) == "ok" for p in FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_every_chrono_file(path, tmp_path):
    from usdphys.usd.check import check_stage

    out = tmp_path / "out.usda"
    if _expected(path) == "refused":
        with pytest.raises(UsdphysError) as exc:
            convert_file(path, out)
        assert str(path) in str(exc.value)
        assert not out.exists()
        return
    warnings: list[str] = []
    convert_file(path, out, warnings)
    stage = Usd.Stage.Open(str(out))
    assert stage is not None and stage.GetDefaultPrim()
    load = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None) or UsdPhysics.LoadUsdPhysicsFromRange
    parsed = load(stage, ["/"])
    assert UsdPhysics.ObjectType.Scene in parsed
    n_bodies = len(parsed.get(UsdPhysics.ObjectType.RigidBody, ([], []))[0])
    n_yaml = len([p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)])
    assert n_bodies == n_yaml
    errors = [f for f in check_stage(stage) if f.severity == "error"]
    assert errors == [], "\n".join(map(str, errors))


# What each real file converts to (counts from reading the YAML by hand).
EXPECTED_COUNTS = {
    # file: (bodies, joints incl. motor guides and constraints, motors, force elements, loads)
    "data/yaml/mbs/model_slider_crank.yaml": (5, 5, 1, 1, 0),
    "data/yaml/mbs/model_slider_crank_reduced.yaml": (4, 4, 0, 1, 0),
    "data/yaml/mbs/model_motors.yaml": (16, 6, 6, 0, 0),
    "data/yaml/mbs/model_bushing.yaml": (2, 1, 0, 0, 1),
    "data/yaml/mbs/model_inverted_pendulum_motor.yaml": (3, 2, 1, 0, 0),
    "data/precice/flap_openfoam/solid_chrono/mbs_model.yaml": (2, 1, 0, 1, 0),
    "data/yaml/fsi/sphere_decay/model_mbs.yaml": (2, 1, 0, 1, 0),
    "data/yaml/fea/model_beams.yaml": (0, 0, 0, 0, 0),
}


@pytest.mark.parametrize("rel", sorted(EXPECTED_COUNTS))
def test_counts(rel):
    stage = convert(CHRONO / rel)
    root = stage.GetDefaultPrim().GetPath()

    def count(scope, pred=lambda p: True):
        prim = stage.GetPrimAtPath(root.AppendChild(scope))
        return len([c for c in prim.GetChildren() if pred(c)]) if prim else 0

    got = (count("Bodies", lambda p: p.HasAPI(UsdPhysics.RigidBodyAPI)), count("Joints"), count("Motors"),
           count("ForceElements"), count("Loads"))
    assert got == EXPECTED_COUNTS[rel]


def test_simulation_file_settings_reach_the_scene():
    stage = convert(CHRONO / "data/yaml/mbs/mbs_controller.yaml")
    scene = stage.GetPrimAtPath(stage.GetDefaultPrim().GetPath().AppendChild("PhysicsScene"))
    assert scene.GetAttribute("mbd:timeStep").Get() == pytest.approx(1e-4)
    assert scene.GetAttribute("mbd:endTime").Get() == 100
    assert scene.GetAttribute("mbd:contactMethod").Get() == "smc"
    assert UsdPhysics.Scene(scene).GetGravityMagnitudeAttr().Get() == pytest.approx(9.8)
    # preCICE flap: gravity [0, 0, 0] in the participant file; time step from its solver file
    stage = convert(CHRONO / "data/precice/flap_openfoam/solid_chrono/mbs_participant.yaml")
    scene = stage.GetPrimAtPath(stage.GetDefaultPrim().GetPath().AppendChild("PhysicsScene"))
    assert UsdPhysics.Scene(scene).GetGravityMagnitudeAttr().Get() == 0.0
    assert scene.GetAttribute("mbd:timeStep").HasAuthoredValue()


def test_fsi_file_converts_its_mbs_part_and_warns_about_the_fluid():
    warnings: list[str] = []
    stage = convert(CHRONO / "data/yaml/fsi/sphere_decay/fsi_sphere_decay.yaml", warnings)
    assert [p.GetName() for p in stage.GetPrimAtPath("/Sphere/Bodies").GetChildren()] == ["body1", "ground"]
    assert any("only the multibody part" in w and "tdpf.yaml" in w for w in warnings)
    scene = stage.GetPrimAtPath("/Sphere/PhysicsScene")
    assert scene.GetAttribute("mbd:timeStep").Get() == pytest.approx(1e-4)  # MBS solver file, not the FSI step
    assert not scene.GetAttribute("mbd:endTime").HasAuthoredValue() or scene.GetAttribute("mbd:endTime").Get() == 100


def test_known_warnings_of_real_files():
    w: list[str] = []
    convert(CHRONO / "data/yaml/mbs/model_bushing.yaml", w)
    assert any("model_bushing.yaml:25" in x and "lin_vel" in x for x in w)
    w = []
    convert(CHRONO / "data/yaml/mbs/mbs_controller.yaml", w)
    assert any("load_controllers" in x and "cart_controller" in x for x in w)
    w = []
    convert(CHRONO / "data/yaml/fea/mbs.yaml", w)
    assert any("model.FEA" in x and "not converted" in x for x in w)
    w = []
    convert(CHRONO / "data/yaml/vehicle/vehicle.yaml", w)
    assert any("VEHICLE" in x for x in w)
