"""Bracketed values in a reply (JSON or Python literals) and call objects inside them.

Every scan here is linear and bounded: a reply can be hundreds of kilobytes,
or a bracket string nested far deeper than ``json`` and ``ast`` can recurse,
and the parser runs on every agent reply.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

from aah.llm.text_calls.result import TextCall

# Real tool arguments nest a few levels; anything deeper is not a call, and
# stopping here keeps json/ast far from their recursion limits.
MAX_DEPTH = 64
# Python literals are parsed with ``ast``; beyond this size a reply is no call.
_MAX_LITERAL_CHARS = 100_000

# A string (closed or running to the end) or one bracket; everything between
# is skipped by the regex engine, so a span costs one pass over its text.
_TOKEN = re.compile(r""""(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|[()\[\]{}]""", re.DOTALL)
_OPENERS = "([{"
_WORD_LITERALS = {"true": True, "false": False, "null": None, "none": None}

NAME_KEYS = ("name", "tool_name", "tool")
# "arguments" and "parameters" mark a call whatever their value; "args" and
# "input" are common words in data, so they count only holding an object.
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_STRONG_ARGUMENT_KEYS = ("arguments", "parameters")


class Unreadable(NamedTuple):
    """A bracketed span that is neither JSON nor a Python literal."""

    text: str


def span_end(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at ``start``, or None.

    None when it never closes or nests deeper than ``MAX_DEPTH``. Quotes of
    either kind delimit strings, so brackets inside strings do not count.
    """
    depth = 0
    for token in _TOKEN.finditer(text, start):
        char = token.group()
        if len(char) != 1 or char in "\"'":
            if len(char) == 1:  # a lone quote at the very end never closes
                return None
            continue
        if char in _OPENERS:
            depth += 1
            if depth > MAX_DEPTH:
                return None
        else:
            depth -= 1
            if depth <= 0:
                return token.end()
    return None


def decode(span: str) -> Any:
    """``span`` as JSON, else as a Python literal (with JSON's words), else ``Unreadable``."""
    try:
        return json.loads(span)
    except (json.JSONDecodeError, RecursionError):
        pass
    if len(span) > _MAX_LITERAL_CHARS:
        return Unreadable(span)
    try:
        tree = ast.parse(span.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Unreadable(span)
    return literal(tree.body)


def literal(node: ast.expr) -> Any:
    """The value of a Python literal expression (with JSON's words), else ``Unreadable``."""
    try:
        return ast.literal_eval(_JsonWords().visit(node))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return Unreadable("")


class _JsonWords(ast.NodeTransformer):
    """Read ``true``, ``false`` and ``null`` as Python's constants."""

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802 - the visitor's hook name
        if node.id.lower() in _WORD_LITERALS:
            return ast.copy_location(ast.Constant(_WORD_LITERALS[node.id.lower()]), node)
        return node


class Values(NamedTuple):
    """Values read one after another (separated by ``;``, ``,`` or space), and where they end.

    ``unclosed`` is set when a value opened but never closed.
    """

    values: list[Any]
    end: int
    unclosed: bool = False


def read_values(text: str, start: int) -> Values:
    """The bracketed values that follow each other from ``start`` (Llama writes ``{..}; {..}``)."""
    values: list[Any] = []
    position = start
    while True:
        position = _skip(text, position, " \t\r\n")
        if position >= len(text) or text[position] not in "[{":
            return Values(values, position)
        end = span_end(text, position)
        if end is None:
            return Values(values, position, unclosed=True)
        values.append(decode(text[position:end]))
        position = _skip(text, end, " \t\r\n")
        if position < len(text) and text[position] in ";,":
            position += 1


def _skip(text: str, position: int, characters: str) -> int:
    while position < len(text) and text[position] in characters:
        position += 1
    return position


def call_items(values: list[Any]) -> list[Any]:
    """The call objects among ``values``: a list of objects counts as its items."""
    items: list[Any] = []
    for value in values:
        items.extend(value if isinstance(value, list) else [value])
    return items


def call_shaped(item: Any, tool_names: Collection[str]) -> bool:
    """Whether a value is meant as a call: a name with arguments, or an offered name.

    A JSON answer such as ``{"name": "Alice", "age": 30}`` is data, not a call.
    """
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("function"), dict):
        return True
    has_name = any(isinstance(item.get(key), str) for key in (*NAME_KEYS, "function"))
    if not has_name:
        return False
    if any(key in item for key in _STRONG_ARGUMENT_KEYS):
        return True
    if any(isinstance(item.get(key), dict) for key in ARGUMENT_KEYS):
        return True
    return _name_of(item) in tool_names


def call_from_object(item: Any) -> TextCall | None:
    """The call an object holds, or None when its name or arguments cannot be read."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # OpenAI's own shape, pasted as text
        item = item["function"]
    name = _name_of(item)
    if not name:
        return None
    arguments: Any = next((item[key] for key in ARGUMENT_KEYS if key in item), {})
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        arguments = decode(arguments) if arguments.strip() else {}
    if not isinstance(arguments, dict):
        return None
    return TextCall(name, arguments)


def _name_of(item: dict[str, Any]) -> str | None:
    for key in (*NAME_KEYS, "function"):
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
