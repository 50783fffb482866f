"""The USD edge: the only part of usdphys (besides the converters) that imports pxr.

Importing it registers the usdphys schema plugin with USD (usdphys.usd.plugin), so every
module here can open and author stages that use our schemas.

    plugin     registration, clash detection with newton-usd-schemas, plugin_path()
    tokens     schema type and attribute names, generated from schemas/schema.usda
    stage      opening a stage, a new layer over an input, metadata copy, atomic export
    gfconv     Gf <-> NumPy (usdphys.math3d conventions), only where USD values are read or written
    reader     stage -> usdphys.types.model.Model (bodies, joints, elements, shapes)
    record     solver result -> a layer of time samples over the input
    assemble   SNAP: place bodies and systems from mate connectors
    check      our rules + usd-core's validators
    schemagen  regenerate plugin/ and tokens from schemas/schema.usda
"""
from usdphys.usd.plugin import register as _register

_register()
