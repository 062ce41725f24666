"""LangChain messages to OpenAI chat messages, and validated replies back.

Conversation state stays in LangChain messages (what the graph checkpoints);
requests carry OpenAI's wire format. Requests are written so that every
server takes them: an assistant message's content is never null (llama.cpp's
server and OpenAI itself refuse null content without tool calls).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from aah.llm.reasoning import Reasoned, message_reasoning, split_reasoning
from aah.llm.reply import Completion, WireFunction, WireMessage
from aah.storable import storable

# OpenAI requires a name on every call in the history; an attempt that could
# not be read as a call has none, so it goes back under this one.
UNPARSED_CALL_NAME = "unparsed_tool_call"


def to_wire(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as an OpenAI chat message."""
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.text}
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": message.text}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if isinstance(message, AIMessage):
        wire: dict[str, Any] = {"role": "assistant", "content": message.text or ""}
        calls = [
            _wire_call(call["id"] or "", call["name"], json.dumps(call["args"]))
            for call in message.tool_calls
        ] + [
            _wire_call(bad["id"] or "", bad["name"] or UNPARSED_CALL_NAME, bad["args"] or "")
            for bad in message.invalid_tool_calls
        ]
        if calls:
            wire["tool_calls"] = calls
        return wire
    raise TypeError(f"cannot send a {type(message).__name__} to a chat model")


def _wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def from_wire(completion: Completion, data: dict[str, Any]) -> AIMessage:
    """The first choice of a validated completion as an ``AIMessage``.

    Calls whose arguments are not a JSON object become ``invalid_tool_calls``:
    an attempt to call, answered with feedback rather than taken as text. The
    reasoning a reasoning model sent (a separate field or think blocks in the
    content) is split off the content into ``additional_kwargs["reasoning"]``.
    """
    choice = completion.choices[0]
    message = choice.message
    calls, invalid = [], []
    functions = [(raw.id, raw.function) for raw in message.tool_calls or []]
    if not functions and message.function_call is not None:
        functions = [(None, message.function_call)]
    for call_id, function in functions:
        call_id = call_id or f"call_{uuid.uuid4().hex[:12]}"
        parsed = _arguments(function.arguments)
        if function.name and parsed is not None:
            calls.append(
                {"name": function.name, "args": parsed, "id": call_id, "type": "tool_call"}
            )
        else:
            invalid.append(
                {
                    "name": function.name or None,
                    "args": _arguments_text(function),
                    "id": call_id,
                    "error": "arguments are not a JSON object",
                    "type": "invalid_tool_call",
                }
            )
    answer, reasoning = choice_text(message, data["choices"][0])
    prompt, completion_tokens = usage_counts(completion)
    return AIMessage(
        content=answer,
        tool_calls=calls,
        invalid_tool_calls=invalid,
        additional_kwargs={"reasoning": reasoning} if reasoning else {},
        usage_metadata={
            "input_tokens": prompt,
            "output_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
        response_metadata={"finish_reason": choice.finish_reason, "model_name": completion.model},
    )


def choice_text(message: WireMessage, raw_choice: dict[str, Any]) -> Reasoned:
    """A choice's answer text and reasoning, split apart."""
    raw_message = raw_choice["message"]
    content = message.content or ""
    reasoning = message_reasoning(raw_message)
    if reasoning is None and "<" not in content:
        return Reasoned(content, "")  # the common case, without the regex scan
    return split_reasoning(content, reasoning)


def usage_counts(completion: Completion) -> tuple[int, int]:
    """Prompt and completion tokens, 0 where the server reports none."""
    usage = completion.usage
    if usage is None:
        return 0, 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)


def _arguments(value: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if value is None or not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return None
    # Arguments are JSON inside a JSON string: their own escapes may name
    # half a character, which the reply decoder could not see.
    return storable(parsed) if isinstance(parsed, dict) else None


def _arguments_text(function: WireFunction) -> str:
    value = function.arguments
    return json.dumps(value) if isinstance(value, dict) else value or ""
