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

import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aah.db_url import is_database_url
from aah.store import schema as schema
from aah.store.file_errors import StoreFileError
from aah.store.polling import tried_until
from aah.store.sqlite_db import Database
from aah.store.writes import write_lock, write_transaction

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from aah.store.postgres import PooledPgDatabase


def _identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode, or None when nothing is at ``path``."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


@contextmanager
def _one_snapshot(db: Database) -> Iterator[None]:
    """Read the SQLite file as of one moment in the block (a read transaction).

    Another process's setup commits its tables and their version at once;
    statements read outside a transaction could see one but not the other.
    """
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


def _enable_wal(db: Database, path: Path) -> None:
    """Switch the SQLite file to WAL, waiting while other processes have it open.

    Changing the journal mode does not wait out ``busy_timeout`` as other
    statements do: processes that open a new file together find it locked.

    Raises:
        StoreFileError: The file stayed locked for ``BUSY_TIMEOUT_S``.
    """

    def switched() -> bool:
        try:
            db.enable_wal()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            return False
        return True

    if not tried_until(switched, schema.BUSY_TIMEOUT_S):
        raise StoreFileError(
            f"{path} stayed locked by another process for {schema.BUSY_TIMEOUT_S:.0f} s",
            "end the program that holds it (another aah, a database browser), then try again",
            path,
        )


def _needs_schema_at_a_glance(db: Database, path: Path) -> bool:
    """``schema.needs_schema`` read outside the write lock; a problem seen is looked at again.

    Each statement of the look sees the server as it is then: another
    process's setup that commits between the version read and the table list
    shows its tables without their version, which reads as another program's
    database. Under the write lock (the caller's second look) no setup is
    halfway, so what is seen there is what is so.
    """
    try:
        return schema.needs_schema(db, path)
    except StoreFileError:
        return True


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
        self._wal_mover: WalMover | None = None
        # The file's identity once set up: one deleted or replaced while in
        # use must not take writes (they would go to the unlinked file, and
        # be lost) nor be made again, empty, by a new thread's connection.
        self._identity: tuple[int, int] | None = None
        if self.engine == "postgresql":
            from aah.store.postgres import PgPool, PooledPgDatabase

            self._pooled = PooledPgDatabase(PgPool(path))  # type: ignore[arg-type]  # a URL
            # Every writer of every process queues on the server (see
            # ``write_transaction``), so a new database gets its tables once.
            if _needs_schema_at_a_glance(self.db(), path):
                with self.write(pipelined=False) as db:  # the schema is a script
                    if schema.needs_schema(db, path):
                        schema.create_schema(db)
            return
        # Only a new file takes the write lock, so that readers never need it.
        with _one_snapshot(self.db()):
            missing = schema.needs_schema(self.db(), path)
        if missing:
            _enable_wal(self.db(), path)
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
            if self._wal_mover is not None:
                db.execute("PRAGMA wal_autocheckpoint = 0")  # the mover's job
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

    def move_wal_in_background(self) -> None:
        """Copy the WAL's pages into the database file on a thread of its own, not in commits.

        SQLite does it in the commit that finds the WAL past 1,000 pages,
        with an fsync: 5-10 ms in which the committing thread (an event
        loop running sessions) waits. From now on this store's connections
        never do it; a ``WalMover`` does, every quarter second, until
        :meth:`close`. Nothing to do for PostgreSQL.
        """
        if self.engine != "sqlite" or self._wal_mover is not None:
            return
        self._wal_mover = WalMover(self.path)
        with self._open_guard:
            for db in list(self._open):
                db.execute("PRAGMA wal_autocheckpoint = 0")

    def close(self) -> None:
        """Close the connections opened here, in every thread (and stop the WAL's mover)."""
        if self._wal_mover is not None:
            self._wal_mover.stop()
            self._wal_mover = None
        if self._pooled is not None:
            self._pooled.close()
        with self._open_guard:
            for db in list(self._open):
                db.close()
            self._open.clear()
        self._local = threading.local()


class WalMover:
    """A thread that copies an SQLite file's WAL into the file, every ``every`` seconds.

    A passive checkpoint on a connection of its own: it runs beside the
    writers (and waits for no reader), and a busy file (another process's
    checkpoint under way) is left for the next round. The last round runs
    when it stops.
    """

    def __init__(self, path: Path, every: float = 0.25) -> None:
        """Start moving ``path``'s WAL."""
        self.path = path
        self.every = every
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aah-wal-mover", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            db = schema.connect(self.path)
        except StoreFileError:
            return  # the store's own connections say what is wrong with the file
        try:
            while not self._stop.wait(self.every):
                self._move(db)
            self._move(db)
        finally:
            db.close()

    def _move(self, db: Database) -> None:
        try:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.rounds += 1
        except (sqlite3.Error, StoreFileError) as exc:
            # The next round (or a later commit elsewhere) moves what this did not.
            _log.debug("moving the WAL of %s: %s", self.path, exc)

    def stop(self) -> None:
        """Move what is left and end the thread."""
        self._stop.set()
        self._thread.join()
