"""The Queue tab: pick a waiting question, read its context, answer or decline, rate it.

Every handler takes the signed-in annotator from the page's server-side
state and refuses to act without one. Model, tool and user text goes into
text boxes and tables, which show it as text, never as HTML.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from aah.store import SessionStore
from aah.ui.web.auth import Annotator, require
from aah.ui.web.queue import (
    ANSWERED_HEADERS,
    QUEUE_HEADERS,
    OpenedRequest,
    answered_rows,
    queue_choices,
    queue_rows,
    queue_summary,
    request_view,
    submit_answer,
)

RATING_CHOICES = [
    ("Yes: a fair question to ask", 1),
    ("No: it should not have needed to ask", 0),
]


Choices = list[tuple[str, str]]
Refreshed = tuple[str, list[list[str]], Any, list[list[str]], Choices]


@dataclass
class QueuePage:
    """The components other parts of the app refresh or reveal."""

    summary: gr.Markdown
    table: gr.Dataframe
    pick: gr.Dropdown
    answered: gr.Dataframe
    answered_ids: gr.State
    shown_choices: gr.State

    def refresh_outputs(self) -> list[Any]:
        """The outputs of ``refresh`` in order."""
        return [self.summary, self.table, self.pick, self.answered, self.shown_choices]

    def refresh_inputs(self, user: gr.State) -> list[Any]:
        """The inputs of ``refresh`` in order, the signed-in user first."""
        return [user, self.pick, self.answered_ids, self.shown_choices]


def refresh(
    store: SessionStore,
    user: Annotator | None,
    picked: str | None,
    answered_ids: list[str],
    shown: Choices | None = None,
) -> Refreshed:
    """The queue as it is now for ``user`` (empty when nobody is signed in).

    The picker is only sent when its choices changed: re-sending it would
    close it under the hand of someone choosing, every few seconds.
    """
    if user is None:
        return "Sign in to see the questions.", [], gr.Dropdown(choices=[], value=None), [], []
    requests = store.requests_for(user.name)
    choices = queue_choices(requests)
    unchanged = shown is not None and [list(c) for c in shown] == [list(c) for c in choices]
    keep = picked if picked in {value for _, value in choices} else None
    return (
        queue_summary(requests),
        queue_rows(requests),
        gr.skip() if unchanged else gr.Dropdown(choices=choices, value=keep),
        answered_rows(store, user.name, answered_ids),
        choices,
    )


def build_queue_tab(store: SessionStore, user: gr.State) -> QueuePage:
    """Lay out the Queue tab inside the current Blocks and wire its events."""
    summary = gr.Markdown("Sign in to see the questions.", elem_id="queue-summary")
    table = gr.Dataframe(
        headers=QUEUE_HEADERS,
        datatype="str",
        interactive=False,
        wrap=True,
        max_height=320,
        elem_id="queue-table",
    )
    with gr.Row():
        pick = gr.Dropdown(label="Question to answer", choices=[], scale=4, elem_id="queue-pick")
        with gr.Column(scale=1, min_width=160):
            open_button = gr.Button("Open", variant="primary", elem_id="queue-open")
            refresh_button = gr.Button("Refresh", size="sm", elem_id="queue-refresh")
    with gr.Group(visible=False, elem_id="answer-form") as form:
        meta = gr.Markdown(elem_id="answer-meta")
        brief = gr.HTML(elem_id="answer-briefing")
        persona = gr.Textbox(
            label="You are this user: your full request", interactive=False, lines=2
        )
        query = gr.Textbox(label="The request the agent got", interactive=False, lines=2)
        conversation = gr.Textbox(label="The conversation so far", interactive=False, lines=6)
        question = gr.Textbox(
            label="The agent asks you", interactive=False, lines=2, elem_id="answer-question"
        )
        answer = gr.Textbox(
            label="Your answer (as the user)",
            lines=3,
            placeholder="Answer the question as the user would.",
            elem_id="answer-text",
        )
        rating = gr.Radio(
            choices=RATING_CHOICES,
            label="Was it appropriate for the agent to ask this?",
            elem_id="answer-rating",
        )
        with gr.Row():
            send = gr.Button("Send answer", variant="primary", elem_id="answer-send")
            decline = gr.Button("Decline (I cannot answer)", elem_id="answer-decline")
    status = gr.Markdown(elem_id="answer-status")
    answered = gr.Dataframe(
        headers=ANSWERED_HEADERS,
        datatype="str",
        interactive=False,
        wrap=True,
        label="Your answers in this sitting (the session column shows the agent resuming)",
        elem_id="answered-table",
    )
    opened = gr.State(None)
    page = QueuePage(summary, table, pick, answered, gr.State([]), gr.State([]))

    def on_refresh(who: Annotator | None, picked: str | None, ids: list[str]) -> Refreshed:
        return refresh(store, who, picked, ids)  # a click always sends the picker

    def on_open(who: Annotator | None, picked: str | None) -> tuple[Any, ...]:
        require(who)
        if not picked:
            raise gr.Error("pick a question from the list first")
        try:
            view = request_view(store, picked)
        except LookupError as exc:
            raise gr.Error(f"{exc}: refresh the queue") from None
        return (
            gr.Group(visible=True),
            view.meta,
            gr.Textbox(value=view.persona, visible=bool(view.persona)),
            view.query,
            view.conversation,
            view.question,
            "",
            None,
            OpenedRequest(picked, time.time()),
            "",
            view.briefing,
        )

    def on_submit(declined: bool) -> Callable[..., tuple[Any, ...]]:
        def handler(
            who: Annotator | None,
            current: OpenedRequest | None,
            text: str,
            rated: int | None,
            ids: list[str],
            picked: str | None,
        ) -> tuple[Any, ...]:
            signed_in = require(who)
            if current is None:
                raise gr.Error("open a question first")
            try:
                note = submit_answer(store, signed_in.name, current, text, rated, declined)
            except (ValueError, LookupError) as exc:
                raise gr.Error(str(exc)) from None
            new_ids = [*ids, current.request_id]
            return (
                note,
                gr.Group(visible=False),
                None,
                new_ids,
                *refresh(store, signed_in, picked, new_ids),
            )

        return handler

    refresh_button.click(
        on_refresh, page.refresh_inputs(user)[:3], page.refresh_outputs(), api_name="refresh_queue"
    )
    open_button.click(
        on_open,
        [user, pick],
        [form, meta, persona, query, conversation, question, answer, rating, opened, status, brief],
        api_name="open_request",
    )
    submit_inputs = [user, opened, answer, rating, page.answered_ids, pick]
    submit_outputs = [status, form, opened, page.answered_ids, *page.refresh_outputs()]
    send.click(on_submit(False), submit_inputs, submit_outputs, api_name="send_answer")
    decline.click(on_submit(True), submit_inputs, submit_outputs, api_name="decline_request")
    return page
