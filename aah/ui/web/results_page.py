"""The Results tab: the team's figures, then a run's report (tables, agreement, charts).

The team's figures (``team_page``) come first, as soon as the tab opens.

The report is the scoring package's own HTML page (``render_html``), which
escapes every text and forbids scripts itself. It is shown in a sandboxed
frame, so that its style cannot restyle the app and, even if something got
through, nothing in it could run or reach the app.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import gradio as gr

from aah.desk import team_figures
from aah.errors import AahError
from aah.report import build_report, render_html
from aah.store import SessionStore
from aah.ui.web.auth import Annotator, page_error, require
from aah.ui.web.grading import run_names
from aah.ui.web.team_page import team_html

# The steps build_report announces, then rendering: for the progress bar.
REPORT_STEPS = ("metrics", "behaviour and tool calls", "agreement", "rendering")
# Gradio hands a handler a progress bar when a parameter defaults to one; the
# bar reports to the event being run, so one instance serves every call.
_PROGRESS = gr.Progress()
_EMPTY_NOTE = "<p>Pick one or more runs and press <b>Show report</b>.</p>"


def report_frame(document: str) -> str:
    """``document`` (a whole HTML page) inside a sandboxed frame that runs nothing."""
    return (
        f'<iframe title="report" sandbox="" srcdoc="{html.escape(document, quote=True)}" '
        'style="width: 100%; height: 80vh; border: 1px solid #ddd;"></iframe>'
    )


def build_results_tab(
    store: SessionStore, user: gr.State, tab: gr.Tab, data_dir: Path | None
) -> None:
    """Lay out the Results tab (``tab``, the current block) and wire its events."""
    with gr.Row():
        runs = gr.Dropdown(
            label="Runs (none picked: every run)",
            choices=[],
            multiselect=True,
            scale=4,
            elem_id="results-runs",
        )
        with gr.Column(scale=1, min_width=160):
            show = gr.Button("Show report", variant="primary", elem_id="results-show")
    team = gr.HTML(elem_id="results-team")
    report = gr.HTML(_EMPTY_NOTE, elem_id="results-report")

    def on_runs(who: Annotator | None, picked: list[str] | None) -> Any:
        require(who)
        names = run_names(store)
        return gr.Dropdown(choices=names, value=[n for n in picked or [] if n in names])

    def on_show(
        who: Annotator | None,
        picked: list[str] | None,
        progress: gr.Progress = _PROGRESS,
    ) -> str:
        require(who)
        done = iter(range(len(REPORT_STEPS)))

        def step(name: str) -> None:
            progress(next(done, 0) / len(REPORT_STEPS), desc=name)

        try:
            built = build_report(store, picked or None, data_dir, progress=step)
        except AahError as exc:
            raise page_error(str(exc)) from None
        step("rendering")
        return report_frame(render_html(built))

    def on_team(who: Annotator | None, picked: list[str] | None) -> str:
        require(who)
        return team_html(team_figures(store, picked or None))

    tab.select(on_runs, [user, runs], [runs], api_visibility="private")
    tab.select(on_team, [user, runs], [team], api_visibility="private")
    show.click(on_show, [user, runs], [report], api_name="show_report")
    show.click(on_team, [user, runs], [team], api_name="show_team")
