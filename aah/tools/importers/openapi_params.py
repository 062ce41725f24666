"""Parameters of one OpenAPI 3 / Swagger 2 operation as ``ParameterSpec``s."""

from __future__ import annotations

import re
from typing import Any

from aah.tools.importers.openapi_refs import RefError, deref
from aah.tools.spec import (
    BodyEncoding,
    JsonType,
    ParameterSpec,
    ParamLocation,
    header_is_sendable,
)

_LOCATIONS = {
    "path": ParamLocation.PATH,
    "query": ParamLocation.QUERY,
    "header": ParamLocation.HEADER,
    "formData": ParamLocation.BODY,
}
_JSON_TYPES: dict[str, JsonType] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "file": "string",
}
# Headers the HTTP layer sets itself, or that carry credentials.
_RESERVED_HEADERS = frozenset({"accept", "content-type", "authorization", "cookie"})
_BODY_MEDIA_TYPES = (
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
)
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class OperationError(ValueError):
    """An operation that cannot become an endpoint; the message says why."""


def operation_parameters(
    raw: dict[str, Any],
    route: str,
    path_item: dict[str, Any],
    operation: dict[str, Any],
    swagger2: bool,
    repairs: list[str],
) -> list[ParameterSpec]:
    """All parameters of an operation: path-level merged with its own, plus body.

    Args:
        raw: the whole document, for ``$ref`` resolution.
        route: the operation's path (``/books/{id}``).
        path_item: the path's mapping (holds path-level parameters).
        operation: the operation's mapping.
        swagger2: whether the document is Swagger 2.0.
        repairs: where notes on repairs are appended.

    Raises:
        OperationError: a parameter or the request body cannot be represented.
        RefError: a ``$ref`` cannot be followed.
    """
    parameters: list[ParameterSpec] = []
    secret_headers = auth_headers(raw)
    for param in _merged(raw, path_item, operation):
        parameters.extend(_from_parameter(raw, param, secret_headers, repairs))
    if not swagger2:
        parameters.extend(_request_body(raw, operation.get("requestBody"), repairs))
    return _match_route(route, parameters, repairs)


def auth_headers(raw: dict[str, Any]) -> set[str]:
    """Lower-cased header names that the document's API-key schemes use."""
    components = raw.get("components")
    schemes = components.get("securitySchemes") if isinstance(components, dict) else None
    schemes = schemes if isinstance(schemes, dict) else raw.get("securityDefinitions")
    names: set[str] = set()
    for scheme in (schemes or {}).values() if isinstance(schemes, dict) else []:
        scheme = deref(raw, scheme)
        if isinstance(scheme, dict) and scheme.get("in") == "header":
            names.add(str(scheme.get("name", "")).lower())
    return names


def _merged(
    raw: dict[str, Any], path_item: dict[str, Any], operation: dict[str, Any]
) -> list[dict[str, Any]]:
    # An operation's parameter replaces the path-level one with the same
    # name and location.
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for where, listed in (
        ("path", path_item.get("parameters")),
        ("operation", operation.get("parameters")),
    ):
        if listed is None:
            continue
        if not isinstance(listed, list):
            raise OperationError(f"the {where}'s 'parameters' is not a list")
        for item in listed:
            param = deref(raw, item)
            if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                raise OperationError("a parameter has no name")
            merged[(param["name"], str(param.get("in")))] = param
    return list(merged.values())


def _from_parameter(
    raw: dict[str, Any], param: dict[str, Any], secret_headers: set[str], repairs: list[str]
) -> list[ParameterSpec]:
    name, where = param["name"], param.get("in")
    if where == "body":
        return _object_properties(raw, param.get("schema"), "body parameter")
    if where == "header" and not header_is_sendable(name):
        repairs.append(
            f"header {name!r} left out: the host and connection headers are the HTTP layer's"
        )
        return []
    if where == "header" and name.lower() in _RESERVED_HEADERS | secret_headers:
        repairs.append(f"header {name!r} left out: aah sets it or it carries credentials")
        return []
    location = _LOCATIONS.get(str(where))
    if location is None:
        if param.get("required"):
            raise OperationError(f"required {where} parameter {name!r} is not supported")
        repairs.append(f"optional {where} parameter {name!r} left out: not supported")
        return []
    # OpenAPI 3 types a parameter by its schema; Swagger 2 inline.
    schema = param.get("schema") if "schema" in param else param
    return [
        typed_parameter(
            raw,
            name,
            schema,
            required=bool(param.get("required")) or location == ParamLocation.PATH,
            location=location,
            description=param.get("description"),
        )
    ]


def typed_parameter(
    raw: dict[str, Any],
    name: str,
    schema: Any,
    required: bool,
    location: ParamLocation,
    description: Any = None,
) -> ParameterSpec:
    """A parameter typed from its (possibly referenced) JSON schema."""
    schema = deref(raw, schema)
    schema = schema if isinstance(schema, dict) else {}
    json_type = schema_type(raw, schema)
    items = deref(raw, schema.get("items")) if json_type == "array" else None
    enum = schema.get("enum")
    text = description if isinstance(description, str) else schema.get("description")
    return ParameterSpec(
        name=name,
        type=json_type,
        items_type=schema_type(raw, items) if isinstance(items, dict) else None,
        required=required,
        default=schema.get("default"),
        description=text.strip() if isinstance(text, str) else "",
        location=location,
        enum=enum if isinstance(enum, list) else None,
    )


def schema_type(raw: dict[str, Any], schema: dict[str, Any]) -> JsonType:
    """The JSON type a schema describes, guessed from its shape when untyped.

    Raises:
        RefError: an untyped schema's first ``allOf``/``oneOf``/``anyOf``
            member leads back to the schema itself.
    """
    return _schema_type(raw, schema, set())


def _schema_type(raw: dict[str, Any], schema: dict[str, Any], seen: set[int]) -> JsonType:
    if id(schema) in seen:
        raise RefError("a schema's allOf/oneOf/anyOf refers back to the schema itself")
    seen.add(id(schema))
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), None)
    if isinstance(declared, str) and declared in _JSON_TYPES:
        return _JSON_TYPES[declared]
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    for combined in ("allOf", "oneOf", "anyOf"):
        members = schema.get(combined)
        if isinstance(members, list) and members:
            first = deref(raw, members[0])
            return _schema_type(raw, first, seen) if isinstance(first, dict) else "string"
    return "string"


_FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def body_encoding(raw: dict[str, Any], operation: dict[str, Any], swagger2: bool) -> BodyEncoding:
    """``form`` when the operation's body is HTML-form fields, else ``json``."""
    if swagger2:
        consumes = operation.get("consumes") or raw.get("consumes") or []
        has_form = any(
            p.get("in") == "formData"
            for p in operation.get("parameters") or []
            if isinstance(p, dict)
        )
        return "form" if has_form or any(m in _FORM_MEDIA_TYPES for m in consumes) else "json"
    body = deref(raw, operation.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, dict) or "application/json" in content:
        return "json"
    return "form" if any(m in content for m in _FORM_MEDIA_TYPES) else "json"


def _request_body(raw: dict[str, Any], body: Any, repairs: list[str]) -> list[ParameterSpec]:
    body = deref(raw, body)
    if not isinstance(body, dict) or not isinstance(body.get("content"), dict):
        return []
    content: dict[str, Any] = body["content"]
    media_type = next((m for m in _BODY_MEDIA_TYPES if m in content), None)
    media_type = media_type or next((m for m in content if "json" in m), None)
    if media_type is None:
        raise OperationError(f"request body type {', '.join(content)} is not supported")
    if media_type != "application/json":
        repairs.append(f"request body {media_type!r} read as body parameters")
    entry = deref(raw, content[media_type])
    schema = entry.get("schema") if isinstance(entry, dict) else None
    return _object_properties(raw, schema, "request body")


def _object_properties(raw: dict[str, Any], schema: Any, what: str) -> list[ParameterSpec]:
    schema = deref(raw, schema)
    properties: dict[str, Any] = {}
    required: set[str] = set()
    # allOf members of an object body each add properties.
    parts = [schema, *(schema.get("allOf") or [])] if isinstance(schema, dict) else []
    for part in (deref(raw, p) for p in parts):
        if isinstance(part, dict) and isinstance(part.get("properties"), dict):
            properties.update(part["properties"])
            required.update(str(n) for n in part.get("required") or [])
    if not properties:
        raise OperationError(f"{what} is not an object with properties")
    return [
        typed_parameter(raw, str(name), prop, str(name) in required, ParamLocation.BODY)
        for name, prop in properties.items()
    ]


def _match_route(
    route: str, parameters: list[ParameterSpec], repairs: list[str]
) -> list[ParameterSpec]:
    placeholders = list(dict.fromkeys(_PLACEHOLDER.findall(route)))
    kept: list[ParameterSpec] = []
    for param in parameters:
        if param.location == ParamLocation.PATH and param.name not in placeholders:
            repairs.append(f"path parameter {param.name!r} dropped: not in the path")
            continue
        kept.append(param)
    declared = {p.name for p in kept if p.location == ParamLocation.PATH}
    for placeholder in placeholders:
        if placeholder not in declared:
            repairs.append(
                f"parameter {placeholder!r} declared: path placeholder missing from parameters"
            )
            kept.append(ParameterSpec(name=placeholder, required=True, location=ParamLocation.PATH))
    return kept
