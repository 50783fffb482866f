"""Registration of the usdphys codeless schema plugin with USD.

USD builds its schema registry once, the first time anything asks for a prim definition
(creating or opening a stage does). Plugins registered after that are not seen, and the
registry cannot be rebuilt in-process. So `import usdphys.usd` registers the plugin at once,
and every entry point calls `ensure_registered()`, which says what to do when the
registry was built too early or when a clashing schema package is loaded.
"""
from __future__ import annotations

from pathlib import Path

from pxr import Plug, Usd

from usdphys.usd.tokens import Tokens

PLUGIN_NAME = "usdphys"
# Our schema identifiers that another package could also claim.
CLASHING_IDENTIFIER = Tokens.NewtonJointAPI
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


def _clash_message(claims: list[str]) -> str:
    return (
        "usdphys cannot register its schemas: another schema plugin also defines "
        f"'{CLASHING_IDENTIFIER}': {', '.join(claims)}.\n"
        "That is the PyPI package newton-usd-schemas (>= 0.4), whose NewtonJointAPI is SCALAR "
        "(float newton:armature, newton:friction, newton:damping, broadcast to all DOFs); "
        "usdphys implements the per-DOF proposal (token[] newton:dofs with float[] "
        "newton:armature, newton:staticFrictionEffort, newton:dynamicFrictionEffort, "
        "newton:viscousDamping). USD can hold only one definition per process: do not import "
        "newton_usd_schemas (or put its plugin on PXR_PLUGINPATH_NAME) in a process that uses "
        "usdphys. usdphys still reads the scalar form from stages that carry it."
    )


def _registry_sees_us() -> bool:
    return Usd.SchemaRegistry().FindConcretePrimDefinition(_PROBE_TYPE) is not None


def register() -> Path:
    """Register the plugin once; raise SchemaRegistrationError with a remedy on failure."""
    claims = _foreign_claims(CLASHING_IDENTIFIER)
    if claims:  # check before registering: never leave a half-registered state
        raise SchemaRegistrationError(_clash_message(claims))
    path = plugin_path()
    Plug.Registry().RegisterPlugins([str(path)])
    ensure_registered()
    return path


def ensure_registered() -> None:
    """Fail with a clear remedy unless USD's schema registry holds our schemas, unclashed."""
    claims = _foreign_claims(CLASHING_IDENTIFIER)
    if claims:
        raise SchemaRegistrationError(_clash_message(claims))
    if not _registry_sees_us():
        raise SchemaRegistrationError(
            "USD's schema registry was built before the usdphys schemas were registered "
            "(something created or opened a USD stage before `import usdphys.usd`), and USD "
            "cannot rebuild it in a running process. Import usdphys.usd before using pxr.Usd, "
            f"or start Python with PXR_PLUGINPATH_NAME={plugin_path()}"
        )
