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
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

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
    return Turn(calls, malformed, call.raw if call.raw is not None else text, text)


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
