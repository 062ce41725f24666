"""Mock mode: answers made up from an endpoint's response sketch, without network.

The same call (qualified name and arguments) always gets the same answer: a
random generator is seeded from a hash of both. Sketch kinds:

- ``example``: returned as is.
- ``template``: type words ("string", "float", "int", "boolean", "date",
  "list", ...) are replaced by plausible values of that type; other values
  are the spec's own examples and are kept. A template that is really a JSON
  schema is read as one.
- ``schema``: a JSON-schema instance (type, properties, items, enum, format,
  example, examples), nested at most :data:`MAX_DEPTH` levels.
- ``none``: a small JSON object echoing the call.

Made-up values must look right to a person watching a live demo, so they
agree with the call and with each other: one place per response (nearest to
the call's coordinates, or named by it) gives the timezone, its abbreviation
and offset, the city and country; series are as long as the days asked for,
with ISO times a step apart; numbers named like a known quantity
(temperature, precipitation, humidity...) fall in its range.

A call missing a required argument gets a 400, as a real API would answer.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from aah.secrets import REDACTED, is_secret_name
from aah.tools.http.request import RequestError, build_request, full_url
from aah.tools.http.results import ToolResult, describe_body, failure_result, response_result
from aah.tools.spec import EndpointSpec, ResponseSketch

MAX_DEPTH = 6
MAX_PROPERTIES = 40
# A made-up series (a "list" in a template) has this many values unless the
# call says how many days, and never more than MAX_SERIES.
DEFAULT_SERIES = 3
DEFAULT_DAYS = 7
MAX_SERIES = 24 * 16
_TYPE_WORD = re.compile(r"^\s*([a-z_-]+)\s*(?:[(:,\-].*)?$", re.IGNORECASE | re.DOTALL)
_WORDS = (
    "amber", "harbor", "summit", "willow", "cobalt", "meadow", "orbit", "lumen",
    "canyon", "ember", "glacier", "prairie", "quartz", "sierra", "tundra", "velvet",
)  # fmt: skip
_NAMES = ("Ada Lovelace", "Alan Turing", "Grace Hopper", "Katherine Johnson", "Linus Pauling")
_EPOCH = date(2024, 1, 1)
# Returned by typed_value for a word that names no type: the template keeps it.
_UNKNOWN = object()
_JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")


class Place(NamedTuple):
    """A real place whose fields agree: a response about it never mixes two of them."""

    city: str
    country: str
    country_code: str
    latitude: float
    longitude: float
    timezone: str
    # Standard-time abbreviation and offset, as an API answering in winter gives them.
    abbreviation: str
    utc_offset_seconds: int
    elevation: float


_PLACES = (
    Place("Lisbon", "Portugal", "PT", 38.72, -9.14, "Europe/Lisbon", "WET", 0, 45.0),
    Place("Reykjavik", "Iceland", "IS", 64.15, -21.94, "Atlantic/Reykjavik", "GMT", 0, 20.0),
    Place("London", "United Kingdom", "GB", 51.51, -0.13, "Europe/London", "GMT", 0, 11.0),
    Place("Madrid", "Spain", "ES", 40.42, -3.70, "Europe/Madrid", "CET", 3600, 657.0),
    Place("Paris", "France", "FR", 48.86, 2.35, "Europe/Paris", "CET", 3600, 35.0),
    Place("Berlin", "Germany", "DE", 52.52, 13.41, "Europe/Berlin", "CET", 3600, 38.0),
    Place("Oslo", "Norway", "NO", 59.91, 10.75, "Europe/Oslo", "CET", 3600, 23.0),
    Place("Rome", "Italy", "IT", 41.90, 12.50, "Europe/Rome", "CET", 3600, 21.0),
    Place("Athens", "Greece", "GR", 37.98, 23.73, "Europe/Athens", "EET", 7200, 70.0),
    Place("Moscow", "Russia", "RU", 55.76, 37.62, "Europe/Moscow", "MSK", 10800, 156.0),
    Place("Cairo", "Egypt", "EG", 30.04, 31.24, "Africa/Cairo", "EET", 7200, 23.0),
    Place("Lagos", "Nigeria", "NG", 6.52, 3.38, "Africa/Lagos", "WAT", 3600, 41.0),
    Place("Nairobi", "Kenya", "KE", -1.29, 36.82, "Africa/Nairobi", "EAT", 10800, 1795.0),
    Place(
        "Johannesburg",
        "South Africa",
        "ZA",
        -26.20,
        28.05,
        "Africa/Johannesburg",
        "SAST",
        7200,
        1753.0,
    ),  # fmt: skip
    Place("Dubai", "United Arab Emirates", "AE", 25.20, 55.27, "Asia/Dubai", "+04", 14400, 5.0),
    Place("Delhi", "India", "IN", 28.61, 77.21, "Asia/Kolkata", "IST", 19800, 216.0),
    Place("Bangkok", "Thailand", "TH", 13.76, 100.50, "Asia/Bangkok", "+07", 25200, 4.0),
    Place("Singapore", "Singapore", "SG", 1.35, 103.82, "Asia/Singapore", "+08", 28800, 15.0),
    Place("Shanghai", "China", "CN", 31.23, 121.47, "Asia/Shanghai", "CST", 28800, 4.0),
    Place("Seoul", "South Korea", "KR", 37.57, 126.98, "Asia/Seoul", "KST", 32400, 38.0),
    Place("Tokyo", "Japan", "JP", 35.68, 139.69, "Asia/Tokyo", "JST", 32400, 40.0),
    Place("Perth", "Australia", "AU", -31.95, 115.86, "Australia/Perth", "AWST", 28800, 20.0),
    Place("Sydney", "Australia", "AU", -33.87, 151.21, "Australia/Sydney", "AEST", 36000, 58.0),
    Place("Auckland", "New Zealand", "NZ", -36.85, 174.76, "Pacific/Auckland", "NZST", 43200, 26.0),
    Place(
        "Honolulu",
        "United States",
        "US",
        21.31,
        -157.86,
        "Pacific/Honolulu",
        "HST",
        -36000,
        6.0,
    ),  # fmt: skip
    Place(
        "Anchorage",
        "United States",
        "US",
        61.22,
        -149.90,
        "America/Anchorage",
        "AKST",
        -32400,
        31.0,
    ),  # fmt: skip
    Place(
        "Los Angeles",
        "United States",
        "US",
        34.05,
        -118.24,
        "America/Los_Angeles",
        "PST",
        -28800,
        71.0,
    ),  # fmt: skip
    Place("Denver", "United States", "US", 39.74, -104.99, "America/Denver", "MST", -25200, 1609.0),
    Place("Chicago", "United States", "US", 41.88, -87.63, "America/Chicago", "CST", -21600, 181.0),
    Place(
        "Mexico City",
        "Mexico",
        "MX",
        19.43,
        -99.13,
        "America/Mexico_City",
        "CST",
        -21600,
        2240.0,
    ),  # fmt: skip
    Place(
        "New York",
        "United States",
        "US",
        40.71,
        -74.01,
        "America/New_York",
        "EST",
        -18000,
        10.0,
    ),  # fmt: skip
    Place("Toronto", "Canada", "CA", 43.65, -79.38, "America/Toronto", "EST", -18000, 76.0),
    Place("Bogota", "Colombia", "CO", 4.71, -74.07, "America/Bogota", "-05", -18000, 2640.0),
    Place("Lima", "Peru", "PE", -12.05, -77.04, "America/Lima", "-05", -18000, 154.0),
    Place("Sao Paulo", "Brazil", "BR", -23.55, -46.63, "America/Sao_Paulo", "-03", -10800, 760.0),
    Place(
        "Buenos Aires",
        "Argentina",
        "AR",
        -34.60,
        -58.38,
        "America/Argentina/Buenos_Aires",
        "-03",
        -10800,
        25.0,
    ),  # fmt: skip
)
# Numbers named like these get values in a range such a quantity has: (low, high, decimals).
_QUANTITIES: tuple[tuple[tuple[str, ...], tuple[float, float, int]], ...] = (
    (("generationtime",), (0.02, 1.5, 3)),
    (("precipitation", "rain", "snow", "shower"), (0.0, 6.0, 1)),
    (("humidity", "cloud", "probability", "percent"), (0.0, 100.0, 0)),
    (("wind", "gust", "speed"), (0.0, 35.0, 1)),
    (("pressure",), (990.0, 1035.0, 1)),
    (("elevation", "altitude"), (0.0, 400.0, 1)),
    (("uv",), (0.0, 9.0, 1)),
    (("price", "cost", "amount", "fee"), (1.0, 500.0, 2)),
    (("rating", "score"), (1.0, 5.0, 1)),
    (("rate",), (0.5, 2.0, 4)),
    (("percent", "ratio"), (0.0, 1.0, 3)),
)


@dataclass
class _Call:
    """What one made-up response must agree with: the call's place, day and series length."""

    rng: random.Random
    given: Mapping[str, Any]
    place: Place
    day: date
    days: int


def _call_context(rng: random.Random, given: Mapping[str, Any]) -> _Call:
    day = _EPOCH + timedelta(days=rng.randrange(730))
    days = next(
        (int(v) for k, v in given.items() if "days" in k.lower() and _is_int(v) and 0 < v < 17),
        DEFAULT_DAYS,
    )
    return _Call(rng, given, _place_for(given, rng), day, days)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _place_for(given: Mapping[str, Any], rng: random.Random) -> Place:
    """The place a call is about: nearest to its coordinates, named by it, or any."""
    lowered = {k.lower(): v for k, v in given.items()}
    lat = next((_number(lowered[k]) for k in ("latitude", "lat") if k in lowered), None)
    lon = next((_number(lowered[k]) for k in ("longitude", "lon", "lng") if k in lowered), None)
    if lat is not None and lon is not None and -90 <= lat <= 90 and -180 <= lon <= 180:
        return min(_PLACES, key=lambda p: _distance(p, lat, lon))
    words = " ".join(str(v) for v in given.values() if isinstance(v, str)).casefold()
    for place in _PLACES:
        if place.city.casefold() in words or place.timezone.casefold() in words:
            return place
    return rng.choice(_PLACES)


def _distance(place: Place, lat: float, lon: float) -> float:
    """Great-circle distance in radians (haversine), enough to find the nearest place."""
    p1, p2 = math.radians(place.latitude), math.radians(lat)
    dp, dl = p2 - p1, math.radians(lon - place.longitude)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * math.asin(min(1.0, math.sqrt(a)))


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
    call = _call_context(rng, given)
    try:
        if sketch.kind == "example":
            return sketch.content
        if sketch.kind == "template" and _looks_like_schema(content):
            # Some specs give a JSON schema where a template is expected.
            return echo_arguments(from_schema(content, rng, call=call), given)
        if sketch.kind == "template":
            data = from_template(content, rng, call=call)
            data = with_requested_series(data, call, {p.name for p in spec.parameters})
            return echo_arguments(data, given)
        if sketch.kind == "schema" and isinstance(content, Mapping):
            return echo_arguments(from_schema(content, rng, call=call), given)
    except (TypeError, ValueError, OverflowError):
        # A malformed sketch (say, "minimum": "low") must not break a run.
        return echo
    return echo


def _looks_like_schema(content: Any) -> bool:
    return (
        isinstance(content, Mapping)
        and content.get("type") in _JSON_TYPES
        and any(key in content for key in ("properties", "items"))
    )


def echo_arguments(data: Any, given: Mapping[str, Any], depth: int = 0) -> Any:
    """``data`` with fields named like an argument holding that argument's value.

    An API asked about latitude 52.52 answers about 52.52; a made-up response
    that agrees with the call reads as a plausible answer, not as noise. A
    value the API would resolve itself (``auto``) is not echoed.
    """
    if depth > MAX_DEPTH:
        return data
    if isinstance(data, dict):
        return {
            key: given[key]
            if key in given and _echoable(given[key]) and _scalar(value)
            else echo_arguments(value, given, depth + 1)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [echo_arguments(item, given, depth + 1) for item in data]
    return data


def _echoable(value: Any) -> bool:
    return _scalar(value) and not (isinstance(value, str) and value.lower() == "auto")


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def with_requested_series(data: Any, call: _Call, parameters: set[str] | None = None) -> Any:
    """``data`` with the time series the call asked for, where the API keeps series.

    An API that answers time series in sections (an object holding a ``time``
    list, such as ``hourly``) answers an argument listing variables (say
    ``daily=[temperature_2m_max]``) with a section of that name holding
    exactly those variables, each as long as its ``time``. Once the call asks
    for a section, the sections named after ``parameters`` it left out go.
    """
    if not isinstance(data, dict) or not any(_is_series_section(v) for v in data.values()):
        return data
    result = dict(data)
    requested = [
        name
        for name, value in call.given.items()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value)
    ]
    if requested:
        left_out = (parameters or set()) - set(requested)
        for name in [k for k, v in data.items() if k in left_out and _is_series_section(v)]:
            result.pop(name, None)
            result.pop(f"{name}_units", None)
    for name in requested:
        value = call.given[name]
        variables = list(dict.fromkeys(v for v in value if v != "time"))[:MAX_PROPERTIES]
        section: dict[str, Any] = {"time": "list", **dict.fromkeys(variables, "list")}
        if _moment_section(name):
            section = {"time": "datetime", **dict.fromkeys(variables, "float")}
        result[name] = from_template(section, call.rng, name, call=call)
        units = next((k for k in data if k.endswith("_units")), None)
        if units is not None:
            result[f"{name}_units"] = {"time": "iso8601", **{v: _unit(v) for v in variables}}
    return result


def _is_series_section(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("time"), list)


def _moment_section(name: str) -> bool:
    """A section about one moment (``current``) holds values, not lists."""
    return "current" in name.lower() or "now" in name.lower()


def _unit(variable: str) -> str:
    name = variable.lower()
    units = (
        (("temperature", "dew_point", "apparent"), "°C"),
        (("precipitation", "rain", "snow", "shower"), "mm"),
        (("humidity", "cloud", "probability"), "%"),
        (("wind", "gust", "speed"), "km/h"),
        (("pressure",), "hPa"),
    )
    return next((unit for words, unit in units if any(w in name for w in words)), "")


def from_template(
    template: Any,
    rng: random.Random,
    key: str = "",
    depth: int = 0,
    *,
    call: _Call | None = None,
) -> Any:
    """Replace each type word in a template with a plausible value of that type.

    Values that are not type words are the spec's own examples and are kept.
    The lists of one object (a series section) all get the length of its
    ``time`` list.
    """
    call = call or _call_context(rng, {})
    if depth > MAX_DEPTH:
        return None
    if isinstance(template, Mapping):
        items = list(template.items())[:MAX_PROPERTIES]
        if key.lower().endswith("units"):
            return {str(k): _unit(str(k)) if _type_word(v) else v for k, v in items}
        length = _series_length(key, call) if "time" in template else None
        return {
            str(k): _series(str(k), length, call)
            if length is not None and _list_word(v)
            else from_template(v, rng, str(k), depth + 1, call=call)
            for k, v in items
        }
    if isinstance(template, list):
        return [from_template(item, rng, key, depth + 1, call=call) for item in template]
    if isinstance(template, str):
        match = _TYPE_WORD.match(template)
        if match:
            value = typed_value(match.group(1), rng, key, call=call)
            if value is not _UNKNOWN:
                return value
    return template


def _type_word(value: Any) -> bool:
    return isinstance(value, str) and _TYPE_WORD.match(value) is not None


def _list_word(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("list", "array")


def _series_length(section: str, call: _Call) -> int:
    name = section.lower()
    if "hour" in name:
        return min(24 * call.days, MAX_SERIES)
    if "dai" in name or "day" in name:
        return call.days
    return DEFAULT_SERIES


def _series(key: str, length: int | None, call: _Call) -> list[Any]:
    """``length`` values of what ``key`` names: times a step apart, or numbers, or words."""
    count = DEFAULT_SERIES if length is None else length
    name = key.lower()
    if name in ("time", "date", "datetime", "timestamp") or name.endswith(("_time", "_date")):
        hourly = count > call.days or count > DEFAULT_DAYS
        start = datetime.combine(call.day, datetime.min.time())
        step = timedelta(hours=1) if hourly else timedelta(days=1)
        moments = [start + step * n for n in range(count)]
        return [m.strftime("%Y-%m-%dT%H:%M") if hourly else m.date().isoformat() for m in moments]
    if _numeric_name(name):
        return _numeric_series(name, count, call)
    return [string_value(call.rng, _singular(key), call=call) for _ in range(count)]


def _numeric_series(name: str, count: int, call: _Call) -> list[float]:
    """Numbers that change the way a measured quantity does: a little from one to the next.

    Precipitation-like quantities come and go; the others drift from a first
    value in their range.
    """
    first = _quantity(name, call)
    if any(word in name for word in ("precipitation", "rain", "snow", "shower")):
        return [first] + [_quantity(name, call) for _ in range(count - 1)]
    values, spread = [first], max(abs(first) * 0.05, 0.3)
    for _ in range(count - 1):
        step = call.rng.gauss(0, spread)
        values.append(
            round(
                max(values[-1] + step, 0.0)
                if first >= 0 and "temp" not in name
                else values[-1] + step,
                1,
            )
        )
    return values


def _singular(key: str) -> str:
    return key[:-1] if key.endswith("s") and not key.endswith("ss") else key


def _numeric_name(name: str) -> bool:
    return "temp" in name or any(w in name for words, _ in _QUANTITIES for w in words)


def _quantity(name: str, call: _Call) -> float:
    """A number in the range a quantity called ``name`` has, where it is known."""
    rng = call.rng
    if "temp" in name or "dew_point" in name:
        # Warmer nearer the equator, and in the place's summer (July in the north).
        latitude = call.place.latitude
        season = math.cos(2 * math.pi * (call.day.timetuple().tm_yday - 196) / 365)
        mean = 30 - abs(latitude) * 0.4 + 8 * season * max(-1.0, min(1.0, latitude / 30))
        mean += 4 if "max" in name else -4 if "min" in name else 0
        return round(rng.gauss(mean, 2.5), 1)
    for words, (low, high, decimals) in _QUANTITIES:
        if any(word in name for word in words):
            if words[0] == "precipitation" or "rain" in words:
                # Most days are dry.
                return 0.0 if rng.random() < 0.6 else round(rng.uniform(low, high), decimals)
            value = rng.uniform(low, high)
            return float(round(value, decimals)) if decimals else float(round(value))
    return round(rng.uniform(0, 1000), 2)


def typed_value(
    type_word: str, rng: random.Random, key: str = "", *, call: _Call | None = None
) -> Any:
    """A value for a type word such as ``int`` or ``date``; the key hints at what it holds."""
    call = call or _call_context(rng, {})
    word = type_word.lower().replace("_", "-")
    hint = key.lower()
    if word in ("string", "str", "text"):
        return string_value(rng, key, call=call)
    if word in ("int", "integer", "long", "int32", "int64"):
        if "offset" in hint and "utc" in hint:
            return call.place.utc_offset_seconds
        return rng.randint(1, 1000)
    if word in ("float", "double", "number", "decimal", "numeric"):
        return _place_number(hint, call)
    if word in ("bool", "boolean"):
        return rng.random() < 0.5
    if word in ("null", "none"):
        return None
    if word in ("list", "array"):
        return _series(key, None, call)
    if word in ("dict", "object", "map"):
        return {}
    if word == "iso8601":
        return word
    return _formatted(word, rng, _UNKNOWN, call=call)


def _place_number(hint: str, call: _Call) -> float:
    if hint in ("lat", "latitude"):
        return call.place.latitude
    if hint in ("lon", "lng", "longitude"):
        return call.place.longitude
    if hint == "elevation":
        return call.place.elevation
    return _quantity(hint, call)


def _formatted(fmt: str, rng: random.Random, fallback: Any, *, call: _Call | None = None) -> Any:
    """A string in a well-known format (JSON-schema ``format`` names included)."""
    day = call.day if call is not None else _EPOCH + timedelta(days=rng.randrange(730))
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


def string_value(rng: random.Random, key: str = "", *, call: _Call | None = None) -> str:
    """A plausible string, guided by the field name when it says what it holds.

    Place fields (timezone, its abbreviation, city, country) all describe the
    call's place, so they agree with each other and with its coordinates.
    """
    place = (call or _call_context(rng, {})).place
    hint = key.lower()
    for fmt in ("email", "url", "uuid"):
        if fmt in hint:
            return str(_formatted(fmt, rng, "", call=call))
    if "abbreviation" in hint or "abbr" in hint and ("tz" in hint or "zone" in hint):
        return place.abbreviation
    if "timezone" in hint or "time_zone" in hint or hint in ("tz", "tzid"):
        return place.timezone
    if "country" in hint:
        return place.country_code if "code" in hint or hint.endswith("iso") else place.country
    if "date" in hint:
        return str(_formatted("date", rng, "", call=call))
    if hint == "time" or "time" in hint and "zone" not in hint:
        return str(_formatted("date-time", rng, "", call=call))
    if "city" in hint or "location" in hint or "place" in hint or "town" in hint:
        return place.city
    if hint.endswith("name"):
        return rng.choice(_NAMES)
    if hint == "id" or hint.endswith("_id"):
        return f"{rng.getrandbits(40):010x}"
    return rng.choice(_WORDS)


def from_schema(
    schema: Mapping[str, Any],
    rng: random.Random,
    key: str = "",
    depth: int = 0,
    *,
    call: _Call | None = None,
) -> Any:
    """An instance of a JSON schema; unresolvable parts (``$ref``) become ``None``.

    The schema's own values come first: ``const``, ``example``, the first of
    ``examples``, ``default``.
    """
    call = call or _call_context(rng, {})
    if depth > MAX_DEPTH:
        return None
    for given in ("const", "example", "default"):
        if given in schema:
            return schema[given]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for alternatives in ("oneOf", "anyOf"):
        options = schema.get(alternatives)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            return from_schema(options[0], rng, key, depth + 1, call=call)
    kind = _schema_type(schema)
    if kind == "object":
        return _object_instance(schema, rng, depth, call)
    if kind == "array":
        items = schema.get("items")
        count = max(1, min(int(schema.get("minItems", 2)), 3))
        if not isinstance(items, Mapping):
            return []
        return [from_schema(items, rng, key, depth + 1, call=call) for _ in range(count)]
    if kind in ("integer", "number"):
        return _schema_number(schema, kind, key, call)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        fmt = str(schema.get("format", ""))
        return _formatted(fmt, rng, None, call=call) or string_value(rng, key, call=call)
    return None


def _schema_number(schema: Mapping[str, Any], kind: str, key: str, call: _Call) -> float | int:
    rng = call.rng
    bounded = "minimum" in schema or "maximum" in schema
    if (
        not bounded
        and kind == "number"
        and _numeric_name(key.lower())
        or key
        in (
            "latitude",
            "longitude",
        )
    ):
        return _place_number(key.lower(), call)
    low, high = schema.get("minimum", 0), schema.get("maximum", 1000)
    if kind == "integer":
        return rng.randint(int(low), max(int(low), int(high)))
    return round(rng.uniform(float(low), float(high)), 2)


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


def _object_instance(
    schema: Mapping[str, Any], rng: random.Random, depth: int, call: _Call
) -> dict[str, Any]:
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    # allOf parts are merged into one object, the usual way APIs extend a base type.
    for part in schema.get("allOf") or []:
        if isinstance(part, Mapping):
            properties.update(part.get("properties") or {})
    items = list(properties.items())[:MAX_PROPERTIES]
    return {
        name: from_schema(sub, rng, name, depth + 1, call=call)
        if isinstance(sub, Mapping)
        else None
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
