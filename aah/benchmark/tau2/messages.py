"""A simulation's messages as small aah values, and their conversion to τ²'s message models.

The conversation loop records what happened as :class:`Tau2AgentMessage`,
:class:`Tau2UserMessage` and :class:`Tau2ToolResult` (each call's result,
in the order τ²'s orchestrator writes them: right after the message that
made the calls). :func:`to_tau2_messages` turns them into τ²'s
``AssistantMessage``/``UserMessage``/``ToolMessage`` for its evaluator;
:func:`from_tau2_messages` reads a task's initial message history back.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aah.benchmark.tau2.loader import Tau2Code

Requestor = Literal["assistant", "user"]
# How a call went: ran (τ²'s code answered), refused (its arguments never
# reached τ²: past a bound), stopped (it ran out of time, or came after one
# that did, so the environment's state is not known).
CallOutcome = Literal["ran", "refused", "stopped"]


@dataclass(frozen=True)
class Tau2ToolCall:
    """One tool call, by the agent (``assistant``) or, in telecom, by the user."""

    name: str
    arguments: Mapping[str, Any]
    id: str = ""
    requestor: Requestor = "assistant"


@dataclass(frozen=True)
class Tau2AgentMessage:
    """What the agent said to the user, or the calls it made (or both)."""

    text: str | None = None
    calls: tuple[Tau2ToolCall, ...] = ()


@dataclass(frozen=True)
class Tau2UserMessage:
    """What the user said, or the calls they made on their phone (telecom)."""

    text: str | None = None
    calls: tuple[Tau2ToolCall, ...] = ()


@dataclass(frozen=True)
class Tau2ToolResult:
    """A call's result as τ² writes it.

    Attributes:
        call_id: The call it answers.
        content: The result text exactly as τ² made it (the evaluator's
            replay compares with it).
        requestor: Who made the call.
        error: Whether τ² marks it an error (``Error: ...``).
        outcome: Whether τ²'s code ran it (see :data:`CallOutcome`).
    """

    call_id: str
    content: str
    requestor: Requestor = "assistant"
    error: bool = False
    outcome: CallOutcome = "ran"
    text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", printable(self.content))


Tau2Message = Tau2AgentMessage | Tau2UserMessage | Tau2ToolResult


def printable(text: str) -> str:
    """``text`` with what UTF-8 cannot hold (lone surrogates) written as escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def to_tau2_messages(code: Tau2Code, messages: Iterable[Tau2Message]) -> list[Any]:
    """τ²'s message models for ``messages``, numbered by turn as τ²'s trajectory is."""
    module = code.module("tau2.data_model.message")
    converted: list[Any] = []
    for index, message in enumerate(messages):
        if isinstance(message, Tau2ToolResult):
            converted.append(
                module.ToolMessage(
                    id=message.call_id,
                    role="tool",
                    content=message.content,
                    requestor=message.requestor,
                    error=message.error,
                    turn_idx=index,
                )
            )
            continue
        is_agent = isinstance(message, Tau2AgentMessage)
        model = module.AssistantMessage if is_agent else module.UserMessage
        converted.append(
            model(
                role="assistant" if is_agent else "user",
                content=message.text,
                tool_calls=[tau2_tool_call(code, call) for call in message.calls] or None,
                turn_idx=index,
            )
        )
    return converted


def tau2_tool_call(code: Tau2Code, call: Tau2ToolCall) -> Any:
    """τ²'s ``ToolCall`` for ``call`` (arguments copied: τ²'s tools may change what they get)."""
    model = code.attribute("tau2.data_model.message", "ToolCall")
    return model(
        id=call.id,
        name=call.name,
        arguments=copy.deepcopy(dict(call.arguments)),
        requestor=call.requestor,
    )


def from_tau2_messages(messages: Sequence[Any]) -> list[Tau2Message]:
    """The aah messages of τ²'s (a task's initial history); system messages are left out."""
    converted: list[Tau2Message] = []
    for message in messages:
        role = getattr(message, "role", None)
        if role == "tool":
            converted.append(
                Tau2ToolResult(
                    call_id=message.id,
                    content=message.content or "",
                    requestor=message.requestor,
                    error=message.error,
                )
            )
        elif role in ("assistant", "user"):
            calls = tuple(
                Tau2ToolCall(
                    name=call.name,
                    arguments=copy.deepcopy(call.arguments),
                    id=call.id,
                    requestor=call.requestor,
                )
                for call in message.tool_calls or ()
            )
            kind = Tau2AgentMessage if role == "assistant" else Tau2UserMessage
            converted.append(kind(text=message.content, calls=calls))
    return converted
