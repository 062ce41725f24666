"""The terminal app's dialogs: answer the agent's question, pick a waiting one.

``AskHumanScreen`` returns the answer, or None to decline; it can also be put
aside ("later") without answering, and the question stays in the queue for
others (the app lets go of its claim). ``PendingQuestionsScreen`` lists the
questions waiting in the store, from this app's session or from batch runs
in other processes, and marks those other annotators hold.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from aah.desk import ContentInvalid, QuestionContext, question_context
from aah.store import HumanRequestRecord, QueueEntry, RequestKind
from aah.terminal_text import printable
from aah.ui.briefing import briefing, deadline_note, word_diff
from aah.ui.counts import kind_word, kinds_text
from aah.ui.tui.user_tools_screen import (
    ToolPress,
    UserToolFormScreen,
    UserToolsPanel,
    checked_press,
)

_CONTEXT_LINES = 6  # recent conversation lines shown beside the question


def describe_context(context: QuestionContext) -> Text:
    """What a person needs beside the question, the setting's rule and the agent's tools.

    Also the recent steps and a demo hint. Where the agent got less than the
    full request, the words it was not told are highlighted (and the words it
    got instead struck through).
    """
    text = Text()
    brief = briefing(context)
    if context.asker:
        text.append("Asked by: ", style="bold")
        text.append(f"{printable(context.asker)}\n")
    request = context.original_query or context.query
    if context.original_query:
        text.append("You are this user. Your full request:\n", style="bold")
    elif request:
        text.append("The user's request:\n", style="bold")
    if brief.full_request:
        _append_diff(text, brief.full_request, brief.given_request)
    elif request:
        text.append(f"{request}\n")
    if brief.rule:
        text.append("You may: ", style="bold")
        text.append(f"{printable(brief.rule)}\n")
    if brief.tools or brief.unavailable:
        text.append("The agent was given: ", style="bold")
        text.append(", ".join(printable(line.split(":", 1)[0]) for line in brief.tools) or "none")
        text.append("\n")
    for line in brief.unavailable:
        text.append("Taken away: ", style="bold")
        text.append(f"{printable(line)}\n")
    if context.conversation:
        text.append("\nSo far:\n", style="bold")
        for step in context.conversation[-_CONTEXT_LINES:]:
            text.append(f"{step.role}: ", style="dim")
            text.append(f"{' '.join(step.text.split())[:160]}\n")
    if context.demo_answer:
        text.append("\nThe demo user would say: ", style="italic dim")
        text.append(context.demo_answer, style="italic")
    return text


# F1 shows the keys of what has focus, with what each does, and hides them
# again, on every screen: no typed answer uses it. A dialog hides the app's
# keys, so each dialog binds it too.
HELP_KEY = Binding("f1", "app.help", "Help")


def own_keys_first(
    screen: Screen[Any], bindings: dict[str, ActiveBinding]
) -> dict[str, ActiveBinding]:
    """``bindings`` with the dialog's own keys first: F1's panel and the footer list them so.

    Textual lists the focused box's keys first (a text box's generic
    editing keys), which hid what the dialog itself offers at 80x24.
    """
    own = {key: bound for key, bound in bindings.items() if bound.node is screen}
    return own | {key: bound for key, bound in bindings.items() if key not in own}


class AskHumanScreen(ModalScreen[str | ToolPress | None]):
    """The agent's question, its context and a box for the answer.

    Dismissed with the answer text, or None when the person declines. "Later"
    closes the dialog without answering (posting ``PutAside``): the agent
    keeps waiting, and the question is free for others. A question that
    offers the person's own tools (a τ² user's phone) shows them under the
    buttons (``UserToolsPanel``); a press dismisses with a ``ToolPress``
    carrying the words typed so far, which the next question brings back.
    """

    class PutAside(Message):
        """The person closed the question without answering it, keeping what they typed."""

        def __init__(self, request_id: str, draft: str = "") -> None:
            super().__init__()
            self.request_id = request_id
            self.draft = draft

    BINDINGS = [
        Binding("escape", "later", "Answer later"),
        Binding("ctrl+n", "decline", "Decline"),
        HELP_KEY,
    ]
    # The answer box has the keys from the moment the dialog is shown.
    AUTO_FOCUS = "#ask-answer"

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys F1 and the footer list: the dialog's own first (``own_keys_first``)."""
        return own_keys_first(self, super().active_bindings)

    def __init__(
        self, request: HumanRequestRecord, where: str = "", draft: str = "", guidelines: str = ""
    ) -> None:
        super().__init__()
        self.request = request
        self.where = where
        # The run's guidelines (``--guidelines``), shown as text: nothing in them runs.
        self.guidelines = guidelines
        self.tools = question_context(request.context).user_tools
        # An answer typed before, that could not be stored then, or before a call of a tool.
        self.draft = draft or (self.tools.draft if self.tools is not None else "")
        self.opened = time.monotonic()

    def compose(self) -> ComposeResult:
        """The question first, the context under it, the answer box last."""
        with Vertical(id="ask-dialog"):
            title = f"An agent asks ({printable(self.where)})" if self.where else "The agent asks"
            yield Label(title, id="ask-title")
            yield Static(Text(printable(self.request.question)), id="ask-question")
            with VerticalScroll(id="ask-context"):
                yield Static(describe_context(question_context(self.request.context)))
                if self.guidelines:
                    shown = "Guidelines for this run:\n" + printable(self.guidelines)
                    yield Static(Text(shown), id="ask-guidelines")
            # A draft shown again is added to, not selected for the next key to replace.
            yield Input(
                self.draft,
                placeholder="Your answer (Enter sends it)",
                id="ask-answer",
                select_on_focus=False,
            )
            with Horizontal(id="ask-buttons"):
                # Short labels stay whole at 60 columns; the footer names the keys.
                yield Button("Send", variant="primary", id="ask-send")
                yield Button("Decline", variant="error", id="ask-decline")
                yield Button("Later", id="ask-later")
            if self.tools is not None:
                yield UserToolsPanel(self.tools)
        yield Footer()

    def on_mount(self) -> None:
        """Put the cursor in the answer box."""
        self.query_one("#ask-answer", Input).focus()

    @property
    def seconds(self) -> float:
        """How long the dialog has been open."""
        return time.monotonic() - self.opened

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the answer box sends the answer."""
        event.stop()
        self._send()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Send, decline or put aside, by button."""
        event.stop()
        actions = {"ask-send": self._send, "ask-decline": self.action_decline}
        actions.get(event.button.id or "", self.action_later)()

    def _send(self) -> None:
        answer = self.query_one("#ask-answer", Input).value.strip()
        if not answer:
            self.notify("Type an answer, or decline with ctrl+n.", severity="warning")
            return
        self.dismiss(answer)

    def action_decline(self) -> None:
        """Refuse to answer: the agent is told the user declined."""
        self.dismiss(None)

    def on_user_tools_panel_pressed(self, event: UserToolsPanel.Pressed) -> None:
        """A tool's button: called at once, or its form opened first; the typed words go too."""
        event.stop()
        if self.tools is None:
            return
        draft = self.query_one("#ask-answer", Input).value
        if event.tool.fields:
            form = UserToolFormScreen(self.tools, event.tool, draft)
            self.app.push_screen(form, callback=self._called)
            return
        try:
            self.dismiss(checked_press(self.tools, event.tool, {}, draft))
        except ContentInvalid as exc:
            self.query_one(UserToolsPanel).refuse(str(exc))

    def _called(self, press: ToolPress | None) -> None:
        if press is not None:  # None: the person went back, the words as they were
            self.dismiss(press)

    def action_later(self) -> None:
        """Close without answering; the question stays pending in the queue."""
        # To the app itself: this screen is gone before its own queue would run.
        draft = self.query_one("#ask-answer", Input).value
        self.app.post_message(self.PutAside(self.request.id, draft))
        self.app.pop_screen()


class PendingQuestionsScreen(ModalScreen[str | None]):
    """The questions, approvals and forms waiting for a person; returns the chosen request's id.

    Args:
        entries: The first of them in the queue's order (approvals and forms
            first: an agent is blocked on each; then the nearest deadline,
            then the oldest), as the queue lists them.
        total: How many wait in all (more than ``entries`` when the list is cut).
        annotator: Who is choosing: questions others hold are marked taken.
        by_kind: ``total`` by kind (``QueueListing.by_kind``); without it, all are questions.
    """

    BINDINGS = [Binding("escape", "close", "Close"), HELP_KEY]

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The keys F1 and the footer list: the dialog's own first (``own_keys_first``)."""
        return own_keys_first(self, super().active_bindings)

    def __init__(
        self,
        entries: Sequence[QueueEntry],
        total: int,
        annotator: str,
        by_kind: Mapping[RequestKind, int] | None = None,
    ) -> None:
        super().__init__()
        self.entries = list(entries)
        self.total = total
        self.annotator = annotator
        self.by_kind: dict[RequestKind, int] = dict(by_kind) if by_kind else {"question": total}

    def compose(self) -> ComposeResult:
        """A list in the queue's order, with each one's kind and how long it has waited."""
        title = f"Waiting for a person: {kinds_text(self.by_kind)}"
        if self.total > len(self.entries):
            title += f" (the first {len(self.entries)} shown)"
        with Vertical(id="pending-dialog"):
            yield Label(title, id="pending-title")
            yield OptionList(
                *(Option(_pending_label(e, self.annotator), id=e.id) for e in self.entries),
                id="pending-list",
            )
            yield Label("Enter opens the highlighted one; Esc closes.", classes="hint")
        yield Footer()

    def on_mount(self) -> None:
        """Let the arrow keys pick a question at once."""
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Answer the chosen question."""
        event.stop()
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        """Close without choosing."""
        self.dismiss(None)


def _append_diff(text: Text, full: str, given: str) -> None:
    styles = {"same": "", "changed": "bold black on yellow", "given": "dim strike"}
    for kind, words in word_diff(full, given):
        text.append(printable(words), style=styles[kind])
        text.append(" ")
    text.append("\n")


def queue_place(setting: str | None, task_id: str | None, session_id: str, asker: str = "") -> str:
    """Where a waiting question comes from, as a person knows it: setting and task.

    An MCP form names the server that asks (``asker``) first; a session with
    none of these (a typed request) is named by its id.
    """
    server = f"server {' '.join(asker.split())[:40]}" if asker.strip() else ""
    parts = [part for part in (server, setting, task_id) if part]
    return " · ".join(parts) if parts else f"session {session_id[:8]}"


def taken_by(entry: QueueEntry, annotator: str) -> tuple[str, ...]:
    """The others whose claims (with the answers given) fill ``entry`` for ``annotator``.

    Empty when the annotator may still take it.
    """
    others = tuple(name for name in entry.claimed_by if name != annotator)
    return others if len(others) + entry.answers >= entry.k and others else ()


def _pending_label(entry: QueueEntry, annotator: str) -> Text:
    created = entry.created if entry.created.tzinfo else entry.created.replace(tzinfo=UTC)
    waited = int((datetime.now(UTC) - created).total_seconds())
    minutes, seconds = divmod(max(waited, 0), 60)
    label = Text(f"{minutes}:{seconds:02d} ", style="dim")
    if entry.kind != "question":  # an agent is blocked on it
        label.append(f"{kind_word(entry.kind)} ", style="bold")
    place = queue_place(entry.setting, entry.task_id, entry.session_id, entry.asker)
    label.append(f"{printable(place)}  ", style="cyan")
    holders = taken_by(entry, annotator)
    if holders:
        label.append(f"[taken by {', '.join(printable(h) for h in holders)}] ", style="magenta")
    fallback = deadline_note(entry)
    if fallback:
        label.append(f"[fallback {fallback}] ", style="yellow")
    label.append(" ".join(printable(entry.question).split())[:90])
    return label
