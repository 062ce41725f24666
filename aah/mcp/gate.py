"""Every message an MCP server sends, screened before the SDK reads it.

A server is a peer (:mod:`aah.peer_read`): what it sends is held to a size
cap per message (``AAH_MCP_MAX_MESSAGE_BYTES``), a cap on the bytes of all
the answers to one call (``AAH_MCP_MAX_CALL_BYTES``), and a depth bound
(:data:`MAX_MESSAGE_DEPTH`, below the depth the SDK's parser gives up at).
The transports (:mod:`aah.mcp.child` for stdio, :mod:`aah.mcp.http_gate`
for streamable HTTP) hand each message to :meth:`ServerGate.screen` as it
arrives, and pass on what it returns:

- a message within the bounds, parsed;
- for one past them (or one that is not JSON-RPC), something the SDK can
  act on at once: an answer to one of aah's requests becomes a JSON-RPC
  error for that request (code :data:`REFUSED`, the refusal's line as its
  message), so the call fails now, not at its deadline; a request of the
  server's becomes a stand-in the client answers at once (a question is
  declined, anything else gets "method not found"), so the server is never
  left waiting; a notification is dropped; a message that cannot be told
  apart is an exception that fails the calls in flight.

Every refused message of the server's own (a request or a notification)
is logged in one line.
"""

from __future__ import annotations

import json
import logging
import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

from mcp.types import (
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)

from aah.bounds import MAX_NESTING, MAX_NUMBER_DIGITS, OutOfBounds, check_numbers, text_nests_deeper
from aah.peer_read import PeerBound, PeerOutOfBounds, too_deep, too_large

# The JSON-RPC code (in the range left to implementations) of the error aah
# puts in place of an answer it refused to read: its message is the refusal.
REFUSED = -32099
# Levels a message may nest: the data in it (a schema, a tool's result) nests
# at most MAX_NESTING levels where aah reads it, within a few of envelope.
# The SDK's own parser gives up near 200.
MAX_MESSAGE_DEPTH = MAX_NESTING + 50
MESSAGE_SETTING = "AAH_MCP_MAX_MESSAGE_BYTES"
CALL_SETTING = "AAH_MCP_MAX_CALL_BYTES"
# How much of a refused message is searched for its id and method.
HEAD_BYTES = 64 * 1024
ELICIT = "elicitation/create"
# The method of the stand-in for a refused request that is not a question:
# no client knows it, so the server is answered "method not found" at once.
STAND_IN = "aah/refused"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MessageBounds:
    """How much one MCP server may send: per message, and over one call.

    Attributes:
        max_message_bytes: The most bytes of one message.
        max_call_bytes: The most bytes of all the answers to one call.
    """

    max_message_bytes: int = 4_000_000
    max_call_bytes: int = 16_000_000


class CallBudget:
    """The bytes the answers to one call (each round of it) have brought so far."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.size = 0

    def count(self, size: int) -> bool:
        """Count ``size`` more bytes; whether the call is still within its cap."""
        self.size += size
        return self.size <= self.cap


# The call running in this context: set for each call aah makes, read by the
# transports where a request goes out (stdio) or its answer comes (HTTP).
current_call: ContextVar[CallBudget | None] = ContextVar("aah_mcp_call", default=None)

# What a screened message becomes: a message for the SDK, an exception that
# fails the calls in flight, or nothing (dropped).
Screened = JSONRPCMessage | PeerOutOfBounds | None


class ServerGate:
    """The bounds of one MCP server's messages, and what each refusal becomes.

    Args:
        server: The server's name, as refusals name it.
        bounds: Its caps.
    """

    def __init__(self, server: str, bounds: MessageBounds) -> None:
        self.server = server
        self.message = PeerBound(
            peer=f"MCP server {server}",
            max_bytes=bounds.max_message_bytes,
            max_depth=MAX_MESSAGE_DEPTH,
            setting=MESSAGE_SETTING,
        )
        self.call_cap = bounds.max_call_bytes
        # The requests written during a call (stdio), by id: their answers count against it.
        self._calls: dict[RequestId, CallBudget] = {}
        # Questions the server asked that were refused, by request id: each is declined.
        self.refused_asks: dict[RequestId, str] = {}

    def sent(self, message: JSONRPCMessage) -> None:
        """Note a request written during a call, so that its answer counts against the call."""
        budget = current_call.get()
        if budget is not None and isinstance(message, JSONRPCRequest):
            self._calls[message.id] = budget

    def screen(self, data: bytes, *, budget: CallBudget | None = None) -> Screened:
        """One whole message from the server (``data``), as the SDK should get it.

        ``budget`` is the call the message belongs to when the transport
        knows it (an HTTP response); otherwise an answer counts against the
        call that sent its request.
        """
        size = len(data)
        if size > self.message.max_bytes:
            return self.oversized(data[:HEAD_BYTES], size)
        if text_nests_deeper(data, limit=MAX_MESSAGE_DEPTH):
            return self.refuse(data, too_deep(self.message))
        try:
            message = jsonrpc_message_adapter.validate_json(data, by_name=False)
        except ValueError as exc:
            return self.refuse(data, self._unreadable(_first_error(exc, data)))
        if _NUMBER_TROUBLE.search(data):
            try:
                check_numbers(_payload(message), "its message")
            except OutOfBounds as exc:
                return self.refuse(data, self._unreadable(str(exc)))
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            budget = budget or self._calls.pop(message.id, None)
        if budget is not None and not budget.count(size):
            return self._over_call(message, budget)
        return message

    def oversized(self, head: bytes, size: int) -> Screened:
        """A message past the size cap, of which only ``head`` was kept (``size``: seen so far)."""
        return self.refuse(head, too_large(self.message, size))

    def refuse(self, data: bytes, why: PeerOutOfBounds) -> Screened:
        """What a refused message becomes, found from its top level (its id and method)."""
        head = data[:HEAD_BYTES]
        fields = top_level(head)
        line = str(why)
        if fields.id is None:
            if fields.method is not None:
                _log.warning("%s (a %s notification, dropped)", line, _shown(fields.method))
                return None
            if not _ANSWER.search(head):
                # A stray line (a server's log on stdout): nothing waits on it.
                _log.debug("%s (a line that is no message, dropped)", line)
                return None
            return why
        if fields.method is None:
            self._calls.pop(fields.id, None)
            return refused_answer(fields.id, line)
        _log.warning("%s (its %s request is answered at once)", line, _shown(fields.method))
        if fields.method == ELICIT:
            self.refused_asks[fields.id] = line
            return JSONRPCRequest(
                jsonrpc="2.0",
                id=fields.id,
                method=ELICIT,
                params={
                    "mode": "form",
                    "message": "",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
            )
        return JSONRPCRequest(jsonrpc="2.0", id=fields.id, method=STAND_IN)

    def _unreadable(self, why: str) -> PeerOutOfBounds:
        return PeerOutOfBounds(
            f"{self.message.peer} sent a message that is not JSON-RPC aah reads "
            f"({why}): fix the server, or leave it out",
            bound=self.message,
            kind="depth",
        )

    def _over_call(self, message: JSONRPCMessage, budget: CallBudget) -> Screened:
        """What a message past its call's cap becomes: the call fails with the refusal."""
        why = PeerOutOfBounds(
            f"{self.message.peer} sent more than {budget.cap:,} bytes in answer to one call: "
            f"raise {CALL_SETTING}",
            bound=self.message,
            kind="size",
        )
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            return refused_answer(message.id, str(why))
        # Anything else on the call's own stream (HTTP): its transport ends the call with it.
        return why


def refused_answer(request_id: RequestId, line: str) -> JSONRPCError:
    """The error put in place of a refused answer to request ``request_id``."""
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=REFUSED, message=line))


class TopLevel(NamedTuple):
    """A JSON-RPC message's id and method, where its top level holds usable ones."""

    id: RequestId | None
    method: str | None


_STRUCTURE = re.compile(r'["{}\[\]]')
# What an answer to a request holds at its start, even when its id cannot be read.
_ANSWER = re.compile(rb'^\s*\{.*"(?:id|result|error)"', re.DOTALL)
_NUMBER = re.compile(r"-?[0-9]{1,18}(?![0-9.eE])")
_SPACE = re.compile(r"\s*")


def top_level(data: bytes) -> TopLevel:
    """The ``id`` and ``method`` at the top level of the JSON object ``data`` starts.

    Found without parsing the rest (which may be cut, too deep or not JSON):
    a scan from one bracket or quote to the next, keys read only at depth one.
    An id that is not a string or a short integer, like a method that is not
    a short string, counts as none.
    """
    text = data.decode("utf-8", errors="replace")
    start = _SPACE.match(text)
    if start is None or not text.startswith("{", start.end()):
        return TopLevel(None, None)
    found: dict[str, Any] = {}
    depth = 0
    position = start.end()
    while len(found) < 2:
        mark = _STRUCTURE.search(text, position)
        if mark is None:
            break
        char = mark.group()
        if char == '"':
            end = _string_end(text, mark.start())
            if end < 0:
                break
            position = end
            if depth == 1:
                position = _read_field(text, mark.start(), end, found)
        elif char in "{[":
            depth += 1
            position = mark.end()
        else:
            depth -= 1
            position = mark.end()
            if depth <= 0:
                break
    request_id = found.get("id")
    method = found.get("method")
    usable = isinstance(request_id, int | str) and not isinstance(request_id, bool)
    return TopLevel(
        request_id if usable else None,
        method if isinstance(method, str) and 0 < len(method) <= 200 else None,
    )


def _read_field(text: str, start: int, end: int, found: dict[str, Any]) -> int:
    """Read the value of a top-level key whose string spans ``start:end``; where to go on."""
    colon = _SPACE.match(text, end)
    after = colon.end() if colon is not None else end
    if not text.startswith(":", after):
        return end
    try:
        key = json.loads(text[start:end])
    except ValueError:
        return end
    value_at = _SPACE.match(text, after + 1)
    at = value_at.end() if value_at is not None else after + 1
    if key not in ("id", "method") or key in found:
        return at
    if text.startswith('"', at):
        value_end = _string_end(text, at)
        if value_end > 0 and value_end - at <= 1000:
            try:
                found[key] = json.loads(text[at:value_end])
            except ValueError:
                found[key] = None
        return max(value_end, at + 1)
    number = _NUMBER.match(text, at)
    if number is not None:
        found[key] = int(number.group())
        return number.end()
    found[key] = None
    return at


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string opening at ``start``, or -1 if it does not close."""
    at = start + 1
    while True:
        quote = text.find('"', at)
        if quote < 0:
            return -1
        backslashes = 0
        while text[quote - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return quote + 1
        at = quote + 1


# NaN, Infinity, a number longer than aah reads or one past a float's range (1e999):
# where one may be, the values are checked.
_NUMBER_TROUBLE = re.compile(rb"NaN|Infinity|[0-9]{%d}|[eE][+-]?[0-9]{3}" % (MAX_NUMBER_DIGITS + 1))


def _payload(message: JSONRPCMessage) -> Any:
    """What a message carries: a request's params, an answer's result, an error's data."""
    if isinstance(message, JSONRPCResponse):
        return message.result
    if isinstance(message, JSONRPCError):
        return message.error.data
    return message.params


def _first_error(exc: ValueError, data: bytes) -> str:
    """A parse or validation error in a few words, quoting nothing the server sent.

    Of a message that fits none of JSON-RPC's shapes, the error shown is the
    one of the shape it looks like (an answer, if it has a result).
    """
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors(include_input=False)
            shape = _shape(data)
            of_shape = [e for e in found if e.get("loc") and e["loc"][0] == shape]
            first = (of_shape or found)[0]
            loc = first.get("loc", ())
            where = ".".join(str(part) for part in loc[1 if of_shape else 0 :])[:80]
            said = str(first.get("msg", "not valid")).splitlines()[0][:120]
            return f"{where}: {said}" if where else said
        except (IndexError, TypeError, ValueError):
            pass
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]


def _shape(data: bytes) -> str | None:
    """Which JSON-RPC shape a message looks like, by its top-level keys."""
    try:
        value = json.loads(data)  # within the size and depth bounds already
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if "method" in value:
        return "JSONRPCRequest" if "id" in value else "JSONRPCNotification"
    return "JSONRPCError" if "error" in value else "JSONRPCResponse"


def _shown(method: str) -> str:
    """A server's method name as a log line shows it: printable and short."""
    printable = "".join(char if char.isprintable() else "?" for char in method[:60])
    return repr(printable)
