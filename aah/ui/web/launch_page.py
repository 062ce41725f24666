"""The Launch tab (admins only): start a batch run whose questions come to the queue."""

from __future__ import annotations

from datetime import UTC, datetime

import gradio as gr

from aah.ui.web.auth import Annotator, page_error, require_admin
from aah.ui.web.format import plain
from aah.ui.web.launch import (
    LAUNCH_HEADERS,
    SETTING_CHOICES,
    LaunchRequest,
    RunLauncher,
    log_tail,
)


def build_launch_tab(launcher: RunLauncher, user: gr.State) -> None:
    """Lay out the Launch tab inside the current Blocks and wire its events."""
    gr.Markdown(
        "Start `aah bench run --human queue` on this app's database. The agent's "
        "questions appear in the Queue tab; the run waits for answers."
    )
    with gr.Row():
        run = gr.Textbox(label="Run name", value=_default_run_name, elem_id="launch-run")
        setting = gr.Dropdown(
            label="Setting", choices=list(SETTING_CHOICES), value="underspecified"
        )
        limit = gr.Number(label="Tasks per setting (empty: all)", value=5, precision=0, minimum=1)
    with gr.Row():
        model = gr.Textbox(label="Agent model (empty: AAH_MODEL)", elem_id="launch-model")
        aah = gr.Checkbox(label="Aah on (the agent may ask)", value=True)
    launch = gr.Button("Launch run", variant="primary", elem_id="launch-button")
    status = gr.Markdown(elem_id="launch-status")
    with gr.Row():
        table = gr.Dataframe(headers=LAUNCH_HEADERS, datatype="str", interactive=False, wrap=True)
    with gr.Row():
        pid = gr.Number(label="Process id", precision=0, value=None, scale=2)
        with gr.Column(scale=1, min_width=160):
            show = gr.Button("Show log", size="sm")
            stop = gr.Button("Stop run", variant="stop", size="sm")
    log = gr.Textbox(label="Log (end)", lines=12, interactive=False, elem_id="launch-log")

    def on_launch(
        who: Annotator | None,
        name: str,
        chosen: str,
        per_setting: float | None,
        agent_model: str,
        ask: bool,
    ) -> tuple[str, list[list[str]], int, str]:
        require_admin(who)
        request = LaunchRequest(
            run=name.strip(),
            setting=chosen,
            limit=int(per_setting) if per_setting else None,
            model=agent_model.strip() or None,
            aah=ask,
        )
        try:
            started = launcher.launch(request)
        except ValueError as exc:
            raise page_error(str(exc)) from None
        note = f"Started run **{plain(request.run)}** as process {started.process.pid}."
        return note, launcher.rows(), started.process.pid, log_tail(started.log)

    def on_show(who: Annotator | None, chosen: float | None) -> tuple[list[list[str]], str]:
        require_admin(who)
        launched = launcher.find(int(chosen)) if chosen else None
        if launched is None:
            raise page_error("type the process id of a run launched from this page")
        return launcher.rows(), log_tail(launched.log)

    def on_stop(who: Annotator | None, chosen: float | None) -> tuple[str, list[list[str]]]:
        require_admin(who)
        if not chosen or not launcher.stop(int(chosen)):
            raise page_error("type the process id of a running run launched from this page")
        return f"Asked process {int(chosen)} to stop.", launcher.rows()

    launch.click(
        on_launch,
        [user, run, setting, limit, model, aah],
        [status, table, pid, log],
        api_name="launch_run",
    )
    show.click(on_show, [user, pid], [table, log], api_name="run_log")
    stop.click(on_stop, [user, pid], [status, table], api_name="stop_run")


def _default_run_name() -> str:
    return datetime.now(UTC).strftime("web-%Y%m%d-%H%M")
