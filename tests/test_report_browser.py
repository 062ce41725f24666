"""The HTML report in a real browser (Debian's chromium, driven by Playwright).

The page is read at a phone's, a tablet's, a laptop's and a desktop's size:
it never scrolls sideways (a wide table scrolls in its own box, a chart
shrinks to the screen), and every chart is drawn. The laptop's view is the
README's report screenshot (``make screenshots``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import needs_chromium

pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser  # noqa: E402

from aah.benchmark.failtalms.imports import import_failtalms_outputs  # noqa: E402
from aah.report.build import build_report  # noqa: E402
from aah.report.html import render_html  # noqa: E402
from aah.store.sessions import SessionStore  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "published_outputs"
SIZES = [(390, 844), (768, 1024), (1280, 800), (1920, 1080)]

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the published runs (four runs, five settings), as `aah report` writes it."""
    folder = tmp_path_factory.mktemp("report")
    with SessionStore(folder / "sessions.db") as store:
        import_failtalms_outputs(FIXTURES, store)
        page = render_html(build_report(store))
    path = folder / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_report_fits_every_screen_and_draws_every_chart(
    browser: Browser, report_page: Path, screenshots_dir: Path, size: tuple[int, int]
) -> None:
    width, height = size
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.goto(report_page.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scroll
        charts = page.locator("figure img")
        assert charts.count() >= 3
        for index in range(charts.count()):
            drawn = charts.nth(index).evaluate(
                "img => [img.complete, img.naturalWidth, img.getBoundingClientRect().right]"
            )
            assert drawn[0] and drawn[1] > 0, f"chart {index} is not drawn"
            assert drawn[2] <= width, f"chart {index} runs past the screen"
        tables = page.locator("div.wide > table")
        assert tables.count() == page.locator("table").count() > 0  # every table in its box
        if (width, height) == (1280, 800):
            page.screenshot(path=str(screenshots_dir / "report.png"))
    finally:
        page.close()
