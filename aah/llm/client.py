"""A lean async chat client for the agent's hot path.

Requests go to ``/chat/completions`` through ``ChatTransport`` (aiohttp, with
openai's retry policy and exceptions): the body is sent as built and the
reply read as JSON. Going through LangChain's ``ChatOpenAI`` and openai's
typed ``create()`` costs several times the CPU per call (perf/runtime_cpu.py),
which bounds how many sessions one process can drive.

Conversation state stays in LangChain messages (what the graph checkpoints);
this module converts them to the wire format and the reply back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from aah.llm.config import ModelConfig
from aah.llm.transport import ChatTransport

# OpenAI requires a name on every call in the history; an attempt that could
# not be read as a call has none, so it goes back under this one.
UNPARSED_CALL_NAME = "unparsed_tool_call"


class ChatClient:
    """Chat completions with native tool calling, returning LangChain messages."""

    def __init__(
        self, config: ModelConfig, *, temperature: float | None = None, seed: int | None = None
    ) -> None:
        """Talk to ``config``'s endpoint; ``temperature``/``seed`` go in every request."""
        self.config = config
        self.temperature = temperature
        self.seed = seed
        self._transport = ChatTransport(config)

    async def aclose(self) -> None:
        """Close the connections (inside the event loop that used them)."""
        await self._transport.aclose()

    async def complete(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = ()
    ) -> AIMessage:
        """The model's next message given the conversation and the offered tools.

        Raises:
            openai.OpenAIError: the endpoint failed after the client's retries.
        """
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [to_wire(message) for message in messages],
        }
        if tools:
            body["tools"] = list(tools)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        data = await self._transport.post("/chat/completions", body)
        if not data.get("choices"):
            raise self._transport.invalid_reply(
                "/chat/completions", data, "the model endpoint sent no choices"
            )
        return from_wire(data)


def to_wire(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as an OpenAI chat message."""
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.text}
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": message.text}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if isinstance(message, AIMessage):
        wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
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


def from_wire(data: dict[str, Any]) -> AIMessage:
    """The first choice of a chat completion as an ``AIMessage``.

    Calls whose arguments are not a JSON object become ``invalid_tool_calls``:
    an attempt to call, answered with feedback rather than taken as text.
    """
    choice = data["choices"][0]
    message = choice.get("message") or {}
    calls, invalid = [], []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        call_id = raw.get("id") or f"call_{uuid.uuid4().hex[:12]}"
        name, arguments = function.get("name") or "", function.get("arguments") or "{}"
        parsed = _arguments(arguments)
        if name and parsed is not None:
            calls.append({"name": name, "args": parsed, "id": call_id, "type": "tool_call"})
        else:
            invalid.append(
                {
                    "name": name or None,
                    "args": str(arguments),
                    "id": call_id,
                    "error": "arguments are not a JSON object",
                    "type": "invalid_tool_call",
                }
            )
    usage = data.get("usage") or {}
    prompt, completion = (
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )
    return AIMessage(
        content=message.get("content") or "",
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata={
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        },
        response_metadata={
            "finish_reason": choice.get("finish_reason"),
            "model_name": data.get("model"),
        },
    )


def _arguments(text: Any) -> dict[str, Any] | None:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text) if str(text).strip() else {}
    except (TypeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None
