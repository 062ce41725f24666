"""Light views of the human-request queue: what a list, a counter or a history shows.

A queue page lists many requests but opens one, so these views never read
the ``context`` JSON (kilobytes a request) and fetch only the rows shown;
their counts walk covering indexes. They also hold the rule that says
which requests want a given annotator's answer, shared with the claims, and
the full listing (``pending_requests``: whole records, context included) on
the queue's own plan.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any, NamedTuple

from aah.store import schema as schema
from aah.store.dialect import for_connection
from aah.store.schema import RequestKind, RequestStatus, SessionStatus
from aah.store.team import OFFERED

_LIVE = f"s.status IN {tuple(schema.LIVE_STATUSES)!r}"
# The indexes named below exist in every file of schema version 3 or later.
# SQLite would rather read a session's row by its primary key than the
# covering index, and the status index than the partial one; both are
# slower, the more so the more the file holds.
_SESSIONS = "sessions AS s INDEXED BY sessions_for_queue"

# A pending request still wants an answer only while its session can use one
# (running or waiting) and its deadline, if any, is ahead: every face lists
# requests through this rule, so an ended session's question leaves them all.
USABLE = (
    "r.status = 'pending' AND (r.deadline IS NULL OR r.deadline > :now)"
    f" AND EXISTS (SELECT 1 FROM {_SESSIONS} WHERE s.id = r.session_id AND {_LIVE})"
)

# Room for :annotator: they have not answered, and the answers given plus
# the live claims of others leave a place. A claim whose lease has run out
# (``until`` <= now) counts for nothing.
ROOM_FOR = (
    "NOT EXISTS (SELECT 1 FROM human_answers AS mine"
    " WHERE mine.request_id = r.id AND mine.annotator = :annotator)"
    " AND (SELECT count(*) FROM human_answers AS a WHERE a.request_id = r.id)"
    " + (SELECT count(*) FROM claims AS c WHERE c.request_id = r.id"
    " AND c.annotator != :annotator AND c.until > :now) < r.k"
    # and the request is offered to them: assigned to them, their group or nobody.
    f" AND {OFFERED}"
)

# A settled request keeps wanting answers, for agreement, until it has k;
# the first answer settles it, so only a request with k > 1 can (the terms
# of the partial index ``human_requests_overlap``).
_OVERLAP = "r.status IN ('answered', 'declined') AND r.k > 1"
WANTS = f"((({USABLE}) OR ({_OVERLAP})) AND {ROOM_FOR})"


class _Part(NamedTuple):
    """One part of a queue: its requests joined to their sessions, in ``created`` order."""

    tables: str
    where: str
    # How many answers each of its requests has (the ``{answers}`` of the
    # columns): none while pending, since the first answer settles a
    # request in the same transaction, so that part counts nothing.
    answers: str = "0"


_PENDING = _Part(
    f"human_requests AS r JOIN {_SESSIONS} ON s.id = r.session_id",
    f"r.status = 'pending' AND (r.deadline IS NULL OR r.deadline > :now) AND {_LIVE}",
)
_SETTLED = _Part(
    f"human_requests AS r INDEXED BY human_requests_overlap JOIN {_SESSIONS}"
    " ON s.id = r.session_id",
    _OVERLAP,
    "(SELECT count(*) FROM human_answers AS a WHERE a.request_id = r.id)",
)
# Every usable pending request; the requests that want :annotator's answer.
_QUEUE = (_PENDING,)
_WANTING = (
    _PENDING._replace(where=f"{_PENDING.where} AND {ROOM_FOR}"),
    _SETTLED._replace(where=f"{_SETTLED.where} AND {ROOM_FOR}"),
)


# The queue's order, one rule for every face: first what blocks an agent
# (an approval or an MCP form: the agent's call waits on it), then the
# nearest deadline (none: last), then the oldest, then the first written.
# The ranks are output columns, which a compound SELECT's ORDER BY needs.
_RANKS = (
    "CASE WHEN r.kind = 'question' THEN 1 ELSE 0 END AS blocks,"
    " CASE WHEN r.deadline IS NULL THEN 1 ELSE 0 END AS undated, r.deadline AS due"
)
ORDER = "blocks, undated, due, created, seq"


def order_key(entry: QueueEntry) -> tuple[bool, bool, datetime, datetime, str]:
    """``ORDER`` in Python, for lists merged outside the database (ties: by id, not ``seq``)."""
    due = entry.deadline if entry.deadline is not None else entry.created
    return (entry.kind == "question", entry.deadline is None, due, entry.created, entry.id)


def _ordered(columns: str, parts: tuple[_Part, ...], only: str = "") -> str:
    # Each part is sorted on the rule above and the parts merged; a queue
    # is thousands of rows at most, whose ranks are read from the rows.
    selects = [
        f"SELECT {columns.format(answers=part.answers)}, {_RANKS}, r.rowid AS seq"
        f" FROM {part.tables} WHERE {part.where}{only}"
        for part in parts
    ]
    return " UNION ALL ".join(selects) + f" ORDER BY {ORDER}"


# Whole rows of the requests that want :annotator, in the queue's order.
WANTING_SQL = _ordered("r.*", _WANTING)


def wanting_ids_sql(only: QueueFilter) -> str:
    """The ids (and ranks) of the requests that want :annotator and ``only`` keeps, in order."""
    return _ordered("r.id, r.created", _WANTING, only.sql())


# What a queue filter's kind names, and every kind in the queue's order of nouns.
KINDS: tuple[RequestKind, ...] = ("approval", "elicitation", "question")


@dataclass(frozen=True, slots=True)
class QueueFilter:
    """Which requests of a queue to list, count and offer; every field left out keeps all.

    Attributes:
        kinds: Only these kinds (``question``, ``approval``, ``elicitation``).
        run: Only the requests of this batch run's sessions.
        setting: Only the requests of sessions of this setting.
        older_than: Only requests asked at least this many seconds ago.
        newer_than: Only requests asked at most this many seconds ago.
    """

    kinds: frozenset[RequestKind] = frozenset()
    run: str | None = None
    setting: str | None = None
    older_than: float | None = None
    newer_than: float | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown kind {unknown[0]!r}: use {', '.join(KINDS)}")
        for name in ("older_than", "newer_than"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"a queue filter's {name} must be 0 s or more, not {value!r}")

    @property
    def empty(self) -> bool:
        """Whether it keeps every request."""
        return self == QueueFilter()

    def sql(self) -> str:
        """Its terms as `` AND ...`` on ``r`` (a request) and ``s`` (its session), or ''."""
        terms = []
        if self.kinds:
            # Checked against KINDS above: the literals are the store's own words.
            terms.append(f"r.kind IN ({', '.join(repr(kind) for kind in sorted(self.kinds))})")
        if self.run is not None:
            terms.append("s.run = :only_run")
        if self.setting is not None:
            terms.append("s.setting = :only_setting")
        if self.older_than is not None:
            terms.append("r.created <= :only_before")
        if self.newer_than is not None:
            terms.append("r.created >= :only_after")
        return "".join(f" AND {term}" for term in terms)

    def params(self, now: str) -> dict[str, str]:
        """The values of ``sql``'s names, ages counted back from ``now``."""
        moment = datetime.fromisoformat(now)
        values: dict[str, str] = {}
        if self.run is not None:
            values["only_run"] = self.run
        if self.setting is not None:
            values["only_setting"] = self.setting
        if self.older_than is not None:
            values["only_before"] = (moment - timedelta(seconds=self.older_than)).isoformat()
        if self.newer_than is not None:
            values["only_after"] = (moment - timedelta(seconds=self.newer_than)).isoformat()
        return values


EVERYTHING = QueueFilter()

# How many characters of the asking session's request a queue entry carries.
REQUEST_START = 120
_ENTRY_COLUMNS = (
    "r.id, r.session_id, r.question, r.created, r.status, r.k, r.deadline, r.fallback,"
    " s.setting, s.task_id, s.run, r.kind,"
    " {answers} AS answers,"
    # The start of the request is enough to tell questions apart; a whole
    # query can be long, and the list shows dozens. Read through the join:
    # a sub-select per row looked the session up twice.
    f" substr(s.query, 1, {REQUEST_START}),"
    # Who asks an MCP form: its server (``ElicitationRequest.asker``), read
    # from the context of those rows alone.
    " CASE WHEN r.kind = 'elicitation' THEN JSON_TEXT(r.context, asker) END"
)


class QueueEntry(NamedTuple):
    """One request as a queue list shows it (no context).

    Attributes:
        id: The request's id.
        session_id: The asking session.
        question: The agent's question.
        created: When it was asked.
        status: ``pending``, or ``answered``/``declined`` while it still
            wants answers for agreement.
        k: How many annotators should answer it.
        deadline: When the asker stops waiting for a person, if ever.
        fallback: Who answers at the deadline.
        setting: The asking session's setting (perfect, under-specified...).
        task_id: The asking session's task.
        run: The asking session's batch run.
        claimed_by: The annotators holding a live claim on it, by name.
        answers: How many answers it has.
        request: The start of the asking session's request (``REQUEST_START``
            characters at most).
        kind: ``question``, ``approval`` for a tool call to decide on, or
            ``elicitation`` for an MCP server's form.
        asker: The MCP server that asks, for an ``elicitation`` ('' otherwise).
    """

    id: str
    session_id: str
    question: str
    created: datetime
    status: RequestStatus
    k: int
    deadline: datetime | None
    fallback: str | None
    setting: str | None
    task_id: str | None
    run: str | None
    claimed_by: tuple[str, ...]
    answers: int
    request: str = ""
    kind: RequestKind = "question"
    asker: str = ""


@dataclass(frozen=True, slots=True)
class QueueListing:
    """One page of the queue and how long the whole queue is.

    Attributes:
        total: How many requests the queue holds.
        entries: The first of them, in the queue's order (``ORDER``).
        by_kind: How many of ``total`` are of each kind (kinds with none left out).
    """

    total: int
    entries: list[QueueEntry]
    by_kind: dict[RequestKind, int] = field(default_factory=dict)


class AnsweredEntry(NamedTuple):
    """One answer an annotator gave, with where its request and session stand now.

    Attributes:
        request_id: The request answered.
        session_id: The session that asked.
        question: The agent's question.
        answer: The annotator's answer (empty when declined).
        declined: They chose not to answer.
        rating: Their 0/1 rating of the question, if any.
        answered_at: When they answered.
        request_status: The request's status now.
        session_status: The asking session's status now.
        kind: The request's kind: a question, a call to approve, an MCP form.
        decision: A decision on a call (``approve``, ``edit``...), else None.
        edited_arguments: An edit's arguments, as stored.
        reason: A rejection's (or termination's) reason.
        context: A call's or a form's context (the call proposed, the form's
            fields), to show the decision against; None for a question.
    """

    request_id: str
    session_id: str
    question: str
    answer: str
    declined: bool
    rating: int | None
    answered_at: datetime
    request_status: RequestStatus
    session_status: SessionStatus
    kind: RequestKind = "question"
    decision: str | None = None
    edited_arguments: dict[str, Any] | None = None
    reason: str | None = None
    context: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AnnotatorStats:
    """One annotator's counter.

    Attributes:
        answered_today: Answers and declines given since midnight UTC.
        waiting_now: Requests that want their answer now.
        median_seconds: The median time they took per answer today (None
            when no answer today recorded its time).
        held_by_others: Requests that would want their answer but others'
            live claims fill for now (not in ``waiting_now``).
        waiting_by_kind: ``waiting_now`` by kind (kinds with none left out).
    """

    answered_today: int
    waiting_now: int
    median_seconds: float | None
    held_by_others: int = 0
    waiting_by_kind: dict[RequestKind, int] = field(default_factory=dict)


def queue_listing(
    db: sqlite3.Connection,
    annotator: str | None,
    limit: int | None,
    now: str,
    only: QueueFilter = EVERYTHING,
) -> QueueListing:
    """The queue (every usable pending request, or those wanting ``annotator``) ``only`` keeps.

    ``total`` counts the whole (filtered) queue, ``by_kind`` by kind;
    ``entries`` holds its first ``limit`` requests (all when None) in the
    queue's order.
    """
    params = {"annotator": annotator, "now": now, **only.params(now)}
    parts = _QUEUE if annotator is None else _WANTING
    by_kind = kind_counts(db, annotator, now, only)
    total = sum(by_kind.values())
    if limit is not None and limit <= 0:
        return QueueListing(total, [], by_kind)
    # Live claims are few (a handful per annotator at work): one read of
    # them all costs less than a look per listed request.
    holders: dict[str, list[str]] = {}
    for request_id, holder in db.execute(_LIVE_CLAIMS, params):
        holders.setdefault(request_id, []).append(holder)
    sql = _ordered(_ENTRY_COLUMNS, parts, only.sql())
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    entries = [_entry(row, holders) for row in db.execute(for_connection(db, sql), params)]
    return QueueListing(total, entries, by_kind)


def kind_counts(
    db: sqlite3.Connection, annotator: str | None, now: str, only: QueueFilter = EVERYTHING
) -> dict[RequestKind, int]:
    """How many requests of each kind the queue (``queue_listing``'s) holds; none: left out.

    One query over the queue's own rule, which reads the queue's rows (their
    kinds are not in the counting indexes): thousands at most, never the
    settled requests of the whole file.
    """
    parts = _QUEUE if annotator is None else _WANTING
    where = only.sql()
    selects = [
        f"SELECT r.kind AS kind FROM {part.tables} WHERE {part.where}{where}" for part in parts
    ]
    # A sum per kind: one pass over the queue's rows, nothing sorted.
    sums = ", ".join(f"sum(CASE WHEN kind = '{kind}' THEN 1 ELSE 0 END)" for kind in KINDS)
    sql = f"SELECT {sums} FROM ({' UNION ALL '.join(selects)}) AS queued"
    params = {"annotator": annotator, "now": now, **only.params(now)}
    row = db.execute(sql, params).fetchone()
    counts = dict(zip(KINDS, row, strict=True)) if row is not None else {}
    return {kind: int(counts[kind]) for kind in KINDS if counts.get(kind)}


def queue_entry(db: sqlite3.Connection, request_id: str, now: str) -> QueueEntry | None:
    """One request as the whole queue lists it, or None when it is not in the queue.

    Read by its key: a face asking about one request never lists the queue.
    """
    params = {"id": request_id, "now": now}
    columns = _ENTRY_COLUMNS.format(answers=_PENDING.answers)
    sql = f"SELECT {columns} FROM {_PENDING.tables} WHERE {_PENDING.where} AND r.id = :id"
    row = db.execute(for_connection(db, sql), params).fetchone()
    if row is None:
        return None
    claims = "SELECT annotator FROM claims WHERE request_id = :id AND until > :now"
    return _entry(row, {request_id: [holder for (holder,) in db.execute(claims, params)]})


def queue_waited(db: sqlite3.Connection, since: str, now: str) -> int:
    """How many requests of the whole queue were asked at ``since`` or before, from indexes."""
    params = {"now": now, "since": since}
    asked = f"{_OPEN} AND r.created <= :since"
    open_ = int(db.execute(_COUNT_OPEN.format(open=asked), params).fetchone()[0])
    closed = db.execute(f"{_COUNT_CLOSED} AND r.created <= :since", params).fetchone()
    return open_ - int(closed[0])


def oldest_waiting(db: sqlite3.Connection, now: str) -> datetime | None:
    """When the usable pending request that has waited longest was asked; None when none waits.

    The queue's order puts blocking kinds and deadlines first, so its first
    entry is not the oldest: this walks the pending requests' index by age.
    """
    sql = (
        f"SELECT r.created FROM {_PENDING.tables} WHERE {_PENDING.where}"
        " ORDER BY r.created, r.rowid LIMIT 1"
    )
    row = db.execute(sql, {"now": now}).fetchone()
    return datetime.fromisoformat(row[0]) if row is not None else None


# The whole record of each listed request, in ``HumanRequestRecord``'s order.
_RECORD_COLUMNS = (
    "r.id, r.session_id, r.question, r.context, r.status, r.created, r.k, r.answer,"
    " r.answered_by, r.answered_at, r.deadline, r.fallback, r.kind"
)
_RECORD_FIELDS = tuple(column.strip()[2:] for column in _RECORD_COLUMNS.split(","))


def pending_requests(
    db: sqlite3.Connection, limit: int | None, now: str
) -> list[schema.HumanRequestRecord]:
    """Every usable pending request's whole record (its first ``limit``), in the queue's order.

    The queue's own plan walks the pending requests' index and reads only
    the record's columns. Decoding each context (about a kilobyte of JSON)
    is most of what is left: ``limit`` pages, and a list to show reads
    ``queue_listing``, which leaves the context out.
    """
    sql = _ordered(_RECORD_COLUMNS, _QUEUE)
    if limit is not None:
        sql += f" LIMIT {max(int(limit), 0)}"
    return [_record(row) for row in db.execute(sql, {"now": now})]


def _record(row: tuple[Any, ...]) -> schema.HumanRequestRecord:
    fields = dict(zip(_RECORD_FIELDS, row[: len(_RECORD_FIELDS)], strict=True))
    fields["context"] = json.loads(fields["context"])
    return schema.HumanRequestRecord.model_validate(fields)


# Counting reads the pending requests' index alone, less the few in
# ``closed_requests`` (the schema's triggers keep it); with an annotator, less
# the few pending requests that others' live claims fill (a pending request
# has no answers: the first answer settles it in the same transaction), plus
# the settled requests that want more answers (few: only those with k > 1).
_LIVE_CLAIMS = "SELECT request_id, annotator FROM claims WHERE until > :now"
_COUNT_OPEN = "SELECT count(*) FROM human_requests AS r WHERE {open}"
_OPEN = "r.status = 'pending' AND (r.deadline IS NULL OR r.deadline > :now)"
_COUNT_CLOSED = (
    "SELECT count(*) FROM closed_requests AS closed"
    f" JOIN human_requests AS r ON r.id = closed.request_id WHERE {_OPEN}"
)
_COUNT_FILLED = (
    "SELECT count(*) FROM (SELECT DISTINCT request_id FROM claims"
    " WHERE until > :now AND annotator != :annotator) AS held"
    # CROSS JOIN keeps the few claims as the outer loop.
    " CROSS JOIN human_requests AS r ON r.id = held.request_id"
    f" WHERE {USABLE} AND NOT ({ROOM_FOR})"
)
_COUNT_SETTLED = f"SELECT count(*) FROM {_SETTLED.tables} WHERE {_WANTING[1].where}"
# Usable pending requests assigned to others only (and not counted as held
# by others above): only requests with an assignment, theirs or their run's, are read.
_AWAY = (
    f" AND {USABLE} AND NOT ({OFFERED}) AND NOT EXISTS (SELECT 1 FROM claims AS c"
    " WHERE c.request_id = r.id AND c.until > :now AND c.annotator != :annotator)"
)
_COUNT_ASSIGNED_AWAY = (
    "SELECT count(*) FROM assignments AS g JOIN human_requests AS r ON r.id = g.request_id"
    " WHERE g.id = (SELECT min(first.id) FROM assignments AS first"
    f" WHERE first.request_id = r.id){_AWAY}",
    "SELECT count(*) FROM (SELECT DISTINCT run FROM assignments WHERE run IS NOT NULL) AS g"
    " JOIN sessions AS s2 ON s2.run = g.run JOIN human_requests AS r ON r.session_id = s2.id"
    " WHERE r.status = 'pending' AND NOT EXISTS"
    f" (SELECT 1 FROM assignments AS own WHERE own.request_id = r.id){_AWAY}",
)


def queue_length(db: sqlite3.Connection, annotator: str | None, now: str) -> int:
    """How many requests the queue holds (``queue_listing``'s ``total``), from indexes."""
    return queue_counts(db, annotator, now)[0]


def queue_counts(db: sqlite3.Connection, annotator: str | None, now: str) -> tuple[int, int]:
    """``queue_length``, and how many pending requests others' live claims fill.

    The second count is what an annotator would also be waiting for, were
    the people holding those questions to let go (0 without an annotator).
    """
    params = {"annotator": annotator, "now": now}

    def count(sql: str) -> int:
        return int(db.execute(sql, params).fetchone()[0])

    usable = count(_COUNT_OPEN.format(open=_OPEN)) - count(_COUNT_CLOSED)
    if annotator is None:
        return usable, 0
    filled = count(_COUNT_FILLED)
    away = sum(count(sql) for sql in _COUNT_ASSIGNED_AWAY)
    return usable - filled - away + count(_COUNT_SETTLED), filled


def _entry(row: tuple[Any, ...], holders: dict[str, list[str]]) -> QueueEntry:
    request_id, session_id, question, created, status, k, deadline, fallback = row[:8]
    setting, task_id, run, kind, answers, request, asker = row[8:15]
    held = holders.get(request_id)
    # ``_make`` builds the tuple directly: a whole listing makes thousands,
    # and the keyword-checking constructor cost a third of its time.
    return QueueEntry._make(
        (
            request_id,
            session_id,
            question,
            datetime.fromisoformat(created),
            status,
            k,
            datetime.fromisoformat(deadline) if deadline is not None else None,
            fallback,
            setting,
            task_id,
            run,
            tuple(sorted(held)) if held else (),
            answers,
            request or "",
            kind,
            asker if isinstance(asker, str) else "",
        )
    )


def answers_by(db: sqlite3.Connection, annotator: str, limit: int) -> list[AnsweredEntry]:
    """``annotator``'s latest ``limit`` answers, newest first, in one indexed query."""
    rows = db.execute(
        "SELECT a.request_id, r.session_id, r.question, a.answer, a.declined, a.rating,"
        " a.created, r.status, s.status, r.kind, a.decision, a.edited_arguments, a.reason,"
        " CASE WHEN r.kind = 'question' THEN NULL ELSE r.context END"
        " FROM human_answers AS a"
        " JOIN human_requests AS r ON r.id = a.request_id"
        " JOIN sessions AS s ON s.id = r.session_id"
        " WHERE a.annotator = ? ORDER BY a.created DESC, a.id DESC LIMIT ?",
        [annotator, max(int(limit), 0)],
    )
    return [
        AnsweredEntry(
            request_id=row[0],
            session_id=row[1],
            question=row[2],
            answer=row[3],
            declined=bool(row[4]),
            rating=row[5],
            answered_at=datetime.fromisoformat(row[6]),
            request_status=row[7],
            session_status=row[8],
            kind=row[9],
            decision=row[10],
            edited_arguments=_json_object(row[11]),
            reason=row[12],
            context=_json_object(row[13]),
        )
        for row in rows
    ]


def _json_object(value: Any) -> dict[str, Any] | None:
    """A JSON text column (or an engine's decoded value) as an object; None for anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def annotator_stats(db: sqlite3.Connection, annotator: str, now: datetime) -> AnnotatorStats:
    """``annotator``'s answers since midnight UTC of ``now``'s day, and their queue's length."""
    moment = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
    midnight = datetime.combine(moment.date(), time(), UTC)
    rows = db.execute(
        "SELECT seconds FROM human_answers WHERE annotator = ? AND created >= ? AND created < ?",
        [annotator, midnight.isoformat(), (midnight + timedelta(days=1)).isoformat()],
    ).fetchall()
    timed = [row[0] for row in rows if row[0] is not None]
    waiting, held = queue_counts(db, annotator, moment.isoformat())
    median = statistics.median(timed) if timed else None
    by_kind = kind_counts(db, annotator, moment.isoformat())
    return AnnotatorStats(len(rows), waiting, median, held, by_kind)
