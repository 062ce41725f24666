"""A notification's links, end to end: Apprise to a sink on 127.0.0.1, then a phone decides.

The notifier sends through Apprise (its ``json://`` target) to a webhook
receiver in this test; the links are taken out of the message it received
and opened in real Chromium at 390x844 with touch, where each item is
decided by taps (and typing where words are needed); the store is checked
after each. The links are a group's, so the page asks a name.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")
pytest.importorskip("apprise", reason="notifications need the notify extra")

from playwright.sync_api import Browser, Page, expect  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.desk import ElicitationRequest, read_stored_answer  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.ui.web.auth import WebAuth  # noqa: E402
from aah.ui.web.decision_link import DecisionLinks, link_key  # noqa: E402
from aah.ui.web.notify import NotifySettings, QueueNotifier, apprise_sender  # noqa: E402

PHONE = {"width": 390, "height": 844}
# "- a call “Approve this call?”: http://127.0.0.1:PORT/aah/decide/TOKEN"
LINE = re.compile(
    r"- (a question|a call|a form) \u201c.*\u201d: (http://127\.0\.0\.1:\d+/aah/decide/\S+)"
)
KINDS = {"a question": "question", "a call": "approval", "a form": "elicitation"}

pytestmark = needs_chromium


class Sink:
    """A webhook on 127.0.0.1 that keeps every JSON body Apprise posts to it."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sink() -> Iterator[Sink]:
    found = Sink()
    yield found
    found.close()


def _seed_items(db: Path) -> dict[str, str]:
    question = seed_request(db, "Which city do you mean?").id
    store = SessionStore(db)
    session = store.open_session("Book two rooms.", setting="perfect")
    store.set_status(session.id, "waiting")
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "http://127.0.0.1:9/book",
        "arguments": {"rooms": 2},
        "parameters": [{"name": "rooms", "type": "integer", "required": True}],
    }
    approval = store.humans.create_human_request(
        session.id, "Approve this call?", {"approval": call}, kind="approval"
    ).id
    form = ElicitationRequest.from_params(
        "hotel",
        {
            "message": "How many nights?",
            "requestedSchema": {
                "type": "object",
                "properties": {"nights": {"type": "integer", "minimum": 1, "maximum": 14}},
                "required": ["nights"],
            },
        },
    )
    elicitation = store.humans.create_human_request(
        session.id, form.message, form.model_dump(mode="json"), kind="elicitation"
    ).id
    store.close()
    return {"question": question, "approval": approval, "elicitation": elicitation}


def form_request(context: dict[str, Any]) -> ElicitationRequest:
    return ElicitationRequest.model_validate(context)


def _phone(browser: Browser, link: str) -> Page:
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)  # type: ignore[arg-type]
    page = context.new_page()
    page.goto(link)
    # One column a phone holds: nothing wider than the screen, every button big enough.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for box in page.locator("button:visible").evaluate_all(
        "els => els.map(el => el.getBoundingClientRect().height)"
    ):
        assert box >= 44
    return page


def test_links_sent_through_apprise_decide_each_item_by_touch_on_a_phone(
    tmp_path: Path, sink: Sink, browser: Browser
) -> None:
    db = tmp_path / "s.db"
    items = _seed_items(db)
    auth = WebAuth()
    with serve_app(db, auth=auth) as url:
        store = SessionStore(db)
        key = link_key(db.parent, auth)
        assert key is not None
        settings = NotifySettings(
            urls=(sink.url,), queue_url=url, after_seconds=1, links=3, link_minutes=30
        )
        notifier = QueueNotifier(
            store, settings, apprise_sender(settings.urls), links=DecisionLinks(key, store)
        )
        assert notifier.check(datetime.now(UTC) + timedelta(minutes=5))
        (message,) = sink.posts
        lines = LINE.findall(message["message"])
        assert len(lines) == 3 and "each link works once, for 30 min" in message["message"]
        by_kind = {KINDS[word]: link for word, link in lines}
        for kind, link in by_kind.items():
            assert items[kind] not in link  # the item is named only inside the signed token

        page = _phone(browser, by_kind["approval"])
        page.locator("#decide-name").fill("Grace")
        page.locator("#decide-reject").tap()
        expect(page.locator("#decide-reject")).to_have_attribute("aria-pressed", "true")
        page.locator("#decide-reason").fill("not two rooms")
        page.locator("#decide-send-reject").tap()
        expect(page.locator("#decide-line")).to_contain_text("Rejected: POST local__book")
        call = store.humans.get_human_request(items["approval"])
        assert call is not None
        assert (call.decision, call.reason, call.answered_by) == (
            "reject",
            "not two rooms",
            "grace",
        )

        page = _phone(browser, by_kind["question"])
        page.locator("#decide-name").fill("grace")
        page.locator("#decide-answer").fill("Porto")
        page.locator("#decide-send").tap()
        expect(page.locator("#decide-line")).to_contain_text("Answer sent")
        asked = store.humans.get_human_request(items["question"])
        assert asked is not None and (asked.answer, asked.answered_by) == ("Porto", "grace")

        page = _phone(browser, by_kind["elicitation"])
        page.locator("#decide-name").fill("grace")
        page.locator("#elicit-0").fill("40")
        page.locator("#decide-accept").tap()
        expect(page.locator("#decide-problem")).to_have_text("Nights: at most 14, not 40.")
        expect(page.locator("#elicit-0")).to_have_value("40")  # what was typed comes back
        page.locator("#elicit-0").fill("3")
        page.locator("#decide-accept").tap()
        expect(page.locator("#decide-line")).to_contain_text("Accepted")
        form = store.humans.get_human_request(items["elicitation"])
        assert form is not None and form.answered_by == "grace"
        result = read_stored_answer(form_request(form.context), form.answer, declined=False)
        assert (result.action, result.content) == ("accept", {"nights": 3})

        page.goto(by_kind["approval"])  # the used link, opened again
        expect(page.locator("#decide-line")).to_have_text(
            "This link was already used: each link decides once."
        )
