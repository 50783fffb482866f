"""Regenerate the codeless schema plugin (plugin/) and the Python tokens module
(usdphys/usd/tokens.py) from schemas/schema.usda.

Runs the usdGenSchema that ships inside usd-core (needs jinja2: `pip install -e .[dev]`)
into a folder, then fills the @PLUG_INFO_*@ placeholders that usdGenSchema leaves for a
build system: left in place, USD silently drops the whole plugin.

    python -m usdphys.usd.schemagen            # rewrite plugin/ in this checkout
    python -m usdphys.usd.schemagen --out DIR  # write elsewhere (the staleness test does this)
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_SOURCE = REPO_ROOT / "schemas" / "schema.usda"
PLUGIN_DIR = REPO_ROOT / "plugin"
# plugin/ has every schema (the usdview folder); plugin/without_newton_joint/ has all but our
# NewtonJointAPI, for processes where newton-usd-schemas' scalar NewtonJointAPI is registered
# (USD holds one schema per identifier per process). Paths relative to the output folder.
WITHOUT_NEWTON_JOINT = "without_newton_joint"
_BASE_FILES = ("plugInfo.json", "generatedSchema.usda")
GENERATED_FILES = _BASE_FILES + tuple(f"{WITHOUT_NEWTON_JOINT}/{n}" for n in _BASE_FILES)
NEWTON_JOINT_API = "NewtonJointAPI"
TOKENS_MODULE = REPO_ROOT / "usdphys" / "usd" / "tokens.py"

# Codeless plugin: no library to load; resources sit next to plugInfo.json.
_PLACEHOLDERS = {
    "@PLUG_INFO_LIBRARY_PATH@": "",
    "@PLUG_INFO_RESOURCE_PATH@": ".",
    "@PLUG_INFO_ROOT@": ".",
}


def generate(out_dir: Path, schema: Path = SCHEMA_SOURCE) -> list[Path]:
    """Generate plugInfo.json and generatedSchema.usda into out_dir, and the same without
    NewtonJointAPI into out_dir/without_newton_joint; return their paths."""
    from pxr import Sdf

    written = _generate_one(Path(out_dir), schema)
    with tempfile.TemporaryDirectory() as tmp:
        layer = Sdf.Layer.FindOrOpen(str(schema))
        filtered = Sdf.Layer.CreateAnonymous(".usda")
        filtered.TransferContent(layer)
        del filtered.rootPrims[NEWTON_JOINT_API]
        source = Path(tmp) / "schema.usda"
        filtered.Export(str(source))
        written += _generate_one(Path(out_dir) / WITHOUT_NEWTON_JOINT, source)
    return written


def _generate_one(out_dir: Path, schema: Path) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pxr.Usd.usdGenSchema", str(schema), tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"usdGenSchema failed on {schema} (is jinja2 installed? pip install -e .[dev]):\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        written = []
        for name in _BASE_FILES:
            text = (Path(tmp) / name).read_text()
            for key, value in _PLACEHOLDERS.items():
                text = text.replace(key, value)
            if "@PLUG_INFO_" in text:
                raise RuntimeError(f"unfilled @PLUG_INFO_*@ placeholder left in {name}")
            target = out_dir / name
            target.write_text(text)
            written.append(target)
    return written


def token_identifier(name: str) -> str:
    """usdGenSchema's token naming: namespaces joined in camelCase (mbd:function:type ->
    mbdFunctionType); characters that cannot stand in a Python name become '_'."""
    parts = name.split(":")
    ident = parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in ident)
    return ident if ident[:1].isalpha() else "_" + ident


def tokens_source(generated_schema: Path) -> str:
    """The text of usdphys/usd/tokens.py for a generatedSchema.usda: every schema type name,
    property name and allowed token value of the plugin, as class attributes of Tokens."""
    from pxr import Sdf

    layer = Sdf.Layer.FindOrOpen(str(generated_schema))
    names: dict[str, str] = {}

    def add(value: str) -> None:
        ident = token_identifier(value)
        if names.setdefault(ident, value) != value:
            raise RuntimeError(f"tokens {names[ident]!r} and {value!r} map to the same name {ident!r}")

    for prim in layer.rootPrims:
        if prim.name == "GLOBAL":
            continue
        add(prim.name)
        for prop in prim.properties:
            add(prop.name)
            for token in (prop.GetInfo("allowedTokens") if prop.HasInfo("allowedTokens") else []) or []:
                add(str(token))
    lines = [
        '"""Schema type names, property names and allowed token values of the usdphys plugin.',
        "",
        "Generated from schemas/schema.usda by `python -m usdphys.usd.schemagen`; do not edit",
        "(tests/usd/test_plugin.py fails when it is stale). Named like usdGenSchema's C++ tokens:",
        "namespaces joined in camelCase, e.g. Tokens.mbdRestLength == \"mbd:restLength\".",
        '"""',
        "",
        "",
        "class Tokens:",
    ]
    lines += [f"    {ident} = {value!r}" for ident, value in sorted(names.items(), key=lambda kv: kv[0].lower())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PLUGIN_DIR, help="output folder (default: plugin/)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"wrote {path}")
    if args.out == PLUGIN_DIR:
        TOKENS_MODULE.write_text(tokens_source(PLUGIN_DIR / "generatedSchema.usda"))
        print(f"wrote {TOKENS_MODULE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
