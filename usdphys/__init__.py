"""usdphys: multibody physics for OpenUSD.

Importing the package registers the codeless schema plugin (NewtonJointAPI and the Mbd*
multibody schemas) with USD; see usdphys.plugin for why that must happen early.
"""
import sys
from pathlib import Path

from usdphys.plugin import SchemaRegistrationError, plugin_path, register

__version__ = "0.1.0"

try:
    register()
except SchemaRegistrationError as _exc:
    if Path(sys.argv[0]).name == "usdphys":  # the console script: one clear line, exit 1
        print(f"usdphys: error: {_exc}", file=sys.stderr)
        raise SystemExit(1) from None
    raise

__all__ = ["SchemaRegistrationError", "plugin_path", "__version__"]
