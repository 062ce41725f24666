"""What every message to ``aah mcp serve`` passes before the SDK reads it, on every transport.

The SDK's readers drop a message they cannot validate (over stdio, without a
word) or answer it without its id (over HTTP): a client whose request held a
lone surrogate, a ``params`` that is text or a ``jsonrpc`` of "1.0" would
wait for ever. :func:`screen_message` reads each message first, the stdio
lines and the HTTP bodies alike:

- a message aah reads and the SDK's own validator takes goes on, as it came
  (less a BOM and blanks around it), so the SDK never drops it;
- any other gets a JSON-RPC 2.0 error for its id: -32700 (no JSON aah
  reads), -32600 (no request MCP reads), -32602 (its ``params`` are not
  what MCP or aah takes). The id comes from the parsed message or, in text
  that is no JSON, from a lenient scan of its top-level keys;
- one with no id to answer (a notification, a response, an id past bounds)
  is dropped with a note for the server's log: one scrubbed line saying
  why, never the message.

The bounds: a message is at most :data:`~aah.mcp.caps.MAX_MESSAGE_BYTES`
and nests at most :data:`MAX_MESSAGE_NESTING` levels; a number is at most
:data:`~aah.bounds.MAX_NUMBER_DIGITS` digits (as every face reads numbers)
and no NaN or Infinity; text is valid
Unicode (no lone surrogates); an id is text of at most :data:`MAX_ID_CHARS`
characters or an integer of at most :data:`MAX_ID_INTEGER`; a method is at
most :data:`MAX_METHOD_CHARS` characters; a client's name, version and title
(``clientInfo``) are at most :data:`CLIENT_INFO_CHARS` characters each.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, NamedTuple

from aah import bounds
from aah.bounds import MAX_NESTING, text_nests_deeper
from aah.secrets import scrub_text
from aah.terminal_text import printable

# JSON-RPC 2.0's errors for a message the server cannot take (§5.1).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

# How deep a whole message may nest: below the SDK parser's 200 (pydantic's
# JSON limit), and far enough above MAX_NESTING, plus the envelope around a
# call's arguments, that the tool's own check names the field that is too deep.
MAX_MESSAGE_NESTING = 190
# The most digits a number aah reads may have: the one bound of every face
# (aah.bounds.check_number), so a proposed argument can be edited back on the page.
MAX_NUMBER_DIGITS = bounds.MAX_NUMBER_DIGITS
# An id aah answers: text of at most this many characters...
MAX_ID_CHARS = 200
# ...or an integer every JSON peer holds exactly (a double's 53 bits).
MAX_ID_INTEGER = 2**53 - 1
MAX_METHOD_CHARS = 200
# The longest name, version and title a client may give (``clientInfo``).
CLIENT_INFO_CHARS = 200
# The most requests of one batch answered (each answer is a line the client reads).
MAX_BATCH_ANSWERS = 100
# How much of a message past the size cap is kept to find its id.
HEAD_BYTES = 65_536
# The longest note for the server's log.
NOTE_CHARS = 300

_BOM = b"\xef\xbb\xbf"
# The client info the 2026-07-28 revision sends in every request's ``_meta``.
_CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"

RequestId = str | int


class Screened(NamedTuple):
    """What becomes of one message from a client.

    Attributes:
        message: The message for the SDK to read; None when it goes no further.
        error: The JSON-RPC error (``code`` and ``message``) it was refused with.
        answer_to: The ids to send ``error`` to: the request's, or none.
        note: The line for the server's log when a request goes unanswered.
    """

    message: str | None = None
    error: dict[str, Any] | None = None
    answer_to: tuple[RequestId, ...] = ()
    note: str | None = None

    def replies(self) -> list[dict[str, Any]]:
        """The JSON-RPC 2.0 error responses to send, one per id in ``answer_to``."""
        return [{"jsonrpc": "2.0", "id": rid, "error": self.error} for rid in self.answer_to]


class _Refusal(Exception):
    """Why a message goes no further, with its JSON-RPC error code."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class _Unread:
    """A value parsed but not read: NaN, Infinity or a number past the length cap."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what


def screen_message(raw: bytes) -> Screened:
    """What becomes of the message ``raw`` (one stdio line, one HTTP body).

    Never raises: whatever ``raw`` holds, the result says to pass it on or
    whom to answer with which error.
    """
    text = raw.removeprefix(_BOM).strip()
    if not text:
        return _refused(PARSE_ERROR, "the message is empty: send one JSON-RPC 2.0 message", None)
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"the message is not UTF-8 (byte {exc.start:,} is not): send JSON in UTF-8"
        return _refused(PARSE_ERROR, reason, scanned_id(text))
    # Parsed even when too deep for the SDK (Python's parser goes ten times as
    # deep), so the id answered is the one a parser reads.
    deep = _Refusal(
        INVALID_REQUEST,
        f"the message nests deeper than {MAX_MESSAGE_NESTING} levels "
        f"(data may nest {MAX_NESTING}): flatten it",
    )
    try:
        value = json.loads(
            decoded, parse_constant=_Unread, parse_int=_read_int, parse_float=_read_float
        )
    except RecursionError:
        return _refused(deep.code, deep.reason, scanned_id(text))
    except ValueError as exc:
        reason = f"the message is not JSON ({exc}): send one JSON-RPC 2.0 message"
        return _refused(PARSE_ERROR, reason, scanned_id(text))
    if isinstance(value, list):
        return _batch(value)
    if not isinstance(value, dict):
        reason = f"the message is {_kind(value)}, not a JSON-RPC request object: send one object"
        return _refused(INVALID_REQUEST, reason, None)
    request_id, id_problem = _id_of(value)
    try:
        if text_nests_deeper(text, limit=MAX_MESSAGE_NESTING):
            raise deep
        _check_envelope(value, id_problem)
        _sdk_reads(decoded)
    except _Refusal as refusal:
        answered = None if _is_response(value) else request_id
        return _refused(refusal.code, refusal.reason, answered, _what(value))
    return Screened(message=decoded)


def screen_too_large(head: bytes, max_bytes: int) -> Screened:
    """What becomes of a message past ``max_bytes``, of which ``head`` was kept: refused."""
    reason = (
        f"the message is over aah's cap of {max_bytes:,} bytes: a question or a call "
        "to approve is text a person reads; send less"
    )
    return _refused(INVALID_REQUEST, reason, scanned_id(head[:HEAD_BYTES]))


def _refused(
    code: int, reason: str, request_id: RequestId | None, what: str = "message"
) -> Screened:
    error = {"code": code, "message": reason}
    if request_id is not None:
        return Screened(error=error, answer_to=(request_id,))
    return Screened(error=error, note=log_note(f"dropped a {what} with no id to answer: {reason}"))


def log_note(text: str) -> str:
    """``text`` as the server's log takes it: scrubbed of secrets and controls, one short line."""
    line = " ".join(printable(scrub_text(text) or "").split())
    # A character no font shows (unassigned, such as U+D7FC) is a "?" in a log line.
    line = "".join(char if char.isprintable() else "?" for char in line)
    line = f"aah mcp serve: {line}"
    return line if len(line) <= NOTE_CHARS else line[: NOTE_CHARS - 1] + "…"


def _read_int(token: str) -> int | _Unread:
    digits = _digits(token)
    if digits > MAX_NUMBER_DIGITS:
        return _Unread(f"a number of {digits:,} digits")
    return int(token)


def _read_float(token: str) -> float | _Unread:
    digits = _digits(token)
    if digits > MAX_NUMBER_DIGITS:
        return _Unread(f"a number of {digits:,} digits")
    return float(token)


def _digits(token: str) -> int:
    return sum(map(token.count, "0123456789"))


def _batch(items: list[Any]) -> Screened:
    """A JSON array of messages: each request in it is answered, none is read."""
    reason = (
        "a batch (a JSON array of messages) is not read: send one JSON-RPC 2.0 message at a time"
    )
    ids: dict[RequestId, None] = {}
    for item in items:
        if isinstance(item, dict) and not _is_response(item):
            request_id, _ = _id_of(item)
            if request_id is not None:
                ids[request_id] = None
    if not ids:
        return _refused(INVALID_REQUEST, reason, None, "batch")
    answered = tuple(ids)[:MAX_BATCH_ANSWERS]
    unanswered = len(ids) - len(answered)
    note = log_note(f"left {unanswered:,} requests of a batch unanswered") if unanswered else None
    error = {"code": INVALID_REQUEST, "message": reason}
    return Screened(error=error, answer_to=answered, note=note)


def _id_of(message: dict[str, Any]) -> tuple[RequestId | None, str | None]:
    """``message``'s id if aah can answer it, else why not (None: it has no id)."""
    if "id" not in message:
        return None, None
    found = message["id"]
    if _valid_id(found):
        return found, None
    return None, (
        f"'id' must be text of at most {MAX_ID_CHARS} characters or an integer of at most "
        f"{MAX_ID_INTEGER:,}; got {_kind(found)}"
    )


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_ID_INTEGER
    return isinstance(value, str) and len(value) <= MAX_ID_CHARS and _is_unicode(value)


def _is_response(message: dict[str, Any]) -> bool:
    """Whether ``message`` answers the server (no method, a result or an error): never answered."""
    return "method" not in message and ("result" in message or "error" in message)


def _what(message: dict[str, Any]) -> str:
    if _is_response(message):
        return "response"
    return "notification" if "id" not in message and "method" in message else "message"


def _check_envelope(message: dict[str, Any], id_problem: str | None) -> None:
    """Refuse ``message`` unless it is JSON-RPC 2.0 that aah reads, within aah's bounds.

    Raises:
        _Refusal: the first thing wrong with it, most basic first.
    """
    _check_values(message)
    version = message.get("jsonrpc")
    if version != "2.0":
        raise _Refusal(
            INVALID_REQUEST, f"'jsonrpc' is {_kind(version)}, not \"2.0\": send JSON-RPC 2.0"
        )
    if id_problem is not None:
        raise _Refusal(INVALID_REQUEST, id_problem)
    if "method" not in message:
        if _is_response(message):
            return
        raise _Refusal(INVALID_REQUEST, "the message has no 'method': name the method to call")
    if "result" in message or "error" in message:
        # The SDK would read it as a response and never answer it.
        raise _Refusal(
            INVALID_REQUEST,
            "the message has a 'method' and a 'result' or 'error': a request has only the "
            "method, a response only the result or error",
        )
    method = message["method"]
    if not isinstance(method, str) or len(method) > MAX_METHOD_CHARS:
        raise _Refusal(
            INVALID_REQUEST,
            f"'method' must be text of at most {MAX_METHOD_CHARS} characters; got {_kind(method)}",
        )
    params = message.get("params")
    if params is None:
        return
    if not isinstance(params, dict):
        raise _Refusal(
            INVALID_PARAMS,
            f"'params' must be an object (MCP names every parameter); got {_kind(params)}",
        )
    if method == "initialize":
        _check_client_info(params.get("clientInfo"), "params.clientInfo")
    meta = params.get("_meta")
    if isinstance(meta, dict):
        _check_client_info(meta.get(_CLIENT_INFO_META_KEY), f"params._meta.{_CLIENT_INFO_META_KEY}")


def _check_client_info(info: Any, where: str) -> None:
    """Refuse a client's name, version or title past :data:`CLIENT_INFO_CHARS`.

    Another shape is left to the SDK, which answers it as invalid params.
    """
    if not isinstance(info, dict):
        return
    for field in ("name", "version", "title"):
        text = info.get(field)
        if isinstance(text, str) and len(text) > CLIENT_INFO_CHARS:
            raise _Refusal(
                INVALID_PARAMS,
                f"'{where}.{field}' is {len(text):,} characters, over aah's cap of "
                f"{CLIENT_INFO_CHARS:,}: shorten it",
            )


def _check_values(message: dict[str, Any]) -> None:
    """Refuse a number aah did not read, or text that is no Unicode, anywhere in ``message``.

    Raises:
        _Refusal: a parse error naming where the first such value is.
    """
    if _readable(message):
        return
    stack: list[tuple[Any, str]] = [(message, "")]
    while stack:
        node, path = stack.pop()
        children: list[tuple[Any, str]] = []
        if isinstance(node, dict):
            for key, child in node.items():
                if not _is_unicode(key):
                    raise _Refusal(PARSE_ERROR, _surrogate(f"a key in {_shown_path(path)}"))
                children.append((child, f"{path}.{_shown_key(key)}" if path else _shown_key(key)))
        elif isinstance(node, list):
            children = [(child, f"{path}[{i}]") for i, child in enumerate(node)]
        elif isinstance(node, _Unread):
            raise _Refusal(PARSE_ERROR, _unread(_shown_path(path), node))
        elif isinstance(node, str) and not _is_unicode(node):
            raise _Refusal(PARSE_ERROR, _surrogate(_shown_path(path)))
        stack.extend(reversed(children))


def _readable(value: Any) -> bool:
    """Whether ``value`` holds only numbers aah read and valid Unicode (no paths kept)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not all(_is_unicode(key) for key in node):
                return False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, _Unread) or (isinstance(node, str) and not _is_unicode(node)):
            return False
    return True


def _is_unicode(text: str) -> bool:
    """Whether ``text`` is valid Unicode: no lone surrogate (half a UTF-16 pair, unpaired)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unread(where: str, value: _Unread) -> str:
    if value.what in ("NaN", "Infinity", "-Infinity"):
        return f"{where} is {value.what}, which is no JSON number: send a number or null"
    cap = f"aah's cap of {MAX_NUMBER_DIGITS:,} digits"
    return f"{where} is {value.what}, over {cap}: send it as text"


def _surrogate(where: str) -> str:
    return (
        f"{where} holds a lone surrogate (half of a UTF-16 pair), "
        "which is no character: send valid Unicode"
    )


def _shown_key(key: str) -> str:
    shown = printable(key) if _is_unicode(key) else "?"
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _shown_path(path: str) -> str:
    if not path:
        return "the message"
    return f"'{path}'" if len(path) <= 120 else f"'...{path[-117:]}'"


def _kind(value: Any) -> str:
    """``value`` as a refusal names it: short text is quoted, anything else by its kind."""
    if isinstance(value, str):
        if len(value) <= 40 and _is_unicode(value):
            return json.dumps(printable(value), ensure_ascii=False)
        return f"text of {len(value):,} characters"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return "an integer" if abs(value) > MAX_ID_INTEGER else str(value)
    if isinstance(value, float):
        return f"the number {value!r}" if len(repr(value)) <= 30 else "a number"
    if isinstance(value, _Unread):
        return value.what
    return "an object" if isinstance(value, dict) else "an array"


@functools.cache
def _sdk_adapter() -> Any:
    from mcp_types import jsonrpc_message_adapter

    return jsonrpc_message_adapter


def _sdk_reads(text: str) -> None:
    """Refuse ``text`` unless the SDK's reader validates it: what passes here is never dropped.

    Raises:
        _Refusal: the SDK's validator's first complaint, as a one-line reason.
    """
    from pydantic import ValidationError

    try:
        _sdk_adapter().validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(str(part) for part in first["loc"][1:])
        if first["type"] == "json_invalid":
            raise _Refusal(PARSE_ERROR, f"the message is not JSON: {first['msg']}") from None
        code = INVALID_PARAMS if where.startswith("params") else INVALID_REQUEST
        at = f" at '{where}'" if where else ""
        raise _Refusal(
            code, f"the message is no JSON-RPC 2.0 message MCP reads{at}: {first['msg']}"
        ) from None


# -- an id in text that is no JSON ---------------------------------------------

# A JSON string (escapes kept whole), or a bracket.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
# What follows an "id" key: a colon and a value aah answers, ending where the value ends.
_ID_VALUE = re.compile(rb'\s*:\s*("(?:[^"\\]|\\.){0,1200}"|-?(?:0|[1-9][0-9]{0,15}))(?=\s*[,}])')


def scanned_id(text: bytes) -> RequestId | None:
    """The id of the JSON-RPC request ``text`` holds, found without parsing it; None if none.

    Only a top-level ``"id"`` key counts (one inside the params is another
    thing), and only a value aah answers; the last one wins, as a parser's
    would. Text that begins with anything but an object has no id.
    """
    if not text.lstrip(b" \t\r\n").startswith(b"{"):
        return None
    depth = 0
    found: RequestId | None = None
    for token in _TOKEN.finditer(text):
        mark = token.group()
        if mark in (b"{", b"["):
            depth += 1
        elif mark in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                break
        elif depth == 1 and mark == b'"id"' and (value := _ID_VALUE.match(text, token.end())):
            try:
                candidate = json.loads(value.group(1))
            except ValueError:
                continue
            if _valid_id(candidate):
                found = candidate
    return found
