"""The session store: one SQLite file that records runs, sessions, events and people's answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.store.manifest import PINNED_FIELDS, ManifestDifference, pinned_difference
    from aah.store.merge import merge_databases
    from aah.store.queries import (
        AnnotatorAnswer,
        GradeFlag,
        GradeVerdict,
        SessionError,
        SessionQueries,
        SessionSummary,
        Step,
    )
    from aah.store.schema import HumanRequestRecord, SessionRecord, SessionStatus, scrub
    from aah.store.sessions import GradeRecord, RunRecord, SessionStore, Verdict
    from aah.store.writes import insert_events, write_lock, write_transaction

__all__ = [
    "AnnotatorAnswer",
    "GradeFlag",
    "GradeRecord",
    "GradeVerdict",
    "HumanRequestRecord",
    "ManifestDifference",
    "PINNED_FIELDS",
    "RunRecord",
    "SessionError",
    "SessionQueries",
    "SessionRecord",
    "SessionStatus",
    "SessionStore",
    "SessionSummary",
    "Step",
    "Verdict",
    "insert_events",
    "merge_databases",
    "pinned_difference",
    "scrub",
    "write_lock",
    "write_transaction",
]

_WHERE = {
    "AnnotatorAnswer": "aah.store.queries",
    "GradeFlag": "aah.store.queries",
    "GradeRecord": "aah.store.sessions",
    "GradeVerdict": "aah.store.queries",
    "HumanRequestRecord": "aah.store.schema",
    "ManifestDifference": "aah.store.manifest",
    "PINNED_FIELDS": "aah.store.manifest",
    "RunRecord": "aah.store.sessions",
    "SessionError": "aah.store.queries",
    "SessionQueries": "aah.store.queries",
    "SessionRecord": "aah.store.schema",
    "SessionStatus": "aah.store.schema",
    "SessionStore": "aah.store.sessions",
    "SessionSummary": "aah.store.queries",
    "Step": "aah.store.queries",
    "Verdict": "aah.store.sessions",
    "insert_events": "aah.store.writes",
    "merge_databases": "aah.store.merge",
    "pinned_difference": "aah.store.manifest",
    "scrub": "aah.store.schema",
    "write_lock": "aah.store.writes",
    "write_transaction": "aah.store.writes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
