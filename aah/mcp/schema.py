"""MCP tools as endpoint specs: a tool's input schema becomes typed parameters.

An MCP tool then goes wherever an HTTP endpoint goes: the call checks and
their corrective feedback, the schema the model reads, the registry's search,
the trace. Its spec names the server in ``source`` (``kind="mcp"``, ``file``
the command or URL), so a spec alone says how to reach its tool.

A server names its tools and their parameters as it likes, control and
invisible characters included. The model, the trace and every face see one
name, the shown one (:func:`shown_name`), and that is the name a call is
checked against; the server's own name travels in the spec (``source.id``
for a tool, ``source_name`` for a parameter) and is what a call sends. Two
names that show the same are told apart (``_2``), with a note.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, get_args

from aah.mcp.servers import MCP_URL_SCHEME, McpServer
from aah.storable import storable, storable_text
from aah.terminal_text import printable
from aah.tools import (
    EndpointSource,
    EndpointSpec,
    JsonType,
    ParameterSpec,
    ParamLocation,
    qualified_name,
)

_JSON_TYPES: frozenset[str] = frozenset(get_args(JsonType))
# A parameter whose name shows as nothing is offered under this one.
_UNNAMED = "unnamed"


class ToolSpecs(NamedTuple):
    """A server's tools as specs, and a line for each one changed or left out."""

    specs: list[EndpointSpec]
    notes: list[str]


def shown_name(raw: str) -> str:
    """A name from a server as every face shows it and the model reads it.

    Terminal escapes and controls go (as :func:`~aah.terminal_text.printable`
    takes them from any shown text), invisible format characters (zero-width
    spaces and joiners, bidi marks) too, and whitespace runs become one space.
    """
    text = printable(storable_text(raw))
    if not text.isascii():
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def tool_spec(server: McpServer, tool: Mapping[str, Any]) -> EndpointSpec:
    """One MCP tool (as ``list_tools`` describes it, in JSON form) as a spec.

    A server's text is made storable first (a lone surrogate or NUL in a
    schema becomes U+FFFD), as for any spec file. The spec's ``name`` is the
    shown name; ``source.id`` keeps the server's own.
    """
    return _tool_spec(server, tool, shown_name(str(tool.get("name") or "")), [])


def tool_specs(server: McpServer, tools: Iterable[Mapping[str, Any]]) -> list[EndpointSpec]:
    """Every named tool of ``server`` as a spec, in order (see :func:`read_tool_specs`)."""
    return read_tool_specs(server, tools).specs


def read_tool_specs(server: McpServer, tools: Iterable[Mapping[str, Any]]) -> ToolSpecs:
    """``server``'s tools as specs, each offered under a name of its own.

    A tool whose name shows as nothing, or that cannot be called by its own
    name (a NUL in it, which no store keeps), is left out; one whose name
    shows like an earlier one's (``a`` BEL ``b`` and ``ab``) is offered as
    ``ab_2``. Each such change is a note.
    """
    named = [tool for tool in tools if tool.get("name")]
    raws = [str(tool["name"]) for tool in named]
    notes: list[str] = []
    usable: list[int] = []
    for index, raw in enumerate(raws):
        if storable_text(raw) != raw:
            notes.append(f"left out tool {quoted_name(raw)}: a NUL in its name cannot be sent")
        elif not shown_name(raw):
            notes.append(f"left out tool {quoted_name(raw)}: its name shows as nothing")
        else:
            usable.append(index)
    shown = _distinct(
        [raws[i] for i in usable], lambda name: qualified_name(server.name, name), notes, "tool"
    )
    specs = []
    for index, name in zip(usable, shown, strict=True):
        specs.append(_tool_spec(server, named[index], name, notes))
    return ToolSpecs(specs, [f"MCP server {server.name}: {note}" for note in notes])


def _tool_spec(
    server: McpServer, tool: Mapping[str, Any], name: str, notes: list[str]
) -> EndpointSpec:
    raw = storable_text(str(tool.get("name") or ""))  # read_tool_specs leaves unstorable ones out
    tool = storable(dict(tool))
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
        parameters=parameters(schema if isinstance(schema, Mapping) else {}, notes, tool=name),
        source=EndpointSource(kind="mcp", file=server.target, id=raw),
    )


def parameters(
    schema: Mapping[str, Any], notes: list[str] | None = None, *, tool: str = ""
) -> list[ParameterSpec]:
    """The top-level properties of a JSON schema as typed parameters, under their shown names.

    A parameter whose shown name differs from its own keeps its own in
    ``source_name``; names that show alike are told apart (``x_2``), noted in ``notes``.
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    raws = [str(name) for name in properties]
    said: list[str] = []
    shown = _distinct(raws, lambda name: name, said, "parameter")
    if notes is not None:
        notes.extend(f"tool {tool}: {line}" for line in said)
    return [
        _parameter(
            name,
            prop if isinstance(prop, Mapping) else {},
            raw in needed,
            source_name=raw if raw != name else None,
        )
        for raw, name, prop in zip(raws, shown, properties.values(), strict=True)
    ]


def _distinct(
    raws: list[str], compared: Callable[[str], str], notes: list[str], what: str
) -> list[str]:
    """A shown name for each of ``raws``, no two alike once ``compared``.

    A name already clean keeps it whatever its place; of the rest, the first
    keeps its shown name and a later one alike is numbered (``_2``...).
    """
    order = sorted(range(len(raws)), key=lambda i: shown_name(raws[i]) != raws[i])
    taken: set[str] = set()
    names = [""] * len(raws)
    for index in order:
        base = shown_name(raws[index]) or _UNNAMED
        name, count = base, 1
        while compared(name) in taken:
            count += 1
            name = f"{base}_{count}"
        taken.add(compared(name))
        names[index] = name
        if count > 1:
            notes.append(
                f"{what} {quoted_name(raws[index])} shows like another: it is offered as {name!r}"
            )
    return names


def quoted_name(name: str) -> str:
    """A server's name as a note quotes it: escapes spelled out, at most 60 characters."""
    text = ascii(name)
    return text if len(text) <= 60 else text[:57] + "..."


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


def _parameter(
    name: str, prop: Mapping[str, Any], required: bool, *, source_name: str | None = None
) -> ParameterSpec:
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
        source_name=source_name,
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
