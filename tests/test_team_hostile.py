"""Hostile guidelines (a run's ``--guidelines`` file) on the web page and in the terminal app.

Every corpus entry (``fixtures/hostile/guidelines.jsonl``) runs here, and
Hypothesis generates more: the HTML the page shows beside each item never
holds a tag or attribute that could run, load or frame anything, and the
terminal's text holds no control sequence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aah.terminal_text import printable
from aah.ui.guidelines import SHOWN_CHARS, guidelines_html, guidelines_markdown

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "guidelines.jsonl"
# Tags the rendered guidelines may hold: Markdown's, and the block around them.
ALLOWED_TAGS = {
    "details", "summary", "b", "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li",
    "strong", "em", "code", "pre", "blockquote", "hr", "br", "a",
}  # fmt: skip
_TAG = re.compile(r"<\s*(/?)\s*([a-zA-Z][a-zA-Z0-9]*)([^>]*)>")


def _cases() -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    for case in cases:
        if case["text"].startswith("REPEAT:"):
            case["text"] = case["text"][len("REPEAT:") :] * case["repeat"]
    return cases


def check_safe(text: str) -> None:
    """What the page and the terminal get from ``text`` is inert."""
    shown = guidelines_html(text)
    for closing, tag, attributes in _TAG.findall(shown):
        assert tag.lower() in ALLOWED_TAGS, (tag, shown)
        if closing:
            assert attributes == "", attributes
        elif tag.lower() == "a":
            href = re.fullmatch(
                r' target="_blank" rel="noopener noreferrer nofollow" href="([^"]*)"', attributes
            )
            assert href is not None, attributes
            assert href.group(1).lower().startswith(("http://", "https://", "mailto:")), attributes
        else:
            assert attributes.strip() in ("", "open", 'class="aah-guidelines" open'), attributes
    assert len(shown) < 4 * SHOWN_CHARS + 1_000
    terminal = printable(guidelines_markdown(text))
    assert "\x1b" not in terminal and "\x07" not in terminal


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case["name"])
def test_every_hostile_guidelines_case_is_inert(case: dict[str, Any]) -> None:
    check_safe(case["text"])
    if case["name"] == "huge":
        assert "the guidelines go on" in guidelines_html(case["text"])
    if case["name"] == "script_tag":
        assert "&lt;script&gt;" in guidelines_html(case["text"])


_PIECES = st.sampled_from(
    ["<", ">", "[", "](", ")", "!", "javascript:", "http://e.org", "\"", "'", "onerror=",
     "<img ", "<a href=", "\n\n", "# ", "*", "`", "&", "data:", " ", "x", "\x1b", "\x07"]
)  # fmt: skip


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(_PIECES | st.text(max_size=5), max_size=30).map("".join))
def test_generated_guidelines_are_inert(text: str) -> None:
    check_safe(text)
