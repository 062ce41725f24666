"""What aah takes of an MCP server's requested schema: a form of fields someone can fill.

Only what the protocol allows is taken: flat properties of type string
(with a format, an enum, a length range), number or integer (with a
range), boolean, and enums of strings (one or several). Anything else is
refused in one line (:class:`ElicitationRefused`), and the server gets a
decline. So is a schema that no answer could fit: a minimum over its
maximum, a range with no whole number in it, a length no text can have, a
default outside its own field, an option twice. Sizes are bounded, so a
hostile server cannot make a form no one can fill; every text shown is made
one printable line (:func:`~aah.desk.elicitation_form.shown_line`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aah.bounds import OutOfBounds, check_number, nesting
from aah.desk.elicitation_form import (
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    ContentInvalid,
    ElicitationField,
    check_value,
    fitting_value,
    shown_line,
)

# The most a server may ask in one request.
MAX_FIELDS = 30
MAX_OPTIONS = 100
# A requested schema is an object of flat properties: a few levels at most
# (an enum's titled options, a multi-select's items).
MAX_SCHEMA_NESTING = 6
# The longest a length bound may be: no text a person gives is longer than
# MAX_TEXT_CHARS, and a bound past a million says nothing more.
_MAX_COUNT = 10**6
_FORMATS = ("email", "uri", "date", "date-time")


class ElicitationRefused(ValueError):
    """A request aah does not show: not primitives-only, too big, or a link that is not http(s)."""


def shown_value(value: Any) -> str:
    """A value from a server as a refusal quotes it: short and one line, whatever its size."""
    if isinstance(value, dict | list | tuple):
        return f"a {type(value).__name__} of {len(value):,} items"
    if isinstance(value, str):
        return repr(shown_line(value, 40))
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(value) if -(10**20) < value < 10**20 else "a number of many digits"
    return repr(value)[:40]


def form_fields(asker: str, schema: Any) -> list[ElicitationField]:
    """The fields of a requested schema: an object of primitive properties.

    Raises:
        ElicitationRefused: the schema is not primitives-only, too big, or no answer fits it.
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
            f"{asker} asked for {len(properties):,} fields (at most {MAX_FIELDS})"
        )
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ElicitationRefused(f"{asker}'s requested schema's 'required' is not a list of names")
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise ElicitationRefused(
            f"{asker}'s requested schema requires {shown_value(unknown[0][:MAX_NAME_CHARS])}, "
            "which is not one of its fields"
        )
    return [
        _field(asker, str(name), prop, str(name) in required) for name, prop in properties.items()
    ]


def _field(asker: str, name: str, prop: Any, required: bool) -> ElicitationField:
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise ElicitationRefused(f"{asker} named a field {shown_value(name)}: not a usable name")
    where = f"{asker}'s field {name!r}"
    if not isinstance(prop, Mapping):
        raise ElicitationRefused(f"{where} is not a schema")
    field = _typed_field(where, name, prop, required)
    _check_fillable(where, field)
    if field.default is not None:
        try:
            check_value(field, field.default)
        except ContentInvalid as exc:
            raise ElicitationRefused(f"{where}'s default does not fit the field: {exc}") from None
    return field


def _typed_field(
    where: str, name: str, prop: Mapping[str, Any], required: bool
) -> ElicitationField:
    kind = prop.get("type")
    shown = {
        "name": name,
        "title": shown_line(prop.get("title")),
        "description": shown_line(prop.get("description")),
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
            raise ElicitationRefused(
                f"{where} has format {shown_value(form)}: aah knows {', '.join(_FORMATS)}"
            )
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
        f"{where} is of type {shown_value(kind)}: a form takes only string, number, "
        "integer, boolean and enum fields"
    )


def _check_fillable(where: str, field: ElicitationField) -> None:
    """Refuse a field no value can fit: its own bounds cross, or exclude every value."""
    low, high = field.minimum, field.maximum
    if low is not None and high is not None and low > high:
        raise ElicitationRefused(f"{where}'s minimum {low:g} is over its maximum {high:g}")
    shortest, longest = field.min_length, field.max_length
    if shortest is not None and longest is not None and shortest > longest:
        raise ElicitationRefused(
            f"{where} needs at least {shortest} characters but takes at most {longest}"
        )
    if shortest is not None and shortest > MAX_TEXT_CHARS:
        raise ElicitationRefused(
            f"{where} needs {shortest:,} characters; a person gives at most {MAX_TEXT_CHARS:,}"
        )
    fewest, most = field.min_items, field.max_items
    if fewest is not None and most is not None and fewest > most:
        raise ElicitationRefused(f"{where} asks to choose at least {fewest} but at most {most}")
    if fitting_value(field) is None:
        raise ElicitationRefused(f"{where} has bounds no answer fits: {_bounds(field)}")


def _bounds(field: ElicitationField) -> str:
    """A field's bounds in a few words, for a refusal."""
    said = [field.kind if field.format is None else f"{field.kind} ({field.format})"]
    for name, value in (
        ("minimum", field.minimum), ("maximum", field.maximum),
        ("minLength", field.min_length), ("maxLength", field.max_length),
        ("minItems", field.min_items), ("maxItems", field.max_items),
    ):  # fmt: skip
        if value is not None:
            said.append(f"{name} {value:g}")
    if field.kind == "enum":
        said.append(f"{len(field.options)} options")
    return ", ".join(said)


def _options(where: str, prop: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """An enum's values and titles: ``enum`` (with ``enumNames``), or ``oneOf``/``anyOf`` consts."""
    titled = prop.get("oneOf", prop.get("anyOf"))
    if titled is not None:
        if not isinstance(titled, list) or not all(
            isinstance(o, Mapping) and isinstance(o.get("const"), str) for o in titled
        ):
            raise ElicitationRefused(f"{where}'s options are not a list of {{const, title}}")
        values: list[str] = [o["const"] for o in titled]
        named = [o.get("title") for o in titled]
    else:
        listed = prop.get("enum")
        if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
            raise ElicitationRefused(f"{where}'s options are not a list of strings")
        values = listed
        names = prop.get("enumNames")
        named = names if isinstance(names, list) and len(names) == len(values) else []
    if not values or len(values) > MAX_OPTIONS:
        raise ElicitationRefused(f"{where} offers {len(values):,} options (1 to {MAX_OPTIONS})")
    if any(not v or len(v) > MAX_LABEL_CHARS or not v.isprintable() for v in values):
        raise ElicitationRefused(
            f"{where} has an option that is empty, over {MAX_LABEL_CHARS} characters "
            "or not printable"
        )
    if len(set(values)) != len(values):
        raise ElicitationRefused(f"{where} offers the same option twice")
    titles = [shown_line(t) or v for t, v in zip(named, values, strict=True)] if named else []
    return list(values), titles or [shown_line(v) or v for v in values]


def _count(where: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise ElicitationRefused(
            f"{where} has a length bound that is not a count: {shown_value(value)}"
        )
    return value


def _number(where: str, value: Any) -> float | None:
    if value is None:
        return None
    refusal = f"{where} has a bound that is not a finite number: {shown_value(value)}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ElicitationRefused(refusal)
    try:
        return float(check_number(value, where, integer=False))
    except OutOfBounds:  # NaN, Infinity, or an int of hundreds of digits
        raise ElicitationRefused(refusal) from None


def _default(where: str, prop: Mapping[str, Any], kind: type | tuple[type, ...]) -> Any:
    value = prop.get("default")
    if value is None:
        return None
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise ElicitationRefused(f"{where}'s default is not of its type")
    return value
