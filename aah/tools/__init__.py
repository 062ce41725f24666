"""The tool layer: endpoint specs, the builtin ask_human, tool prompts.

Its subpackages export their own names: ``aah.tools.importers``,
``aah.tools.registry``, ``aah.tools.http`` (execution) and ``aah.tools.calls`` (checks).

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
    from aah.tools.prompts import tool_prompt, tool_prompt_versions
    from aah.tools.spec import (
        NAME_SEPARATOR,
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
    "EndpointSource",
    "EndpointSpec",
    "HttpMethod",
    "NAME_SEPARATOR",
    "ImportResult",
    "JsonType",
    "ParamLocation",
    "ParameterSpec",
    "Rejection",
    "ResponseSketch",
    "qualified_name",
    "tool_prompt",
    "tool_prompt_versions",
]


_WHERE = {
    "ASK_HUMAN_PARAMETERS": "builtin",
    "ASK_HUMAN": "builtin",
    "BUILTIN_TOOLS": "builtin",
    "FIND_TOOLS": "builtin",
    "FIND_TOOLS_PARAMETERS": "builtin",
    "EndpointSource": "spec",
    "EndpointSpec": "spec",
    "HttpMethod": "spec",
    "NAME_SEPARATOR": "spec",
    "ImportResult": "spec",
    "JsonType": "spec",
    "ParameterSpec": "spec",
    "ParamLocation": "spec",
    "Rejection": "spec",
    "ResponseSketch": "spec",
    "tool_prompt": "prompts",
    "tool_prompt_versions": "prompts",
    "qualified_name": "spec",
}


__getattr__ = lazy_getattr(
    __name__, {name: f"aah.tools.{module}" for name, module in _WHERE.items()}
)
