"""BFCL's AST check: do a reply's calls match an item's possible answers (science.md §6).

Written from the rules BFCL documents and its data's answer format
(``{function: {argument: [acceptable values]}}``), and held to the official
checker's verdicts by the corpus of ``scripts/bfcl_checker_corpus.py``:

- the reply makes as many calls as the answer holds (one for simple and
  multiple items); parallel calls match the answer's calls in any order;
- each call names the answer's function; every required argument is given;
  no argument outside the function's schema or outside the answer; an
  argument the reply leaves out must list ``""`` (it may be omitted);
- each value has its parameter's type, exactly (``true`` is no integer). At
  the top level only, an int stands in for a float and, in prompt mode, a
  tuple is read as a list for a ``tuple`` parameter (and is wrong anywhere
  else). An untyped (``any``) parameter wants a string. A value of the type
  of the answer's first value (``""`` aside) is right too, and is then a
  "variable": compared with the acceptable values exactly (a name such as
  ``data['sales']``, a word such as "dontcare", ``null`` for a default).
  So an explicit ``""`` is right only for a string parameter, or where the
  answer's first value is a string: ``""`` in the answer means "may be left
  out", not "the empty string is right";
- an array's items have its item type or the answer's items' type, unless
  the answer lists ``""`` (then any items pass the type check, and
  ``[-1, 2]`` matches ``[-1.0, 2.0]`` by value);
- values compared: strings after dropping spaces and ``,./-_*^`` and
  ignoring case (``'`` read as ``"``); lists element by element in order,
  their string elements so normalised, deeper values exactly; objects key by
  key against each key's acceptable values (string values normalised, other
  values, lists included, exactly; an explicit ``""`` right where the key's
  values list ``""``; a missing key must list ``""``); a list of objects
  object by object.

Where aah keeps its own reading against the official checker (each a kind of
the corpus, left out of its agreement figure): a boolean is never a number,
inside objects and lists too (Python's ``0 == False`` lets BFCL pass ``0``
for ``false`` there); Java and JavaScript text is read by
``source_values``, whose readings differ from BFCL's in the cases listed
there.

In Java and JavaScript items each value is a string of source text, read
back as its declared type (``source_values``) before these rules apply,
without the int-for-float reading.

The functions' schemas are the JSON Schema the loader made of BFCL's types
(``float`` is ``number``, ``tuple`` an ``array``, ``dict`` an ``object``);
a ``tuple`` parameter is told by ``BfclTask.declared_types``.

The check never raises on what it is given: a possible answer of the wrong
shape, or a call whose name is no string, whose arguments are no object or
nest deeper than :data:`~aah.bounds.MAX_NESTING` levels, is a failed check
whose reason says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from aah.benchmark.bfcl.records import ground_truth_problem
from aah.benchmark.bfcl.source_values import LANGUAGE_TYPES, read_value
from aah.benchmark.bfcl.tasks import BfclTask, PossibleCall
from aah.benchmark.when2call import When2CallTool
from aah.bounds import MAX_NESTING, nesting
from aah.events import excerpt

_DROPPED = re.compile(r"[ ,./\-_*^]")
# How much of a value a reason quotes: a model's value may be megabytes.
_QUOTED_CHARS = 200
# The Python type BFCL reads each JSON Schema type as (no type, ``any``: a string).
_PYTHON: dict[str | None, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    None: str,
}
# A possible answer's values all ``""``: no type to read a variable by.
_NO_TYPE = type("_NoType", (), {})


class _Unmatchable(Exception):
    """A possible answer the values cannot be compared with (a number where a list belongs)."""


class Call(NamedTuple):
    """A call as the model made it: the BFCL function name and its arguments."""

    name: str
    arguments: Mapping[str, Any]


class AstCheckResult(NamedTuple):
    """The AST check's result: whether the calls match, and why not."""

    ok: bool
    reason: str = ""


PASS = AstCheckResult(True)


def check_calls(task: BfclTask, calls: Sequence[Call]) -> AstCheckResult:
    """Whether ``calls`` match ``task``'s possible answers (AST categories only)."""
    truth: Any = task.ground_truth
    problem = ground_truth_problem(list(truth) if isinstance(truth, tuple) else truth)
    if problem is not None:
        return AstCheckResult(False, f"the possible answer is malformed: ground_truth {problem}")
    answers = list(truth)
    problem = next((p for call in calls if (p := call_problem(call)) is not None), None)
    if problem is not None:
        return AstCheckResult(False, problem)
    if len(calls) != len(answers):
        return AstCheckResult(
            False, f"wrong number of calls: {len(calls)}, expected {len(answers)}"
        )
    functions = {tool.original: tool for tool in task.functions}

    def check(call: Call, answer: PossibleCall) -> AstCheckResult:
        return check_call(functions, call, answer, task.declared_types, task.source_language)

    if "parallel" not in task.category:
        return check(calls[0], answers[0])
    # By position: two calls may compare equal (10 == 10.0) yet differ in type.
    unused = list(range(len(calls)))
    for answer in answers:
        match = next((i for i in unused if check(calls[i], answer).ok), None)
        if match is None:
            name = next(iter(answer), "?")
            return AstCheckResult(False, f"no call matches the expected call of {name}")
        unused.remove(match)
    return PASS


def check_call(
    functions: Mapping[str, When2CallTool],
    call: Call,
    answer: Mapping[str, Any],
    declared_types: Mapping[str, Mapping[str, tuple[str, str | None]]] | None = None,
    source_language: str | None = None,
) -> AstCheckResult:
    """Whether one call matches one possible answer ``{function: {argument: [values]}}``.

    In a Java or JavaScript item (``source_language``) each value must be a
    string of source text, read back as its declared type
    (``declared_types``, by function and parameter) before it is checked. In
    a Python item ``declared_types`` marks the ``tuple`` parameters.
    """
    problem = ground_truth_problem([dict(answer) if isinstance(answer, Mapping) else answer])
    if problem is not None:
        return AstCheckResult(False, f"the possible answer is malformed: ground_truth {problem}")
    problem = call_problem(call)
    if problem is not None:
        return AstCheckResult(False, problem)
    expected_name, expected = next(iter(answer.items()))
    if call.name != expected_name:
        called = excerpt(call.name, _QUOTED_CHARS)
        return AstCheckResult(False, f"called {called}, expected {expected_name}")
    function = functions.get(expected_name)
    if function is None:
        return AstCheckResult(False, f"{expected_name} is not an offered function")
    schema = function.parameters.get("properties") or {}
    declared = (declared_types or {}).get(expected_name, {})
    for name in function.parameters.get("required") or []:
        if name not in call.arguments:
            return AstCheckResult(False, f"missing required argument {name}")
    for name, value in call.arguments.items():
        if name not in schema:
            return AstCheckResult(False, f"unexpected argument {excerpt(name, _QUOTED_CHARS)}")
        if name not in expected:
            return AstCheckResult(False, f"argument {name} is not in the possible answer")
        if source_language is not None and name in declared:
            if not isinstance(value, str):
                return AstCheckResult(False, f"argument {name}: not {source_language} source text")
            kind, element = declared[name]
            wanted, inner = _source_types(kind, element, source_language)
            value = read_value(value, kind, element, source_language)
        else:
            wanted, inner = _python_types(schema[name])
            if name in declared and declared[name][0] == "tuple" and type(value) is tuple:
                value = list(value)
            if wanted is float and type(value) is int:
                value = float(value)
        reason = _argument_problem(name, value, expected[name], wanted, inner)
        if reason is not None:
            return AstCheckResult(False, reason)
    for name, values in expected.items():
        if name not in call.arguments and "" not in values:
            return AstCheckResult(False, f"missing argument {name}")
    return PASS


def call_problem(call: Any) -> str | None:
    """What makes ``call`` no call to check (its name, its arguments' shape or depth), or None."""
    if not isinstance(call, Call) or not isinstance(call.name, str):
        return "a call without a function name"
    if not isinstance(call.arguments, Mapping):
        return f"{excerpt(call.name, _QUOTED_CHARS)}: arguments that are not an object"
    if nesting(call.arguments) > MAX_NESTING:
        return (
            f"{excerpt(call.name, _QUOTED_CHARS)}: arguments nest deeper than {MAX_NESTING} levels"
        )
    return None


def _quoted(value: Any) -> str:
    """``value`` as a reason quotes it: at most ``_QUOTED_CHARS`` characters."""
    try:
        return excerpt(repr(value), _QUOTED_CHARS)
    except ValueError:  # an int of more digits than Python writes out
        return f"(an {type(value).__name__} too long to show)"


def _python_types(schema: Mapping[str, Any]) -> tuple[type | None, type | None]:
    """The Python types a parameter's value and, for an array, its items must have.

    None where BFCL cannot read the type (a list of types, an array without items).
    """
    kind = schema.get("type")
    if not (kind is None or isinstance(kind, str)) or kind not in _PYTHON:
        return None, None
    wanted = _PYTHON[kind]
    if wanted is not list:
        return wanted, None
    items = schema.get("items")
    if not isinstance(items, Mapping) or items.get("type") not in _PYTHON:
        return None, None
    return list, _PYTHON[items.get("type")]


def _source_types(
    kind: str | None, element: str | None, language: str
) -> tuple[type | None, type | None]:
    """The Python types of a declared Java or JavaScript type's value and items, once read."""
    types = LANGUAGE_TYPES[language]
    if kind not in types:
        return None, None
    wanted = _PYTHON[types[kind]]
    if kind not in _SOURCE_COLLECTIONS:
        return wanted, None
    if element not in types:
        return None, None  # a collection without an element type BFCL can read
    return wanted, _PYTHON[types[element]]


# The declared collections whose items BFCL reads and checks by their element type.
_SOURCE_COLLECTIONS = frozenset({"Array", "ArrayList", "array"})


def _argument_problem(
    name: str, value: Any, acceptable: Sequence[Any], wanted: type | None, inner: type | None
) -> str | None:
    """Why ``value`` is no right value of argument ``name``, or None when it is."""
    if wanted is None:
        return f"argument {name}: a parameter type BFCL cannot check"
    answer_type = _answer_type(acceptable)
    variable = answer_type is not _NO_TYPE and answer_type is not wanted
    if type(value) is wanted:
        items = cast("Sequence[Any]", value) if inner is not None else ()
        if inner is not None and not any(
            type(option) is not list or all(_item_typed(item, option, inner) for item in items)
            for option in acceptable
        ):
            return f"argument {name}: items of the wrong type"
    elif type(value) is answer_type:
        variable = True
    else:
        return f"argument {name}: wrong type {type(value).__name__}"
    try:
        right = _value_right(value, acceptable, wanted, inner, variable)
    except _Unmatchable:
        return f"argument {name}: the possible answer cannot be compared with the value"
    if not right:
        return f"argument {name}: value {_quoted(value)} is not acceptable"
    return None


def _answer_type(acceptable: Sequence[Any]) -> type:
    """The type of the first acceptable value that is not ``""``; ``_NO_TYPE`` if none."""
    return next((type(option) for option in acceptable if option != ""), _NO_TYPE)


def _item_typed(item: Any, option: Sequence[Any], inner: type) -> bool:
    return type(item) is inner or type(item) is _answer_type(option)


def _value_right(
    value: Any, acceptable: Sequence[Any], wanted: type, inner: type | None, variable: bool
) -> bool:
    if variable:
        return any(same(value, option) for option in acceptable)
    if wanted is dict:
        return any(_dict_matches(value, option) for option in acceptable if option != "")
    if wanted is list and inner is dict:
        return any(_dicts_match(value, option) for option in acceptable)
    if wanted is str:
        return normalise(value) in {normalise(a) for a in acceptable if type(a) is str}
    if wanted is list:
        mine = _normalised_items(value)
        options = [_normalised_items(_items(option)) for option in acceptable]
        return any(same(mine, option) for option in options)
    return any(same(value, option) for option in acceptable)


def same(value: Any, other: Any) -> bool:
    """Python's ``==``, except that a boolean equals only a boolean (at any depth)."""
    if isinstance(value, bool) or isinstance(other, bool):
        return type(value) is type(other) and value == other
    if isinstance(value, (list, tuple)) and isinstance(other, (list, tuple)):
        return (
            type(value) is type(other)
            and len(value) == len(other)
            and all(same(a, b) for a, b in zip(value, other, strict=True))
        )
    if isinstance(value, dict) and isinstance(other, dict):
        return value.keys() == other.keys() and all(same(value[k], other[k]) for k in value)
    try:
        return bool(value == other)
    except (TypeError, ValueError):
        return False


def _items(option: Any) -> list[Any]:
    """A possible answer read as a sequence, as BFCL reads it (a string: its characters)."""
    if isinstance(option, (list, str)):
        return list(option)
    raise _Unmatchable(option)


def _normalised_items(values: Sequence[Any]) -> list[Any]:
    """A list with its string items normalised (deeper values as they are)."""
    return [normalise(v) if type(v) is str else v for v in values]


def normalise(text: str) -> str:
    """A string as BFCL compares it: no spaces or ``,./-_*^``, lower case, ``'`` as ``"``."""
    return _DROPPED.sub("", text).lower().replace("'", '"')


def _dict_matches(value: Mapping[str, Any], acceptable: Any) -> bool:
    """Whether an object matches one acceptable object, key by key."""
    if not isinstance(acceptable, Mapping):
        return False
    for key, inner in value.items():
        if key not in acceptable:
            return False
        mine = normalise(inner) if type(inner) is str else inner
        if not any(same(mine, option) for option in _normalised_items(_items(acceptable[key]))):
            return False
    return all(key in value or _may_be_left_out(options) for key, options in acceptable.items())


def _may_be_left_out(options: Any) -> bool:
    """Whether a nested key's acceptable values allow leaving it out (BFCL's ``"" in``)."""
    if isinstance(options, str):
        return True  # the empty string is in every string
    if isinstance(options, (list, dict)):
        return "" in options
    raise _Unmatchable(options)


def _dicts_match(value: Sequence[Any], acceptable: Any) -> bool:
    """Whether a list of objects matches one acceptable list of them, object by object."""
    if isinstance(acceptable, str) and acceptable:
        raise _Unmatchable(acceptable)  # BFCL reads a name's characters as objects
    wanted = _items(acceptable)
    if len(value) != len(wanted):
        return False
    for mine, want in zip(value, wanted, strict=True):
        if not isinstance(mine, Mapping):
            raise _Unmatchable(mine)
        if want == "" or not _dict_matches(mine, want):
            return False
    return True
