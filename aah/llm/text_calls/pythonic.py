"""Calls written as Python: ``f(a=1)``, ``[f(a=1), g()]``, ``f.call(a=1)``.

Llama 3.2 and 4 write a list of calls, Gemma a call in a ``tool_code`` fence
(sometimes wrapped in ``print(default_api.f(...))``), Llama 3.1's built-in
tools ``name.call(...)``, models trained on OpenAI's prompts
``functions.f({"a": 1})``. Arguments are keyword arguments with literal
values, or one object of them; JSON's ``true``/``false``/``null`` are read
too, since models mix the two.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Collection
from typing import Any

from aah.llm.text_calls.result import NO_CALL, TextCall, TextCallParse, broken
from aah.llm.text_calls.values import Unreadable, literal

_FORM = "pythonic"
_MAX_SOURCE_CHARS = 100_000
# Wrappers that some chat templates put around the call itself.
_WRAPPERS = ("print",)
_METHOD_SUFFIXES = (".call",)
# Namespaces that chat templates put tools in: ``functions.f``, ``default_api.f``.
_NAMESPACES = ("functions", "default_api", "tools")
# A tool's name, as opposed to code's: two words or more, snake_case or camelCase.
_TOOL_LIKE = re.compile(r"[A-Za-z][a-z0-9]*(?:_+[A-Za-z0-9]+)+_?|[a-z]+(?:[A-Z][a-z0-9]*)+")
_BUILTINS = frozenset(dir(builtins))


def pythonic_calls(source: str, tool_names: Collection[str], *, tagged: bool) -> TextCallParse:
    """The calls in ``source`` when it is nothing but Python calls.

    A call counts when it names an offered tool, or when it passes keyword
    arguments only or one object of them (a call to an unknown tool, which
    the call checks answer); ``print("hi")`` or ``max(1, 2)`` is code, not a
    call. An offered tool called with positional or non-literal arguments is
    a broken attempt, and so is a name that reads as a tool's
    (``lookup_order("88231")``) called with literal values.

    Args:
        source: the text to read, stripped of any tag or fence around it.
        tool_names: the names of the offered tools.
        tagged: whether a call tag or fence marks ``source`` as calls, so
            that anything unreadable in it is a broken attempt.
    """
    text = source.strip().rstrip(";").strip()
    renamed, aliases = _identifier_names(text, tool_names)
    expression = _parse(renamed)
    if expression is None:
        return broken(_FORM, "the call is not valid Python call syntax") if tagged else NO_CALL
    nodes = _call_nodes(expression)
    if nodes is None:
        return broken(_FORM, "the text holds code, not calls") if tagged else NO_CALL
    calls: list[TextCall] = []
    for node in nodes:
        name = _call_name(node.func, tool_names, aliases)
        offered = name in tool_names
        if name is None or not (
            offered or tagged or _named_arguments(node) or tool_like_call(node, name)
        ):
            return broken(_FORM, "the text holds code, not calls") if tagged else NO_CALL
        arguments = _arguments(node)
        if arguments is None:
            return broken(
                _FORM, f"the call to {name} must use name=value arguments with literal values"
            )
        calls.append(TextCall(name, arguments))
    return TextCallParse(calls, form=_FORM)


def _identifier_names(text: str, tool_names: Collection[str]) -> tuple[str, dict[str, str]]:
    """``text`` with offered names that are not Python identifiers (``get-weather``) renamed."""
    aliases: dict[str, str] = {}
    for number, name in enumerate(sorted(tool_names, key=len, reverse=True)):
        if name.replace(".", "_").isidentifier() or f"{name}(" not in text:
            continue
        alias = f"_aah_tool_{number}"
        aliases[alias] = name
        text = text.replace(f"{name}(", f"{alias}(")
    return text, aliases


def _parse(text: str) -> ast.expr | None:
    if not text or len(text) > _MAX_SOURCE_CHARS:
        return None
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    expressions = [stmt.value for stmt in module.body if isinstance(stmt, ast.Expr)]
    if not expressions or len(expressions) != len(module.body):
        return None
    if len(expressions) == 1:
        return expressions[0]
    return ast.List(elts=expressions, ctx=ast.Load())  # one call per line


def _call_nodes(expression: ast.expr) -> list[ast.Call] | None:
    """The calls of ``f(...)``, ``[f(...), g(...)]`` or one call per line; None for other code."""
    items = expression.elts if isinstance(expression, ast.List | ast.Tuple) else [expression]
    nodes: list[ast.Call] = []
    for item in items:
        if isinstance(item, ast.List | ast.Tuple):  # one list per line
            inner = _call_nodes(item)
            if inner is None:
                return None
            nodes += inner
            continue
        if not isinstance(item, ast.Call):
            return None
        nodes.append(_unwrapped(item))
    return nodes or None


def _unwrapped(node: ast.Call) -> ast.Call:
    """The call inside ``print(f(...))``, which Gemma's templates ask for."""
    wrapper = node.func.id if isinstance(node.func, ast.Name) else None
    if (
        wrapper in _WRAPPERS
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Call)
    ):
        return node.args[0]
    return node


def _call_name(func: ast.expr, tool_names: Collection[str], aliases: dict[str, str]) -> str | None:
    """The tool a call names: ``f``, ``module.f`` when offered, else its last part."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(aliases.get(func.id, func.id))
    dotted = ".".join(reversed(parts))
    namespace, _, rest = dotted.partition(".")
    if namespace in _NAMESPACES and rest and dotted not in tool_names:
        dotted = rest
    for suffix in _METHOD_SUFFIXES:
        if dotted not in tool_names and dotted.endswith(suffix):
            dotted = dotted[: -len(suffix)]
    if dotted in tool_names or "." not in dotted:
        return dotted
    last = dotted.rsplit(".", 1)[1]
    return last if last in tool_names else dotted


def _named_arguments(node: ast.Call) -> bool:
    """Keyword arguments only, or one object of named values (``f({"a": 1})``)."""
    if not node.args:
        return bool(node.keywords)
    return len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Dict)


def tool_like_call(node: ast.Call, name: str) -> bool:
    """A call to a name that reads as a tool's, not code's, with literal values only.

    ``lookup_order("88231")`` tries a tool; ``print("hi")``, ``len(x)`` and
    ``os.path.exists(p)`` are code.
    """
    if "." in name or name in _BUILTINS or not _TOOL_LIKE.fullmatch(name):
        return False
    values = [*node.args, *(keyword.value for keyword in node.keywords)]
    return all(not isinstance(literal(value), Unreadable) for value in values)


def _arguments(node: ast.Call) -> dict[str, Any] | None:
    """The keyword arguments as values, or None for positional or non-literal ones."""
    if len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Dict):
        value = literal(node.args[0])
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            return value
        return None
    if node.args or any(keyword.arg is None for keyword in node.keywords):
        return None
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        value = literal(keyword.value)
        if isinstance(value, Unreadable):
            return None
        arguments[str(keyword.arg)] = value
    return arguments
