"""Lazy public names for a package (PEP 562).

A package's ``__init__`` lists where each public name lives; the module is
imported on first use. Importing one light module of a package (say, the
registry for ``aah tools search``) then does not load its heavy neighbours.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``where[name]`` and returns ``name`` from it."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's own name
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # ``__import__`` takes the interpreter's own import path, which
        # ``python -X importtime`` reports (``importlib.import_module`` is not).
        __import__(module)
        return getattr(sys.modules[module], name)

    return __getattr__
