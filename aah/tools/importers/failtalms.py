"""Import the Fail-TaLMs tool descriptions as ``EndpointSpec``s.

The source folder holds ``tools/<Category>/<tool>.json`` (one ``api_list``
entry per endpoint) and ``benchmark/<Setting>/all_<Setting>_queries.json``.
The raw data has defects; each one is repaired by a general rule and the
repair is written into the endpoint's ``repairs``:

- bare strings among the parameters become string parameters of that name;
- the many type spellings (``INT``, ``DOUBLE``, ``LIST of STRINGS``, ``DICT``,
  ``ENUM``...) are read as JSON-schema types;
- defaults given as text are typed (``"0"`` for an integer is ``0``);
- ``:id`` placeholders become ``{id}``; a placeholder is bound to the declared
  parameter it stands for, or declared as a required path parameter;
- ``"GET or POST"`` is read as GET;
- an endpoint name repeating within a tool gets ``_2``, ``_3``...

For POST endpoints every parameter that is not part of the URL goes in the
body. The data's POST endpoints are search and bulk APIs that read a JSON
document (SpaceX ``query``/``options``, usaspending ``filters``, postcodes
``postcodes``, iDigBio ``rq``) or form fields (URLhaus, Imgflip); none of
them reads its arguments from the query string.

An entry that cannot be called over HTTP becomes a ``Rejection`` with its
reason; nothing is dropped silently. A tool file is read within the bounds of
:mod:`aah.tools.importers.loading`; one that cannot be read, or whose shape
the importer cannot follow, is rejected as a whole and the rest still import.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aah.errors import AahError
from aah.tools.importers.failtalms_repairs import read_default, read_type, repair_url
from aah.tools.importers.loading import DEFAULT_MAX_SPEC_BYTES, SpecFileError, load_json
from aah.tools.importers.naming import benchmark_endpoint_name, unique_endpoint
from aah.tools.spec import (
    EndpointSource,
    EndpointSpec,
    HttpMethod,
    ImportResult,
    ParameterSpec,
    ParamLocation,
    Rejection,
    ResponseSketch,
    qualified_name,
)

SOURCE_KIND = "fail-talms"
ASK_HUMAN_CATEGORY = "HumanInteract"
ASK_HUMAN_REASON = (
    "the paper's ask-the-human tool, not an HTTP endpoint: aah's built-in ask_human replaces it"
)

_METHODS: dict[str, HttpMethod] = {
    "GET": "GET",
    "POST": "POST",
    "PUT": "PUT",
    "PATCH": "PATCH",
    "DELETE": "DELETE",
}
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_METHOD_CHOICES = re.compile(r"\s*(?:\bOR\b|/|,|\|)\s*")
_HTTP_URL = re.compile(r"https?://[^/\s?#]+", re.IGNORECASE)
# What a hostile file's odd shapes raise deep inside the importer; caught per
# file, so one file never stops the build.
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError)


@dataclass(frozen=True)
class _ToolFile:
    """Where an entry comes from: its tool, category and file."""

    tool: str
    category: str
    file: str
    home_url: str


def import_failtalms(root: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> ImportResult:
    """Import every endpoint of a Fail-TaLMs data folder.

    Args:
        root: the folder holding ``tools/`` and ``benchmark/``.
        max_bytes: a larger tool or benchmark file is not read.

    Returns:
        One endpoint per callable ``api_list`` entry, one rejection (with its
        reason) per entry or file that could not be imported.

    Raises:
        AahError: ``root`` has no ``tools/`` folder.
    """
    tools_dir = root / "tools"
    if not tools_dir.is_dir():
        raise AahError(f"no Fail-TaLMs tools folder at {tools_dir}: pass the Fail-TaLMs folder")
    templates = benchmark_templates(root, max_bytes)
    result = ImportResult()
    taken: set[str] = set()
    for path in sorted(tools_dir.glob("*/*.json")):
        file = path.relative_to(root).as_posix()
        try:
            data = load_json(path, max_bytes)
        except SpecFileError as error:
            result.rejections.append(_file_rejection(file, path.stem, str(error)))
            continue
        # Names already taken stay taken only if the whole file imports.
        taken_before = set(taken)
        try:
            result.extend(_import_tool_file(data, file, path, templates, taken))
        except _SHAPE_ERRORS as error:
            taken.clear()
            taken.update(taken_before)
            reason = f"has a shape aah cannot read ({type(error).__name__}: {error})"
            result.rejections.append(_file_rejection(file, path.stem, reason[:300]))
    return result


def _file_rejection(file: str, tool: str, reason: str) -> Rejection:
    source = EndpointSource(kind=SOURCE_KIND, file=file)
    return Rejection(source=source, tool=tool, name="", reason=reason)


def benchmark_templates(root: Path, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> dict[str, Any]:
    """The ``template_response`` the benchmark files give per endpoint.

    The same endpoint appears in many queries, not always with the same
    template; the most frequent one wins (the first seen on a tie).

    Returns:
        Templates keyed by the endpoint's qualified name.
    """
    counts: dict[str, Counter[str]] = {}
    for path in sorted((root / "benchmark").glob("*/all_*_queries.json")):
        queries = _read_json(path, max_bytes)
        for query in queries if isinstance(queries, list) else []:
            items = query.get("api_list") if isinstance(query, dict) else None
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("template_response") is not None:
                    tool, api = str(item.get("tool_name")), str(item.get("api_name"))
                    key = benchmark_endpoint_name(tool, api)
                    text = json.dumps(item["template_response"], sort_keys=True)
                    counts.setdefault(key, Counter())[text] += 1
    return {key: json.loads(c.most_common(1)[0][0]) for key, c in counts.items()}


def _read_json(path: Path, max_bytes: int) -> Any:
    # A benchmark file only lends response templates: one that cannot be
    # read lends none.
    try:
        return load_json(path, max_bytes)
    except SpecFileError:
        return None


def _import_tool_file(
    data: Any, file: str, path: Path, templates: dict[str, Any], taken: set[str]
) -> ImportResult:
    result = ImportResult()
    if not isinstance(data, dict) or not isinstance(data.get("api_list"), list):
        reason = (
            "not a tool description (no api_list list)"
            if isinstance(data, dict)
            else "not a tool description (no JSON object at the top)"
        )
        result.rejections.append(_file_rejection(file, path.stem, reason))
        return result
    tool_name = data.get("tool_name")
    tool = tool_name.strip() if isinstance(tool_name, str) and tool_name.strip() else path.stem
    context = _ToolFile(tool, path.parent.name, file, _home_url(data))
    for entry in data["api_list"]:
        made = _endpoint(entry, context, templates, taken)
        if isinstance(made, Rejection):
            result.rejections.append(made)
            continue
        result.endpoints.append(unique_endpoint(made, taken))
    return result


def _endpoint(
    entry: Any, context: _ToolFile, templates: dict[str, Any], taken: set[str]
) -> EndpointSpec | Rejection:
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(name, str) or not name.strip():
        return _reject(context, "", "entry is not an object with a name")
    name = name.strip()
    url = entry.get("url")
    if not isinstance(url, str) or not url.strip():
        reason = ASK_HUMAN_REASON if context.category == ASK_HUMAN_CATEGORY else "entry has no URL"
        return _reject(context, name, reason)
    repairs: list[str] = []
    url = _absolute_url(url.strip(), context.home_url, repairs)
    if not _HTTP_URL.match(url):
        return _reject(context, name, f"URL {url!r} is not an http(s) URL")
    method, method_note = _read_method(entry.get("method"))
    if method is None:
        shown = ", ".join(_METHODS)
        return _reject(context, name, f"method {entry.get('method')!r} is not one of {shown}")
    repairs.extend([method_note] if method_note else [])
    fixed_url = repair_url(url, _read_parameters(entry, repairs))
    repairs.extend(fixed_url.notes)
    parameters = fixed_url.parameters
    if method in _BODY_METHODS:
        for param in parameters:
            if param.location != ParamLocation.PATH:
                param.location = ParamLocation.BODY
    description = entry.get("description")
    full_name = qualified_name(context.tool, name)
    # A benchmark template belongs to the first endpoint of a repeated name.
    template = templates.get(full_name) if full_name not in taken else None
    return EndpointSpec(
        tool=context.tool,
        category=context.category,
        name=name,
        qualified_name=full_name,
        description=description.strip() if isinstance(description, str) else "",
        method=method,
        url_template=fixed_url.url_template,
        parameters=parameters,
        response=_response_sketch(entry, template),
        source=EndpointSource(kind=SOURCE_KIND, file=context.file, id=name),
        repairs=repairs,
    )


def _home_url(data: dict[str, Any]) -> str:
    home, host = data.get("home_url"), data.get("host")
    if isinstance(home, str) and _HTTP_URL.match(home.strip()):
        return home.strip()
    return f"https://{host.strip()}/" if isinstance(host, str) and host.strip() else ""


def _absolute_url(url: str, home_url: str, repairs: list[str]) -> str:
    # A path-only URL is relative to the tool's documented base (its
    # home_url), the way an API's paths extend its base URL.
    if not url.startswith("/") or not home_url:
        return url
    joined = home_url.rstrip("/") + url
    repairs.append(f"relative URL {url!r} joined to the tool's home_url {home_url!r}")
    return joined


def _reject(context: _ToolFile, name: str, reason: str) -> Rejection:
    source = EndpointSource(kind=SOURCE_KIND, file=context.file, id=name)
    return Rejection(source=source, tool=context.tool, name=name, reason=reason)


def _read_method(raw: Any) -> tuple[HttpMethod | None, str]:
    if not isinstance(raw, str) or not raw.strip():
        return "GET", "no method given, read as GET"
    text = raw.strip().upper()
    if text in _METHODS:
        return _METHODS[text], ""
    # "GET or POST": the first method named is the one that takes the
    # arguments in the URL, which needs no body encoding.
    first = _METHOD_CHOICES.split(text)[0]
    if first in _METHODS:
        return _METHODS[first], f"method {raw!r} read as {first}"
    return None, ""


def _read_parameters(entry: dict[str, Any], repairs: list[str]) -> list[ParameterSpec]:
    parameters: list[ParameterSpec] = []
    for key, required in (("required_parameters", True), ("optional_parameters", False)):
        listed = entry.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list):
            repairs.append(f"{key} is not a list: ignored")
            continue
        for raw in listed:
            param = _read_parameter(raw, required, repairs)
            if param is None:
                continue
            if any(p.name == param.name for p in parameters):
                repairs.append(f"parameter {param.name!r} listed twice: the first is kept")
                continue
            parameters.append(param)
    return parameters


def _read_parameter(raw: Any, required: bool, repairs: list[str]) -> ParameterSpec | None:
    kind = "required" if required else "optional"
    if isinstance(raw, str) and raw.strip():
        repairs.append(f"parameter {raw.strip()!r} given as a bare name: read as a {kind} string")
        return ParameterSpec(name=raw.strip(), required=required)
    name = raw.get("name") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(name, str) or not name.strip():
        repairs.append(f"a {kind} parameter without a name was dropped: {str(raw)[:60]}")
        return None
    name = name.strip()
    reading = read_type(raw.get("type"))
    if reading.note:
        repairs.append(f"parameter {name!r}: {reading.note}")
    default, note = read_default(name, raw.get("default"), reading.type)
    if note:
        repairs.append(note)
    description = raw.get("description")
    return ParameterSpec(
        name=name,
        type=reading.type,
        items_type=reading.items_type,
        required=required,
        default=default,
        description=description.strip() if isinstance(description, str) else "",
    )


def _response_sketch(entry: dict[str, Any], template: Any) -> ResponseSketch:
    status = entry.get("statuscode")
    media_type = entry.get("response_format")
    base: dict[str, Any] = {
        "status": status if isinstance(status, int) and not isinstance(status, bool) else 200,
        "media_type": media_type if isinstance(media_type, str) else "application/json",
    }
    if entry.get("response_example") is not None:
        return ResponseSketch(kind="example", content=entry["response_example"], **base)
    if _filled(entry.get("body")):
        return ResponseSketch(kind="template", content=entry["body"], **base)
    # One tool file puts its response schema under "response".
    for key in ("schema", "response"):
        if _filled(entry.get(key)):
            return ResponseSketch(kind="schema", content=entry[key], **base)
    if template is not None:
        return ResponseSketch(kind="template", content=template, **base)
    return ResponseSketch(**base)


def _filled(value: Any) -> bool:
    return value is not None and value not in ("", {}, [])
