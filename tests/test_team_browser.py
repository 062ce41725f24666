"""The Review tab and the team's figures in real Chromium, on a phone by touch and on a laptop.

At 390x844 (touch, no keyboard) and 1280x800 a reviewer opens the Review
tab, sees the answer under review beside the run's guidelines, accepts one
and corrects another; the buttons and fields never overlap and nothing
scrolls sideways; the Results tab then shows each person's figures.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser, Page, expect  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.store import SessionStore  # noqa: E402

TIMEOUT_MS = 15_000
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
# The review screen's controls: none may cover another.
CONTROLS = ["#review-correction", "#review-note", "#review-accept", "#review-correct"]
CONTROLS += ["#review-skip", "#review-item"]

pytestmark = needs_chromium


def _seed(db: Path) -> None:
    with SessionStore(db) as store:
        store.create_run("shift", {})
        store.team.set_run_team("shift", guidelines="## Rules\n- Give the **city** only.")
        store.team.set_person("rita", "reviewer")
        for n in range(4):
            session = store.open_session(f"Task {n}", setting="underspecified", run="shift")
            store.set_status(session.id, "waiting")
            request = store.humans.create_human_request(session.id, f"Which city {n}?", {})
            who = "alice" if n % 2 == 0 else "bob"
            store.humans.answer_human_request(request.id, who, f"<b>Porto</b> {n}", seconds=3.0)


def _open(browser: Browser, url: str, viewport: dict[str, int], phone: bool) -> Page:
    context = browser.new_context(viewport=viewport, has_touch=phone, is_mobile=phone)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.locator("#sign-in-name textarea, #sign-in-name input").first.fill("rita")
    _press(page, page.locator("#sign-in-button"), phone)
    expect(page.locator("#signed-in")).to_contain_text("Signed in as rita")
    return page


def _press(page: Page, target: object, phone: bool) -> None:
    locator = target  # a Locator
    if phone:
        locator.tap()  # type: ignore[attr-defined]
    else:
        locator.click()  # type: ignore[attr-defined]


def _open_tab(page: Page, name: str, phone: bool) -> None:
    """Open a tab; on a phone the later tabs are under Gradio's "More tabs" menu."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() and tab.first.is_visible():
        _press(page, tab.first, phone)
        return
    _press(page, page.get_by_label("More tabs"), phone)
    _press(page, page.locator("#tabs .overflow-dropdown button", has_text=name), phone)


def _no_overlap_and_no_sideways_scroll(page: Page, width: int) -> None:
    boxes = {}
    for selector in CONTROLS:
        box = page.locator(selector).first.bounding_box()
        assert box is not None and box["width"] > 0, selector
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, selector
        boxes[selector] = box
    for (one, a), (other, b) in combinations(boxes.items(), 2):
        apart = (
            a["x"] + a["width"] <= b["x"] + 0.5
            or b["x"] + b["width"] <= a["x"] + 0.5
            or a["y"] + a["height"] <= b["y"] + 0.5
            or b["y"] + b["height"] <= a["y"] + 0.5
        )
        assert apart, f"{one} overlaps {other}: {a} {b}"
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize(("viewport", "phone"), [(PHONE, True), (LAPTOP, False)])
def test_reviewing_and_the_team_figures_in_chromium(
    browser: Browser, tmp_path: Path, screenshots_dir: Path, viewport: dict[str, int], phone: bool
) -> None:
    db = tmp_path / "s.db"
    _seed(db)
    size = f"{viewport['width']}x{viewport['height']}"
    with serve_app(db) as url:
        page = _open(browser, url, viewport, phone)
        _open_tab(page, "Review", phone)
        item = page.locator("#review-item")
        expect(item).to_contain_text("The answer under review")
        expect(item).to_contain_text("Guidelines for this run")
        # The answer is text, never markup; the guidelines are formatted.
        expect(item).to_contain_text("<b>Porto</b>")
        expect(item.locator(".aah-guidelines strong")).to_have_text("city")
        _no_overlap_and_no_sideways_scroll(page, viewport["width"])
        page.screenshot(path=str(screenshots_dir / f"web-review-{size}.png"), full_page=True)

        _press(page, page.locator("#review-accept"), phone)
        expect(page.locator("#review-status")).to_contain_text("Accepted.")
        page.locator("#review-correction textarea").fill("Lisbon")
        page.locator("#review-note textarea").fill("the user lives in Lisbon")
        _press(page, page.locator("#review-correct"), phone)
        expect(page.locator("#review-status")).to_contain_text("Corrected to Lisbon")

        _open_tab(page, "Results", phone)
        team = page.locator("#results-team")
        expect(team).to_contain_text("The team")
        expect(team).to_contain_text("2 of 4 answered items reviewed")
        for name in ("alice", "bob", "rita"):
            expect(team).to_contain_text(name)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=str(screenshots_dir / f"web-team-{size}.png"), full_page=True)

    with SessionStore(db) as store:
        reviews = store.team.reviews()
        assert [(r.reviewer, r.verdict) for r in reviews] == [
            ("rita", "accept"),
            ("rita", "correct"),
        ]
        assert reviews[1].correction == "Lisbon" and reviews[1].note == "the user lives in Lisbon"
