"""Gf -> NumPy conversions (usdphys.usd.gfconv) and math3d.polar_rotation."""
import numpy as np
from pxr import Gf

from usdphys.math3d import polar_rotation, quat_rotate, quat_to_matrix
from usdphys.usd.gfconv import linear_and_translation, quat_xyzw, unit_quat_xyzw, vec3


def test_quat_is_scalar_last_and_rotates_like_gf():
    gq = Gf.Quatd(0.5, 0.5, -0.5, 0.5)  # real first
    q = quat_xyzw(gq)
    assert np.allclose(q, [0.5, -0.5, 0.5, 0.5], atol=0)
    v = Gf.Vec3d(0.3, -1.2, 2.0)
    expect = Gf.Rotation(gq).TransformDir(v)
    assert np.allclose(quat_rotate(q, vec3(v)), vec3(expect), atol=1e-12)


def test_zero_quat_reads_as_identity():
    assert np.array_equal(unit_quat_xyzw(Gf.Quatf(0.0, 0.0, 0.0, 0.0)), [0.0, 0.0, 0.0, 1.0])


def test_matrix_to_column_convention_and_polar_rotation():
    rot = Gf.Rotation(Gf.Vec3d(1, 2, 3).GetNormalized(), 40.0)
    m = Gf.Matrix4d().SetScale(Gf.Vec3d(2.0, 0.5, 3.0)) * Gf.Matrix4d().SetRotate(rot) \
        * Gf.Matrix4d().SetTranslate(Gf.Vec3d(1.0, -2.0, 0.25))
    lin, t = linear_and_translation(m)
    p = Gf.Vec3d(0.7, 0.1, -0.4)
    assert np.allclose(lin @ vec3(p) + t, vec3(m.Transform(p)), atol=1e-12)
    q = polar_rotation(lin)
    assert np.allclose(quat_to_matrix(q), quat_to_matrix(quat_xyzw(rot.GetQuat())), atol=1e-12)
