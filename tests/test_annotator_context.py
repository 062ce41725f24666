"""What an annotator sees beside a question: rules per setting, tools, the request's word diff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aah.desk import QuestionContext, question_context
from aah.errors import AahError
from aah.store import HumanRequestRecord
from aah.ui.briefing import briefing, deadline_note, setting_rule, word_diff, word_diff_html

RULES = [
    ("underspecified", [], "you know the full request; give only what is asked"),
    (
        "replaceable",
        ["calc__add: adds two numbers"],
        "the missing tool is calc__add; you may do its simple job",
    ),
    (
        "nonreplaceable",
        ["weather__forecast: the forecast", "maps__route: a route"],
        "you cannot do the missing tool's job (weather__forecast, maps__route)",
    ),
    ("perfect", [], "the agent has every tool it needs; answer only what is asked"),
    ("notools", [], "the agent has no tools for this; answer only what is asked"),
    ("interactive", [], ""),
    (None, [], ""),
]


@pytest.mark.parametrize(("setting", "unavailable", "rule"), RULES)
def test_each_setting_says_what_the_annotator_may_do(
    setting: str | None, unavailable: list[str], rule: str
) -> None:
    assert setting_rule(setting, unavailable) == rule


DIFFS = [
    # full request, request the agent got, the HTML the page shows
    (
        "Weather in Porto tomorrow",
        "Weather tomorrow",
        'Weather <mark class="aah-diff">in Porto</mark> tomorrow',
    ),
    (
        "Book a table for 4 at 8pm",
        "Book a table for some people",
        'Book a table for <mark class="aah-diff">4 at 8pm</mark>'
        ' <del class="aah-diff" title="what the agent got">some people</del>',
    ),
    ("same words", "Same   words", "same words"),
    (
        'Pay <b>Bob</b> & "Ann"',
        "Pay someone",
        'Pay <mark class="aah-diff">&lt;b&gt;Bob&lt;/b&gt; &amp; &quot;Ann&quot;</mark>'
        ' <del class="aah-diff" title="what the agent got">someone</del>',
    ),
    (
        "<script>alert(1)</script> now",
        "now",
        '<mark class="aah-diff">&lt;script&gt;alert(1)&lt;/script&gt;</mark> now',
    ),
]


@pytest.mark.parametrize(("full", "given", "shown"), DIFFS)
def test_the_words_the_agent_was_not_told_are_marked_and_escaped(
    full: str, given: str, shown: str
) -> None:
    assert word_diff_html(full, given) == shown


def test_word_diff_keeps_every_word_of_both_requests() -> None:
    parts = word_diff("a b c d", "a x d")
    assert parts == [("same", "a"), ("changed", "b c"), ("given", "x"), ("same", "d")]


def test_briefing_reads_a_requests_context() -> None:
    context: dict[str, Any] = {
        "setting": "replaceable",
        "query": "Add them",
        "original_query": "Add 2 and 3",
        "tools": ["ask_human", "calc__mul: multiplies"],
        "unavailable": ["calc__add: adds two numbers"],
    }
    brief = briefing(question_context(context))
    assert brief.rule == "the missing tool is calc__add; you may do its simple job"
    assert brief.tools == ["ask_human", "calc__mul: multiplies"]
    assert brief.full_request == "Add 2 and 3" and brief.given_request == "Add them"
    # An agent that got the whole request has no diff to show.
    same = QuestionContext(query="q", original_query="q")
    assert briefing(same).full_request == ""
    assert briefing(QuestionContext(), "from the session").given_request == "from the session"


def _request(deadline: datetime | None, fallback: str | None) -> HumanRequestRecord:
    now = datetime.now(UTC)
    return HumanRequestRecord(
        id="r",
        session_id="s",
        question="Which?",
        context={},
        status="pending",
        created=now,
        k=1,
        answer=None,
        answered_by=None,
        answered_at=None,
        deadline=deadline,
        fallback=fallback,
    )


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DEADLINES = [
    (None, None, ""),
    (NOW + timedelta(seconds=42), "idk", "idk in 42s"),
    (NOW + timedelta(minutes=4, seconds=5), "skip", "skip in 4m 05s"),
    (NOW + timedelta(hours=2, minutes=3), "simulated", "simulated in 2h 03m"),
    (NOW - timedelta(seconds=1), "idk", "idk now"),
    (NOW + timedelta(seconds=10), None, "idk in 10s"),
]


@pytest.mark.parametrize(("deadline", "fallback", "note"), DEADLINES)
def test_the_queue_says_when_and_which_fallback_answers(
    deadline: datetime | None, fallback: str | None, note: str
) -> None:
    assert deadline_note(_request(deadline, fallback), NOW) == note


# -- the terminal app --------------------------------------------------------


def test_the_terminal_app_signs_answers_with_the_annotators_name(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("textual", reason="the terminal app needs the ui extra")
    from aah.cli.tui import build_app

    monkeypatch.setenv("USER", "carla")
    assert build_app(tmp_path / "s.db", shared_data).annotator == "carla"
    assert build_app(tmp_path / "s.db", shared_data, annotator=" ana ").annotator == "ana"
    with pytest.raises(AahError, match="^--annotator is empty: give your name"):
        build_app(tmp_path / "s.db", shared_data, annotator="  ")


def test_the_terminal_dialog_shows_the_rule_tools_and_highlighted_words() -> None:
    pytest.importorskip("textual", reason="the terminal app needs the ui extra")
    from aah.ui.tui.screens import describe_context

    text = describe_context(
        QuestionContext(
            setting="nonreplaceable",
            query="Weather tomorrow",
            original_query="Weather in Porto tomorrow",
            tools=["maps__route: a route"],
            unavailable=["weather__forecast: the forecast"],
        )
    )
    plain = text.plain
    assert "You may: you cannot do the missing tool's job (weather__forecast)" in plain
    assert "The agent was given: maps__route" in plain
    assert "Taken away: weather__forecast: the forecast" in plain
    marked = [plain[span.start : span.end] for span in text.spans if "yellow" in str(span.style)]
    assert marked == ["in Porto"]


# -- the web page ------------------------------------------------------------


def test_the_web_page_briefs_the_annotator_and_refuses_answers_to_ended_sessions(
    tmp_path: Path,
) -> None:
    pytest.importorskip("gradio", reason="the web app needs the ui extra")
    from gradio_client import Client
    from web_support import seed_request, serve_app

    from aah.store import SessionStore
    from aah.ui.web.format import plain

    db = tmp_path / "s.db"
    context = {
        "query": "Weather tomorrow <b>now</b>",
        "original_query": "Weather in <i>Porto</i> tomorrow <b>now</b>",
        "tools": ["local__forecast: the <forecast>"],
    }
    briefed = seed_request(db, "Which city?", context=context)
    ended = seed_request(db, "Which day?")
    with serve_app(db) as url:
        api = Client(url, verbose=False)
        api.predict("ana", "", api_name="/sign_in")
        opened = api.predict(briefed.id, api_name="/open_request")
        # The request (its diff, the rule) and what the agent was given: two parts.
        parts = ("aah-request-diff", "aah-tools")
        html = "\n".join(
            v for v in opened if isinstance(v, str) and any(part in v for part in parts)
        )
        assert '<mark class="aah-diff">in &lt;i&gt;Porto&lt;/i&gt;</mark>' in html
        assert "<code>local__forecast: the &lt;forecast&gt;</code>" in html
        assert "you know the full request; give only what is asked" in html
        assert "<i>" not in html and "<forecast>" not in html

        api.predict(ended.id, api_name="/open_request")
        with SessionStore(db) as store:
            store.end_session(ended.session_id, "error", None)
        note = api.predict("Tuesday", 1, api_name="/send_answer")[0]
        reason = "this question's session has ended (error)"
        assert note == f"{plain(reason)}: your answer was not used."  # Markdown-safe text
        refreshed = api.predict(None, api_name="/refresh_queue")
        assert "Which city?" in refreshed[1] and "Which day?" not in refreshed[1]
    with SessionStore(db) as store:
        assert store.humans.human_answers(ended.id) == []
        assert store.humans.get_human_request(ended.id).status == "pending"  # type: ignore[union-attr]
