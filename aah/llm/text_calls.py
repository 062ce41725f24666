"""Tool calls that a model wrote as text, and text that tries to call but fails.

Some servers return calls inside the message text instead of the native
``tool_calls`` field: Hermes ``<tool_call>{...}</tool_call>`` tags, a bare
``{"name": ..., "arguments": ...}`` object, or ``name(arg=value)``. These are
calls. Text that clearly tries one of these forms but does not parse is an
invalid-format call (science.md §3, intent before format): it goes back to the
model as feedback, never counts as a final answer or a refusal.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_PY_CALL = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_NAME_KEY = re.compile(r'"(?:name|function)"\s*:')
_ARG_KEYS = ("arguments", "parameters", "args")


class TextCall(NamedTuple):
    """A call recovered from text."""

    name: str
    arguments: dict[str, Any]


class TextCallParse(NamedTuple):
    """What the text holds: calls, or a failed attempt (with the reason)."""

    calls: list[TextCall]
    invalid: str | None = None

    @property
    def attempted(self) -> bool:
        """Whether the text tried to call a tool, well-formed or not."""
        return bool(self.calls) or self.invalid is not None


def parse_text_tool_calls(text: str, tool_names: Collection[str]) -> TextCallParse:
    """Find tool calls written as text in ``text``.

    Args:
        text: the assistant message content.
        tool_names: the names of the offered tools; ``name(...)`` and fenced
            JSON only count as calls when they name one of these, so code the
            user asked for is left alone.
    """
    if "<tool_call>" in text:
        return _parse_hermes(text)
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        return _parse_json_text(stripped, tool_names, fenced=False)
    for block in _FENCE.findall(text):
        parsed = _parse_json_text(block.strip(), tool_names, fenced=True)
        if parsed.attempted:
            return parsed
    return _parse_python_call(stripped, tool_names)


def _parse_hermes(text: str) -> TextCallParse:
    calls: list[TextCall] = []
    for body in _HERMES.findall(text):
        call = _call_from_json(body)
        if call is None:
            return TextCallParse(
                [], "a <tool_call> tag does not hold a JSON object with a 'name' and 'arguments'"
            )
        calls.append(call)
    if not calls:
        return TextCallParse([], "an empty <tool_call> tag")
    return TextCallParse(calls)


def _parse_json_text(text: str, tool_names: Collection[str], fenced: bool) -> TextCallParse:
    """JSON that holds calls; ``fenced`` JSON counts only when it names offered tools."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        if not fenced and _NAME_KEY.search(text):
            return TextCallParse([], "the reply looks like a JSON tool call but is not valid JSON")
        return TextCallParse([])
    items = data if isinstance(data, list) else [data]
    if not items or not all(_call_shaped(item, tool_names) for item in items):
        # A JSON answer such as {"name": "Alice", "age": 30} is data, not a call.
        return TextCallParse([])
    calls = [_call_from_obj(item) for item in items]
    found = [call for call in calls if call is not None]
    if len(found) < len(calls):
        if fenced:
            return TextCallParse([])
        return TextCallParse([], "a JSON tool call needs a 'name' and an 'arguments' object")
    if fenced and not all(c.name in tool_names for c in found):
        return TextCallParse([])
    return TextCallParse(found)


def _call_shaped(item: Any, tool_names: Collection[str]) -> bool:
    """Whether a JSON value is meant as a call: arguments given, or an offered name."""
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("function"), dict) or any(key in item for key in _ARG_KEYS):
        return "name" in item or "function" in item
    return item.get("name") in tool_names


def _call_from_json(body: str) -> TextCall | None:
    try:
        return _call_from_obj(json.loads(body))
    except json.JSONDecodeError:
        return None


def _call_from_obj(obj: Any) -> TextCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI's own shape, pasted as text
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments: Any = next((obj[key] for key in _ARG_KEYS if key in obj), {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, dict):
        return None
    return TextCall(name, arguments)


def _parse_python_call(text: str, tool_names: Collection[str]) -> TextCallParse:
    match = _PY_CALL.match(text)
    if match is None or match.group(1) not in tool_names:
        return TextCallParse([])
    name = match.group(1)
    try:
        node = ast.parse(f"f({match.group(2)})", mode="eval").body
        if not isinstance(node, ast.Call) or node.args:
            raise ValueError("positional arguments")
        arguments = {
            kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None
        }
    except (SyntaxError, ValueError):
        return TextCallParse(
            [], f"the call to {name} must use name=value arguments with literal values"
        )
    return TextCallParse([TextCall(name, arguments)])
