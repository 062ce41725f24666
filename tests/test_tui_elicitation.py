"""The terminal app's dialog for an MCP server's question, driven headless at 80x24.

A runner elsewhere left an elicitation in the queue (as ``QueueHuman`` does);
the person opens it from the list, fills the form built from its schema (or
says done for a link) and the typed result lands in the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from terminal_app import TMUX, TerminalApp
from textual.pilot import Pilot
from textual.widgets import Input, Label, Select, SelectionList

from aah.desk import ElicitationRequest, ElicitationResult, read_stored_answer
from aah.store.sessions import SessionStore
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry
from aah.ui.tui.app import AahApp
from aah.ui.tui.elicitation_screen import ElicitationScreen
from aah.ui.tui.screens import PendingQuestionsScreen

SIZE = (80, 24)
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name"},
        "nights": {"type": "integer", "minimum": 1, "maximum": 14},
        "room": {"type": "string", "enum": ["single", "double"]},
    },
    "required": ["name", "nights"],
}


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


def queued(
    db: Path, params: dict[str, Any], tools: list[str] | None = None
) -> tuple[str, ElicitationRequest]:
    """An elicitation a runner elsewhere left waiting in ``db``: its id and request."""
    request = ElicitationRequest.from_params("hotel", params)
    if tools is not None:
        request = request.model_copy(update={"tools": tools})
    with SessionStore(db) as store:
        session = store.open_session("Book a room in Lyon", task_id="t1")
        store.set_status(session.id, "waiting")
        record = store.humans.create_human_request(
            session.id, request.message, request.model_dump(mode="json"), kind="elicitation"
        )
    return record.id, request


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app never reached the expected state")


async def open_it(pilot: Pilot[None], app: AahApp) -> ElicitationScreen:
    await pilot.press("p")
    await wait_for(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, ElicitationScreen))
    assert isinstance(app.screen, ElicitationScreen)
    return app.screen


def stored(db: Path, request_id: str, request: ElicitationRequest) -> ElicitationResult | None:
    with SessionStore(db) as store:
        record = store.humans.get_human_request(request_id)
    assert record is not None
    if record.status == "pending":
        return None
    return read_stored_answer(request, record.answer, declined=record.status == "declined")


async def test_a_form_is_filled_checked_and_sent_as_typed_content(app: AahApp) -> None:
    request_id, request = queued(app.db, {"message": "Who stays?", "requestedSchema": FORM})
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_it(pilot, app)
        title = str(screen.query_one("#ask-title", Label).render())
        assert "MCP server hotel asks" in title
        name, nights = screen.query_one("#elicit-0", Input), screen.query_one("#elicit-1", Input)
        name.focus()
        await pilot.press(*"Ada")
        nights.focus()
        await pilot.press(*"99")
        await pilot.press("ctrl+s")
        problem = screen.query_one("#elicit-problem", Label)
        await wait_for(pilot, lambda: "at most 14" in str(problem.render()))
        assert isinstance(app.screen, ElicitationScreen)  # refused: not sent
        nights.value = ""
        await pilot.press(*"3")
        screen.query_one("#elicit-2", Select).value = "double"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: stored(app.db, request_id, request) is not None)
    result = stored(app.db, request_id, request)
    assert result is not None and result.action == "accept"
    assert result.content == {"name": "Ada", "nights": 3, "room": "double"}


@pytest.mark.parametrize(
    ("key", "action"), [("ctrl+s", "accept"), ("ctrl+r", "decline"), ("ctrl+t", "cancel")]
)
async def test_a_link_is_shown_and_done_decline_or_cancel_is_stored(
    app: AahApp, key: str, action: str
) -> None:
    params = {"mode": "url", "message": "Sign in", "url": "https://auth.example.org/x"}
    request_id, request = queued(app.db, params)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_it(pilot, app)
        shown = str(screen.query_one("#elicit-url").render())
        assert "https://auth.example.org/x" in shown and "it leads to auth.example.org" in shown
        assert "does not open it" not in shown  # the web page's words, not a note of its own
        await pilot.press(key)
        await wait_for(pilot, lambda: stored(app.db, request_id, request) is not None)
    result = stored(app.db, request_id, request)
    assert result is not None and result.action == action


async def test_a_form_shows_the_tools_the_agent_was_offered(app: AahApp) -> None:
    offered = ["hotel__book", "hotel__sign_in", "local__weather"]
    queued(app.db, {"message": "Who stays?", "requestedSchema": FORM}, tools=offered)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_it(pilot, app)
        shown = str(screen.query_one("#elicit-tools").render())
        assert shown == "The agent was given: hotel__book, hotel__sign_in, local__weather"


async def test_a_400_digit_number_is_refused_in_one_line_and_the_form_stays(app: AahApp) -> None:
    request_id, request = queued(app.db, {"message": "Who stays?", "requestedSchema": FORM})
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_it(pilot, app)
        screen.query_one("#elicit-0", Input).value = "Ada"
        nights = screen.query_one("#elicit-1", Input)
        problem = screen.query_one("#elicit-problem", Label)
        for typed, said in (("4" * 400, "at most 300 digits, not 400"), ("9" * 5000, "not 5,000")):
            nights.value = typed
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda said=said: said in str(problem.render()))
            assert str(problem.render()).startswith("Not sent: nights: at most 300 digits")
            assert isinstance(app.screen, ElicitationScreen)
        assert stored(app.db, request_id, request) is None
        nights.value = "3"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: stored(app.db, request_id, request) is not None)
    result = stored(app.db, request_id, request)
    assert result is not None and result.content == {"name": "Ada", "nights": 3}


HOSTILE_TITLES = {
    "type": "object",
    "properties": {
        "room": {
            "type": "string",
            "title": "[/] [link=https://e.org]Room\x1b[2J",
            "enum": ["single", "double"],
            "enumNames": ["[/]oops", "[bold red]Double\x07"],
        },
        "extras": {
            "type": "array",
            "title": "\u202eExtras\nplease",
            "items": {
                "anyOf": [{"const": "a", "title": "[/]A"}, {"const": "b", "title": "\x1b[31mB"}]
            },
        },
    },
}


async def test_titles_of_markup_and_escapes_are_shown_as_text_and_the_form_works(
    app: AahApp,
) -> None:
    params = {"message": "Pick \x1b[8m[/]", "requestedSchema": HOSTILE_TITLES}
    request_id, request = queued(app.db, params)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_it(pilot, app)
        labels = [str(label.render()) for label in screen.query(".elicit-label").results(Label)]
        assert labels == ["[/] [link=https://e.org]Room", "Extras please"]
        screen.query_one("#elicit-0", Select).value = "double"
        screen.query_one("#elicit-1", SelectionList).select("b")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: stored(app.db, request_id, request) is not None)
    result = stored(app.db, request_id, request)
    assert result is not None and result.content == {"room": "double", "extras": ["b"]}


# --- in a real terminal -------------------------------------------------------


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_the_dialog_fits_an_80x24_terminal_and_sends_by_keys(
    shared_registry: Path, shared_data: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    request_id, request = queued(db, {"message": "Who stays?", "requestedSchema": FORM})
    env = {
        "AAH_REGISTRY": str(shared_registry),
        "AAH_DB": str(db),
        "AAH_BASE_URL": "",
        "AAH_MODEL": "",
    }

    def cursor_row() -> int:
        return int(term.tmux("display", "-p", "#{cursor_y}").strip() or -1)

    with TerminalApp(tmp_path, env, f"--data {shared_data}", name="aah-elicit") as term:
        term.wait_until(lambda text: "q Quit" in text)
        term.tmux("send-keys", "p")
        term.wait_until(lambda text: "Who stays?" in text)
        term.tmux("send-keys", "Enter")
        shown = term.wait_until(lambda text: "MCP server hotel asks" in text)
        for words in ("Guest name *", "nights * (1…14)", "room", "ctrl+s accept"):
            assert words in shown, shown
        # Each key once its effect shows, as a person types: not faster than the screen.
        term.tmux("send-keys", "-l", "Ada")
        term.wait_until(lambda text: "Ada" in text)
        term.tmux("send-keys", "Tab")
        # The terminal's cursor is in the focused box: wait for it in the nights box.
        term.wait_until(lambda text: _row_of(text, "nights *") + 2 == cursor_row())
        term.tmux("send-keys", "-l", "4")
        term.wait_until(lambda text: "4" in _box_after(text, "nights *"))
        term.tmux("send-keys", "C-s")
        deadline = time.monotonic() + 30
        while stored(db, request_id, request) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        result = stored(db, request_id, request)
        assert result is not None and result.content == {"name": "Ada", "nights": 4}


def _box_after(screen: str, label: str) -> str:
    """The text of the input box drawn under ``label`` (its three rows)."""
    lines = screen.splitlines()
    at = next((i for i, line in enumerate(lines) if label in line), None)
    return "" if at is None else "\n".join(lines[at + 1 : at + 4])


def _row_of(screen: str, label: str) -> int:
    return next((i for i, line in enumerate(screen.splitlines()) if label in line), -10)
