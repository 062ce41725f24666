"""BFCL calls whose arguments would start a step of C code too long to stop, answered unrun.

A fenced call (``aah.benchmark.fence``) is stopped at its deadline between
two steps of Python, but one step of C holds the whole process until it
ends: ``10 ** 10**9`` is one multiplication after another inside CPython, a
square root to a million digits one call into ``decimal``. BFCL's ``MathAPI``
starts such steps from its arguments, so these calls are answered before
its code runs:

- ``power`` of two integers whose result has more digits than Python prints
  (4,300): BFCL's own answer, the error of printing it, without computing it;
- ``round_number`` of an integer to more than 4,300 places left of the
  point: BFCL's own answer, 0, without computing ten to that power;
- ``square_root`` and ``logarithm`` asked for more than :data:`MAX_PRECISION`
  digits (BFCL's entries ask for at most 10): refused in one line; to a
  million digits, a square root holds the process about 7 s, a logarithm
  minutes.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from aah.benchmark.fence import MAX_INT_DIGITS

# The most digits ``square_root`` and ``logarithm`` may be asked for. A
# logarithm to 10,000 digits takes about 0.1 s, a square root 0.05 s.
MAX_PRECISION = 10_000


def guarded_answer(
    class_name: str, name: str, arguments: Mapping[str, Any], error_prefix: str
) -> str | None:
    """The result text of a call that must not run (see the module), else None.

    Args:
        class_name: The API class whose method the name picks.
        name: The method.
        arguments: The call's arguments by name.
        error_prefix: What BFCL's result text of a failure starts with.
    """
    if class_name != "MathAPI":
        return None
    if name == "power":
        return _power(arguments, error_prefix)

    if name == "round_number":
        return _round(arguments)
    if name in ("square_root", "logarithm"):
        return _precision(name, arguments, error_prefix)
    return None


def _power(arguments: Mapping[str, Any], error_prefix: str) -> str | None:
    base, exponent = arguments.get("base"), arguments.get("exponent")
    if set(arguments) != {"base", "exponent"} or not (
        isinstance(base, int) and isinstance(exponent, int)
    ):
        return None
    if exponent <= 0 or abs(base) <= 1:
        return None
    try:
        digits = exponent * math.log10(abs(base))
    except OverflowError:  # an exponent past 1e308
        digits = math.inf
    limit = sys.get_int_max_str_digits() or MAX_INT_DIGITS
    # Near the limit the estimate may be off by one: those few are computed (in no time).
    if digits <= limit + 2:
        return None
    # BFCL's json.dumps of {"result": n} fails, then its str() of it does too.
    return f"{error_prefix}{_unprintable_int_message()}"


def _round(arguments: Mapping[str, Any]) -> str | None:
    number, places = arguments.get("number"), arguments.get("decimal_places", 0)
    if not set(arguments) <= {"number", "decimal_places"} or not _integers(number, places):
        return None
    # ``number`` has at most 4,300 digits (the fence refuses longer ones): rounded
    # to more places than that, it is 0.
    if -places <= MAX_INT_DIGITS:
        return None
    return json.dumps({"result": 0})


def _precision(name: str, arguments: Mapping[str, Any], error_prefix: str) -> str | None:
    precision = arguments.get("precision")
    if name == "square_root":
        # decimal takes only an int precision, and BFCL computes only for a number above 0.
        asked = precision if _integers(precision) else None
        if not _above_zero(arguments.get("number")):
            return None
    else:
        asked = _digits_for_mpmath(precision)
    if asked is None or asked <= MAX_PRECISION:
        return None
    return (
        f"{error_prefix}precision {int(asked):,} is over aah's bound of {MAX_PRECISION:,} digits "
        f"for {name} (no answer would come in useful time): ask for fewer digits"
    )


def _above_zero(number: Any) -> bool:
    """Whether ``number`` is a finite number above 0 (never converting a huge int to a float)."""
    if isinstance(number, int):
        return number > 0
    return isinstance(number, float) and math.isfinite(number) and number > 0


def _digits_for_mpmath(value: Any) -> int | float | None:
    """The digits ``mpmath.mp.dps = value`` asks for (it takes ``int(value)``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value  # never made a float: one of 400 digits would overflow it
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and len(value) <= 100:
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _integers(*values: Any) -> bool:
    return all(isinstance(value, int) for value in values)


@lru_cache(maxsize=1)
def _unprintable_int_message() -> str:
    """Python's own message for printing an integer past its digit limit."""
    limit = sys.get_int_max_str_digits() or MAX_INT_DIGITS
    try:
        str(10**limit)
    except ValueError as exc:
        return str(exc)
    return (
        f"Exceeds the limit ({limit} digits) for integer string conversion; "
        "use sys.set_int_max_str_digits() to increase the limit"
    )
