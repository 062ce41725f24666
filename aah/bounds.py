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
- a number a person types or a peer sends has at most
  :data:`MAX_NUMBER_DIGITS` digits, counted before any conversion (``int()``,
  ``float()``, a JSON parse), and is read by one helper,
  :func:`check_number`, on every face;
- text and data have a size cap, named in the refusal.

Each refusal is an :class:`OutOfBounds`: an :class:`~aah.errors.AahError`
(its message is the one line shown) and a :class:`ValueError` (so a
validator or a face that already catches bad values catches it too).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from aah.errors import AahError

# Nesting levels of JSON (or YAML) from outside. The real tool specs nest 13
# levels at most, BFCL's parameters 6, a person's edit a handful.
MAX_NESTING = 100
# The longest wait on a person a deadline may ask for: 30 days. Longer is
# no deadline at all (leave it out to wait until answered).
MAX_WAIT_SECONDS = 30 * 24 * 3600.0
# Digits of a number from outside. Every number within it converts to a float
# (the largest is 1.8e308) and compares with any bound; Python would read an
# int of up to 4,300 digits, a person types a few.
MAX_NUMBER_DIGITS = 300


class OutOfBounds(AahError, ValueError):
    """A value from outside past one of aah's bounds; the message says which and what to do."""


class NumberTooLong(OutOfBounds):
    """A number of more than :data:`MAX_NUMBER_DIGITS` digits, refused before it was converted."""


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
        if not _has_long_digits(text):
            value = json.loads(text)
        else:  # a long run of digits: each number's are counted before it is read
            value = json.loads(text, parse_int=_json_number(what), parse_float=_json_number(what))
    except RecursionError:
        # The C parser gives up near Python's recursion limit (about 1,000 levels).
        raise OutOfBounds(f"{what} nests deeper than {MAX_NESTING} levels: flatten it") from None
    return check_nesting(value, what)


_LONG_DIGITS = re.compile(f"[0-9]{{{MAX_NUMBER_DIGITS + 1}}}")
_LONG_DIGIT_BYTES = re.compile(_LONG_DIGITS.pattern.encode())


def _has_long_digits(text: str | bytes) -> bool:
    """Whether ``text`` holds a run of more than :data:`MAX_NUMBER_DIGITS` digits anywhere."""
    if isinstance(text, bytes):
        return _LONG_DIGIT_BYTES.search(text) is not None
    return _LONG_DIGITS.search(text) is not None


def _json_number(what: str) -> Any:
    """A JSON parser's reader of number literals that counts their digits first."""

    def read(literal: str) -> int | float:
        return check_number(literal, f"a number in {what}", integer=False)

    return read


def check_seconds(value: Any, what: str, *, maximum: float = MAX_WAIT_SECONDS) -> float:
    """``value`` as a number of seconds: finite, above zero and at most ``maximum``.

    Text that spells a number (``"30"``) is read as one; booleans are not numbers.

    Raises:
        OutOfBounds: ``value`` is no such number; the message names ``what`` and the bound.
    """
    try:
        seconds: float | None = float(check_number(value, what, integer=False))
    except OutOfBounds:
        seconds = None
    if seconds is None or not 0 < seconds <= maximum:
        raise OutOfBounds(
            f"{what} must be a number of seconds above 0 and at most {maximum:,.0f} "
            f"({_spelled(maximum)}); got {_shown(value)}"
        )
    return seconds


def _spelled(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:g} days" if days >= 1 else f"{seconds / 3600:g} hours"


def _shown(value: Any) -> str:
    """``value`` as a refusal quotes it: short, one line, whatever its size or depth."""
    if isinstance(value, int) and not -_INT_LIMIT < value < _INT_LIMIT:
        return f"a number of about {_digits_of(value):,} digits"
    if isinstance(value, dict | list | tuple):
        return f"a {type(value).__name__} of {len(value):,} items"
    text = repr(value[:40] if isinstance(value, str) else value)
    return text if len(text) <= 40 else text[:37] + "..."


# What a person may type for a number: ASCII digits only (``int()`` would also
# read "١٢" and "1_000", ``float()`` "nan" and "infinity").
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# A sign, a point and an exponent beside the digits.
_MAX_NUMBER_CHARS = MAX_NUMBER_DIGITS + 12
_INT_LIMIT = 10**MAX_NUMBER_DIGITS


def check_number(
    value: Any,
    what: str,
    *,
    integer: bool,
    minimum: float | None = None,
    maximum: float | None = None,
) -> int | float:
    """``value`` read as a number a person typed or a peer sent, within its bounds.

    ``value`` is a number or text that spells one in ASCII digits (``"3"``,
    ``"-2.5"``, ``"1e3"``); surrounding spaces are ignored. Its digits are
    counted before it is converted, so no text or int reaches ``int()``,
    ``float()`` or a comparison past :data:`MAX_NUMBER_DIGITS` digits. With
    ``integer`` it must be whole (``3.0`` reads as ``3``) and an int comes
    back; otherwise text that spells a whole number comes back as an exact
    int, other text as a float. Booleans, NaN and Infinity are not numbers.

    Raises:
        OutOfBounds: one line naming ``what``, what would do and what came.
    """
    number = _read_number(value, what, integer=integer)
    if minimum is not None and number < minimum:
        raise OutOfBounds(f"{what}: at least {_bound(minimum)}, not {_bound(number)}")
    if maximum is not None and number > maximum:
        raise OutOfBounds(f"{what}: at most {_bound(maximum)}, not {_bound(number)}")
    return number


def check_numbers(value: Any, what: str) -> Any:
    """``value`` (JSON data), refused when a number in it is too long or not finite.

    The walk keeps its stack on the heap (``value`` nests within bounds or not).

    Raises:
        OutOfBounds: a number in ``value`` is no number aah reads; the line names ``what``.
    """
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        elif isinstance(node, int | float) and not isinstance(node, bool):
            _read_number(node, f"a number in {what}", integer=False)
    return value


def _read_number(value: Any, what: str, *, integer: bool) -> int | float:
    wanted = "a whole number, e.g. 3" if integer else "a number, e.g. 2.5"
    if isinstance(value, str):
        return _read_number_text(value.strip(), what, integer=integer, wanted=wanted)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OutOfBounds(f"{what}: {wanted}, not {_shown(value)}")
    if isinstance(value, int):
        if not -_INT_LIMIT < value < _INT_LIMIT:
            raise NumberTooLong(
                f"{what}: at most {MAX_NUMBER_DIGITS} digits, not about {_digits_of(value):,}"
            )
        return value
    if not math.isfinite(value):
        raise OutOfBounds(f"{what}: {wanted}, not {value!r}")
    if not integer:
        return value
    if not value.is_integer():
        raise OutOfBounds(f"{what}: {wanted}, not {value!r}")
    if not -_INT_LIMIT < value < _INT_LIMIT:
        raise NumberTooLong(f"{what}: at most {MAX_NUMBER_DIGITS} digits, not {value:g}")
    return int(value)


def _read_number_text(text: str, what: str, *, integer: bool, wanted: str) -> int | float:
    if len(text) > _MAX_NUMBER_CHARS:
        digits = sum(text.count(d) for d in "0123456789")
        if digits > MAX_NUMBER_DIGITS:
            raise NumberTooLong(f"{what}: at most {MAX_NUMBER_DIGITS} digits, not {digits:,}")
        raise OutOfBounds(f"{what}: {wanted}, not {_quoted(text)}")
    if _INTEGER_TEXT.fullmatch(text):
        if len(text.lstrip("+-")) > MAX_NUMBER_DIGITS:
            raise NumberTooLong(
                f"{what}: at most {MAX_NUMBER_DIGITS} digits, not {len(text.lstrip('+-')):,}"
            )
        return int(text)
    if integer or not _NUMBER_TEXT.fullmatch(text):
        raise OutOfBounds(f"{what}: {wanted}, not {_quoted(text)}")
    mantissa = re.split("[eE]", text, maxsplit=1)[0]
    digits = sum(ch.isdigit() for ch in mantissa)
    number = float(text)
    if digits > MAX_NUMBER_DIGITS or not math.isfinite(number):
        raise NumberTooLong(f"{what}: at most {MAX_NUMBER_DIGITS} digits, not {_quoted(text)}")
    return number


def _digits_of(value: int) -> int:
    """About how many decimal digits ``value`` has, found without printing it."""
    return int(abs(value).bit_length() * 0.30103) + 1


def _bound(number: float) -> str:
    """A bound or a number as a refusal shows it: short, one line."""
    if isinstance(number, int) and not isinstance(number, bool):
        text = str(number) if -(10**20) < number < 10**20 else f"{float(number):.6g}"
    else:
        text = f"{number:g}"
    return text


def _quoted(text: str) -> str:
    """Text a person typed as a refusal quotes it: one line, at most 40 characters."""
    line = " ".join(text[:200].split())
    return f"“{line if len(line) <= 40 else line[:39] + '…'}”"
