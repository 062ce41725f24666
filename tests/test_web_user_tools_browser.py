"""A real browser (Debian's chromium, driven by Playwright) holds a τ² user's phone at the desk.

A τ² telecom user played by a person (``PersonTau2User`` on the store's queue, as
``--user person`` runs it; the phone's calls recorded here instead of τ²'s environment)
asks its first question. The page shows the phone's tools under the answer box: buttons for
those without arguments, a small form for those with (the network mode's enum a choice).
Pressing one (tapped on a phone's touch screen, clicked on a laptop) makes the call; the
next question opens in its place with the result, and the words typed before the press are
still in the box. A form that does not fit is refused in one line and nothing is called.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser, Locator, Page, expect  # noqa: E402
from tau2_data import domain  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.benchmark.tau2 import load_tau2_tasks  # noqa: E402
from aah.benchmark.tau2.messages import Tau2ToolResult  # noqa: E402
from aah.benchmark.tau2.users import PersonTau2User  # noqa: E402
from aah.runtime import QueueHuman  # noqa: E402
from aah.store.sessions import SessionStore  # noqa: E402

TIMEOUT_MS = 20_000
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
TYPED = "My data has stopped working"

pytestmark = needs_chromium


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    expect.set_options(timeout=TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)


class _User:
    """The τ² user's side of one turn, on a thread: asks through the queue, makes the calls."""

    def __init__(self, db: Path, tau2_wheel: Path) -> None:
        telecom = domain("telecom", tau2_wheel)
        self.store = SessionStore(db)
        session = self.store.open_session("τ²", setting="tau2")
        self.store.set_status(session.id, "waiting")
        self.person = PersonTau2User(
            QueueHuman(self.store, poll_seconds=0.05), telecom, load_tau2_tasks(telecom)[0]
        )
        self.person.bind_session(session.id)
        self.made: list[tuple[str, dict[str, Any]]] = []
        self.said: list[str] = []
        self.thread = threading.Thread(target=lambda: self.said.append(asyncio.run(self._turn())))

    async def _run(self, name: str, arguments: Mapping[str, Any]) -> Tau2ToolResult:
        self.made.append((name, dict(arguments)))
        return Tau2ToolResult(f"u{len(self.made)}", f"{name} done: <b>status</b> {len(self.made)}")

    async def _turn(self) -> str:
        return await self.person.respond(1, "Please turn your mobile data on.", self._run)

    def __enter__(self) -> _User:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.store.humans.pending_human_requests():
            assert time.monotonic() < deadline, "the first question never came"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(timeout=30)
        self.store.close()


def _signed_in(browser: Browser, url: str, viewport: dict[str, int], touch: bool) -> Page:
    context = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(url) else route.abort(),
    )
    page.goto(url)
    page.locator("#sign-in-name textarea, #sign-in-name input").first.fill("kim")
    page.locator("#sign-in-name textarea, #sign-in-name input").first.press("Enter")
    expect(page.locator("#signed-in")).to_contain_text("Signed in as kim")
    return page


def _press(button: Locator, touch: bool) -> None:
    button.scroll_into_view_if_needed()
    if touch:
        button.tap()
    else:
        button.click()


@pytest.mark.parametrize(
    ("viewport", "touch"), [(PHONE, True), (LAPTOP, False)], ids=["phone", "laptop"]
)
def test_the_phones_tools_are_buttons_and_forms_and_the_typed_words_stay(
    browser: Browser,
    tau2_wheel: Path,
    tmp_path: Path,
    screenshots_dir: Path,
    viewport: dict[str, int],
    touch: bool,
) -> None:
    db = tmp_path / "s.db"
    with _User(db, tau2_wheel) as user, serve_app(db) as url:
        page = _signed_in(browser, url, viewport, touch)
        answer = page.locator("#answer-text textarea")
        expect(answer).to_have_attribute(
            "data-aah-opened", user.store.humans.pending_human_requests()[0].id
        )
        phone = page.locator("#phone")
        expect(phone.locator('[data-phone-tool="toggle_data"]')).to_be_visible()
        # An enum is a choice of its options; a tool with arguments is a small form.
        mode = phone.locator('[data-phone-form="set_network_mode_preference"] select')
        expect(mode.locator("option")).to_have_count(5)  # blank, then the four modes
        answer.fill(TYPED)
        _press(phone.locator('[data-phone-tool="toggle_data"]'), touch)
        status = page.locator("#answer-status")
        expect(status).to_contain_text("Your tool toggle_data gave")
        expect(status).to_contain_text("toggle_data done: <b>status</b> 1")  # text, not markup
        expect(page.locator("#phone-results li")).to_have_count(1)
        expect(answer).to_have_value(TYPED)  # the words typed before the press, back in the box
        # A form that does not fit: one line, under the tools too; nothing called, words kept.
        answer.fill(f"{TYPED}, and")
        _press(phone.locator('[data-phone-form="set_network_mode_preference"] button'), touch)
        expect(page.locator("#phone-note")).to_contain_text("Not called: Mode is required")
        assert user.made == [("toggle_data", {})]
        expect(answer).to_have_value(f"{TYPED}, and")
        mode.select_option("4g_only")
        _press(phone.locator('[data-phone-form="set_network_mode_preference"] button'), touch)
        expect(status).to_contain_text("Your tool set_network_mode_preference gave")
        expect(page.locator("#phone-results li")).to_have_count(2)
        expect(answer).to_have_value(f"{TYPED}, and")
        name = "phone" if touch else "laptop"
        page.screenshot(path=str(screenshots_dir / f"web-user-tools-{name}.png"), full_page=True)
        answer.fill(f"{TYPED}, and now it works.")
        _press(page.locator("#answer-send"), touch)
        expect(status).to_contain_text("Answered")
        user.thread.join(timeout=20)
    assert user.made == [("toggle_data", {}), ("set_network_mode_preference", {"mode": "4g_only"})]
    assert user.said == [f"{TYPED}, and now it works."]
