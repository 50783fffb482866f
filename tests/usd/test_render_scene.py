"""usdphys.usd.scene: which prims `usdphys render` draws, where, and in which colour."""
from __future__ import annotations

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (schemas registered before any stage exists)
from pxr import Usd

from usdphys.errors import UsdphysError
from usdphys.usd.scene import read_render_scene

TEXT = '''#usda 1.0
(
    upAxis = "Y"
    metersPerUnit = 0.01
    startTimeCode = 0
    endTimeCode = 2
    timeCodesPerSecond = 10
)
def Xform "B" ( prepend apiSchemas = ["PhysicsRigidBodyAPI"] ) {
    double3 xformOp:translate.timeSamples = { 0: (0, 0, 0), 2: (4, 0, 0) }
    uniform token[] xformOpOrder = ["xformOp:translate"]
    def Mesh "tri" {
        point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]
        int[] faceVertexCounts = [4]
        int[] faceVertexIndices = [0, 1, 3, 2]
        color3f[] primvars:displayColor = [(0, 1, 0)]
    }
    def Cone "hidden" {
        token visibility = "invisible"
    }
    def Capsule "guide" {
        uniform token purpose = "guide"
    }
    def Sphere "collider" ( prepend apiSchemas = ["PhysicsCollisionAPI"] ) {
        double radius = 2
        token visibility = "invisible"
    }
    def BasisCurves "curve" {
        int[] curveVertexCounts = [2]
        point3f[] points = [(0, 0, 0), (1, 0, 0)]
    }
}
def Cube "ground" {
    double size = 10
}
'''


@pytest.fixture()
def stage():
    st = Usd.Stage.CreateInMemory()
    assert st.GetRootLayer().ImportFromString(TEXT)
    return st


def test_visual_geometry_and_poses(stage, caplog):
    sc = read_render_scene(stage)
    paths = [m.path for m in sc.meshes]
    # visible, default/render purpose; the curve is named in a warning, not drawn
    assert paths == ["/B/tri", "/ground"]
    assert "/B/curve" in caplog.text
    tri, ground = sc.meshes
    assert tri.faces.shape == (2, 3) and np.allclose(tri.color, (0, 1, 0))
    assert tri.moving and not ground.moving
    assert sc.up_axis == 1 and sc.meters_per_unit == 0.01
    np.testing.assert_allclose(sc.times, [0.0, 0.1, 0.2])
    # time samples interpolated as USD does: x = 2 at time code 1 (stage units)
    np.testing.assert_allclose(sc.world_vertices(1, 0)[0], (2.0, 0.0, 0.0))


def test_collision_geometry_and_frames(stage):
    sc = read_render_scene(stage, frames=[2], geometry="collision")
    assert [m.path for m in sc.meshes] == ["/B/collider"]
    v = sc.world_vertices(0, 0)
    np.testing.assert_allclose(v.mean(0), (4.0, 0.0, 0.0), atol=1e-12)
    assert np.max(np.linalg.norm(v - (4, 0, 0), axis=1)) == pytest.approx(2.0)
    with pytest.raises(UsdphysError, match="frame 3 is outside the result's frames 0..2"):
        read_render_scene(stage, frames=[3])
    with pytest.raises(UsdphysError, match="geometry must be one of"):
        read_render_scene(stage, geometry="all")
