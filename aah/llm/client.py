"""The one client for OpenAI-compatible chat servers, serving every role.

``complete`` gives the agent its next ``AIMessage`` (tool calls included);
``reply_texts`` gives plain text replies, ``n`` at a time, for the simulated
human, the grader's votes and the behaviour judge. Both send
``/chat/completions`` requests through ``ChatTransport`` (aiohttp: going
through LangChain's ``ChatOpenAI`` or openai's typed ``create()`` costs
several times the CPU per call, perf/runtime_cpu.py) and read every reply
through one validation (``aah.llm.reply``), so a malformed reply is a
``ModelReplyError`` here and nowhere a surprise further on.

One client serves a whole run of one role: its connections are reused, and
closed in the event loop that opened them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage

from aah.llm.config import ModelConfig
from aah.llm.reasoning import Reasoned
from aah.llm.reply import read_completion
from aah.llm.transport import ChatTransport
from aah.llm.wire import choice_text, from_wire, to_wire, usage_counts

CHAT_PATH = "/chat/completions"


class TextReplies(NamedTuple):
    """The text choices of one request, each split from its reasoning, and the tokens used."""

    choices: list[Reasoned]
    prompt_tokens: int
    completion_tokens: int

    @property
    def texts(self) -> list[str]:
        """The answers alone, reasoning removed."""
        return [choice.answer for choice in self.choices]


class ChatClient:
    """Chat completions for one role's model, returning LangChain messages or texts."""

    def __init__(
        self, config: ModelConfig, *, temperature: float | None = None, seed: int | None = None
    ) -> None:
        """Talk to ``config``'s server; ``temperature``/``seed`` go in every request."""
        self.config = config
        self.temperature = temperature
        self.seed = seed
        self._transport = ChatTransport(config)
        self._where = self._transport.where

    @property
    def requests_in_flight(self) -> int:
        """Requests of this client sent and not answered yet."""
        return self._transport.in_flight

    async def aclose(self) -> None:
        """Close the connections (inside the event loop that used them)."""
        await self._transport.aclose()

    async def complete(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int | None = None,
    ) -> AIMessage:
        """The model's next message given the conversation and the offered tools.

        Reasoning the model sent is split off the content into
        ``additional_kwargs["reasoning"]``.

        Args:
            messages: The conversation so far.
            tools: OpenAI tool definitions; ``tool_choice`` is ``auto`` with them.
            max_tokens: The reply limit; default the role's.

        Raises:
            ModelError: the server failed after the client's retries, or
                its reply is not a chat completion aah can read.
        """
        body = self._body(messages, max_tokens)
        if tools:
            body["tools"] = list(tools)
            # Some chat templates (llama.cpp's chatml-function-calling) show
            # the tools to the model only when tool_choice is set.
            body["tool_choice"] = "auto"
        raw = await self._transport.post(CHAT_PATH, body)
        completion, data = read_completion(raw, self._where)
        return from_wire(completion, data)

    async def reply_texts(
        self,
        messages: Sequence[BaseMessage],
        *,
        n: int = 1,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> TextReplies:
        """``n`` text replies to ``messages`` in one request (servers may send fewer).

        Args:
            messages: The conversation so far.
            n: Choices asked for; sent only when above 1.
            temperature: Overrides the client's temperature for this request.
            max_tokens: The reply limit; default the role's.

        Raises:
            ModelError: the server failed after the client's retries, or
                its reply is not a chat completion aah can read.
        """
        body = self._body(messages, max_tokens)
        if n > 1:
            body["n"] = n
        if temperature is not None:
            body["temperature"] = temperature
        raw = await self._transport.post(CHAT_PATH, body)
        completion, data = read_completion(raw, self._where)
        # A server may send more choices than asked for; the extra ones
        # would count as votes or replies no one asked for.
        choices = [
            choice_text(choice.message, raw_choice)
            for choice, raw_choice in zip(completion.choices, data["choices"], strict=True)
        ][:n]
        prompt, completion_tokens = usage_counts(completion)
        return TextReplies(choices, prompt, completion_tokens)

    def _body(self, messages: Sequence[BaseMessage], max_tokens: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [to_wire(message) for message in messages],
            "max_tokens": max_tokens or self.config.reply_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        return body
