"""Recorded quantities as plain data: the groups a run records and the channels it yields.

A ``Channel`` is one recorded quantity of one prim over frames and worlds, in the units it
states (SI, angles in degrees: docs/recording.md). The recorder (usdphys.usd.record), the table
writer (usdphys.table) and the plotter (usdphys.plot) all work from a list of channels, so
the three always agree. NumPy and the standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from usdphys.errors import UsdphysError

GROUPS = ("bodies", "joints", "elements", "world")
# the namespace of every recorded attribute that UsdPhysics has no name for
OUT_NAMESPACE = "usdphys:out:"


@dataclass(frozen=True)
class RecordGroups:
    bodies: bool = False
    joints: bool = False
    elements: bool = False
    world: bool = False

    @property
    def any(self) -> bool:
        return self.bodies or self.joints or self.elements or self.world

    @classmethod
    def parse(cls, spec) -> "RecordGroups":
        """'bodies,joints', a list of names, 'all', '' / None (nothing), or a RecordGroups."""
        if spec is None:
            return cls()
        if isinstance(spec, RecordGroups):
            return spec
        if isinstance(spec, str):
            names = [s.strip() for s in spec.split(",") if s.strip()]
        else:
            try:
                names = [str(s).strip() for s in spec]
            except TypeError:
                raise UsdphysError(f"record: expected group names ({', '.join(GROUPS)}), got {spec!r}") from None
        if names == ["all"]:
            names = list(GROUPS)
        bad = [n for n in names if n not in GROUPS]
        if bad:
            raise UsdphysError(f"record: unknown group '{bad[0]}' (expected a comma-separated list of "
                               f"{', '.join(GROUPS)}, or all)")
        return cls(**{n: True for n in names})


@dataclass
class Channel:
    """One quantity of one prim: values (frames, worlds) or (frames, worlds, 3)."""

    prim: str  # the prim it belongs to (body, joint, element, motor, load; the scene for world values)
    name: str  # attribute name without the namespace, e.g. 'forceLocal', 'coordinate:angle'
    group: str  # one of GROUPS
    quantity: str  # the plot panel: 'angle', 'angular velocity', 'length', 'velocity', 'force', ...
    unit: str  # 'deg', 'deg/s', 'm', 'm/s', 'N', 'N m', 'J', '1' (flags)
    values: np.ndarray
    usd_name: str = ""  # the attribute it is written to (default: OUT_NAMESPACE + name)

    @property
    def attribute(self) -> str:
        return self.usd_name or OUT_NAMESPACE + self.name

    @property
    def is_vector(self) -> bool:
        return self.values.ndim == 3

    def column_name(self, component: str | None = None) -> str:
        comp = f".{component}" if component else ""
        return f"{self.prim}.{self.name}{comp} [{self.unit}]"


def table_columns(times: np.ndarray, channels: list[Channel], world: int = 0) -> dict[str, np.ndarray]:
    """Ordered columns (name -> (frames,) array) of one world: time first, then every channel."""
    cols: dict[str, np.ndarray] = {"time [s]": np.asarray(times, float)}
    for ch in channels:
        v = np.asarray(ch.values)[:, world]
        if ch.is_vector:
            for c, comp in enumerate(("x", "y", "z")):
                cols[ch.column_name(comp)] = v[:, c]
        else:
            cols[ch.column_name()] = v
    return cols


def parse_column(name: str) -> tuple[str, str, str | None, str]:
    """'prim.name.x [unit]' -> (prim, name, component or None, unit); the inverse of column_name.
    Prim paths contain no '.', so the first '.' ends the prim."""
    head, _, unit = name.rpartition(" [")
    if not head or not unit.endswith("]") or "." not in head:
        raise ValueError(f"not a recorded column: {name!r}")
    prim, _, rest = head.partition(".")
    comp = None
    if rest.endswith((".x", ".y", ".z")):
        rest, comp = rest[:-2], rest[-1]
    return prim, rest, comp, unit[:-1]


_BODY_NAMES = ("velocity", "angularVelocity")
_WORLD_NAMES = ("kineticEnergy", "potentialEnergy", "constraintResidual")
_JOINT_PREFIXES = ("coordinate:", "rate:", "limitActive:")


def group_of(name: str, is_vector: bool) -> str:
    """The group of a quantity known only by name (a table column): joints' reactions are
    vectors, the elements' forceLocal / torqueLocal scalars."""
    if name in _BODY_NAMES:
        return "bodies"
    if name in _WORLD_NAMES:
        return "world"
    if name.startswith(_JOINT_PREFIXES) or (name in ("forceLocal", "torqueLocal") and is_vector):
        return "joints"
    return "elements"
