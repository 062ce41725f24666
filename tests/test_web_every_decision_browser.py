"""Every decision on every screen, in a real browser (Debian's chromium, driven by Playwright).

On a phone (390x844, touch, no keyboard) every decision on a call is a tap:
approve, edit (the Edit button, then Send edit), reject with a reason (the
second tap sends it), respond, terminate; every MCP form's accept, decline
and cancel too. On a laptop (1280x800) the same by keyboard alone. Each is
asserted on the store, and each confirmation says what was stored.

Then the layout: at 390x844, 768x1024, 1280x800 and 1920x1080, with a call,
a form and a question open in turn and the queue's table full, no two
visible controls (or the queue's blocks) are drawn over each other, as the
browser's own boxes (``getBoundingClientRect``) say.

One browser and one app serve the whole module; each part seeds its own items
and decides them all, so the queue holds only what the next part expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser, Page, expect  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.desk import ElicitationRequest, read_stored_answer  # noqa: E402
from aah.events import ToolCallEvent  # noqa: E402
from aah.store import HumanRequestRecord, SessionStore  # noqa: E402
from aah.tools import ParameterSpec  # noqa: E402

TIMEOUT_MS = 15_000
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
SIZES = [PHONE, {"width": 768, "height": 1024}, LAPTOP, {"width": 1920, "height": 1080}]
PROPOSED = {"rooms": 2, "room_type": "double", "note": "late arrival"}
PARAMETERS = [
    ParameterSpec(name="rooms", type="integer", required=True),
    ParameterSpec(name="room_type", enum=["single", "double"]),
    ParameterSpec(name="note"),
]
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name"},
        "nights": {"type": "integer", "title": "Nights", "minimum": 1, "maximum": 14},
    },
    "required": ["name", "nights"],
}
# Each decision a call can take, and what the store must then hold for it.
# (An edit that changes nothing, stored as approved: test_web_approval_form.py.)
CALLS = ["approve", "edit", "reject", "respond", "terminate"]
FORMS = {True: ["accept", "decline", "cancel"], False: ["accept", "cancel"]}

pytestmark = needs_chromium


@pytest.fixture(autouse=True)
def _patient_expect() -> Iterator[None]:
    """A loaded machine can take seconds over a sign-in: wait as long as an action does."""
    expect.set_options(timeout=TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)  # Playwright's default, for other modules


@dataclass(frozen=True)
class App:
    db: Path
    url: str


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    db = tmp_path_factory.mktemp("desk") / "s.db"
    SessionStore(db).close()
    with serve_app(db) as url:
        yield App(db, url)


def _call(db: Path, label: str) -> HumanRequestRecord:
    """A booking call waiting for approval, as ``QueueApprover`` leaves it."""
    store = SessionStore(db)
    session = store.open_session(f"Book two rooms ({label}).", task_id=f"hotel-{label}")
    store.set_status(session.id, "waiting")
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "https://hotel.example/book",
        "arguments": PROPOSED,
        "parameters": [p.model_dump(mode="json") for p in PARAMETERS],
        "rule": "tool *",
    }
    record = store.humans.create_human_request(
        session.id, "Approve this call? POST local__book", {"approval": call}, kind="approval"
    )
    store.close()
    return record


def _form(db: Path, label: str) -> tuple[HumanRequestRecord, ElicitationRequest]:
    """An MCP server's form in the queue, asked in a session that has called its tools."""
    request = ElicitationRequest.from_params(
        "hotel", {"message": f"Who stays ({label})?", "requestedSchema": FORM}
    )
    store = SessionStore(db)
    session = store.open_session("Book a room in Lyon", task_id=f"lyon-{label}")
    store.set_status(session.id, "waiting")
    store.append_event(
        ToolCallEvent(
            session_id=session.id,
            call_id="c1",
            tool="hotel__search_rooms",
            arguments={"city": "Lyon"},
            ok=True,
            result="3 rooms free",
            protocol="mcp",
        )
    )
    record = store.humans.create_human_request(
        session.id, request.message, request.model_dump(mode="json"), kind="elicitation"
    )
    store.close()
    return record, request


def _stored(db: Path, request_id: str) -> HumanRequestRecord:
    store = SessionStore(db)
    try:
        record = store.humans.get_human_request(request_id)
    finally:
        store.close()
    assert record is not None
    return record


def _signed_in(browser: Browser, app: App, name: str, viewport: dict[str, int], *, touch: bool):
    context = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(app.url) else route.abort(),
    )
    page.goto(app.url)
    page.locator("#sign-in-name textarea, #sign-in-name input").first.fill(name)
    if touch:
        page.locator("#sign-in-button").tap()
    else:
        page.locator("#sign-in-name textarea, #sign-in-name input").first.press("Enter")
    expect(page.locator("#signed-in")).to_contain_text(f"Signed in as {name}")
    return page


def _open_item(page: Page) -> str:
    """The id of the call or form now open, once the page script has it (focus, keys live)."""
    page.wait_for_function(
        "() => { const c = document.getElementById('approval-call');"
        " const f = document.getElementById('elicit-form');"
        " return (c !== null && c.dataset.aahOpened) || (f !== null && f.dataset.aahOpened); }"
    )
    return str(
        page.evaluate(
            "() => { const c = document.getElementById('approval-call');"
            " return c !== null ? c.dataset.aahOpened : "
            " document.getElementById('elicit-form').dataset.aahOpened; }"
        )
    )


def _settled(page: Page, db: Path, request_id: str) -> HumanRequestRecord:
    page.wait_for_function(
        "(id) => { const c = document.getElementById('approval-call');"
        " const f = document.getElementById('elicit-form');"
        " const open = (c && c.dataset.request) || (f && f.dataset.request) || '';"
        " return open !== id; }",
        arg=request_id,
    )
    record = _stored(db, request_id)
    assert record.status != "pending", f"{request_id} was not stored"
    return record


# -- a call's decisions ----------------------------------------------------------


def _tap_call(page: Page, decision: str) -> None:
    """``decision`` on the open call by touch alone: taps, and text typed as a phone types."""
    tap = lambda name: page.locator(f"#approval-{name}").tap()  # noqa: E731
    if decision == "approve":
        tap("approve")
    elif decision == "edit":
        tap("edit")
        expect(page.locator("#approval-edit")).to_have_text("Send edit (Ctrl+Enter)")
        page.locator("#approval-arg-0").fill("3")
        tap("edit")  # the second tap sends it
    else:
        name = {"reject": "reject", "respond": "respond", "terminate": "terminate"}[decision]
        tap(name)
        reason = page.locator("#approval-reason")
        expect(reason).to_be_visible()
        reason.fill(
            {"reject": "Too dear", "respond": "Booked: 12", "terminate": "Wrong hotel"}[decision]
        )
        tap(name)  # the second tap sends it


def _key_call(page: Page, decision: str) -> None:
    """``decision`` on the open call by keyboard alone."""
    keyboard = page.keyboard
    if decision == "approve":
        keyboard.press("a")
        return
    if decision == "edit":
        keyboard.press("e")
        expect(page.locator("#approval-arg-0")).to_be_focused()
        keyboard.press("Control+a")
        keyboard.type("3")
        keyboard.press("Control+Enter")
        return
    keyboard.press({"reject": "r", "respond": "s", "terminate": "t"}[decision])
    expect(page.locator("#approval-reason")).to_be_focused()
    keyboard.type(
        {"reject": "Too dear", "respond": "Booked: 12", "terminate": "Wrong hotel"}[decision]
    )
    keyboard.press("Control+Enter")


def _check_call(page: Page, record: HumanRequestRecord, decision: str) -> None:
    """The store holds ``decision``, and the page's confirmation said what it holds."""
    stored = record.decision
    said = expect(page.locator("#answer-status"))
    if decision == "edit":
        assert (stored, record.edited_arguments) == ("edit", {**PROPOSED, "rooms": 3})
        said.to_contain_text('Edited local__book: it runs with {"rooms": 3')  # not the proposed
    elif decision == "approve":
        assert stored == "approve"
        said.to_contain_text('Approved local__book with {"rooms": 2')
    elif decision == "reject":
        assert (stored, record.reason) == ("reject", "Too dear")
        said.to_contain_text("Rejected local__book (reason: “Too dear”)")
    elif decision == "respond":
        assert (stored, record.answer) == ("respond", "Booked: 12")
        said.to_contain_text("the agent reads “Booked: 12”")
    else:
        assert (stored, record.reason) == ("terminate", "Wrong hotel")
        said.to_contain_text("Terminated the session at local__book (reason: “Wrong hotel”)")


# -- a form's results --------------------------------------------------------------


def _tap_form(page: Page, action: str) -> None:
    if action == "accept":
        page.locator('[data-field="name"]').fill("Ada")
        page.locator('[data-field="nights"]').fill("30")
        page.locator("#elicit-accept").tap()
        # Refused beside its field, the form kept; then filled right and sent.
        refusal = page.locator('.aah-field[data-label="Nights"] .aah-field-error')
        expect(refusal).to_contain_text("Nights: at most 14, not 30")
        page.locator('[data-field="nights"]').fill("3")
    page.locator(f"#elicit-{action}").tap()


def _key_form(page: Page, action: str) -> None:
    keyboard = page.keyboard
    # The form opens with its first field focused, as the key line promises.
    expect(page.locator('[data-field="name"]')).to_be_focused()
    if action == "accept":
        keyboard.type("Ada")
        keyboard.press("Tab")
        keyboard.type("30")
        keyboard.press("Control+Enter")
        refusal = page.locator('.aah-field[data-label="Nights"] .aah-field-error')
        expect(refusal).to_contain_text("Nights: at most 14, not 30")
        expect(page.locator('[data-field="nights"]')).to_be_focused()
        keyboard.press("Control+a")
        keyboard.type("3")
        keyboard.press("Control+Enter")
        return
    # Decline and Cancel are buttons: Tab reaches them, Enter presses.
    for _ in range(12):
        if page.evaluate(f"() => document.activeElement.id === 'elicit-{action}'"):
            break
        keyboard.press("Tab")
    keyboard.press("Enter")


def _check_form(record: HumanRequestRecord, request: ElicitationRequest, action: str):
    result = read_stored_answer(request, record.answer, declined=record.status == "declined")
    assert result.action == action
    if action == "accept":
        assert result.content == {"name": "Ada", "nights": 3}


@pytest.mark.parametrize("touch", [True, False], ids=["phone-touch", "laptop-keyboard"])
def test_every_decision_by_touch_on_a_phone_and_by_keyboard_on_a_laptop(
    browser: Browser, app: App, touch: bool, screenshots_dir: Path
) -> None:
    label = "touch" if touch else "keys"
    calls = {_call(app.db, f"{label}-{d}").id: d for d in CALLS}
    forms = {}
    for action in FORMS[touch]:
        record, request = _form(app.db, f"{label}-{action}")
        forms[record.id] = (action, request)
    page = _signed_in(browser, app, f"ann-{label}", PHONE if touch else LAPTOP, touch=touch)
    if not touch:
        page.evaluate(
            "window.aahClicks = 0; document.addEventListener('click', (e) => {"
            " if (e.isTrusted && e.detail > 0) window.aahClicks += 1; }, true);"
        )
    seen: set[str] = set()
    first_form = True
    while len(seen) < len(calls) + len(forms):
        opened = _open_item(page)
        assert opened in calls or opened in forms, "an item of another part opened"
        assert opened not in seen
        seen.add(opened)
        if opened in calls:
            decision = calls[opened]
            # Every decision is a visible button on every screen, inside the viewport.
            for name in ("approve", "edit", "reject", "respond", "terminate", "back"):
                button = page.locator(f"#approval-{name}")
                expect(button).to_be_visible()
                box = button.bounding_box()
                assert box is not None and box["x"] >= 0
                assert box["x"] + box["width"] <= page.viewport_size["width"] + 1  # type: ignore[index]
            # The rule in words; the question's key line (its Esc declines) is hidden.
            expect(page.locator(".aah-rule")).to_contain_text("calls of any tool")
            expect(page.locator("#queue-keys")).to_be_hidden()
            if touch and len(seen) == 1:  # the README's picture of a call on a phone
                page.screenshot(path=str(screenshots_dir / "web-phone-approval.png"))
            (_tap_call if touch else _key_call)(page, decision)
            record = _settled(page, app.db, opened)
            _check_call(page, record, decision)
            assert record.answered_by == f"ann-{label}"
        else:
            action, request = forms[opened]
            if first_form:
                first_form = False
                # The form's context: the session's tools and steps, its server and task.
                expect(page.locator("#answer-briefing")).to_contain_text("hotel__search_rooms")
                expect(page.locator("#answer-briefing")).not_to_contain_text("no tools")
                conversation = page.locator("#answer-context textarea").last
                expect(conversation).not_to_have_value("(nothing yet: this is the first step)")
                meta = page.locator("#answer-meta")
                expect(meta).to_contain_text("asked by MCP server hotel")
                expect(meta).to_contain_text(f"task lyon-{label}")
            (_tap_form if touch else _key_form)(page, action)
            record = _settled(page, app.db, opened)
            _check_form(record, request, action)
            if action == "accept":  # the confirmation says what was sent
                expect(page.locator("#answer-status")).to_contain_text(
                    "Accepted: sent to MCP server hotel: Guest name: Ada; Nights: 3"
                )
    if not touch:
        # Keyboard alone: not one pointer's click (Enter on a button is a click of detail 0).
        assert page.evaluate("window.aahClicks") == 0
    # The latest answers say what was sent: decisions with arguments or reasons, form values.
    answered = page.locator("#answered-table")
    expect(answered).to_contain_text('edited: runs with {"rooms": 3')
    expect(answered).to_contain_text("rejected: “Too dear”")
    expect(answered).to_contain_text("accepted: Guest name: Ada; Nights: 3")
    expect(answered).not_to_contain_text('{"action"')
    page.context.close()


# -- the layout ----------------------------------------------------------------------

# Every control a person presses or types into, and the queue's blocks.
OVERLAPS = """() => {
  const picked = Array.from(document.querySelectorAll(
    "button, input, select, textarea, a[href], [role=tab], table, #queue-table, #queue-pick,"
    + " #answered-title, #answered-table, #queue-summary, #approval-form, #answer-context,"
    + " #answer-request, #elicit-form, #queue-counter, #answer-status"));
  // What the person sees of an element: its box cut by every block that clips it.
  const seenBox = (el) => {
    const r = el.getBoundingClientRect();
    let box = { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
    for (let up = el.parentElement; up !== null; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.overflowX === "visible" && style.overflowY === "visible") continue;
      const c = up.getBoundingClientRect();
      box = { left: Math.max(box.left, c.left), top: Math.max(box.top, c.top),
              right: Math.min(box.right, c.right), bottom: Math.min(box.bottom, c.bottom) };
    }
    return box;
  };
  const seen = [];
  for (const el of picked) {
    const style = getComputedStyle(el);
    if (el.offsetParent === null && style.position !== "fixed") continue;
    if (style.visibility === "hidden" || style.display === "none") continue;
    if (el.type === "hidden" || el.closest("[hidden]")) continue;
    const box = seenBox(el);
    if (box.right - box.left < 1 || box.bottom - box.top < 1) continue;
    seen.push([el, box]);
  }
  const name = (el) => el.id || (el.closest("[id]") || {}).id || el.tagName;
  const found = [];
  for (let i = 0; i < seen.length; i++) {
    for (let j = i + 1; j < seen.length; j++) {
      const [a, p] = seen[i];
      const [b, q] = seen[j];
      if (a.contains(b) || b.contains(a)) continue;
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) {
        found.push(`${name(a)} ${a.tagName} over ${name(b)} ${b.tagName} (${Math.round(w)}x${Math.round(h)})`);
      }
    }
  }
  return found;
}"""


def _no_overlap(page: Page, what: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")
    found = page.evaluate(OVERLAPS)
    assert found == [], f"{what} at {page.viewport_size}: {found[:6]}"


def _at_each_size(page: Page, what: str) -> None:
    """No overlap at each of the four sizes, the page resized under the open item."""
    for viewport in SIZES:
        page.set_viewport_size(viewport)
        # Two frames: the resize laid out and painted before the boxes are read.
        page.evaluate(
            "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        # The queue's table among them: its block ends above the picker, Open, Next...
        _no_overlap(page, what)


def test_no_two_controls_overlap_at_four_screen_sizes(browser: Browser, app: App) -> None:
    # Ten questions wait: the queue's table is taller than its block at 1280x800.
    questions = [seed_request(app.db, f"Which city, number {n}?").id for n in range(10)]
    call = _call(app.db, "layout").id
    form, _ = _form(app.db, "layout")
    page = _signed_in(browser, app, "layout", LAPTOP, touch=False)
    for _ in range(2):  # the call and the form, in the queue's order
        opened = _open_item(page)
        assert opened in (call, form.id)
        _at_each_size(page, f"a {'call' if opened == call else 'form'}")
        page.locator("#approval-approve" if opened == call else "#elicit-decline").click()
        _settled(page, app.db, opened)
    # A question opens next: its form, the table full beneath it.
    expect(page.locator("#answer-text textarea")).to_be_visible()
    _at_each_size(page, "a question")
    for request_id in questions:
        assert _stored(app.db, request_id).status == "pending"  # nothing decided by a glance
    # On a phone the marked request is in full, not in a small box to scroll inside.
    page.set_viewport_size(PHONE)
    diff = page.locator("#answer-request .aah-request-diff").first
    expect(diff).to_be_visible()
    scrolled, shown = diff.evaluate("(el) => [el.scrollHeight, el.clientHeight]")
    assert scrolled <= shown + 1
    page.context.close()
