"""BFCL's JSON Lines files read as input from outside: each line bounded, each shape checked.

A BFCL file (``BFCL_v4_<category>.json``, its ``possible_answer/`` twin, a
Multilingual-BFCL ``.jsonl``) holds one JSON object a line. Whoever wrote the
file, its lines are read with the same bounds before any item is built:

- a line is read with a bounded ``readline``: one longer than
  :data:`MAX_LINE_BYTES` is refused after that many bytes, never read whole
  (BFCL's longest line is 24,019 bytes; the cap is ten times that and more,
  so a Thai item with every character escaped as six bytes still fits);
- a line is UTF-8 (a byte-order mark may open the file), JSON nesting at
  most :data:`~aah.bounds.MAX_NESTING` levels, and an object;
- an item's id, offered functions and possible answers have the shapes the
  loader and the checker read (``ground_truth_problem``, ``function_problem``).

Every refusal is one line naming the file and the line, and what to do: a
malformed line refuses the whole file, as a file that fails part-way is a
file to fix or fetch again, not one to score a part of. Blank lines are not
items and are passed over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple

from pydantic import ValidationError

from aah.bounds import MAX_NESTING, MAX_NUMBER_DIGITS, NumberTooLong, OutOfBounds, parse_json
from aah.errors import AahError

# The longest line a BFCL file may hold, in bytes (its line break aside).
MAX_LINE_BYTES = 256 * 1024
# An item's id: BFCL's longest is 30 characters.
MAX_ID_CHARS = 200
_ID = re.compile(rf"[^\s\x00-\x1f\x7f]{{1,{MAX_ID_CHARS}}}")
_BOM = b"\xef\xbb\xbf"
_FETCH_AGAIN = "fix the data file or fetch it again (`aah data fetch bfcl`)"


class Record(NamedTuple):
    """One line's JSON object and where it was read (``path:line``)."""

    where: str
    value: dict[str, Any]


def read_records(path: Path) -> list[Record]:
    """The JSON objects of ``path``, one a line, within the line and nesting bounds.

    Raises:
        AahError: the file cannot be read, holds no object, or holds a line
            that is too long, not UTF-8, not JSON, nested too deep or not an
            object; the message names the file and the line.
    """
    try:
        with path.open("rb") as file:
            records = list(_records(file, path))
    except OSError as exc:
        raise AahError(f"cannot read {path} ({exc.strerror or exc}): {_FETCH_AGAIN}") from exc
    if not records:
        raise AahError(f"{path} holds no items (it is empty or blank): {_FETCH_AGAIN}")
    return records


def _records(file: IO[bytes], path: Path) -> Iterator[Record]:
    for number, line in enumerate(_bounded_lines(file, path), start=1):
        where = f"{path}:{number}"
        if number == 1:
            line = line.removeprefix(_BOM)
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AahError(
                f"{where}: not UTF-8 text (byte {exc.start + 1} of the line): save the file "
                f"as UTF-8, or {_FETCH_AGAIN}"
            ) from None
        if not text.strip():
            continue
        yield Record(where, _parsed(text, where))


def _bounded_lines(file: IO[bytes], path: Path) -> Iterator[bytes]:
    """Each line of ``file``, refused past :data:`MAX_LINE_BYTES` before the rest is read."""
    number = 0
    while line := file.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line.rstrip(b"\r\n")) > MAX_LINE_BYTES:
            raise AahError(
                f"{path}:{number}: a line over the cap of {MAX_LINE_BYTES:,} bytes "
                f"(MAX_LINE_BYTES; BFCL's longest is 24,019): {_FETCH_AGAIN}"
            )
        yield line


def _parsed(text: str, where: str) -> dict[str, Any]:
    try:
        value = parse_json(text, where)
    except NumberTooLong:
        raise AahError(
            f"{where}: not JSON (a number of more than {MAX_NUMBER_DIGITS} digits): {_FETCH_AGAIN}"
        ) from None
    except OutOfBounds:
        raise AahError(f"{where}: nests deeper than {MAX_NESTING} levels: {_FETCH_AGAIN}") from None
    except json.JSONDecodeError as exc:
        raise AahError(
            f"{where}: not JSON ({exc.msg} at column {exc.colno}): {_FETCH_AGAIN}"
        ) from None
    except ValueError:  # an integer of more digits than Python reads (4,300)
        raise AahError(f"{where}: not JSON (an integer too long to read): {_FETCH_AGAIN}") from None
    if not isinstance(value, dict):
        raise AahError(f"{where}: not a JSON object: {_FETCH_AGAIN}")
    return value


def item_id(record: Record) -> str:
    """The record's ``id``: a string of 1 to :data:`MAX_ID_CHARS` characters, no spaces.

    Raises:
        AahError: the id is missing or not such a string.
    """
    value = record.value.get("id")
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise AahError(
            f"{record.where}: an item needs an 'id': a string of 1 to {MAX_ID_CHARS} "
            f"characters without spaces: {_FETCH_AGAIN}"
        )
    return value


def ground_truth_problem(truth: Any) -> str | None:
    """What is wrong with a ``ground_truth`` as the checker reads it, or None.

    The right shape is a non-empty list of calls, each one function name
    mapped to its arguments, each argument to a list of acceptable values:
    ``[{"math.factorial": {"number": [5]}}]``.
    """
    if not isinstance(truth, list):
        return "must be a list of {function: {argument: [values]}}"
    if not truth:
        return "is empty: an item scored by its calls expects at least one"
    for index, call in enumerate(truth, start=1):
        if not isinstance(call, dict) or len(call) != 1:
            return f"call {index} must name one function: {{function: {{argument: [values]}}}}"
        ((name, arguments),) = call.items()
        if not name:
            return f"call {index} names no function"
        if not isinstance(arguments, dict):
            return f"call {index} ({_shown(name)}) must map each argument to a list of values"
        for argument, values in arguments.items():
            if not isinstance(values, list):
                return (
                    f"call {index} ({_shown(name)}): argument {_shown(argument)} must be a list "
                    "of acceptable values"
                )
    return None


def function_problem(raw: Any) -> str | None:
    """What is wrong with an offered function's outer shape, or None.

    ``function_tool`` checks the name and maps the types; this checks what it
    would pass over: ``parameters`` an object, its ``properties`` an object of
    objects, its ``required`` a list of the properties' names.
    """
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        return None  # function_tool says what is wrong
    name = _shown(raw["name"])
    if "parameters" not in raw:
        return None
    parameters = raw["parameters"]
    if not isinstance(parameters, Mapping):
        return f"{name}: 'parameters' must be an object"
    properties = parameters.get("properties", {})
    if not isinstance(properties, Mapping) or not all(
        isinstance(schema, Mapping) for schema in properties.values()
    ):
        return f"{name}: 'properties' must be an object of parameter schemas"
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(
        isinstance(key, str) and key in properties for key in required
    ):
        return f"{name}: 'required' must be a list of the names in 'properties'"
    return None


def _shown(name: str) -> str:
    """A name from the file as a message quotes it: short, one line."""
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "..."


def refuse_stray_answers(
    answers: Mapping[str, tuple[str, Any]], seen: set[str], path: Path
) -> None:
    """Refuse a possible answer (``{id: (where, answer)}``) for an id ``path`` does not hold.

    Raises:
        AahError: naming the answer's line and the file that lacks its item.
    """
    stray = next((answer_id for answer_id in answers if answer_id not in seen), None)
    if stray is not None:
        raise AahError(
            f"{answers[stray][0]}: a possible answer for {stray}, which {path} does not hold: "
            "fetch the data again"
        )


def invalid_record(exc: ValidationError, where: str, what: str) -> AahError:
    """The one-line refusal of a record the task model rejects: its first problem, by field.

    ``what`` names the record when the problem has no field (``item``, ``entry``).
    """
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or what
    return AahError(f"{where}: {field}: {first['msg']}: fix the data file")
