"""Events logged together take one bump and one insert per session's run; the log is as if one by one.

``SessionStore.append_events`` appends a run of one session's events with
one update of its row and one many-row insert (perf/batch_bench.py). For
any mix of sessions, kinds and repeated questions, answers and decisions,
the log, the seqs and the session's counters must be exactly those that
appending each event alone leaves.
"""

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aah.events import (
    ApprovalDecidedEvent,
    AwarenessEvent,
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.store import SessionStore

SESSIONS = ("s1", "s2")


def _event(session: str, kind: str, n: int) -> Event:
    """An event of ``kind``; ``n`` picks its request, call, counts or answer."""
    if kind == "model_call":
        return ModelCallEvent(session_id=session, model="m", prompt_tokens=n, completion_tokens=2)
    if kind == "tool_call":
        return ToolCallEvent(session_id=session, call_id=f"c{n}", tool="t", ok=n % 2 == 0)
    if kind == "awareness":
        question = "information" if n % 2 else "tool"
        answer = ("yes", "idk", "no")[n % 3]
        return AwarenessEvent(session_id=session, question=question, answer=answer)
    if kind == "human_question":
        return HumanQuestionEvent(session_id=session, request_id=f"r{n % 3}", question=f"q{n}")
    if kind == "human_answer":
        return HumanAnswerEvent(
            session_id=session, request_id=f"r{n % 3}", answer=f"a{n}", answered_by="x"
        )
    return ApprovalDecidedEvent(
        session_id=session, request_id=f"r{n}", call_id=f"c{n % 2}", tool="t", decision="approve"
    )


KINDS = ("model_call", "tool_call", "awareness", "human_question", "human_answer", "approval")
EVENTS = st.lists(
    st.tuples(st.sampled_from(SESSIONS), st.sampled_from(KINDS), st.integers(0, 5)),
    max_size=14,
)


def _store(path: Path) -> SessionStore:
    store = SessionStore(path)
    for session in SESSIONS:
        store.open_session(query="q", session_id=session)
    return store


def _logged(store: SessionStore, returned: list[Event]) -> Any:
    sessions = {s: store.get_session(s) for s in SESSIONS}
    counters = {
        s: (
            r.n_events,
            r.n_model_calls,
            r.n_tool_calls,
            r.n_tool_errors,
            r.n_human_questions,
            r.prompt_tokens,
            r.completion_tokens,
            r.info_awareness,
            r.tool_awareness,
        )
        for s, r in sessions.items()
        if r is not None
    }
    logs = {
        s: [(e.seq, e.kind, e.model_dump_json(exclude={"ts"})) for e in store.events(s)]
        for s in SESSIONS
    }
    seen = [(e.session_id, e.seq, e.kind) for e in returned]
    return counters, logs, seen


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=EVENTS, batch=EVENTS)
def test_a_batch_logs_what_one_event_at_a_time_logs(
    tmp_path_factory: Any, before: list[tuple[str, str, int]], batch: list[tuple[str, str, int]]
) -> None:
    folder = tmp_path_factory.mktemp("batch")
    earlier = [_event(*spec) for spec in before]
    events = [_event(*spec) for spec in batch]
    together, alone = _store(folder / "together.db"), _store(folder / "alone.db")
    together.append_events(earlier)
    for event in earlier:
        alone.append_events([event])
    returned_together = together.append_events(events)
    returned_alone = [stored for event in events for stored in alone.append_events([event])]
    assert _logged(together, returned_together) == _logged(alone, returned_alone)
    together.close()
    alone.close()


def test_a_repeated_question_in_one_batch_is_logged_once(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    asked = HumanQuestionEvent(session_id="s1", request_id="r", question="Which city?")
    stored = store.append_events([asked, ModelCallEvent(session_id="s1", model="m"), asked])
    assert [(e.seq, e.kind) for e in stored] == [(1, "human_question"), (2, "model_call")]
    record = store.get_session("s1")
    assert record is not None and (record.n_events, record.n_human_questions) == (2, 1)
    store.close()
