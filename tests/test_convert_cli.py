"""`usdphys convert` on the bundled example, output formats, the Python API, model_file."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Usd, UsdGeom, UsdPhysics

from usdphys.usd.check import check_stage
from usdphys.cli import main
from usdphys.converters.chrono import convert

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "assets" / "chrono" / "slider_crank" / "mbs.yaml"


@pytest.mark.parametrize("suffix", [".usda", ".usdc"])
def test_bundled_example_converts(tmp_path, capsys, suffix):
    out = tmp_path / f"slider_crank{suffix}"
    assert main(["convert", str(EXAMPLE), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    stage = Usd.Stage.Open(str(out))
    assert stage.GetDefaultPrim().GetPath() == "/Slider_crank"
    bodies = [p.GetName() for p in stage.GetPrimAtPath("/Slider_crank/Bodies").GetChildren()]
    assert bodies == ["ground", "crank", "slider", "rod", "ball"]
    joints = {p.GetName(): p.GetTypeName() for p in stage.GetPrimAtPath("/Slider_crank/Joints").GetChildren()}
    assert joints == {"ground_slider": "PhysicsPrismaticJoint", "crank_rod": "PhysicsSphericalJoint",
                      "rod_slider": "PhysicsJoint", "ground_ball": "PhysicsPrismaticJoint",
                      "ground_crank_spindle": "PhysicsRevoluteJoint"}
    motor = stage.GetPrimAtPath("/Slider_crank/Motors/ground_crank")
    assert motor.GetAttribute("mbd:mode").Get() == "velocity"
    assert motor.GetAttribute("mbd:function:repeatWidth").Get() == 16
    assert [f for f in check_stage(stage) if f.severity == "error"] == []
    assert main(["check", str(out)]) == 0


def test_python_api_returns_an_in_memory_stage(tmp_path):
    stage = convert(EXAMPLE)
    assert isinstance(stage, Usd.Stage)
    assert stage.GetRootLayer().anonymous  # nothing written
    assert stage.GetRootLayer().customLayerData["chronoVersion"] == "10.0"


def _model(tmp_path, vis: str) -> Path:
    text = textwrap.dedent(f"""\
        chrono-version: 10.0
        model:
          name: vis
          data_path: {{type: RELATIVE, root: assets}}
          bodies:
            - name: b
              location: [0, 0, 0]
              fixed: true
              visualization:
        """) + textwrap.indent(textwrap.dedent(vis), " " * 8)
    p = tmp_path / "model.yaml"
    p.write_text(text)
    return p


def test_model_file_obj_becomes_a_mesh(tmp_path):
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "part.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf -4 -2 -1\n")
    stage = convert(_model(tmp_path, "model_file: part.obj\n"))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/vis/Bodies/b/Visual/model_file"))
    assert len(mesh.GetPointsAttr().Get()) == 4
    assert list(mesh.GetFaceVertexIndicesAttr().Get()) == [0, 1, 2, 0, 2, 3]  # negative indices resolved
    assert not mesh.GetPrim().HasAPI(UsdPhysics.CollisionAPI)


def test_model_file_usd_becomes_a_reference(tmp_path):
    (tmp_path / "assets").mkdir()
    ref = Usd.Stage.CreateNew(str(tmp_path / "assets" / "part.usda"))
    UsdGeom.Sphere.Define(ref, "/Part")
    ref.SetDefaultPrim(ref.GetPrimAtPath("/Part"))
    ref.Save()
    stage = convert(_model(tmp_path, "model_file: part.usda\n"))
    prim = stage.GetPrimAtPath("/vis/Bodies/b/Visual/model_file")
    assert prim.GetTypeName() == "Sphere"  # composed from the reference


def test_mesh_visual_pose_and_scale(tmp_path):
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "tri.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    stage = convert(_model(tmp_path, """\
        shapes:
          - type: MESH
            filename: tri.obj
            location: [1, 2, 3]
            orientation: [90, 0, 0]
            scale: 2.0
            color: [0.5, 0.5, 1.0]
        """))
    prim = stage.GetPrimAtPath("/vis/Bodies/b/Visual/mesh_0")
    m = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    assert tuple(m.Transform((1, 0, 0))) == pytest.approx((1, 4, 3))  # scaled x2, turned 90 deg about Z, moved


def test_relative_data_path_follows_the_simulation_file(tmp_path):
    # conventions doc: RELATIVE = <simulation file folder>/<root>/<file>; no simulation file:
    # the model file's folder.
    (tmp_path / "models").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tri.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    (tmp_path / "models" / "model.yaml").write_text(textwrap.dedent("""\
        chrono-version: 10.0
        model:
          name: rel
          data_path: {type: RELATIVE, root: data}
          bodies:
            - name: b
              location: [0, 0, 0]
              fixed: true
              visualization: {model_file: tri.obj}
        """))
    (tmp_path / "sim.yaml").write_text("chrono-version: 10.0\ntype: MBS\nmodel: models/model.yaml\n")
    stage = convert(tmp_path / "sim.yaml", [])
    assert stage.GetPrimAtPath("/rel/Bodies/b/Visual/model_file").GetTypeName() == "Mesh"
    from usdphys.errors import UsdphysError

    with pytest.raises(UsdphysError, match=r"model\.yaml:9: model\.bodies\[0\]\.visualization\.model_file: "
                                           r"file not found: .*models/data/tri\.obj"):
        convert(tmp_path / "models" / "model.yaml")
