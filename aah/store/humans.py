"""The human-request half of the session store: questions for people, and answers.

A runner writes a pending request; any process (the web page, the terminal
app) answers it; the first answer settles it and later ones are kept for
agreement. ``SessionStore`` holds one ``HumanRequests`` on its connection and
offers these methods as its own.

Every annotator name that enters here is taken as ``annotator_key`` spells
it, so ``ALICE`` and fullwidth ``ａｌｉｃｅ`` are one annotator whichever face
wrote them. Rows written by older versions keep their names as written.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from aah.annotators import annotator_key
from aah.clock import SYSTEM_CLOCK, Clock
from aah.store import listings as listings
from aah.store import schema as schema
from aah.store.connection import StoreConnection
from aah.store.listings import (
    EVERYTHING,
    WANTING_SQL,
    AnnotatorStats,
    AnsweredEntry,
    QueueEntry,
    QueueFilter,
    QueueListing,
    wanting_ids_sql,
)
from aah.store.listings import USABLE as _USABLE
from aah.store.listings import WANTS as _WANTS
from aah.store.schema import HumanAnswerRecord, HumanRequestRecord, RequestKind

# What a person may decide about a call waiting for approval.
APPROVAL_DECISIONS = ("approve", "edit", "reject", "respond", "terminate")


class _Reply(NamedTuple):
    """One annotator's reply as its columns hold it (a decision's fields None for an answer)."""

    answer: str
    declined: bool
    rating: int | None
    seconds: float | None
    decision: str | None
    edited_arguments: str | None  # JSON
    reason: str | None
    user_call: str | None = None  # JSON


# How long a claim holds a request for its annotator unless renewed.
DEFAULT_LEASE_S = 600.0


class HumanRequests:
    """Human requests and their answers in one session database.

    Args:
        connection: The database's connections, shared with the rest of the store.
        clock: What "now" is for leases, deadlines and the times written.
    """

    def __init__(self, connection: StoreConnection, clock: Clock = SYSTEM_CLOCK) -> None:
        self._connection = connection
        self.clock = clock

    def _now(self) -> str:
        # The form every time column holds (``schema.now_text``), on this store's clock.
        return self.clock.now().isoformat()

    def _lease_end(self, lease_seconds: float) -> str:
        if not lease_seconds > 0:
            raise ValueError(f"a claim's lease must be positive, not {lease_seconds!r} s")
        return (self.clock.now() + timedelta(seconds=lease_seconds)).isoformat()

    def create_human_request(
        self,
        session_id: str,
        question: str,
        context: Mapping[str, Any] | None = None,
        *,
        k: int = 1,
        request_id: str | None = None,
        deadline: datetime | None = None,
        fallback: str | None = None,
        kind: RequestKind = "question",
    ) -> HumanRequestRecord:
        """Put a question to people; it stays pending until someone answers.

        Args:
            session_id: The asking session.
            question: The agent's question.
            context: What a person needs to answer (query, recent steps...).
            k: How many annotators should answer it; the first one decides.
            request_id: The id to use; random by default.
            deadline: When the asker stops waiting; None waits forever.
            fallback: Who answers at the deadline (``idk``, ``skip``, a channel).
            kind: ``question``, or ``approval`` for a tool call to decide on
                (its context holds the call; see ``decide_approval``).

        Raises:
            KeyError: No such session.
        """
        new_id = request_id or uuid.uuid4().hex
        with self._connection.write() as db:
            schema.require_session(db, session_id)
            db.execute(
                "INSERT INTO human_requests (id, session_id, question, context, created, k,"
                " deadline, fallback, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    new_id,
                    session_id,
                    schema.scrub_text(question),
                    schema.to_json(context or {}),
                    self._now(),
                    k,
                    deadline.isoformat() if deadline is not None else None,
                    fallback,
                    kind,
                ],
            )
            return self._human_request(new_id)

    def answer_human_request(
        self,
        request_id: str,
        annotator: str,
        answer: str,
        declined: bool = False,
        rating: int | None = None,
        seconds: float | None = None,
        *,
        user_call: Mapping[str, Any] | None = None,
    ) -> bool:
        """Store one annotator's answer; the first answer settles the request.

        The annotator's claim on the request, if any, ends with it.

        The first answer to a pending request makes it ``answered`` (or
        ``declined``) and becomes the answer the agent gets; later answers,
        and answers to an expired request, are kept as extra answers for
        agreement. A second answer from the same annotator is ignored, and
        so is any answer to a pending request that nobody can use any more
        (``closed_reason`` says why).

        Args:
            request_id: The request answered.
            annotator: Who answered.
            answer: The reply (may be empty when declined).
            declined: The annotator chose not to answer.
            rating: The annotator's 0/1 rating of the question, if asked for.
            seconds: How long the annotator took.
            user_call: A call the annotator made with their own tools instead of
                answering in words (``aah.desk.UserToolCall``'s JSON values,
                checked by the desk), kept in a column of its own.

        Returns:
            True when this answer settled the request.

        Raises:
            KeyError: No such request.
            ValueError: The request is an approval (``decide_approval`` decides one).
        """
        call = None if user_call is None else schema.to_json(dict(user_call))
        reply = _Reply(answer, declined, rating, seconds, None, None, None, call)
        return self._settle(request_id, annotator, reply)

    def decide_approval(
        self,
        request_id: str,
        annotator: str,
        decision: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        reason: str = "",
        response: str = "",
        seconds: float | None = None,
    ) -> bool:
        """Store one annotator's decision on a tool call waiting for approval.

        Approvals share the questions' queue, claims, deadlines and
        agreement; the first decision settles the request. The decision is
        kept in its own columns; a response's text is the answer.

        Args:
            request_id: The approval request.
            annotator: Who decided.
            decision: ``approve``, ``edit``, ``reject``, ``respond`` or ``terminate``.
            arguments: An edit's new arguments (checked by the runner against
                the endpoint's parameters before the call runs).
            reason: Why (a rejection's reason reaches the agent).
            response: A response's text (the tool's result as the agent reads it).
            seconds: How long the annotator took.

        Returns:
            True when this decision settled the request.

        Raises:
            KeyError: No such request.
            ValueError: The request is no approval, or ``decision`` is unknown,
                or an edit came without arguments, or a response without text.
        """
        if decision not in APPROVAL_DECISIONS:
            raise ValueError(f"unknown decision {decision!r}: use {', '.join(APPROVAL_DECISIONS)}")
        if decision == "edit" and arguments is None:
            raise ValueError("an edit needs the new arguments")
        if decision == "respond" and not response.strip():
            raise ValueError("a response needs its text (what the agent reads as the result)")
        edited = schema.to_json(dict(arguments or {})) if decision == "edit" else None
        reply = _Reply(
            response if decision == "respond" else "",
            False,
            None,
            seconds,
            decision,
            edited,
            reason,
        )
        return self._settle(request_id, annotator, reply)

    def _settle(self, request_id: str, annotator: str, reply: _Reply) -> bool:
        """Store ``reply``; the first one settles the request (``answer_human_request``)."""
        answer = schema.scrub_text(reply.answer) or ""
        reason = schema.scrub_text(reply.reason) if reply.reason is not None else None
        annotator = annotator_key(annotator)
        with self._connection.write() as db:
            request = self._human_request(request_id)
            if reply.decision is not None and request.kind != "approval":
                raise ValueError(f"request {request_id!r} is a {request.kind}, not an approval")
            if reply.decision is None and request.kind == "approval":
                raise ValueError(f"request {request_id!r} is an approval: decide it, not answer it")
            self._drop_claim(db, request_id, annotator)
            if request.status == "pending" and not self._usable(db, request_id):
                return False
            inserted = db.execute(
                "INSERT INTO human_answers (request_id, annotator, answer, declined, rating,"
                " seconds, created, decision, edited_arguments, reason, user_call)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    request_id,
                    annotator,
                    answer,
                    int(reply.declined),
                    reply.rating,
                    reply.seconds,
                    self._now(),
                    reply.decision,
                    reply.edited_arguments,
                    reason,
                    reply.user_call,
                ],
            ).rowcount
            if not inserted or request.status != "pending":
                return False
            db.execute(
                "UPDATE human_requests SET status = ?, answer = ?, answered_by = ?,"
                " answered_at = ?, decision = ?, edited_arguments = ?, reason = ?, user_call = ?"
                " WHERE id = ?",
                [
                    "declined" if reply.declined else "answered",
                    answer,
                    annotator,
                    self._now(),
                    reply.decision,
                    reply.edited_arguments,
                    reason,
                    reply.user_call,
                    request_id,
                ],
            )
            return True

    def expire_human_request(self, request_id: str) -> bool:
        """Give up waiting on a pending request; True if it was still pending."""
        with self._connection.write() as db:
            sql = "UPDATE human_requests SET status = 'expired' WHERE id = ? AND status = 'pending'"
            return bool(db.execute(sql, [request_id]).rowcount)

    def expire_session_requests(self, session_id: str) -> int:
        """Give up waiting on every pending request of a session; how many were pending."""
        with self._connection.write() as db:
            sql = (
                "UPDATE human_requests SET status = 'expired'"
                " WHERE session_id = ? AND status = 'pending'"
            )
            return int(db.execute(sql, [session_id]).rowcount)

    def _usable(self, db: Any, request_id: str) -> bool:
        sql = f"SELECT 1 FROM human_requests AS r WHERE r.id = :id AND {_USABLE}"
        return db.execute(sql, {"id": request_id, "now": self._now()}).fetchone() is not None

    def closed_reason(self, request_id: str) -> str | None:
        """Why an answer to this request can no longer reach its agent, or None.

        None while the request is pending and usable, and once it has been
        answered (later answers are kept for agreement). Otherwise one line:
        the session ended (and how), or the deadline passed and its fallback
        answered.

        Raises:
            KeyError: No such request.
        """
        request = self._human_request(request_id)
        if request.status in ("answered", "declined"):
            return None
        rows = self._connection.rows(
            "SELECT status FROM sessions WHERE id = ?", [request.session_id]
        )
        session_status = rows[0]["status"] if rows else "gone"
        if session_status not in schema.LIVE_STATUSES:
            return f"this question's session has ended ({session_status})"
        past = request.deadline is not None and request.deadline.isoformat() <= self._now()
        if request.status == "expired" or past:
            fallback = request.fallback or "idk"
            return f"this question's deadline passed (the {fallback} fallback answered instead)"
        return None

    def get_human_request(self, request_id: str) -> HumanRequestRecord | None:
        """The request with this id, if there is one."""
        rows = self._connection.rows("SELECT * FROM human_requests WHERE id = ?", [request_id])
        return schema.request_from_row(rows[0]) if rows else None

    def _human_request(self, request_id: str) -> HumanRequestRecord:
        request = self.get_human_request(request_id)
        if request is None:
            raise KeyError(f"no human request {request_id!r}")
        return request

    def pending_human_requests(self, limit: int | None = None) -> list[HumanRequestRecord]:
        """Requests nobody has answered yet that an answer can still reach, in the queue's order.

        The queue's order (``listings.ORDER``): approvals and MCP forms first
        (an agent is blocked on each), then the nearest deadline, then the oldest.

        Each comes whole, context included (about a kilobyte of JSON each):
        a list to show reads ``queue_listing`` instead, which leaves it out.

        Args:
            limit: How many to return, the oldest first; None returns all.
        """
        return listings.pending_requests(self._connection.db().conn, limit, self._now())

    def requests_for(self, annotator: str) -> list[HumanRequestRecord]:
        """Requests that still want ``annotator``'s answer, with room for it, in the queue's order.

        A request wants answers, for agreement, until it has ``k`` of them,
        even once the first has settled it; an expired one wants none, nor
        does a pending one that nobody can use any more. One whose free
        places are all held by others' live claims has no room for now.
        """
        params = {"annotator": annotator_key(annotator), "now": self._now()}
        rows = self._connection.rows(WANTING_SQL, params)
        return [schema.request_from_row(row) for row in rows]

    # -- claims ---------------------------------------------------------------

    def claim_request(
        self, request_id: str, annotator: str, lease_seconds: float = DEFAULT_LEASE_S
    ) -> bool:
        """Hold a request for ``annotator`` for ``lease_seconds``, or renew their hold.

        One write transaction: however many annotators claim at once, live
        claims plus answers never exceed the request's ``k``.

        Args:
            request_id: The request to hold.
            annotator: Who holds it.
            lease_seconds: How long the claim lives unless renewed.

        Returns:
            True when ``annotator`` now holds a live claim; False when the
            request no longer wants their answer (closed, settled with ``k``
            answers, answered by them) or others' live claims and the
            answers given fill its places.

        Raises:
            KeyError: No such request.
            ValueError: ``lease_seconds`` is not positive.
        """
        until = self._lease_end(lease_seconds)
        annotator = annotator_key(annotator)
        with self._connection.write() as db:
            self._human_request(request_id)
            params = {"id": request_id, "annotator": annotator, "now": self._now()}
            wanted = db.execute(
                f"SELECT 1 FROM human_requests AS r WHERE r.id = :id AND {_WANTS}", params
            ).fetchone()
            if wanted is None:
                self._drop_claim(db, request_id, annotator)
                return False
            self._hold(db, request_id, annotator, until)
            return True

    def claim_next(
        self,
        annotator: str,
        lease_seconds: float = DEFAULT_LEASE_S,
        only: QueueFilter = EVERYTHING,
    ) -> HumanRequestRecord | None:
        """The request ``annotator`` should answer now, claimed for them.

        A live claim they already hold on a request that still wants them
        comes back first, renewed (a reloaded page gets its question back);
        otherwise the first request in the queue's order (``listings.ORDER``)
        that wants them and has a free place is claimed. ``only`` keeps
        the requests it names, held ones too. One write transaction.

        Returns:
            The claimed request, or None when no request has room for them.

        Raises:
            ValueError: ``lease_seconds`` is not positive.
        """
        until = self._lease_end(lease_seconds)
        annotator = annotator_key(annotator)
        with self._connection.write() as db:
            now = self._now()
            params = {"annotator": annotator, "now": now, **only.params(now)}
            held = db.execute(
                "SELECT r.id FROM claims AS held JOIN human_requests AS r ON r.id = held.request_id"
                " JOIN sessions AS s ON s.id = r.session_id"
                f" WHERE held.annotator = :annotator AND held.until > :now AND {_WANTS}"
                f"{only.sql()} ORDER BY r.created, r.rowid LIMIT 1",
                params,
            ).fetchone()
            if held is None:
                held = db.execute(f"{wanting_ids_sql(only)} LIMIT 1", params).fetchone()
            if held is None:
                return None
            self._hold(db, held[0], annotator, until)
            return self._human_request(held[0])

    def release_claim(self, request_id: str, annotator: str) -> None:
        """Let go of ``annotator``'s claim on a request (skipped, or left unanswered)."""
        with self._connection.write() as db:
            self._drop_claim(db, request_id, annotator_key(annotator))

    def _hold(self, db: Any, request_id: str, annotator: str, until: str) -> None:
        # Leases that ran out count for nothing; dropping them keeps the
        # table as small as the claims that live.
        db.execute("DELETE FROM claims WHERE until <= ?", [self._now()])
        db.execute(
            "INSERT INTO claims (request_id, annotator, until) VALUES (?, ?, ?)"
            " ON CONFLICT (request_id, annotator) DO UPDATE SET until = excluded.until",
            [request_id, annotator, until],
        )

    def _drop_claim(self, db: Any, request_id: str, annotator: str) -> None:
        db.execute(
            "DELETE FROM claims WHERE request_id = ? AND annotator = ?", [request_id, annotator]
        )

    # -- light listings -------------------------------------------------------

    def queue_listing(
        self,
        annotator: str | None = None,
        limit: int | None = None,
        only: QueueFilter = EVERYTHING,
    ) -> QueueListing:
        """The queue as a list shows it, without any request's context.

        Args:
            annotator: Whose queue: the requests that want their answer and
                have room for it (``requests_for``); None lists every usable
                pending request (``pending_human_requests``).
            limit: How many entries to return, in the queue's order
                (``listings.ORDER``); None returns all.
            only: Which requests to keep (kinds, run, setting, age); all by default.

        Returns:
            How many requests the (filtered) queue holds, of each kind, and its first ``limit``.
        """
        whose = annotator_key(annotator) if annotator is not None else None
        conn = self._connection.db().conn
        return listings.queue_listing(conn, whose, limit, self._now(), only)

    def queue_entry(self, request_id: str) -> QueueEntry | None:
        """One request as the whole queue lists it (no annotator), or None when not in it."""
        return listings.queue_entry(self._connection.db().conn, request_id, self._now())

    def queue_waited(self, since: datetime) -> int:
        """How many requests of the whole queue were asked at ``since`` or earlier."""
        since_text = since.astimezone(UTC).isoformat()
        return listings.queue_waited(self._connection.db().conn, since_text, self._now())

    def oldest_waiting(self) -> datetime | None:
        """When the request of the whole queue that has waited longest was asked; None if none."""
        return listings.oldest_waiting(self._connection.db().conn, self._now())

    def answers_by(self, annotator: str, limit: int = 20) -> list[AnsweredEntry]:
        """``annotator``'s latest answers (and declines), newest first.

        One indexed query, whose cost does not grow with how many they gave before.
        """
        return listings.answers_by(self._connection.db().conn, annotator_key(annotator), limit)

    def annotator_stats(self, annotator: str, now: datetime | None = None) -> AnnotatorStats:
        """``annotator``'s counter: answered today (UTC), waiting now, median time today.

        Args:
            annotator: Whose counter.
            now: The moment that decides "today" and "now"; the clock's by default.
        """
        conn = self._connection.db().conn
        return listings.annotator_stats(conn, annotator_key(annotator), now or self.clock.now())

    def human_answers(self, request_id: str) -> list[HumanAnswerRecord]:
        """Every answer to a request, first one first."""
        rows = self._connection.rows(
            "SELECT * FROM human_answers WHERE request_id = ? ORDER BY id", [request_id]
        )
        return [schema.answer_from_row(row) for row in rows]
