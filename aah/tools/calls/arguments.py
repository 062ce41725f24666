"""Arguments models generated from an endpoint's parameters (no per-tool code)."""

from __future__ import annotations

import json
import keyword
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from aah.tools.spec import JsonType, ParameterSpec

_PYTHON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict[str, Any],
}
_NOT_IDENTIFIER = re.compile(r"\W")


def python_type(json_type: JsonType, items_type: JsonType | None = None) -> Any:
    """The Python annotation for a JSON-schema type (arrays typed by items)."""
    if json_type == "array":
        item = _PYTHON_TYPES.get(items_type or "", Any)
        return list[item]  # type: ignore[valid-type]
    return _PYTHON_TYPES[json_type]


def field_name(name: str) -> str:
    """A valid, non-private Python identifier for a parameter name.

    Source names such as ``post-title``, ``from`` or ``2fa`` become aliases of
    a safe field name; the model still reads and writes the source name.
    """
    safe = _NOT_IDENTIFIER.sub("_", name)
    if not safe or safe[0].isdigit() or safe.startswith("_") or keyword.iskeyword(safe):
        safe = f"p_{safe.lstrip('_')}"
    if safe in BaseModel.__dict__ or safe.startswith("model_"):
        safe = f"p_{safe}"
    return safe


def _field(param: ParameterSpec) -> tuple[Any, Any]:
    annotation = python_type(param.type, param.items_type)
    description = param.description or param.name
    extra: dict[str, Any] = {}
    if param.enum:
        extra["enum"] = param.enum
    if param.required:
        if param.default not in (None, ""):
            description = f"{description} (e.g. {param.default})"
        info = Field(alias=param.name, description=description, json_schema_extra=extra or None)
        return annotation, info
    # Optional values are sent only when the model gives them; the source's
    # default is shown so the model knows what the API assumes.
    if param.default not in (None, ""):
        extra["default"] = param.default
    info = Field(
        default=None, alias=param.name, description=description, json_schema_extra=extra or None
    )
    return annotation | None, info


def arguments_model(model_name: str, parameters: list[ParameterSpec]) -> type[BaseModel]:
    """A pydantic model whose fields are ``parameters`` (aliased to source names).

    Unknown arguments are rejected (``extra="forbid"``), so a misspelled
    argument is an error rather than silently ignored. Models are cached by
    name and parameters: every session offering an endpoint shares its model.
    """
    key = json.dumps([p.model_dump(mode="json") for p in parameters], sort_keys=True)
    return _cached_model(model_name, key)


@lru_cache(maxsize=4096)
def _cached_model(model_name: str, parameters_json: str) -> type[BaseModel]:
    parameters = [ParameterSpec.model_validate(p) for p in json.loads(parameters_json)]
    fields: dict[str, Any] = {}
    taken: set[str] = set()
    for param in parameters:
        name = field_name(param.name)
        while name in taken:
            name += "_"
        taken.add(name)
        fields[name] = _field(param)
    config = ConfigDict(extra="forbid", populate_by_name=True)
    return create_model(model_name, __config__=config, **fields)


def parameters_schema(parameters: list[ParameterSpec]) -> dict[str, Any]:
    """The compact JSON schema the model sees for a tool's arguments.

    Written by hand rather than taken from the pydantic model: it carries no
    ``anyOf: null`` noise, which matters when hundreds of tools are offered.
    """
    properties: dict[str, Any] = {}
    for param in parameters:
        # A parameter's own schema carries what the flat fields cannot (nested
        # properties, item objects, inner required lists and enums); the flat
        # fields still decide its type, description, enum and default.
        whole = {k: v for k, v in (param.json_schema or {}).items() if k != "default"}
        prop: dict[str, Any] = {**whole, "type": param.type}
        if param.type == "array" and not isinstance(whole.get("items"), dict):
            prop["items"] = {"type": param.items_type} if param.items_type else {}
        if param.description:
            prop["description"] = param.description
        if param.enum:
            prop["enum"] = param.enum
        if param.default not in (None, ""):
            prop["default" if not param.required else "examples"] = (
                param.default if not param.required else [param.default]
            )
        properties[param.name] = prop
    required = [p.name for p in parameters if p.required]
    return {"type": "object", "properties": properties, "required": required}
