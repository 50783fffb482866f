"""`usdphys plugin-path`: where the schema plugin lives, for PXR_PLUGINPATH_NAME."""
from __future__ import annotations

from usdphys.usd.plugin import plugin_path

HELP = "print the folder to put on PXR_PLUGINPATH_NAME (usdview and other USD apps)"


def add_arguments(parser) -> None:
    parser.add_argument("--export", action="store_true", help="print a shell `export` line instead")


def run(args) -> int:
    path = plugin_path()
    print(f"export PXR_PLUGINPATH_NAME={path}${{PXR_PLUGINPATH_NAME:+:$PXR_PLUGINPATH_NAME}}" if args.export else path)
    return 0
