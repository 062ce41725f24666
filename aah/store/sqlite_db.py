"""sqlite-utils' ``Database``, imported without its optional pandas and numpy.

sqlite-utils imports pandas and numpy whenever they are installed, only to map
their scalar types to SQLite column types. aah never stores such values, and
those two imports cost 0.3-0.4 s at the start of every command that opens the
session store (pandas arrives with the ``ui`` extra, through Gradio). They are
hidden while sqlite-utils loads and restored right after, so code that wants
pandas later still gets it.
"""

from __future__ import annotations

import sys
from typing import Any

_OPTIONAL = ("pandas", "numpy")
_MISSING = object()


def _load_sqlite_utils() -> Any:
    if "sqlite_utils.db" in sys.modules:
        return sys.modules["sqlite_utils"]
    saved = {name: sys.modules.get(name, _MISSING) for name in _OPTIONAL}
    for name, module in saved.items():
        if module is _MISSING:
            sys.modules[name] = None  # type: ignore[assignment]  # makes the import fail fast
    try:
        import sqlite_utils
    finally:
        for name, module in saved.items():
            if module is _MISSING:
                del sys.modules[name]
    return sqlite_utils


Database = _load_sqlite_utils().Database

__all__ = ["Database"]
