"""The session database's connections: one per thread, and writes one at a time.

Each thread gets its own connection, because a sqlite3 connection must not
be used by two threads at once. Writes take SQLite's write lock up front
(``write_transaction``) and, within one process, one Python lock per file.
The store's parts (sessions, human requests) share one ``StoreConnection``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aah.db_url import is_database_url
from aah.store import schema as schema
from aah.store.sqlite_db import Database
from aah.store.writes import write_lock, write_transaction


class StoreConnection:
    """Per-thread connections to one session database, and its write transactions.

    Opening a file that has no tables yet creates them (WAL mode first);
    so does opening an empty PostgreSQL database.

    Args:
        path: The database file (its parent folder must exist), or a
            ``DatabaseURL``.

    Raises:
        StoreFileError: The file cannot be used (see ``schema.needs_schema``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._open: weakref.WeakSet[Database] = weakref.WeakSet()
        self._open_guard = threading.Lock()
        self._lock = write_lock(path)
        self.engine = "postgresql" if is_database_url(path) else "sqlite"
        if self.engine == "postgresql":
            # Every writer of every process queues on the server (see
            # ``write_transaction``), so a new database gets its tables once.
            if schema.needs_schema(self.db(), path):
                with self.write() as db:
                    if schema.needs_schema(db, path):
                        schema.create_schema(db)
            return
        # Only a new file takes the write lock, so that readers never need it.
        if schema.needs_schema(self.db(), path):
            self.db().enable_wal()
            # Upgrading an older file rebuilds a table, which SQLite does
            # with foreign keys off (they cannot change inside a transaction).
            self.db().execute("PRAGMA foreign_keys = OFF")
            try:
                with self.write() as db:
                    if schema.needs_schema(db, path):  # another process may have won
                        schema.create_schema(db)
            finally:
                self.db().execute("PRAGMA foreign_keys = ON")

    def db(self) -> Database:
        """This thread's connection, opened on first use."""
        db: Database | None = getattr(self._local, "db", None)
        if db is not None and getattr(db, "broken", False):
            # A PostgreSQL connection the server dropped (a restart, a network
            # cut) failed its last statement in one line; the next one gets a
            # new connection instead of failing for good.
            db = None
        if db is None:
            db = schema.connect(self.path)
            self._local.db = db
            with self._open_guard:
                self._open.add(db)
        return db

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction of this thread's connection (``write_transaction``)."""
        with write_transaction(self.db(), self._lock) as db:
            yield db

    def rows(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The rows ``sql`` selects, as dicts by column name."""
        return list(self.db().query(sql, params))

    def close(self) -> None:
        """Close the connections opened here, in every thread."""
        with self._open_guard:
            for db in list(self._open):
                db.close()
            self._open.clear()
        self._local = threading.local()
