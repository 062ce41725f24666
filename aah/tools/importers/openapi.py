"""Import OpenAPI 3 and Swagger 2 documents as ``EndpointSpec``s.

One file is one tool, named after the file stem before ``__``
(``parliament.uk_members__v1.yaml`` is tool ``parliament_uk_members``). Its
category is the first ``info.x-apisguru-categories`` entry in the
Fail-TaLMs style (``open_data`` becomes ``OpenData``), else ``OpenAPI``.

Each operation becomes an endpoint named by its ``operationId``, else by
``<method>_<path>``. Its URL is the base URL (``servers[0]`` with variable
defaults, relative server URLs resolved against ``x-origin``; without
servers, the scheme and host of ``x-origin[0].url``; for Swagger 2,
``schemes``/``host``/``basePath``) followed by the path. Path-level
parameters are merged with the operation's; object request bodies become
body parameters. An operation that requires auth (an effective non-empty
``security``; ``security: []`` or an empty requirement means none) is
rejected, as is a file that cannot be read as a spec.

A spec file is untrusted: it is read within the bounds of
:mod:`aah.tools.importers.loading` (size cap, UTF-8, nesting, alias
expansion), ``$ref`` is followed only inside the file and only so far, the
base URL must be http(s) with a host, and whatever a file does wrong becomes
a rejection naming it, never an exception that stops the build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from aah.errors import AahError
from aah.tools.importers.loading import DEFAULT_MAX_SPEC_BYTES, SpecFileError, load_json, load_yaml
from aah.tools.importers.naming import unique_endpoint
from aah.tools.importers.openapi_params import OperationError, body_encoding, operation_parameters
from aah.tools.importers.openapi_refs import RefError, deref, inline
from aah.tools.spec import (
    EndpointSource,
    EndpointSpec,
    HttpMethod,
    ImportResult,
    Rejection,
    ResponseSketch,
    qualified_name,
    safe_name,
)

SOURCE_KIND = "openapi"
DEFAULT_CATEGORY = "OpenAPI"
SPEC_SUFFIXES = (".yaml", ".yml", ".json")

_METHODS: dict[str, HttpMethod] = {
    "get": "GET",
    "post": "POST",
    "put": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
}
_OTHER_METHODS = ("head", "options", "trace")
_WORD = re.compile(r"[A-Za-z0-9]+")
_WEB_SCHEMES = ("http", "https")
# What a hostile file's odd shapes raise deep inside the importer; caught at
# the file and the operation, so one file never stops the build.
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError)
_SUCCESS = re.compile(r"2(\d\d|XX)", re.IGNORECASE)


class SpecError(ValueError):
    """A file that cannot be imported at all; the message says why."""


@dataclass(frozen=True)
class SpecDocument:
    """A parsed spec file and what every operation in it shares."""

    raw: dict[str, Any]
    file: str
    tool: str
    category: str
    base_url: str
    swagger2: bool


def tool_name_for(path: Path) -> str:
    """The tool name of a spec file: its stem before ``__``, made safe."""
    return safe_name(path.stem.split("__", 1)[0])


def import_openapi(root: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> ImportResult:
    """Import every spec file (``.yaml``, ``.yml``, ``.json``) in a folder.

    Args:
        root: the folder holding the spec files.
        max_bytes: a larger file is rejected unread.

    Returns:
        The endpoints of all files, and one rejection per operation or file
        that could not be imported, with its reason.

    Raises:
        AahError: ``root`` is not a folder.
    """
    if not root.is_dir():
        raise AahError(f"no OpenAPI folder at {root}: pass the folder holding the spec files")
    result = ImportResult()
    for path in sorted(p for p in root.iterdir() if p.is_file() and p.suffix in SPEC_SUFFIXES):
        result.extend(import_openapi_file(path, max_bytes))
    return result


def import_openapi_file(path: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> ImportResult:
    """Import one OpenAPI 3 or Swagger 2 file.

    Args:
        path: the spec file (YAML or JSON).
        max_bytes: a larger file is rejected unread.

    Returns:
        Its endpoints and rejections; a file that cannot be read as a spec
        gives one rejection and no endpoints.
    """
    try:
        document = load_document(path, max_bytes)
        result = _import_document(document)
    except (SpecError, SpecFileError) as error:
        return _file_rejection(path, str(error))
    except _SHAPE_ERRORS as error:
        return _file_rejection(path, f"has a shape aah cannot read ({_error_line(error)})")
    if not result.endpoints and not result.rejections:
        return _file_rejection(path, "has no operations under 'paths'")
    return result


def _file_rejection(path: Path, reason: str) -> ImportResult:
    source = EndpointSource(kind=SOURCE_KIND, file=path.name)
    rejection = Rejection(source=source, tool=tool_name_for(path), name="", reason=reason)
    return ImportResult(rejections=[rejection])


def _error_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:200]}" if lines else type(error).__name__


def _import_document(document: SpecDocument) -> ImportResult:
    result = ImportResult()
    taken: set[str] = set()
    for route, path_item in document.raw["paths"].items():
        route = str(route)
        try:
            item = deref(document.raw, path_item)
        except RefError as error:
            result.rejections.append(_path_rejection(document, route, f"path item: {error}"))
            continue
        if not isinstance(item, dict):
            result.rejections.append(_path_rejection(document, route, "path item is not a mapping"))
            continue
        for method, operation in item.items():
            if method not in _METHODS and method not in _OTHER_METHODS:
                continue
            try:
                made = _endpoint(document, route, method, operation, item)
            except _SHAPE_ERRORS as error:
                reason = f"has a shape aah cannot read ({_error_line(error)})"
                made = _path_rejection(document, route, reason, method)
            if isinstance(made, EndpointSpec):
                result.endpoints.append(unique_endpoint(made, taken))
            else:
                result.rejections.append(made)
    return result


def _path_rejection(document: SpecDocument, route: str, reason: str, method: str = "") -> Rejection:
    source_id = f"{method.upper()} {route}".strip()
    source = EndpointSource(kind=SOURCE_KIND, file=document.file, id=source_id)
    name = _route_name(method or "path", route)
    return Rejection(source=source, tool=document.tool, name=name, reason=reason)


def load_document(path: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> SpecDocument:
    """Parse a spec file and work out its tool, category and base URL.

    Raises:
        SpecFileError: the file is unreadable, too large, not UTF-8, not
            YAML/JSON, or nests or expands out of bounds.
        SpecError: the file is not OpenAPI 3 or Swagger 2, has no paths, or
            gives no http(s) base URL.
    """
    # JSON is YAML too, but the JSON parser is exact and many times faster.
    if path.suffix == ".json":
        raw = load_json(path, max_bytes)
    else:
        raw = load_yaml(path, max_bytes)
    if not isinstance(raw, dict):
        raise SpecError("not an OpenAPI document (no mapping at the top)")
    swagger2 = str(raw.get("swagger", "")) == "2.0"
    if not swagger2 and not str(raw.get("openapi", "")).startswith("3."):
        raise SpecError("neither OpenAPI 3 nor Swagger 2.0 (no 'openapi: 3.x' or 'swagger: 2.0')")
    if not isinstance(raw.get("paths"), dict):
        raise SpecError("has no 'paths' mapping")
    base_url = _swagger2_base_url(raw) if swagger2 else _openapi3_base_url(raw)
    parts = urlsplit(base_url)
    if parts.scheme.lower() not in _WEB_SCHEMES or not parts.hostname:
        raise SpecError(f"base URL {base_url!r} is not an http(s) URL with a host")
    return SpecDocument(raw, path.name, tool_name_for(path), _category(raw), base_url, swagger2)


def _category(raw: dict[str, Any]) -> str:
    info = raw.get("info")
    categories = info.get("x-apisguru-categories") if isinstance(info, dict) else None
    if isinstance(categories, list) and categories and isinstance(categories[0], str):
        words = re.split(r"[^A-Za-z0-9]+", categories[0])
        return "".join(word[:1].upper() + word[1:] for word in words) or DEFAULT_CATEGORY
    return DEFAULT_CATEGORY


def _origin_url(raw: dict[str, Any]) -> str:
    info = raw.get("info")
    origins = info.get("x-origin") if isinstance(info, dict) else None
    if isinstance(origins, list) and origins and isinstance(origins[0], dict):
        url = origins[0].get("url")
        if isinstance(url, str) and urlsplit(url).netloc:
            return url
    return ""


def _openapi3_base_url(raw: dict[str, Any]) -> str:
    servers = raw.get("servers")
    origin = _origin_url(raw)
    server = servers[0] if isinstance(servers, list) and servers else None
    if isinstance(server, dict) and isinstance(server.get("url"), str):
        url = str(server["url"])
        variables = server.get("variables")
        for name, variable in (variables or {}).items() if isinstance(variables, dict) else []:
            default = variable.get("default", "") if isinstance(variable, dict) else ""
            url = url.replace("{" + str(name) + "}", str(default))
        if not urlsplit(url).netloc:
            if not origin:
                raise SpecError(f"server URL {url!r} is relative and there is no x-origin URL")
            url = urljoin(origin, url)
        return url.rstrip("/")
    if origin:
        parts = urlsplit(origin)
        return f"{parts.scheme}://{parts.netloc}"
    raise SpecError("no servers and no x-origin URL: the base URL is unknown")


def _swagger2_base_url(raw: dict[str, Any]) -> str:
    origin = urlsplit(_origin_url(raw))
    host = raw.get("host") if isinstance(raw.get("host"), str) else origin.netloc
    if not host:
        raise SpecError("no host and no x-origin URL: the base URL is unknown")
    listed = raw.get("schemes")
    # A lone scheme is sometimes written as a string rather than a list.
    listed = [listed] if isinstance(listed, str) else listed
    schemes = [s for s in listed if isinstance(s, str)] if isinstance(listed, list) else []
    fallback = schemes[0] if schemes else origin.scheme or "https"
    scheme = "https" if "https" in schemes else fallback
    base_path = raw.get("basePath") if isinstance(raw.get("basePath"), str) else ""
    return f"{scheme}://{host}{base_path}".rstrip("/")


def _endpoint(
    document: SpecDocument, route: str, method: str, operation: Any, path_item: dict[str, Any]
) -> EndpointSpec | Rejection:
    operation_id = operation.get("operationId") if isinstance(operation, dict) else None
    source_id = operation_id if isinstance(operation_id, str) else f"{method.upper()} {route}"
    name = safe_name(operation_id) if isinstance(operation_id, str) else _route_name(method, route)
    source = EndpointSource(kind=SOURCE_KIND, file=document.file, id=source_id)

    def reject(reason: str) -> Rejection:
        return Rejection(source=source, tool=document.tool, name=name, reason=reason)

    if not isinstance(operation, dict):
        return reject("operation is not a mapping")
    if method not in _METHODS:
        return reject(f"method {method.upper()} is not one aah calls")
    schemes = auth_schemes(document.raw, operation)
    if schemes:
        return reject(f"requires auth ({', '.join(schemes)})")
    repairs: list[str] = []
    try:
        parameters = operation_parameters(
            document.raw, route, path_item, operation, document.swagger2, repairs
        )
        response = _response_sketch(document, operation)
    except (OperationError, RefError) as error:
        return reject(str(error))
    return EndpointSpec(
        tool=document.tool,
        category=document.category,
        name=name,
        qualified_name=qualified_name(document.tool, name),
        description=_description(operation),
        method=_METHODS[method],
        url_template=document.base_url + (route if route.startswith("/") else "/" + route),
        body_encoding=body_encoding(document.raw, operation, document.swagger2),
        parameters=parameters,
        response=response,
        source=source,
        repairs=repairs,
    )


def _route_name(method: str, route: str) -> str:
    # Words only, so no "__" (the tool separator) appears inside the name.
    return "_".join([method, *_WORD.findall(route)])


def auth_schemes(raw: dict[str, Any], operation: dict[str, Any]) -> list[str]:
    """Names of the security schemes an operation requires; empty when none.

    The operation's ``security`` overrides the document's; an empty list, or
    an empty requirement among the alternatives, means no auth is needed.
    """
    security = operation.get("security", raw.get("security"))
    if not isinstance(security, list):
        return []
    requirements = [req for req in security if isinstance(req, dict)]
    if not requirements or any(not req for req in requirements):
        return []
    return sorted({str(name) for req in requirements for name in req})


def _description(operation: dict[str, Any]) -> str:
    parts = [operation.get("summary"), operation.get("description")]
    texts = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    return "\n\n".join(dict.fromkeys(texts))


def _response_sketch(document: SpecDocument, operation: dict[str, Any]) -> ResponseSketch:
    responses = operation.get("responses")
    if not isinstance(responses, dict):
        return ResponseSketch()
    # YAML reads an unquoted 200 as an integer key.
    by_code = {str(code): response for code, response in responses.items()}
    codes = sorted(code for code in by_code if _SUCCESS.fullmatch(code))
    if not codes:
        return ResponseSketch()
    code = "200" if "200" in codes else codes[0]
    status = int(code) if code.isdigit() else 200
    response = deref(document.raw, by_code[code])
    if not isinstance(response, dict):
        return ResponseSketch(status=status)
    if document.swagger2:
        return _swagger2_sketch(document, operation, response, status)
    content = response.get("content")
    if not isinstance(content, dict) or not content:
        return ResponseSketch(status=status)
    # YAML reads an unquoted key as whatever scalar it looks like.
    by_type = {str(key): value for key, value in content.items()}
    media_type = _json_media_type(list(by_type))
    entry = deref(document.raw, by_type[media_type])
    entry = entry if isinstance(entry, dict) else {}
    if entry.get("schema"):
        schema = inline(document.raw, entry["schema"])
        return ResponseSketch(kind="schema", content=schema, status=status, media_type=media_type)
    example = _first_example(document.raw, entry)
    if example is not None:
        return ResponseSketch(kind="example", content=example, status=status, media_type=media_type)
    return ResponseSketch(status=status, media_type=media_type)


def _swagger2_sketch(
    document: SpecDocument, operation: dict[str, Any], response: dict[str, Any], status: int
) -> ResponseSketch:
    produces = operation.get("produces") or document.raw.get("produces") or ["application/json"]
    produces = [produces] if isinstance(produces, str) else produces
    media_type = _json_media_type([str(m) for m in produces])
    if response.get("schema"):
        schema = inline(document.raw, response["schema"])
        return ResponseSketch(kind="schema", content=schema, status=status, media_type=media_type)
    examples = response.get("examples")
    if isinstance(examples, dict) and examples:
        by_type = {str(key): value for key, value in examples.items()}
        media_type = _json_media_type(list(by_type))
        return ResponseSketch(
            kind="example", content=by_type[media_type], status=status, media_type=media_type
        )
    return ResponseSketch(status=status, media_type=media_type)


def _json_media_type(media_types: list[str]) -> str:
    if "application/json" in media_types:
        return "application/json"
    return next((m for m in media_types if "json" in m), media_types[0])


def _first_example(raw: dict[str, Any], entry: dict[str, Any]) -> Any:
    if "example" in entry:
        return entry["example"]
    examples = entry.get("examples")
    if isinstance(examples, dict):
        for example in examples.values():
            resolved = deref(raw, example)
            if isinstance(resolved, dict) and "value" in resolved:
                return resolved["value"]
    return None
