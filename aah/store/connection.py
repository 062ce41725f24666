"""The session database's connections, and writes one at a time.

An SQLite file gets one connection per thread, because a sqlite3 connection
must not be used by two threads at once. A PostgreSQL database gets a pool
(``PgPool``): each statement borrows a connection, and a write transaction
keeps one from BEGIN to COMMIT. Writes take the engine's write lock up front
(``write_transaction``) and, within one process, one Python lock per
database. The store's parts (sessions, human requests) share one
``StoreConnection``.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aah.db_url import is_database_url
from aah.store import schema as schema
from aah.store.file_errors import StoreFileError
from aah.store.sqlite_db import Database
from aah.store.writes import write_lock, write_transaction

if TYPE_CHECKING:
    from aah.store.postgres import PooledPgDatabase


def _identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode, or None when nothing is at ``path``."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


class StoreConnection:
    """Connections to one session database (per thread, or a pool), and its write transactions.

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
        self._pooled: PooledPgDatabase | None = None
        # The file's identity once set up: one deleted or replaced while in
        # use must not take writes (they would go to the unlinked file, and
        # be lost) nor be made again, empty, by a new thread's connection.
        self._identity: tuple[int, int] | None = None
        if self.engine == "postgresql":
            from aah.store.postgres import PgPool, PooledPgDatabase

            self._pooled = PooledPgDatabase(PgPool(path))  # type: ignore[arg-type]  # a URL
            # Every writer of every process queues on the server (see
            # ``write_transaction``), so a new database gets its tables once.
            if schema.needs_schema(self.db(), path):
                with self.write(pipelined=False) as db:  # the schema is a script
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
        self._identity = _identity(path)

    def db(self) -> Database:
        """This thread's connection, opened on first use (PostgreSQL: the pool's)."""
        if self._pooled is not None:
            return self._pooled  # speaks as a Database does
        db: Database | None = getattr(self._local, "db", None)
        if db is None:
            self._check_file()
            db = schema.connect(self.path)
            self._local.db = db
            with self._open_guard:
                self._open.add(db)
        return db

    @contextmanager
    def write(self, *, exclusive: bool = True, pipelined: bool = True) -> Iterator[Database]:
        """One write transaction of this thread's connection (``write_transaction``).

        ``exclusive=False`` lets it run beside other writers on PostgreSQL
        (SQLite has one writer whatever is asked); PostgreSQL pipelines the
        transaction's statements unless ``pipelined=False`` (a script).
        """
        if self._pooled is not None:
            with (
                self._pooled.pinned() as pinned,
                write_transaction(
                    pinned, self._lock, exclusive=exclusive, pipelined=pipelined
                ) as db,
            ):
                yield db
            return
        self._check_file()
        with write_transaction(self.db(), self._lock) as db:
            yield db

    def _check_file(self) -> None:
        """Raise if the SQLite file set up at open is no longer at its path."""
        if self._identity is not None and _identity(self.path) != self._identity:
            raise StoreFileError(
                f"{self.path} was deleted or replaced while in use",
                "put the session database back (from a backup), or start again with another "
                "--db; what was written since it went is not in it",
                self.path,
            )

    def rows(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The rows ``sql`` selects, as dicts by column name."""
        return list(self.db().query(sql, params))

    def close(self) -> None:
        """Close the connections opened here, in every thread."""
        if self._pooled is not None:
            self._pooled.close()
        with self._open_guard:
            for db in list(self._open):
                db.close()
            self._open.clear()
        self._local = threading.local()
