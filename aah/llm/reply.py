"""What aah accepts as a chat completion, checked once where a reply comes in.

Servers differ, and some are broken or hostile: a reply may lack choices,
carry a string where an object belongs, or be an HTML page with status 200.
``read_completion`` turns the raw body into a validated ``Completion`` or
raises ``ModelReplyError`` with one line naming the server and the shape, so
nothing after the client boundary meets a shape it did not expect. Fields
aah does not read are tolerated.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from aah.bounds import MAX_NESTING, text_nests_deeper
from aah.llm.errors import ModelReplyError
from aah.storable import storable

# How much of an unreadable body an error message quotes.
QUOTE_CHARS = 80
# No call uses more tokens than this: a larger count is a broken server's.
MAX_CALL_TOKENS = 10**9
USAGE_FIELDS = ("prompt_tokens", "completion_tokens")
_log = logging.getLogger(__name__)
_FIX = "check that it is an OpenAI-compatible chat completions endpoint"


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class WireFunction(_Lenient):
    """A called function: its name, and its arguments as JSON text or an object."""

    name: StrictStr | None = None
    arguments: StrictStr | dict[str, Any] | None = None


class WireToolCall(_Lenient):
    """One entry of a message's ``tool_calls``."""

    id: StrictStr | None = None
    function: WireFunction


class WireMessage(_Lenient):
    """The message of a choice; the legacy ``function_call`` counts as a call."""

    content: StrictStr | None = None
    tool_calls: list[WireToolCall] | None = None
    function_call: WireFunction | None = None


class WireChoice(_Lenient):
    """One choice of a completion."""

    message: WireMessage
    finish_reason: StrictStr | None = None


class WireUsage(_Lenient):
    """Token counts, when the server reports them (only sane ones, see ``sane_usage``)."""

    prompt_tokens: StrictInt | None = None
    completion_tokens: StrictInt | None = None


class Completion(_Lenient):
    """A chat completion as aah accepts it."""

    choices: list[WireChoice]
    usage: WireUsage | None = None
    model: StrictStr | None = None


def read_completion(raw: bytes, url: str) -> tuple[Completion, dict[str, Any]]:
    """The validated completion in ``raw`` from the server at ``url``, and its JSON.

    The parsed JSON is returned too because reasoning fields are read from it
    (their names differ between servers).

    Raises:
        ModelReplyError: ``raw`` is not a chat completion aah can read.
    """
    data = parse_json(raw, url)
    if not isinstance(data, dict):
        raise reply_error(url, f"JSON that is {json_type(data)}, not an object")
    if data.get("error") is not None:
        raise reply_error(url, f"an error with status 200: {error_text(data['error'])}")
    if not data.get("choices") and isinstance(data.get("choices"), list):
        raise reply_error(url, "a reply without choices")
    if "usage" in data:
        data["usage"] = sane_usage(data["usage"], url)
    try:
        completion = Completion.model_validate(data)
    except ValidationError as exc:
        raise reply_error(url, describe_shape(exc)) from None
    return completion, data


def sane_usage(usage: Any, url: str) -> dict[str, int] | None:
    """The token counts of a reply's ``usage`` that are counts; the rest dropped, with a warning.

    A count is a whole number from 0 to ``MAX_CALL_TOKENS``, as a JSON
    integer (or a float with no fraction). A boolean, a string ("12"), a
    negative, a fraction, a non-finite or an absurd value says nothing
    true about the call: it is ignored (as a server that reports no usage
    is) rather than refusing a reply whose message is fine, or summing
    ``-1e9`` tokens into a report. Each kind of bad value is logged once
    per server.
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        _warn_once(url, "usage", usage)
        return None
    counts: dict[str, int] = {}
    for field in USAGE_FIELDS:
        value = usage.get(field)
        if value is None:
            continue
        count = token_count(value)
        if count is None:
            _warn_once(url, f"usage.{field}", value)
        else:
            counts[field] = count
    return counts


def token_count(value: Any) -> int | None:
    """``value`` as a token count of one call, or None when it is not a sane one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if 0 <= value <= MAX_CALL_TOKENS else None


_WARNED: set[tuple[str, str]] = set()


def _warn_once(url: str, field: str, value: Any) -> None:
    if (url, field) in _WARNED:
        return
    _WARNED.add((url, field))
    shown = json_type(value) if isinstance(value, dict | list | str) else one_line(repr(value), 40)
    _log.warning(
        "the model server at %s reported %s as %s, not a token count from 0 to %s: ignored",
        url,
        field,
        shown,
        f"{MAX_CALL_TOKENS:,}",
    )


def parse_json(raw: bytes, url: str) -> Any:
    r"""The JSON value in ``raw``, every string in it storable (see ``aah.storable``).

    Bytes that are not UTF-8 (or the encoding a BOM names) and ``\ud800``
    escapes that name half a character become U+FFFD; NaN and Infinity are
    refused like any non-JSON, and so is an integer too long for Python to
    read.

    Raises:
        ModelReplyError: ``raw`` is empty, not JSON, or nested too deep to read.
    """
    if not raw.strip():
        raise reply_error(url, "an empty body")
    if text_nests_deeper(raw):
        # Found before parsing: no parser or later walk meets more levels than aah reads.
        raise reply_error(url, f"JSON nested deeper than {MAX_NESTING} levels")
    try:
        text = raw.decode(json.detect_encoding(raw), "replace")
        data = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise reply_error(url, f"a body that is not JSON: {quote(raw)}") from None
    # Only a surrogate or NUL escape can put an unstorable character in
    # decoded JSON (strict JSON refuses a raw NUL); most replies have
    # neither, and skip the walk.
    if _UNSTORABLE_ESCAPE.search(text):
        data = storable(data)
    return data


_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F]|0000)")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def reply_error(url: str, shape: str) -> ModelReplyError:
    """The one-line error for a reply of ``shape`` from the server at ``url``."""
    return ModelReplyError(f"the model server at {url} sent {shape}: {_FIX}", url=url)


def describe_shape(exc: ValidationError) -> str:
    """The first thing wrong with a reply, in JSON terms: where, what it is, what was expected."""
    first = exc.errors(include_url=False)[0]
    # A union's error names the member tried ("str", "dict[str,any]"): not a place.
    path = [p for p in first["loc"] if isinstance(p, int) or p not in _UNION_MEMBERS]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    if first["type"] == "missing":
        return f"a reply whose {where} is missing"
    got = json_type(first["input"])
    expected = _EXPECTED.get(first["type"].split("_")[0], "another type")
    return f"a reply whose {where} is {got}, expected {expected}"


_UNION_MEMBERS = frozenset({"str", "int", "float", "dict[str,any]", "WireFunction"})
_EXPECTED = {
    "model": "an object",
    "dict": "an object",
    "list": "a list",
    "string": "a string",
    "int": "a number",
    "float": "a number",
}


def json_type(value: Any) -> str:
    """What ``value`` is, named as JSON names it ("a string", "null"...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"  # finite, however many digits (math.isfinite would overflow)
    if isinstance(value, float):
        return "a number" if math.isfinite(value) else "a non-finite number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def error_text(error: Any) -> str:
    """The message inside a JSON ``error`` value, on one short line."""
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or json.dumps(error)
    return one_line(str(error))


def one_line(text: str, limit: int = 300) -> str:
    """``text`` with whitespace runs collapsed, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def quote(raw: bytes) -> str:
    """The start of an unreadable body, as a short quoted line."""
    return repr(one_line(raw[: QUOTE_CHARS * 4].decode("utf-8", "replace"), QUOTE_CHARS))
