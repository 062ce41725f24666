"""Fixtures shared by the test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

# The read-only data copy beside the checkout (../shared/datasets).
SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder; tests that need it are skipped without it."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATASETS} is absent")
    return SHARED_DATASETS
