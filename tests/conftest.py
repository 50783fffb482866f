"""Test tree setup. The tests live in sub-folders that mirror the package (usd/, solver/,
converters/) but share `sim_helpers` and the NumPy `reference` package at this level: put this
folder on sys.path so they import by plain name from any depth. Test file basenames stay unique
(the default prepend import mode needs that; there are no __init__.py files in test folders,
which would otherwise turn `tests/usd` into a top-level package named `usd`)."""
from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
