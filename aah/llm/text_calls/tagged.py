"""Calls behind a marker that only a call uses: tags and special tokens.

- Hermes, Qwen2.5: ``<tool_call>{"name": .., "arguments": ..}</tool_call>``
- Qwen3-Coder: ``<tool_call><function=f><parameter=p>value</parameter></function></tool_call>``
- Llama 3.1: ``<|python_tag|>{"name": .., "parameters": ..}`` (several joined by
  ``;``), ``<|python_tag|>tool.call(q="..")``, ``<function=f>{..}</function>``
- Mistral: ``[TOOL_CALLS][{..}]``; v11 and later ``[TOOL_CALLS]f[ARGS]{..}``
- Granite: ``<|tool_call|>[{..}]``; Phi-4-mini: ``functools[{..}]``
- LFM2: ``<|tool_call_start|>[f(a=1)]<|tool_call_end|>``
- FunctionGemma: ``<start_function_call>call:f{a:<escape>x<escape>}<end_function_call>``
- tag pairs: ``<tool>f</tool><args>{..}</args>``

A marker says the model meant to call, so whatever follows it that cannot be
read is a broken attempt, never an answer.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from aah.llm.text_calls.pythonic import pythonic_calls
from aah.llm.text_calls.result import TextCall, TextCallParse, broken
from aah.llm.text_calls.values import (
    Unreadable,
    Values,
    call_from_object,
    call_items,
    decode,
    read_values,
    span_end,
)

# The earliest marker decides the format. Only literal alternatives: the
# search stays linear on long replies.
MARKER = re.compile(
    r"<tool_call>|<\|tool_call\|>|<\|python_tag\|>|\[TOOL_CALLS\]|\bfunctools\[|<function=|"
    r"<tool_calls>|<function_calls?>|<functioncall>|<tool_use>|<invoke\b|<\|plugin\|>|"
    r"<\|tool_calls?_(?:start|begin)\|>|<start_function_call>|<tool>|<tool_name>",
    re.IGNORECASE,
)
_END_TOKENS = (
    "<|eom_id|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "</s>",
    "<|im_end|>",
    "<|tool_call_end|>",
    "<|tool_calls_end|>",
    "<end_function_call>",
)
_SPACE = re.compile(r"\s*")
_TOOL_NAME = re.compile(r"[A-Za-z_][\w.\-:/]*")
_FORMS = {
    "<tool_call>": "hermes",
    "<|tool_call|>": "granite",
    "<|python_tag|>": "python_tag",
    "[tool_calls]": "mistral",
    "functools[": "functools",
    "<function=": "function_tag",
    "<|tool_call_start|>": "lfm2",
    "<|tool_calls_start|>": "lfm2",
    "<|tool_call_begin|>": "lfm2",
    "<|tool_calls_begin|>": "lfm2",
    "<start_function_call>": "function_gemma",
    "<tool>": "tool_tag",
    "<tool_name>": "tool_tag",
}
# FunctionGemma's call: ``call:name{key:<escape>text<escape>,n:3}``.
_GEMMA_CALL = re.compile(r"\s*call\s*:\s*([A-Za-z_][\w.\-]*)\s*(?=\{)")
_PLACEHOLDER = "\ue000"  # a private-use character: no model writes it
_GEMMA_STRING = re.compile(r"<escape>(.*?)<escape>", re.DOTALL)
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-]*)\s*:")
# ``<tool>name</tool>`` (or ``<tool_name>``) then its arguments in the next tag.
_TAG_NAME = re.compile(r"<(tool|tool_name)>\s*([^<>]{0,200}?)\s*</\1>", re.IGNORECASE)
_TAG_ARGUMENTS = re.compile(
    r"\s*<(args|arguments|parameters|params|input|tool_input)>(.*?)(?:</\1>|\Z)",
    re.IGNORECASE | re.DOTALL,
)


def tagged_calls(text: str, marker: re.Match[str], tool_names: Collection[str]) -> TextCallParse:
    """The calls behind ``marker``, the earliest call marker in ``text``."""
    tag = marker.group()
    form = _FORMS.get(tag.lower(), "call_tag")
    rest = _until_end_token(text[marker.end() :])
    if form == "hermes":
        return _hermes(text[marker.start() :], tool_names)
    if form == "function_tag":
        return _function_tags(text[marker.start() :], form, tool_names)
    if form == "functools":
        return body_calls("[" + rest, form, tag, tool_names)
    if form == "function_gemma":
        return _function_gemma(rest)
    if form == "tool_tag":
        return _tool_tag(text[marker.start() :], tool_names)
    if form == "mistral" and rest.strip() and rest.strip()[0] not in "[{":
        return _mistral_named(rest, tool_names)
    if form == "call_tag" and (not rest.strip() or rest.strip()[0] not in "[{"):
        return broken(form, f"the {tag} tag does not hold a JSON tool call")
    return body_calls(rest, form, tag, tool_names)


def body_calls(body: str, form: str, where: str, tool_names: Collection[str]) -> TextCallParse:
    """The calls in text that a marker says holds calls: JSON, Qwen3-Coder XML or Python."""
    text = body.strip()
    if not text:
        return broken(form, f"an empty {where}")
    if text.startswith("<function="):
        return _function_tags(text, form, tool_names)
    if text[0] in "[{":
        values = read_values(text, 0)
        if (
            not values.values
            or values.unclosed
            or any(isinstance(value, Unreadable) for value in values.values)
        ):
            if text[0] == "[":
                pythonic = pythonic_calls(text, tool_names, tagged=False)
                if pythonic.calls:
                    return pythonic._replace(form=form)
            return broken(form, f"the {where} does not hold valid JSON")
        return _objects_as_calls(call_items(values.values), form, where)
    parsed = pythonic_calls(text, tool_names, tagged=True)
    return parsed._replace(form=form)


def _objects_as_calls(items: list[Any], form: str, where: str) -> TextCallParse:
    calls = [call_from_object(item) for item in items]
    found = [call for call in calls if call is not None]
    if not found or len(found) < len(calls):
        return broken(
            form, f"the {where} does not hold a JSON object with a 'name' and 'arguments'"
        )
    return TextCallParse(found, form=form)


def _hermes(text: str, tool_names: Collection[str]) -> TextCallParse:
    """Every ``<tool_call>`` body, each up to its closing tag, the next tag or the end."""
    calls: list[TextCall] = []
    opening, closing = "<tool_call>", "</tool_call>"
    lowered = text.lower()
    position = lowered.find(opening)
    while position != -1:
        start = position + len(opening)
        ends = [i for i in (lowered.find(closing, start), lowered.find(opening, start)) if i != -1]
        end = min(ends) if ends else len(text)
        parsed = body_calls(text[start:end], "hermes", "<tool_call> tag", tool_names)
        if not parsed.calls:
            return parsed
        calls += parsed.calls
        position = lowered.find(opening, end)
    form = "qwen3_coder" if "<function=" in text else "hermes"
    return TextCallParse(calls, form=form)


def _function_tags(text: str, form: str, tool_names: Collection[str]) -> TextCallParse:
    """``<function=f>`` blocks: Qwen3-Coder ``<parameter=p>`` pairs or a JSON object (Llama 3.1)."""
    calls: list[TextCall] = []
    opening = "<function="
    position = text.find(opening)
    while position != -1:
        close_name = text.find(">", position)
        name = text[position + len(opening) : close_name].strip() if close_name != -1 else ""
        if not _TOOL_NAME.fullmatch(name):
            return broken(form, "a <function=...> tag must name the tool: <function=name>")
        ends = [
            i
            for i in (text.find("</function>", close_name), text.find(opening, close_name))
            if i != -1
        ]
        end = min(ends) if ends else len(text)
        arguments = _function_arguments(text[close_name + 1 : end].strip())
        if arguments is None:
            return broken(
                form,
                f"the arguments of <function={name}> must be <parameter=name>value</parameter> "
                "pairs or one JSON object",
            )
        calls.append(TextCall(name, arguments))
        position = text.find(opening, end)
    return TextCallParse(calls, form="qwen3_coder" if "<parameter=" in text else form)


def _function_arguments(inner: str) -> dict[str, Any] | None:
    if not inner:
        return {}
    if inner.startswith("<parameter="):
        return _xml_parameters(inner)
    if inner.startswith("{"):
        values = read_values(inner, 0)
        if len(values.values) == 1 and isinstance(values.values[0], dict):
            return values.values[0]
    return None


def _xml_parameters(inner: str) -> dict[str, Any] | None:
    """``<parameter=p>value</parameter>`` pairs; a missing closing tag ends at the next pair."""
    arguments: dict[str, Any] = {}
    opening, closing = "<parameter=", "</parameter>"
    position = inner.find(opening)
    while position != -1:
        close_name = inner.find(">", position)
        if close_name == -1:
            return None
        key = inner[position + len(opening) : close_name].strip()
        ends = [
            i for i in (inner.find(closing, close_name), inner.find(opening, close_name)) if i != -1
        ]
        end = min(ends) if ends else len(inner)
        if not key:
            return None
        arguments[key] = _xml_value(inner[close_name + 1 : end])
        position = inner.find(opening, end)
    return arguments


def _xml_value(raw: str) -> Any:
    """A parameter's value: JSON objects and arrays are read, everything else stays text.

    Qwen3-Coder writes numbers and strings alike; without the schema a text
    "42" stays a string, and the call checks coerce it to the declared type.
    """
    value = raw.strip("\n")
    stripped = value.strip()
    if stripped[:1] in ("{", "[") and span_end(stripped, 0) == len(stripped):
        decoded = decode(stripped)
        if isinstance(decoded, dict | list):
            return decoded
    return value


def _mistral_named(rest: str, tool_names: Collection[str]) -> TextCallParse:
    """Mistral v11 calls: ``f[ARGS]{..}``, each after its own ``[TOOL_CALLS]`` or run together."""
    form, marker, args_tag = "mistral", "[TOOL_CALLS]", "[ARGS]"
    calls: list[TextCall] = []
    position = 0
    while True:
        position = _skip_space(rest, position)
        while rest.startswith(marker, position):
            position = _skip_space(rest, position + len(marker))
        args_at = rest.find(args_tag, position)
        if args_at == -1:
            if calls:
                return TextCallParse(calls, form=form)
            return broken(form, "[TOOL_CALLS] must be followed by name[ARGS]{...} or a JSON list")
        name = rest[position:args_at].split("[CALL_ID]", 1)[0].strip()
        if not _TOOL_NAME.fullmatch(name):
            return broken(form, "[TOOL_CALLS] must be followed by name[ARGS]{...}")
        start = _skip_space(rest, args_at + len(args_tag))
        end = span_end(rest, start) if rest[start : start + 1] == "{" else None
        arguments = decode(rest[start:end]) if end is not None else None
        if not isinstance(arguments, dict):
            return broken(form, f"the arguments of {name} after [ARGS] must be one JSON object")
        calls.append(TextCall(name, arguments))
        position = end or len(rest)
        if rest.find(args_tag, position) == -1:
            return TextCallParse(calls, form=form)


def _function_gemma(rest: str) -> TextCallParse:
    """FunctionGemma's ``call:name{key:<escape>text<escape>}``: bare keys, escaped strings."""
    form = "function_gemma"
    call = _GEMMA_CALL.match(rest)
    if call is None:
        return broken(form, "<start_function_call> must be followed by call:name{arguments}")
    name = call.group(1)
    start = call.end()
    strings: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        strings.append(match.group(1))
        return f'"{_PLACEHOLDER}{len(strings) - 1}"'

    body = _GEMMA_STRING.sub(placeholder, rest[start:])
    end = span_end(body, 0)
    decoded = decode(_BARE_KEY.sub(r'\1"\2":', body[:end])) if end is not None else None
    if not isinstance(decoded, dict):
        return broken(form, f"the arguments of {name} must be {{key:<escape>value<escape>}}")
    return TextCallParse([TextCall(name, _unescaped(decoded, strings))], form=form)


def _unescaped(value: Any, strings: list[str]) -> Any:
    """``value`` with the placeholders of escaped strings put back."""
    if isinstance(value, dict):
        return {key: _unescaped(item, strings) for key, item in value.items()}
    if isinstance(value, list):
        return [_unescaped(item, strings) for item in value]
    if isinstance(value, str) and value.startswith(_PLACEHOLDER) and value[1:].isdigit():
        return strings[int(value[1:])]
    return value


def _tool_tag(text: str, tool_names: Collection[str]) -> TextCallParse:
    """``<tool>name</tool>`` then ``<args>{..}</args>``; or a ``<tool>`` tag holding a call."""
    form = "tool_tag"
    named = _TAG_NAME.match(text)
    if named is None or not _TOOL_NAME.fullmatch(named.group(2)):
        inner = re.sub(r"</tool(?:_name)?>.*", "", text[text.find(">") + 1 :], flags=re.S)
        return body_calls(inner, form, "<tool> tag", tool_names)
    given = _TAG_ARGUMENTS.match(text, named.end())
    if given is None:
        return TextCallParse([TextCall(named.group(2), {})], form=form)
    body = given.group(2).strip()
    values = read_values(body, 0) if body else Values([{}], 0)
    if len(values.values) == 1 and isinstance(values.values[0], dict):
        return TextCallParse([TextCall(named.group(2), values.values[0])], form=form)
    return broken(form, f"the <{given.group(1)}> of {named.group(2)} must hold one JSON object")


def _skip_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def _until_end_token(text: str) -> str:
    for token in _END_TOKENS:
        cut = text.find(token)
        if cut != -1:
            text = text[:cut]
    return text
