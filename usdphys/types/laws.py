"""Scalar force laws of the spring-dampers as data: a spec per element and one packed table.

Packed scalar law (MbdSpringDamper and MbdRotationalSpringDamper share it; ``pack_laws``):

    law_i int32   (n, 7)  [spring_off, spring_n, damp_off, damp_n, map_off, map_nx, map_ny]
    law_f float64 (n, 4)  [k, c, x0, preload]
    data  float64 (m,)    shared buffer (>= 1 element)

  spring curve K: spring_n (x, y) pairs interleaved at data[spring_off:] (x = x - x0)
  damping curve C: damp_n (xdot, y) pairs at data[damp_off:]
  map F(x, xdot): data[map_off : +nx] deformation (= x itself, x0 unused), then ny
      velocities, then ny * nx values row-major per velocity (row j = velocity j).
  f = preload - S - D with S = K(x - x0) if spring_n > 0 else k (x - x0),
                           D = C(xdot)    if damp_n > 0   else c xdot;
  map_nx > 0: f = preload - F(x, xdot) (replaces both).

The solver evaluates them with the Warp functions of usdphys.solver.laws (docs/forces.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Sequence

import numpy as np

from usdphys.errors import UsdphysError

# Below this attachment distance (metres) the line of action is undefined: the direction is
# taken as the zero vector, so a spring-damper with coincident points applies no force
# (preload included) instead of NaN. Stateless, so it is the same on every world and step.
LINE_EPS = 1e-12

N_LAW_INT = 7
N_LAW_FLOAT = 4
LI_SPRING_OFF, LI_SPRING_N, LI_DAMP_OFF, LI_DAMP_N, LI_MAP_OFF, LI_MAP_NX, LI_MAP_NY = range(7)
LF_K, LF_C, LF_X0, LF_PRELOAD = range(4)


# ----------------------------------------------------------------------------------------
# Law specs and packing
# ----------------------------------------------------------------------------------------
@dataclass
class ScalarLaw:
    """One spring-damper law in SI/radians. Curves are (x, y) pairs with ascending x;
    the map is (deformation[nx], velocity[ny], values[ny * nx] row-major per velocity)."""

    k: float = 0.0
    c: float = 0.0
    x0: float = 0.0
    preload: float = 0.0
    spring_curve: Sequence[Sequence[float]] = ()
    damping_curve: Sequence[Sequence[float]] = ()
    map_deformation: Sequence[float] = ()
    map_velocity: Sequence[float] = ()
    map_values: Sequence[float] = ()
    label: str = field(default="force law", compare=False)

    def curve(self, which: str) -> np.ndarray:
        pts = np.asarray([tuple(p) for p in getattr(self, which)], dtype=np.float64).reshape(-1, 2)
        return pts

    def has_map(self) -> bool:
        return len(self.map_deformation) > 0 or len(self.map_velocity) > 0 or len(self.map_values) > 0

    def validate(self) -> "ScalarLaw":
        where = self.label
        for name in ("k", "c", "x0", "preload"):
            if not math.isfinite(float(getattr(self, name))):
                raise UsdphysError(f"{where}: {name} = {getattr(self, name)} is not finite")
        for which in ("spring_curve", "damping_curve"):
            pts = self.curve(which)
            if not np.all(np.isfinite(pts)):
                raise UsdphysError(f"{where}: {which} has non-finite values")
            if np.any(np.diff(pts[:, 0]) <= 0):
                raise UsdphysError(f"{where}: {which} abscissae must be strictly ascending")
        if self.has_map():
            xs = np.asarray(self.map_deformation, dtype=np.float64)
            ys = np.asarray(self.map_velocity, dtype=np.float64)
            vs = np.asarray(self.map_values, dtype=np.float64)
            if len(xs) == 0 or len(ys) == 0 or vs.size != len(xs) * len(ys):
                raise UsdphysError(f"{where}: force map has {vs.size} values; expected len(velocity) x len(deformation) = {len(ys)} x {len(xs)}")
            if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys)) and np.all(np.isfinite(vs))):
                raise UsdphysError(f"{where}: force map has non-finite values")
            if np.any(np.diff(xs) <= 0) or np.any(np.diff(ys) <= 0):
                raise UsdphysError(f"{where}: force map deformation and velocity must be strictly ascending")
        return self


@dataclass
class PackedLaws:
    law_i: np.ndarray  # int32 (n, 7)
    law_f: np.ndarray  # float64 (n, 4)
    data: np.ndarray  # float64 (m,), m >= 1


def pack_laws(laws: Sequence[ScalarLaw]) -> PackedLaws:
    n = len(laws)
    law_i = np.zeros((n, N_LAW_INT), dtype=np.int32)
    law_f = np.zeros((n, N_LAW_FLOAT), dtype=np.float64)
    buf: list[float] = []
    for e, law in enumerate(laws):
        law.validate()
        law_f[e] = (law.k, law.c, law.x0, law.preload)
        for which, off_col, n_col in (("spring_curve", LI_SPRING_OFF, LI_SPRING_N), ("damping_curve", LI_DAMP_OFF, LI_DAMP_N)):
            pts = law.curve(which)
            law_i[e, off_col] = len(buf)
            law_i[e, n_col] = len(pts)
            buf.extend(pts.reshape(-1).tolist())
        law_i[e, LI_MAP_OFF] = len(buf)
        if law.has_map():
            law_i[e, LI_MAP_NX] = len(law.map_deformation)
            law_i[e, LI_MAP_NY] = len(law.map_velocity)
            buf.extend(float(v) for v in law.map_deformation)
            buf.extend(float(v) for v in law.map_velocity)
            buf.extend(float(v) for v in law.map_values)
    return PackedLaws(law_i, law_f, np.asarray(buf if buf else [0.0], dtype=np.float64))
