"""The terminal app's widgets: the session timeline and the numbers panel.

Both read the same typed events the store keeps (``aah.events``); neither
knows how the session runs. A timeline entry's ``tone`` is a CSS class, so
colours live in ``tui.tcss`` and failures stand out by one rule there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from aah.event_text import Tone as EventTone
from aah.event_text import clip, describe_event, reasoning_summary
from aah.events import (
    DiscoveryEvent,
    ErrorEvent,
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)

# An event's tone, or the tone of a heading of the app's own.
Tone = Literal[EventTone, "header"]


class SessionEvent(Message):
    """A stored event of the running session, handed to the app's UI."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class SessionDone(Message):
    """The running session ended: its status, and the error if it failed."""

    def __init__(self, status: str, error: str | None) -> None:
        super().__init__()
        self.status = status
        self.error = error


class EntryView(NamedTuple):
    """How one timeline entry reads: a heading, a body and a tone (CSS class)."""

    heading: str
    body: str
    tone: Tone
    # "reasoning (N chars)" when the reply came with reasoning: shown dim, folded.
    reasoning: str = ""


def entry_view(event: Event) -> EntryView | None:
    """The timeline entry for ``event``, or None for steps not worth a line."""
    description = describe_event(event)
    if description is None:
        return None
    body = "\n".join(part for part in (description.detail, description.text) if part)
    folded = reasoning_summary(description.reasoning) if description.reasoning else ""
    return EntryView(description.label, body, description.tone, folded)


class TimelineEntry(Static):
    """One step of the session: a bold heading over the detail."""

    def __init__(self, view: EntryView) -> None:
        text = Text(view.heading, style="bold")
        if view.body:
            text.append("\n" + view.body, style="")
        if view.reasoning:
            text.append("\n▸ " + view.reasoning, style="dim italic")
        super().__init__(text, classes=f"entry {view.tone}")
        self.view = view


class Timeline(VerticalScroll):
    """The session's steps as they happen, newest at the bottom.

    The view stays on the newest step while the session runs and when the
    terminal is resized (entries rewrap, and a kept offset would show an older
    task); scrolling up lets go of that until the view is back at the end.
    """

    def add_view(self, view: EntryView) -> TimelineEntry:
        """Append one entry and keep it in sight."""
        entry = TimelineEntry(view)
        self.mount(entry)
        # Once the entry has its size: before that a tall one would end below the fold.
        self.call_after_refresh(self._keep_following)
        return entry

    def follow(self) -> None:
        """Show the newest entry, and keep it in sight from now on."""
        self.call_after_refresh(self._keep_following, again=True)

    def _keep_following(self, again: bool = False) -> None:
        # Anchored only once the entries overflow: an anchored view that is not
        # full shows its entries at the bottom, under an empty top.
        if self.max_scroll_y > 0 and (again or not self.is_anchored):
            self.anchor()

    def add_event(self, event: Event) -> TimelineEntry | None:
        """Append the entry for ``event``, if it has one."""
        view = entry_view(event)
        return self.add_view(view) if view is not None else None

    def add_note(self, heading: str, body: str = "", tone: Tone = "info") -> TimelineEntry:
        """Append a line that is not an event (a new session, a broken tool)."""
        return self.add_view(EntryView(heading, body, tone))

    def entries(self) -> list[EntryView]:
        """What the timeline shows, oldest first (for tests and exports)."""
        return [entry.view for entry in self.query(TimelineEntry)]


@dataclass(frozen=True)
class SessionStats:
    """The numbers of one session, as the side panel shows them."""

    status: str = "idle"
    steps: int = 0
    tool_calls: int = 0
    errors: int = 0
    questions: int = 0
    tokens: int = 0
    elapsed: float = 0.0
    broken_tools: int = 0
    waiting_elsewhere: int = 0
    # ``waiting_elsewhere`` by kind in words ("1 approval, 2 questions"): '' when all are questions.
    elsewhere_kinds: str = ""
    model: str = ""
    session: str = ""

    def after(self, event: Event) -> SessionStats:
        """These numbers once ``event`` has happened."""
        if isinstance(event, ModelCallEvent):
            tokens = (event.prompt_tokens or 0) + (event.completion_tokens or 0)
            steps = self.steps + (event.purpose == "agent")
            return replace(self, steps=steps, tokens=self.tokens + tokens)
        if isinstance(event, ToolCallEvent):
            return replace(
                self, tool_calls=self.tool_calls + 1, errors=self.errors + (not event.ok)
            )
        if isinstance(event, DiscoveryEvent):  # a find_tools call that ran
            return replace(self, tool_calls=self.tool_calls + 1)
        if isinstance(event, HumanQuestionEvent):
            return replace(self, questions=self.questions + 1, status="waiting")
        if isinstance(event, HumanAnswerEvent):
            return replace(self, status="running")
        if isinstance(event, ErrorEvent):
            return replace(self, errors=self.errors + 1, status="error")
        return self


_STATUS_STYLE = {
    "running": "bold green",
    "waiting": "bold magenta",
    "finished": "bold cyan",
    "skipped": "bold yellow",
    "error": "bold red",
    "step_limit": "bold yellow",
    "cut_off": "bold yellow",
    "terminated": "bold yellow",
}


class StatsPanel(Static):
    """The session's numbers, redrawn whenever they change."""

    stats: reactive[SessionStats] = reactive(SessionStats)

    def watch_stats(self, stats: SessionStats) -> None:
        """Redraw with the new numbers."""
        self.update(render_stats(stats))


class StatsLine(Static):
    """The session's numbers on one line, for screens too narrow for the panel."""

    stats: reactive[SessionStats] = reactive(SessionStats)

    def watch_stats(self, stats: SessionStats) -> None:
        """Redraw with the new numbers."""
        self.update(render_stats_line(stats))


def render_stats_line(stats: SessionStats) -> Text:
    """The numbers that matter live, on one line (two on a very narrow screen)."""
    minutes, seconds = divmod(int(stats.elapsed), 60)
    items = [
        Text(stats.status, style=_STATUS_STYLE.get(stats.status, "bold")),
        Text(f"{stats.steps} steps"),
        Text(f"{stats.tool_calls} tool calls"),
        Text(f"{stats.errors} errors", style="bold red" if stats.errors else ""),
        Text(f"{stats.questions} questions"),
        Text(f"{minutes}:{seconds:02d}"),
    ]
    if stats.broken_tools:
        items.append(Text(f"{stats.broken_tools} broken", style="red"))
    if stats.waiting_elsewhere:
        kinds = stats.elsewhere_kinds or f"{stats.waiting_elsewhere}"
        items.append(Text(f"{kinds} waiting elsewhere"))
    line = Text()
    for index, item in enumerate(items):
        if index:
            line.append(" · ", style="dim")
        line.append_text(item)
    return line


def render_stats(stats: SessionStats) -> Table:
    """The numbers as a two-column grid."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim")
    grid.add_column()
    minutes, seconds = divmod(int(stats.elapsed), 60)
    rows: list[tuple[str, Text]] = [
        ("status", Text(stats.status, style=_STATUS_STYLE.get(stats.status, "bold"))),
        ("steps", Text(str(stats.steps))),
        ("tool calls", Text(str(stats.tool_calls))),
        ("errors", Text(str(stats.errors), style="bold red" if stats.errors else "")),
        ("questions", Text(str(stats.questions))),
        ("tokens", Text(str(stats.tokens))),
        ("elapsed", Text(f"{minutes}:{seconds:02d}")),
        ("broken tools", Text(str(stats.broken_tools), style="red" if stats.broken_tools else "")),
        ("elsewhere", Text(f"{stats.elsewhere_kinds or stats.waiting_elsewhere} waiting")),
    ]
    for label, value in rows:
        grid.add_row(label, value)
    if stats.model:
        grid.add_row("model", Text(clip(stats.model, 40), style="italic"))
    if stats.session:
        grid.add_row("session", Text(stats.session, style="dim"))
    return grid
