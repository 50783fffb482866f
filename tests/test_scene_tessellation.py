"""The shapes `usdphys render` draws: closed triangle meshes of the right size and axis."""
from __future__ import annotations

import math

import numpy as np
import pytest

from usdphys.types import scene as tess

# a circle of SEGMENTS chords encloses this fraction of the disc's area
POLY = tess.SEGMENTS / (2 * math.pi) * math.sin(2 * math.pi / tess.SEGMENTS)


def volume(v, f):
    """|signed volume| by the divergence theorem; the mesh must be closed (every edge twice)."""
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2), "open mesh"
    t = v[f]
    return abs(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_revolved_shapes(axis):
    r, h = 0.3, 1.2
    v, f = tess.cylinder(r, h, axis)
    assert volume(v, f) == pytest.approx(math.pi * r * r * h * POLY, rel=1e-12)
    assert np.ptp(v[:, axis]) == pytest.approx(h) and np.max(np.abs(v[:, (axis + 1) % 3])) == pytest.approx(r)
    v, f = tess.cone(r, h, axis)
    assert volume(v, f) == pytest.approx(math.pi * r * r * h / 3 * POLY, rel=1e-12)
    assert v[np.argmax(v[:, axis]), axis] == pytest.approx(h / 2)  # apex at +h/2 (UsdGeom.Cone)
    v, f = tess.capsule(r, h, axis)
    exact = math.pi * r * r * h + 4 / 3 * math.pi * r ** 3
    assert volume(v, f) == pytest.approx(exact, rel=0.03)  # chords in both directions
    assert np.ptp(v[:, axis]) == pytest.approx(h + 2 * r)


def test_sphere_box_plane_and_polygons():
    v, f = tess.sphere(0.5)
    assert np.allclose(np.linalg.norm(v, axis=1), 0.5)
    assert volume(v, f) == pytest.approx(4 / 3 * math.pi * 0.125, rel=0.03)
    v, f = tess.box((1.0, 2.0, 3.0))
    assert volume(v, f) == pytest.approx(6.0, rel=1e-12)
    v, f = tess.plane(2.0, 4.0, 1)
    assert np.allclose(v[:, 1], 0.0) and np.ptp(v[:, 0]) == pytest.approx(4.0) and np.ptp(v[:, 2]) == pytest.approx(2.0)
    # a quad and a pentagon as fans
    tri = tess.triangulate([4, 5], [0, 1, 2, 3, 4, 5, 6, 7, 8])
    assert tri.tolist() == [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7], [4, 7, 8]]
