"""Signing out in one browser signs out every copy of the kept sign-in (Debian's chromium).

Two browser contexts (two browsers, as far as local storage goes): the
second is given the first's kept sign-in, as a thief who copied it would
be. Once the first signs out, the second's open page is signed out at its
next heartbeat, and a reload there asks for a sign-in again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import needs_chromium

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")

from playwright.sync_api import Browser, Page, expect  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.ui.web.app import SAVED_SIGN_IN_KEY  # noqa: E402
from aah.ui.web.auth import WebAuth  # noqa: E402

TIMEOUT_MS = 15_000

pytestmark = needs_chromium


def _page(browser: Browser, url: str, saved: str = "") -> Page:
    """A fresh context on the app, its local storage holding ``saved`` as the kept sign-in."""
    context = browser.new_context()
    if saved:
        context.add_init_script(
            f"if (!sessionStorage.getItem('seeded')) {{ sessionStorage.setItem('seeded', '1');"
            f" localStorage.setItem('{SAVED_SIGN_IN_KEY}', {saved!r}); }}"
        )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return page


def test_signing_out_in_one_browser_signs_the_copied_sign_in_out(
    browser: Browser, tmp_path: Path
) -> None:
    expect.set_options(timeout=TIMEOUT_MS)
    with serve_app(tmp_path / "s.db", WebAuth(token="team-token")) as url:
        owner = _page(browser, url)
        owner.locator("#sign-in-name textarea, #sign-in-name input").first.fill("alice")
        owner.locator("#sign-in-token input").fill("team-token")
        owner.locator("#sign-in-button").click()
        expect(owner.locator("#signed-in")).to_contain_text("Signed in as alice")
        owner.wait_for_function(f"() => !!localStorage.getItem('{SAVED_SIGN_IN_KEY}')")
        copied = owner.evaluate(f"() => localStorage.getItem('{SAVED_SIGN_IN_KEY}')")
        thief = _page(browser, url, copied)
        expect(thief.locator("#signed-in")).to_contain_text("Signed in as alice")
        owner.locator("#sign-out").click()
        expect(owner.locator("#signed-in")).to_contain_text("Signed out")
        # The open page with the copy is signed out at its next heartbeat...
        expect(thief.locator("#signed-in")).to_contain_text("Signed out on another page")
        expect(thief.locator("#sign-in-button")).to_be_visible()
        # ...and a reload there (its storage still holds the copy) asks again.
        thief.evaluate(f"(t) => localStorage.setItem('{SAVED_SIGN_IN_KEY}', t)", copied)
        thief.reload()
        expect(thief.locator("#signed-in")).to_contain_text("Your saved sign-in has expired")
        expect(thief.locator("#sign-in-button")).to_be_visible()
    expect.set_options(timeout=5_000)
