"""Read-only questions about many sessions at once, each answered by a few set-wide queries.

Scoring reads thousands of sessions per report. Building one pydantic record
per row, or one query per session, would cost more than a whole report may
take; so these queries read only the columns and payload fields scoring
uses, for a whole selection of sessions at once, into light typed rows
(NamedTuples). Only this package knows where those fields live on disk.

A selection is the sessions of the named ``runs`` (every session of any run
when None), plus those outside any run (interactive ones) when
``outside_runs``.

Each ``SessionQueries`` reads through its own read-only connection, so
reading never queues behind the store's writers (WAL), and each query reads
one snapshot of the file, even where it takes several statements.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple

from aah.annotators import annotator_key
from aah.db_url import is_database_url
from aah.events import AwarenessAnswer, CheckResult
from aah.store.dialect import Engine, for_connection
from aah.store.file_errors import open_connection
from aah.store.schema import SessionStatus, Verdict


class SessionSummary(NamedTuple):
    """One session as scoring counts it: its row, its event totals and its questions.

    Attributes:
        aah: Whether the agent could ask a human.
        human_questions: Questions the agent put to people.
        tool_calls: Tool calls made (ask_human included).
        tokens: Prompt plus completion tokens of every model call.
        agent_calls: Model calls made for the agent (awareness calls and
            others not counted).
        latency_ms: Wall time of every model call, summed.
        human_seconds: Time people took to answer, summed.
        questions: The texts of the questions put to people, in order.
        questions_capped: Questions not asked, being past the cap on
            questions per reply or per session (tool calls checked ``CAP``).
    """

    id: str
    run: str | None
    task_id: str | None
    setting: str | None
    aah: bool
    model: str | None
    status: SessionStatus
    query: str
    final_answer: str | None
    info_awareness: AwarenessAnswer | None
    tool_awareness: AwarenessAnswer | None
    human_questions: int
    tool_calls: int
    tokens: int
    agent_calls: int
    latency_ms: float
    human_seconds: float
    questions_capped: int
    questions: tuple[str, ...]


StepKind = Literal["model_call", "tool_call", "human_question", "discovery"]


class Step(NamedTuple):
    """A model call, a tool call, a question or a ``find_tools`` search, and what scoring needs.

    Fields that do not belong to the step's kind are None.

    Attributes:
        purpose: A model call's purpose (agent, awareness, human, grader).
        n_tool_calls: How many tool calls a model call asked for.
        text: A model call's text.
        tool: A tool call's tool.
        status_code: A tool call's HTTP status, if a request was sent.
        check: A tool call's check result (``ok`` or the pattern that stopped it).
    """

    session_id: str
    seq: int
    kind: StepKind
    purpose: str | None
    n_tool_calls: int | None
    text: str | None
    tool: str | None
    status_code: int | None
    check: CheckResult | None


class Discovery(NamedTuple):
    """One ``find_tools`` search of a session: the need, the endpoints found, those new."""

    session_id: str
    need: str
    hits: tuple[str, ...]
    added: tuple[str, ...]


class CallStep(NamedTuple):
    """A model call or a tool call with the texts and arguments a benchmark's checker reads.

    Fields that do not belong to the step's kind are None.

    Attributes:
        purpose: A model call's purpose (agent, awareness, human, grader).
        cut_off: Whether a model call's reply was cut at its length limit.
        text: A model call's text.
        raw: A model call's raw reply, when calls were read out of its text.
        tool: A tool call's tool.
        arguments: A tool call's arguments, as the model gave them.
        check: A tool call's check result (``ok`` or the pattern that stopped it).
    """

    session_id: str
    seq: int
    kind: Literal["model_call", "tool_call"]
    purpose: str | None
    cut_off: bool
    text: str | None
    raw: str | None
    tool: str | None
    arguments: dict[str, Any] | None
    check: CheckResult | None


TurnMarkKind = Literal["user_turn", "turn_ended", "human_question", "stopped"]


class TurnMark(NamedTuple):
    """Where a conversation of several turns stands: a turn starts or ends, a question, a stop.

    Fields that do not belong to the mark's kind are None. A turn's state is
    not read (it can be large); its check is.

    Attributes:
        turn: The turn that starts (``user_turn``) or ended (``turn_ended``).
        check: A ``turn_ended`` event's check, as stored.
        reason: A ``stopped`` event's reason (``step_limit``, ``cut_off``...).
    """

    session_id: str
    seq: int
    kind: TurnMarkKind
    turn: int | None
    check: dict[str, Any] | None
    reason: str | None


class GradeVerdict(NamedTuple):
    """One stored grade: which session, who graded it (``human:<name>`` for people), the verdict."""

    session_id: str
    grader_model: str
    verdict: Verdict


class GradeFlag(NamedTuple):
    """Whether one stored grade was flagged, why (``no_quorum`` or ``tie``), and who made it."""

    session_id: str
    grader_model: str
    flagged: bool
    reason: str | None = None


class SessionError(NamedTuple):
    """The error a session ended with: its one-line message and the part that failed."""

    session_id: str
    message: str
    where: str


class AnnotatorAnswer(NamedTuple):
    """One annotator's answer to a human request.

    Attributes:
        rating: The annotator's 0/1 rating of the question, if asked for.
    """

    request_id: str
    annotator: str
    declined: bool
    rating: int | None


# One row per session in SessionSummary's field order, bar the questions; each
# total reads only that session's events (through their (session_id, seq) index).
_SESSIONS_SQL = """
SELECT s.id, s.run, s.task_id, s.setting, s.aah, s.model, s.status, s.query, s.final_answer,
       s.info_awareness, s.tool_awareness, s.n_human_questions, s.n_tool_calls,
       s.prompt_tokens + s.completion_tokens,
       (SELECT count(*) FROM events AS e WHERE e.session_id = s.id AND e.kind = 'model_call'
            AND JSON_TEXT(e.payload, purpose) = 'agent'),
       (SELECT total(JSON_REAL(e.payload, latency_ms)) FROM events AS e
            WHERE e.session_id = s.id AND e.kind = 'model_call'),
       (SELECT total(JSON_REAL(e.payload, seconds)) FROM events AS e
            WHERE e.session_id = s.id AND e.kind = 'human_answer'),
       (SELECT count(*) FROM events AS e WHERE e.session_id = s.id AND e.kind = 'tool_call'
            AND s.n_tool_errors > 0 AND JSON_TEXT(e.payload, check) = 'CAP')
FROM sessions AS s WHERE {where} ORDER BY s.run NULLS FIRST, s.started, s.id
"""
_QUESTIONS_SQL = """
SELECT e.session_id, JSON_TEXT(e.payload, question)
FROM events AS e JOIN sessions AS s ON s.id = e.session_id
WHERE e.kind = 'human_question' AND {where} ORDER BY e.session_id, e.seq
"""
# Each JSON field read parses the payload, so a row extracts only its kind's fields.
_STEPS_SQL = """
SELECT e.session_id, e.seq, e.kind,
       CASE e.kind WHEN 'model_call' THEN JSON_TEXT(e.payload, purpose) END,
       CASE e.kind WHEN 'model_call' THEN JSON_INT(e.payload, n_tool_calls) END,
       CASE e.kind WHEN 'model_call' THEN JSON_TEXT(e.payload, text) END,
       CASE e.kind WHEN 'tool_call' THEN JSON_TEXT(e.payload, tool) END,
       CASE e.kind WHEN 'tool_call' THEN JSON_INT(e.payload, status_code) END,
       CASE e.kind WHEN 'tool_call' THEN JSON_TEXT(e.payload, check) END
FROM events AS e JOIN sessions AS s ON s.id = e.session_id
WHERE e.kind IN ('model_call', 'tool_call', 'human_question', 'discovery') AND {where}
ORDER BY e.session_id, e.seq
"""
_DISCOVERIES_SQL = """
SELECT e.session_id, JSON_TEXT(e.payload, need), JSON_RAW(e.payload, hits),
       JSON_RAW(e.payload, added)
FROM events AS e JOIN sessions AS s ON s.id = e.session_id
WHERE e.kind = 'discovery' AND {where} ORDER BY e.session_id, e.seq
"""
_CALL_STEPS_SQL = """
SELECT e.session_id, e.seq, e.kind,
       CASE e.kind WHEN 'model_call' THEN JSON_TEXT(e.payload, purpose) END,
       CASE e.kind WHEN 'model_call' THEN JSON_BOOL(e.payload, cut_off) END,
       CASE e.kind WHEN 'model_call' THEN JSON_TEXT(e.payload, text) END,
       CASE e.kind WHEN 'model_call' THEN JSON_TEXT(e.payload, raw) END,
       CASE e.kind WHEN 'tool_call' THEN JSON_TEXT(e.payload, tool) END,
       CASE e.kind WHEN 'tool_call' THEN JSON_RAW(e.payload, arguments) END,
       CASE e.kind WHEN 'tool_call' THEN JSON_TEXT(e.payload, check) END
FROM events AS e JOIN sessions AS s ON s.id = e.session_id
WHERE e.kind IN ('model_call', 'tool_call') AND {where}
ORDER BY e.session_id, e.seq
"""
_TURN_MARKS_SQL = """
SELECT e.session_id, e.seq, e.kind,
       CASE WHEN e.kind IN ('user_turn', 'turn_ended') THEN JSON_INT(e.payload, turn) END,
       CASE e.kind WHEN 'turn_ended' THEN JSON_RAW(e.payload, check) END,
       CASE e.kind WHEN 'stopped' THEN JSON_TEXT(e.payload, reason) END
FROM events AS e JOIN sessions AS s ON s.id = e.session_id
WHERE e.kind IN ('user_turn', 'turn_ended', 'human_question', 'stopped') AND {where}
ORDER BY e.session_id, e.seq
"""
_GRADE_VOTES_SQL = """
SELECT g.session_id, g.votes
FROM grades AS g JOIN sessions AS s ON s.id = g.session_id
WHERE {where} AND g.grader_model = ? ORDER BY g.created, g.id
"""
_SESSION_TASKS_SQL = "SELECT s.id, s.task_id, s.status FROM sessions AS s WHERE {where}"
_TASK_IDS_SQL = "SELECT s.id, s.task_id FROM sessions AS s WHERE {where} AND s.task_id IS NOT NULL"
_GRADES_SQL = """
SELECT g.session_id, g.grader_model, g.verdict
FROM grades AS g JOIN sessions AS s ON s.id = g.session_id
WHERE {where} ORDER BY g.created, g.id
"""
_GRADE_FLAGS_SQL = """
SELECT g.session_id, g.grader_model, g.flagged, g.flag
FROM grades AS g JOIN sessions AS s ON s.id = g.session_id
WHERE {where} ORDER BY g.created, g.id
"""
_ERRORS_SQL = """
SELECT e.session_id, JSON_TEXT(e.payload, message), JSON_TEXT(e.payload, where)
FROM events AS e JOIN sessions AS s ON s.id = e.session_id
WHERE e.kind = 'error' AND s.status = 'error' AND {where} ORDER BY e.session_id, e.seq
"""
_ANSWERS_SQL = """
SELECT a.request_id, a.annotator, a.declined, a.rating
FROM human_answers AS a JOIN human_requests AS r ON r.id = a.request_id
JOIN sessions AS s ON s.id = r.session_id
WHERE {where} ORDER BY a.request_id, a.id
"""


# ``_make`` without its Python frame, for rows that hold exactly the fields, in order.
_as_step = partial(tuple.__new__, Step)
_as_summary = partial(tuple.__new__, SessionSummary)
_as_grade = partial(tuple.__new__, GradeVerdict)


def _as_call_step(row: tuple[Any, ...]) -> CallStep:
    session_id, seq, kind, purpose, cut_off, text, raw, tool, arguments, check = row
    return CallStep(
        session_id,
        seq,
        kind,
        purpose,
        bool(cut_off),
        text,
        raw,
        tool,
        json.loads(arguments) if arguments is not None else None,
        check,
    )


def _selection(runs: Sequence[str] | None, outside_runs: bool) -> tuple[str, list[str]]:
    """The WHERE clause over ``sessions AS s`` for a selection, and its parameters."""
    if isinstance(runs, str):
        raise TypeError("runs is a sequence of run names, not one name")
    if runs is None:
        return ("TRUE" if outside_runs else "s.run IS NOT NULL"), []
    names = list(dict.fromkeys(runs))
    named = f"s.run IN ({', '.join('?' * len(names))})" if names else "FALSE"
    return (f"({named} OR s.run IS NULL)" if outside_runs else named), names


class SessionQueries:
    """Bulk, read-only queries over one session database (see the module docstring).

    Get one from ``SessionStore.queries()`` and use it as a context manager.

    Args:
        path: The database file, which must exist.
    """

    def __init__(self, path: Path) -> None:
        self._conn: Any
        if is_database_url(path):
            from aah.store.postgres import PgDatabase

            self._engine: Engine = "postgresql"
            self._conn = PgDatabase(path)  # type: ignore[arg-type]  # is_database_url said so
            return
        self._engine = "sqlite"
        # Transactions are begun explicitly, so that one query's parts share a snapshot.
        self._conn = open_connection(path, read_only=True, isolation_level=None)

    def __enter__(self) -> SessionQueries:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the read-only connection."""
        self._conn.close()

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        if self._engine == "postgresql":
            self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        else:
            self._conn.execute("BEGIN")
        try:
            yield
        finally:
            self._conn.execute("COMMIT")

    def _execute(self, sql: str, params: list[Any]) -> Any:
        """Run ``sql`` (with the dialect's JSON marks) on this engine's connection."""
        return self._conn.execute(for_connection(self._conn, sql), params)

    def _select(self, sql: str, runs: Sequence[str] | None, outside_runs: bool) -> Any:
        where, params = _selection(runs, outside_runs)
        return self._execute(sql.format(where=where), params)

    def session_summaries(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> list[SessionSummary]:
        """Every selected session with its event totals and questions, by run, then start."""
        questions: dict[str, list[str]] = {}
        with self._snapshot():
            for session_id, text in self._select(_QUESTIONS_SQL, runs, outside_runs):
                questions.setdefault(session_id, []).append(text or "")
            # Built straight from the cursor, positionally: a report reads thousands.
            return [
                _as_summary((*row[:4], bool(row[4]), *row[5:], tuple(questions.get(row[0], ()))))
                for row in self._select(_SESSIONS_SQL, runs, outside_runs)
            ]

    def steps(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> Iterator[Step]:
        """Every model call, tool call, question and search of the selected sessions, in order.

        The steps stream from the file as they are consumed (there may be
        hundreds of thousands): consume them before this object is closed.
        """
        return map(_as_step, self._select(_STEPS_SQL, runs, outside_runs))

    def discoveries(self, runs: Sequence[str]) -> list[Discovery]:
        """Every ``find_tools`` search of the runs' sessions, by session and seq."""
        return [
            Discovery(session_id, need or "", tuple(json.loads(hits)), tuple(json.loads(added)))
            for session_id, need, hits, added in self._select(_DISCOVERIES_SQL, runs, False)
        ]

    def call_steps(self, runs: Sequence[str]) -> Iterator[CallStep]:
        """Every model call and tool call of the runs' sessions, by session and seq.

        The steps stream from the file as they are consumed: consume them
        before this object is closed.
        """
        return map(_as_call_step, self._select(_CALL_STEPS_SQL, runs, False))

    def turn_marks(self, runs: Sequence[str]) -> list[TurnMark]:
        """Every turn start, turn end (with its check), question and stop of the runs' sessions.

        By session and seq; merge them with ``call_steps`` by seq to know
        which turn each call belongs to.
        """
        return [
            TurnMark(
                session_id,
                seq,
                kind,
                turn,
                parsed if isinstance(parsed := json.loads(check or "null"), dict) else None,
                reason,
            )
            for session_id, seq, kind, turn, check, reason in self._select(
                _TURN_MARKS_SQL, runs, False
            )
        ]

    def grade_votes(self, runs: Sequence[str], grader_model: str) -> list[tuple[str, list[Any]]]:
        """Each grade by ``grader_model`` of the runs' sessions: session id, votes; oldest first."""
        where, params = _selection(runs, False)
        rows = self._execute(_GRADE_VOTES_SQL.format(where=where), [*params, grader_model])
        return [(session_id, json.loads(votes)) for session_id, votes in rows]

    def session_tasks(self, runs: Sequence[str]) -> list[tuple[str, str | None, SessionStatus]]:
        """Each session of the runs: its id, task id and status."""
        rows: list[tuple[str, str | None, SessionStatus]] = self._select(
            _SESSION_TASKS_SQL, runs, False
        ).fetchall()
        return rows

    def task_ids(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> dict[str, str]:
        """Each selected session's task id, by session id, for the sessions that have one."""
        return dict(self._select(_TASK_IDS_SQL, runs, outside_runs).fetchall())

    def grade_verdicts(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> Iterator[GradeVerdict]:
        """Every grade of the selected sessions, people's labels included, oldest first.

        The grades stream from the file: consume them before this object is closed.
        """
        return map(_as_grade, self._select(_GRADES_SQL, runs, outside_runs))

    def grade_flags(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> list[GradeFlag]:
        """Every grade of the selected sessions with its flag, people's labels too, oldest first."""
        rows = self._select(_GRADE_FLAGS_SQL, runs, outside_runs).fetchall()
        return [
            GradeFlag(session_id, grader, bool(flagged), reason if flagged else None)
            for session_id, grader, flagged, reason in rows
        ]

    def session_errors(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> dict[str, SessionError]:
        """The last error event of each selected session that ended in error, by session id.

        A session that ended in error without an error event (an import, an
        older store) is left out.
        """
        rows = self._select(_ERRORS_SQL, runs, outside_runs).fetchall()
        return {
            session_id: SessionError(session_id, message or "", where or "")
            for session_id, message, where in rows
        }

    def annotator_answers(
        self, runs: Sequence[str] | None = None, *, outside_runs: bool = False
    ) -> list[AnnotatorAnswer]:
        """Every answer to the selected sessions' human requests, by request, first one first.

        Annotators come as ``annotator_key`` spells them: a name an older
        version stored as ``Alice`` is the same annotator as ``alice``, and
        only their first answer to a request counts, as the store keeps it
        for one spelling.
        """
        rows = self._select(_ANSWERS_SQL, runs, outside_runs).fetchall()
        answers: dict[tuple[str, str], AnnotatorAnswer] = {}
        for request_id, annotator, declined, rating in rows:
            key = annotator_key(annotator)
            answer = AnnotatorAnswer(request_id, key, bool(declined), rating)
            answers.setdefault((request_id, key), answer)
        return list(answers.values())
