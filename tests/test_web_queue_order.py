"""The web queue's order, counts by kind and filters, through its HTTP API (issue 46 §6).

An approval and an MCP form open before older questions (their agents are
blocked on each); the summary counts each kind by name; the filters (kind,
run, setting, age) decide what the list shows and what opens next.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from test_web_api import FORM, LISTS, cells, named, signed_in  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.store import QueueFilter, SessionStore  # noqa: E402
from aah.ui.web.queue import queue_filter  # noqa: E402

FILTER_INPUTS = ("all", "", "any", "any")


def _blocking(db: Path, kind: str, run: str | None = None) -> str:
    """An approval or an MCP form from a fresh waiting session (of ``run``); its id."""
    store = SessionStore(db)
    if run is not None:
        store.create_run(run, {})
    session = store.open_session("Book a room.", setting="perfect", run=run)
    store.set_status(session.id, "waiting")
    if kind == "approval":
        call = {"tool": "local__book", "method": "POST", "arguments": {"rooms": 1}}
        context = {"approval": call}
        question = "Approve this call? POST local__book"
    else:
        context = {"asker": "hotel-server", "message": "Your email?", "mode": "url"}
        context |= {"url": "https://example.org/confirm", "kind": "elicitation", "version": 1}
        question = "Your email?"
    request = store.humans.create_human_request(session.id, question, context, kind=kind)  # type: ignore[arg-type]
    store.close()
    return request.id


def test_blocking_kinds_open_first_are_counted_by_kind_and_filter(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    older = [seed_request(db, f"Question {n}?").id for n in range(3)]
    approval = _blocking(db, "approval", run="r1")
    form = _blocking(db, "elicitation")
    with serve_app(db) as url:
        api, shown = signed_in(url, "alice")
        # The approval opens first, though three questions are older.
        assert shown["request_id"] == approval
        assert "1 approval, 1 form, 3 questions wait" in shown["summary"]
        assert "(1 approval, 1 form, 3 questions)" in shown["counter"]
        kinds = [row[4] for row in cells(shown["table"])]
        assert kinds == ["approval", "form", "question", "question", "question"]

        only = named(LISTS, api.predict("question", "", "any", "any", api_name="/filter_queue"))
        assert "3 questions wait" in only["summary"] and "Filtered" in only["summary"]
        assert [row[5] for row in cells(only["table"])] == [f"Question {n}?" for n in range(3)]
        run = named(LISTS, api.predict("all", " r1 ", "any", "any", api_name="/filter_queue"))
        assert "1 approval wait" in run["summary"] and len(cells(run["table"])) == 1
        young = named(LISTS, api.predict("all", "", "any", "over:3600", api_name="/filter_queue"))
        assert young["summary"].startswith("Nothing waits for you.")
        setting = named(
            LISTS, api.predict("blocking", "", "perfect", "any", api_name="/filter_queue")
        )
        assert "1 approval, 1 form wait" in setting["summary"]
        # Filtered to questions, the next item is the oldest question, not the form.
        api.predict("question", "", "any", "any", api_name="/filter_queue")
        later = named(["status", *FORM], api.predict(api_name="/skip_request"))
        assert later["request_id"] == older[0]
        # A new page shows every kind in its controls: so does its queue.
        _, again = signed_in(url, "alice")
        assert "Filtered" not in again["summary"] and "1 form" in again["summary"]
    assert form not in older


def test_values_the_page_never_offers_keep_everything() -> None:
    # Gradio's dropdowns refuse them first; the filter holds without that too.
    assert queue_filter("<b>", "", "mars", "over:x") == QueueFilter()
    assert queue_filter(None, None, None, None) == QueueFilter()
    assert queue_filter("blocking", "  r1\n", "perfect", "under:600") == QueueFilter(
        kinds=frozenset({"approval", "elicitation"}), run="r1", setting="perfect", newer_than=600.0
    )
    assert queue_filter("all", "x" * 5_000, "any", "any").run == "x" * 200
