"""Checkpoint serialization that keeps secrets out of the session database.

Checkpoints hold whole conversations: the user's request, the agent's tool
calls and their results, the person's answers, and a failed step's exception
(LangGraph keeps it in the ``writes`` table as its ``repr``, which for an
HTTP error holds the server's reply). Before anything is written, it passes
through the one scrubber of ``aah.secrets``: credential-like arguments, known
keys by value and key-like text become ``[redacted]``; the serialized bytes
are then masked once more for known keys inside objects the walk does not
open (LangGraph's ``Interrupt``, ``Send``). A session resumed from disk
therefore sees ``[redacted]`` where a secret was; the live session, in
memory, is unaffected.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from aah.secrets import Scrubber, scrub_bytes


class ScrubbingSerializer(JsonPlusSerializer):
    """LangGraph's serializer, applied to a scrubbed copy of the value."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Serialize ``obj`` with its messages, texts and exceptions scrubbed of secrets."""
        kind, data = super().dumps_typed(scrub_state(obj))
        return kind, scrub_bytes(data)


def scrub_state(value: Any, scrubber: Scrubber | None = None) -> Any:
    """``value`` with secrets cut from its messages and strings; other leaves kept.

    Only plain dicts, lists and tuples are walked (LangGraph's own objects
    such as ``Send`` or ``Interrupt`` pass unchanged), so the structure the
    checkpointer expects is kept. One ``scrubber`` serves a whole checkpoint.
    """
    if scrubber is None:
        scrubber = Scrubber()
    if isinstance(value, BaseMessage):
        return scrub_message(value, scrubber)
    if type(value) is dict:
        return {key: scrub_state(item, scrubber) for key, item in value.items()}
    if type(value) is list:
        return [scrub_state(item, scrubber) for item in value]
    if type(value) is tuple:
        return tuple(scrub_state(item, scrubber) for item in value)
    if isinstance(value, str):
        return scrubber.text(value)
    if isinstance(value, BaseException):
        # What LangGraph's serializer makes of an exception anyway: its repr.
        return scrubber.text(repr(value))
    return value


def scrub_message(message: BaseMessage, scrubber: Scrubber) -> BaseMessage:
    """The message itself if it holds no secret, else a scrubbed copy."""
    update: dict[str, Any] = {}
    if isinstance(message.content, str):
        text = scrubber.text(message.content)
        if text != message.content:
            update["content"] = text
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{**call, "args": scrubber.scrub(call["args"])} for call in message.tool_calls]
        if calls != message.tool_calls:
            update["tool_calls"] = calls
    return message.model_copy(update=update) if update else message
