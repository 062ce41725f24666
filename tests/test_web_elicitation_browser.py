"""A real browser (Debian's chromium, driven by Playwright) answers an MCP server's question.

A runner elsewhere left an elicitation in the queue (as ``QueueHuman`` does);
the page opens it by itself as a form built from the server's schema, with
the server's name as the asker, or as a link with a Done button. Content
that does not fit the form is refused with one line and never stored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser, Page, expect  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.desk import ElicitationRequest, ElicitationResult, read_stored_answer  # noqa: E402
from aah.store.sessions import SessionStore  # noqa: E402

TIMEOUT_MS = 15_000
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name"},
        "nights": {"type": "integer", "minimum": 1, "maximum": 14},
        "breakfast": {"type": "boolean"},
        "room": {"type": "string", "enum": ["single", "double"], "enumNames": ["One", "Two"]},
    },
    "required": ["name", "nights"],
}

pytestmark = needs_chromium


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    expect.set_options(timeout=TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)


def queued(db: Path, params: dict[str, Any]) -> tuple[str, ElicitationRequest]:
    request = ElicitationRequest.from_params("hotel<b>", params)
    store = SessionStore(db)
    session = store.open_session("Book a room in Lyon", setting="underspecified")
    store.set_status(session.id, "waiting")
    record = store.humans.create_human_request(
        session.id, request.message, request.model_dump(mode="json"), kind="elicitation"
    )
    store.close()
    return record.id, request


def stored(db: Path, request_id: str, request: ElicitationRequest) -> ElicitationResult | None:
    store = SessionStore(db)
    record = store.humans.get_human_request(request_id)
    store.close()
    assert record is not None
    if record.status == "pending":
        return None
    return read_stored_answer(request, record.answer, declined=record.status == "declined")


def settled(db: Path, request_id: str, request: ElicitationRequest) -> ElicitationResult:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        result = stored(db, request_id, request)
        if result is not None:
            return result
        time.sleep(0.05)
    raise AssertionError("the answer never reached the store")


def signed_in(browser: Browser, url: str, name: str) -> Page:
    page = browser.new_context(viewport={"width": 1180, "height": 980}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(url) else route.abort(),
    )
    page.goto(url)
    page.locator("#sign-in-name textarea, #sign-in-name input").first.focus()
    page.keyboard.type(name)
    page.keyboard.press("Enter")
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")
    return page


def test_a_form_from_the_schema_is_checked_then_sent(
    browser: Browser, tmp_path: Path, screenshots_dir: Path
) -> None:
    db = tmp_path / "s.db"
    request_id, request = queued(db, {"message": "Who stays <i>?</i>", "requestedSchema": FORM})
    with serve_app(db) as url:
        page = signed_in(browser, url, "kim")
        form = page.locator("#elicit-form")
        expect(form).to_be_visible()
        # The server's name and message are text, never markup; the call's chrome is hidden.
        expect(page.locator("#elicit-asker")).to_contain_text("MCP server hotel<b> asks")
        expect(page.locator("#elicit-message")).to_contain_text("Who stays <i>?</i>")
        expect(page.locator("#approval-title")).to_be_hidden()
        expect(page.locator("#answer-text")).to_be_hidden()
        expect(page.locator('#elicit-form [data-field="room"] option')).to_have_count(3)
        page.locator('[data-field="name"]').fill("Ada")
        page.locator('[data-field="nights"]').fill("99")
        page.locator("#elicit-accept").click()
        expect(page.locator("#answer-status")).to_contain_text("nights: at most 14, not 99")
        # A number of 400 digits is refused in one line, the form kept (no OverflowError).
        page.locator('[data-field="nights"]').fill("4" * 400)
        page.locator("#elicit-accept").click()
        expect(page.locator("#answer-status")).to_contain_text(
            "nights: at most 300 digits, not 400"
        )
        expect(form).to_be_visible()
        assert stored(db, request_id, request) is None
        page.locator('[data-field="nights"]').fill("3")
        page.locator('[data-field="breakfast"]').check()
        page.locator('[data-field="room"]').select_option("double")
        page.screenshot(path=str(screenshots_dir / "web-elicitation.png"), full_page=True)
        page.locator("#elicit-accept").click()
        result = settled(db, request_id, request)
        expect(page.locator("#answer-status")).to_contain_text("Accepted: sent to MCP server")
    assert result.action == "accept"
    assert result.content == {"name": "Ada", "nights": 3, "breakfast": True, "room": "double"}


@pytest.mark.parametrize(
    ("button", "action"),
    [("#elicit-accept", "accept"), ("#elicit-decline", "decline"), ("#elicit-cancel", "cancel")],
)
def test_a_link_is_shown_not_opened_and_done_decline_cancel_are_sent(
    browser: Browser, tmp_path: Path, button: str, action: str
) -> None:
    db = tmp_path / "s.db"
    link = "https://auth.example.org/sign-in?state=1"
    request_id, request = queued(db, {"mode": "url", "message": "Sign in", "url": link})
    with serve_app(db) as url:
        page = signed_in(browser, url, "kim")
        # The address is text to copy, never a link a stray tap opens; its host is named.
        expect(page.locator("#elicit-url")).to_have_text(link)
        expect(page.locator("#elicit-link")).to_contain_text("auth.example.org")
        expect(page.locator("#elicit-form a")).to_have_count(0)
        expect(page.locator("#elicit-accept")).to_have_text("Done (Ctrl+Enter)")
        assert len(page.context.pages) == 1  # nothing opened by itself
        page.locator(button).click()
        result = settled(db, request_id, request)
    assert result.action == action
