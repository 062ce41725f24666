"""The tool layer: endpoint specs, importers, registry, HTTP execution, checks.

Public names load lazily (PEP 562): ``aah tools search`` needs the registry,
not LangChain, and should start in a fraction of a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.tools.builtin import (
        ASK_HUMAN,
        ASK_HUMAN_PARAMETERS,
        BUILTIN_TOOLS,
        FIND_TOOLS,
        FIND_TOOLS_PARAMETERS,
    )
    from aah.tools.calls import CallChecker, CheckResult, wrap_endpoint
    from aah.tools.http import (
        Executor,
        FaultPlan,
        HttpExecutor,
        HttpMode,
        ToolResult,
        make_executor,
    )
    from aah.tools.importers import benchmark_endpoint_name, import_failtalms, import_openapi
    from aah.tools.prompts import tool_prompt, tool_prompt_versions
    from aah.tools.registry import Registry, SearchHit, build_registry
    from aah.tools.spec import (
        EndpointSource,
        EndpointSpec,
        HttpMethod,
        ImportResult,
        JsonType,
        ParameterSpec,
        ParamLocation,
        Rejection,
        ResponseSketch,
        qualified_name,
    )

__all__ = [
    "ASK_HUMAN_PARAMETERS",
    "ASK_HUMAN",
    "BUILTIN_TOOLS",
    "FIND_TOOLS",
    "FIND_TOOLS_PARAMETERS",
    "CallChecker",
    "CheckResult",
    "EndpointSource",
    "EndpointSpec",
    "HttpMethod",
    "Executor",
    "FaultPlan",
    "HttpExecutor",
    "HttpMode",
    "ImportResult",
    "JsonType",
    "ParamLocation",
    "ParameterSpec",
    "Registry",
    "Rejection",
    "ResponseSketch",
    "SearchHit",
    "ToolResult",
    "benchmark_endpoint_name",
    "build_registry",
    "import_failtalms",
    "import_openapi",
    "make_executor",
    "qualified_name",
    "tool_prompt",
    "tool_prompt_versions",
    "wrap_endpoint",
]


_WHERE = {
    "ASK_HUMAN_PARAMETERS": "builtin",
    "ASK_HUMAN": "builtin",
    "BUILTIN_TOOLS": "builtin",
    "FIND_TOOLS": "builtin",
    "FIND_TOOLS_PARAMETERS": "builtin",
    "CallChecker": "calls",
    "CheckResult": "calls",
    "benchmark_endpoint_name": "importers",
    "import_failtalms": "importers",
    "FaultPlan": "http",
    "HttpExecutor": "http",
    "ToolResult": "http",
    "Executor": "http",
    "HttpMode": "http",
    "make_executor": "http",
    "import_openapi": "importers",
    "Registry": "registry",
    "SearchHit": "registry",
    "build_registry": "registry",
    "EndpointSource": "spec",
    "EndpointSpec": "spec",
    "HttpMethod": "spec",
    "ImportResult": "spec",
    "JsonType": "spec",
    "ParameterSpec": "spec",
    "ParamLocation": "spec",
    "Rejection": "spec",
    "ResponseSketch": "spec",
    "tool_prompt": "prompts",
    "tool_prompt_versions": "prompts",
    "qualified_name": "spec",
    "wrap_endpoint": "calls",
}


__getattr__ = lazy_getattr(
    __name__, {name: f"aah.tools.{module}" for name, module in _WHERE.items()}
)
