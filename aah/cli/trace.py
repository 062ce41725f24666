"""A readable live trace of a session's events on the terminal."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape

from aah.events import (
    AwarenessEvent,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)

_ANSWER_STYLE = {"yes": "green", "idk": "yellow", "no": "red", "none": "red"}


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def render_event(event: Event) -> str | None:
    """One event as a line of rich markup (model text escaped), or None to hide it."""
    if isinstance(event, AwarenessEvent):
        style = _ANSWER_STYLE[event.answer]
        return (
            f"[bold]awareness[/] ({event.question}): [{style}]{event.answer.upper()}[/] "
            f"{_short(event.reason)}"
        )
    if isinstance(event, ModelCallEvent):
        if event.purpose != "agent":
            return None
        tokens = f"{event.prompt_tokens or 0}+{event.completion_tokens or 0} tokens"
        said = f" “{_short(event.text, 120)}”" if event.text and event.n_tool_calls else ""
        timing = f"{tokens}, {event.latency_ms:.0f} ms"
        return f"[dim]model step: {event.n_tool_calls} call(s), {timing}{said}[/]"
    if isinstance(event, ToolCallEvent):
        args = _short(json.dumps(event.arguments, ensure_ascii=False), 160)
        if event.check != "ok":
            return (
                f"[bold red]✗ {escape(event.tool)}[/] {args} — rejected before running "
                f"([red]{event.check}[/]): {_short(event.feedback, 200)}"
            )
        mark, style = ("✓", "green") if event.ok else ("✗", "red")
        status = event.status_code if event.status_code is not None else "no response"
        return (
            f"[bold {style}]{mark} {escape(event.tool)}[/] {args} → {status}, "
            f"{event.latency_ms:.0f} ms [{event.http_mode}]"
            f"\n    [dim]{_short(event.result, 200)}[/]"
        )
    if isinstance(event, HumanQuestionEvent):
        return f"[bold magenta]? agent asks:[/] {_short(event.question)}"
    if isinstance(event, HumanAnswerEvent):
        if event.declined:
            return f"[magenta]  ↳ {escape(event.answered_by)} declined to answer[/]"
        return f"[magenta]  ↳ {escape(event.answered_by)}:[/] {_short(event.answer)}"
    if isinstance(event, FinalAnswerEvent):
        flag = " [red](step limit reached)[/]" if event.step_limit_hit else ""
        return f"[bold cyan]final answer{flag}:[/] {escape(event.text)}"
    if isinstance(event, ErrorEvent):
        return f"[bold red]error ({escape(event.where)}):[/] {escape(event.message)}"
    return None


class TracePrinter:
    """An event listener that prints each event as it happens."""

    def __init__(self, console: Console) -> None:
        """Print to ``console``."""
        self.console = console

    def __call__(self, event: Event) -> None:
        """Print one event."""
        line = render_event(event)
        if line is not None:
            # An error stays one line (see aah.cli.output); other steps may fold.
            soft_wrap = isinstance(event, ErrorEvent)
            self.console.print(line, highlight=False, soft_wrap=soft_wrap)
