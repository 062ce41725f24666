"""MCP tools as endpoint specs: a tool's input schema becomes typed parameters.

An MCP tool then goes wherever an HTTP endpoint goes: the call checks and
their corrective feedback, the schema the model reads, the registry's search,
the trace. Its spec names the server in ``source`` (``kind="mcp"``, ``file``
the command or URL), so a spec alone says how to reach its tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, get_args

from aah.mcp.servers import MCP_URL_SCHEME, McpServer
from aah.storable import storable
from aah.tools import (
    EndpointSource,
    EndpointSpec,
    JsonType,
    ParameterSpec,
    ParamLocation,
    qualified_name,
)

_JSON_TYPES: frozenset[str] = frozenset(get_args(JsonType))


def tool_spec(server: McpServer, tool: Mapping[str, Any]) -> EndpointSpec:
    """One MCP tool (as ``list_tools`` describes it, in JSON form) as a spec.

    A server's text is made storable first (a lone surrogate or NUL in a name
    or schema becomes U+FFFD), as for any spec file.
    """
    tool = storable(dict(tool))
    name = str(tool.get("name") or "")
    schema = tool.get("inputSchema") or tool.get("input_schema") or {}
    description = str(tool.get("description") or tool.get("title") or "")
    return EndpointSpec(
        tool=server.name,
        category="MCP",
        name=name,
        qualified_name=qualified_name(server.name, name),
        description=description,
        method="POST",
        url_template=f"{MCP_URL_SCHEME}://{server.name}/{name}",
        parameters=parameters(schema if isinstance(schema, Mapping) else {}),
        source=EndpointSource(kind="mcp", file=server.target, id=name),
    )


def tool_specs(server: McpServer, tools: Iterable[Mapping[str, Any]]) -> list[EndpointSpec]:
    """Every named tool of ``server`` as a spec, in the server's order."""
    return [tool_spec(server, tool) for tool in tools if tool.get("name")]


def parameters(schema: Mapping[str, Any]) -> list[ParameterSpec]:
    """The top-level properties of a JSON schema as typed parameters."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return [
        _parameter(str(name), prop if isinstance(prop, Mapping) else {}, str(name) in needed)
        for name, prop in properties.items()
    ]


def parameters_of(arguments: Mapping[str, Any]) -> list[ParameterSpec]:
    """Parameters read off proposed arguments, for a call whose tool's schema is unknown.

    Each argument becomes an optional parameter of its value's JSON type, so
    a person editing the call may change values and drop arguments, and an
    edit of the wrong type is refused as it would be against a schema.
    """
    return [
        ParameterSpec(
            name=str(name),
            type=_type_of(value),
            required=False,
            location=ParamLocation.BODY,
        )
        for name, value in arguments.items()
    ]


def _type_of(value: Any) -> JsonType:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "string"


def _parameter(name: str, prop: Mapping[str, Any], required: bool) -> ParameterSpec:
    json_type = _json_type(prop)
    items = prop.get("items")
    items_type = _json_type(items) if json_type == "array" and isinstance(items, Mapping) else None
    enum = prop.get("enum")
    return ParameterSpec(
        name=name,
        type=json_type,
        required=required,
        default=prop.get("default"),
        description=str(prop.get("description") or prop.get("title") or ""),
        location=ParamLocation.BODY,
        items_type=items_type,
        enum=list(enum) if isinstance(enum, list) and enum else None,
    )


def _json_type(prop: Mapping[str, Any]) -> JsonType:
    """The property's JSON type; ``["x", "null"]`` and ``anyOf`` give their first real one."""
    found: list[Any] = []
    declared = prop.get("type")
    found += declared if isinstance(declared, list) else [declared]
    for key in ("anyOf", "oneOf"):
        options = prop.get(key)
        if isinstance(options, list):
            found += [o.get("type") for o in options if isinstance(o, Mapping)]
    for candidate in found:
        if isinstance(candidate, str) and candidate in _JSON_TYPES:
            return candidate  # type: ignore[return-value]
    if "properties" in prop:
        return "object"
    return "string"
