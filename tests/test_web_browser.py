"""A real browser (Debian's chromium, driven by Playwright) answers a runner's question.

A runner process asks through the queue; the page, opened in chromium, signs
in, opens the question, answers it, and the session resumes and finishes.
Every request the page makes must stay on 127.0.0.1: the app is offline.
Screenshots for the README are saved where ``screenshots_dir`` says (``make screenshots``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Page, Route, expect, sync_playwright  # noqa: E402
from web_support import (  # noqa: E402
    AGENT_QUESTION,
    ORIGINAL_QUERY,
    serve_app,
    start_runner,
    weather_script,
)

from aah.store.sessions import HumanRequestRecord, SessionStore  # noqa: E402
from aah.testing.fake_llm import FakeLLMServer  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 15_000

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium"
)


def _wait_for_request(db: Path, seconds: float = 20) -> HumanRequestRecord:
    store = SessionStore(db)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pending = store.pending_human_requests()
        if pending:
            return pending[0]
        time.sleep(0.1)
    raise AssertionError("the runner asked no question in time")


def _wait_for_status(db: Path, session_id: str, status: str, seconds: float = 20) -> None:
    store = SessionStore(db)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session = store.get_session(session_id)
        if session is not None and session.status == status:
            return
        time.sleep(0.1)
    raise AssertionError(f"session {session_id} did not reach {status!r} in time")


def _sign_in(page: Page, name: str) -> None:
    page.locator("#sign-in-name textarea, #sign-in-name input").first.fill(name)
    page.locator("#sign-in-button").click()
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")


def _open_first_question(page: Page) -> None:
    page.locator("#queue-pick input").click()
    page.get_by_role("option").filter(has_text="Which").first.click()
    page.locator("#queue-open").click()
    expect(page.locator("#answer-question textarea")).to_have_value(AGENT_QUESTION)


def test_a_question_from_a_runner_is_answered_in_the_browser(
    tmp_path: Path, screenshots_dir: Path
) -> None:
    db = tmp_path / "s.db"
    left_loopback: list[str] = []
    with FakeLLMServer(weather_script()) as llm, serve_app(db) as url:
        runner = start_runner(db, llm.base_url)
        try:
            request = _wait_for_request(db)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1180, "height": 980})
                page.set_default_timeout(TIMEOUT_MS)

                def only_loopback(route: Route) -> None:
                    if route.request.url.startswith(url):
                        route.continue_()
                    else:
                        left_loopback.append(route.request.url)
                        route.abort()

                page.route("**/*", only_loopback)
                page.goto(url)
                _sign_in(page, "alice")
                expect(page.locator("#queue-summary")).to_contain_text("1 question waits")
                expect(page.locator("#queue-table")).to_contain_text(AGENT_QUESTION)
                page.screenshot(path=str(screenshots_dir / "web-queue.png"), full_page=True)

                _open_first_question(page)
                expect(page.get_by_label("You are this user: your full request")).to_have_value(
                    ORIGINAL_QUERY
                )
                # The agent's HTML is text on the page, never markup.
                assert page.locator("b", has_text="city").count() == 0
                page.locator("#answer-text textarea").fill("Porto, in Portugal.")
                page.get_by_label("Yes: a fair question to ask").check()
                page.screenshot(path=str(screenshots_dir / "web-answer.png"), full_page=True)

                page.locator("#answer-send").click()
                expect(page.locator("#answer-status")).to_contain_text("the agent goes on")
                _wait_for_status(db, request.session_id, "finished")
                # The page's own refresh shows the session finished.
                expect(page.locator("#answered-table")).to_contain_text("finished")
                browser.close()
            output, _ = runner.communicate(timeout=20)
        finally:
            if runner.poll() is None:
                runner.kill()
    assert runner.returncode == 0 and output.strip().startswith("finished|Porto")
    stored = SessionStore(db).get_human_request(request.id)
    assert stored is not None and stored.answered_by == "alice"
    assert stored.answer == "Porto, in Portugal."
    assert left_loopback == []
    for name in ("web-queue.png", "web-answer.png"):
        assert (screenshots_dir / name).stat().st_size > 10_000
