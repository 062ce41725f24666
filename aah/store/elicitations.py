"""The elicitation half of the store's read-only queries: MCP servers' questions, for scoring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from aah.events import Event
from aah.store import schema as schema
from aah.store.connection import StoreConnection


class ElicitationStep(NamedTuple):
    """One elicitation event of a session, with the session's run and setting."""

    session_id: str
    run: str | None
    setting: str | None
    event: Event


def elicitation_steps(
    connection: StoreConnection, runs: Sequence[str] | None
) -> list[ElicitationStep]:
    """Every elicitation asked and answered event of ``runs`` (None: all), in order.

    One query over the events' kind, whatever the number of sessions.
    """
    sql = (
        "SELECT e.session_id, e.seq, e.kind, e.ts, e.payload, s.run, s.setting FROM events AS e"
        " JOIN sessions AS s ON s.id = e.session_id"
        " WHERE e.kind IN ('elicitation_asked', 'elicitation_answered')"
    )
    params: list[Any] = []
    if runs is not None:
        sql += f" AND s.run IN ({', '.join('?' for _ in runs)})"
        params += list(runs)
    sql += " ORDER BY s.started, s.rowid, e.seq"
    return [
        ElicitationStep(row["session_id"], row["run"], row["setting"], schema.event_from_row(row))
        for row in connection.rows(sql, params)
    ]
