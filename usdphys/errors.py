"""User-facing errors and warnings.

UsdphysError carries a message meant for a person (file, line or prim path, field, what
was expected); the CLI prints it without a traceback and exits 1. Anything else escaping
is a bug in usdphys and keeps its traceback.
"""
from __future__ import annotations

import logging

logger = logging.getLogger("usdphys")


class UsdphysError(Exception):
    """Bad input or an impossible request, explained in the message."""


_quiet = 0


def warn(message: str) -> None:
    """One warning line for the user (stderr through logging in the CLI)."""
    if not _quiet:
        logger.warning(message)


class quiet:
    """Context manager: no warnings inside (work that repeats what already warned once)."""

    def __enter__(self):
        global _quiet
        _quiet += 1

    def __exit__(self, *exc):
        global _quiet
        _quiet -= 1
        return False
