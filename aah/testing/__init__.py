"""Test doubles that run for real: a scripted OpenAI-compatible model server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.testing.fake_llm import FakeLLMServer
    from aah.testing.fake_llm_script import (
        DEFAULT_MODEL,
        Reply,
        Rule,
        Script,
        ScriptedError,
        ScriptedToolCall,
        ScriptLike,
        When,
        error_reply,
        load_script,
        text_reply,
        tool_reply,
    )

__all__ = [
    "DEFAULT_MODEL",
    "FakeLLMServer",
    "Reply",
    "Rule",
    "Script",
    "ScriptLike",
    "ScriptedError",
    "ScriptedToolCall",
    "When",
    "error_reply",
    "load_script",
    "text_reply",
    "tool_reply",
]

_WHERE = {
    "DEFAULT_MODEL": "aah.testing.fake_llm_script",
    "FakeLLMServer": "aah.testing.fake_llm",
    "Reply": "aah.testing.fake_llm_script",
    "Rule": "aah.testing.fake_llm_script",
    "Script": "aah.testing.fake_llm_script",
    "ScriptLike": "aah.testing.fake_llm_script",
    "ScriptedError": "aah.testing.fake_llm_script",
    "ScriptedToolCall": "aah.testing.fake_llm_script",
    "When": "aah.testing.fake_llm_script",
    "error_reply": "aah.testing.fake_llm_script",
    "load_script": "aah.testing.fake_llm_script",
    "text_reply": "aah.testing.fake_llm_script",
    "tool_reply": "aah.testing.fake_llm_script",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
