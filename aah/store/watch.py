"""Which of many watched questions can let their sessions go on: one cheap check for all.

A runner parks a session that waits for a person (its checkpoint and its
pending request are all that is kept) and watches the request. This module
answers, for every watched request at once, "which ones no longer wait?":
answered, declined or expired, or their session ended elsewhere (cancelled).

The check costs next to nothing while nothing changes: SQLite's
``data_version`` tells whether any other connection committed since the
last look, and only then (or when requests were added) is the watched set
joined against the tables. The set lives in a temporary table of this
watch's own connection, so the join's cost grows with the watched requests,
never with the whole history of the file.

On PostgreSQL (a ``DatabaseURL``) the watched set is this object's own and
is sent with each look; there is no commit counter to read for free, so
each look runs the join, and a request comes back from ``ready`` once (until
it is added again) rather than on every look after a commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from aah.db_url import is_database_url
from aah.store import schema as schema

_CREATE = "CREATE TEMP TABLE IF NOT EXISTS watched (id TEXT PRIMARY KEY) WITHOUT ROWID"
_READY = (
    "SELECT w.id FROM temp.watched AS w"
    " LEFT JOIN human_requests AS r ON r.id = w.id"
    " LEFT JOIN sessions AS s ON s.id = r.session_id"
    " WHERE r.id IS NULL OR r.status != 'pending'"
    f" OR s.status IS NULL OR s.status NOT IN {tuple(schema.LIVE_STATUSES)!r}"
)


_READY_PG = (
    "SELECT w.id FROM unnest(?::text[]) AS w(id)"
    " LEFT JOIN human_requests AS r ON r.id = w.id"
    " LEFT JOIN sessions AS s ON s.id = r.session_id"
    " WHERE r.id IS NULL OR r.status != 'pending'"
    f" OR s.status IS NULL OR s.status NOT IN {tuple(schema.LIVE_STATUSES)!r}"
)


class RequestWatch:
    """A set of human-request ids, and which of them no longer wait.

    Use from one thread at a time (the runner's event loop).

    Args:
        path: The session database; it must exist with its tables.
    """

    def __init__(self, path: Path) -> None:
        self._db = schema.connect(path)
        self._server = is_database_url(path)
        # PostgreSQL: the watched ids, and those ``ready`` returned already.
        self._watched: set[str] = set()
        self._reported: set[str] = set()
        if not self._server:
            self._db.execute(_CREATE)
        self._version: int | None = None
        self._added = False

    def __len__(self) -> int:
        """How many requests are watched."""
        if self._server:
            return len(self._watched)
        return int(self._db.execute("SELECT count(*) FROM temp.watched").fetchone()[0])

    def add(self, request_ids: Iterable[str]) -> None:
        """Watch these requests (again: a no-op)."""
        if self._server:
            added = set(request_ids)
            self._watched |= added
            self._reported -= added
            return
        self._db.conn.executemany(
            "INSERT OR IGNORE INTO temp.watched (id) VALUES (?)", [(i,) for i in request_ids]
        )
        self._added = True

    def discard(self, request_ids: Iterable[str]) -> None:
        """Stop watching these requests."""
        if self._server:
            gone = set(request_ids)
            self._watched -= gone
            self._reported -= gone
            return
        self._db.conn.executemany(
            "DELETE FROM temp.watched WHERE id = ?", [(i,) for i in request_ids]
        )

    def ready(self) -> list[str]:
        """The watched requests that no longer wait; they stay watched until discarded.

        Nothing is read but one pragma when no other connection committed
        and no request was added since the last call.
        """
        if self._server:
            if not self._watched:
                return []
            rows = self._db.execute(_READY_PG, [sorted(self._watched)]).fetchall()
            new = [row[0] for row in rows if row[0] not in self._reported]
            self._reported.update(new)
            return new
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        if version == self._version and not self._added:
            return []
        self._version, self._added = version, False
        return [row[0] for row in self._db.execute(_READY).fetchall()]

    def close(self) -> None:
        """Close the watch's connection."""
        self._db.close()
