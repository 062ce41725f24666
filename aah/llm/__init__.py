"""The one client for OpenAI-compatible model servers, for every role.

The text tool-call parser exports its own names from ``aah.llm.text_calls``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.llm.answers import (
        AwarenessWord,
        Choice,
        ReplyGrammar,
        VerdictWord,
        parse_awareness_reply,
        parse_verdict_reply,
    )
    from aah.llm.client import ChatClient, TextReplies
    from aah.llm.config import ModelConfig, Role, model_config
    from aah.llm.errors import (
        ModelConnectionError,
        ModelError,
        ModelReplyError,
        ModelStatusError,
        ModelTimeoutError,
    )
    from aah.llm.probe import probe_server
    from aah.llm.probe_report import ProbeLine, ProbeReport
    from aah.llm.reasoning import Reasoned, split_reasoning

__all__ = [
    "AwarenessWord",
    "Choice",
    "ReplyGrammar",
    "VerdictWord",
    "parse_awareness_reply",
    "parse_verdict_reply",
    "ChatClient",
    "ModelConfig",
    "ModelConnectionError",
    "ModelError",
    "ModelReplyError",
    "ModelStatusError",
    "ModelTimeoutError",
    "ProbeLine",
    "ProbeReport",
    "Reasoned",
    "Role",
    "TextReplies",
    "model_config",
    "probe_server",
    "split_reasoning",
]

_WHERE = {
    "AwarenessWord": "aah.llm.answers",
    "Choice": "aah.llm.answers",
    "ReplyGrammar": "aah.llm.answers",
    "VerdictWord": "aah.llm.answers",
    "parse_awareness_reply": "aah.llm.answers",
    "parse_verdict_reply": "aah.llm.answers",
    "ChatClient": "aah.llm.client",
    "TextReplies": "aah.llm.client",
    "ModelConfig": "aah.llm.config",
    "Role": "aah.llm.config",
    "model_config": "aah.llm.config",
    "ModelConnectionError": "aah.llm.errors",
    "ModelError": "aah.llm.errors",
    "ModelReplyError": "aah.llm.errors",
    "ModelStatusError": "aah.llm.errors",
    "ModelTimeoutError": "aah.llm.errors",
    "ProbeLine": "aah.llm.probe_report",
    "ProbeReport": "aah.llm.probe_report",
    "probe_server": "aah.llm.probe",
    "Reasoned": "aah.llm.reasoning",
    "split_reasoning": "aah.llm.reasoning",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
