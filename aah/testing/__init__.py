"""Test doubles that run for real: a scripted OpenAI-compatible model server."""

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
