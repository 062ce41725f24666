"""The compiled tool registry: build it, read and search it (BM25 + dense), probe its endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.tools.registry.build import BuildReport, build_registry
    from aah.tools.registry.dense import dense_available
    from aah.tools.registry.health import probe_endpoints
    from aah.tools.registry.read import Registry, SearchHit

__all__ = [
    "BuildReport",
    "Registry",
    "SearchHit",
    "build_registry",
    "dense_available",
    "probe_endpoints",
]

_WHERE = {
    "BuildReport": "aah.tools.registry.build",
    "Registry": "aah.tools.registry.read",
    "SearchHit": "aah.tools.registry.read",
    "build_registry": "aah.tools.registry.build",
    "dense_available": "aah.tools.registry.dense",
    "probe_endpoints": "aah.tools.registry.health",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
