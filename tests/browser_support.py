"""Debian's Chromium for the browser tests: its path, its flags, its skip mark.

Every browser test drives the system's chromium (never a downloaded browser
build) through Playwright; the module-scoped ``browser`` fixture in
``conftest.py`` launches it once per test file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# No sandbox (CI runs as root), no GPU, and nothing that reaches the network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
NO_CHROMIUM = "needs Debian's chromium: apt-get install -y chromium"
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
