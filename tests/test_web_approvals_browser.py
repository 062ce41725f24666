"""A real browser (Debian's chromium, driven by Playwright) decides on tool calls.

A runner process's booking call waits for approval in the queue; the page
shows it as a form made from the endpoint's parameters and the annotator
decides by keyboard alone: a approve, e edit (Ctrl+Enter sends), r reject
(a reason, Ctrl+Enter), Esc back. Each test counts the keys a decision
costs and prints the time from the decision to the call reaching the tool
server.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from approval_runner import BOOK_ARGUMENTS, book_script, start_approval_runner  # noqa: E402
from http_server import LocalServer  # noqa: E402
from playwright.sync_api import Browser, Page, expect  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.desk import decision_of  # noqa: E402
from aah.events import ApprovalDecidedEvent, ToolCallEvent  # noqa: E402
from aah.store.sessions import HumanRequestRecord, SessionStore  # noqa: E402
from aah.testing.fake_llm import FakeLLMServer  # noqa: E402
from aah.tools import ParameterSpec  # noqa: E402

TIMEOUT_MS = 15_000
COUNT_CLICKS = (
    "window.aahClicks = 0; document.addEventListener('click',"
    " (event) => { if (event.isTrusted) window.aahClicks += 1; }, true);"
)

pytestmark = [
    needs_chromium,
    pytest.mark.usefixtures("allow_private_tool_hosts"),
]


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    """A loaded machine can take seconds over a sign-in: wait as long as an action does."""
    expect.set_options(timeout=TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)  # Playwright's default, for other modules


class TimedServer(LocalServer):
    """The loopback tool server, noting when each call arrives (this process's clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def handle(self, handler: Any) -> None:
        self.arrivals.append(time.monotonic())
        super().handle(handler)


class Keys:
    """The keyboard of a page, counting every keystroke."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.count = 0

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)
        self.count += len(text)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.count += 1


def _page(browser: Browser, url: str) -> Page:
    context = browser.new_context(viewport={"width": 1180, "height": 980})
    context.add_init_script(COUNT_CLICKS)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(url) else route.abort(),
    )
    page.goto(url)
    return page


def _signed_in(page: Page, name: str) -> Keys:
    keys = Keys(page)
    page.locator("#sign-in-name textarea, #sign-in-name input").first.focus()
    keys.type(name)
    keys.press("Enter")
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")
    return keys


def _call_ready(page: Page, request_id: str) -> None:
    """Wait until the call of ``request_id`` shows, the page script on it, keys live."""
    page.wait_for_function(
        "(id) => { const call = document.getElementById('approval-call');"
        " return call !== null && call.dataset.aahOpened === id"
        " && document.activeElement === call; }",
        arg=request_id,
    )


def _field(page: Page, name: str) -> Any:
    return page.locator(f'#approval-fields [data-arg="{name}"]').last


def _approval_request(db: Path, seconds: float = 30) -> HumanRequestRecord:
    store = SessionStore(db)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for request in store.humans.pending_human_requests():
            if request.kind == "approval":
                return request
        time.sleep(0.05)
    raise AssertionError("the runner asked for no approval in time")


def _decided(db: Path, session_id: str) -> ApprovalDecidedEvent:
    (decided,) = [
        e for e in SessionStore(db).events(session_id) if isinstance(e, ApprovalDecidedEvent)
    ]
    return decided


def _ran(db: Path, session_id: str) -> list[dict[str, Any]]:
    events = SessionStore(db).events(session_id)
    return [e.arguments for e in events if isinstance(e, ToolCallEvent)]


def _wait_for_call(server: TimedServer, seconds: float = 20) -> float:
    deadline = time.monotonic() + seconds
    while not server.arrivals and time.monotonic() < deadline:
        time.sleep(0.005)
    assert server.arrivals, "the approved call never reached the tool server"
    return server.arrivals[0]


def _runner_output(runner: Any) -> str:
    output, errors = runner.communicate(timeout=30)
    assert runner.returncode == 0, errors[-2000:]
    return str(output).strip()


def test_approve_is_one_key_and_the_call_runs_at_once(
    browser: Browser, tmp_path: Path, screenshots_dir: Path
) -> None:
    db = tmp_path / "s.db"
    with (
        TimedServer() as tools,
        FakeLLMServer(book_script()) as llm,
        serve_app(db) as url,
    ):
        runner = start_approval_runner(db, llm.base_url, tools.url("/echo/book"))
        try:
            request = _approval_request(db)
            page = _page(browser, url)
            keys = _signed_in(page, "kim")
            _call_ready(page, request.id)
            # The queue marks its kind; the call is a form of the endpoint's parameters.
            expect(page.locator("#queue-table")).to_contain_text("approval")
            expect(page.locator("#approval-form")).to_contain_text("local__book")
            expect(_field(page, "rooms")).to_have_value("2")
            expect(_field(page, "rooms")).to_be_disabled()
            expect(_field(page, "room_type")).to_have_value('"double"')
            assert _field(page, "room_type").locator("option").count() == 4  # 3 and "not given"
            required = page.locator("#approval-fields .aah-required")
            expect(required).to_have_count(1)
            expect(page.locator('#approval-fields [data-arg="rooms"]').first).to_contain_text(
                "required"
            )
            # The model's text is text on the page, never markup.
            expect(_field(page, "guest")).to_have_value(BOOK_ARGUMENTS["guest"])
            assert page.locator("#approval-form b", has_text="Lovelace").count() == 0
            expect(page.locator("#answer-text")).to_be_hidden()
            page.screenshot(path=str(screenshots_dir / "web-approval.png"), full_page=True)
            before = keys.count
            decided_at = time.monotonic()
            keys.press("a")
            arrived = _wait_for_call(tools)
            expect(page.locator("#answer-status")).to_contain_text("Approved")
            assert keys.count - before == 1
            assert page.evaluate("window.aahClicks") == 0
            output = _runner_output(runner)
        finally:
            if runner.poll() is None:
                runner.kill()
    print(f"\napprove: 1 key; decision to call running: {(arrived - decided_at) * 1000:.0f} ms")
    assert output == "finished|Done with the booking."
    decided = _decided(db, request.session_id)
    assert (decided.decision, decided.decided_by, decided.timed_out) == ("approve", "kim", False)
    assert _ran(db, request.session_id) == [BOOK_ARGUMENTS]
    assert tools.count("/echo") == 1


def test_an_invalid_edit_is_refused_in_the_page_and_a_valid_one_runs(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with (
        TimedServer() as tools,
        FakeLLMServer(book_script()) as llm,
        serve_app(db) as url,
    ):
        runner = start_approval_runner(db, llm.base_url, tools.url("/echo/book"))
        try:
            request = _approval_request(db)
            page = _page(browser, url)
            keys = _signed_in(page, "kim")
            _call_ready(page, request.id)
            before = keys.count
            keys.press("e")
            expect(_field(page, "rooms")).to_be_focused()
            expect(_field(page, "rooms")).to_be_enabled()
            keys.press("Control+a")
            keys.type("two")
            keys.press("Control+Enter")
            expect(page.locator("#answer-status")).to_have_text(
                "Refused, not sent: rooms: a whole number, e.g. 3, not “two”."
            )
            expect(page.locator("#approval-note")).to_contain_text("rooms: a whole number")
            # Nothing reached the store; the edit stays open as typed.
            assert SessionStore(db).humans.human_answers(request.id) == []
            expect(_field(page, "rooms")).to_have_value("two")
            expect(_field(page, "rooms")).to_be_focused()
            # A letter in a field is typing, never a decision.
            keys.press("Control+a")
            keys.type("3")
            keys.press("Tab")
            keys.type("si")  # the enum, chosen by its first letters: "single"
            expect(_field(page, "room_type")).to_have_value('"single"')
            decided_at = time.monotonic()
            keys.press("Control+Enter")
            arrived = _wait_for_call(tools)
            expect(page.locator("#answer-status")).to_contain_text(
                "Edited local__book: it runs with"
            )
            spent = keys.count - before
            assert page.evaluate("window.aahClicks") == 0
            output = _runner_output(runner)
        finally:
            if runner.poll() is None:
                runner.kill()
    print(
        f"\nedit (an invalid value, then a valid one): {spent} keys;"
        f" decision to call running: {(arrived - decided_at) * 1000:.0f} ms"
    )
    assert output == "finished|Done with the booking."
    edited = {**BOOK_ARGUMENTS, "rooms": 3, "room_type": "single"}
    decided = _decided(db, request.session_id)
    assert (decided.decision, decided.arguments) == ("edit", edited)
    assert _ran(db, request.session_id) == [edited]
    assert tools.count("/echo") == 1


def test_reject_with_a_reason_and_a_stray_esc_keeps_the_reason(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with (
        TimedServer() as tools,
        FakeLLMServer(book_script()) as llm,
        serve_app(db) as url,
    ):
        runner = start_approval_runner(db, llm.base_url, tools.url("/echo/book"))
        try:
            request = _approval_request(db)
            page = _page(browser, url)
            keys = _signed_in(page, "kim")
            _call_ready(page, request.id)
            before = keys.count
            keys.press("r")
            reason = page.locator("#approval-reason")
            expect(reason).to_be_focused()
            keys.type("Too expensive")
            keys.press("Escape")  # a stray Esc: asks first, drops nothing
            expect(page.locator("#approval-note")).to_contain_text("Press Esc again")
            expect(reason).to_have_value("Too expensive")
            keys.press("Control+Enter")
            expect(page.locator("#answer-status")).to_contain_text("Rejected")
            spent = keys.count - before
            output = _runner_output(runner)
        finally:
            if runner.poll() is None:
                runner.kill()
    print(f"\nreject with a 13-letter reason (and a stray Esc): {spent} keys")
    assert output == "finished|Done with the booking."
    decided = _decided(db, request.session_id)
    assert (decided.decision, decided.reason) == ("reject", "Too expensive")
    assert tools.count("/echo") == 0 and _ran(db, request.session_id) == []
    assert spent == 1 + len("Too expensive") + 2


def test_respond_gives_the_result_and_the_call_never_runs(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with (
        TimedServer() as tools,
        FakeLLMServer(book_script()) as llm,
        serve_app(db) as url,
    ):
        runner = start_approval_runner(db, llm.base_url, tools.url("/echo/book"))
        try:
            request = _approval_request(db)
            page = _page(browser, url)
            keys = _signed_in(page, "kim")
            _call_ready(page, request.id)
            before = keys.count
            keys.press("s")
            box = page.locator("#approval-reason")
            expect(box).to_be_focused()
            expect(page.locator("#approval-reason-label")).to_contain_text("The result")
            keys.press("Control+Enter")  # nothing typed: not sent
            expect(page.locator("#approval-note")).to_contain_text("Type the result")
            keys.type("Booked: room 12")
            keys.press("Control+Enter")
            expect(page.locator("#answer-status")).to_contain_text("Responded in place of")
            spent = keys.count - before
            output = _runner_output(runner)
        finally:
            if runner.poll() is None:
                runner.kill()
    assert output == "finished|Done with the booking."
    decided = _decided(db, request.session_id)
    assert (decided.decision, decided.response, decided.outcome) == (
        "respond",
        "Booked: room 12",
        "responded",
    )
    assert tools.count("/echo") == 0 and _ran(db, request.session_id) == []
    assert spent == 1 + 1 + len("Booked: room 12") + 1


def test_the_deadline_fallback_decides_and_a_late_decision_is_not_used(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with (
        TimedServer() as tools,
        FakeLLMServer(book_script()) as llm,
        serve_app(db) as url,
    ):
        # Signed in first: the call opens by itself as it arrives, its deadline running.
        page = _page(browser, url)
        _signed_in(page, "kim")
        runner = start_approval_runner(db, llm.base_url, tools.url("/echo/book"), deadline=8)
        try:
            request = _approval_request(db)
            _call_ready(page, request.id)
            expect(page.locator("#queue-table")).to_contain_text("reject in")
            output = _runner_output(runner)  # nobody decides: the deadline does
            page.keyboard.press("a")
            # The key was taken as a decision (the page says so), then refused as too late:
            # by the send's reply, or by the page's heartbeat when its reply lands last
            # (both run at once; CI saw the heartbeat's words win).
            expect(page.locator("#approval-note")).to_have_text("Sending…")
            expect(page.locator("#answer-status")).to_contain_text(
                re.compile(r"your decision was not used|An answer to it would not be used"),
                timeout=TIMEOUT_MS,
            )
        finally:
            if runner.poll() is None:
                runner.kill()
    assert output == "finished|Done with the booking."
    decided = _decided(db, request.session_id)
    assert (decided.decision, decided.timed_out, decided.decided_by) == (
        "reject",
        True,
        "deadline-fallback",
    )
    assert tools.count("/echo") == 0
    assert SessionStore(db).humans.human_answers(request.id) == []


def _seed_approval(db: Path) -> HumanRequestRecord:
    """A waiting session whose booking call waits for approval, as ``QueueApprover`` leaves it."""
    store = SessionStore(db)
    session = store.open_session("Book two rooms.", setting="perfect")
    store.set_status(session.id, "waiting")
    rooms = ParameterSpec(name="rooms", type="integer", required=True)
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "http://127.0.0.1:9/book",
        "arguments": {"rooms": 2},
        "parameters": [rooms.model_dump(mode="json")],
        "rule": "method POST",
    }
    question = f"Approve this call? POST local__book {json.dumps(call['arguments'])}"
    context = {"query": "Book two rooms.", "approval": call}
    return store.humans.create_human_request(session.id, question, context, kind="approval")


def test_a_call_one_annotator_holds_is_not_offered_to_another(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    approval = _seed_approval(db)
    question = seed_request(db, "Which day?")
    with serve_app(db, lease_seconds=6) as url:
        alice, bob = _page(browser, url), _page(browser, url)
        _signed_in(alice, "alice")
        _call_ready(alice, approval.id)
        _signed_in(bob, "bob")
        expect(bob.locator("#answer-question textarea")).to_have_value("Which day?")
        expect(bob.locator("#queue-table")).to_contain_text("taken by alice")
        picker = bob.locator("#queue-pick input")
        picker.click()
        expect(bob.locator("[role=listbox]")).not_to_contain_text("local__book")
        bob.keyboard.press("Escape")
        alice.keyboard.press("a")
        expect(alice.locator("#answer-status")).to_contain_text("Approved")
    stored = SessionStore(db).humans.get_human_request(approval.id)
    assert stored is not None and stored.answered_by == "alice"
    assert decision_of(stored).decision == "approve"
    assert SessionStore(db).humans.human_answers(question.id) == []


def test_a_reload_keeps_an_edit_open_as_typed(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    approval = _seed_approval(db)
    with serve_app(db) as url:
        page = _page(browser, url)
        _signed_in(page, "alice")
        _call_ready(page, approval.id)
        page.keyboard.press("e")
        page.keyboard.press("Control+a")
        page.keyboard.type("5")
        page.reload()
        # Her claim brings the call back; the browser kept the edit, open for Ctrl+Enter.
        expect(_field(page, "rooms")).to_have_value("5")
        expect(_field(page, "rooms")).to_be_focused()
        page.keyboard.press("Control+Enter")
        expect(page.locator("#answer-status")).to_contain_text("Edited local__book: it runs with")
        page.wait_for_function(
            "(id) => localStorage.getItem('aah-draft:' + id) === null", arg=approval.id
        )
    stored = SessionStore(db).humans.get_human_request(approval.id)
    assert stored is not None and stored.answered_by == "alice"
    assert decision_of(stored).arguments == {"rooms": 5}
