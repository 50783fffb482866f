"""The scale benchmark's model: a hanging chain of N thin rods (shared by bench_scale.py and its peers).

Each rod: length LINK, mass 1 kg, a thin cylinder (axial inertia 1e-6 of the transverse, the
ratio the solver must survive), its axis along the chain. Rod 0 hangs from the world; rod k
from rod k-1's end. Revolute joints about y (a planar chain) or spherical joints. The chain
starts straight, tilted TILT from the vertical in the x-z plane, at rest, and swings under
gravity (9.81, -z).
"""
from __future__ import annotations

import math

import numpy as np

LINK = 0.1  # m
MASS = 1.0  # kg
TRANSVERSE = MASS * LINK ** 2 / 12.0  # kg m^2, about the rod's centre
AXIAL = 1e-6 * TRANSVERSE
TILT = math.radians(45.0)
REVOLUTE_Y = [True, True, True, True, False, True]  # locked DOFs: transX..rotZ
SPHERICAL = [True, True, True, False, False, False]


def rod_frame():
    """(direction of the chain, quaternion xyzw turning body z onto it)."""
    d = np.array([math.sin(TILT), 0.0, -math.cos(TILT)])
    # rotate z = (0, 0, 1) onto d about y: angle pi - TILT
    a = math.pi - TILT
    q = np.array([0.0, math.sin(a / 2), 0.0, math.cos(a / 2)])
    return d, q


def chain_model(n: int, joint: str = "revolute"):
    """usdphys Model of the chain (SI, xyzw); joint: 'revolute' (about y) or 'spherical'."""
    from usdphys.types.model import Model

    locked = REVOLUTE_Y if joint == "revolute" else SPHERICAL
    d, q = rod_frame()
    m = Model()
    m.gravity = np.array([0.0, 0.0, -9.81])
    top = np.array([0.0, 0.0, 0.0])
    prev = -1
    for k in range(n):
        centre = top + (k + 0.5) * LINK * d
        b = m.add_body(f"/chain/rod{k}", MASS, [TRANSVERSE, TRANSVERSE, AXIAL], pos=centre, rot=q)
        # body z points down the chain: a rod's top end is (0, 0, -L/2), its bottom (0, 0, L/2);
        # joint frames are world-aligned (y: the hinge axis) on both sides
        m.add_joint(f"/chain/joint{k}", prev, b,
                    pos0=top if prev < 0 else [0.0, 0.0, LINK / 2],
                    rot0=(0, 0, 0, 1) if prev < 0 else _conj(q),
                    pos1=[0.0, 0.0, -LINK / 2], rot1=_conj(q), locked=locked)
        prev = b
    return m


def _conj(q):
    return (-q[0], -q[1], -q[2], q[3])
