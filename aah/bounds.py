"""The bounds on what comes from outside, one set for every face and transport.

Whatever a person types, a peer sends or a file holds (an approval's edited
arguments, an MCP client's arguments and schemas, a BFCL file, a tool spec,
a deadline) passes one of these checks before anything else reads it:

- JSON nests at most :data:`MAX_NESTING` levels, so no later step (a
  validator, the store's scrubber, a schema walk) runs out of Python's
  recursion limit, and a parse that would is refused in one line;
- a number of seconds is finite, above zero and at most
  :data:`MAX_WAIT_SECONDS` (so ``1e18``, NaN and Infinity never reach a
  clock);
- text and data have a size cap, named in the refusal.

Each refusal is an :class:`OutOfBounds`: an :class:`~aah.errors.AahError`
(its message is the one line shown) and a :class:`ValueError` (so a
validator or a face that already catches bad values catches it too).
"""

from __future__ import annotations

import json
import math
from typing import Any

from aah.errors import AahError

# Nesting levels of JSON (or YAML) from outside. The real tool specs nest 13
# levels at most, BFCL's parameters 6, a person's edit a handful.
MAX_NESTING = 100
# The longest wait on a person a deadline may ask for: 30 days. Longer is
# no deadline at all (leave it out to wait until answered).
MAX_WAIT_SECONDS = 30 * 24 * 3600.0


class OutOfBounds(AahError, ValueError):
    """A value from outside past one of aah's bounds; the message says which and what to do."""


def nesting(value: Any, *, limit: int = MAX_NESTING) -> int:
    """How many levels of lists and mappings ``value`` nests, counted up to ``limit + 1``.

    The walk keeps its stack on the heap and stops past ``limit``, so it is
    safe on data of any depth.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend(
            (child, level + 1) for child in children if isinstance(child, dict | list | tuple)
        )
    return deepest


def check_nesting(value: Any, what: str, *, limit: int = MAX_NESTING) -> Any:
    """``value``, refused when it nests deeper than ``limit`` levels.

    Raises:
        OutOfBounds: ``value`` nests too deep; the message names ``what``.
    """
    if nesting(value, limit=limit) > limit:
        raise OutOfBounds(f"{what} nests deeper than {limit} levels: flatten it")
    return value


def text_nests_deeper(text: bytes, *, limit: int = MAX_NESTING) -> bool:
    """Whether the JSON text ``text`` nests deeper than ``limit`` levels, found without parsing.

    Brackets inside strings do not count. A text with at most ``limit``
    brackets is not scanned at all, so the usual message costs two counts.
    """
    if text.count(b"[") + text.count(b"{") <= limit:
        return False
    return _scan_depth(text, limit) > limit


def _scan_depth(text: bytes, limit: int) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def parse_json(text: str | bytes, what: str, *, max_chars: int | None = None) -> Any:
    """The JSON value in ``text``, within the size and nesting bounds.

    Raises:
        OutOfBounds: ``text`` is longer than ``max_chars`` or nests deeper
            than :data:`MAX_NESTING` levels.
        json.JSONDecodeError: ``text`` is not JSON (a ValueError, as before).
    """
    if max_chars is not None and len(text) > max_chars:
        raise OutOfBounds(
            f"{what} is {len(text):,} characters, over the cap of {max_chars:,}: shorten it"
        )
    try:
        value = json.loads(text)
    except RecursionError:
        # The C parser gives up near Python's recursion limit (about 1,000 levels).
        raise OutOfBounds(f"{what} nests deeper than {MAX_NESTING} levels: flatten it") from None
    return check_nesting(value, what)


def check_seconds(value: Any, what: str, *, maximum: float = MAX_WAIT_SECONDS) -> float:
    """``value`` as a number of seconds: finite, above zero and at most ``maximum``.

    Text that spells a number (``"30"``) is read as one; booleans are not numbers.

    Raises:
        OutOfBounds: ``value`` is no such number; the message names ``what`` and the bound.
    """
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value) if _fits_float(value) else math.inf
    elif isinstance(value, str):
        try:
            seconds = float(value.strip())
        except ValueError:
            seconds = None
    if seconds is None or not math.isfinite(seconds) or not 0 < seconds <= maximum:
        raise OutOfBounds(
            f"{what} must be a number of seconds above 0 and at most {maximum:,.0f} "
            f"({_spelled(maximum)}); got {_shown(value)}"
        )
    return seconds


def _fits_float(value: int | float) -> bool:
    try:
        float(value)
    except OverflowError:  # an int past 1e308
        return False
    return True


def _spelled(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:g} days" if days >= 1 else f"{seconds / 3600:g} hours"


def _shown(value: Any) -> str:
    """``value`` as a refusal quotes it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
