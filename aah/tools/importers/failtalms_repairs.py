"""Generic repairs of Fail-TaLMs entries: parameter types, defaults and URLs.

Each function returns what it repaired as short human-readable notes, which
the importer stores in ``EndpointSpec.repairs``. Nothing here knows a tool by
name: every rule is about a pattern measured in the data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aah.tools.spec import JsonType, ParameterSpec, ParamLocation, safe_name

_TYPE_WORDS: dict[str, JsonType] = {
    "string": "string",
    "str": "string",
    "text": "string",
    "enum": "string",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "dict": "object",
    "json": "object",
}
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})
_TYPED_LIST = re.compile(r"(?:list|array)\s*(?:\[\s*(\w+)\s*\]|of\s+(\w+))")
# Words the source uses for "no default" (often Python's None printed as text).
_NO_VALUE = frozenset({"none", "null", "nil", "undefined"})
_INTEGER = re.compile(r"[+-]?\d+")

_BRACED = re.compile(r"\{([^{}]+)\}")
# Express-style ``/:id`` or ``?q=:q``; only after "/" or "=", so a port
# (``host:8080``) or the scheme is never taken for a placeholder.
_COLON = re.compile(r"(?<=[/=]):([A-Za-z_][A-Za-z0-9_-]*)")
# ``[objectID]`` is a placeholder; ``[playlist/:playlistId]`` an optional part.
_BRACKETED_NAME = re.compile(r"\[([A-Za-z_][A-Za-z0-9_-]*)\]")
_OPTIONAL_PART = re.compile(r"/?\[[^\]]*\]")
_QUERY_PAIR = re.compile(r"([^&=?]+)=\{([^{}]+)\}")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class TypeReading:
    """A source type spelling read as a JSON-schema type."""

    type: JsonType
    items_type: JsonType | None = None
    note: str = ""


def read_type(raw: object) -> TypeReading:
    """Read a source type spelling such as ``INT`` or ``LIST of STRINGS``.

    Spellings that are already a JSON-schema type in another case (``STRING``)
    carry no note; every other reading says what it chose.
    """
    if not isinstance(raw, str) or not raw.strip():
        return TypeReading("string", note="no type given, read as string")
    text = " ".join(raw.lower().split())
    if text in _JSON_TYPES:
        return TypeReading(_TYPE_WORDS[text])
    # "STRING or LIST of STRINGS": the first alternative is what a URL
    # template or a single form field can carry.
    first = text.split(" or ", 1)[0]
    parsed = _parse_type(first)
    if parsed is None:
        return TypeReading("string", note=f"unknown type {raw!r} read as string")
    json_type, items = parsed
    shown = f"array of {items}" if items else json_type
    return TypeReading(json_type, items, note=f"type {raw!r} read as {shown}")


def _parse_type(text: str) -> tuple[JsonType, JsonType | None] | None:
    typed_list = _TYPED_LIST.fullmatch(text)
    if typed_list:
        word = typed_list.group(1) or typed_list.group(2)
        return "array", _scalar(word)
    scalar = _scalar(text)
    return None if scalar is None else (scalar, None)


def _scalar(word: str) -> JsonType | None:
    if word in _TYPE_WORDS:
        return _TYPE_WORDS[word]
    if word.endswith("s") and word[:-1] in _TYPE_WORDS:
        return _TYPE_WORDS[word[:-1]]
    return None


def read_default(name: str, raw: Any, json_type: JsonType) -> tuple[Any, str]:
    """A default as a typed value, and a note when it had to be converted.

    Text that parses as the parameter's type becomes that type (``"0"`` for
    an integer becomes ``0``); text meaning "no value" becomes ``None``;
    anything else is kept as given.
    """
    if not isinstance(raw, str):
        return raw, ""
    text = raw.strip()
    if text.lower() in _NO_VALUE or (not text and json_type != "string"):
        return None, f"default {raw!r} of {name!r} dropped: it stands for no value"
    value = _parse_value(text, json_type)
    if value is None:
        return raw, ""
    return value, f"default of {name!r} given as text {raw!r}, read as {value!r}"


def _parse_value(text: str, json_type: JsonType) -> Any:
    if json_type == "integer" and _INTEGER.fullmatch(text):
        return int(text)
    if json_type == "number":
        if _INTEGER.fullmatch(text):
            return int(text)
        try:
            return float(text)
        except ValueError:
            return None
    if json_type == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if json_type in ("array", "object") and text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except ValueError:
            return None
    return None


@dataclass
class UrlRepair:
    """A URL template whose placeholders all name path parameters."""

    url_template: str
    parameters: list[ParameterSpec]
    notes: list[str] = field(default_factory=list)


def repair_url(url: str, parameters: list[ParameterSpec]) -> UrlRepair:
    """Bind every URL placeholder to a parameter and mark those as path ones.

    ``:name`` and ``[name]`` placeholders are rewritten as ``{name}``; an
    optional part (``[playlist/:id]``) is dropped; ``key={x}`` pairs whose
    key is a declared parameter are taken out of the URL (the parameter is
    sent as a query parameter). A
    placeholder whose name differs from the declared parameter it stands for
    (``{countryCode}`` and ``country_code``) is renamed after the parameter;
    one with no such parameter is declared as a required string parameter.
    """
    repair = UrlRepair(url, [p.model_copy() for p in parameters])
    prefix, rest = _split_origin(url)
    rest = _braced_placeholders(rest, repair.notes)
    rest = _drop_optional_parts(rest, repair.notes)
    rest = _query_pairs_out(rest, repair)
    placeholders = list(dict.fromkeys(_BRACED.findall(rest)))
    required = [p.name for p in repair.parameters if p.required]
    bound = bind_placeholders(placeholders, [p.name for p in repair.parameters], required)
    names: dict[str, str] = {}
    for placeholder in placeholders:
        names[placeholder] = bound.get(placeholder) or _declare(placeholder, repair)
        if placeholder in bound and bound[placeholder] != placeholder:
            repair.notes.append(
                f"URL placeholder '{{{placeholder}}}' bound to parameter "
                f"{bound[placeholder]!r} (names differ)"
            )
    repair.url_template = prefix + _BRACED.sub(lambda m: "{" + names[m.group(1)] + "}", rest)
    for param in repair.parameters:
        if param.name in names.values():
            _make_path(param, repair.notes)
    return repair


def _split_origin(url: str) -> tuple[str, str]:
    scheme, sep, after = url.partition("://")
    netloc, slash, rest = after.partition("/")
    return f"{scheme}{sep}{netloc}", f"{slash}{rest}"


def _drop_optional_parts(rest: str, notes: list[str]) -> str:
    for part in _OPTIONAL_PART.findall(rest):
        notes.append(f"optional URL part {part.lstrip('/')!r} dropped: a template cannot hold it")
    return _OPTIONAL_PART.sub("", rest)


def _braced_placeholders(rest: str, notes: list[str]) -> str:
    for pattern, style in ((_BRACKETED_NAME, "[{}]"), (_COLON, ":{}")):
        found = pattern.findall(rest)
        if found:
            shown = ", ".join(style.format(name) for name in found)
            notes.append(f"URL placeholders {shown} rewritten in '{{name}}' style")
            rest = pattern.sub(lambda m: "{" + m.group(1) + "}", rest)
    return rest


def _query_pairs_out(rest: str, repair: UrlRepair) -> str:
    path, mark, query = rest.partition("?")
    if not mark:
        return rest
    declared = {p.name for p in repair.parameters}
    kept: list[str] = []
    for pair in query.split("&"):
        match = _QUERY_PAIR.fullmatch(pair)
        if match and match.group(1) in declared:
            repair.notes.append(
                f"query placeholder '{{{match.group(2)}}}' taken out of the URL: "
                f"{match.group(1)!r} is sent as a query parameter"
            )
            continue
        kept.append(pair)
    return f"{path}?{'&'.join(kept)}" if kept else path


def _declare(placeholder: str, repair: UrlRepair) -> str:
    name = safe_name(placeholder)
    while any(p.name == name for p in repair.parameters):
        name += "_"
    alternatives = placeholder.split("|") if "|" in placeholder else None
    repair.parameters.append(
        ParameterSpec(
            name=name,
            required=True,
            location=ParamLocation.PATH,
            enum=alternatives,
            description=f"URL path segment {{{placeholder}}}",
        )
    )
    repair.notes.append(f"parameter {name!r} declared: URL placeholder missing from parameters")
    return name


def _make_path(param: ParameterSpec, notes: list[str]) -> None:
    param.location = ParamLocation.PATH
    if not param.required:
        # An optional argument is only sent when given, and the URL cannot
        # be built without this one.
        param.required = True
        notes.append(f"path parameter {param.name!r} made required: the URL needs it")


def bind_placeholders(
    placeholders: list[str], names: list[str], required: list[str]
) -> dict[str, str]:
    """Match URL placeholders to declared parameter names, best evidence first.

    Tiers, each over all placeholders before the next: same name; same name
    ignoring case, ``_`` and ``-``; one name's words inside the other's
    (``id`` and ``show_id``); one name a prefix of the other (``q`` and
    ``query``). A fuzzy match counts only when exactly one parameter fits.
    Last, a single placeholder left over takes the single required parameter
    left over (``{MMDDYY}`` and ``date``): the source describes the value
    the URL needs under another name.
    """
    bound: dict[str, str] = {}
    free = list(names)
    tiers: list[Callable[[str, str], bool]] = [
        lambda a, b: a == b,
        lambda a, b: _squashed(a) == _squashed(b),
        _words_overlap,
        _prefix_of_other,
    ]
    for matches in tiers:
        for placeholder in placeholders:
            if placeholder in bound:
                continue
            hits = [name for name in free if matches(placeholder, name)]
            if len(hits) == 1:
                bound[placeholder] = hits[0]
                free.remove(hits[0])
    left = [p for p in placeholders if p not in bound]
    left_required = [name for name in free if name in required]
    if len(left) == 1 and len(left_required) == 1:
        bound[left[0]] = left_required[0]
    return bound


def _squashed(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _prefix_of_other(placeholder: str, name: str) -> bool:
    a, b = _squashed(placeholder), _squashed(name)
    return bool(a) and bool(b) and (a.startswith(b) or b.startswith(a))


def _words(name: str) -> set[str]:
    spaced = _CAMEL_BOUNDARY.sub(" ", name)
    return {word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word}


def _words_overlap(placeholder: str, name: str) -> bool:
    a, b = _words(placeholder), _words(name)
    return bool(a) and bool(b) and (a <= b or b <= a)
