"""Lazy public names for a package (PEP 562).

A package's ``__init__`` lists where each public name lives; the module is
imported on first use. Importing one light module of a package (say, the
registry for ``aah tools search``) then does not load its heavy neighbours.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def load_module(name: str) -> ModuleType:
    """The module ``name``, imported on the interpreter's own import path.

    ``importlib.import_module`` loads it too, but ``python -X importtime``
    then counts its time as its importer's own (perf/startup.py's profile).
    """
    __import__(name)
    return sys.modules[name]


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``where[name]`` and returns ``name`` from it."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's own name
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(load_module(module), name)

    return __getattr__
