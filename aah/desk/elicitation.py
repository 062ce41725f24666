"""Questions from MCP servers: an elicitation request, typed, and the person's result.

An MCP server that aah's agent uses may ask the user for input
(``elicitation/create``): in form mode with a ``requestedSchema`` of
primitive properties (MCP 2025-06-18), or in URL mode with a link for the
person to open themselves and an ``elicitationId`` (2025-11-25). The
request becomes an :class:`ElicitationRequest` (the server's name as the
asker, the message, form fields or the URL), which every face and channel
reads; the person's :class:`ElicitationResult` (accept with content,
decline, cancel) goes back to the server.

Only what the protocol allows is taken: flat properties of type string
(with a format, an enum, a length range), number or integer (with a
range), boolean, and enums of strings (one or several); a link only over
http(s). Anything else is refused in one line, and the server gets a
decline. Sizes are bounded (``MAX_*``), so a hostile server cannot make a
form no one can fill.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from aah.bounds import nesting

ElicitationMode = Literal["form", "url"]
ElicitationAction = Literal["accept", "decline", "cancel"]
FieldKind = Literal["string", "number", "integer", "boolean", "enum"]
StringFormat = Literal["email", "uri", "date", "date-time"]
# A value a person may give: what the protocol's content allows.
FieldValue = str | int | float | bool | list[str]

# The most a server may ask in one request.
MAX_FIELDS = 30
MAX_OPTIONS = 100
MAX_MESSAGE_CHARS = 4_000
MAX_NAME_CHARS = 64
MAX_LABEL_CHARS = 300
MAX_TEXT_CHARS = 4_000
MAX_URL_CHARS = 2_048
# A requested schema is an object of flat properties: a few levels at most
# (an enum's titled options, a multi-select's items).
MAX_SCHEMA_NESTING = 6
_FORMATS = ("email", "uri", "date", "date-time")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ElicitationRefused(ValueError):
    """A request aah does not show: not primitives-only, too big, or a link that is not http(s)."""


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


class ElicitationRequest(BaseModel):
    """An MCP server's question for the user, as the desk shows it (context version 1).

    Attributes:
        asker: The server's name, shown as who asks.
        message: What the server says to the person.
        mode: ``form`` (fields to fill) or ``url`` (a link to open, then "done").
        fields: The form's fields, in the schema's order.
        url: The link to open (URL mode); never opened automatically.
        elicitation_id: The server's id of a URL-mode elicitation.
    """

    version: Literal[1] = 1
    kind: Literal["elicitation"] = "elicitation"
    asker: str
    message: str
    mode: ElicitationMode
    fields: list[ElicitationField] = Field(default_factory=list)
    url: str | None = None
    elicitation_id: str | None = None

    @classmethod
    def from_params(cls, asker: str, params: Mapping[str, Any]) -> ElicitationRequest:
        """The request a server's ``elicitation/create`` params describe.

        Raises:
            ElicitationRefused: it is not one aah shows; the message says why in one line.
        """
        mode = params.get("mode") or "form"
        message = params.get("message")
        if not isinstance(message, str):
            raise ElicitationRefused(f"{asker} sent an elicitation without a message")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ElicitationRefused(
                f"{asker}'s elicitation message is over {MAX_MESSAGE_CHARS:,} characters"
            )
        if mode == "url":
            url = _checked_url(asker, params.get("url"))
            found_id = params.get("elicitationId", params.get("elicitation_id"))
            return cls(
                asker=asker,
                message=message,
                mode="url",
                url=url,
                elicitation_id=str(found_id)[:MAX_LABEL_CHARS] if found_id is not None else None,
            )
        if mode != "form":
            raise ElicitationRefused(
                f"{asker} asked in mode {str(mode)[:40]!r}: aah knows form, url"
            )
        schema = params.get("requestedSchema", params.get("requested_schema"))
        return cls(asker=asker, message=message, mode="form", fields=form_fields(asker, schema))

    def field(self, name: str) -> ElicitationField | None:
        """The field called ``name``, if the form has one."""
        return next((f for f in self.fields if f.name == name), None)


class ElicitationResult(BaseModel):
    """What the person did: accept (with the form's content), decline or cancel.

    Attributes:
        action: ``accept``, ``decline`` or ``cancel``, as the protocol names them.
        content: The form's values when accepted in form mode; None otherwise.
        answered_by: Who answered (a person, ``oracle``, ``deadline-fallback``...).
        seconds: How long the answer took.
        why: Why aah answered for the person (a refused request, a deadline), if it did.
    """

    action: ElicitationAction
    content: dict[str, FieldValue] | None = None
    answered_by: str = ""
    seconds: float = 0.0
    why: str = ""

    def wire(self) -> dict[str, Any]:
        """The result as the server receives it (``ElicitResult``)."""
        if self.action == "accept" and self.content is not None:
            return {"action": "accept", "content": dict(self.content)}
        return {"action": self.action}


def form_fields(asker: str, schema: Any) -> list[ElicitationField]:
    """The fields of a requested schema: an object of primitive properties.

    Raises:
        ElicitationRefused: the schema is not primitives-only, or too big.
    """
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise ElicitationRefused(f"{asker}'s requested schema is not an object of fields")
    if nesting(schema, limit=MAX_SCHEMA_NESTING) > MAX_SCHEMA_NESTING:
        raise ElicitationRefused(
            f"{asker}'s requested schema nests deeper than a form of primitive fields"
        )
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise ElicitationRefused(f"{asker}'s requested schema has no object of properties")
    if len(properties) > MAX_FIELDS:
        raise ElicitationRefused(
            f"{asker} asked for {len(properties)} fields (at most {MAX_FIELDS})"
        )
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ElicitationRefused(f"{asker}'s requested schema's 'required' is not a list of names")
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise ElicitationRefused(
            f"{asker}'s requested schema requires {unknown[0][:MAX_NAME_CHARS]!r}, "
            "which is not one of its fields"
        )
    return [
        _field(asker, str(name), prop, str(name) in required) for name, prop in properties.items()
    ]


def _field(asker: str, name: str, prop: Any, required: bool) -> ElicitationField:
    where = f"{asker}'s field {name[:MAX_NAME_CHARS]!r}"
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise ElicitationRefused(
            f"{asker} named a field {name[:MAX_NAME_CHARS]!r}: not a usable name"
        )
    if not isinstance(prop, Mapping):
        raise ElicitationRefused(f"{where} is not a schema")
    kind = prop.get("type")
    shown = {
        "name": name,
        "title": _label(prop.get("title")),
        "description": _label(prop.get("description")),
        "required": required,
    }
    if kind == "string" and ("enum" in prop or "oneOf" in prop):
        options, titles = _options(where, prop)
        return ElicitationField(
            kind="enum", options=options, option_titles=titles,
            default=_default(where, prop, str), **shown,
        )  # fmt: skip
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, Mapping):
            raise ElicitationRefused(f"{where} is a list of something other than options")
        options, titles = _options(where, items)
        return ElicitationField(
            kind="enum", options=options, option_titles=titles, multiple=True,
            min_items=_count(where, prop.get("minItems")),
            max_items=_count(where, prop.get("maxItems")), **shown,
        )  # fmt: skip
    if kind == "string":
        form = prop.get("format")
        if form is not None and form not in _FORMATS:
            raise ElicitationRefused(f"{where} has format {str(form)[:40]!r}: aah knows {_FORMATS}")
        return ElicitationField(
            kind="string", format=form,
            min_length=_count(where, prop.get("minLength")),
            max_length=_count(where, prop.get("maxLength")),
            default=_default(where, prop, str), **shown,
        )  # fmt: skip
    if kind in ("number", "integer"):
        return ElicitationField(
            kind=kind,
            minimum=_number(where, prop.get("minimum")),
            maximum=_number(where, prop.get("maximum")),
            default=_default(where, prop, int if kind == "integer" else (int, float)),
            **shown,
        )
    if kind == "boolean":
        return ElicitationField(kind="boolean", default=_default(where, prop, bool), **shown)
    if kind is None:
        raise ElicitationRefused(f"{where} has no type: a form's fields are typed")
    raise ElicitationRefused(
        f"{where} is of type {str(kind)[:40]!r}: a form takes only string, number, "
        "integer, boolean and enum fields"
    )


def _options(where: str, prop: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """An enum's values and titles: ``enum`` (with ``enumNames``), or ``oneOf``/``anyOf`` consts."""
    titled = prop.get("oneOf", prop.get("anyOf"))
    if titled is not None:
        if not isinstance(titled, list) or not all(
            isinstance(o, Mapping) and isinstance(o.get("const"), str) for o in titled
        ):
            raise ElicitationRefused(f"{where}'s options are not a list of {{const, title}}")
        values: list[str] = [o["const"] for o in titled]
        titles = [_label(o.get("title")) or o["const"] for o in titled]
    else:
        listed = prop.get("enum")
        if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
            raise ElicitationRefused(f"{where}'s options are not a list of strings")
        values = listed
        names = prop.get("enumNames")
        titles = [_label(n) for n in names] if isinstance(names, list) else []
        if len(titles) != len(values):
            titles = list(values)
    if not values or len(values) > MAX_OPTIONS:
        raise ElicitationRefused(f"{where} offers {len(values)} options (1 to {MAX_OPTIONS})")
    if any(len(v) > MAX_LABEL_CHARS for v in values):
        raise ElicitationRefused(f"{where} has an option over {MAX_LABEL_CHARS} characters")
    return list(values), titles


def _label(value: Any) -> str:
    return value[:MAX_LABEL_CHARS] if isinstance(value, str) else ""


def _count(where: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**6:
        raise ElicitationRefused(f"{where} has a length bound that is not a count: {value!r:.40}")
    return value


def _number(where: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ElicitationRefused(f"{where} has a bound that is not a finite number: {value!r:.40}")
    return float(value)


def _default(where: str, prop: Mapping[str, Any], kind: type | tuple[type, ...]) -> Any:
    value = prop.get("default")
    if value is None:
        return None
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise ElicitationRefused(f"{where}'s default is not of its type")
    return value[:MAX_TEXT_CHARS] if isinstance(value, str) else value


def _checked_url(asker: str, url: Any) -> str:
    if not isinstance(url, str) or not url:
        raise ElicitationRefused(f"{asker} asked to open a link but gave none")
    if len(url) > MAX_URL_CHARS:
        raise ElicitationRefused(f"{asker}'s link is over {MAX_URL_CHARS:,} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or not url.isprintable():
        raise ElicitationRefused(f"{asker}'s link {url[:80]!r} is not an http(s) address")
    return url


def check_content(request: ElicitationRequest, content: Mapping[str, Any]) -> dict[str, FieldValue]:
    """``content`` checked against ``request``'s form: every value of its field's kind and bounds.

    Fields left out stay out (unless required); a value for a field the form
    does not have is refused, as is any value out of its bounds.

    Raises:
        ContentInvalid: one line naming the field and what to give instead.
    """
    if request.mode != "form":
        raise ContentInvalid("a link's result has no content: accept says the person is done")
    unknown = [name for name in content if request.field(name) is None]
    if unknown:
        raise ContentInvalid(f"the form has no field {str(unknown[0])[:MAX_NAME_CHARS]!r}")
    checked: dict[str, FieldValue] = {}
    for spec in request.fields:
        value = content.get(spec.name)
        if value is None or value == "" and spec.kind != "string":
            if spec.required:
                raise ContentInvalid(f"{spec.label} is required")
            continue
        checked[spec.name] = check_value(spec, value)
    return checked


def check_value(spec: ElicitationField, value: Any) -> FieldValue:
    """``value`` for field ``spec``, checked (text for numbers is read as a number).

    Raises:
        ContentInvalid: it does not fit; the line says what would.
    """
    label = spec.label
    if spec.kind == "boolean":
        if isinstance(value, bool):
            return value
        said = value.strip().lower() if isinstance(value, str) else None
        if said in ("true", "yes", "y", "false", "no", "n"):
            return said in ("true", "yes", "y")
        raise ContentInvalid(f"{label} is yes or no")
    if spec.kind in ("number", "integer"):
        return _checked_number(spec, value)
    if spec.kind == "enum":
        chosen = value if spec.multiple else [value]
        if not isinstance(chosen, list) or not all(isinstance(v, str) for v in chosen):
            raise ContentInvalid(f"{label} is one of the options")
        outside = [v for v in chosen if v not in spec.options]
        if outside:
            raise ContentInvalid(
                f"{label} is one of: {', '.join(spec.options[:10])}"
                + (" …" if len(spec.options) > 10 else "")
            )
        if spec.multiple:
            if spec.min_items is not None and len(chosen) < spec.min_items:
                raise ContentInvalid(f"{label}: choose at least {spec.min_items}")
            if spec.max_items is not None and len(chosen) > spec.max_items:
                raise ContentInvalid(f"{label}: choose at most {spec.max_items}")
            return list(chosen)
        return str(value)
    if not isinstance(value, str):
        raise ContentInvalid(f"{label} is text")
    return _checked_text(spec, value)


def _checked_number(spec: ElicitationField, value: Any) -> int | float:
    label = spec.label
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip()) if spec.kind == "number" else int(value.strip())
        except ValueError:
            raise ContentInvalid(
                f"{label} is a{'n integer' if spec.kind == 'integer' else ' number'}"
            ) from None
    if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
        raise ContentInvalid(f"{label} is a number")
    if spec.kind == "integer":
        if isinstance(number, float) and not number.is_integer():
            raise ContentInvalid(f"{label} is a whole number")
        number = int(number)
    if spec.minimum is not None and number < spec.minimum:
        raise ContentInvalid(f"{label} is at least {spec.minimum:g}")
    if spec.maximum is not None and number > spec.maximum:
        raise ContentInvalid(f"{label} is at most {spec.maximum:g}")
    checked: int | float = number
    return checked


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
    if spec.format == "uri" and not urlsplit(value).scheme:
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


def stored_answer(result: ElicitationResult) -> str:
    """How a face writes ``result`` into a request's answer: its JSON, the one encoding."""
    return result.model_dump_json(include={"action", "content"}, exclude_none=True)


def read_stored_answer(
    request: ElicitationRequest, text: str | None, *, declined: bool
) -> ElicitationResult:
    """The result a stored answer holds (see :func:`stored_answer`).

    A declined request, an answer that is not a result, or content that does
    not fit the form reads as a decline, saying why: the server never gets
    content its form did not ask for.
    """
    if declined:
        return ElicitationResult(action="decline")
    try:
        found = ElicitationResult.model_validate_json(text or "")
    except ValueError:
        return ElicitationResult(action="decline", why="the stored answer is not a result")
    if found.action != "accept" or request.mode == "url":
        return ElicitationResult(action=found.action)
    try:
        content = check_content(request, found.content or {})
    except ContentInvalid as exc:
        return ElicitationResult(action="decline", why=f"the answer did not fit the form: {exc}")
    return ElicitationResult(action="accept", content=content)
