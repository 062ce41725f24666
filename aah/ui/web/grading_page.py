"""The Grade tab: label the final answers of a run's finished sessions Pass or Fail."""

from __future__ import annotations

from typing import Any

import gradio as gr

from aah.store import SessionStore, Verdict
from aah.ui.web.auth import Annotator, page_error, require
from aah.ui.web.format import plain
from aah.ui.web.grading import grading_view, record_label, run_names, to_label

_EMPTY = ("", "", "", "", None)


def next_to_label(store: SessionStore, who: Annotator, run: str | None) -> tuple[Any, ...]:
    """The outputs showing the next session ``who`` has to label in ``run``, or none left."""
    if not run:
        raise page_error("pick a run first (Refresh runs if the list is empty)")
    waiting = to_label(store, run, who.name)
    if not waiting:
        return (f"Nothing left to label in run **{plain(run)}**. Thank you!", *_EMPTY)
    view = grading_view(store, waiting[0], len(waiting))
    return (view.meta, view.query, view.answer, view.steps, "", view.session_id)


def build_grading_tab(store: SessionStore, user: gr.State, tab: gr.Tab) -> None:
    """Lay out the Grade tab (``tab``, the current block) and wire its events."""
    gr.Markdown(
        "Did the agent's final answer really do what the user asked? Judge from the "
        "tool results and the user's replies: an answer that invents values, does only "
        "part of the request, or honestly says it cannot do it, is a Fail."
    )
    with gr.Row():
        run = gr.Dropdown(label="Run", choices=[], scale=4, elem_id="grade-run")
        with gr.Column(scale=1, min_width=160):
            next_button = gr.Button("Next answer", variant="primary", elem_id="grade-next")
            runs_button = gr.Button("Refresh runs", size="sm")
    meta = gr.Markdown(elem_id="grade-meta")
    query = gr.Textbox(label="The user's request", interactive=False, lines=2)
    answer = gr.Textbox(label="The agent's final answer", interactive=False, lines=5)
    steps = gr.Textbox(label="Tool calls and questions", interactive=False, lines=10)
    with gr.Row():
        passed = gr.Button("Pass", variant="primary", elem_id="grade-pass")
        failed = gr.Button("Fail", variant="stop", elem_id="grade-fail")
    status = gr.Markdown(elem_id="grade-status")
    session = gr.State(None)
    shown = [meta, query, answer, steps, status, session]

    def on_runs(who: Annotator | None, picked: str | None) -> Any:
        require(who)
        names = run_names(store)
        return gr.Dropdown(choices=names, value=picked if picked in names else None)

    def on_next(who: Annotator | None, picked: str | None) -> tuple[Any, ...]:
        return next_to_label(store, require(who), picked)

    def on_label(verdict: Verdict) -> Any:
        def handler(
            who: Annotator | None, picked: str | None, session_id: str | None
        ) -> tuple[Any, ...]:
            signed_in = require(who)
            if session_id is None:
                raise page_error("press Next answer to get an answer to label")
            try:
                record_label(store, session_id, signed_in.name, verdict)
            except (ValueError, KeyError) as exc:
                raise page_error(str(exc)) from None
            shown_next = next_to_label(store, signed_in, picked)
            note = f"Labelled {verdict.capitalize()}. {shown_next[0]}"
            return (note, *shown_next[1:4], f"Saved: {verdict}.", shown_next[5])

        return handler

    runs_button.click(on_runs, [user, run], [run], api_name="grading_runs")
    tab.select(on_runs, [user, run], [run], api_visibility="private")
    next_button.click(on_next, [user, run], shown, api_name="next_to_label")
    label_inputs = [user, run, session]
    passed.click(on_label("pass"), label_inputs, shown, api_name="label_pass")
    failed.click(on_label("fail"), label_inputs, shown, api_name="label_fail")
