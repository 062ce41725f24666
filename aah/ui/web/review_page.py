"""The Review tab: a reviewer accepts a sent answer or decision, or corrects it with a note.

Each item shows the question and the one answer under review, never
another reviewer's verdict (reviewers are blind to each other until the
Results tab compares them), beside the run's guidelines. Accept and
Correct each store a review of their own and open the next item; a
reviewer never gets an item they answered. Only reviewers (``aah web
--reviewer NAME``) and admins review.
"""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from aah.desk import ReviewDesk
from aah.errors import AahError
from aah.store import ReviewItem, ReviewVerdict, SessionStore
from aah.ui.guidelines import guidelines_html
from aah.ui.web.assign_page import build_assign_box
from aah.ui.web.auth import Annotator, page_error, require
from aah.ui.web.format import clip, plain

_NOTHING = "Nothing waits for your review now. Thank you!"
KEYS_LINE = (
    "Review the answer as the run's guidelines ask: **Accept** it, or type the right one"
    " and **Correct** it."
)


def item_html(store: SessionStore, item: ReviewItem) -> str:
    """The item under review as HTML, every text in it escaped, with its run's guidelines."""
    if item.declined:
        given = "<i>(declined: they could not answer)</i>"
    elif item.decision is not None:
        reason = f" — {html.escape(item.reason)}" if item.reason else ""
        given = f"<b>{html.escape(item.decision)}</b>{reason}"
        if item.edited_arguments:
            given += (
                '<p>with the arguments:</p><pre class="aah-review-text">'
                f"{html.escape(item.edited_arguments)}</pre>"
            )
        if item.answer:
            given += f'<pre class="aah-review-text">{html.escape(item.answer)}</pre>'
    else:
        given = f'<pre class="aah-review-text">{html.escape(item.answer)}</pre>'
    parts = [
        f"<p><b>{html.escape(item.kind.capitalize())}</b> · run {html.escape(item.run or '-')}"
        f" · answered by <b>{html.escape(item.annotator)}</b></p>",
        f'<p><b>The agent asked:</b></p><pre class="aah-review-text">'
        f"{html.escape(item.question)}</pre>",
        f"<p><b>The answer under review:</b></p>{given}",
    ]
    guidelines = guidelines_html(store.team.guidelines_for(item.request_id))
    return '<div class="aah-review">' + "\n".join(parts) + guidelines + "</div>"


def build_review_tab(store: SessionStore, user: gr.State, tab: gr.Tab, desk: ReviewDesk) -> None:
    """Lay out the Review tab (``tab``, the current block) and wire its events."""
    gr.Markdown(KEYS_LINE, elem_id="review-keys")
    status = gr.Markdown(elem_id="review-status")
    item = gr.HTML(elem_id="review-item")
    correction = gr.Textbox(
        label="The right answer (for Correct)", lines=3, elem_id="review-correction"
    )
    note = gr.Textbox(label="Note (why; optional for Accept)", lines=2, elem_id="review-note")
    with gr.Row(elem_id="review-buttons"):
        accept = gr.Button("Accept", variant="primary", elem_id="review-accept", min_width=100)
        correct = gr.Button("Correct", variant="secondary", elem_id="review-correct", min_width=100)
        skip = gr.Button("Skip", size="sm", elem_id="review-skip", min_width=80)
    request_id = gr.Textbox(visible=False, elem_id="review-request-id")
    build_assign_box(store, user)
    skipped = gr.State([])
    shown = [status, item, correction, note, request_id]

    def show_next(who: Annotator, note_line: str, passed: list[str]) -> tuple[Any, ...]:
        try:
            found = desk.next_for(who.name, admin=who.admin, skipped=passed)
        except AahError as exc:
            raise page_error(str(exc)) from None
        if found is None:
            return (f"{note_line} {_NOTHING}".strip(), "", "", "", "")
        return (note_line, item_html(store, found), "", "", found.request_id)

    def on_open(who: Annotator | None, passed: list[str]) -> tuple[Any, ...]:
        if who is None or not desk.may_review(who.name, who.admin):
            line = "Only reviewers review: ask your admin to run aah web --reviewer YOUR_NAME."
            return (line if who else "", "", "", "", "")
        return show_next(who, "", passed)

    def on_next(who: Annotator | None, passed: list[str]) -> tuple[Any, ...]:
        return show_next(require(who), "", passed)

    def on_skip(who: Annotator | None, current: str, passed: list[str]) -> tuple[Any, ...]:
        signed_in = require(who)
        now_skipped = [*passed, current] if current else passed
        return (*show_next(signed_in, "Skipped: it comes back last.", now_skipped), now_skipped)

    def on_review(verdict: ReviewVerdict) -> Any:
        def handler(
            who: Annotator | None, current: str, fixed: str, why: str, passed: list[str]
        ) -> tuple[Any, ...]:
            signed_in = require(who)
            if not current:
                raise page_error("nothing is open to review: press Skip to look for an item")
            try:
                record = desk.review(
                    signed_in.name,
                    current,
                    verdict,
                    correction=fixed,
                    note=why,
                    admin=signed_in.admin,
                )
            except AahError as exc:
                raise page_error(str(exc)) from None
            if record.verdict == "accept":
                said = "Accepted."
            else:
                said = f"Corrected to **{plain(clip(record.correction or '', 60))}**."
            return show_next(signed_in, said, passed)

        return handler

    tab.select(on_open, [user, skipped], shown, api_visibility="private")
    accept.click(
        on_review("accept"), [user, request_id, correction, note, skipped], shown,
        api_name="review_accept",
    )  # fmt: skip
    correct.click(
        on_review("correct"), [user, request_id, correction, note, skipped], shown,
        api_name="review_correct",
    )  # fmt: skip
    skip.click(on_skip, [user, request_id, skipped], [*shown, skipped], api_name="review_skip")
    # The API's way in: the item to review now (the tab's opening, for a client).
    open_button = gr.Button(visible=False, elem_id="review-open")
    open_button.click(on_next, [user, skipped], shown, api_name="review_next")
