"""Chrono YAML (MBS model / simulation files) -> USD stage.

    from usdphys.converters.chrono import convert
    stage = convert("mbs.yaml")            # in-memory Usd.Stage
    convert_file("mbs.yaml", "out.usda")   # validated, written atomically

See docs/converters.md for every field and where it lands in USD.
"""
from .convert import convert, convert_file

__all__ = ["convert", "convert_file"]
