"""A readable live trace of a session's events on the terminal.

Between steps the trace says what it waits for once the wait passes a couple
of seconds (an awareness question to a slow model can take a minute), and
again every little while, so a quiet terminal never looks hung.
"""

from __future__ import annotations

import threading
import time

from rich.console import Console
from rich.markup import escape

from aah.event_text import EventDescription, Tone, describe_event, reasoning_summary
from aah.events import (
    ApprovalRequestedEvent,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    StoppedEvent,
)

# A wait shorter than this says nothing; a longer one is named, then again every REPEAT_S.
QUIET_S = 2.0
REPEAT_S = 15.0

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


def next_wait(event: Event) -> str | None:
    """What a session waits for after ``event``; None when it ended or a person answers."""
    if isinstance(event, FinalAnswerEvent | StoppedEvent | ErrorEvent | HumanQuestionEvent):
        return None
    if isinstance(event, ApprovalRequestedEvent):  # a person decides
        return None
    if isinstance(event, ModelCallEvent) and event.purpose == "agent" and event.n_tool_calls:
        return "the tool calls"
    return "the model"


class TracePrinter:
    """An event listener that prints each event as it happens, and names long waits.

    Args:
        console: Where to print.
        quiet_s: How long a wait goes unmentioned.
        repeat_s: How often a wait that goes on is mentioned again.
    """

    def __init__(
        self, console: Console, *, quiet_s: float = QUIET_S, repeat_s: float = REPEAT_S
    ) -> None:
        """Print to ``console``."""
        self.console = console
        self.quiet_s = quiet_s
        self.repeat_s = repeat_s
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._waiting_for: str | None = None
        self._since = 0.0

    def __call__(self, event: Event) -> None:
        """Print one event."""
        self._cancel()
        line = render_event(event)
        if line is not None:
            # An error stays one line (see aah.cli.output); other steps may fold.
            soft_wrap = isinstance(event, ErrorEvent)
            self.console.print(line, highlight=False, soft_wrap=soft_wrap)
        what = next_wait(event)
        if what is not None:
            self.waiting_for(what)

    def waiting_for(self, what: str) -> None:
        """Start a wait for ``what`` (``the model``, ``the awareness answer``...)."""
        with self._lock:
            self._waiting_for, self._since = what, time.monotonic()
            self._arm(self.quiet_s)

    def close(self) -> None:
        """Stop naming waits: the session is over."""
        self._cancel()

    def _arm(self, delay: float) -> None:
        timer = threading.Timer(delay, self._say)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _say(self) -> None:
        with self._lock:
            if self._waiting_for is None:
                return
            seconds = time.monotonic() - self._since
            self.console.print(
                f"[dim]… waiting for {escape(self._waiting_for)} ({seconds:.0f} s)[/]",
                highlight=False,
            )
            self._arm(self.repeat_s)

    def _cancel(self) -> None:
        with self._lock:
            self._waiting_for = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
