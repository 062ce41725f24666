"""What one MCP client may send to ``aah mcp serve``: the same caps on every transport.

A question and a call to approve are things a person reads, not uploads. So
whichever way a request comes (stdio, streamable HTTP, an MCP task), it is
checked here before anything is logged or queued, and a request past a cap is
refused with one line naming the cap; nothing of it is stored:

- one message (a JSON-RPC line over stdio, a request body over HTTP) is at
  most :data:`MAX_MESSAGE_BYTES`;
- each field has a cap of its own (:data:`FIELD_CAPS`), the arguments of a
  call at most :data:`MAX_ARGUMENT_KEYS` keys at any depth, and arguments and
  schemas nest at most :data:`~aah.bounds.MAX_NESTING` levels;
- a deadline is seconds, finite, above zero and at most
  :data:`~aah.bounds.MAX_WAIT_SECONDS` (:func:`aah.bounds.check_seconds`).
"""

from __future__ import annotations

import json
from typing import Any

from aah.bounds import OutOfBounds, check_nesting, check_seconds

# The most bytes one message may carry, over stdio and HTTP alike.
MAX_MESSAGE_BYTES = 256_000
# The most characters of each text field a client sends (an answer typed on
# the web page is capped at 4,000 too, so a fallback is no longer than one).
FIELD_CAPS = {
    "question": 20_000,
    "context": 50_000,
    "fallback": 4_000,
    "id": 200,
    "tool": 200,
    "arguments": 100_000,  # as JSON
    "input_schema": 100_000,  # as JSON
}
# The most keys a call's arguments hold, counted at every depth: each becomes
# a row of what a person is shown, and a field of the edit they may make.
MAX_ARGUMENT_KEYS = 1_000


def check_text(value: str | None, field: str) -> None:
    """Refuse ``value`` of ``field`` when it is longer than the field's cap.

    Raises:
        OutOfBounds: ``value`` is over the cap; the message names the field and the cap.
    """
    if value is not None and len(value) > FIELD_CAPS[field]:
        raise OutOfBounds(
            f"'{field}' is {len(value):,} characters, over aah's cap of "
            f"{FIELD_CAPS[field]:,}: shorten it"
        )


def check_deadline(value: float | None) -> float | None:
    """``value`` as a deadline in seconds, or None (wait until answered).

    Raises:
        OutOfBounds: ``value`` is not finite, not above zero or past the longest wait.
    """
    return None if value is None else check_seconds(value, "'deadline'")


def check_data(value: Any, field: str) -> None:
    """Refuse JSON data of ``field`` that nests too deep, is too large or holds too many keys.

    Raises:
        OutOfBounds: ``value`` is past a bound; the message names the field and the bound.
    """
    if value is None:
        return
    check_nesting(value, f"'{field}'")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise OutOfBounds(f"'{field}' is not plain JSON (no NaN or Infinity): send JSON") from None
    check_text(text, field)
    if field == "arguments" and (keys := _keys(value)) > MAX_ARGUMENT_KEYS:
        raise OutOfBounds(
            f"'arguments' hold {keys:,} keys, over aah's cap of {MAX_ARGUMENT_KEYS:,}: "
            "a person could not review them; send fewer"
        )


def _keys(value: Any) -> int:
    """How many mapping keys ``value`` holds at every depth (it nests within bounds)."""
    count = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            count += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count
