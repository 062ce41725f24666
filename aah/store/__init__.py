"""The session store: one SQLite file that records runs, sessions, events and people's answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.store.merge import merge_databases
    from aah.store.schema import HumanRequestRecord, SessionRecord, SessionStatus, scrub
    from aah.store.sessions import GradeRecord, RunRecord, SessionStore, Verdict
    from aah.store.writes import insert_events, write_lock, write_transaction

__all__ = [
    "GradeRecord",
    "HumanRequestRecord",
    "RunRecord",
    "SessionRecord",
    "SessionStatus",
    "SessionStore",
    "Verdict",
    "insert_events",
    "merge_databases",
    "scrub",
    "write_lock",
    "write_transaction",
]

_WHERE = {
    "GradeRecord": "aah.store.sessions",
    "HumanRequestRecord": "aah.store.schema",
    "RunRecord": "aah.store.sessions",
    "SessionRecord": "aah.store.schema",
    "SessionStatus": "aah.store.schema",
    "SessionStore": "aah.store.sessions",
    "Verdict": "aah.store.sessions",
    "insert_events": "aah.store.writes",
    "merge_databases": "aah.store.merge",
    "scrub": "aah.store.schema",
    "write_lock": "aah.store.writes",
    "write_transaction": "aah.store.writes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
