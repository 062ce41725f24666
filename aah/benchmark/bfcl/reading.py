"""What one BFCL turn did, read two ways: the standard reading and the intent reading.

A session of a BFCL run holds one agent turn: its model call (the reply's
text, and the raw reply when calls were read out of it) and the tool calls
that follow it, read in bulk from the store (``CallStep``). ``read_turn``
gathers them; then (science.md §6):

- **standard**: the turn made a call if some call parsed (a well-formed call,
  natively or recovered from text, whatever it named);
- **intent**: the turn made a call if some call parsed *or* the reply tried
  to call (a malformed call the runtime answered with feedback, or text the
  one text-call parser, ``aah.llm.text_calls.parse_text_tool_calls``, reads as an
  attempt: tags, name + arguments pairs, JSON-like calls, bracket lists,
  ``func(arg=...)``; code the user asked for is not a call).

A reply that tried to call and failed is "no call" to the standard reading
and a call to the intent reading: the gap between the two.

Calls read out of a reply's text (prompt mode) are read again from the raw
reply, so that a tuple the model wrote (``f(x=(1, 2))``) reaches the checker
as a tuple, as BFCL reads it: the store keeps arguments as JSON, where it is
a list.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from aah.benchmark.bfcl.checker import Call
from aah.benchmark.when2call import original_tool_name
from aah.llm.text_calls import parse_text_tool_calls
from aah.store import CallStep
from aah.tools import ASK_HUMAN


class Turn(NamedTuple):
    """One agent turn of a BFCL session.

    Attributes:
        calls: The calls that parsed, with BFCL function names (dots restored).
        malformed: Calls the runtime could not read (``IFE``): attempts.
        raw: The reply as the server sent it (calls and all).
        text: What the reply said besides its calls.
    """

    calls: list[Call]
    malformed: int
    raw: str
    text: str


def read_turn(steps: Sequence[CallStep]) -> Turn | None:
    """The first agent turn among a session's steps (seq order); None if there is none.

    Args:
        steps: The session's model and tool calls (``SessionQueries.call_steps``).

    A reply cut at its length limit is no turn: the retry that followed is.
    """
    agent = [
        (index, step)
        for index, step in enumerate(steps)
        if step.kind == "model_call" and step.purpose == "agent"
    ]
    if not agent:
        return None
    index, call = next(((i, s) for i, s in agent if not s.cut_off), agent[0])
    calls: list[Call] = []
    malformed = 0
    for later in steps[index + 1 :]:
        if later.kind == "model_call":
            break
        if later.tool is None or later.tool == ASK_HUMAN:
            continue
        if later.check == "IFE":
            malformed += 1
        else:
            calls.append(Call(original_tool_name(later.tool), later.arguments or {}))
    text = call.text or ""
    if call.raw is not None and calls:
        tools = {later.tool for later in steps[index + 1 :] if later.tool is not None}
        calls = _as_written(calls, call.raw, tools)
    return Turn(calls, malformed, call.raw if call.raw is not None else text, text)


def _as_written(calls: list[Call], raw: str, tools: Collection[str]) -> list[Call]:
    """``calls`` with their arguments as the raw text wrote them (tuples kept).

    The text is read again with the runtime's parser; its calls replace the
    stored ones only where they are the same calls (names, and arguments
    once written as JSON), else the stored calls stand.
    """
    if "(" not in raw:
        return calls  # no tuple can be written without one
    written = parse_text_tool_calls(raw, tools).calls
    if len(written) != len(calls):
        return calls
    kept = []
    for call, text_call in zip(calls, written, strict=True):
        if original_tool_name(text_call.name) != call.name or not _same_json(
            text_call.arguments, call.arguments
        ):
            return calls
        kept.append(Call(call.name, text_call.arguments))
    return kept


def _same_json(written: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    try:
        return json.dumps(written, sort_keys=True) == json.dumps(stored, sort_keys=True)
    except (TypeError, ValueError):  # a value JSON cannot hold: not what was stored
        return False


def called_standard(turn: Turn) -> bool:
    """The standard reading: some call parsed."""
    return bool(turn.calls)


def called_intent(turn: Turn, tool_names: Collection[str]) -> bool:
    """The intent reading: some call parsed, or the reply tried to call.

    Args:
        turn: The turn.
        tool_names: The valid names of the offered tools (as the model saw them).
    """
    if turn.calls or turn.malformed:
        return True
    return parse_text_tool_calls(turn.raw, tool_names).attempted
