"""Tool calls before they run: argument models, pre-call checks, and the schemas the model sees."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.tools.calls.checks import (
        CallChecker,
        CheckResult,
        arguments_models,
        canonical_call,
        describe_parameters,
        enum_problem,
    )
    from aah.tools.calls.wrap import (
        ask_human_schema,
        find_tools_schema,
        one_line_description,
        openai_tool,
        wrap_endpoint,
    )

__all__ = [
    "CallChecker",
    "CheckResult",
    "arguments_models",
    "ask_human_schema",
    "canonical_call",
    "describe_parameters",
    "enum_problem",
    "find_tools_schema",
    "one_line_description",
    "openai_tool",
    "wrap_endpoint",
]

_WHERE = {
    "CallChecker": "aah.tools.calls.checks",
    "CheckResult": "aah.tools.calls.checks",
    "arguments_models": "aah.tools.calls.checks",
    "ask_human_schema": "aah.tools.calls.wrap",
    "canonical_call": "aah.tools.calls.checks",
    "describe_parameters": "aah.tools.calls.checks",
    "enum_problem": "aah.tools.calls.checks",
    "find_tools_schema": "aah.tools.calls.wrap",
    "one_line_description": "aah.tools.calls.wrap",
    "openai_tool": "aah.tools.calls.wrap",
    "wrap_endpoint": "aah.tools.calls.wrap",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
