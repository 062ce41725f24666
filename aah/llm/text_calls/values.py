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

# What a key of a call object means, by its spelling with case, "_", "-" and
# spaces dropped: models write "name", "tool_name", "Name", "toolName" alike.
_NAME_SPELLINGS = frozenset({"name", "toolname", "functionname", "tool", "action"})
# Keys that name a tool and nothing else: their object holds a call even with
# the arguments written beside the name ({"tool": "search", "query": "x"}).
# "name" names people and "action" verbs in data, so they need an argument key.
_TOOL_SPELLINGS = frozenset({"tool", "toolname", "functionname"})
# "arguments" and "parameters" mark a call whatever their value; "args" and
# "input" are common words in data, so they count only holding an object.
_STRONG_ARGUMENT_SPELLINGS = frozenset(
    {
        "arguments",
        "argument",
        "parameters",
        "toolinput",
        "actioninput",
        "toolarguments",
        "functionarguments",
        "kwargs",
    }
)
_WEAK_ARGUMENT_SPELLINGS = frozenset({"args", "input", "params", "toolargs"})
# Misspelt keys ("nmae", "argumnets") still say what they mean: a key one
# edit (a transposition counts as one) from these spellings is read as it.
_FUZZY_SPELLINGS = {"name": "name", "arguments": "arguments", "parameters": "parameters"}
_TOOL_NAME_VALUE = re.compile(r"[A-Za-z_][\w.\-:/]{0,80}")


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

    A JSON answer such as ``{"name": "Alice", "age": 30}`` is data, not a call;
    ``{"tool": "web_search", "query": "x"}`` names a tool by a key that names
    nothing else, so it is a call with its arguments beside the name.
    """
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("function"), dict):
        return True
    roles = _roles(item)
    if roles.name is None:
        return False
    if roles.arguments is not None:
        # A key that names only a tool makes any argument key a call's.
        return roles.strong or roles.tool_key or isinstance(item[roles.arguments], dict)
    return roles.tool_key or roles.name in tool_names


def call_from_object(item: Any) -> TextCall | None:
    """The call an object holds, or None when its name or arguments cannot be read."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # OpenAI's own shape, pasted as text
        item = item["function"]
    roles = _roles(item)
    if not roles.name:
        return None
    if roles.arguments is not None:
        arguments: Any = item[roles.arguments]
    elif roles.tool_key:
        arguments = {key: value for key, value in item.items() if key != roles.name_key}
    else:
        arguments = {}
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        arguments = decode(arguments) if arguments.strip() else {}
    if not isinstance(arguments, dict):
        return None
    return TextCall(roles.name, arguments)


class _Roles(NamedTuple):
    """Which keys of an object name the tool and hold its arguments.

    Attributes:
        name: The tool's name, or None.
        name_key: The key that holds it.
        tool_key: Whether that key names a tool and nothing else.
        arguments: The key that holds the arguments, or None.
        strong: Whether that key marks a call whatever its value.
    """

    name: str | None
    name_key: str | None
    tool_key: bool
    arguments: str | None
    strong: bool


def _roles(item: dict[str, Any]) -> _Roles:
    name = name_key = arguments = None
    tool_key = strong = False
    for key, value in item.items():
        spelling = _spelling(key) if isinstance(key, str) else ""
        if name is None and spelling in (*_NAME_SPELLINGS, "function"):
            if isinstance(value, str) and value.strip():
                name, name_key = value.strip(), key
                # With its arguments beside it, the value must read as a tool's name.
                tool_key = spelling in _TOOL_SPELLINGS and bool(_TOOL_NAME_VALUE.fullmatch(name))
        elif arguments is None and spelling in _STRONG_ARGUMENT_SPELLINGS:
            arguments, strong = key, True
        elif arguments is None and spelling in _WEAK_ARGUMENT_SPELLINGS:
            arguments = key
    if name is not None and name_key is not None and _spelling(name_key) == "action":
        # "action" names a ReAct step only beside its "action_input".
        if arguments is None or _spelling(arguments) != "actioninput":
            name = name_key = None
    return _Roles(name, name_key, tool_key, arguments, strong)


def _spelling(key: str) -> str:
    """A key as compared: lower case without separators, a near miss read as its word."""
    plain = re.sub(r"[\s_\-]", "", key.lower())
    if plain in _NAME_SPELLINGS or plain in _STRONG_ARGUMENT_SPELLINGS:
        return plain
    if plain in _WEAK_ARGUMENT_SPELLINGS or plain == "function":
        return plain
    for word, meaning in _FUZZY_SPELLINGS.items():
        if abs(len(plain) - len(word)) <= 1 and _one_edit(plain, word):
            return meaning
    return plain


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` is ``b`` with one letter changed, added, dropped, or two swapped."""
    if a == b:
        return True
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diffs) == 1:
            return True
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and a[diffs[0]] == b[diffs[1]]
            and a[diffs[1]] == b[diffs[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
