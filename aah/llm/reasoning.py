"""Reasoning text, split off a reply before anything reads the reply as an answer.

Servers for reasoning models (Qwen3, DeepSeek-R1 distills, gpt-oss) either
put the model's thinking in the content, inside ``<think>…</think>`` (or
``<thinking>``, ``<reasoning>``), or return it in a separate
``reasoning_content`` / ``reasoning`` field. Either way it is not the answer:
awareness, votes, the judge, text tool calls and final answers read only what
is left, and the reasoning is kept beside it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_TAGS = ("think", "thinking", "reasoning")
# A closed block anywhere, or an unclosed one that runs to the end of the reply
# (a reply cut by max_tokens while thinking has no answer at all).
_BLOCK = re.compile(
    r"<(?P<tag>" + "|".join(_TAGS) + r")>(?P<body>.*?)(?:</(?P=tag)>|\Z)",
    re.DOTALL | re.IGNORECASE,
)
# Some templates open the block in the prompt, so the reply starts inside it
# and only the closing tag appears.
_OPEN_IN_PROMPT = re.compile(
    r"\A(?P<body>.*?)</(?:" + "|".join(_TAGS) + r")>", re.DOTALL | re.IGNORECASE
)

REASONING_FIELDS = ("reasoning_content", "reasoning")


class Reasoned(NamedTuple):
    """A reply split in two: the answer, and the reasoning that came with it."""

    answer: str
    reasoning: str


def split_reasoning(content: str, reasoning: str | None = None) -> Reasoned:
    """``content`` without its reasoning blocks, and the reasoning (field first, then blocks)."""
    parts = [reasoning.strip()] if reasoning and reasoning.strip() else []
    text = content or ""
    opened = _OPEN_IN_PROMPT.match(text)
    if opened and not _BLOCK.search(opened.group("body")):
        parts.append(opened.group("body").strip())
        text = text[opened.end() :]
    parts += [m.group("body").strip() for m in _BLOCK.finditer(text) if m.group("body").strip()]
    answer = _BLOCK.sub("", text).strip() if parts else text.strip()
    return Reasoned(answer, "\n\n".join(p for p in parts if p))


def message_reasoning(message: dict[str, Any]) -> str | None:
    """The separate reasoning field of a wire message, if the server sent one as text."""
    for field in REASONING_FIELDS:
        value = message.get(field)
        if isinstance(value, str) and value.strip():
            return value
    return None
