"""The approval half of the session store: calls a person approved, run at most once.

A call that needs approval is decided through the human-request queue (a
request of kind ``approval``); this module keeps what happens after the
decision. Before an approved call sends its HTTP request, the runner writes
that it starts (``start_approved_run``); a runner killed and started again
finds the row and does not send the call a second time: a finished call's
result is handed back, and a call cut off mid-request is reported as of
unknown effect, never repeated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from aah.events import Event
from aah.store import schema as schema
from aah.store.connection import StoreConnection

_now = schema.now_text


class ApprovedRun(BaseModel):
    """An approved call that started running, and its result once it came.

    Attributes:
        session_id: The session that made the call.
        call_id: The id the model gave the call.
        arguments: The arguments it was sent with (an edit's, if edited).
        finished: Whether the result was stored; False: cut off mid-request.
        status_code: The HTTP status, if a response came.
        ok: Whether the call gave a usable result.
        result: The result text the agent read.
        latency_ms: The request's wall time.
        http_mode: How HTTP was served.
    """

    model_config = ConfigDict(frozen=True)

    session_id: str
    call_id: str
    arguments: dict[str, Any]
    finished: bool
    status_code: int | None = None
    ok: bool = False
    result: str = ""
    latency_ms: float = 0.0
    http_mode: str = ""


class ApprovedRuns:
    """Approved calls' runs in one session database.

    Args:
        connection: The database's connections, shared with the rest of the store.
    """

    def __init__(self, connection: StoreConnection) -> None:
        self._connection = connection

    def start_approved_run(
        self, session_id: str, call_id: str, arguments: Mapping[str, Any]
    ) -> ApprovedRun | None:
        """Record that an approved call starts running, unless it started before.

        Returns:
            None when this is the call's first start: send it. Otherwise the
            earlier run, which must not be sent again.
        """
        with self._connection.write() as db:
            inserted = db.execute(
                "INSERT INTO approved_runs (session_id, call_id, arguments, started)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [session_id, call_id, schema.to_json(dict(arguments)), _now()],
            ).rowcount
            if inserted:
                return None
        found = self.approved_run(session_id, call_id)
        assert found is not None  # the conflict was this row
        return found

    def finish_approved_run(
        self,
        session_id: str,
        call_id: str,
        *,
        status_code: int | None,
        ok: bool,
        result: str,
        latency_ms: float,
        http_mode: str,
    ) -> None:
        """Store the result of an approved call that :meth:`start_approved_run` let run."""
        with self._connection.write() as db:
            db.execute(
                "UPDATE approved_runs SET finished = ?, status_code = ?, ok = ?, result = ?,"
                " latency_ms = ?, http_mode = ? WHERE session_id = ? AND call_id = ?",
                [
                    _now(),
                    status_code,
                    int(ok),
                    schema.scrub_text(result),
                    latency_ms,
                    http_mode,
                    session_id,
                    call_id,
                ],
            )

    def approved_run(self, session_id: str, call_id: str) -> ApprovedRun | None:
        """The run of this approved call, if it started."""
        rows = self._connection.rows(
            "SELECT * FROM approved_runs WHERE session_id = ? AND call_id = ?",
            [session_id, call_id],
        )
        if not rows:
            return None
        row = rows[0]
        return ApprovedRun(
            session_id=row["session_id"],
            call_id=row["call_id"],
            arguments=json.loads(row["arguments"]),
            finished=row["finished"] is not None,
            status_code=row["status_code"],
            ok=bool(row["ok"]),
            result=row["result"] or "",
            latency_ms=row["latency_ms"] or 0.0,
            http_mode=row["http_mode"] or "",
        )


class ApprovalStep(NamedTuple):
    """One approval event of a session, with the session's run and setting (for scoring)."""

    session_id: str
    run: str | None
    setting: str | None
    event: Event


def approval_steps(connection: StoreConnection, runs: Sequence[str] | None) -> list[ApprovalStep]:
    """Every approval request and decision event of ``runs`` (None: all), in order.

    One query over the events' kind, whatever the number of sessions.
    """
    sql = (
        "SELECT e.session_id, e.seq, e.kind, e.ts, e.payload, s.run, s.setting FROM events AS e"
        " JOIN sessions AS s ON s.id = e.session_id"
        " WHERE e.kind IN ('approval_requested', 'approval_decided')"
    )
    params: list[Any] = []
    if runs is not None:
        sql += f" AND s.run IN ({', '.join('?' for _ in runs)})"
        params += list(runs)
    sql += " ORDER BY s.started, s.rowid, e.seq"
    return [
        ApprovalStep(row["session_id"], row["run"], row["setting"], schema.event_from_row(row))
        for row in connection.rows(sql, params)
    ]
