"""Calls a server left in a reply's text, moved to where the runtime reads calls."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from langchain_core.messages import AIMessage

from aah.llm.reasoning import split_reasoning
from aah.llm.text_calls.reply import parse_text_tool_calls


def recover_text_tool_calls(message: AIMessage, tool_names: Collection[str]) -> AIMessage:
    """Move tool calls written as text into ``tool_calls``; mark broken attempts.

    A broken attempt becomes an ``invalid_tool_calls`` entry (never a final
    answer), which the runtime answers with corrective feedback. Reasoning in
    the content stays in it, so whatever reads reasoning still finds it.

    Args:
        message: the model's reply.
        tool_names: the names of the offered tools.

    Returns:
        ``message`` itself when its text calls nothing, else a copy with the
        calls (or the broken attempt) in place of the text.
    """
    if message.tool_calls or message.invalid_tool_calls or not isinstance(message.content, str):
        return message
    parsed = parse_text_tool_calls(message.content, tool_names)
    if not parsed.attempted:
        return message
    reasoning = split_reasoning(message.content).reasoning
    update: dict[str, Any] = {"content": f"<think>\n{reasoning}\n</think>" if reasoning else ""}
    if parsed.calls:
        update["tool_calls"] = [
            {
                "name": call.name,
                "args": call.arguments,
                "id": f"text_{uuid.uuid4().hex[:12]}",
                "type": "tool_call",
            }
            for call in parsed.calls
        ]
    else:
        update["invalid_tool_calls"] = [
            {
                "name": None,
                "args": message.content,
                "id": f"text_{uuid.uuid4().hex[:12]}",
                "error": parsed.invalid,
                "type": "invalid_tool_call",
            }
        ]
    return message.model_copy(update=update)
