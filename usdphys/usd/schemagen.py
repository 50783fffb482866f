"""Regenerate the codeless schema plugin (plugin/) from schemas/schema.usda.

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
GENERATED_FILES = ("plugInfo.json", "generatedSchema.usda")

# Codeless plugin: no library to load; resources sit next to plugInfo.json.
_PLACEHOLDERS = {
    "@PLUG_INFO_LIBRARY_PATH@": "",
    "@PLUG_INFO_RESOURCE_PATH@": ".",
    "@PLUG_INFO_ROOT@": ".",
}


def generate(out_dir: Path, schema: Path = SCHEMA_SOURCE) -> list[Path]:
    """Generate plugInfo.json and generatedSchema.usda into out_dir; return their paths."""
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
        for name in GENERATED_FILES:
            text = (Path(tmp) / name).read_text()
            for key, value in _PLACEHOLDERS.items():
                text = text.replace(key, value)
            if "@PLUG_INFO_" in text:
                raise RuntimeError(f"unfilled @PLUG_INFO_*@ placeholder left in {name}")
            target = out_dir / name
            target.write_text(text)
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PLUGIN_DIR, help="output folder (default: plugin/)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
