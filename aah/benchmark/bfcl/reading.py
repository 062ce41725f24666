"""What one BFCL turn did, read two ways: the standard reading and the intent reading.

A session of a BFCL run holds one agent turn: its model call (the reply's
text, and the raw reply when calls were read out of it) and the tool-call
events that follow it. ``read_turn`` gathers them; then (science.md §6):

- **standard**: the turn made a call if some call parsed (a well-formed call,
  natively or recovered from text, whatever it named);
- **intent**: the turn made a call if some call parsed *or* the reply tried
  to call (a malformed call the runtime answered with feedback, or text the
  one text-call parser, ``aah.llm.parse_text_tool_calls``, reads as an
  attempt: tags, name + arguments pairs, JSON-like calls, bracket lists,
  ``func(arg=...)``; code the user asked for is not a call).

A reply that tried to call and failed is "no call" to the standard reading
and a call to the intent reading: the gap between the two.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from aah.benchmark.bfcl.checker import Call
from aah.benchmark.when2call import original_tool_name
from aah.events import Event, ModelCallEvent, ToolCallEvent
from aah.llm import parse_text_tool_calls
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


def read_turn(events: Sequence[Event]) -> Turn | None:
    """The first agent turn among a session's events (seq order); None if there is none.

    A reply cut at its length limit is no turn: the retry that followed is.
    """
    agent = [
        (index, e)
        for index, e in enumerate(events)
        if isinstance(e, ModelCallEvent) and e.purpose == "agent"
    ]
    if not agent:
        return None
    index, call = next(((i, e) for i, e in agent if not e.cut_off), agent[0])
    calls: list[Call] = []
    malformed = 0
    for later in events[index + 1 :]:
        if isinstance(later, ModelCallEvent):
            break
        if isinstance(later, ToolCallEvent) and later.tool != ASK_HUMAN:
            if later.check == "IFE":
                malformed += 1
            else:
                calls.append(Call(original_tool_name(later.tool), later.arguments))
    raw = call.raw if call.raw is not None else call.text
    return Turn(calls, malformed, raw, call.text)


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
