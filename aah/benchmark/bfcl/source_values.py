"""Java and JavaScript argument values, read from the source text a model writes.

BFCL's Java and JavaScript items offer every parameter as a string: the model
writes each value as source text in the item's language (``42L`` for a Java
``long``, ``new int[]{1, 2}`` for a Java array, ``[1, 2]`` or ``{"k": 1}`` in
JavaScript), and the AST check reads the text back as a value of the
parameter's declared type before comparing it with the possible answers.
Written from the forms BFCL documents for each type, and held to the official
checker's readings by the corpus of ``scripts/bfcl_checker_corpus.py``:

- Java: ``boolean`` is ``true``/``false``; ``integer``, ``short`` and
  ``byte`` are plain integers (the last two in range); ``long`` ends in
  ``L``; ``float`` ends in ``f``; ``double`` has no suffix; ``char`` is one
  character; ``String`` and ``any`` are the text itself. ``Array`` is
  ``new T[]{a, b}``; ``ArrayList`` is ``new ArrayList<>(Arrays.asList(a, b))``
  or ``new ArrayList<>() {{ add(a); }}``; ``HashMap`` is
  ``new HashMap<>() {{ put("k", v); }}`` (an entry in another form is passed
  over). Elements are split at every comma and read as the declared element
  type: an array's ``String`` element keeps its quotes, a list's loses them;
  without an element type, a double-quoted string, a boolean or a number is
  read as such and anything else (a name, ``null``) is its own text.
- JavaScript: ``Boolean`` is ``true``/``false``; ``integer`` a plain
  integer; ``float`` a decimal number (no exponent); ``Bigint`` ends in
  ``n``; ``String`` is the text without surrounding quotes; ``any`` the text
  itself. ``array`` is ``[a, b]`` or ``new Array(a, b)`` (split at commas
  outside brackets, inside quotes too); ``dict`` an object literal, keys
  quoted or bare. A name, ``null`` or ``undefined`` is its own text.

Where aah's reading differs from BFCL's on purpose (docs/researchers/bfcl.md;
the corpus marks these kinds): a collection followed by other text
(``new int[]{1, 2};``, ``[1, 2]L``, ``{"a": 1};``) is no value, where BFCL's
patterns find the collection and ignore the rest; a JavaScript object with a
trailing comma (``{"a": 1,}``) is the object, where BFCL reads ``1,`` as the
last value.

Spaces around a collection are dropped. Text that is not a value of its type
is left as it was (a JavaScript collection's without the spaces around it), a
string: the check then fails it on type, unless the possible answer is that
very string (a variable's name).

A model writes this text, so its reading is bounded: text longer than
:data:`MAX_SOURCE_CHARS` or with brackets nested deeper than
:data:`~aah.bounds.MAX_NESTING` levels is read as no value (left as it was),
and every pattern matches in time linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aah.bounds import MAX_NESTING

# The JSON Schema type each declared type's value has once read.
JAVA_TYPES: dict[str, str] = {
    "byte": "integer",
    "short": "integer",
    "integer": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "boolean": "boolean",
    "char": "string",
    "String": "string",
    "any": "string",
    "Array": "array",
    "ArrayList": "array",
    "HashMap": "object",
}
JAVASCRIPT_TYPES: dict[str, str] = {
    "String": "string",
    "integer": "integer",
    "float": "number",
    "Bigint": "integer",
    "Boolean": "boolean",
    "dict": "object",
    "array": "array",
    "any": "string",
}
LANGUAGE_TYPES = {"java": JAVA_TYPES, "javascript": JAVASCRIPT_TYPES}

_INTEGER = re.compile(r"-?\d+")
# ``integer`` has no range check; ``byte`` and ``short`` do.
_JAVA_RANGES = {"byte": 2**7, "short": 2**15, "integer": 2**1024}
_JAVA_FLOAT = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?[fF]")
_JAVA_DOUBLE = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_JS_NUMBER = re.compile(r"-?\d+(\.\d+)?")
# ``new T[]{...}``: what stands between ``new`` and the first ``[`` is read by
# ``_array_type`` (one pattern over both would backtrack cubically on spaces).
_JAVA_ARRAY = re.compile(r"new([^\[]*)\[\s*\]\s*\{(.*)\}", re.DOTALL)
_SPACES = re.compile(r"\s*")
_TYPE_WORDS = re.compile(r"[\w.<>, ]+")
_JAVA_AS_LIST = re.compile(
    r"new\s+ArrayList\s*<[^()]*>\s*\(\s*Arrays\.asList\s*\((.*)\)\s*\)", re.DOTALL
)
_JAVA_ADDS = re.compile(
    r"new\s+ArrayList\s*<[^()]*>\s*\(\s*\)\s*(?:\{\s*\{(.*)\}\s*\}|\{\s*\})?", re.DOTALL
)
_JAVA_MAP = re.compile(
    r"new\s+HashMap\s*<[^()]*>\s*\(\s*\)\s*(?:\{\s*\{(.*)\}\s*\}|\{\s*\})?", re.DOTALL
)
_JAVA_ADD = re.compile(r"add\((.*)\)", re.DOTALL)
# An entry: a double-quoted key, then a value with no brackets or braces (its
# spaces stripped after the match, so that no two parts of it compete for them).
_JAVA_PUT = re.compile(r'put\("([^"]*)",([^(){}\[\]]*)\)', re.DOTALL)
# The longest text read as a value: BFCL's longest Java or JavaScript answer
# is 160 characters; a model's longer text is no value of any declared type.
MAX_SOURCE_CHARS = 10_000


class NotAValue(ValueError):
    """The text is not a value of the declared type."""


def read_value(text: str, declared: str, items: str | None, language: str) -> Any:
    """``text`` read as a value of the ``declared`` type in ``language``.

    Args:
        text: The value as the model wrote it.
        declared: The parameter's declared type (``long``, ``HashMap``, ``dict``...).
        items: A collection's declared element type, if any.
        language: ``java`` or ``javascript``.

    Returns:
        The value read, or ``text`` itself where it is no value of the type.
    """
    if len(text) > MAX_SOURCE_CHARS or _bracket_depth(text) > MAX_NESTING:
        return text  # past the bounds: no value, so never read
    read = _java if language == "java" else _javascript
    if declared not in _COLLECTIONS:
        try:
            return read(text, declared, items)
        except NotAValue:
            return text
    # A collection is read with the spaces around it dropped; JavaScript text
    # that is no collection (a variable's name) is kept without them too.
    try:
        return read(text.strip(), declared, items)
    except NotAValue:
        return text.strip() if language == "javascript" else text


_COLLECTIONS = frozenset({"Array", "ArrayList", "HashMap", "array", "dict"})


def _java(text: str, declared: str, items: str | None) -> Any:
    if declared in ("String", "any"):
        return text
    if declared == "boolean":
        return _boolean(text)
    if declared in _JAVA_RANGES:
        value = _integer(text)
        if not -_JAVA_RANGES[declared] <= value < _JAVA_RANGES[declared]:
            raise NotAValue(text)
        return value
    if declared == "long":
        if text[-1:] not in ("L", "l"):
            raise NotAValue(text)
        return _integer(text[:-1])
    if declared == "float":
        if not _JAVA_FLOAT.fullmatch(text):
            raise NotAValue(text)
        return float(text[:-1])
    if declared == "double":
        if not _JAVA_DOUBLE.fullmatch(text):
            raise NotAValue(text)
        return float(text)
    if declared == "char":
        if len(text) != 1:
            raise NotAValue(text)
        return text
    if declared == "Array":
        return [_java_element(part, items) for part in _commas(_array_body(text))]
    if declared == "ArrayList":
        listed = _JAVA_AS_LIST.fullmatch(text)
        parts = _commas(listed.group(1)) if listed else _java_calls(_JAVA_ADDS, text, _JAVA_ADD)
        if listed and not parts:
            raise NotAValue(text)
        if items in ("String", "char"):
            # A list's string elements are read without their quotes (an
            # array's keep them); an unquoted one is no string: empty.
            return [_unquoted(part) if _quoted(part) else "" for part in parts]
        return [_java_element(part, items) for part in parts]
    if declared == "HashMap":
        entries = [_JAVA_PUT.fullmatch(arg) for arg in _java_calls(_JAVA_MAP, text, _JAVA_PUT)]
        return {
            e.group(1): _java_element(e.group(2).strip(), None) for e in entries if e is not None
        }
    raise NotAValue(text)


def _java_calls(pattern: re.Pattern[str], text: str, call: re.Pattern[str]) -> list[str]:
    """The ``add(...)``/``put(...)`` statements of an initialiser block; others are passed over."""
    match = pattern.fullmatch(text)
    if match is None:
        raise NotAValue(text)
    statements = _split(match.group(1) or "", ";")
    if call is _JAVA_ADD:
        return [m.group(1).strip() for s in statements if (m := call.fullmatch(s))]
    return [s for s in statements if call.fullmatch(s)]


def _commas(body: str) -> list[str]:
    """A Java collection's elements: split at every comma (quotes or not), empty ones dropped."""
    return [part.strip() for part in body.split(",") if part.strip()]


def _java_element(text: str, items: str | None) -> Any:
    if items in ("String", "any"):
        return text  # kept as written, quotes included
    if items is not None:
        try:
            return _java(text, items, None)
        except NotAValue:
            return text
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if _INTEGER.fullmatch(text):
        return _attempt(lambda: _integer(text), text)
    if re.fullmatch(r"-?\d+[lL]", text):
        return _attempt(lambda: _integer(text[:-1]), text)
    if _JAVA_FLOAT.fullmatch(text):
        return float(text[:-1])
    if _JAVA_DOUBLE.fullmatch(text):
        return float(text)
    return text  # a name, null, a char in single quotes: its own text


def _javascript(text: str, declared: str, items: str | None) -> Any:
    if declared == "String":
        return _unquoted(text) if _quoted(text) else text
    if declared == "any":
        return text
    if declared == "Boolean":
        return _boolean(text)
    if declared == "integer":
        return _integer(text)
    if declared == "float":
        if not _JS_NUMBER.fullmatch(text):
            raise NotAValue(text)
        return float(text)
    if declared == "Bigint":
        if not text.endswith("n"):
            raise NotAValue(text)
        return _integer(text[:-1])
    if declared == "array":
        if text.startswith("new Array(") and text.endswith(")"):
            body = text[len("new Array(") : -1]
        elif text.startswith("[") and text.endswith("]"):
            body = text[1:-1]
        else:
            raise NotAValue(text)
        if not body.strip():
            return []
        # Split at commas outside brackets, inside quotes too (``"a, b"`` is two parts).
        return [_js_element(part, items) for part in _split(body, quotes=False)]
    if declared == "dict":
        return _js_object(text)
    raise NotAValue(text)


def _js_element(text: str, items: str | None) -> Any:
    if items == "String":
        return _unquoted(text) if _quoted(text) else text
    if items is not None and items != "any":
        try:
            return _javascript(text, items, None)
        except NotAValue:
            return text
    if _quoted(text):
        return _unquoted(text)
    if text in ("true", "false"):
        return text == "true"
    if _INTEGER.fullmatch(text):
        return _attempt(lambda: _integer(text), text)
    if _JS_NUMBER.fullmatch(text):
        return float(text)
    if text.startswith("[") or text.startswith("new Array("):
        return _attempt(lambda: _javascript(text, "array", None), text)
    if text.startswith("{"):
        return _attempt(lambda: _js_object(text), text)
    return text  # a name, null, undefined: its own text


def _js_object(text: str) -> dict[str, Any]:
    if not (text.startswith("{") and text.endswith("}")):
        raise NotAValue(text)
    result: dict[str, Any] = {}
    for part in _split(text[1:-1]):
        if not part:
            continue
        pair = _split(part, ":")
        if len(pair) < 2:
            raise NotAValue(text)
        key = _unquoted(pair[0]) if _quoted(pair[0]) else pair[0]
        result[key] = _js_element(":".join(pair[1:]).strip(), None)
    return result


def _attempt(read: Callable[[], Any], text: str) -> Any:
    try:
        return read()
    except NotAValue:
        return text


def _boolean(text: str) -> bool:
    if text not in ("true", "false"):
        raise NotAValue(text)
    return text == "true"


def _integer(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise NotAValue(text)
    try:
        return int(text)
    except ValueError:  # more digits than Python reads (4,300): no value a call needs
        raise NotAValue(text) from None


def _array_body(text: str) -> str:
    """The elements' text of a Java ``new T[]{...}``."""
    match = _JAVA_ARRAY.fullmatch(text)
    if match is None or not _array_type(match.group(1)):
        raise NotAValue(text)
    return match.group(2)


def _array_type(between: str) -> bool:
    r"""Whether ``between`` (after ``new``, before ``[``) is spaces, type words, then spaces.

    The same strings as ``\s+[\w.<>, ]+?\s*`` (a space is both a space
    and a type word's character), checked in one pass each way.
    """
    lead = _SPACES.match(between)
    start = lead.end() if lead else 0
    if start == 0:
        return False  # ``new`` runs into the type's name
    end = len(between.rstrip())
    if start >= len(between):
        return " " in between[1:]  # only spaces: one of them stands for the type
    return end > start and _TYPE_WORDS.fullmatch(between, start, end) is not None


def _bracket_depth(text: str) -> int:
    """How deep ``text``'s brackets nest (quotes not told apart: an over-count is safe)."""
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


def _quoted(text: str) -> bool:
    return len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"


def _unquoted(text: str) -> str:
    return text[1:-1]


def _split(text: str, separator: str = ",", *, quotes: bool = True) -> list[str]:
    """``text`` split at ``separator`` outside brackets (and quotes), each part stripped."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    for index, char in enumerate(text):
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = ""
        elif quotes and char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts
