"""`usdphys convert`: format converters into USD (Chrono YAML for now)."""
from __future__ import annotations

from pathlib import Path

from usdphys.errors import UsdphysError

HELP = "convert a Chrono YAML model or simulation file into a USD stage (.usda / .usdc)"


def add_arguments(parser) -> None:
    parser.add_argument("input", help="Chrono YAML model file or simulation file (type: MBS, FSI, VEHICLE)")
    parser.add_argument("-o", "--output", required=True, help="output stage (.usda, .usdc or .usd)")


def run(args) -> int:
    src = Path(args.input)
    if src.suffix.lower() not in (".yaml", ".yml"):
        raise UsdphysError(f"{src}: unknown input format (expected a Chrono .yaml / .yml file)")
    if not src.is_file():
        raise UsdphysError(f"{src}: file not found")
    from usdphys.converters.chrono import convert_file

    convert_file(src, args.output)
    print(f"wrote {args.output}")
    return 0
