"""The awareness question, asked once before acting (science.md §1).

A separate model call that sees the request and the offered tools described
in text (no ``tools`` parameter, no conversation). The reply must start with
Yes, IDK or No; an unparseable reply is asked again a bounded number of times,
then recorded as ``none``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from aah.events import AwarenessAnswer, AwarenessMode, AwarenessQuestion, excerpt
from aah.llm import ChatClient, parse_awareness_reply
from aah.runtime.prompts import load_prompt
from aah.tools import EndpointSpec
from aah.tools.calls import describe_parameters

# Which questions each benchmark setting asks (science.md §1).
SETTING_AWARENESS: dict[str, AwarenessMode] = {
    "perfect": "both",
    "underspecified": "info",
    "replaceable": "tool",
    "nonreplaceable": "tool",
    "notools": "none",
}
_MODE_QUESTIONS: dict[AwarenessMode, tuple[AwarenessQuestion, ...]] = {
    "info": ("information",),
    "tool": ("tool",),
    "both": ("tool", "information"),
    "none": (),
}
DEFAULT_RETRIES = 2
# A re-ask quotes only the start of the unreadable reply: a rambling one sent
# back whole can overflow a small server's context.
RETRY_QUOTE_CHARS = 400


class AwarenessResult(NamedTuple):
    """One question's outcome, with the raw reply and the effort it took."""

    question: AwarenessQuestion
    answer: AwarenessAnswer
    reason: str
    raw: str
    attempts: int
    latency_ms: float
    prompt_tokens: int
    completion_tokens: int
    reasoning: str | None = None


def awareness_questions(mode: AwarenessMode) -> tuple[AwarenessQuestion, ...]:
    """The questions asked in ``mode``, in order."""
    return _MODE_QUESTIONS[mode]


def parse_awareness(text: str, reasoning: str | None = None) -> tuple[AwarenessAnswer, str] | None:
    """``(answer, reason)`` when the reply begins with Yes, IDK or No, else None.

    The reply is read by the one reply grammar (``aah.llm.parse_awareness_reply``):
    reasoning, markdown, list markers, quotes and a leading label such as
    ``Answer:`` are peeled first; an echoed ``Yes/IDK/No`` is no answer, and
    neither is one that names two options.

    Args:
        text: The reply's content.
        reasoning: Its separate reasoning field, if the server sent one.
    """
    return parse_awareness_reply(text, reasoning)


def describe_tools(specs: Sequence[EndpointSpec], ask_human: bool, discover: bool = False) -> str:
    """The offered tools as text: name, what it does, its arguments."""
    lines = [
        f"- {s.qualified_name}: {s.description.strip() or 'no description'} "
        f"Arguments: {describe_parameters(s.parameters)}."
        for s in specs
    ]
    if discover:
        lines.append(
            "- find_tools: search a registry of hundreds of web APIs for endpoints that do "
            "what you need; the ones found become tools you can call. "
            "Arguments: need (string, required)."
        )
    if ask_human:
        lines.append(
            "- ask_human: ask the user a question and get their reply. "
            "Arguments: question (string, required)."
        )
    return "\n".join(lines) if lines else "(no tools)"


async def ask_awareness(
    model: ChatClient,
    question: AwarenessQuestion,
    query: str,
    tools_text: str,
    retries: int = DEFAULT_RETRIES,
) -> AwarenessResult:
    """Ask one awareness question; re-ask up to ``retries`` times if unparseable."""
    prompt = load_prompt(f"awareness_{question}").render(query=query, tools=tools_text)
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    started = time.perf_counter()
    prompt_tokens = completion_tokens = 0
    raw = ""
    reasoning: str | None = None
    for attempt in range(1, retries + 2):
        reply = await model.complete(messages, max_tokens=model.config.awareness_max_tokens)
        # The client split any reasoning off the content: only the answer is parsed.
        raw = reply.text if isinstance(reply.text, str) else str(reply.content)
        reasoning = reasoning_of(reply)
        usage = reply.usage_metadata
        if usage:
            prompt_tokens += usage["input_tokens"]
            completion_tokens += usage["output_tokens"]
        parsed = parse_awareness(raw)
        if parsed is not None:
            return AwarenessResult(
                question,
                parsed[0],
                parsed[1],
                raw,
                attempt,
                _ms(started),
                prompt_tokens,
                completion_tokens,
                reasoning,
            )
        quoted = AIMessage(excerpt(raw, RETRY_QUOTE_CHARS))
        messages += [quoted, HumanMessage(load_prompt("awareness_retry").render())]
    return AwarenessResult(
        question,
        "none",
        "",
        raw,
        retries + 1,
        _ms(started),
        prompt_tokens,
        completion_tokens,
        reasoning,
    )


def reasoning_of(reply: AIMessage) -> str | None:
    """The reasoning the client split off ``reply`` (``additional_kwargs``), if any."""
    value = reply.additional_kwargs.get("reasoning")
    return value if isinstance(value, str) and value else None


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
