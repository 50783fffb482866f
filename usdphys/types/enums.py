"""Integer codes shared by the host tables and the Warp kernels.

Each is an IntEnum: the tables store the integers, the solver derives its Warp constants
from these classes (never a hand-written copy), and error messages can name a value.
"""
from __future__ import annotations

from enum import IntEnum


class RowKind(IntEnum):
    """What a constraint row measures between frame 0 (on body0) and frame 1 (on body1)."""

    LIN = 0  # e0[axis] . (P1 - P0): translation of frame 1 along an axis of frame 0
    PERP = 1  # e0[a] . e1[b] (axis = 3 a + b): keeps two frame axes perpendicular
    TWIST = 2  # angle of frame 1 about e0[axis]; 3..5: about e1[axis - 3]; 6..8: x-y-z sequence angle (rad; model.dof_row)
    DIST = 3  # |P1 - P0|
    LIN1 = 4  # e1[axis] . (P1 - P0): along an axis of frame 1 (revolute-translational joint)
    POINT = 5  # e_world[axis] . ((1 - value) P0 + value P1): a point on the line P0 P1 (spring mass)
    CROSS = 6  # (e0[a] x e1[b]) . (P1 - P0) (axis = 3 a + b): a Cardan joint whose hinges are apart
    # the swing of e1[a] away from e0[a] on an elliptical cone (rad; mathx.swing_angle), stored with
    # axis a; the kernel weighs the tilt by the ratio of the cone's two sides (step.row_form),
    # measured as axis a + 3 where the second side is the smaller
    SWING = 7


class RowMode(IntEnum):
    """How a row acts on what it measures."""

    EQUAL = 0  # g = value
    LOWER = 1  # g >= value (unilateral, impulse >= 0)
    UPPER = 2  # g <= value
    SOFT = 3  # implicit spring-damper towards value / target velocity (drive)
    LAW = 4  # force element: implicit force law on the row
    FRICTION = 5  # joint friction: velocity row with a bounded impulse
    # the leader part of a coupling row (q_f = coef0 + coef1 q_l): never active itself; the
    # EQUAL row naming it as its partner adds its Jacobian times -coef1 to its own
    CARRIER = 6


class RowLaw(IntEnum):
    """The force law of a RowMode.LAW row (docs/forces.md)."""

    NONE = 0
    LINEAR = 1  # f = P - k (g - x0) - c (gdot - v0)
    PACKED = 2  # TSDA / RSDA curves and maps (types.laws.PackedLaws)
    USER = 3  # a user Warp function (mbd:userLaw) of (t, g, gdot - v0, k, c, x0): f = P - law
    ARMATURE = 4  # impulse -a (gdot_{n+1/2} - gdot_{n-1/2})
    EFFORT = 5  # force motor: impulse h u(t_n)
    LIMIT_LOWER = 6  # soft limit: f = -k (g - x0) - c gdot while g < x0, else 0
    LIMIT_UPPER = 7  # soft limit: the same while g > x0


class RowMotor(IntEnum):
    """The motor a row belongs to, if any."""

    NONE = 0
    POSITION = 1
    VELOCITY = 2
    FORCE = 3


class Composite(IntEnum):
    """Chrono link classes that are not a UsdPhysics joint (docs/schemas.md)."""

    NONE = 0
    REVOLUTE_SPHERICAL = 1  # (P1 - P0) . z0 = 0, |P1 - P0| = distance
    REVOLUTE_TRANSLATIONAL = 2  # z0 . x1 = z0 . y1 = 0, (P1 - P0) . z0 = 0, (P1 - P0) . x1 = distance


class MotorMode(IntEnum):
    """MbdMotor's mbd:mode token."""

    POSITION = 0
    VELOCITY = 1
    FORCE = 2


class Resolve(IntEnum):
    """The frame a load's vector is given in (MbdForce / MbdTorque mbd:frame)."""

    WORLD = 0
    BODY0 = 1
    BODY1 = 2


class ShapeType(IntEnum):
    """Collision shape kinds (canonical axis +Z for capsule, cylinder and plane normal)."""

    PLANE = 0
    SPHERE = 1
    CAPSULE = 2
    BOX = 3
    CYLINDER = 4
    CONVEX = 5
    ELLIPSOID = 6  # semi-axes along the shape's X, Y, Z
    CONE = 7  # a frustum about +Z: bottom radius, half height, top radius (0: a cone)
    MESH = 8  # a triangle mesh, static only (BVH mid-phase)


class TimeFunctionKind(IntEnum):
    """Kinds of a packed time function u(t) (types.timefunc)."""

    CONSTANT = 0
    POLYNOMIAL = 1
    SINE = 2
    RAMP = 3
    DATA = 4
    STEP = 5
