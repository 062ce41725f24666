"""``aah tools search`` fits the terminal: every line within COLUMNS, at any width.

Run as a user runs it (a subprocess, the real registry of the shared data);
widths are counted in terminal cells, as a terminal shows them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

QUERIES = [
    "weather forecast",
    "I need to know whether it will rain in Lisbon tomorrow and how windy it will be there",
    "wikimedia_org_metrics_pageviews_per_article_with_a_very_long_identifier_x",
]


def search(
    registry: Path, query: str, columns: int, *more: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update(AAH_REGISTRY=str(registry), COLUMNS=str(columns), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "aah", "tools", "search", query, "-k", "10", *more],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("columns", [80, 60, 200])
def test_every_line_of_a_search_fits_the_terminal(shared_registry: Path, columns: int) -> None:
    for query in QUERIES:
        result = search(shared_registry, query, columns)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert len(lines) > 3, result.stdout
        widest = max(lines, key=cell_len)
        assert cell_len(widest) <= columns, (query, cell_len(widest), widest)


def test_a_wide_terminal_shows_the_names_whole(shared_registry: Path) -> None:
    query = QUERIES[0]
    hits = json.loads(search(shared_registry, query, 200, "--json").stdout)
    shown = search(shared_registry, query, 200).stdout
    assert hits and all(hit["name"] in shown for hit in hits)
    # At 60 columns a long name is cut, and marked so.
    narrow = search(shared_registry, query, 60).stdout
    assert "…" in narrow
