"""Hostile guidelines (a run's ``--guidelines`` file) on the web page and in the terminal app.

Every corpus entry (``fixtures/hostile/guidelines.jsonl``) runs here, and
Hypothesis generates more: the HTML the page shows beside each item never
holds a tag or attribute that could run, load or frame anything, and the
terminal's text holds no control sequence. Generated assignments (items,
a run, people in groups) are checked against the rule as people read it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aah.store import SessionStore
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


# -- assignment: the queue's rule against a model of it ------------------------------

_PEOPLE = ("ann", "bo", "cy")
_GROUPS = ("nl", "pt")
_ASSIGNEES = st.lists(st.sampled_from([*_PEOPLE, *(f"@{g}" for g in _GROUPS)]), max_size=3)


def _offered(own: list[str], run: list[str], person: str, group: str | None) -> bool:
    """The rule as people read it: the item's own assignees, else its run's, else everyone."""
    chosen = own or run
    return not chosen or person in chosen or (group is not None and f"@{group}" in chosen)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    groups=st.tuples(*(st.sampled_from([None, *_GROUPS]) for _ in _PEOPLE)),
    run_assignees=_ASSIGNEES,
    own=st.lists(_ASSIGNEES, min_size=3, max_size=3),
)
def test_the_queue_offers_an_item_as_its_assignment_says(
    tmp_path_factory: pytest.TempPathFactory,
    groups: tuple[str | None, ...],
    run_assignees: list[str],
    own: list[list[str]],
) -> None:
    with SessionStore(tmp_path_factory.mktemp("assign") / "s.db") as store:
        store.create_run("r", {})
        ids = []
        for n in range(3):
            session = store.open_session("q", run="r")
            store.set_status(session.id, "waiting")
            ids.append(store.humans.create_human_request(session.id, f"Q{n}", {}).id)
            store.team.assign(own[n], request_id=ids[-1])
        store.team.assign(run_assignees, run="r")
        for person, group in zip(_PEOPLE, groups, strict=True):
            store.team.set_person(person, "annotator", group)
        for person, group in zip(_PEOPLE, groups, strict=True):
            expected = [
                i for n, i in enumerate(ids) if _offered(own[n], run_assignees, person, group)
            ]
            listing = store.humans.queue_listing(person)
            assert [entry.id for entry in listing.entries] == expected
            assert listing.total == len(expected)
