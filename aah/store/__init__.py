"""The session store: runs, sessions, events and answers, in SQLite or PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.store.approvals import ApprovalStep, ApprovedRun
    from aah.store.asking import AskReading
    from aah.store.check import DatabaseCheck, check_database
    from aah.store.copy import CopySummary, copy_database
    from aah.store.elicitations import ElicitationStep
    from aah.store.file_errors import ServerAwayError, StoreFileError
    from aah.store.humans import APPROVAL_DECISIONS, DEFAULT_LEASE_S
    from aah.store.listings import (
        EVERYTHING,
        KINDS,
        AnnotatorStats,
        AnsweredEntry,
        QueueEntry,
        QueueFilter,
        QueueListing,
        order_key,
    )
    from aah.store.manifest import PINNED_FIELDS, ManifestDifference, pinned_difference
    from aah.store.merge import merge_databases
    from aah.store.off_loop import on_thread
    from aah.store.postgres import PgDatabase, PgPool, setting_up, translated_errors
    from aah.store.queries import (
        AnnotatorAnswer,
        CallStep,
        Discovery,
        GradeFlag,
        GradeVerdict,
        SessionError,
        SessionQueries,
        SessionSummary,
        Step,
        TurnMark,
    )
    from aah.store.schema import (
        STOPPED_STATUSES,
        GradeFlagReason,
        HumanRequestRecord,
        RequestKind,
        SessionRecord,
        SessionStatus,
        scrub,
    )
    from aah.store.sessions import GradeRecord, RunRecord, SessionStore, Verdict
    from aah.store.sqlite_db import Database
    from aah.store.team import (
        AnswerFigure,
        Person,
        ReviewItem,
        ReviewRecord,
        ReviewVerdict,
        TeamRows,
        team_rows,
    )
    from aah.store.watch import RequestWatch
    from aah.store.writes import (
        insert_events,
        needs_exclusive,
        send_events,
        write_lock,
        write_transaction,
    )

__all__ = [
    "AskReading",
    "EVERYTHING",
    "KINDS",
    "order_key",
    "AnswerFigure",
    "Person",
    "ReviewItem",
    "ReviewRecord",
    "ReviewVerdict",
    "TeamRows",
    "team_rows",
    "DEFAULT_LEASE_S",
    "AnnotatorAnswer",
    "AnnotatorStats",
    "AnsweredEntry",
    "Database",
    "DatabaseCheck",
    "GradeFlag",
    "GradeFlagReason",
    "GradeRecord",
    "CallStep",
    "Discovery",
    "GradeVerdict",
    "HumanRequestRecord",
    "RequestKind",
    "ApprovedRun",
    "ApprovalStep",
    "ElicitationStep",
    "APPROVAL_DECISIONS",
    "ManifestDifference",
    "PINNED_FIELDS",
    "PgDatabase",
    "PgPool",
    "QueueEntry",
    "QueueFilter",
    "QueueListing",
    "RequestWatch",
    "RunRecord",
    "STOPPED_STATUSES",
    "ServerAwayError",
    "SessionError",
    "SessionQueries",
    "SessionRecord",
    "SessionStatus",
    "SessionStore",
    "SessionSummary",
    "Step",
    "TurnMark",
    "StoreFileError",
    "Verdict",
    "check_database",
    "CopySummary",
    "copy_database",
    "insert_events",
    "send_events",
    "merge_databases",
    "on_thread",
    "needs_exclusive",
    "pinned_difference",
    "translated_errors",
    "setting_up",
    "scrub",
    "write_lock",
    "write_transaction",
]

_WHERE = {
    "AskReading": "aah.store.asking",
    "EVERYTHING": "aah.store.listings",
    "KINDS": "aah.store.listings",
    "order_key": "aah.store.listings",
    "AnswerFigure": "aah.store.team",
    "Person": "aah.store.team",
    "ReviewItem": "aah.store.team",
    "ReviewRecord": "aah.store.team",
    "ReviewVerdict": "aah.store.team",
    "TeamRows": "aah.store.team",
    "team_rows": "aah.store.team",
    "DEFAULT_LEASE_S": "aah.store.humans",
    "AnnotatorAnswer": "aah.store.queries",
    "AnnotatorStats": "aah.store.listings",
    "AnsweredEntry": "aah.store.listings",
    "Database": "aah.store.sqlite_db",
    "DatabaseCheck": "aah.store.check",
    "GradeFlag": "aah.store.queries",
    "GradeFlagReason": "aah.store.schema",
    "GradeRecord": "aah.store.sessions",
    "CallStep": "aah.store.queries",
    "Discovery": "aah.store.queries",
    "GradeVerdict": "aah.store.queries",
    "HumanRequestRecord": "aah.store.schema",
    "RequestKind": "aah.store.schema",
    "ApprovedRun": "aah.store.approvals",
    "ApprovalStep": "aah.store.approvals",
    "ElicitationStep": "aah.store.elicitations",
    "APPROVAL_DECISIONS": "aah.store.humans",
    "ManifestDifference": "aah.store.manifest",
    "PINNED_FIELDS": "aah.store.manifest",
    "PgDatabase": "aah.store.postgres",
    "PgPool": "aah.store.postgres",
    "translated_errors": "aah.store.postgres",
    "setting_up": "aah.store.postgres",
    "needs_exclusive": "aah.store.writes",
    "QueueEntry": "aah.store.listings",
    "QueueFilter": "aah.store.listings",
    "QueueListing": "aah.store.listings",
    "RequestWatch": "aah.store.watch",
    "RunRecord": "aah.store.sessions",
    "STOPPED_STATUSES": "aah.store.schema",
    "SessionError": "aah.store.queries",
    "SessionQueries": "aah.store.queries",
    "SessionRecord": "aah.store.schema",
    "SessionStatus": "aah.store.schema",
    "SessionStore": "aah.store.sessions",
    "SessionSummary": "aah.store.queries",
    "Step": "aah.store.queries",
    "TurnMark": "aah.store.queries",
    "ServerAwayError": "aah.store.file_errors",
    "StoreFileError": "aah.store.file_errors",
    "Verdict": "aah.store.sessions",
    "check_database": "aah.store.check",
    "CopySummary": "aah.store.copy",
    "copy_database": "aah.store.copy",
    "insert_events": "aah.store.writes",
    "send_events": "aah.store.writes",
    "merge_databases": "aah.store.merge",
    "on_thread": "aah.store.off_loop",
    "pinned_difference": "aah.store.manifest",
    "scrub": "aah.store.schema",
    "write_lock": "aah.store.writes",
    "write_transaction": "aah.store.writes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
