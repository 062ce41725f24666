"""Source importers: Fail-TaLMs tool files and OpenAPI/Swagger specs, plus project fixes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.tools.importers.failtalms import import_failtalms
    from aah.tools.importers.fixes import apply_fixes, load_fixes
    from aah.tools.importers.loading import DEFAULT_MAX_SPEC_BYTES
    from aah.tools.importers.naming import benchmark_endpoint_name
    from aah.tools.importers.openapi import import_openapi

__all__ = [
    "DEFAULT_MAX_SPEC_BYTES",
    "apply_fixes",
    "benchmark_endpoint_name",
    "import_failtalms",
    "import_openapi",
    "load_fixes",
]

_WHERE = {
    "DEFAULT_MAX_SPEC_BYTES": "aah.tools.importers.loading",
    "apply_fixes": "aah.tools.importers.fixes",
    "benchmark_endpoint_name": "aah.tools.importers.naming",
    "import_failtalms": "aah.tools.importers.failtalms",
    "import_openapi": "aah.tools.importers.openapi",
    "load_fixes": "aah.tools.importers.fixes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
