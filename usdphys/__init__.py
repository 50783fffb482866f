"""usdphys: multibody physics for OpenUSD.

Importing the package loads neither USD nor Warp. `import usdphys.usd` registers the schema
plugin (NewtonJointAPI and the Mbd* schemas) with USD, which must happen before the first
stage exists (usdphys.usd.plugin says why); every API function below does it for you.

The public API, loaded on first use:

    usdphys.convert(path) -> Usd.Stage          Chrono YAML model or simulation file -> stage
    usdphys.check(stage) -> list[Finding]       our rules + usd-core's validators
    usdphys.needs_assembly(stage) -> bool
    usdphys.assemble(stage) -> AssemblyReport   SNAP: place bodies from mate connectors
    usdphys.simulate(stage, ...) -> Result      any UsdPhysics stage, Warp solver
    usdphys.render(result, "motion.png")        draw a result: PNG strip, GIF or MP4 (usdphys[render])
    usdphys.sweep(stage, spec, outdir)          many variants of a stage, one table row each (docs/sweeps.md)
    usdphys.register_schemas() -> Path          explicit registration (what import usdphys.usd does)
    usdphys.plugin_path() -> Path               the folder for PXR_PLUGINPATH_NAME
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_API = {
    "convert": ("usdphys.converters.chrono", "convert"),
    "check": ("usdphys.usd.check", "check_stage"),
    "needs_assembly": ("usdphys.usd.assemble", "needs_assembly"),
    "assemble": ("usdphys.usd.assemble", "assemble"),
    "simulate": ("usdphys.simulate", "simulate"),
    "Result": ("usdphys.simulate", "Result"),
    "render": ("usdphys.drawing", "render"),
    "sweep": ("usdphys.sweep", "sweep"),
    "register_schemas": ("usdphys.usd.plugin", "register"),
    "plugin_path": ("usdphys.usd.plugin", "plugin_path"),
    "SchemaRegistrationError": ("usdphys.usd.plugin", "SchemaRegistrationError"),
    "UsdphysError": ("usdphys.errors", "UsdphysError"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    try:
        module_name, attr = _API[name]
    except KeyError:
        raise AttributeError(f"module 'usdphys' has no attribute {name!r}") from None
    if module_name.startswith("usdphys.usd") or module_name.startswith("usdphys.converters"):
        importlib.import_module("usdphys.usd")  # schemas registered before any stage exists
    return getattr(importlib.import_module(module_name), attr)
