"""A real browser (Debian's chromium, driven by Playwright) answers a runner's question.

A runner process asks through the queue; the page, opened in chromium, signs
in, opens the question, answers it, and the session resumes and finishes.
Every request the page makes must stay on 127.0.0.1: the app is offline.
Screenshots for the README are saved where ``screenshots_dir`` says (``make screenshots``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import (  # noqa: E402
    Browser,
    Locator,
    Page,
    Route,
    expect,
)
from web_support import (  # noqa: E402
    AGENT_QUESTION,
    ORIGINAL_QUERY,
    seed_request,
    serve_app,
    start_runner,
    weather_script,
)

from aah.store.sessions import HumanRequestRecord, SessionStore  # noqa: E402
from aah.testing.fake_llm import FakeLLMServer  # noqa: E402
from aah.ui.web.auth import WebAuth  # noqa: E402

TIMEOUT_MS = 15_000
# Counts the clicks a person makes (a script's button.click() is not trusted).
COUNT_CLICKS = (
    "window.aahClicks = 0; document.addEventListener('click',"
    " (event) => { if (event.isTrusted) window.aahClicks += 1; }, true);"
)

pytestmark = needs_chromium


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    """A loaded machine can take seconds over a sign-in: wait as long as an action does."""
    expect.set_options(timeout=TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)  # Playwright's default, for other modules


def _page(browser: Browser, url: str) -> Page:
    """A fresh browser context (its own local storage) on the app, kept on 127.0.0.1."""
    context = browser.new_context(viewport={"width": 1180, "height": 980})
    context.add_init_script(COUNT_CLICKS)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.route("**/*", lambda route: _only_loopback(route, url))
    page.goto(url)
    return page


LEFT_LOOPBACK: list[str] = []


def _only_loopback(route: Route, url: str) -> None:
    if route.request.url.startswith(url):
        route.continue_()
    else:
        LEFT_LOOPBACK.append(route.request.url)
        route.abort()


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


def _wait_for_request(db: Path, seconds: float = 20) -> HumanRequestRecord:
    store = SessionStore(db)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pending = store.humans.pending_human_requests()
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


def _hand_over(db: Path, request_id: str, to: str) -> None:
    """Every claim on ``request_id`` becomes ``to``'s, as if theirs ran out and ``to`` took it."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE claims SET annotator = ? WHERE request_id = ?", [to, request_id])


def _sign_in(page: Page, name: str) -> None:
    page.locator("#sign-in-name textarea, #sign-in-name input").first.fill(name)
    page.locator("#sign-in-button").click()
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")


def _signed_in_by_keyboard(page: Page, name: str) -> Keys:
    """Sign in by typing the name and pressing Enter; the keyboard, counting on."""
    keys = Keys(page)
    page.locator("#sign-in-name textarea, #sign-in-name input").first.focus()
    keys.type(name)
    keys.press("Enter")
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")
    return keys


def _question(page: Page) -> Locator:
    return page.locator("#answer-question textarea")


def _answer_box(page: Page) -> Locator:
    return page.locator("#answer-text textarea")


# True once the page script has put focus (and any draft) into the box for the open question.
_SCRIPT_READY = """() => {
  const answer = document.querySelector('#answer-text textarea');
  const opened = document.querySelector('#answer-request-id textarea, #answer-request-id input');
  return answer !== null && opened !== null && opened.value !== ''
    && answer.dataset.aahOpened === opened.value;
}"""


def _ready(page: Page, question: str) -> None:
    """Wait until ``question`` is open and the focus is in its answer box."""
    expect(_question(page)).to_have_value(question)
    page.wait_for_function(_SCRIPT_READY)
    expect(_answer_box(page)).to_be_focused()


def test_a_question_from_a_runner_is_answered_in_the_browser(
    browser: Browser, tmp_path: Path, screenshots_dir: Path
) -> None:
    db = tmp_path / "s.db"
    LEFT_LOOPBACK.clear()
    # An older question bob holds: the page shows it taken and opens the runner's.
    held = seed_request(db, "Which day do you mean?")
    SessionStore(db).humans.claim_request(held.id, "bob")
    with FakeLLMServer(weather_script()) as llm, serve_app(db) as url:
        runner = start_runner(db, llm.base_url)
        try:
            request = _wait_for_request(db)
            while request.id == held.id:
                request = SessionStore(db).humans.pending_human_requests()[-1]
            page = _page(browser, url)
            _sign_in(page, "alice")
            # Signing in opens the first free question, focus in the answer box.
            _ready(page, AGENT_QUESTION)
            expect(page.locator("#queue-table")).to_contain_text("taken by bob")
            expect(page.locator("#queue-counter")).to_contain_text("0 answered today")
            expect(page.get_by_label("You are this user: your full request")).to_have_value(
                ORIGINAL_QUERY
            )
            # The agent's HTML is text on the page, never markup.
            assert page.locator("b", has_text="city").count() == 0
            page.screenshot(path=str(screenshots_dir / "web-queue.png"), full_page=True)

            page.keyboard.type("Porto, in Portugal.")
            page.keyboard.press("Tab")
            page.keyboard.press("1")
            expect(page.get_by_label("Yes: a fair question to ask")).to_be_checked()
            page.screenshot(path=str(screenshots_dir / "web-answer.png"), full_page=True)

            page.keyboard.press("Control+Enter")
            expect(page.locator("#answer-status")).to_contain_text("the agent goes on")
            _wait_for_status(db, request.session_id, "finished")
            # The page's own refresh shows the session finished, and the counter moved.
            expect(page.locator("#answered-table")).to_contain_text("finished")
            expect(page.locator("#queue-counter")).to_contain_text("1 answered today")
            assert page.evaluate("window.aahClicks") == 1  # the sign-in button only
            output, _ = runner.communicate(timeout=20)
        finally:
            if runner.poll() is None:
                runner.kill()
    assert runner.returncode == 0 and output.strip().startswith("finished|Porto")
    stored = SessionStore(db).humans.get_human_request(request.id)
    assert stored is not None and stored.answered_by == "alice"
    assert stored.answer == "Porto, in Portugal."
    (answer,) = SessionStore(db).humans.human_answers(request.id)
    assert answer.rating == 1
    assert LEFT_LOOPBACK == []
    for name in ("web-queue.png", "web-answer.png"):
        assert (screenshots_dir / name).stat().st_size > 10_000


def test_answering_by_keyboard_costs_the_typing_and_one_key(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    questions = [seed_request(db, f"Question {n}?") for n in range(5)]
    with serve_app(db) as url:
        page = _page(browser, url)
        keys = _signed_in_by_keyboard(page, "kim")
        signing_in = keys.count

        # Three answers: typing + Ctrl+Enter, typing + Ctrl+Enter, Esc (a decline).
        typed = 0
        for number, text in ((0, "Porto"), (1, "Tuesday")):
            _ready(page, f"Question {number}?")
            keys.type(text)
            typed += len(text)
            keys.press("Control+Enter")
        _ready(page, "Question 2?")
        keys.press("Escape")
        _ready(page, "Question 3?")
        assert keys.count - signing_in == typed + 3

        # Optional keys: Tab then 2 rates "no"; Tab then n skips.
        keys.press("Tab")
        keys.press("n")
        _ready(page, "Question 4?")
        keys.type("Lisbon")
        keys.press("Tab")
        keys.press("2")
        keys.press("Control+Enter")
        expect(_question(page)).to_have_value("Question 3?")  # only the skipped one is left
        expect(page.locator("#answer-status")).to_contain_text("Only questions you skipped")
        assert page.evaluate("window.aahClicks") == 0
    store = SessionStore(db)
    deadline = time.monotonic() + 20  # a decline is sent once its undo time is over
    while not store.humans.human_answers(questions[2].id) and time.monotonic() < deadline:
        time.sleep(0.05)
    given = {q.question: store.humans.human_answers(q.id) for q in questions}
    assert [(a.answer, a.rating) for a in given["Question 0?"]] == [("Porto", None)]
    assert [(a.answer, a.rating) for a in given["Question 1?"]] == [("Tuesday", None)]
    assert [(a.declined, a.rating) for a in given["Question 2?"]] == [(True, None)]
    assert given["Question 3?"] == []
    assert [(a.answer, a.rating) for a in given["Question 4?"]] == [("Lisbon", 0)]


def test_a_reload_keeps_the_sign_in_and_the_draft(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db, "Which city?")
    with serve_app(db, WebAuth(token="team-token")) as url:
        page = _page(browser, url)
        page.locator("#sign-in-name textarea, #sign-in-name input").first.fill("alice")
        page.locator("#sign-in-token input").fill("team-token")
        page.locator("#sign-in-button").click()
        _ready(page, "Which city?")
        page.keyboard.type("Por")
        page.reload()
        expect(page.locator("#signed-in")).to_contain_text("Signed in as alice")
        _ready(page, "Which city?")  # her claim brought it back
        expect(_answer_box(page)).to_have_value("Por")
        page.keyboard.type("to")
        page.keyboard.press("Control+Enter")
        expect(page.locator("#answer-status")).to_contain_text("the agent goes on")
        # The sent answer's draft is dropped.
        page.wait_for_function(
            "(id) => localStorage.getItem('aah-draft:' + id) === null", arg=request.id
        )
        # Signing out forgets the saved sign-in: a reload asks again.
        page.locator("#sign-out").click()
        expect(page.locator("#signed-in")).to_contain_text("Signed out")
        page.wait_for_function("() => localStorage.getItem('aah-sign-in') === null")
        page.reload()
        expect(page.locator("#sign-in-button")).to_be_visible()
        expect(page.locator("#signed-in")).not_to_contain_text("Signed in as")
    stored = SessionStore(db).humans.get_human_request(request.id)
    assert stored is not None and stored.answer == "Porto" and stored.answered_by == "alice"


def test_a_wrong_token_is_one_line_and_the_right_one_works_next(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    seed_request(db, "Which city?")
    with serve_app(db, WebAuth(token="team-token")) as url:
        page = _page(browser, url)
        page.locator("#sign-in-name textarea, #sign-in-name input").first.fill("alice")
        token = page.locator("#sign-in-token input")
        token.fill("a guess")
        page.locator("#sign-in-button").click()
        expect(page.locator("#signed-in")).to_have_text(
            "Wrong access token: ask the admin for the current AAH_WEB_TOKEN."
        )
        # No error dialog, no error badge over the fields, and they still take input.
        assert page.locator(".toast-body").count() == 0
        assert page.locator("#sign-in .error, #sign-in-token .error").count() == 0
        token.fill("team-token")
        page.locator("#sign-in-button").click()
        expect(page.locator("#signed-in")).to_contain_text("Signed in as alice")
        expect(_question(page)).to_have_value("Which city?")


def test_two_annotators_claims_and_a_lease_running_out(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = seed_request(db, "Which city?")
    seed_request(db, "Which day?")
    # A 6 s lease: the pages' heartbeat (every 2 s) keeps their claims alive.
    with serve_app(db, lease_seconds=6) as url:
        alice, bob = _page(browser, url), _page(browser, url)
        _sign_in(alice, "alice")
        _ready(alice, "Which city?")
        _sign_in(bob, "bob")
        _ready(bob, "Which day?")  # offered the next one
        expect(bob.locator("#queue-table")).to_contain_text("taken by alice")
        bob.keyboard.type("Tuesday")
        bob.keyboard.press("Control+Enter")
        expect(bob.locator("#answer-status")).to_contain_text("No free question")
        # Alice's laptop slept past her lease and bob took the question meanwhile
        # (one write: her live page's heartbeat cannot slip in between).
        _hand_over(db, first.id, "bob")
        bob.keyboard.press("n")
        _ready(bob, "Which city?")
        bob.keyboard.type("Lisbon")
        bob.keyboard.press("Control+Enter")
        expect(bob.locator("#answer-status")).to_contain_text("the agent goes on")
        # Alice wakes and types at last: the page tells her the question is no longer hers.
        expect(_answer_box(alice)).to_be_focused()
        alice.keyboard.type("Porto")
        expect(alice.locator("#answer-status")).to_contain_text(
            "Your hold on this question ran out",
            timeout=15_000,  # at the page's next heartbeat
        )
        alice.keyboard.press("Control+Enter")
        expect(alice.locator("#answer-status")).to_contain_text("someone answered first")
    store = SessionStore(db)
    stored = store.humans.get_human_request(first.id)
    assert stored is not None and stored.answered_by == "bob" and stored.answer == "Lisbon"


def test_a_question_whose_session_ended_leaves_the_page(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ended = seed_request(db, "Which city?")
    seed_request(db, "Which day?")
    with serve_app(db) as url:
        page = _page(browser, url)
        _sign_in(page, "alice")
        _ready(page, "Which city?")
        page.keyboard.type("Porto")
        assert SessionStore(db).cancel_session(ended.session_id)
        # Within a refresh the queue no longer lists it...
        expect(page.locator("#queue-table")).not_to_contain_text("Which city?")
        expect(page.locator("#queue-table")).to_contain_text("Which day?")
        # ...and the answer typed into the open form is refused in one clear line.
        page.keyboard.press("Control+Enter")
        expect(page.locator("#answer-status")).to_contain_text(
            "this question's session has ended (cancelled): your answer was not used."
        )
        expect(_question(page)).to_have_value("Which day?")
    assert SessionStore(db).humans.human_answers(ended.id) == []


def test_a_question_that_arrives_while_none_is_open_opens_by_itself(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()
    with serve_app(db) as url:
        page = _page(browser, url)
        keys = _signed_in_by_keyboard(page, "kim")
        expect(page.locator("#queue-summary")).to_contain_text("Nothing waits")
        asked = seed_request(db, "Which city?")
        expect(_question(page)).to_have_value("Which city?", timeout=15_000)
        _ready(page, "Which city?")
        keys.type("Porto")
        keys.press("Control+Enter")
        expect(page.locator("#answer-status")).to_contain_text("Answered")
        assert page.evaluate("window.aahClicks") == 0
    assert [a.answer for a in SessionStore(db).humans.human_answers(asked.id)] == ["Porto"]
