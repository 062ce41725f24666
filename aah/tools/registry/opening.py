"""Open the tool registry a command uses, building it first when it is missing or stale."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from aah.tools.registry.read import Registry


def open_registry(
    data: Path | None = None,
    *,
    build_if_missing: bool = False,
    on_build: Callable[[], None] | None = None,
) -> Registry:
    """The registry named by ``AAH_REGISTRY`` or the default path.

    With ``build_if_missing`` a missing registry (or one older than this
    install's search index) is built first from the discovered data (or
    ``data``), so a first run needs no separate step; ``on_build`` is told
    before the build starts.

    Raises:
        AahError: ``data`` names no data directory (checked even when the
            registry is already built: a mistyped ``--data`` is never ignored).
    """
    from aah.config import get_settings, project_root
    from aah.data import find_data_dir

    path = get_settings().registry_path()
    if data is not None:
        find_data_dir(data)
    if build_if_missing and (not path.is_file() or _stale(path)):
        from aah.tools.registry.build import build_registry

        data_dir = find_data_dir(data)
        if on_build is not None:
            on_build()
        build_registry(data_dir, path, project_root() / "tool_registry" / "fixes.yaml")
    return Registry(path)


def _stale(path: Path) -> bool:
    """Whether the registry at ``path`` predates this install's search index."""
    registry = Registry(path)
    try:
        return registry.stale
    except sqlite3.Error:
        return False  # a damaged registry is reported by the command that reads it
    finally:
        registry.close()
