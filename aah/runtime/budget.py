"""How much of a conversation reaches the model: tool results within a token budget.

A single tool response can be megabytes (2.6 MB seen); the HTTP layer caps a
body only at ``AAH_HTTP_MAX_BYTES`` (200,000 bytes by default), which is
still ~50k tokens for one result. Each result is therefore cut to a budget in
tokens (approximate: four characters a token) before the model sees it, with
a marker the model can read. When the server still says the conversation
does not fit its context, the agent's request is sent once more with the
results of earlier turns compacted to their start; if that does not fit
either, the session ends with a reason that says what to change.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage

from aah.llm import ModelError, ModelStatusError

CHARS_PER_TOKEN = 4
DEFAULT_TOOL_RESULT_TOKENS = 2_000
# What a compacted result keeps: enough to remember which call it answered.
COMPACTED_CHARS = 200
_COMPACTED_MARK = "[... compacted:"

Complete = Callable[[Sequence[BaseMessage]], Awaitable[AIMessage]]


class ContextOverflowError(ModelError):
    """The conversation does not fit the model's context, even compacted."""


class ReplyCutOff(Exception):  # noqa: N818 - an outcome, not an error of aah's
    """The model's reply was cut by its length limit, also when asked again with a larger one.

    Not a ``ModelError``: the server did what it was asked. The session
    stops without a final answer (status ``cut_off``), counted apart from
    errors and from the model's own format errors (science.md §2).
    """


def was_cut_off(reply: AIMessage) -> bool:
    """Whether the server says it cut ``reply`` at its length limit (``finish_reason``)."""
    return reply.response_metadata.get("finish_reason") == "length"


def cut_tool_result(text: str, tokens: int) -> str:
    """``text`` cut to about ``tokens`` tokens, with a marker saying how much is shown."""
    limit = tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... truncated: {limit:,} of {len(text):,} characters shown]"


def estimate_tokens(messages: Sequence[BaseMessage]) -> int:
    """The conversation's size in tokens, approximately (four characters a token)."""
    chars = sum(len(m.text) + sum(len(str(c["args"])) for c in _calls(m)) for m in messages)
    return chars // CHARS_PER_TOKEN


def compact_tool_results(messages: Sequence[AnyMessage]) -> list[ToolMessage]:
    """Shortened copies (same ids) of the tool results of turns before the last one.

    The last turn's results are what the model is about to read: they stay.
    A result already short, or already compacted, is left out.
    """
    last_turn = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=0)
    compacted = []
    for message in messages[:last_turn]:
        text = message.text
        if not isinstance(message, ToolMessage) or len(text) <= COMPACTED_CHARS:
            continue
        if _COMPACTED_MARK in text:
            continue
        note = f"{_COMPACTED_MARK} {COMPACTED_CHARS} of {len(text):,} characters kept]"
        compacted.append(
            message.model_copy(update={"content": f"{text[:COMPACTED_CHARS]}\n{note}"})
        )
    return compacted


def with_replacements(
    messages: Sequence[AnyMessage], replacements: Sequence[AnyMessage]
) -> list[AnyMessage]:
    """``messages`` with each message whose id a replacement has swapped for it."""
    by_id = {m.id: m for m in replacements if m.id is not None}
    return [by_id.get(m.id, m) if m.id is not None else m for m in messages]


async def complete_within_context(
    complete: Complete, messages: Sequence[AnyMessage]
) -> tuple[AIMessage, list[ToolMessage]]:
    """The model's reply, and the results compacted to get it (empty when none were).

    Raises:
        ContextOverflowError: the conversation does not fit even compacted.
        ModelError: the request failed for another reason.
    """
    try:
        return await complete(messages), []
    except ModelStatusError as exc:
        if not exc.context_overflow:
            raise
        overflow = exc
    compacted = compact_tool_results(messages)
    if compacted:
        shorter = with_replacements(messages, compacted)
        try:
            return await complete(shorter), compacted
        except ModelStatusError as exc:
            if not exc.context_overflow:
                raise
            overflow, messages = exc, shorter
    raise ContextOverflowError(
        f"the conversation no longer fits the model's context (its messages about "
        f"{estimate_tokens(messages):,} tokens, the tools' descriptions besides"
        f"{', with older tool results compacted' if compacted else ''}; the server said: "
        f"{overflow.server_message.rstrip('.')}): lower --tool-result-tokens "
        "(AAH_TOOL_RESULT_TOKENS), offer fewer tools, or use a model with a larger context",
        url=overflow.url,
        attempts=overflow.attempts,
    ) from None


def _calls(message: BaseMessage) -> list[dict[str, object]]:
    return list(message.tool_calls) if isinstance(message, AIMessage) else []  # type: ignore[arg-type]
