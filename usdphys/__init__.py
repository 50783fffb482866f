"""usdphys: multibody physics for OpenUSD.

Importing the package registers the codeless schema plugin (NewtonJointAPI and the Mbd*
multibody schemas) with USD; see usdphys.plugin for why that must happen early.
"""
from usdphys.plugin import SchemaRegistrationError, plugin_path, register

__version__ = "0.1.0"

register()

__all__ = ["SchemaRegistrationError", "plugin_path", "__version__"]
