"""A tool's JSON schema as an elicitation form's schema: what :mod:`aah.desk.user_tools` shows.

A tool's parameters, as pydantic writes them, hold more than a form's flat
primitive fields: local references (``$ref`` to ``$defs``), ``anyOf`` with
``null`` for an optional value, an enum or any text, an object argument.
:func:`form_schema` makes them a form :func:`~aah.desk.form_fields` reads:
references followed, ``null`` dropped, the enum offered (a person picks
from its options), an object argument's fields shown as ``argument.field``
(one level deep). Anything else is refused in one line
(:class:`~aah.desk.ElicitationRefused`), as is a schema that nests too deep
or refers on and on: reading one tool's schema takes a bounded number of steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aah.bounds import nesting
from aah.desk.elicitation_form import MAX_NAME_CHARS, shown_line
from aah.desk.elicitation_schema import ElicitationRefused, shown_value

# A tool's schema: parameters, an object argument, its fields, their choices.
MAX_TOOL_NESTING = 12
# How many schemas (references followed, choices read) one tool's fields may take to read.
_MAX_STEPS = 200
_MAX_CHOICES = 8
# What a schema of "any text" may say besides its type.
_ANY_TEXT = frozenset({"type", "title", "description"})


def usable_name(name: Any) -> bool:
    """Whether ``name`` can name a tool or an argument: short, printable text."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= MAX_NAME_CHARS
        and name.isprintable()
        and not name.isspace()
    )


def form_schema(tool: str, parameters: Any) -> tuple[dict[str, Any], list[str]]:
    """A tool's parameters as an elicitation form's schema, and its required object arguments.

    Raises:
        ElicitationRefused: a schema no form of plain fields can show.
    """
    if parameters is None:
        return {"type": "object", "properties": {}}, []
    if not isinstance(parameters, Mapping):
        raise ElicitationRefused(f"{tool}'s parameters are not an object schema")
    if nesting(parameters, limit=MAX_TOOL_NESTING) > MAX_TOOL_NESTING:
        raise ElicitationRefused(f"{tool}'s parameters nest deeper than a form shows")
    defs = parameters.get("$defs", parameters.get("definitions")) or {}
    properties = parameters.get("properties") or {}
    required = parameters.get("required") or []
    if not isinstance(defs, Mapping) or not isinstance(properties, Mapping):
        raise ElicitationRefused(f"{tool}'s parameters have no object of properties")
    if not isinstance(required, list) or any(
        not isinstance(r, str) or r not in properties for r in required
    ):
        raise ElicitationRefused(f"{tool}'s parameters require a value they do not describe")
    walk = _Schema(defs)
    flat: dict[str, Any] = {}
    needed: list[str] = []
    objects: list[str] = []
    for argument, raw in properties.items():
        _check_key(tool, argument)
        prop = walk.plain(f"{tool}'s argument {argument!r}", raw)
        if prop.get("type") != "object":
            flat[argument] = prop
            needed += [argument] if argument in required else []
            continue
        inner = prop.get("properties")
        inner_required = prop.get("required") or []
        if not isinstance(inner, Mapping) or not inner or not isinstance(inner_required, list):
            raise ElicitationRefused(
                f"{tool}'s argument {argument!r} is an object of any shape: a form cannot show it"
            )
        title = shown_line(prop.get("title")) or argument
        for child, child_raw in inner.items():
            _check_key(tool, child)
            where = f"{tool}'s argument {argument}.{child}"
            child_prop = walk.plain(where, child_raw)
            if child_prop.get("type") == "object":
                raise ElicitationRefused(f"{where} is an object inside an object: too deep a form")
            key = f"{argument}.{child}"
            flat[key] = {**child_prop, "title": f"{title} · {_title(child_prop, child)}"}
            if argument in required and child in inner_required:
                needed.append(key)
        objects += [argument] if argument in required else []
    return {"type": "object", "properties": flat, "required": needed}, objects


def _title(prop: Mapping[str, Any], name: str) -> str:
    return shown_line(prop.get("title")) or name


def _check_key(tool: str, name: Any) -> None:
    if not isinstance(name, str) or "." in name or not usable_name(name):
        raise ElicitationRefused(f"{tool} has an argument named {shown_value(name)}: not a field")


class _Schema:
    """A tool's ``$defs`` and how many more schemas may be read to make its fields plain.

    Every reference followed and choice read costs one step, so a schema that
    refers on and on, or offers choices of choices, is refused after
    :data:`_MAX_STEPS` of them, not walked for ever.
    """

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.steps = _MAX_STEPS

    def plain(self, where: str, prop: Any) -> dict[str, Any]:
        """``prop`` with its references followed and its choice made: one plain field's schema."""
        while True:
            self.steps -= 1
            if self.steps < 0:
                raise ElicitationRefused(
                    f"{where} refers on and on: past {_MAX_STEPS} references and choices"
                )
            if not isinstance(prop, Mapping):
                raise ElicitationRefused(f"{where} is not a schema")
            siblings = {k: v for k, v in prop.items() if k not in ("$ref", "anyOf", "oneOf")}
            if "$ref" in prop:
                # A referred schema's title names a type (``APNNames``), not the field.
                referred = self._referred(where, prop["$ref"])
                prop = {**{k: v for k, v in referred.items() if k != "title"}, **siblings}
                continue
            choices = prop.get("anyOf", prop.get("oneOf"))
            if choices is not None and not _titled_options(choices):
                prop = {**self._chosen(where, choices), **siblings}
                continue
            break
        out = dict(prop)
        if "default" in out and out["default"] is None:
            del out["default"]
        enum = out.get("enum")
        if "type" not in out and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
            out["type"] = "string"
        return out

    def _referred(self, where: str, ref: Any) -> Mapping[str, Any]:
        for prefix in ("#/$defs/", "#/definitions/"):
            if isinstance(ref, str) and ref.startswith(prefix):
                found = self.defs.get(ref.removeprefix(prefix))
                if isinstance(found, Mapping):
                    return found
        raise ElicitationRefused(f"{where} refers to {shown_value(ref)}, which the schema lacks")

    def _chosen(self, where: str, choices: Any) -> dict[str, Any]:
        """The one kind of value among ``choices`` a field takes (null: the value is optional)."""
        if not isinstance(choices, list) or not 0 < len(choices) <= _MAX_CHOICES:
            raise ElicitationRefused(f"{where} offers no kind of value a form can take")
        kinds = [self.plain(where, choice) for choice in choices]
        kinds = [kind for kind in kinds if kind.get("type") != "null"]
        if len(kinds) == 1:
            return kinds[0]
        enums = [kind for kind in kinds if "enum" in kind]
        texts = [k for k in kinds if k.get("type") == "string" and set(k) <= _ANY_TEXT]
        if len(enums) == 1 and len(enums) + len(texts) == len(kinds):
            return enums[0]  # an enum or any text: the enum's options are what a person picks
        shaped = [k for k in kinds if k.get("type") == "object" and k.get("properties")]
        loose = [k for k in kinds if k.get("type") == "object" and not k.get("properties")]
        if len(shaped) == 1 and len(shaped) + len(loose) == len(kinds):
            return shaped[0]  # an object of fields, or any object: the fields are the form
        raise ElicitationRefused(f"{where} takes one of several kinds of value: a field has one")


def _titled_options(choices: Any) -> bool:
    """Whether ``choices`` are an enum's titled options (``{const, title}``), a form's own."""
    return isinstance(choices, list) and all(
        isinstance(c, Mapping) and "const" in c for c in choices
    )
