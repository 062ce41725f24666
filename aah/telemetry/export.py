"""Recorded sessions as spans: ``aah sessions export --otlp`` for runs made without an exporter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aah.telemetry.spans import (
    SessionFacts,
    SpanRecord,
    SpanRef,
    requests_of,
    run_span,
    run_span_id,
    run_trace_id,
    session_spans,
    trace_id_of,
)
from aah.telemetry.switch import content_wanted, person_names_wanted

if TYPE_CHECKING:
    from aah.store import SessionRecord, SessionStore


def stored_spans(store: SessionStore, sessions: Sequence[SessionRecord]) -> list[SpanRecord]:
    """The spans of ``sessions`` as their stored events tell, each batch run's span over its own.

    The ids are those a live exporter gives the same sessions' spans, except
    the run's span (a live run has one per process that ran it, here one in all).
    """
    spans: list[SpanRecord] = []
    parents: dict[str, SpanRef] = {}
    by_run: dict[str, list[SessionRecord]] = {}
    for session in sessions:
        if session.run is not None:
            by_run.setdefault(session.run, []).append(session)
    for name, members in by_run.items():
        run = store.get_run(name)
        if run is None:
            continue
        ref = SpanRef(run_trace_id(run), run_span_id(run))
        parents[name] = ref
        start = min(s.started for s in members)
        end = max((s.ended or s.started) for s in members)
        spans.append(run_span(run, ref.trace_id, start, end, ref.span_id, len(members)))
    content, people = content_wanted(), person_names_wanted()
    for session in sessions:
        run = store.get_run(session.run) if session.run is not None else None
        events = store.events(session.id)
        facts = SessionFacts(
            record=session,
            trace_id=trace_id_of(session, run),
            parent=parents.get(session.run) if session.run is not None else None,
            content=content,
            person_names=people,
        )
        requests = requests_of(events, store.humans.get_human_request)
        spans += session_spans(facts, events, requests, close_open=True)
    return spans
