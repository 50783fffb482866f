"""Contact geometry: collision shapes read from USD, candidate pairs, and Warp narrow phase.

- `usdphys.collision.shapes`: stage -> `ShapeTable` (flat NumPy arrays, SI units).
- `usdphys.collision.broadphase`: `ShapeTable` + exclusions -> candidate pair list (once).
- `usdphys.collision.narrowphase`: Warp kernels/functions -> per-world contact buffer.

See docs/contact.md for the layouts and the proposed contact response.
"""
from usdphys.collision.shapes import (
    SHAPE_BOX,
    SHAPE_CAPSULE,
    SHAPE_CONVEX,
    SHAPE_CYLINDER,
    SHAPE_NAMES,
    SHAPE_PLANE,
    SHAPE_SPHERE,
    ShapeTable,
    read_shapes,
    rigid_frame,
)
from usdphys.collision.broadphase import candidate_pairs

__all__ = [
    "SHAPE_BOX",
    "SHAPE_CAPSULE",
    "SHAPE_CONVEX",
    "SHAPE_CYLINDER",
    "SHAPE_NAMES",
    "SHAPE_PLANE",
    "SHAPE_SPHERE",
    "ShapeTable",
    "candidate_pairs",
    "read_shapes",
    "rigid_frame",
]
