"""MuJoCo's scene-wide switches, as mujoco-usd-converter writes them on the PhysicsScene.

A converted MJCF model keeps `<option><flag .../></option>` as `mjc:flag:<name>` attributes
(MjcSceneAPI). Where a flag turns off something the model would otherwise simulate, the
stage's author meant the model without it: dm_control's cart-pole, for one, disables contact,
and its rails overlap the cart. The flags that map are honoured; any other one authored false
is named once in a warning, never dropped silently.
"""
from __future__ import annotations

from pxr import Usd

from usdphys.errors import warn

FLAG_PREFIX = "mjc:flag:"
# flags whose "false" usdphys honours (all default to true in MuJoCo)
HONOURED = ("contact", "gravity", "limit")


def disabled_flags(scene: Usd.Prim | None) -> set[str]:
    """Names of the MuJoCo flags authored false on the scene prim (e.g. {"contact"})."""
    if scene is None or not scene:
        return set()
    off = set()
    for attr in scene.GetAttributes():
        name = attr.GetName()
        if name.startswith(FLAG_PREFIX) and attr.HasAuthoredValue() and attr.Get() is False:
            off.add(name[len(FLAG_PREFIX):])
    ignored = sorted(off - set(HONOURED))
    if ignored:
        warn(f"{scene.GetPath()}: MuJoCo flags authored off are not simulated that way: "
             + ", ".join(FLAG_PREFIX + n for n in ignored) + " (usdphys honours " + ", ".join(HONOURED) + ")")
    return off
