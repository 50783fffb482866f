"""The `usdphys` command: a thin face over the Python API.

Each subcommand lives in its own module exposing
    HELP: str                        one-line help
    add_arguments(parser) -> None
    run(args) -> int                 exit status
Bad input raises UsdphysError: printed as one clear line, exit 1, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from usdphys.errors import UsdphysError

# subcommand name -> module implementing it
SUBCOMMANDS = {
    "convert": "usdphys.converters.cli",
    "check": "usdphys.usd.check",
    "assemble": "usdphys.assemble_cli",
    "simulate": "usdphys.simulate_cli",
    "plugin-path": "usdphys.plugin_cli",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="usdphys", description="Multibody physics for OpenUSD.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:  # a real missing dependency, not an absent command
                raise
            continue
        sp = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sp)
        sp.set_defaults(_run=module.run)
    return parser


def _version() -> str:
    from usdphys import __version__

    return f"usdphys {__version__}"


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    try:
        parser = build_parser()
    except ImportError as exc:  # e.g. schema registration refused (clash), said clearly
        print(f"usdphys: error: {exc}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except UsdphysError as exc:
        print(f"usdphys {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"usdphys {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
