"""The compiled tool registry: build it, read and search it (BM25 + dense), probe its endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.tools.registry.added import added_path, load_added, save_added
    from aah.tools.registry.build import BuildReport, build_registry
    from aah.tools.registry.dense import dense_available
    from aah.tools.registry.health import probe_endpoints
    from aah.tools.registry.opening import open_registry
    from aah.tools.registry.read import Registry, SearchHit

__all__ = [
    "BuildReport",
    "Registry",
    "SearchHit",
    "added_path",
    "build_registry",
    "load_added",
    "open_registry",
    "dense_available",
    "probe_endpoints",
    "save_added",
]

_WHERE = {
    "BuildReport": "aah.tools.registry.build",
    "Registry": "aah.tools.registry.read",
    "SearchHit": "aah.tools.registry.read",
    "build_registry": "aah.tools.registry.build",
    "open_registry": "aah.tools.registry.opening",
    "added_path": "aah.tools.registry.added",
    "load_added": "aah.tools.registry.added",
    "save_added": "aah.tools.registry.added",
    "dense_available": "aah.tools.registry.dense",
    "probe_endpoints": "aah.tools.registry.health",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
