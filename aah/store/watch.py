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
is sent with each look, and a request comes back from ``ready`` once (until
it is added again) rather than on every look after a commit. In place of the
commit counter a second connection LISTENs on ``schema.NOTIFY_CHANNEL``,
which the store's triggers notify in the very transaction that adds a
request, answers or closes one, or ends a session: the join runs only after
a notification, after requests were added, or every ``FALLBACK_POLL_S`` in
case one was missed. A dropped listening connection is opened again with a
backoff of at most ``RECONNECT_MAX_S``; what was said meanwhile was not heard,
so the first look after it runs the join. ``fileno`` gives the listening
socket, for an event loop to wake on a notification instead of on a timer.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aah.db_url import DatabaseURL, is_database_url
from aah.store import schema as schema
from aah.store.file_errors import StoreFileError

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


# Without a notification the join still runs this often: a notification is
# lost with a connection dropped between the commit and its delivery.
FALLBACK_POLL_S = 5.0
# Reopening a dropped listening connection waits this long at first, doubling
# on each failure up to RECONNECT_MAX_S.
RECONNECT_FIRST_S = 0.1
RECONNECT_MAX_S = 5.0
# How long the server may stay unreachable before ``ready`` says so.
SERVER_GONE_S = 60.0


class _Listener:
    """A connection LISTENing on the store's channel, opened again when it drops."""

    def __init__(self, url: DatabaseURL) -> None:
        self._url = url
        self._conn: Any = None
        self._backoff = RECONNECT_FIRST_S
        self._next_try = 0.0
        self._open()

    def _open(self) -> bool:
        from aah.store.postgres import CONNECT_TIMEOUT_S, psycopg_module

        psycopg = psycopg_module()
        try:
            conn = psycopg.connect(
                self._url.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
            conn.execute(f"LISTEN {schema.NOTIFY_CHANNEL}")
        except psycopg.Error:
            self._conn = None
            self._next_try = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, RECONNECT_MAX_S)
            return False
        self._conn, self._backoff = conn, RECONNECT_FIRST_S
        return True

    def fileno(self) -> int | None:
        """The listening socket, or None while the connection is down."""
        if self._conn is None or self._conn.closed:
            return None
        return int(self._conn.fileno())

    def heard(self) -> bool:
        """Whether something may have changed since the last call.

        True after a notification, and after the connection was opened again
        (what was notified while it was down is lost).
        """
        from aah.store.postgres import psycopg_module

        if self._conn is None:
            return time.monotonic() >= self._next_try and self._open()
        pgconn, heard = self._conn.pgconn, False
        try:
            # Read what came without waiting. A connection the server closed
            # says so only on the read after its last message: a socket still
            # readable after one read is read once more.
            for _ in range(2):
                pgconn.consume_input()
                while pgconn.notifies() is not None:
                    heard = True
                if not select.select([pgconn.socket], [], [], 0)[0]:
                    break
            return heard
        except psycopg_module().Error:
            self._conn.close()
            self._conn = None
            self._next_try = time.monotonic()  # the first retry is at once
            return self._open()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class RequestWatch:
    """A set of human-request ids, and which of them no longer wait.

    Use from one thread at a time (the runner's event loop).

    Args:
        path: The session database; it must exist with its tables.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._db = schema.connect(path)
        self._server = is_database_url(path)
        # PostgreSQL: the watched ids, and those ``ready`` returned already.
        self._watched: set[str] = set()
        self._reported: set[str] = set()
        self._listener: _Listener | None = None
        self._last_join = 0.0
        self._down_since = 0.0
        if self._server:
            self._listener = _Listener(path)  # type: ignore[arg-type]  # a URL, said so
            # A database made before the store notified has no such trigger:
            # its watch joins on every look, as it did then.
            notifies = self._db.execute(
                "SELECT 1 FROM pg_trigger WHERE tgname = 'notify_requests'"
            ).fetchone()
            self._fallback_s = FALLBACK_POLL_S if notifies else 0.0
        else:
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
            self._added |= bool(added - self._watched)
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
        if self._listener is not None:
            return self._ready_on_server(self._listener)
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        if version == self._version and not self._added:
            return []
        self._version, self._added = version, False
        return [row[0] for row in self._db.execute(_READY).fetchall()]

    def fileno(self) -> int | None:
        """A socket that becomes readable when a look may find something (PostgreSQL), or None.

        None on SQLite, and on PostgreSQL while the listening connection is
        down: the caller then looks on its timer alone.
        """
        return None if self._listener is None else self._listener.fileno()

    def _ready_on_server(self, listener: _Listener) -> list[str]:
        heard = listener.heard()
        now = time.monotonic()
        due = now - self._last_join >= self._fallback_s
        if not self._watched or not (heard or self._added or due):
            return []
        try:
            if getattr(self._db, "broken", False):
                # The server dropped the connection (a restart): a new one.
                self._db.close()
                self._db = schema.connect(self._path)
            rows = self._db.execute(_READY_PG, [sorted(self._watched)]).fetchall()
        except StoreFileError:
            # A restart takes seconds: the watched sessions are safe in the
            # store meanwhile, so only a server gone for longer is an error.
            if not getattr(self._db, "broken", False):
                raise
            self._down_since = self._down_since or now
            if now - self._down_since > SERVER_GONE_S:
                raise
            self._added = True  # look again next time
            return []
        self._last_join, self._added, self._down_since = now, False, 0.0
        new = [row[0] for row in rows if row[0] not in self._reported]
        self._reported.update(new)
        return new

    def close(self) -> None:
        """Close the watch's connections."""
        if self._listener is not None:
            self._listener.close()
        self._db.close()
