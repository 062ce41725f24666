"""A queue's counts in words, by kind, for every face: "3 approvals, 12 questions, 1 form".

An approval (a tool call a person decides on) and an MCP form (a server's
elicitation) are no questions: counting them as such hid that an agent is
blocked on each. Faces count with these words, in the queue's order of kinds.
"""

from __future__ import annotations

from collections.abc import Mapping

from aah.store import KINDS, RequestKind

# Each kind's name as a person reads it, one and many.
_NOUNS = {
    "approval": ("approval", "approvals"),
    "elicitation": ("form", "forms"),
    "question": ("question", "questions"),
}


def kind_word(kind: str, count: int = 1) -> str:
    """``kind`` as a person reads it (``elicitation``: ``form``), singular or plural."""
    one, many = _NOUNS.get(kind, (kind, kind))
    return one if count == 1 else many


def kinds_text(by_kind: Mapping[RequestKind, int], empty: str = "nothing") -> str:
    """``3 approvals, 12 questions, 1 form``: each kind with any, in the queue's order."""
    parts = [
        f"{by_kind[kind]:,} {kind_word(kind, by_kind[kind])}" for kind in KINDS if by_kind.get(kind)
    ]
    return ", ".join(parts) or empty


def only_questions(by_kind: Mapping[RequestKind, int]) -> bool:
    """Whether every request counted is a question (so "N questions" says all there is)."""
    return all(kind == "question" for kind, count in by_kind.items() if count)
