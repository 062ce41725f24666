"""How the agent's tools reach the model: the API's ``tools`` field, or the prompt.

``native`` sends the tools as OpenAI tool definitions and reads
``tool_calls``. Some servers ignore ``tools`` (a chat template without tool
support) or drop ``tool``-role messages; for them, ``prompt`` mode (as BFCL
evaluates "prompting" models) describes the tools in the system prompt, reads
calls from the reply's text with the shared parser
(``aah.llm.text_calls.parse_text_tool_calls``, through ``recover_text_tool_calls``), and
writes the conversation back in plain roles: the agent's calls as
``<tool_call>`` text, the results as a user message marked as tool output.

The graph's state is the same in both modes; only the request is written
differently, so a session reads and scores the same whichever mode ran it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from aah.errors import AahError
from aah.llm import ModelConfig, ProbeReport, probe_server
from aah.runtime.prompts import load_prompt

ToolMode = Literal["native", "prompt"]
ToolModeChoice = Literal["native", "prompt", "auto"]
TOOL_MODES: tuple[ToolModeChoice, ...] = ("native", "prompt", "auto")


def tool_mode_choice(value: str) -> ToolModeChoice:
    """Validate a ``--tool-mode`` value.

    Raises:
        AahError: ``value`` is not native, prompt or auto.
    """
    if value not in TOOL_MODES:
        raise AahError(f"unknown tool mode {value!r}: use native, prompt or auto")
    return value


def mode_for_probe(tool_calls: str | None) -> ToolMode:
    """``auto``'s choice from the probe's finding about a dummy tool.

    A server that ignored the tool (a chat template without tools) or refused
    the request that offered it (vLLM without a tool-call parser) gets the
    tools in the prompt; one that called it, natively or in text, keeps them
    in the API.
    """
    return "prompt" if tool_calls in ("ignored", "failed") else "native"


async def choose_tool_mode(
    choice: ToolModeChoice, config: ModelConfig, report: ProbeReport | None = None
) -> tuple[ToolMode, str]:
    """The mode a run uses for ``choice``, and why, probing the server for ``auto``.

    ``report`` is a probe already made of ``config``'s server (not sent again).
    """
    if choice != "auto":
        return choice, "as asked"
    report = report or await probe_server(config, overflow_probe=False)
    mode = mode_for_probe(report.tool_calls)
    return mode, f"auto: the server's tool calls are {report.tool_calls or 'unknown'}"


def tools_prompt(schemas: Sequence[dict[str, Any]]) -> str:
    """The system prompt section that describes ``schemas`` (OpenAI tool definitions)."""
    if not schemas:
        return ""
    lines = "\n".join(json.dumps(s["function"], ensure_ascii=False) for s in schemas)
    return load_prompt("agent_tools_in_prompt").render(tools=lines)


def prompted_conversation(messages: Sequence[BaseMessage], tools_text: str) -> list[BaseMessage]:
    """``messages`` written for a server that knows no tools: plain system, user, assistant."""
    written: list[BaseMessage] = []
    results: list[ToolMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            results.append(message)
            continue
        if results:
            written.append(_tool_output(results))
            results = []
        if isinstance(message, SystemMessage) and tools_text:
            written.append(SystemMessage(f"{message.text}\n\n{tools_text}"))
        elif isinstance(message, AIMessage):
            written.append(AIMessage(_calls_as_text(message)))
        else:
            written.append(message)
    if results:
        written.append(_tool_output(results))
    return written


def _calls_as_text(message: AIMessage) -> str:
    parts: list[str] = [str(message.text)] if message.text else []
    for call in message.tool_calls:
        body = json.dumps({"name": call["name"], "arguments": call["args"]}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{body}\n</tool_call>")
    # An unreadable attempt goes back as the model wrote it, so the feedback
    # that follows refers to text it can see.
    parts += [str(bad["args"]) for bad in message.invalid_tool_calls if bad["args"]]
    return "\n".join(parts)


def _tool_output(results: Sequence[ToolMessage]) -> HumanMessage:
    responses = "\n".join(
        f'<tool_response name="{r.name or "tool"}">\n{r.text}\n</tool_response>' for r in results
    )
    return HumanMessage(load_prompt("tool_output_message").render(responses=responses))
