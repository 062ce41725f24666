"""The Queue tab: the next question opens by itself; answer, decline or skip it by keyboard.

Opening a question claims it (``aah.desk.DeskWorkflow``), so others are offered the
next one; the page's refresh is its heartbeat, and leaving the tab lets go
of it. Send, Decline and Skip open the next free question; a decline or a
skip can be undone for a few seconds.
Every handler takes the signed-in annotator from the page's server-side
state; a problem (nobody signed in, nothing open, an empty answer) is one
line in the status area, never an error dialog. The page reads only the
rows it shows: the first ``LISTED`` questions and the latest ``ANSWERS_SHOWN``
answers. Model, tool and user text goes into text boxes and tables, which
show it as text, never as HTML.

A question that offers the person's own tools (a τ² user's phone) shows
them under the answer box (``aah.ui.web.user_tools``): a press is sent with
the words typed so far (``call``), checked by the workflow, and the question
that follows with its result opens in its place, the words back in the box.

A request of kind ``approval`` (a tool call waiting for a person) opens as
the call's form instead of the answer box (``aah.ui.web.approval``), with
the same claims, heartbeat, Skip and undo; the page script sends the
decision (``decide``), and an edit that would not run is refused with one
line and never stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import gradio as gr

from aah.desk import DeskWorkflow, Next, OpenedRequest
from aah.store import (
    EVERYTHING,
    HumanRequestRecord,
    QueueEntry,
    QueueFilter,
    SessionStore,
    order_key,
)
from aah.ui.web.approval import call_html, read_decision, submit_decision
from aah.ui.web.auth import Annotator
from aah.ui.web.elicitation import elicitation_html, read_elicitation, submit_elicitation
from aah.ui.web.format import clip, plain
from aah.ui.web.queue import (
    AGE_CHOICES,
    ANSWERED_HEADERS,
    KIND_CHOICES,
    QUEUE_HEADERS,
    SETTING_CHOICES,
    answer_note,
    answered_rows,
    counter_line,
    queue_choices,
    queue_filter,
    queue_rows,
    queue_summary,
    request_view,
    rows_html,
)
from aah.ui.web.user_tools import made_note, read_press, user_tools_html, user_tools_of

LISTED = 50
ANSWERS_SHOWN = 20
RATING_CHOICES = [
    ("Yes: a fair question to ask", 1),
    ("No: it should not have needed to ask", 0),
]
KEYS_LINE = (
    "Keys: **Ctrl+Enter** send · **Esc** decline (press twice when you typed an answer)"
    " · **u** undo · **Alt+C** what the agent was given · **Tab** then **1** / **2** rate"
    " yes / no (optional) · **n** skip or next (outside the answer box)"
)
QUEUE_EMPTY = "No question waits now."
FILTERED = " Filtered: clear the filters above the list to see every kind, run and age."
ANSWERS_EMPTY = "You have not answered yet."
TOO_LATE = "Too late to undo: it was sent, or someone else has the question now."
AWAY = "You left the Queue tab: your question was let go; it comes back when you return."
SIGN_IN_FIRST = "Sign in first (top of the page): answers are never anonymous."
NOTHING_OPEN = "Nothing is open: press **n** (or Next) for the next question."
NOTHING_FREE = "No free question waits for you now: press **n** (or Next) to look again."
# The question's key line is hidden while a call or a form is open (app.CSS): one key line,
# never two that say different things about Esc.
APPROVAL_KEYS = (
    "Keys: **a** approve · **e** edit · **r** reject · **s** respond (the result the agent"
    " reads; the call does not run) · **t** terminate the session; after e, r, s or t,"
    " **Ctrl+Enter** (or the same button again) sends · **Esc** goes back to the choice,"
    " and from the choice puts the call aside for later (**u** undoes)"
)
OPEN_ALREADY = "A question is open: answer it, decline it (Esc) or skip it (Skip) first."

Choices = list[tuple[str, str]]


@dataclass
class QueuePage:
    """The Queue tab's components and handlers, for the app to wire sign-in to."""

    handlers: QueueHandlers
    status: gr.Markdown
    form: list[Any]
    lists: list[Any]
    opened: gr.State
    skipped: gr.State
    answer: gr.Textbox
    pick: gr.Dropdown
    shown: gr.State
    undo: gr.Button

    def start_outputs(self) -> list[Any]:
        """The outputs of ``QueueHandlers.start`` in order."""
        return [self.status, self.skipped, *self.form, *self.lists]

    def tick_inputs(self, user: gr.State) -> list[Any]:
        """The inputs of ``QueueHandlers.tick`` in order, the signed-in user first."""
        return [user, self.opened, self.pick, self.shown]

    def tick_outputs(self) -> list[Any]:
        """The outputs of ``QueueHandlers.tick`` in order."""
        return [self.status, *self.lists, self.undo]

    def wire_tabs(self, user: gr.State, queue_tab: gr.Tab, others: list[gr.Tab]) -> None:
        """Open a question when the Queue tab is shown; let go of it when another is."""
        quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
        queue_tab.select(
            self.handlers.enter,
            [user, self.opened, self.skipped],
            [self.status, self.skipped, *self.form],
            **quiet,
        )
        for tab in others:
            tab.select(self.handlers.away, [user, self.opened], [self.status, *self.form], **quiet)


class QueueHandlers:
    """The Queue tab's event handlers as plain functions of the store.

    Each returns the values of its outputs, in the order ``build_queue_tab``
    wires them; a perf harness calls them directly, as the page would.

    Args:
        store: The session store.
        workflow: Claims, renewals and replies; default: a page's lease.
    """

    def __init__(self, store: SessionStore, workflow: DeskWorkflow | None = None) -> None:
        self.store = store
        self.workflow = workflow or DeskWorkflow(store)
        # Each annotator's filter of the queue (kind, run, setting, age): what
        # their list shows and what opens next, on every page they have open.
        self._only: dict[str, QueueFilter] = {}

    def only_for(self, who: Annotator) -> QueueFilter:
        """The filter ``who`` chose (everything until they choose one)."""
        return self._only.get(who.name, EVERYTHING)

    def filter(
        self,
        who: Annotator | None,
        kind: str | None,
        run: str | None,
        setting: str | None,
        age: str | None,
        picked: str | None = None,
    ) -> tuple[Any, ...]:
        """Keep only the requests the filter controls name; the lists as they are then."""
        if who is not None:
            self._only[who.name] = queue_filter(kind, run, setting, age)
        return self.lists(who, picked)

    # -- what the form shows ----------------------------------------------

    def form(self, who: Annotator, request: HumanRequestRecord | None) -> tuple[Any, ...]:
        """The form's values: ``request`` shown and claimed, or the form hidden."""
        if request is None:
            return self.form_hidden()
        view = request_view(self.store, request)
        # A call to approve, or an MCP server's form: shown in the side part, not the answer box.
        approval = request.kind in ("approval", "elicitation")
        tools = user_tools_of(request)
        return (
            gr.update(visible=True),
            view.meta,
            view.request,
            view.briefing,
            gr.update(value=view.persona, visible=bool(view.persona)),
            view.query,
            view.conversation,
            view.question,
            tools.draft if tools is not None else "",
            None,
            gr.update(visible=not approval),
            gr.update(visible=not approval),
            gr.update(visible=approval),
            side_html(request),
            user_tools_html(request),
            request.id,
            self.workflow.opened(who.name, request),
        )

    def lists(self, who: Annotator | None, picked: str | None = None) -> tuple[Any, ...]:
        """The queue table, the picker, the counter and the latest answers, as they are now."""
        if who is None:
            empty = gr.update(choices=[], value=None)
            return ("Sign in to see the questions.", "", empty, [], "", "")
        only = self.only_for(who)
        listing = self.store.humans.queue_listing(who.name, limit=LISTED, only=only)
        mine = listing.entries
        entries = self._with_taken(mine, only)
        stats = self.store.humans.annotator_stats(who.name)
        choices = queue_choices(entries, who.name)
        keep = picked if picked in {value for _, value in choices} else None
        # Filtered, the summary counts what the filter keeps; the counter, all that waits.
        held = stats.held_by_others if only.empty else 0
        return (
            queue_summary(listing.total, mine, held=held, by_kind=listing.by_kind)
            + ("" if only.empty else FILTERED),
            rows_html(QUEUE_HEADERS, queue_rows(entries, who.name), QUEUE_EMPTY),
            gr.update(choices=choices, value=keep),
            choices,
            counter_line(stats),
            self.answered(who),
        )

    def answered(self, who: Annotator) -> str:
        """The latest answers of ``who`` as an HTML table."""
        rows = answered_rows(self.store.humans.answers_by(who.name, ANSWERS_SHOWN))
        return rows_html(ANSWERED_HEADERS, rows, ANSWERS_EMPTY)

    def counter(self, who: Annotator | None) -> Any:
        """The counter line of ``who`` as it is now."""
        return (
            gr.skip() if who is None else counter_line(self.store.humans.annotator_stats(who.name))
        )

    def _with_taken(self, mine: list[QueueEntry], only: QueueFilter) -> list[QueueEntry]:
        """``mine`` and, among them in the queue's order, the questions others hold now."""
        everyone = self.store.humans.queue_listing(None, limit=LISTED, only=only).entries
        merged = {entry.id: entry for entry in everyone} | {entry.id: entry for entry in mine}
        return sorted(merged.values(), key=order_key)[:LISTED]

    # -- events -------------------------------------------------------------

    def start(self, who: Annotator | None) -> tuple[Any, ...]:
        """On sign-in (or a reload): open the annotator's question, fill the lists.

        A new page's filter controls show every kind, run, setting and age:
        so does its queue (a filter chosen on an earlier page is dropped).
        """
        if who is None:
            return ("", [], *self.form_hidden(), *self.lists(None))
        self._only.pop(who.name, None)
        found = self.workflow.next_for(who.name)
        note = found.note or ("" if found.request else NOTHING_FREE)
        return (note, [], *self.form(who, found.request), *self.lists(who))

    def form_hidden(self) -> tuple[Any, ...]:
        """The form's values with nothing open."""
        parts = (gr.update(visible=True), gr.update(visible=True), gr.update(visible=False))
        return (
            gr.update(visible=False),
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            None,
            *parts,
            "",
            "",
            "",
            None,
        )

    def open(
        self,
        who: Annotator | None,
        picked: str | None,
        current: OpenedRequest | None,
        skipped: list[str],
    ) -> tuple[Any, ...]:
        """Open the question chosen in the picker, claiming it; taken: the next free one."""
        if who is None:
            return (SIGN_IN_FIRST, *_skips(_FORM_SIZE))
        if not picked:
            return ("Pick a question from the list first.", *_skips(_FORM_SIZE))
        again = current is not None and current.request_id == picked
        if current is not None and not again:
            self.workflow.leave(who.name, current.request_id, release=True)
        if self.workflow.open(who.name, picked):
            shown = self.form(who, self.store.humans.get_human_request(picked))
            if again:  # keep what they typed (an answer, an edit), and when they first opened it
                return (
                    "That question is open below.",
                    *shown[:_ANSWER],
                    *_skips(2),
                    *shown[_ANSWER + 2 : _CALL],
                    gr.skip(),
                    *shown[_CALL + 1 : -1],
                    current,
                )
            return ("", *shown)
        found = self.workflow.next_for(who.name, skipped, only=self.only_for(who))
        taken = "Someone else has that question now (or it needs no more answers)"
        then = "here is the next free one." if found.request else NOTHING_FREE
        return (f"{taken}: {then}", *self.form(who, found.request))

    def answer(
        self,
        who: Annotator | None,
        current: OpenedRequest | None,
        answer: str,
        rated: int | None,
        skipped: list[str],
        *,
        declined: bool,
    ) -> tuple[Any, ...]:
        """Send (or decline) the open question, then open the next free one.

        A decline reaches the agent once its undo time is over
        (``DeskWorkflow.decline``). Only the rows that changed are read: the
        answer's row in the latest answers. The counter follows at once, as a
        second event (``counter``), after the next question shows; the queue
        and the picker at the next refresh (``tick``), so an answer's cost
        does not grow with the queue or the day's answers.
        """
        if who is None:
            return (SIGN_IN_FIRST, *_skips(3 + _FORM_SIZE))
        if current is None:
            return (NOTHING_OPEN, *_skips(3 + _FORM_SIZE))
        undo: Any = gr.update(visible=False)
        done: Any = current.request_id
        if declined:
            if rated not in (None, 0, 1):
                return (_sentence("rate the question yes (1) or no (2)"), *_skips(3 + _FORM_SIZE))
            self.workflow.decline(who.name, current, rated)
            note = f"Declined **{plain(clip(current.question, 60))}**."
            # Its draft stays until the decline is final: an undo brings it back.
            undo, done = gr.update(visible=self.workflow.undo_seconds > 0), gr.skip()
        else:
            try:
                note = answer_note(
                    self.workflow.answer(who.name, current, answer or "", rating=rated)
                )
            except ValueError as exc:
                return (_sentence(str(exc)), *_skips(3 + _FORM_SIZE))
            except LookupError as exc:
                note = _sentence(str(exc))
            self.workflow.leave(who.name, current.request_id, release=False)
        found = self.workflow.next_for(who.name, skipped, only=self.only_for(who))
        after = found.note or ("" if found.request else NOTHING_FREE)
        return (
            f"{note} {after}".strip(),
            done,
            *self.form(who, found.request),
            self.answered(who),
            undo,
        )

    def undo(
        self, who: Annotator | None, current: OpenedRequest | None, skipped: list[str]
    ) -> tuple[Any, ...]:
        """Take back the latest decline or skip: its question opens again, as it was."""
        if who is None:
            return (SIGN_IN_FIRST, *_skips(2 + _FORM_SIZE))
        undone = self.workflow.undo(who.name)
        if undone is None:
            return (TOO_LATE, gr.skip(), *_skips(_FORM_SIZE), gr.update(visible=False))
        back = undone.opened.request_id
        if current is not None and current.request_id != back:
            self.workflow.leave(who.name, current.request_id, release=True)
        request = self.store.humans.get_human_request(back)
        shown = self.form(who, request)
        what = "Decline" if undone.kind == "declined" else "Skip"
        note = f"{what} undone: **{plain(clip(undone.opened.question, 60))}** is open again."
        passed = [request_id for request_id in skipped if request_id != back]
        # The question keeps the time it was first opened, for its answer's time.
        return (note, passed, *shown[:-1], undone.opened, gr.update(visible=False))

    def away(self, who: Annotator | None, current: OpenedRequest | None) -> tuple[Any, ...]:
        """The annotator left the Queue tab: let go of the open question."""
        if who is None or current is None:
            return (gr.skip(), *_skips(_FORM_SIZE))
        self.workflow.leave(who.name, current.request_id, release=True)
        return (AWAY, *self.form_hidden())

    def skip(
        self, who: Annotator | None, current: OpenedRequest | None, skipped: list[str]
    ) -> tuple[Any, ...]:
        """Let go of the open question (if any) and open the next free one."""
        if who is None:
            return (SIGN_IN_FIRST, *_skips(1 + _FORM_SIZE))
        passed = list(skipped)
        if current is not None:
            self.workflow.skipped(who.name, current)
            passed = [*skipped, current.request_id][-_SKIPS_KEPT:]
        found = self.workflow.next_for(who.name, passed, only=self.only_for(who))
        note = found.note
        if current is not None:
            note = f"Skipped **{plain(clip(current.question, 60))}**. {found.note}".strip()
        if found.request is None:
            note = f"{note} {NOTHING_FREE}".strip()
        return (note, passed, *self.form(who, found.request))

    def enter(
        self, who: Annotator | None, current: OpenedRequest | None, skipped: list[str]
    ) -> tuple[Any, ...]:
        """The Queue tab is shown: open the next free question unless one is open."""
        if who is None or current is not None:
            return _skips(2 + _FORM_SIZE)
        return self.skip(who, None, skipped)

    def skip_undoably(
        self, who: Annotator | None, current: OpenedRequest | None, skipped: list[str]
    ) -> tuple[Any, ...]:
        """``skip``, and the Undo button shown when a question was let go."""
        shown = self.skip(who, current, skipped)
        undoable = who is not None and current is not None and self.workflow.undo_seconds > 0
        return (*shown, gr.update(visible=undoable))

    def next(
        self, who: Annotator | None, current: OpenedRequest | None, skipped: list[str]
    ) -> tuple[Any, ...]:
        """Open the next free question when none is open; an open one stays open.

        Unlike Skip, Next never lets go of a question: a page that asks for
        the next one by itself (a question arrived) can never drop one the
        annotator is reading.
        """
        if who is not None and current is not None:
            return (OPEN_ALREADY, *_skips(1 + _FORM_SIZE))
        return self.skip(who, None, skipped)

    def tick(
        self,
        who: Annotator | None,
        current: OpenedRequest | None,
        picked: str | None,
        shown: Choices | None,
    ) -> tuple[Any, ...]:
        """Every few seconds: the page's heartbeat renews its claim; the lists refresh."""
        self.workflow.settle()
        lists = self.lists(who, picked)
        if shown is not None and [list(c) for c in shown] == [list(c) for c in lists[3]]:
            # Re-sending the picker would close it under the hand of someone choosing.
            lists = (*lists[:2], gr.skip(), *lists[3:])
        undoable = who is not None and self.workflow.undoable(who.name) is not None
        # The claim last, just before the reply: a send that lands while the
        # lists are read leaves the question first, and this beat then says
        # nothing over what the send said (``DeskWorkflow.beat``).
        status: Any = gr.skip()
        if who is not None and current is not None:
            if not self.workflow.beat(who.name, current.request_id):
                # Why the hold went: the session ended or the deadline answered, if so.
                closed = self.workflow.closed(who.name, current.request_id)
                status = f"{_sentence(closed)} {NOT_WANTED}" if closed else LOST_CLAIM
        return (status, *lists, gr.skip() if undoable else gr.update(visible=False))

    def decide(
        self,
        who: Annotator | None,
        current: OpenedRequest | None,
        sent: str,
        skipped: list[str],
    ) -> tuple[Any, ...]:
        """Send the decision on the open tool call (``sent``, JSON), then open the next request.

        An edit whose arguments would not run is refused here, with one line
        saying what to change, and never stored: the form stays as it is.
        """
        if who is None:
            return (SIGN_IN_FIRST, *_skips(3 + _FORM_SIZE))
        if current is None:
            return (NOTHING_OPEN, *_skips(3 + _FORM_SIZE))
        request = self.store.humans.get_human_request(current.request_id)
        if request is not None and request.kind not in ("approval", "elicitation"):
            return ("This is a question: answer it (Ctrl+Enter).", *_skips(3 + _FORM_SIZE))
        if request is None:
            note = "That call is gone: here is the next request."
        else:
            try:
                if request.kind == "elicitation":
                    result = read_elicitation(request, sent or "")
                    note = submit_elicitation(self.workflow, who.name, current, result)
                else:
                    decision = read_decision(request, sent or "")
                    note = submit_decision(self.workflow, who.name, current, decision)
            except ValueError as exc:
                return (f"Refused, not sent: {plain(str(exc))}.", *_skips(3 + _FORM_SIZE))
            except LookupError as exc:
                note = _sentence(str(exc))
        self.workflow.leave(who.name, current.request_id, release=False)
        found = self.workflow.next_for(who.name, skipped, only=self.only_for(who))
        after = found.note or ("" if found.request else NOTHING_FREE)
        return (
            f"{note} {after}".strip(),
            current.request_id,
            *self.form(who, found.request),
            self.answered(who),
            gr.update(visible=False),
        )

    def call(
        self,
        who: Annotator | None,
        current: OpenedRequest | None,
        sent: str,
        skipped: list[str],
    ) -> tuple[Any, ...]:
        """Make a call with one of the person's own tools (``sent``, JSON) instead of answering.

        A call that does not fit the tool's form is refused here with one
        line, nothing stored, the form and the typed words left as they are.
        A call made ends the question; the one that shows its result (and the
        words typed, back in the box) opens in its place once the
        conversation has made the call.
        """
        if who is None:
            return (SIGN_IN_FIRST, *_skips(3 + _FORM_SIZE))
        if current is None:
            return (NOTHING_OPEN, *_skips(3 + _FORM_SIZE))
        try:
            press = read_press(sent)
            if press.request_id != current.request_id:
                raise ValueError("that tool belongs to a question no longer open: press it again")
            made = self.workflow.called(who.name, current, press.tool, press.values, press.draft)
        except ValueError as exc:  # the desk's ContentInvalid among them
            return (f"Not called: {plain(str(exc))}.", *_skips(3 + _FORM_SIZE))
        except LookupError as exc:
            made, note = None, _sentence(str(exc))
        self.workflow.leave(who.name, current.request_id, release=False)
        follow = None
        if made is not None and made.outcome == "settled":
            follow = self.workflow.follow_up(who.name, wait_seconds=FOLLOW_UP_WAIT_S)
            note = made_note(follow) if follow is not None else CALL_PENDING
        elif made is not None:
            note = answer_note(made)
        found = (
            Next(follow)
            if follow is not None
            else self.workflow.next_for(who.name, skipped, only=self.only_for(who))
        )
        return (
            note,
            current.request_id,
            *self.form(who, found.request),
            self.answered(who),
            gr.update(visible=False),
        )


NOT_WANTED = "An answer to it would not be used: skip it for the next question."
CALL_PENDING = (
    "Your call is sent; its result opens here by itself once the conversation has made it"
    " (your words go with it)."
)
LOST_CLAIM = (
    "Your hold on this question ran out and someone else has it now (or it needs no more"
    " answers): an answer you send is kept only if it is still wanted."
)
_FORM_SIZE = 17
# How long a press waits for the question that shows its result (the runner polls the queue).
FOLLOW_UP_WAIT_S = 15.0
# Where the answer box and the call's form sit among the form's values.
_ANSWER = 8
_CALL = 13
_SKIPS_KEPT = 200


def side_html(request: HumanRequestRecord) -> str:
    """What the side part shows for ``request``: a call's form, a server's form, or nothing."""
    if request.kind == "approval":
        return call_html(request)
    if request.kind == "elicitation":
        return elicitation_html(request)
    return ""


def _skips(count: int) -> tuple[Any, ...]:
    return tuple(gr.skip() for _ in range(count))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def build_queue_tab(store: SessionStore, user: gr.State, workflow: DeskWorkflow) -> QueuePage:
    """Lay out the Queue tab inside the current Blocks and wire its events.

    The question, the user's request (the words the agent was not told
    marked), the answer box and its buttons come first, so that one screen
    holds them; what the agent was given sits beside them on a wide screen
    and below them on a phone (Alt+C shows it).
    """
    handlers = QueueHandlers(store, workflow)
    counter = gr.Markdown(elem_id="queue-counter")
    gr.Markdown(KEYS_LINE, elem_id="queue-keys")
    with gr.Row(equal_height=True, elem_id="answer-status-row"):
        status = gr.Markdown(elem_id="answer-status")
        undo = gr.Button(
            "Undo (u)", visible=False, size="sm", scale=0, min_width=100, elem_id="queue-undo"
        )
    with gr.Column(visible=False, elem_id="answer-form") as form:
        with gr.Row(equal_height=False, elem_id="answer-columns"):
            with gr.Column(scale=3, min_width=320, elem_id="answer-main"):
                meta = gr.Markdown(elem_id="answer-meta")
                with gr.Column(elem_id="question-part") as question_part:
                    question = gr.Textbox(
                        label="The agent asks you",
                        interactive=False,
                        lines=1,
                        max_lines=4,
                        elem_id="answer-question",
                    )
                # A tool call to approve: its form (built by ``call_html``, keys in page.js).
                with gr.Column(visible=False, elem_id="approval-part") as approval_part:
                    gr.Markdown("**Approve this call?**", elem_id="approval-title")
                    call = gr.HTML(elem_id="approval-form")
                    gr.Markdown(APPROVAL_KEYS, elem_id="approval-keys")
                    # The decisions' buttons are in the form itself (``call_html``); its
                    # Later presses this one (page.js), which skips the call.
                    later = gr.Button("Later (Esc)", visible="hidden", elem_id="approval-later")
                request = gr.HTML(elem_id="answer-request")
                with gr.Column(elem_id="answer-part") as answer_part:
                    answer = gr.Textbox(
                        label="Your answer (as the user)",
                        lines=3,
                        max_lines=8,
                        placeholder="Answer the question as the user would.",
                        elem_id="answer-text",
                    )
                    with gr.Row(elem_id="answer-buttons"):
                        send = gr.Button(
                            "Send answer", variant="primary", min_width=90, elem_id="answer-send"
                        )
                        decline = gr.Button("Decline", min_width=80, elem_id="answer-decline")
                        skip = gr.Button("Skip (n)", min_width=70, elem_id="queue-skip")
                    # The person's own tools (``user_tools_html``; presses in page.js).
                    phone = gr.HTML(elem_id="phone-part")
                    rating = gr.Radio(
                        choices=RATING_CHOICES,
                        label="Was it appropriate for the agent to ask this?"
                        " (optional: press 1 or 2)",
                        elem_id="answer-rating",
                    )
            with gr.Column(scale=2, min_width=300, elem_id="answer-context"):
                persona = gr.Textbox(
                    label="You are this user: your full request",
                    interactive=False,
                    lines=2,
                    max_lines=6,
                )
                brief = gr.HTML(elem_id="answer-briefing")
                query = gr.Textbox(
                    label="The request the agent got", interactive=False, lines=2, max_lines=6
                )
                conversation = gr.Textbox(
                    label="The conversation so far", interactive=False, lines=4, max_lines=12
                )
    # The page script reads these two: which question is open (focus, draft,
    # the release beacon) and which was just answered (its draft is dropped).
    request_box = gr.Textbox(visible="hidden", elem_id="answer-request-id")
    done_box = gr.Textbox(visible="hidden", elem_id="answer-done")
    # The page script writes a decision on a call here, as JSON, and presses Decide.
    choice_box = gr.Textbox(visible="hidden", elem_id="approval-choice")
    decide = gr.Button("Decide", visible="hidden", elem_id="approval-decide")
    # The page script writes a press of the person's own tool here, as JSON, and presses Call.
    press_box = gr.Textbox(visible="hidden", elem_id="phone-call")
    press = gr.Button("Call", visible="hidden", elem_id="phone-make")
    summary = gr.Markdown("Sign in to see the questions.", elem_id="queue-summary")
    # The filters (``queue_filter``): what the list shows and what opens next.
    with gr.Row(elem_id="queue-filters"):
        only_kind = gr.Dropdown(
            label="Kind", choices=KIND_CHOICES, value="all", min_width=140, elem_id="queue-kind"
        )
        only_run = gr.Textbox(
            label="Run", placeholder="any run", min_width=140, elem_id="queue-run"
        )
        only_setting = gr.Dropdown(
            label="Setting",
            choices=SETTING_CHOICES,
            value="any",
            min_width=140,
            elem_id="queue-setting",
        )
        only_age = gr.Dropdown(
            label="Waited", choices=AGE_CHOICES, value="any", min_width=140, elem_id="queue-age"
        )
    table = gr.HTML(elem_id="queue-table")
    with gr.Row():
        # Choices change under the page as others claim questions: the handler
        # checks the value itself, so a stale one is never a Gradio error.
        pick = gr.Dropdown(
            label="Or open a question of your choice",
            choices=[],
            allow_custom_value=True,
            scale=4,
            elem_id="queue-pick",
        )
        with gr.Column(scale=1, min_width=160):
            open_button = gr.Button("Open", elem_id="queue-open")
            next_button = gr.Button("Next (n)", size="sm", elem_id="queue-next")
            refresh_button = gr.Button("Refresh", size="sm", elem_id="queue-refresh")
    gr.Markdown(
        "**Your latest answers** (the session column shows the agent resuming)",
        elem_id="answered-title",
    )
    answered = gr.HTML(elem_id="answered-table")
    opened = gr.State(None)
    skipped = gr.State([])
    shown = gr.State([])
    form_parts = [form, meta, request, brief, persona, query, conversation, question, answer]
    form_parts += [rating, question_part, answer_part, approval_part, call, phone, request_box]
    form_parts += [opened]
    lists = [summary, table, pick, shown, counter, answered]
    page = QueuePage(
        handlers, status, form_parts, lists, opened, skipped, answer, pick, shown, undo
    )

    quiet: dict[str, Any] = {"show_progress": "hidden"}
    gr.on(
        [only_kind.change, only_run.submit, only_run.blur, only_setting.change, only_age.change],
        handlers.filter,
        [user, only_kind, only_run, only_setting, only_age, pick],
        lists,
        api_name="filter_queue",
        **quiet,
    )
    refresh_button.click(
        handlers.lists,
        [user, pick],
        lists,
        api_name="refresh_queue",
        **quiet,
    )
    open_button.click(
        handlers.open,
        [user, pick, opened, skipped],
        [status, *form_parts],
        api_name="open_request",
        **quiet,
    )
    answer_inputs = [user, opened, answer, rating, skipped]
    answer_outputs = [status, done_box, *form_parts, answered, undo]
    for button, declines, name in (
        (send, False, "send_answer"),
        (decline, True, "decline_request"),
    ):
        button.click(
            partial(handlers.answer, declined=declines),
            answer_inputs,
            answer_outputs,
            api_name=name,
            **quiet,
        ).then(handlers.counter, [user], [counter], api_visibility="private", **quiet)
    decide.click(
        handlers.decide,
        [user, opened, choice_box, skipped],
        answer_outputs,
        api_name="decide_call",
        **quiet,
    ).then(handlers.counter, [user], [counter], api_visibility="private", **quiet)
    press.click(
        handlers.call,
        [user, opened, press_box, skipped],
        answer_outputs,
        api_name="call_own_tool",
        **quiet,
    ).then(handlers.counter, [user], [counter], api_visibility="private", **quiet)
    skip_inputs, skip_outputs = [user, opened, skipped], [status, skipped, *form_parts, undo]
    skip.click(handlers.skip_undoably, skip_inputs, skip_outputs, api_name="skip_request", **quiet)
    # Later (Esc) on a call is Skip: the call goes back to the queue, and u undoes it.
    later.click(
        handlers.skip_undoably, skip_inputs, skip_outputs, api_visibility="private", **quiet
    )
    next_button.click(
        handlers.next,
        [user, opened, skipped],
        [status, skipped, *form_parts],
        api_name="next_request",
        **quiet,
    )
    undo.click(
        handlers.undo,
        [user, opened, skipped],
        [status, skipped, *form_parts, undo],
        api_name="undo",
        **quiet,
    )
    return page
