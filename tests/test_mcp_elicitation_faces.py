"""A real MCP server of each protocol's style asks a person at the terminal app and on the web page.

A session runs in a thread of its own (the agent is the fake model server,
driven over HTTP) with the queue as its human channel. Its tool is one of
tests/mcp_elicit_server.py's, asking mid-call with ``ctx.elicit``
(2025-11-25) or by answering ``input_required`` (2026-07-28); the question
waits in the store until a person answers it from the terminal app (headless,
by keys) or the web page (a real browser), and the server says what it got.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_support import runtime_on

from aah.events import ToolCallEvent
from aah.runtime.humans import QueueHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from test_mcp_elicitation import STYLES, _one_call, target  # noqa: E402

from aah.mcp import open_mcp_tools, parse_server  # noqa: E402

SIZE = (80, 24)


class QueuedSession:
    """One session in a thread of its own, whose questions wait in ``db`` for a person."""

    def __init__(self, db: Path, style: str) -> None:
        self.db = db
        self.style = style
        self.tool: ToolCallEvent | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    def __enter__(self) -> QueuedSession:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(timeout=60)

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # the test reports it
            self.error = exc

    async def _run(self) -> None:
        queue = QueueHuman(SessionStore(self.db), poll_seconds=0.05)
        with (
            open_mcp_tools([parse_server(target(self.style))], http_mode="live") as tools,
            FakeLLMServer(_one_call("hotel__book", {"city": "Lyon"})) as llm,
        ):
            async with runtime_on(
                llm, self.db, human=queue, http_mode="live", executor=tools.executor
            ) as rt:
                request = SessionRequest("Book a room in Lyon.", tools.specs, aah=False)
                outcome = await run_session(request, rt)
                events = rt.store.events(outcome.session_id)
        [self.tool] = [e for e in events if isinstance(e, ToolCallEvent)]

    def pending_id(self, seconds: float = 60) -> str:
        """The id of the server's question once it waits in the store."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with SessionStore(self.db) as store:
                pending = store.humans.pending_human_requests()
            asked = [r for r in pending if r.kind == "elicitation"]
            if asked:
                return asked[0].id
            if self.error is not None:
                raise AssertionError(f"the session failed: {self.error!r}")
            time.sleep(0.05)
        raise AssertionError("no question of the server's reached the queue")

    def what_the_server_got(self) -> dict[str, Any]:
        """The content the server says it received (its tool's result is ``accept {json}``)."""
        self.__exit__()
        if self.error is not None:
            raise AssertionError(f"the session failed: {self.error!r}")
        assert self.tool is not None and self.tool.ok, self.tool
        action, _, content = self.tool.result.partition(" ")
        assert action == "accept", self.tool.result
        got: dict[str, Any] = json.loads(content)
        return got


# --- the terminal app ---------------------------------------------------------------


@pytest.fixture(scope="module")
def registry(shared_registry: Path) -> Iterator[Any]:
    from aah.tools.registry.read import Registry

    opened = Registry(shared_registry)
    yield opened
    opened.close()


@pytest.mark.parametrize("style", STYLES)
async def test_a_person_at_the_terminal_app_answers_a_real_servers_question(
    style: str, registry: Any, shared_data: Path, tmp_path: Path
) -> None:
    from textual.widgets import Input

    from aah.ui.tui.app import AahApp
    from aah.ui.tui.elicitation_screen import ElicitationScreen
    from aah.ui.tui.screens import PendingQuestionsScreen

    db = tmp_path / "s.db"
    with QueuedSession(db, style) as session:
        await asyncio.to_thread(session.pending_id)
        app = AahApp(registry, db, data=shared_data, annotator="tess")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("p")
            await _until(pilot, lambda: isinstance(app.screen, PendingQuestionsScreen))
            await pilot.press("enter")
            await _until(pilot, lambda: isinstance(app.screen, ElicitationScreen))
            screen = app.screen
            screen.query_one("#elicit-0", Input).focus()
            await pilot.press(*"Ada")
            screen.query_one("#elicit-1", Input).focus()
            await pilot.press(*"3")
            await pilot.press("ctrl+s")
            await _until(pilot, lambda: not isinstance(app.screen, ElicitationScreen))
        got = await asyncio.to_thread(session.what_the_server_got)
    assert got["name"] == "Ada" and got["nights"] == 3


async def _until(pilot: Any, condition: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app never reached the expected state")


# --- the web page, in a real browser -------------------------------------------------


@pytest.fixture(scope="module")
def web_browser(browser: Any) -> Any:
    """The browser, where the web app (the ui extra) is installed too."""
    pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
    return browser


@pytest.mark.parametrize("style", STYLES)
def test_a_person_on_the_web_page_answers_a_real_servers_question(
    style: str, web_browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect
    from web_support import serve_app

    db = tmp_path / "s.db"
    with QueuedSession(db, style) as session, serve_app(db) as url:
        session.pending_id()
        page = web_browser.new_context().new_page()
        page.set_default_timeout(15_000)
        page.goto(url)
        page.locator("#sign-in-name textarea, #sign-in-name input").first.focus()
        page.keyboard.type("kim")
        page.keyboard.press("Enter")
        expect(page.locator("#elicit-form")).to_be_visible(timeout=15_000)
        expect(page.locator("#elicit-asker")).to_contain_text("MCP server hotel asks")
        page.locator('[data-field="name"]').fill("Ada")
        page.locator('[data-field="nights"]').fill("3")
        page.locator("#elicit-accept").click()
        got = session.what_the_server_got()
    assert got["name"] == "Ada" and got["nights"] == 3
