"""One decision for a whole reply: does its text call a tool, and with what.

The runtime (recovering calls a server left in the text) and the behaviour
classifier both ask this function, so a reply the runtime runs as a call is
a tool call to the classifier, and a reply it takes as the answer is not.

Reasoning (``<think>`` blocks) is split off first and never read as a call.
Then, in order:

1. a fence marked as calls (Gemma's ```` ```tool_code ````) holds calls;
2. a reply that is nothing but fenced code is read as if unfenced;
3. a call marker (see ``tagged``) holds calls, whatever prose is around it;
4. a reply that is nothing but JSON calls (one, a list, or several joined by
   ``;``), a ReAct ``Action:``/``Action Input:`` pair, or Python calls;
5. prose with a JSON call in it, or prose that ends with a Python call to an
   offered tool;
6. prose with a fenced JSON block that calls offered tools, or any tool when
   the prose says the reply calls ("Here is the call:") rather than showing
   a format (a Python block among prose is code the user asked for).

Text that clearly tries one of these but does not parse is an invalid call
(science.md §3, intent before format): a JSON object with a tool name and
arguments that is not valid JSON, an offered tool called with positional
arguments, or an offered tool written as a call inside a sentence. The runtime
answers it with feedback; it is never a final answer or a refusal.

JSON calls may name tools that were not offered (the call checks answer
them); Python syntax names an offered tool, or passes keyword arguments only
(``print("hi")`` is code, ``lookup(city="Oslo")`` is a call).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NamedTuple

from aah.llm.reasoning import split_reasoning
from aah.llm.text_calls.pythonic import pythonic_calls
from aah.llm.text_calls.result import NO_CALL, TextCall, TextCallParse, broken
from aah.llm.text_calls.tagged import MARKER, body_calls, tagged_calls
from aah.llm.text_calls.values import (
    Unreadable,
    call_from_object,
    call_items,
    call_shaped,
    read_values,
)

_CALL_FENCES = ("tool_code", "tool_call", "tool_calls", "function_call")
_DATA_FENCES = ("", "json", "jsonc", "json5")
_FENCE_LANGUAGE = re.compile(r"[\w+.-]*")
_MAX_LANGUAGE_LINE = 40
# Where a JSON call may start inside prose. A start that never closes costs a
# pass to the end of the reply, so only this many are tried; a value that
# closes costs only its own length.
_JSON_CALL_START = re.compile(r"(?:\[\s*)?\{\s*[\"'][\w \-]{1,40}[\"']\s*:")
_MAX_FAILED_STARTS = 8
# Offered tools written as calls in prose that are tried as the reply's last words.
_MAX_CANDIDATES = 8
_NAME_VALUE = re.compile(
    r"[\"'](?:name|function|tool|tool_?name|function_?name)[\"']\s*:\s*[\"']([^\"'\n]{1,200})[\"']",
    re.IGNORECASE,
)
_ARGUMENTS_KEY = re.compile(
    r"[\"'](?:arguments|parameters|args|input|params|tool_?input|action_?input)[\"']\s*:",
    re.IGNORECASE,
)
_PYTHON_START = re.compile(r"\[?\s*([A-Za-z_][\w.\-]*)\s*\(")
# A name written as a call: ``f(x=1)``, ``f("a")``, ``f()``.
_WRITTEN_CALL = re.compile(r"(?<![\w.\-])([A-Za-z_][\w.\-]*)\s*\(\s*(?:\w+\s*=|[\"'{\[\d]|\))")
# Prose that says the reply itself calls ("Here is the call:", "Calling the
# API now"), unlike prose that shows the user a format ("For example, send:").
_CALL_INTENT = re.compile(
    r"\bhere(?:'s| is) (?:the|my) (?:tool |function |api )?call\b|\bcalling\b|\binvoking\b|"
    r"\b(?:I(?:'ll| will|'m going to| am going to)|let me) (?:now |just |quickly )?(?:call|use|"
    r"invoke|run|query|search|look|check|fetch|find|get|pull|try)\b",
    re.IGNORECASE,
)
_EXAMPLE = re.compile(
    r"\b(?:example|format|sample|schema|template|syntax|structure|looks? like|you (?:can|could|"
    r"would|should|need to|have to)|send|paste)\b",
    re.IGNORECASE,
)
# What may come before a call on its line: nothing (a bullet, a quote mark),
# or a lead-in that ends with a colon ("Let me check: f(x=1)", "call: f(x=1)").
_LINE_LEAD = re.compile(r"(?:^|[:：])[\s>*`\-\[]*\Z", re.MULTILINE)
_MAX_LEAD_IN = 300
_MAX_CALL_LINE = 20_000
_REACT_ACTION = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(\S[^\n]*)$", re.MULTILINE | re.IGNORECASE)
_REACT_INPUT = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:", re.MULTILINE | re.IGNORECASE)
# The same step under other labels: "Using tool: f" / "Tool: f" / "Function: f",
# then "Arguments: {...}" / "Input: {...}" on a later line. These labels are
# common words, so the name must read as one and the arguments be an object.
_LABELLED_TOOL = re.compile(
    r"^[ \t*_]*(?:using[ \t]+(?:the[ \t]+)?tool|calling[ \t]+(?:tool|function)|tool(?:[ \t]+name)?|"
    r"function(?:[ \t]+name)?|tool[ \t]+call)[ \t*_]*:[ \t*_`]*([A-Za-z_][\w.\-]*)[`*_ \t]*$",
    re.MULTILINE | re.IGNORECASE,
)
_LABELLED_ARGUMENTS = re.compile(
    r"^[ \t*_]*(?:arguments|args|parameters|params|input|tool[ \t]+input)[ \t*_]*:[ \t*_]*"
    r"(?=[{\[`])",
    re.MULTILINE | re.IGNORECASE,
)


class Fence(NamedTuple):
    """A fenced code block: its language tag (lower case) and its text."""

    language: str
    body: str


def parse_text_tool_calls(text: str, tool_names: Collection[str]) -> TextCallParse:
    """Find tool calls written as text in a whole reply.

    Args:
        text: the assistant message content, reasoning blocks included.
        tool_names: the names of the offered tools.

    Returns:
        The calls, or the reason a call attempt could not be read, or neither.
    """
    answer = split_reasoning(text).answer
    prose, fences = split_fences(answer)
    for fence in fences:
        if fence.language in _CALL_FENCES:
            return body_calls(fence.body, "tool_code", f"```{fence.language} block", tool_names)
    if fences and not prose.strip():
        return _unfenced("\n".join(fence.body for fence in fences), tool_names)
    parsed = _unfenced(prose, tool_names)
    if parsed.attempted:
        return parsed
    announced = _CALL_INTENT.search(prose) is not None and _EXAMPLE.search(prose) is None
    for fence in fences:
        if fence.language in _DATA_FENCES:
            found = _whole_json(fence.body.strip(), tool_names)
            if found.calls and (announced or all(call.name in tool_names for call in found.calls)):
                return found._replace(form="fenced_json")
    return NO_CALL


def split_fences(text: str) -> tuple[str, list[Fence]]:
    """The text outside fenced code blocks (each block becomes a line break), and the blocks."""
    prose: list[str] = []
    fences: list[Fence] = []
    position = 0
    while (start := text.find("```", position)) != -1:
        prose.append(text[position:start])
        # A language tag is short: looking further for the line's end would
        # make a line of many fences quadratic.
        line_end = text.find("\n", start, start + _MAX_LANGUAGE_LINE)
        language = text[start + 3 : line_end].strip() if line_end != -1 else ""
        body_start = line_end + 1
        if line_end == -1 or not _FENCE_LANGUAGE.fullmatch(language):  # ```{"a": 1}```
            language, body_start = "", start + 3
        close = text.find("```", body_start)
        body_end = len(text) if close == -1 else close
        fences.append(Fence(language.lower(), text[body_start:body_end]))
        prose.append("\n")
        position = len(text) if close == -1 else close + 3
    prose.append(text[position:])
    return "".join(prose), fences


def _unfenced(text: str, tool_names: Collection[str]) -> TextCallParse:
    stripped = text.strip()
    if not stripped:
        return NO_CALL
    marker = MARKER.search(stripped)
    if marker is not None:
        return tagged_calls(stripped, marker, tool_names)
    if stripped[0] in "[{":
        whole = _whole_json(stripped, tool_names)
        if whole.attempted:
            return whole
    react = _react(stripped)
    if react.attempted:
        return react
    python = _PYTHON_START.match(stripped)
    if python is not None:
        whole = pythonic_calls(stripped, tool_names, tagged=False)
        if whole.attempted:
            return whole
        if python.group(1) in tool_names:
            return broken("pythonic", f"the call to {python.group(1)} is not valid Python syntax")
    in_prose = _json_calls_in_prose(stripped, tool_names)
    if in_prose.attempted:
        return in_prose
    return _python_calls_in_prose(stripped, tool_names)


def _whole_json(text: str, tool_names: Collection[str]) -> TextCallParse:
    """Calls when ``text`` is nothing but JSON (or Python literal) call objects."""
    values = read_values(text, 0) if text[:1] in ("[", "{") else None
    if (
        values is None
        or not values.values
        or values.unclosed
        or any(isinstance(value, Unreadable) for value in values.values)
    ):
        if values is not None and _looks_like_json_call(text, tool_names):
            return broken("json", "the reply looks like a JSON tool call but is not valid JSON")
        return NO_CALL
    if values.end < len(text):
        return NO_CALL  # prose follows: the prose reader decides
    return _json_calls(call_items(values.values), tool_names, "json")


def _json_calls(items: list[object], tool_names: Collection[str], form: str) -> TextCallParse:
    if not items or not all(call_shaped(item, tool_names) for item in items):
        return NO_CALL
    calls = [call_from_object(item) for item in items]
    found = [call for call in calls if call is not None]
    if len(found) < len(calls):
        return broken(form, "a JSON tool call needs a 'name' and an 'arguments' object")
    return TextCallParse(found, form=form)


def _looks_like_json_call(text: str, tool_names: Collection[str]) -> bool:
    """A tool name key with arguments (or naming an offered tool): meant as a call."""
    named = _NAME_VALUE.search(text)
    if named is None:
        return False
    return named.group(1) in tool_names or _ARGUMENTS_KEY.search(text) is not None


def _json_calls_in_prose(text: str, tool_names: Collection[str]) -> TextCallParse:
    """JSON calls inside prose ("Sure, let me check. {"name": ...}")."""
    calls: list[TextCall] = []
    broken_call = False
    after = 0
    failures = 0
    for start in _JSON_CALL_START.finditer(text):
        if start.start() < after:
            continue  # inside a value already read
        values = read_values(text, start.start())
        readable = [value for value in values.values if not isinstance(value, Unreadable)]
        if values.unclosed or len(readable) < len(values.values) or not readable:
            window = text[start.start() : start.start() + 4000]
            broken_call = broken_call or _looks_like_json_call(window, tool_names)
            failures += 1
            if failures >= _MAX_FAILED_STARTS:
                break
            continue
        after = values.end
        parsed = _json_calls(call_items(readable), tool_names, "prose_json")
        if parsed.invalid is not None:
            return parsed
        calls += parsed.calls
    if calls:
        return TextCallParse(calls, form="prose_json")
    if broken_call:
        return broken("json", "the reply holds a JSON tool call that is not valid JSON")
    return NO_CALL


def _react(text: str) -> TextCallParse:
    """A ReAct step: ``Action: tool`` then ``Action Input: {...}``, or the same with other labels.

    "Using tool: f" then "Arguments: {...}" is the same step.
    """
    action = _REACT_ACTION.search(text)
    given = _REACT_INPUT.search(text, action.end()) if action is not None else None
    if action is None or given is None:
        action = _LABELLED_TOOL.search(text)
        given = _LABELLED_ARGUMENTS.search(text, action.end()) if action is not None else None
    if action is None or given is None:
        return NO_CALL
    name = action.group(1).strip().strip("`'\"")
    body = text[given.end() :].strip().strip("*_").strip()
    if body.startswith("`"):
        body = body.strip("`").removeprefix("json").strip()
    if not body:
        return TextCallParse([TextCall(name, {})], form="react")
    values = read_values(body, 0)
    if len(values.values) == 1 and isinstance(values.values[0], dict):
        return TextCallParse([TextCall(name, values.values[0])], form="react")
    return broken("react", f"the Action Input of {name} must be a JSON object of arguments")


def _python_calls_in_prose(text: str, tool_names: Collection[str]) -> TextCallParse:
    """Python calls to offered tools that end the reply or their line; others mid-sentence.

    "Let me check: get_weather(city="Paris")" is a call; "I will call
    get_weather(city="Paris") to see" tries one in a form the runtime cannot
    run, so it is a broken attempt. A tool the reply names without it being
    offered is called the same way when the call fills the rest of its line
    from the line's start or after a colon ("Sure, one moment." then a line
    ``lookup(id=3)``,
    "Let me check: lookup_order(order_id=88231)"); inside a sentence it is
    prose ("Use `os.path.exists(path)`").
    """
    written: list[re.Match[str]] = []
    for match in _WRITTEN_CALL.finditer(text):
        name = match.group(1)
        if name in tool_names or name.rsplit(".", 1)[-1] in tool_names:
            written.append(match)
        elif _LINE_LEAD.search(text, _line_start(text, match.start()), match.start()):
            found = _call_line(text, match, tool_names)
            if found.attempted:
                return found
        if len(written) >= _MAX_CANDIDATES:
            break
    for match in written:
        start = _list_start(text, match.start())
        line_end = text.find("\n", start)
        ends = (len(text), line_end) if line_end != -1 else (len(text),)
        for end in ends:
            source = text[start:end].rstrip().rstrip(".")
            parsed = pythonic_calls(source, tool_names, tagged=False)
            if parsed.calls and all(call.name in tool_names for call in parsed.calls):
                return parsed._replace(form="prose_pythonic")
            if parsed.invalid is not None:
                return parsed
    if written:
        name = written[0].group(1)
        return broken(
            "prose_pythonic",
            f"the reply writes a call to {name} inside a sentence; to call it, reply with "
            "the call alone",
        )
    return NO_CALL


def _line_start(text: str, position: int) -> int:
    """Where the line holding ``position`` starts, looking back no further than a lead-in."""
    floor = max(0, position - _MAX_LEAD_IN)
    return text.rfind("\n", floor, position) + 1 or floor


def _call_line(text: str, match: re.Match[str], tool_names: Collection[str]) -> TextCallParse:
    """The call that fills the rest of ``match``'s line, if it reads as a tool's call."""
    start = _list_start(text, match.start())
    line_end = text.find("\n", start)
    source = text[start : len(text) if line_end == -1 else line_end].rstrip().rstrip(".;")
    if len(source) > _MAX_CALL_LINE:
        return NO_CALL
    parsed = pythonic_calls(source, tool_names, tagged=False)
    if any("." in call.name for call in parsed.calls):
        return NO_CALL  # ``df.head(n=3)``: a method, code rather than a tool
    return parsed._replace(form="prose_pythonic") if parsed.attempted else parsed


def _list_start(text: str, start: int) -> int:
    """Where a call starts, taking in the ``[`` of a pythonic list just before it."""
    before = start
    while before > 0 and text[before - 1] in " \t":
        before -= 1
    return before - 1 if before > 0 and text[before - 1] == "[" else start
