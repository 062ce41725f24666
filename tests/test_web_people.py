"""The annotators' page as a person meets it: keys, claims, layout, the phone.

Debian's chromium, driven by Playwright, at a laptop's 1280x800 and a
phone's 390x844. Keyboard flows count every keystroke and every click a
person makes; layouts are checked by where things stand in the viewport;
claims are checked in the store after the tab, the page or its heartbeat
goes away. Waits are for events (a value, a row in the store), never sleeps.
"""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser, Locator, Page, expect  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.events import FinalAnswerEvent  # noqa: E402
from aah.store.sessions import SessionStore  # noqa: E402
from aah.ui.web.auth import Annotator, WebAuth  # noqa: E402
from aah.ui.web.signin_token import SignInTokens, app_secret  # noqa: E402

TIMEOUT_MS = 20_000
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# Counts the clicks (and taps) a person makes; a script's button.click() is not trusted.
COUNT_CLICKS = (
    "window.aahClicks = 0; document.addEventListener('click',"
    " (event) => { if (event.isTrusted) window.aahClicks += 1; }, true);"
)
# What the agent was given fills a screen on its own: it must not push the answer down.
LONG_CONTEXT = {
    "task_id": "t-17",
    "original_query": "Book a table for four at Casa Porto tomorrow at 8 pm; I am vegetarian.",
    "tools": [f"local__tool{n}(city: string, date: string): does thing {n}" for n in range(12)],
    "unavailable": ["booking__reserve: books a table"],
    "conversation": [{"role": "user", "text": "Book me a table"}] * 6,
}
SAME_QUESTION = "Which one do you mean exactly?"

pytestmark = needs_chromium


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    """A loaded machine can take seconds over a sign-in: wait as long as an action does."""
    expect.set_options(timeout=TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)  # Playwright's default, for other modules


def _page(browser: Browser, url: str, viewport: dict[str, int] = LAPTOP) -> Page:
    phone = viewport["width"] < 500
    context = browser.new_context(viewport=viewport, has_touch=phone, is_mobile=phone)  # type: ignore[arg-type]
    context.add_init_script(COUNT_CLICKS)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return page


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


def _name_box(page: Page) -> Locator:
    return page.locator("#sign-in-name textarea, #sign-in-name input").first


def _signed_in(page: Page, name: str) -> Keys:
    """Sign in as a person does: the name box has the focus on load; type, Enter."""
    keys = Keys(page)
    expect(_name_box(page)).to_be_focused()
    keys.type(name)
    keys.press("Enter")
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")
    return keys


_SCRIPT_READY = """(question) => {
  const answer = document.querySelector('#answer-text textarea');
  const opened = document.querySelector('#answer-request-id textarea, #answer-request-id input');
  const asked = document.querySelector('#answer-question textarea, #answer-question input');
  return answer !== null && opened !== null && opened.value !== '' && asked !== null
    && asked.value === question && answer.dataset.aahOpened === opened.value
    && document.activeElement === answer;
}"""


def _ready(page: Page, question: str) -> None:
    """Wait until ``question`` is open and the focus is in its answer box."""
    page.wait_for_function(_SCRIPT_READY, arg=question, polling=50)


def _answer_box(page: Page) -> Locator:
    return page.locator("#answer-text textarea")


def _clicks(page: Page) -> int:
    return int(page.evaluate("window.aahClicks"))


def _until(check: Callable[[], bool], what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not in {seconds} s")
        time.sleep(0.05)


def _holders(db: Path, request_id: str) -> tuple[str, ...]:
    entries = SessionStore(db).humans.queue_listing().entries
    return next((entry.claimed_by for entry in entries if entry.id == request_id), ())


def _claim_end(db: Path, request_id: str) -> str:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT until FROM claims WHERE request_id = ?", [request_id]).fetchone()
    return str(row[0]) if row else ""


def _ask(db: Path, question: str, task_id: str, query: str) -> str:
    """A waiting benchmark session of task ``task_id`` that asks ``question``."""
    store = SessionStore(db)
    session = store.open_session(query, task_id=task_id, setting="underspecified")
    store.set_status(session.id, "waiting")
    context = {**LONG_CONTEXT, "query": query, "setting": "underspecified", "task_id": task_id}
    return store.humans.create_human_request(session.id, question, context).id


def _seen_in_pane(part: Locator) -> bool:
    """Whether ``part`` shows within its scrolling pane and the viewport."""
    return bool(
        part.evaluate(
            """(element) => {
              const pane = element.closest('#answer-context').getBoundingClientRect();
              const own = element.getBoundingClientRect();
              return own.top >= pane.top && own.bottom <= pane.bottom
                && own.bottom <= window.innerHeight && own.top >= 0;
            }"""
        )
    )


def _in_view(page: Page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None, selector
    return box["y"] >= 0 and box["y"] + box["height"] <= size["height"]


def test_esc_never_throws_away_a_typed_answer_and_a_decline_can_be_undone(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    first, second, third = (seed_request(db, f"Question {n}?") for n in range(3))
    with serve_app(db, undo_seconds=4) as url:
        page = _page(browser, url)
        keys = _signed_in(page, "kim")
        _ready(page, "Question 0?")
        keys.type("Porto")
        # Esc in a typed answer only asks: nothing is declined, the answer stays.
        keys.press("Escape")
        expect(page.locator("#aah-confirm")).to_contain_text("Press Esc again")
        expect(_answer_box(page)).to_have_value("Porto")
        # Esc while the question picker has the focus closes the picker, nothing else.
        page.locator("#queue-pick input").focus()
        keys.press("Escape")
        keys.press("Escape")
        expect(page.locator("#answer-question textarea")).to_have_value("Question 0?")
        _answer_box(page).focus()
        # Esc, Esc: declined, put aside for a few seconds, the next question open.
        keys.press("Escape")
        keys.press("Escape")
        _ready(page, "Question 1?")
        expect(page.locator("#answer-status")).to_contain_text("Declined")
        expect(page.locator("#queue-undo")).to_be_visible()
        assert SessionStore(db).humans.human_answers(first.id) == []
        # u (the new answer box is empty) brings it back, with what was typed.
        keys.press("u")
        _ready(page, "Question 0?")
        expect(_answer_box(page)).to_have_value("Porto")
        expect(page.locator("#answer-status")).to_contain_text("Decline undone")
        keys.press("Control+Enter")
        _ready(page, "Question 1?")
        # An empty answer declines with one Esc; left alone, the decline is sent.
        keys.press("Escape")
        _ready(page, "Question 2?")
        _until(lambda: bool(SessionStore(db).humans.human_answers(second.id)), "the decline stored")
        # The keys line says how; a skip (Tab, n) is undone with u too.
        keys.press("Tab")
        keys.press("n")
        expect(page.locator("#answer-status")).to_contain_text("Only questions you skipped")
        expect(page.locator("#answer-question textarea")).to_have_value("Question 2?")
        assert _clicks(page) == 0
    store = SessionStore(db)
    assert [(a.answer, a.declined) for a in store.humans.human_answers(first.id)] == [
        ("Porto", False)
    ]
    assert [a.declined for a in store.humans.human_answers(second.id)] == [True]
    assert store.humans.human_answers(third.id) == []
    # 3 (kim) + Enter; 5 + Esc (asks) + Esc Esc (picker) + Esc Esc + u + Ctrl+Enter; Esc; Tab n.
    assert keys.count == 4 + 5 + 1 + 2 + 2 + 1 + 1 + 1 + 2


def test_a_claim_lives_only_while_a_live_page_shows_the_question(
    browser: Browser, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    first = seed_request(db, "Which city?")
    seed_request(db, "Which day?")
    # A 6 s lease: the heartbeat (every 2 s) must keep it; its absence must end it.
    with serve_app(db, lease_seconds=6) as url:
        alice = _page(browser, url)
        _signed_in(alice, "alice")
        _ready(alice, "Which city?")
        assert _holders(db, first.id) == ("alice",)
        # Reading without typing for longer than a lease: the heartbeat renews the claim.
        held_until = _claim_end(db, first.id)
        _until(lambda: _claim_end(db, first.id) > held_until, "a renewal")
        assert _holders(db, first.id) == ("alice",)

        # Another tab of the page: let go at once; back: held again.
        alice.get_by_role("tab", name="Grade answers").click()
        _until(lambda: _holders(db, first.id) == (), "released on the Grade tab")
        alice.get_by_role("tab", name="Queue").click()
        _ready(alice, "Which city?")
        _until(lambda: _holders(db, first.id) == ("alice",), "claimed on the Queue tab")

        # Bob sees one waiting and one held by alice, apart.
        bob = _page(browser, url)
        _signed_in(bob, "bob")
        _ready(bob, "Which day?")
        counter = bob.locator("#queue-counter")
        expect(counter).to_contain_text("1 held by others")

        # Alice closes her tab: the beacon lets go before any lease could run out.
        alice.context.close()
        _until(lambda: _holders(db, first.id) == (), "released by the beacon", seconds=2.5)
        expect(counter).not_to_contain_text("held by others")

        # A page that dies without a word (no beacon gets out): the missing
        # heartbeat frees its question within about a lease.
        carol = _page(browser, url)
        carol.route("**/aah/release", lambda route: route.abort())
        _signed_in(carol, "carol")
        _ready(carol, "Which city?")
        assert _holders(db, first.id) == ("carol",)
        carol.context.close()
        _until(lambda: _holders(db, first.id) == (), "released by the missing heartbeat")


def _post(url: str, body: bytes, method: str = "POST") -> int:
    sent = urllib.request.Request(f"{url.rstrip('/')}/aah/release", data=body, method=method)
    try:
        with urllib.request.urlopen(sent, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def _beacon(token: str, request_id: str) -> bytes:
    return json.dumps({"token": token, "request_id": request_id}).encode()


# What a stranger may send to the release endpoint, and what it answers: never a change.
BAD_RELEASES = [
    pytest.param(lambda held: _beacon("forged.token", held), 403, id="forged-token"),
    pytest.param(lambda held: _beacon("", held), 400, id="empty-token"),
    pytest.param(lambda held: _beacon("x", ""), 400, id="empty-request"),
    pytest.param(lambda held: _beacon("x", "r" * 300), 400, id="long-request-id"),
    pytest.param(lambda held: b"not json", 400, id="not-json"),
    pytest.param(lambda held: b"\xff\xfe", 400, id="not-utf8"),
    pytest.param(lambda held: b"[1, 2]", 400, id="a-list"),
    pytest.param(lambda held: b'{"token": 1, "request_id": []}', 400, id="wrong-types"),
    pytest.param(lambda held: b"", 400, id="empty-body"),
    pytest.param(lambda held: b"x" * 10_000, 413, id="too-long"),
]


@pytest.mark.parametrize(("body", "status"), BAD_RELEASES)
def test_a_release_needs_the_holders_signed_in_token(
    tmp_path: Path, body: Callable[[str], bytes], status: int
) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db)
    SessionStore(db).humans.claim_request(request.id, "alice")
    with serve_app(db) as url:
        assert _post(url, body(request.id)) == status
    assert _holders(db, request.id) == ("alice",)


def test_a_release_lets_go_only_of_the_senders_own_claim(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db, k=2)
    store = SessionStore(db)
    store.humans.claim_request(request.id, "alice")
    store.humans.claim_request(request.id, "bob")
    auth = WebAuth()
    with serve_app(db, auth) as url:
        tokens = SignInTokens(app_secret(db.parent, auth))
        bob = tokens.issue(Annotator("bob", admin=False))
        assert _post(url, b"", method="GET") == 405
        assert _post(url, _beacon(bob, "no-such-question")) == 204  # nothing to let go of
        assert _holders(db, request.id) == ("alice", "bob")
        assert _post(url, _beacon(bob, request.id)) == 204
        assert _holders(db, request.id) == ("alice",)


def test_one_laptop_screen_holds_the_question_the_request_and_the_answer(
    browser: Browser, tmp_path: Path, screenshots_dir: Path
) -> None:
    db = tmp_path / "s.db"
    for n, task in enumerate(("t-17", "t-18", "t-19")):
        _ask(db, SAME_QUESTION, task, f"Book table {n} for dinner tomorrow.")
    with serve_app(db) as url:
        page = _page(browser, url)
        keys = _signed_in(page, "kim")
        _ready(page, SAME_QUESTION)
        for part in ("#answer-question", "#answer-request", "#answer-text", "#answer-send"):
            assert _in_view(page, part), part
        expect(page.locator("#answer-request mark", has_text="Casa")).to_have_count(1)
        # Rows and picker options that ask the same tell their task and request apart.
        rows = page.locator("#queue-table tbody tr")
        expect(rows).to_have_count(3)
        texts = [rows.nth(n).inner_text() for n in range(3)]
        assert len(set(texts)) == 3 and all(SAME_QUESTION in text for text in texts)
        assert "t-18" in texts[1] and "Book table 1 for dinner" in texts[1]
        headers = page.locator("#queue-table th")
        for n in range(headers.count()):  # a header is never broken mid-word
            assert headers.nth(n).evaluate("(th) => th.scrollWidth <= th.clientWidth + 1")
        page.screenshot(path=str(screenshots_dir / "web-laptop.png"))
        # What the agent was given stands beside the answer, in the screen's width...
        briefing = page.locator("#answer-briefing").bounding_box()
        assert briefing is not None and briefing["x"] + briefing["width"] <= LAPTOP["width"]
        # ...and Alt+C pages through it to what was taken away; the focus stays put.
        missing = page.locator("#answer-briefing .aah-missing")
        for _ in range(6):
            if _seen_in_pane(missing):
                break
            keys.press("Alt+c")
            expect(_answer_box(page)).to_be_focused()
        assert _seen_in_pane(missing) and _in_view(page, "#answer-text")
        keys.type("Tomorrow at 8")
        keys.press("Control+Enter")
        expect(page.locator("#answer-status")).to_contain_text("the agent goes on")
        # The counter moves with the answer, not at the next refresh.
        expect(page.locator("#queue-counter")).to_contain_text("1 answered today", timeout=2_500)
        assert _clicks(page) == 0


def test_the_phone_layout_is_a_real_one(
    browser: Browser, tmp_path: Path, screenshots_dir: Path
) -> None:
    db = tmp_path / "s.db"
    for n in range(5):
        _ask(db, f"{SAME_QUESTION} ({n})", f"t-{n}", f"Dinner {n}")
    with serve_app(db) as url:
        page = _page(browser, url, PHONE)
        _signed_in(page, "kim")
        _ready(page, f"{SAME_QUESTION} (0)")
        for part in ("#answer-question", "#answer-text", "#answer-send"):
            assert _in_view(page, part), part
        expect(page.locator("#queue-keys")).to_be_hidden()  # no talk of Ctrl+Enter
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        # Every queue row shows all its fields, each labelled, within the screen.
        row = page.locator("#queue-table tbody tr").first
        cells = row.locator("td")
        expect(cells).to_have_count(8)
        for n in range(8):
            cell = cells.nth(n)
            expect(cell).to_be_visible()
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        assert "t-0" in row.inner_text() and "Dinner 0" in row.inner_text()
        labels = cells.evaluate_all(
            "(tds) => tds.map((td) => getComputedStyle(td, '::before').content)"
        )
        assert labels[:4] == ['"waited: "', '"task: "', '"setting: "', '"request: "']
        page.screenshot(path=str(screenshots_dir / "web-phone.png"))
        # A tap on Send far down the page: the result and the next question come into view.
        _answer_box(page).fill("Tomorrow")
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.locator("#answer-send").tap()
        expect(page.locator("#answer-status")).to_contain_text("the agent goes on")
        _ready(page, f"{SAME_QUESTION} (1)")
        for part in ("#answer-status", "#answer-question"):
            _until(lambda part=part: _in_view(page, part), f"{part} in view", seconds=5)  # type: ignore[misc]


def test_a_phone_page_keeps_a_typed_answer_while_the_database_is_away(
    browser: Browser, postgres_url: str, screenshots_dir: Path
) -> None:
    # A person sends while the PostgreSQL server refuses connections (a
    # restart): one line says so, the answer stays typed, and the same tap
    # sends it once the server is back.
    from test_web_store_trouble import refuse_connections

    from aah.db_url import parse_location

    db = parse_location(postgres_url)
    city = seed_request(db, "Which city?")
    day = seed_request(db, "Which day?")
    with serve_app(db) as url:
        page = _page(browser, url, PHONE)
        _signed_in(page, "kim")
        _ready(page, "Which city?")
        _answer_box(page).fill("Lisbon, the old town")
        refuse_connections(postgres_url, refuse=True)
        try:
            page.locator("#answer-send").tap()
            toast = page.get_by_text("The session database is not available just now").first
            expect(toast).to_be_visible()
            page.screenshot(path=str(screenshots_dir / "web-phone-database-away.png"))
            expect(_answer_box(page)).to_have_value("Lisbon, the old town")
        finally:
            refuse_connections(postgres_url, refuse=False)
        page.locator("#answer-send").tap()
        expect(page.locator("#answer-status")).to_contain_text("the agent goes on")
        _ready(page, "Which day?")
    with SessionStore(db) as store:
        first, second = (
            store.humans.get_human_request(city.id),
            store.humans.get_human_request(day.id),
        )
        assert first is not None and first.answer == "Lisbon, the old town"  # sent once
        assert second is not None and second.status == "pending"


def test_grading_costs_one_key_a_label(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    store.create_run("r1", {"human": "queue"})
    finished = []
    for n in range(3):
        session = store.open_session(f"Weather {n}?", run="r1", task_id=f"t{n}", setting="perfect")
        store.append_event(FinalAnswerEvent(session_id=session.id, text=f"{n} C."))
        store.finish_session(session.id, final_answer=f"{n} C.")
        finished.append(session.id)
    with serve_app(db) as url:
        page = _page(browser, url)
        keys = _signed_in(page, "kim")
        signing_in = keys.count
        page.get_by_role("tab", name="Grade answers").click()
        # The newest run and its first answer show at once.
        expect(page.locator("#grade-meta")).to_contain_text("3 left to label")
        for key, left in (("p", "2 left"), ("f", "1 left"), ("p", "Nothing left")):
            keys.press(key)
            expect(page.locator("#grade-meta")).to_contain_text(left)
        assert keys.count - signing_in == 3 and _clicks(page) == 1  # the tab
    verdicts = [SessionStore(db).grades(session_id)[0].verdict for session_id in finished]
    assert verdicts == ["pass", "fail", "pass"]
