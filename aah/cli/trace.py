"""A readable live trace of a session's events on the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from aah.event_text import EventDescription, Tone, describe_event, reasoning_summary
from aah.events import ErrorEvent, Event

# rich styles for the tones of ``aah.event_text``.
TONE_STYLE: dict[Tone, str] = {
    "info": "dim",
    "ok": "bold green",
    "fail": "bold red",
    "warn": "yellow",
    "ask": "bold magenta",
    "answer": "magenta",
    "final": "bold cyan",
}


def render_event(event: Event) -> str | None:
    """One event as rich markup (every text escaped), or None to hide it.

    The label and the text share a line; what goes with the label (a tool
    call's arguments) follows it, and then the text goes on its own line.
    A reply's reasoning is one dim line saying how long it was.
    """
    description = describe_event(event)
    if description is None:
        return None
    line = _render_description(description)
    if description.reasoning:
        line += f"\n    [dim]{reasoning_summary(description.reasoning)}[/]"
    return line


def _render_description(description: EventDescription) -> str:
    label = f"[{TONE_STYLE[description.tone]}]{escape(description.label)}[/]"
    if description.detail:
        line = f"{label} {escape(description.detail)}"
        return f"{line}\n    [dim]{escape(description.text)}[/]" if description.text else line
    if not description.text:
        return label
    # "awareness (tool): IDK <reason>" reads on; "final answer" needs its colon.
    joiner = " " if ":" in description.label else ": "
    return f"{label}{joiner}{escape(description.text)}"


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
