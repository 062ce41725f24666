"""Refresh the README's screenshots in docs/screenshots (``make screenshots``).

The tests that drive the terminal app and the web page into the states the
README shows save them; a plain test run saves them to a temporary folder, and
this script points them at docs/screenshots instead. It needs Debian's
chromium (PNG rendering and the browser test) and the benchmark data beside
the checkout (../shared/datasets).

Run: .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
TESTS = [
    "tests/test_tui.py::test_main_screen_snapshot_for_the_readme",
    "tests/test_tui.py::test_presenter_size_snapshot_for_the_readme",
    "tests/test_web_browser.py::test_a_question_from_a_runner_is_answered_in_the_browser",
    "tests/test_web_people.py::test_one_laptop_screen_holds_the_question_the_request_and_the_answer",
    "tests/test_web_people.py::test_the_phone_layout_is_a_real_one",
    "tests/test_web_every_decision_browser.py::"
    "test_every_decision_by_touch_on_a_phone_and_by_keyboard_on_a_laptop[phone-touch]",
    "tests/test_report_browser.py::test_the_report_fits_every_screen_and_draws_every_chart[1280x800]",
]
IMAGES = ["tui-ask.svg", "tui-ask.png", "tui.svg", "tui.png", "web-queue.png", "web-answer.png"]
# The terminal app at a presenter's size (a large font leaves 80x24).
IMAGES += ["tui-80x24-ask.svg", "tui-80x24-ask.png", "tui-80x24.svg", "tui-80x24.png"]
# The web page on a laptop and on a phone.
IMAGES += ["web-laptop.png", "web-phone.png"]
# A call to approve on a phone: a button for every decision.
IMAGES += ["web-phone-approval.png"]
# The HTML report of the published runs on a laptop.
IMAGES += ["report.png"]


def main() -> int:
    """Run the screenshot tests against docs/screenshots; say which images were refreshed."""
    if not CHROMIUM.exists():
        print(f"error: {CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 2
    started = time.time()
    env = {**os.environ, "AAH_SCREENSHOTS_DIR": str(FOLDER)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS]
    if subprocess.run(command, cwd=ROOT, env=env).returncode != 0:
        print("error: a screenshot test failed (see above); nothing is refreshed", file=sys.stderr)
        return 1
    stale = [
        name
        for name in IMAGES
        if not (FOLDER / name).exists() or (FOLDER / name).stat().st_mtime < started
    ]
    if stale:
        # A skipped test (no benchmark data, no playwright) refreshes nothing.
        print(f"error: not refreshed: {', '.join(stale)} (was a test skipped?)", file=sys.stderr)
        return 1
    print(f"refreshed {len(IMAGES)} images in {FOLDER.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
