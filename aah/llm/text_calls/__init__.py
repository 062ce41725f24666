"""Tool calls that a model wrote as text, and text that tries to call but fails.

Servers that leave calls in the message text instead of the native
``tool_calls`` field write them in the format of the model family: Hermes
tags, Llama's pythonic lists and ``<|python_tag|>``, Mistral's
``[TOOL_CALLS]``, Qwen3-Coder's XML, Granite, Gemma, Phi-4, bare JSON. One
parser reads them all, for the runtime and the behaviour classifier alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.llm.text_calls.recover import recover_text_tool_calls
    from aah.llm.text_calls.reply import parse_text_tool_calls
    from aah.llm.text_calls.result import TextCall, TextCallParse

__all__ = ["TextCall", "TextCallParse", "parse_text_tool_calls", "recover_text_tool_calls"]

_WHERE = {
    "TextCall": "aah.llm.text_calls.result",
    "TextCallParse": "aah.llm.text_calls.result",
    "parse_text_tool_calls": "aah.llm.text_calls.reply",
    "recover_text_tool_calls": "aah.llm.text_calls.recover",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
