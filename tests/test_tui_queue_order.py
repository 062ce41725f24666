"""The terminal app's queue: the same order, counts and kinds as every face, at 80x24 (issue 46).

Approvals and MCP forms come first (an agent is blocked on each), the list's
title counts each kind by name, a form's row names the server that asks, and
F1 on a dialog lists the dialog's own keys before the answer box's generic ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList
from textual.widgets._key_panel import BindingsTable

from aah.desk import ElicitationRequest
from aah.store.sessions import SessionStore
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry
from aah.ui.tui.app import AahApp
from aah.ui.tui.screens import AskHumanScreen, PendingQuestionsScreen

SIZE = (80, 24)


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    opened = Registry(path)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def no_configured_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AAH_BASE_URL", "AAH_MODEL", "AAH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def app(registry: Registry, shared_data: Path, tmp_path: Path) -> AahApp:
    return AahApp(registry, tmp_path / "sessions.db", data=shared_data, annotator="tess")


def seeded(db: Path) -> dict[str, str]:
    """Two questions, then an approval and a server's form, left waiting by runners elsewhere."""
    ids: dict[str, str] = {}
    with SessionStore(db) as store:
        for name in ("first", "second"):
            session = store.open_session("Convert 20 EUR to USD", task_id="t1")
            store.set_status(session.id, "waiting")
            ids[name] = store.humans.create_human_request(
                session.id, f"The {name} question?", {"query": "x"}
            ).id
        session = store.open_session("Book a room")  # typed: no setting, no task
        store.set_status(session.id, "waiting")
        call = {"tool": "local__book", "method": "POST", "arguments": {"rooms": 1}}
        ids["approval"] = store.humans.create_human_request(
            session.id, "Approve this call? POST local__book", {"approval": call}, kind="approval"
        ).id
        form = ElicitationRequest.from_params(
            "hotel-server",
            {"message": "Confirm by link", "mode": "url", "url": "https://example.org/c"},
        )
        session = store.open_session("Book a room in Lyon")
        store.set_status(session.id, "waiting")
        ids["form"] = store.humans.create_human_request(
            session.id, form.message, form.model_dump(mode="json"), kind="elicitation"
        ).id
    return ids


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app never reached the expected state")


async def test_the_list_puts_blocked_agents_first_counts_kinds_and_names_the_server(
    app: AahApp,
) -> None:
    ids = seeded(app.db)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.stats.waiting_elsewhere == 4)
        assert app.stats.elsewhere_kinds == "1 approval, 1 form, 2 questions"
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        title = str(app.screen.query_one("#pending-title").render())
        assert title == "Waiting for a person: 1 approval, 1 form, 2 questions"
        options = app.screen.query_one(OptionList)
        rows = [options.get_option_at_index(n) for n in range(options.option_count)]
        assert [row.id for row in rows] == [
            ids["approval"],
            ids["form"],
            ids["first"],
            ids["second"],
        ]
        labels = [str(row.prompt) for row in rows]
        assert "approval" in labels[0] and "form server hotel-server" in labels[1]
        assert not any("session " in label for label in labels[1:])


async def test_f1_on_a_question_lists_the_dialogs_own_keys_first(app: AahApp) -> None:
    with SessionStore(app.db) as store:
        session = store.open_session("Convert 20 EUR to USD", task_id="t1")
        store.humans.create_human_request(session.id, "Which date?", {"query": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, AskHumanScreen))
        await wait_for(pilot, lambda: getattr(app.focused, "id", None) == "ask-answer")
        await pilot.press("f1")
        await wait_for(pilot, lambda: bool(app.screen.query(BindingsTable)))
        table = app.screen.query_one(BindingsTable).render_bindings_table()
        described = [str(cell) for cell in table.columns[1]._cells]
        own = described.index("Answer later")
        generic = described.index("Move cursor left")  # the answer box's
        assert own < generic and described.index("Decline") < generic
