"""What the grader sees of a session, and the prompt it is asked with.

The prompt is data (``prompts/grader.md``), versioned in its front matter. A
case holds the request, the tool calls with their results, the questions put
to a person with the replies, and the final answer; rendering cuts each part
to a bound so one prompt stays a few thousand tokens whatever the session did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from aah.events import (
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ToolCallEvent,
    excerpt,
)
from aah.runtime.prompts import Prompt, read_prompt
from aah.store import SessionRecord, SessionStore

PROMPT_PATH = Path(__file__).resolve().parent / "prompts" / "grader.md"
TOOL_RESULT_CHARS = 1_000
ANSWER_CHARS = 4_000
MAX_TOOL_CALLS_SHOWN = 30


def load_grader_prompt() -> Prompt:
    """The prompt in ``prompts/grader.md``, split from its front matter."""
    return read_prompt(PROMPT_PATH)


class GradingCase(NamedTuple):
    """What the grader sees of a session; ``exchanges`` pairs questions and replies."""

    query: str
    answer: str
    tool_calls: list[ToolCallEvent]
    exchanges: list[tuple[str, str]]


def load_case(store: SessionStore, session: SessionRecord) -> GradingCase:
    """The grading case of ``session``, read from its stored events."""
    events = store.events(session.id)
    answers = {e.request_id: e.answer for e in events if isinstance(e, HumanAnswerEvent)}
    finals = [e.text for e in events if isinstance(e, FinalAnswerEvent)]
    return GradingCase(
        query=session.query,
        answer=finals[-1] if finals else session.final_answer or "",
        tool_calls=[e for e in events if isinstance(e, ToolCallEvent)],
        exchanges=[
            (e.question, answers.get(e.request_id, ""))
            for e in events
            if isinstance(e, HumanQuestionEvent)
        ],
    )


def render_prompt(case: GradingCase, prompt: Prompt | None = None) -> str:
    """The grader prompt for ``case``: plain text, tool results cut to a bound."""
    prompt = prompt or load_grader_prompt()
    return prompt.render(
        query=case.query.strip(),
        tool_calls=_describe_tool_calls(case.tool_calls),
        human_exchanges="\n".join(f"Q: {q}\nA: {a or '(no reply)'}" for q, a in case.exchanges)
        or "(none)",
        answer=excerpt(case.answer.strip(), ANSWER_CHARS) or "(no final answer)",
    )


def _describe_tool_calls(calls: Sequence[ToolCallEvent]) -> str:
    if not calls:
        return "(none)"
    lines = []
    for number, call in enumerate(calls[:MAX_TOOL_CALLS_SHOWN], start=1):
        arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
        lines.append(f"{number}. {call.tool} {excerpt(arguments, 500)}")
        if call.check != "ok":
            lines.append(f"   not run (rejected: {call.check}): {excerpt(call.feedback, 300)}")
            continue
        if call.protocol == "mcp":  # an MCP tool's result is ok or an error, with no status
            status = "MCP tool"
        else:
            status = f"HTTP {call.status_code}" if call.status_code is not None else "no response"
        outcome = "ok" if call.ok else "failed"
        lines.append(f"   {status}, {outcome}: {excerpt(call.result, TOOL_RESULT_CHARS)}")
    if len(calls) > MAX_TOOL_CALLS_SHOWN:
        lines.append(f"... and {len(calls) - MAX_TOOL_CALLS_SHOWN} more calls not shown")
    return "\n".join(lines)
