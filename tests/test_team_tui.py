"""The terminal app's question screen shows the run's guidelines beside the question (issue 46)."""

from __future__ import annotations

from pathlib import Path

from test_tui import no_configured_model, open_first_queued, registry, settled  # noqa: F401
from textual.widgets import Static

from aah.store.sessions import SessionStore
from aah.tools.registry.read import Registry
from aah.ui.tui.app import AahApp

GUIDELINES = "# Be brief\nAnswer **only** what is asked.\x1b]52;c;cGF3bmVk\x07 [x](http://e.org)"


async def test_the_question_screen_shows_the_runs_guidelines_as_text(
    registry: Registry,  # noqa: F811
    shared_data: Path,
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.db"
    with SessionStore(db) as runner_store:
        runner_store.create_run("shift", {})
        runner_store.team.set_run_team("shift", guidelines=GUIDELINES)
        session = runner_store.open_session("Convert 20 EUR", task_id="t1", run="shift")
        runner_store.set_status(session.id, "waiting")
        runner_store.humans.create_human_request(session.id, "Which date?", {"query": "x"})
    app = AahApp(registry, db, data=shared_data, annotator="tess")
    async with app.run_test(size=(100, 40)) as pilot:
        await open_first_queued(pilot, app)

        def shown() -> None:
            text = str(app.screen.query_one("#ask-guidelines", Static).render())
            assert text.startswith("Guidelines for this run:\n# Be brief")
            assert "\x1b" not in text and "\x07" not in text  # the control sequence is gone

        await settled(pilot, shown)
