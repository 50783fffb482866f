"""Gf <-> NumPy at the USD edge, the quaternion helpers it relies on, and SNAP as an API."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Gf

from usdphys.math3d import quat_normalized, quat_sign_continuous, quat_to_matrix
from usdphys.usd.assemble import assemble_to_layer
from usdphys.usd.gfconv import matrix_from_gf, matrix_to_gf, quat_xyzw, quat_to_gf

CLOCK = Path(__file__).resolve().parents[2] / "assets" / "snap" / "clock" / "clock.usda"


def test_gf_quaternion_and_matrix_round_trip():
    g = Gf.Quatd(0.5, 0.5, -0.5, 0.5)  # scalar first
    q = quat_xyzw(g)
    np.testing.assert_array_equal(q, [0.5, -0.5, 0.5, 0.5])
    assert quat_to_gf(q, Gf.Quatf) == Gf.Quatf(0.5, 0.5, -0.5, 0.5)
    # the same rotation as Gf's own (Gf matrices act on row vectors: transposed)
    gm = Gf.Matrix4d().SetRotate(g)
    np.testing.assert_allclose(matrix_from_gf(gm)[:3, :3], quat_to_matrix(q), atol=1e-15)
    assert matrix_to_gf(matrix_from_gf(gm)) == gm


def test_quat_normalized_refuses_zero_and_nan():
    np.testing.assert_allclose(quat_normalized([0, 0, 0, 2.0]), [0, 0, 0, 1])
    for bad in ([0, 0, 0, 0], [np.nan, 0, 0, 1]):
        with pytest.raises(ValueError):
            quat_normalized(bad)


def test_quat_sign_continuous_never_flips_between_frames():
    q = np.array([[0, 0, 0, 1.0], [0, 0, 0.1, -0.99], [0, 0, -0.2, 0.98]])
    out = quat_sign_continuous(q)
    assert np.all(np.sum(out[1:] * out[:-1], axis=1) > 0)
    np.testing.assert_array_equal(np.abs(out), np.abs(q))


def test_assemble_to_layer_writes_nothing_and_names_the_input_relatively(tmp_path):
    before = CLOCK.read_bytes()
    layer, report = assemble_to_layer(CLOCK, tmp_path / "clock.usda")
    assert report.complete and CLOCK.read_bytes() == before and not (tmp_path / "clock.usda").exists()
    sub = list(layer.subLayerPaths)
    assert len(sub) == 1 and sub[0].startswith(".") and sub[0].endswith("clock/clock.usda")
    assert layer.defaultPrim == "Clock"
