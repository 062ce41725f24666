"""BFCL's AST check: do a reply's calls match an item's possible answers (science.md §6).

Written from the rules BFCL documents and its data's answer format
(``{function: {argument: [acceptable values]}}``):

- the reply makes as many calls as the answer holds (one for simple and
  multiple items); parallel calls match the answer's calls in any order;
- each call names the answer's function; every required argument is given;
  no argument outside the function's schema or outside the answer;
- each value has its parameter's type, an int standing in for a float
  (``number``) and a list for a tuple; a parameter without a type (``any``)
  takes any value; ``null`` is right where the answer lists it; a string
  where another type is wanted is right when it is exactly an acceptable
  value (a variable's name, or a word such as "dontcare"), and then only so;
- each value is one of the acceptable ones: strings compared after dropping
  spaces and ``,./-_*^`` and ignoring case (``'`` read as ``"``), lists
  element by element in order, objects key by key (each key's own list of
  acceptable values; a missing key must allow ``""``);
- an argument the reply leaves out must list ``""`` (it may be omitted).

The functions' schemas are the JSON Schema the loader made of BFCL's types
(``float`` is ``number``, ``tuple`` an ``array``, ``dict`` an ``object``).

The check never raises on what it is given: a possible answer of the wrong
shape, or a call whose name is no string, whose arguments are no object or
nest deeper than :data:`~aah.bounds.MAX_NESTING` levels, is a failed check
whose reason says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from aah.benchmark.bfcl.records import ground_truth_problem
from aah.benchmark.bfcl.source_values import LANGUAGE_TYPES, read_value
from aah.benchmark.bfcl.tasks import BfclTask, PossibleCall
from aah.benchmark.when2call import When2CallTool
from aah.bounds import MAX_NESTING, nesting
from aah.events import excerpt

_DROPPED = re.compile(r"[ ,./\-_*^]")
# How much of a value a reason quotes: a model's value may be megabytes.
_QUOTED_CHARS = 200
# The Python value types of each JSON Schema type the loader writes.
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (float, int),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


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
    (``declared_types``, by function and parameter) before it is checked.
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
        if value is None and None in expected[name]:
            continue  # an explicit null where the answer allows null (the default)
        parameter = schema[name]
        if source_language is not None and name in declared:
            if not isinstance(value, str):
                return AstCheckResult(False, f"argument {name}: not {source_language} source text")
            kind, element = declared[name]
            value = read_value(value, kind, element, source_language)
            parameter = _read_schema(kind, element, source_language)
        wanted = _checked_schema(parameter, expected[name])
        if not has_type(value, wanted) and not _answer_type(value, expected[name]):
            return AstCheckResult(False, f"argument {name}: wrong type {type(value).__name__}")
        if not value_matches(value, expected[name]):
            shown = _quoted(value)
            return AstCheckResult(False, f"argument {name}: value {shown} is not acceptable")
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


def _read_schema(kind: str, element: str | None, language: str) -> dict[str, Any]:
    """The JSON Schema a value of a declared Java or JavaScript type has once read."""
    types = LANGUAGE_TYPES[language]
    schema: dict[str, Any] = {"type": types[kind]}
    if element in types:
        schema["items"] = {"type": types[element]}
    return schema


def has_type(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``value`` has the schema's type (an int for a number; items of arrays too)."""
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:
        return True  # ``any``, or a list of types: no constraint
    if isinstance(value, bool) and kind != "boolean":
        return False  # JSON true is no number
    if not isinstance(value, _TYPES[kind]):
        return False
    items = schema.get("items")
    if isinstance(value, (list, tuple)) and isinstance(items, Mapping):
        return all(has_type(item, items) for item in value)
    return True


def _checked_schema(
    schema: Mapping[str, Any], acceptable: Sequence[Any], *, top: bool = True
) -> Mapping[str, Any]:
    """The schema a value's type is checked against: the answer's own type where they differ.

    Some schemas name a type their answers do not have (a "string" whose
    answer is ``true``, an array of strings holding numbers): the answer's
    type wins, in array items too. A string answer to a parameter is the
    exception: a string where the schema wants another type passes only as
    exactly an acceptable value (``_answer_type``).
    """
    given = next((a for a in acceptable if a != "" and a is not None), None)
    kind = _json_kind(given)
    declared = schema.get("type")
    if kind == "array" and declared == "array" and isinstance(schema.get("items"), Mapping):
        assert isinstance(given, list)
        items = _checked_schema(schema["items"], given, top=False)
        return {**schema, "items": items}
    if kind in (None, declared) or (top and kind == "string"):
        return schema
    if {kind, declared} == {"integer", "number"}:
        return schema
    return {"type": kind}


def _json_kind(value: Any) -> str | None:
    if value is None:
        return None
    return next(
        (
            kind
            for kind in ("boolean", "integer", "number", "string", "array", "object")
            if isinstance(value, _TYPES[kind])
            and not (isinstance(value, bool) and kind != "boolean")
        ),
        None,
    )


def _answer_type(value: Any, acceptable: Sequence[Any]) -> bool:
    # A string where another type is wanted is right when it is, exactly, one
    # of the answer's values: a variable's name (``data['sales']`` for an
    # array) or a word the schema's type does not allow ("dontcare").
    return isinstance(value, str) and value in acceptable


def value_matches(value: Any, acceptable: Sequence[Any]) -> bool:
    """Whether ``value`` is among the acceptable values (strings, lists, objects normalised)."""
    if isinstance(value, str):
        return normalise(value) in {normalise(a) for a in acceptable if isinstance(a, str)}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(item, Mapping) for item in value):
            return any(_dicts_match(value, a) for a in acceptable if isinstance(a, list))
        mine = _normalised(list(value))
        return any(mine == _normalised(a) for a in acceptable if isinstance(a, list))
    if isinstance(value, Mapping):
        return any(_dict_matches(value, a) for a in acceptable if isinstance(a, Mapping))
    return any(_same_scalar(value, a) for a in acceptable)


def normalise(text: str) -> str:
    """A string as BFCL compares it: no spaces or ``,./-_*^``, lower case, ``'`` as ``"``."""
    return _DROPPED.sub("", text).lower().replace("'", '"')


def _normalised(value: Any) -> Any:
    if isinstance(value, str):
        return normalise(value)
    if isinstance(value, (list, tuple)):
        return [_normalised(item) for item in value]
    return value


def _same_scalar(value: Any, acceptable: Any) -> bool:
    if isinstance(acceptable, (str, list, dict)):
        return False
    # ``True == 1`` in Python; a boolean matches only a boolean.
    return isinstance(value, bool) == isinstance(acceptable, bool) and value == acceptable


def _dict_matches(value: Mapping[str, Any], acceptable: Mapping[str, Any]) -> bool:
    for key, inner in value.items():
        if key not in acceptable:
            return False
        options = acceptable[key]
        if isinstance(options, str):
            # A bare string where a list of values belongs reads as the list of
            # its characters: no real value matches it, and "" (left out) does.
            if not (isinstance(inner, str) and len(normalise(inner)) <= 1):
                return False
            if normalise(inner) not in {normalise(c) for c in options}:
                return False
        elif not isinstance(options, list):
            # Deeper objects in an answer hold plain values, not lists of them.
            if _normalised(inner) != _normalised(options):
                return False
        elif not value_matches(inner, options):
            return False
    return all(
        key in value or (isinstance(options, (list, str)) and "" in options)
        for key, options in acceptable.items()
    )


def _dicts_match(value: Sequence[Mapping[str, Any]], acceptable: Sequence[Any]) -> bool:
    if len(value) != len(acceptable):
        return False
    return all(
        isinstance(want, Mapping) and _dict_matches(mine, want)
        for mine, want in zip(value, acceptable, strict=True)
    )
