"""Registration of the usdphys codeless schema plugin with USD.

USD builds its schema registry once, the first time anything asks for a prim definition
(creating or opening a stage does). Plugins registered after that are not seen, and the
registry cannot be rebuilt in-process. So `import usdphys.usd` registers the plugin at once,
and every entry point calls `ensure_registered()`, which says what to do when the
registry was built too early.

USD holds one schema per identifier per process, and newton-usd-schemas (>= 0.4) defines a
SCALAR `NewtonJointAPI` while ours is per-DOF. So usdphys lives beside it: where another
plugin already claims `NewtonJointAPI`, we register plugin/without_newton_joint/ (every Mbd*
schema, no NewtonJointAPI) and read NewtonJointAPI data from the authored attributes by
value type (float[] per-DOF, float scalar); otherwise the full plugin/ registers. If
newton-usd-schemas is registered after us, USD refuses its NewtonJointAPI; we keep working.
"""
from __future__ import annotations

from pathlib import Path

from pxr import Plug, Usd

from usdphys.usd.tokens import Tokens

PLUGIN_NAME = "usdphys"
# Our schema identifier that another package also claims (newton-usd-schemas).
CLASHING_IDENTIFIER = Tokens.NewtonJointAPI
WITHOUT_NEWTON_JOINT = "without_newton_joint"
_PROBE_TYPE = Tokens.MbdSpringDamper  # any concrete type of ours: present iff the registry saw us


class SchemaRegistrationError(ImportError):
    """The usdphys schemas cannot be (or were not) registered in this process."""


def plugin_path() -> Path:
    """Folder holding plugInfo.json + generatedSchema.usda (put it on PXR_PLUGINPATH_NAME)."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "plugin", here.parent / "_plugin"):  # source checkout, then wheel
        if (candidate / "plugInfo.json").is_file():
            return candidate
    raise SchemaRegistrationError(
        f"usdphys schema plugin files not found next to {here} (looked for plugin/plugInfo.json); "
        "reinstall the package"
    )


def _foreign_claims(identifier: str) -> list[str]:
    """Plugins other than ours whose types declare the given schema identifier."""
    claims = []
    for plugin in Plug.Registry().GetAllPlugins():
        if plugin.name == PLUGIN_NAME:
            continue
        types = plugin.metadata.get("Types", {}) or {}
        for type_name, info in types.items():
            if (info or {}).get("schemaIdentifier", type_name) == identifier:
                claims.append(f"plugin '{plugin.name}' at {plugin.resourcePath} (type {type_name})")
    return claims


def plugin_path_without_newton_joint() -> Path:
    """The same plugin without our NewtonJointAPI: for processes that use newton-usd-schemas."""
    return plugin_path() / WITHOUT_NEWTON_JOINT


def newton_joint_form() -> str | None:
    """Which NewtonJointAPI this process's schema registry holds: "per-DOF" (ours),
    "scalar" (newton-usd-schemas), or None."""
    definition = Usd.SchemaRegistry().FindAppliedAPIPrimDefinition(CLASHING_IDENTIFIER)
    if definition is None:
        return None
    return "per-DOF" if definition.GetAttributeDefinition(Tokens.newtonDofs) else "scalar"


def _registry_sees_us() -> bool:
    return Usd.SchemaRegistry().FindConcretePrimDefinition(_PROBE_TYPE) is not None


def register() -> Path:
    """Register the plugin once (the variant without NewtonJointAPI where another plugin
    claims it); raise SchemaRegistrationError with a remedy on failure."""
    if Plug.Registry().GetPluginWithName(PLUGIN_NAME) is None:
        path = plugin_path_without_newton_joint() if _foreign_claims(CLASHING_IDENTIFIER) else plugin_path()
        Plug.Registry().RegisterPlugins([str(path)])
    ensure_registered()
    return Path(Plug.Registry().GetPluginWithName(PLUGIN_NAME).resourcePath)


def ensure_registered() -> None:
    """Fail with a clear remedy unless USD's schema registry holds our Mbd* schemas."""
    if not _registry_sees_us():
        beside_newton = bool(_foreign_claims(CLASHING_IDENTIFIER))
        folder = plugin_path_without_newton_joint() if beside_newton else plugin_path()
        raise SchemaRegistrationError(
            "USD's schema registry was built before the usdphys schemas were registered "
            "(something created or opened a USD stage before `import usdphys.usd`), and USD "
            "cannot rebuild it in a running process. Import usdphys.usd before using pxr.Usd, "
            f"or start Python with PXR_PLUGINPATH_NAME={folder}"
            + (" (the folder without our NewtonJointAPI: newton-usd-schemas is registered)" if beside_newton else "")
        )
