"""What the web page says of a call, a form and what was sent: no browser, a real store.

"Your latest answers" shows each thing sent as one readable line (a decision
with its arguments or reason, a form's ``label: value`` pairs), whatever the
store holds, even rows an older version or a bad face wrote
(``fixtures/hostile/latest_answers.jsonl``, and Hypothesis for more). A
call's rule reads as words. A call or a form that carries no context of its
own is shown with its session's: the tools used, the conversation so far,
the task, the server that asks.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from aah.desk import DeskWorkflow, ElicitationRequest, ElicitationResult  # noqa: E402
from aah.desk.rules_text import rule_words  # noqa: E402
from aah.events import ToolCallEvent  # noqa: E402
from aah.store import AnsweredEntry, SessionStore  # noqa: E402
from aah.ui.web.answered import SHOWN_CHARS, sent_text  # noqa: E402
from aah.ui.web.queue import ANSWERED_HEADERS, answered_rows, request_view, rows_html  # noqa: E402

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "latest_answers.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _entry(case: dict[str, Any]) -> AnsweredEntry:
    return AnsweredEntry(
        request_id="r1",
        session_id="s1",
        question="Approve this call? POST local__book",
        answer=case.get("answer", ""),
        declined=bool(case.get("declined", False)),
        rating=None,
        answered_at=datetime(2026, 1, 1, tzinfo=UTC),
        request_status="answered",
        session_status="running",
        kind=case["kind"],
        decision=case.get("decision"),
        edited_arguments=case.get("edited_arguments"),
        reason=case.get("reason"),
        context=case.get("context"),
    )


def _one_line(text: str) -> None:
    assert "\n" not in text and "\r" not in text and len(text) <= SHOWN_CHARS


@pytest.mark.parametrize("case", CASES, ids=[c["why"][:50] for c in CASES])
def test_every_stored_row_reads_as_one_line_of_text(case: dict[str, Any]) -> None:
    shown = sent_text(_entry(case))
    _one_line(shown)
    assert shown.startswith(case["shows"][: SHOWN_CHARS - 1])
    # In the table it is text: whatever markup it holds is escaped there.
    table = rows_html(ANSWERED_HEADERS, answered_rows([_entry(case)]), "")
    assert "<script" not in table and "<img" not in table and "<b>no" not in table


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_CONTEXT = st.none() | st.dictionaries(
    st.sampled_from(["call", "approval", "asker", "message", "mode", "fields", "url", "version"]),
    _JSON,
    max_size=6,
)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["question", "approval", "elicitation"]),
    answer=st.text(max_size=200) | _JSON.map(json.dumps),
    declined=st.booleans(),
    decision=st.none()
    | st.sampled_from(["approve", "edit", "reject", "respond", "terminate", "?"]),
    edited=st.none() | st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    reason=st.none() | st.text(max_size=200),
    context=_CONTEXT,
)
def test_no_stored_row_breaks_the_latest_answers(
    kind: str,
    answer: str,
    declined: bool,
    decision: str | None,
    edited: dict[str, Any] | None,
    reason: str | None,
    context: dict[str, Any] | None,
) -> None:
    case = {"kind": kind, "answer": answer, "declined": declined, "decision": decision}
    case |= {"edited_arguments": edited, "reason": reason, "context": context}
    _one_line(sent_text(_entry(case)))


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ("tool *", "the approval policy holds calls of any tool."),
        ("tool booking__* or local__*", "calls of a tool named booking__* or local__*"),
        ("method POST", "calls made with POST"),
        ("argument amount above 100", "calls whose amount is above 100"),
        ("argument card present", "calls whose card is given"),
        ("tool *, method POST", "calls of any tool, made with POST"),
        ("every call", "holds every call for a person"),
    ],
)
def test_a_rule_reads_as_words(rule: str, says: str) -> None:
    assert says in rule_words(rule)
    assert "needs approval: tool" not in rule_words(rule)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=300))
def test_any_rule_is_one_line(rule: str) -> None:
    words = rule_words(rule)
    assert words.startswith("Why it waits for you") and "\n" not in words


def test_a_form_with_no_context_of_its_own_shows_its_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session("Book a room in Lyon", task_id="lyon-3")
    store.append_event(
        ToolCallEvent(
            session_id=session.id,
            call_id="c1",
            tool="hotel__search_rooms",
            arguments={"city": "Lyon"},
            ok=True,
            result="3 rooms free",
            protocol="mcp",
        )
    )
    request = ElicitationRequest.from_params(
        "hotel<i>", {"message": "Who stays?", "requestedSchema": {"type": "object"}}
    )
    record = store.humans.create_human_request(
        session.id, request.message, request.model_dump(mode="json"), kind="elicitation"
    )
    view = request_view(store, record)
    assert "hotel__search_rooms" in view.briefing and "no tools" not in view.briefing
    assert "hotel__search_rooms" in view.conversation and "nothing yet" not in view.conversation
    assert "task lyon\\-3" in view.meta and "asked by MCP server **hotel&lt;i&gt;**" in view.meta


def test_a_call_in_an_empty_session_says_so_in_words(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session("Book two rooms.")
    call = {"tool": "local__book", "method": "POST", "arguments": {"rooms": 2}}
    record = store.humans.create_human_request(
        session.id, "Approve this call? POST local__book", {"approval": call}, kind="approval"
    )
    view = request_view(store, record)
    assert "no tools but ask_human" not in view.briefing
    assert "it has called none yet" in view.briefing
    assert "task -" not in view.meta


def test_the_latest_answers_read_decisions_and_forms_on_both_engines(store_location: Path) -> None:
    store = SessionStore(store_location)
    workflow = DeskWorkflow(store)
    session = store.open_session("Book two rooms.")
    call = {"tool": "local__book", "method": "POST", "arguments": {"rooms": 2}}
    approval = store.humans.create_human_request(
        session.id, "Approve this call? POST local__book", {"approval": call}, kind="approval"
    )
    form = ElicitationRequest.from_params(
        "hotel",
        {
            "message": "Who stays?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "title": "Guest name"}},
            },
        },
    )
    asked = store.humans.create_human_request(
        session.id, form.message, form.model_dump(mode="json"), kind="elicitation"
    )
    assert workflow.open("kim", approval.id)
    workflow.decide("kim", workflow.opened("kim", approval), "edit", arguments={"rooms": 3})
    assert workflow.open("kim", asked.id)
    result = ElicitationResult(action="accept", content={"name": "Ada"})
    workflow.elicited("kim", workflow.opened("kim", asked), result)
    shown = {entry.kind: sent_text(entry) for entry in store.humans.answers_by("kim")}
    assert shown == {
        "approval": 'edited: runs with {"rooms": 3}',
        "elicitation": "accepted: Guest name: Ada",
    }
    store.close()
