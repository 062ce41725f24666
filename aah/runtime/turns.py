"""Conversations of several user turns, and tools that keep state between calls.

A session normally answers one request. A conversation of several turns
(BFCL multi-turn) has later user messages, each sent once the agent has
replied to the one before without a call; some bring tools that join from
then on (``FollowUp``). The session driver runs each turn as one run of the
graph, so a checkpoint marks every turn's end.

Some tools keep state between calls (BFCL's file system, its trading bot):
their executor is a ``StatefulExecutor``, told where each turn ends (it
answers with its state, and a benchmark's verdict on the turn, for the
log) and, when a session resumes from a checkpoint in a new process,
rebuilt by replaying the calls that ran before it (``ran_calls``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from aah.tools import EndpointSpec

# The artifact of a tool result whose call reached the executor (not one the
# checks refused); ``{RAN: arguments}`` when it ran with other arguments than
# the model's (a person edited them).
RAN = "ran"


@dataclass(frozen=True)
class FollowUp:
    """A later user turn of a conversation: what the user says, and tools that join then.

    Sent once the agent has replied to the turn before without a call;
    ``specs`` are offered from this turn on.
    """

    text: str
    specs: tuple[EndpointSpec, ...] = ()


class TurnReport(NamedTuple):
    """What a stateful executor says at a turn's end: its state, and a verdict on the turn."""

    state: dict[str, Any] | None = None
    check: dict[str, Any] | None = None


class RanCall(NamedTuple):
    """One call that reached the executor: the tool's name and the arguments it ran with."""

    name: str
    arguments: dict[str, Any]


@runtime_checkable
class StatefulExecutor(Protocol):
    """An executor whose tools keep state between calls."""

    def turn_ended(self, turn: int, messages: Sequence[AnyMessage]) -> TurnReport:
        """The agent replied to ``turn`` (0 for the first) without a call.

        ``messages`` is the whole conversation so far, the turn's calls included.
        """
        ...

    def restore(self, calls: Sequence[RanCall]) -> None:
        """Rebuild the state of a resumed session, in which ``calls`` ran in this order."""
        ...


def ran_calls(messages: Sequence[AnyMessage]) -> list[RanCall]:
    """The calls of ``messages`` that reached the executor, in the order their results came."""
    calls: dict[str, RanCall] = {}
    ran: list[RanCall] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = RanCall(call["name"], dict(call["args"]))
        elif isinstance(message, ToolMessage) and message.artifact is not None:
            proposed = calls.get(message.tool_call_id)
            if proposed is None:
                continue
            artifact = message.artifact
            if artifact == RAN:
                ran.append(proposed)
            elif isinstance(artifact, dict) and isinstance(artifact.get(RAN), dict):
                ran.append(RanCall(proposed.name, dict(artifact[RAN])))
    return ran


@dataclass(frozen=True)
class UserReply:
    """A conversation's user's next message, and what they did before sending it.

    ``calls`` are the calls the user made on their own tools (τ²'s telecom
    phone), kept with the message (``USER_CALLS``) so that a resumed
    session's executor replays them in their place.
    """

    text: str
    calls: tuple[dict[str, Any], ...] = ()


# Where a user message keeps the calls its user made (``HumanMessage.additional_kwargs``).
USER_CALLS = "aah_user_calls"


@runtime_checkable
class ConversationUser(Protocol):
    """The other side of a conversation whose next turns are not known in advance (τ²).

    Asked each time the agent replies without a call; the reply is the next
    user turn, or None when the conversation ends there.
    """

    async def reply(self, turn: int, messages: Sequence[AnyMessage]) -> UserReply | None:
        """The user's answer to the agent's last message, or None to end the conversation."""
        ...


@runtime_checkable
class ConversationExecutor(Protocol):
    """A stateful executor rebuilt from the whole conversation (the user's calls too)."""

    def restore_conversation(self, messages: Sequence[AnyMessage]) -> None:
        """Rebuild the state of a resumed session from its messages, in their order."""
        ...


@runtime_checkable
class LimitedConversation(Protocol):
    """A conversation with limits of its own, which may end it inside a turn (τ²'s).

    Asked before each of the agent's steps (at a turn's start and once a
    step's calls are answered); when it says a limit is reached the turn
    ends there, the user's ``reply`` is asked for the conversation's end (it
    answers None), and the session finishes.
    """

    async def limit_reached(self, messages: Sequence[AnyMessage]) -> str | None:
        """Which limit ``messages`` reached, in a few words; None while the conversation goes on."""
        ...
