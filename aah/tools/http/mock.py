"""Mock mode: answers made up from an endpoint's response sketch, without network.

The same call (qualified name and arguments) always gets the same answer: a
random generator is seeded from a hash of both. Sketch kinds:

- ``example``: returned as is.
- ``template``: type words ("string", "float", "int", "boolean", "date", ...)
  are replaced by plausible values of that type; other values are kept.
- ``schema``: a JSON-schema instance (type, properties, items, enum, format,
  example), nested at most :data:`MAX_DEPTH` levels.
- ``none``: a small JSON object echoing the call.

A call missing a required argument gets a 400, as a real API would answer.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from aah.secrets import REDACTED, is_secret_name
from aah.tools.http.request import RequestError, build_request, full_url
from aah.tools.http.results import ToolResult, describe_body, failure_result, response_result
from aah.tools.spec import EndpointSpec, ResponseSketch

MAX_DEPTH = 6
MAX_PROPERTIES = 40
_TYPE_WORD = re.compile(r"^\s*([a-z_-]+)\s*(?:[(:,\-].*)?$", re.IGNORECASE | re.DOTALL)
_WORDS = (
    "amber", "harbor", "summit", "willow", "cobalt", "meadow", "orbit", "lumen",
    "canyon", "ember", "glacier", "prairie", "quartz", "sierra", "tundra", "velvet",
)  # fmt: skip
_NAMES = ("Ada Lovelace", "Alan Turing", "Grace Hopper", "Katherine Johnson", "Linus Pauling")
_CITIES = ("Oslo", "Lisbon", "Nairobi", "Kyoto", "Montreal", "Valparaiso", "Tartu", "Perth")
_TIMEZONES = (
    "Europe/Oslo",
    "Europe/Lisbon",
    "Africa/Nairobi",
    "Asia/Tokyo",
    "America/Toronto",
    "UTC",
)
_EPOCH = date(2024, 1, 1)
# Returned by typed_value for a word that names no type: the template keeps it.
_UNKNOWN = object()


def mock_seed(qualified_name: str, arguments: Mapping[str, Any]) -> int:
    """A seed that depends only on the call: name and arguments, order ignored."""
    given = {k: v for k, v in arguments.items() if v is not None}
    text = qualified_name + json.dumps(given, sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def synthesize(spec: EndpointSpec, arguments: Mapping[str, Any]) -> Any:
    """The made-up response body for a call: JSON-like data or a string."""
    sketch = spec.response
    rng = random.Random(mock_seed(spec.qualified_name, arguments))
    # A fake API, like a real one, never sends a credential back.
    given = {k: REDACTED if is_secret_name(k) else v for k, v in arguments.items() if v is not None}
    echo = {"status": "ok", "endpoint": spec.qualified_name, "arguments": given}
    content = _maybe_json(sketch.content)
    try:
        if sketch.kind == "example":
            return sketch.content
        if sketch.kind == "template":
            return echo_arguments(from_template(content, rng), given)
        if sketch.kind == "schema" and isinstance(content, Mapping):
            return echo_arguments(from_schema(content, rng), given)
    except (TypeError, ValueError):
        # A malformed sketch (say, "minimum": "low") must not break a run.
        return echo
    return echo


def echo_arguments(data: Any, given: Mapping[str, Any], depth: int = 0) -> Any:
    """``data`` with fields named like an argument holding that argument's value.

    An API asked about latitude 52.52 answers about 52.52; a made-up response
    that agrees with the call reads as a plausible answer, not as noise.
    """
    if depth > MAX_DEPTH:
        return data
    if isinstance(data, dict):
        return {
            key: given[key]
            if key in given and _scalar(given[key]) and _scalar(value)
            else echo_arguments(value, given, depth + 1)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [echo_arguments(item, given, depth + 1) for item in data]
    return data


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def from_template(template: Any, rng: random.Random, key: str = "", depth: int = 0) -> Any:
    """Replace each type word in a template with a plausible value of that type."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(template, Mapping):
        items = list(template.items())[:MAX_PROPERTIES]
        return {str(k): from_template(v, rng, str(k), depth + 1) for k, v in items}
    if isinstance(template, list):
        return [from_template(item, rng, key, depth + 1) for item in template]
    if isinstance(template, str):
        match = _TYPE_WORD.match(template)
        if match:
            value = typed_value(match.group(1), rng, key)
            if value is not _UNKNOWN:
                return value
    return template


def typed_value(type_word: str, rng: random.Random, key: str = "") -> Any:
    """A value for a type word such as ``int`` or ``date``; the key hints at strings."""
    word = type_word.lower().replace("_", "-")
    if word in ("string", "str", "text"):
        return string_value(rng, key)
    if word in ("int", "integer", "long", "int32", "int64"):
        return rng.randint(1, 1000)
    if word in ("float", "double", "number", "decimal", "numeric"):
        hint = key.lower()
        if hint in ("lat", "latitude"):
            return round(rng.uniform(-90, 90), 4)
        if hint in ("lon", "lng", "longitude"):
            return round(rng.uniform(-180, 180), 4)
        return round(rng.uniform(0, 1000), 2)
    if word in ("bool", "boolean"):
        return rng.random() < 0.5
    if word in ("null", "none"):
        return None
    return _formatted(word, rng, _UNKNOWN)


def _formatted(fmt: str, rng: random.Random, fallback: Any) -> Any:
    """A string in a well-known format (JSON-schema ``format`` names included)."""
    day = _EPOCH + timedelta(days=rng.randrange(730))
    if fmt == "date":
        return day.isoformat()
    if fmt in ("date-time", "datetime", "timestamp"):
        moment = datetime.combine(day, datetime.min.time()) + timedelta(
            seconds=rng.randrange(86_400)
        )
        return moment.isoformat() + "Z"
    if fmt == "time":
        return f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    if fmt == "email":
        return f"{rng.choice(_WORDS)}{rng.randrange(100)}@example.com"
    if fmt in ("uri", "url"):
        return f"https://example.com/{rng.choice(_WORDS)}/{rng.randrange(1000)}"
    if fmt == "uuid":
        return _uuid(rng)
    if fmt == "ipv4":
        return ".".join(str(rng.randrange(1, 255)) for _ in range(4))
    return fallback


def _uuid(rng: random.Random) -> str:
    digits = f"{rng.getrandbits(128):032x}"
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-a{digits[17:20]}-{digits[20:]}"


def string_value(rng: random.Random, key: str = "") -> str:
    """A plausible string, guided by the field name when it says what it holds."""
    hint = key.lower()
    for fmt in ("email", "url", "uuid"):
        if fmt in hint:
            return str(_formatted(fmt, rng, ""))
    if "timezone" in hint or hint in ("tz", "tzid"):
        return rng.choice(_TIMEZONES)
    if "date" in hint:
        return str(_formatted("date", rng, ""))
    if "time" in hint:
        return str(_formatted("date-time", rng, ""))
    if "city" in hint or "location" in hint:
        return rng.choice(_CITIES)
    if hint.endswith("name"):
        return rng.choice(_NAMES)
    if hint == "id" or hint.endswith("_id"):
        return f"{rng.getrandbits(40):010x}"
    return rng.choice(_WORDS)


def from_schema(
    schema: Mapping[str, Any], rng: random.Random, key: str = "", depth: int = 0
) -> Any:
    """An instance of a JSON schema; unresolvable parts (``$ref``) become ``None``."""
    if depth > MAX_DEPTH:
        return None
    for given in ("const", "example", "default"):
        if given in schema:
            return schema[given]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for alternatives in ("oneOf", "anyOf"):
        options = schema.get(alternatives)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            return from_schema(options[0], rng, key, depth + 1)
    kind = _schema_type(schema)
    if kind == "object":
        return _object_instance(schema, rng, depth)
    if kind == "array":
        items = schema.get("items")
        count = max(1, min(int(schema.get("minItems", 2)), 3))
        if not isinstance(items, Mapping):
            return []
        return [from_schema(items, rng, key, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 1000)
        if kind == "integer":
            return rng.randint(int(low), max(int(low), int(high)))
        return round(rng.uniform(float(low), float(high)), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        return _formatted(str(schema.get("format", "")), rng, None) or string_value(rng, key)
    return None


def _schema_type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "allOf" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return ""


def _object_instance(schema: Mapping[str, Any], rng: random.Random, depth: int) -> dict[str, Any]:
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    # allOf parts are merged into one object, the usual way APIs extend a base type.
    for part in schema.get("allOf") or []:
        if isinstance(part, Mapping):
            properties.update(part.get("properties") or {})
    items = list(properties.items())[:MAX_PROPERTIES]
    return {
        name: from_schema(sub, rng, name, depth + 1) if isinstance(sub, Mapping) else None
        for name, sub in items
    }


def _maybe_json(content: Any) -> Any:
    if isinstance(content, str) and content.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def encode_body(data: Any, sketch: ResponseSketch) -> tuple[bytes, str]:
    """Body bytes and content type for made-up data; text keeps the sketch's type."""
    if isinstance(data, bytes):
        return data, sketch.media_type
    if isinstance(data, str):
        return data.encode(), sketch.media_type
    return json.dumps(data, ensure_ascii=False).encode(), "application/json"


class MockExecutor:
    """Answers every call from the spec's response sketch; no network.

    Args:
        max_bytes: Size cap applied to the made-up body, as for real ones.
    """

    mode = "mock"

    def __init__(self, *, max_bytes: int = 200_000) -> None:
        self.max_bytes = max_bytes

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer one call with a deterministic made-up response."""
        started = time.perf_counter()
        try:
            url = full_url(build_request(spec, arguments))
        except RequestError as exc:
            return failure_result(str(exc), url=spec.url_template, latency_ms=0.0, mode=self.mode)
        missing = [name for name in spec.required_names if arguments.get(name) is None]
        if missing:
            data: Any = {"error": "Bad Request", "message": f"missing {', '.join(missing)}"}
            status = 400
            content, content_type = json.dumps(data).encode(), "application/json"
        else:
            status = spec.response.status
            content, content_type = encode_body(synthesize(spec, arguments), spec.response)
        body = describe_body(content, content_type, max_bytes=self.max_bytes)
        latency = round((time.perf_counter() - started) * 1000, 3)
        return response_result(
            status=status, reason="", body=body, url=url, latency_ms=latency, mode=self.mode
        )

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Same as :meth:`call`: nothing here blocks."""
        return self.call(spec, arguments)

    def close(self) -> None:
        """Nothing to release."""
