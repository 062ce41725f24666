"""One field of an MCP server's form, and the check of a value a person gives it.

A field is what :mod:`aah.desk.elicitation_schema` takes of one property of
a requested schema: a kind (string, number, integer, boolean, enum), a label
to show and the bounds its value keeps. :func:`check_value` reads a value
for it the same way on every face (the console, the terminal app, the web
page, the oracle, the simulated user, a stored answer): numbers through
:func:`aah.bounds.check_number`, so no typed or sent number past
:data:`~aah.bounds.MAX_NUMBER_DIGITS` digits is ever converted, and a value
that does not fit is one line naming the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from aah.bounds import MAX_NUMBER_DIGITS, OutOfBounds, check_number
from aah.terminal_text import printable

FieldKind = Literal["string", "number", "integer", "boolean", "enum"]
StringFormat = Literal["email", "uri", "date", "date-time"]
# A value a person may give: what the protocol's content allows.
FieldValue = str | int | float | bool | list[str]

MAX_NAME_CHARS = 64
MAX_LABEL_CHARS = 300
MAX_TEXT_CHARS = 4_000
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ContentInvalid(ValueError):
    """Content that does not fit the request's form, in one line naming the field."""


class ElicitationField(BaseModel):
    """One field of a form: a name, a kind, and the bounds its value must keep.

    Attributes:
        name: The property's name (the content's key).
        kind: ``string``, ``number``, ``integer``, ``boolean`` or ``enum``.
        title: What a person reads as the label (the name when the schema gives none).
        format: For a string: ``email``, ``uri``, ``date`` or ``date-time``.
        options: For an enum: the values to choose from.
        option_titles: For an enum: what each option reads as (same order).
        multiple: For an enum: several options may be chosen (a list of strings).
    """

    name: str
    kind: FieldKind
    title: str = ""
    description: str = ""
    required: bool = False
    format: StringFormat | None = None
    options: list[str] = Field(default_factory=list)
    option_titles: list[str] = Field(default_factory=list)
    multiple: bool = False
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None
    default: FieldValue | None = None

    @property
    def label(self) -> str:
        """What the field reads as: its title, else its name."""
        return self.title or self.name

    def option_title(self, value: str) -> str:
        """What option ``value`` reads as."""
        if value in self.options and len(self.option_titles) == len(self.options):
            return self.option_titles[self.options.index(value)]
        return value


def shown_line(value: Any, limit: int = MAX_LABEL_CHARS) -> str:
    """Text a server gave for people to read, as every face shows it.

    No terminal controls, one line, at most ``limit`` characters; anything
    but text reads as nothing.
    """
    if not isinstance(value, str):
        return ""
    return " ".join(printable(value[: limit * 4]).split())[:limit]


def fitting_value(spec: ElicitationField) -> FieldValue | None:
    """A value :func:`check_value` takes for ``spec``, or None when none exists.

    A field with no such value is one no person could fill: its bounds
    cross, exclude every whole number aah reads, or leave no length its
    format can have. A multi-select must let at least one option be chosen.
    """
    if spec.kind == "boolean":
        return True
    if spec.kind == "enum":
        if not spec.multiple:
            return spec.options[0] if spec.options else None
        chosen = max(spec.min_items or 0, 1)
        most = len(spec.options) if spec.max_items is None else spec.max_items
        return spec.options[:chosen] if chosen <= min(most, len(spec.options)) else None
    if spec.kind in ("number", "integer"):
        return _fitting_number(spec)
    shortest = max(spec.min_length or 0, 1)
    longest = MAX_TEXT_CHARS if spec.max_length is None else min(spec.max_length, MAX_TEXT_CHARS)
    # Past its first 25 lengths, a format that has a text of some length has one of every length.
    for length in range(shortest, min(longest, shortest + 25) + 1):
        text = _text_of_length(spec.format, length)
        if text is not None:
            return text
    return None


def _fitting_number(spec: ElicitationField) -> int | float | None:
    low, high = spec.minimum, spec.maximum
    number: int | float = 0
    if low is not None and number < low:
        number = math.ceil(low) if spec.kind == "integer" else low
    if high is not None and number > high:
        number = math.floor(high) if spec.kind == "integer" else high
    if (low is not None and number < low) or (high is not None and number > high):
        return None
    if spec.kind == "integer" and abs(number) >= 10**MAX_NUMBER_DIGITS:
        return None
    return number


# Texts of each format by length: the lengths a format's texts can have are few
# and short (a date) or every one past a few characters (an address).
_DATES = {8: "20240101", 10: "2024-01-01"}
_DATE_TIMES = _DATES | {13: "2024-01-01T09", 16: "2024-01-01T09:30", 19: "2024-01-01T09:30:00"}


def _text_of_length(form: StringFormat | None, length: int) -> str | None:
    if form is None:
        return "a" * length
    if form == "email":
        return "a" * (length - 4) + "@b.c" if length >= 5 else None
    if form == "uri":
        return "a:" + "b" * (length - 2) if length >= 2 else None
    if form == "date":
        return _DATES.get(length)
    if length >= 21:  # a date and time with a fraction of any number of digits
        return "2024-01-01T09:30:00." + "0" * (length - 20)
    return _DATE_TIMES.get(length)


def check_value(spec: ElicitationField, value: Any) -> FieldValue:
    """``value`` for field ``spec``, checked (text for numbers is read as a number).

    Raises:
        ContentInvalid: it does not fit; the line says what would.
    """
    label = spec.label
    if spec.kind == "boolean":
        if isinstance(value, bool):
            return value
        said = value.strip().lower() if isinstance(value, str) and len(value) < 20 else None
        if said in ("true", "yes", "y", "false", "no", "n"):
            return said in ("true", "yes", "y")
        raise ContentInvalid(f"{label} is yes or no")
    if spec.kind in ("number", "integer"):
        try:
            return check_number(
                value, label, integer=spec.kind == "integer",
                minimum=spec.minimum, maximum=spec.maximum,
            )  # fmt: skip
        except OutOfBounds as exc:
            raise ContentInvalid(str(exc)) from None
    if spec.kind == "enum":
        return _checked_choice(spec, value)
    if not isinstance(value, str):
        raise ContentInvalid(f"{label} is text")
    return _checked_text(spec, value)


def check_fields(fields: Sequence[ElicitationField], content: Any) -> dict[str, FieldValue]:
    """``content`` checked against a form's ``fields``: every value of its field's kind and bounds.

    Fields left out stay out (unless required), as does an empty box of a
    field that is not text; a value for a field the form does not have is
    refused, as is any value out of its bounds.

    Raises:
        ContentInvalid: one line naming the field and what to give instead.
    """
    if not isinstance(content, Mapping):
        raise ContentInvalid("the form's values are not an object of fields")
    names = {f.name for f in fields}
    unknown = next((name for name in content if name not in names), None)
    if unknown is not None:
        raise ContentInvalid(f"the form has no field {_quoted(unknown)}")
    checked: dict[str, FieldValue] = {}
    for spec in fields:
        value = content.get(spec.name)
        if value is None or value == "" and spec.kind != "string":
            if spec.required:
                raise ContentInvalid(f"{spec.label} is required")
            continue
        checked[spec.name] = check_value(spec, value)
    return checked


def _quoted(name: Any) -> str:
    """A field name someone sent, quoted short and on one line, whatever it is."""
    return repr(shown_line(name, 40)) if isinstance(name, str) else f"of type {type(name).__name__}"


def _checked_choice(spec: ElicitationField, value: Any) -> FieldValue:
    label = spec.label
    chosen = value if spec.multiple else [value]
    if not isinstance(chosen, list) or not all(isinstance(v, str) for v in chosen):
        raise ContentInvalid(f"{label} is one of the options")
    if len(chosen) > len(spec.options) or len(set(chosen)) != len(chosen):
        raise ContentInvalid(f"{label}: choose each option at most once")
    outside = [v for v in chosen if v not in spec.options]
    if outside:
        raise ContentInvalid(
            f"{label} is one of: {', '.join(spec.options[:10])}"
            + (" …" if len(spec.options) > 10 else "")
        )
    if not spec.multiple:
        return str(value)
    if spec.min_items is not None and len(chosen) < spec.min_items:
        raise ContentInvalid(f"{label}: choose at least {spec.min_items}")
    if spec.max_items is not None and len(chosen) > spec.max_items:
        raise ContentInvalid(f"{label}: choose at most {spec.max_items}")
    return list(chosen)


def _checked_text(spec: ElicitationField, value: str) -> str:
    label = spec.label
    if len(value) > MAX_TEXT_CHARS:
        raise ContentInvalid(f"{label} is at most {MAX_TEXT_CHARS:,} characters")
    if spec.min_length is not None and len(value) < spec.min_length:
        raise ContentInvalid(f"{label} needs at least {spec.min_length} characters")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise ContentInvalid(f"{label} takes at most {spec.max_length} characters")
    if spec.format == "email" and not _EMAIL.match(value):
        raise ContentInvalid(f"{label} is an email address (name@example.org)")
    if spec.format == "uri" and not _has_scheme(value):
        raise ContentInvalid(f"{label} is an address with a scheme (https://...)")
    if spec.format == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            raise ContentInvalid(f"{label} is a date (YYYY-MM-DD)") from None
    if spec.format == "date-time":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ContentInvalid(f"{label} is a date and time (YYYY-MM-DDTHH:MM:SS)") from None
    return value


def _has_scheme(text: str) -> bool:
    try:
        return bool(urlsplit(text).scheme)
    except ValueError:  # "http://[" : a bracket that opens no IPv6 address
        return False
