"""The one client for OpenAI-compatible model servers, for every role."""

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
    from aah.llm.client import ChatClient
    from aah.llm.config import (
        ModelConfig,
        chat_model,
        model_config,
        model_error,
        raw_client,
    )
    from aah.llm.reasoning import Reasoned, split_reasoning
    from aah.llm.text_calls import parse_text_tool_calls, recover_text_tool_calls

__all__ = [
    "AwarenessWord",
    "Choice",
    "ReplyGrammar",
    "VerdictWord",
    "parse_awareness_reply",
    "parse_verdict_reply",
    "Reasoned",
    "split_reasoning",
    "ChatClient",
    "ModelConfig",
    "chat_model",
    "model_config",
    "model_error",
    "parse_text_tool_calls",
    "raw_client",
    "recover_text_tool_calls",
]

_WHERE = {
    "AwarenessWord": "aah.llm.answers",
    "Choice": "aah.llm.answers",
    "ReplyGrammar": "aah.llm.answers",
    "VerdictWord": "aah.llm.answers",
    "parse_awareness_reply": "aah.llm.answers",
    "parse_verdict_reply": "aah.llm.answers",
    "Reasoned": "aah.llm.reasoning",
    "split_reasoning": "aah.llm.reasoning",
    "ChatClient": "aah.llm.client",
    "ModelConfig": "aah.llm.config",
    "chat_model": "aah.llm.config",
    "model_config": "aah.llm.config",
    "model_error": "aah.llm.config",
    "parse_text_tool_calls": "aah.llm.text_calls",
    "raw_client": "aah.llm.config",
    "recover_text_tool_calls": "aah.llm.text_calls",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
