"""When2Call's BFCL function schemas as tool specs, and their names made valid.

A When2Call question offers BFCL function schemas: ``name`` (often dotted,
``api_token_api.APITokenApi.get_api_tokens``), ``description`` and
``parameters`` with BFCL's type spellings (``dict``, ``float``, ``any``...).
``json_schema`` maps them to JSON Schema; ``endpoint_spec`` makes the one
tool spec every aah session offers.

OpenAI-style tool names must match ``^[a-zA-Z0-9_-]{1,64}$``. BFCL names use
the same characters plus dots, so ``tool_name`` writes each dot as ``-`` (no
BFCL name holds a ``-``, and the length stays the same) and
``original_tool_name`` turns it back. A name this cannot carry reversibly
(one with a ``-`` or another character, or longer than 64) is refused: the
mapping must never merge two tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from aah.errors import AahError
from aah.tools import EndpointSource, EndpointSpec, ParameterSpec, ParamLocation

# aah's parameter types (``aah.tools.ParameterSpec.type``).
JsonType = Literal["string", "integer", "number", "boolean", "array", "object"]
VALID_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BFCL_NAME = re.compile(r"^[a-zA-Z0-9_.]{1,64}$")
# The host of a When2Call tool's URL: reserved (RFC 2606), so it is never called.
TOOL_HOST = "when2call.invalid"
# BFCL's type words -> JSON Schema types; ``any`` means no type constraint.
BFCL_TYPES: dict[str, JsonType | None] = {
    "dict": "object",
    "object": "object",
    "float": "number",
    "number": "number",
    "integer": "integer",
    "int": "integer",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "string": "string",
    "str": "string",
    "any": None,
}


class When2CallTool(BaseModel):
    """One tool a When2Call question offers.

    Attributes:
        name: The valid tool name the model sees (see ``tool_name``).
        original: The BFCL name, as published.
        description: What the function does.
        parameters: Its arguments as a JSON Schema object.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    original: str
    description: str
    parameters: dict[str, Any]


def tool_name(original: str) -> str:
    """The valid tool name of a BFCL function name: each dot becomes ``-``.

    Raises:
        AahError: ``original`` has a character other than letters, digits,
            ``_`` and ``.``, or is longer than 64: no reversible name exists.
    """
    if not _BFCL_NAME.match(original):
        raise AahError(
            f"tool name {original!r} cannot be mapped reversibly to a valid tool name "
            "(letters, digits, _ and . only, at most 64): fix the data file"
        )
    return original.replace(".", "-")


def original_tool_name(name: str) -> str:
    """The BFCL name a valid tool name was made from (the inverse of ``tool_name``)."""
    return name.replace("-", ".")


def json_schema(schema: Mapping[str, Any], where: str = "parameters") -> dict[str, Any]:
    """A BFCL parameter schema in JSON Schema: types mapped, nested ones too.

    ``dict`` is ``object``, ``float`` is ``number``, ``tuple`` is an array,
    ``any`` drops the type; descriptions, enums, defaults, ``required``,
    ``properties`` and ``items`` are kept (mapped in turn).

    Raises:
        AahError: a type word BFCL does not use, or a part that is not an object.
    """
    if not isinstance(schema, Mapping):
        raise AahError(f"{where}: a schema must be a JSON object: fix the data file")
    mapped: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            words = value if isinstance(value, list) else [value]
            if not all(isinstance(w, str) and w.lower() in BFCL_TYPES for w in words):
                raise AahError(
                    f"{where}: unknown type {value!r}: use one of {', '.join(BFCL_TYPES)}"
                )
            types = [BFCL_TYPES[w.lower()] for w in words]
            if None not in types:
                mapped["type"] = types[0] if len(types) == 1 else list(dict.fromkeys(types))
        elif key == "properties" and isinstance(value, Mapping):
            mapped["properties"] = {
                name: json_schema(inner, f"{where}.{name}") for name, inner in value.items()
            }
        elif key == "items":
            mapped["items"] = json_schema(value, f"{where}[]")
        else:
            mapped[key] = value
    return mapped


def parse_tool(text: str, where: str) -> When2CallTool:
    """One tool of a question from its published JSON string (see ``function_tool``).

    Raises:
        AahError: the text is not a BFCL function schema.
    """
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise AahError(f"{where}: a tool is not JSON ({exc}): fetch the data again") from exc
    return function_tool(raw, where)


def function_tool(raw: Any, where: str) -> When2CallTool:
    """One BFCL function schema as a tool: a valid name, its parameters in JSON Schema.

    The one conversion of a BFCL function, for When2Call's tools and BFCL's
    own items alike.

    Raises:
        AahError: not a function schema, or a name that cannot be mapped reversibly.
    """
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise AahError(f"{where}: a function needs a string 'name': fix the data file")
    name = raw["name"]
    parameters = json_schema(raw.get("parameters") or {"type": "dict"}, f"{where}:{name}")
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    try:
        valid = tool_name(name)
    except AahError as exc:
        raise AahError(f"{where}: {exc}") from exc
    return When2CallTool(
        name=valid,
        original=name,
        description=str(raw.get("description") or ""),
        parameters=parameters,
    )


def endpoint_spec(tool: When2CallTool) -> EndpointSpec:
    """The tool spec a session offers for ``tool``.

    An aah parameter has one JSON type, so an untyped (``any``) parameter is
    offered as a string; a parameter with inner structure (an object's
    properties, an array's items beyond a bare type, at any depth) carries its
    whole schema, so the model sees every inner field, enum and required
    list. The URL's host is reserved and never called: a When2Call run
    answers calls with a neutral result (``NeutralExecutor``).
    """
    required = set(tool.parameters.get("required") or [])
    parameters = [
        _parameter(name, schema, name in required)
        for name, schema in (tool.parameters.get("properties") or {}).items()
    ]
    return EndpointSpec(
        tool=tool.original,
        category="When2Call",
        name=tool.name,
        qualified_name=tool.name,
        description=tool.description,
        method="POST",
        url_template=f"https://{TOOL_HOST}/{tool.name}",
        parameters=parameters,
        source=EndpointSource(kind="builtin", file="when2call", id=tool.original),
    )


def _parameter(name: str, schema: Mapping[str, Any], required: bool) -> ParameterSpec:
    items = schema.get("items")
    enum = schema.get("enum")
    return ParameterSpec(
        name=name,
        type=_json_type(schema.get("type")) or "string",
        required=required,
        default=schema.get("default"),
        description=str(schema.get("description") or ""),
        location=ParamLocation.BODY,
        items_type=_json_type(items.get("type")) if isinstance(items, Mapping) else None,
        enum=list(enum) if isinstance(enum, list) and enum else None,
        json_schema=dict(schema) if _has_structure(schema) else None,
    )


def _has_structure(schema: Mapping[str, Any]) -> bool:
    """Whether a parameter's schema holds more than the flat parameter fields carry."""
    items = schema.get("items")
    if isinstance(items, Mapping) and set(items) - {"type"}:
        return True
    return any(key not in _FLAT_KEYS for key in schema)


# What ``ParameterSpec``'s own fields carry of a parameter's schema.
_FLAT_KEYS = frozenset({"type", "description", "default", "enum", "items"})


def _json_type(value: Any) -> JsonType | None:
    """The one JSON type of a mapped schema; None for no type or a list of types."""
    return next((json_type for json_type in _JSON_TYPES if value == json_type), None)


_JSON_TYPES: tuple[JsonType, ...] = ("string", "integer", "number", "boolean", "array", "object")
