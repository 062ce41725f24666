"""The PostgreSQL engine: a connection that speaks like the store's SQLite one.

psycopg 3 comes with the optional ``postgres`` extra; without it a
PostgreSQL URL is refused with one line saying how to install it. A
``PgDatabase`` offers what the store calls on sqlite-utils' ``Database``
(``execute``, ``executemany``, ``query``, ``executescript``, ``rollback``,
``close``, ``conn``), running each statement as ``dialect.render`` gives it;
in ``pipelined`` mode it sends statements without waiting for their replies.

What can go wrong reaching a server (not running, wrong password, no such
database, a user without the privileges the store needs, a dropped
connection) becomes a ``StoreFileError``: one line naming the server
(without its password) and what to do, as for an SQLite file.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from aah.db_url import DatabaseURL, hide_password
from aah.errors import AahError
from aah.store.dialect import render
from aah.store.file_errors import ServerAwayError, StoreFileError
from aah.store.polling import tried_until

INSTALL = "pip install 'aah[postgres]'"
# How long opening a connection may take before the server counts as unreachable.
CONNECT_TIMEOUT_S = 10
# How many connections one pool (a store, a checkpointer) keeps open at most.
POOL_SIZE_ENV = "AAH_PG_POOL_SIZE"
DEFAULT_POOL_SIZE = 8
# Whether connections prepare the statements they run often (on by default).
PREPARE_ENV = "AAH_PG_PREPARE"
# How many runs of a statement on a connection before it is prepared (psycopg's default).
PREPARE_AFTER = 5
# The lock ``setting_up`` holds while one process makes what is missing.
SETUP_LOCK_KEY = 0x61616873  # "aahs"
# How long ``setting_up`` waits for another process's setup before giving up.
SETUP_WAIT_S = 120.0


def psycopg_module() -> Any:
    """psycopg, imported on first use (the ``postgres`` extra).

    Raises:
        AahError: The extra is not installed.
    """
    try:
        import psycopg
    except ImportError as exc:
        raise AahError(
            f"a PostgreSQL --db needs the postgres extra, which is not installed: {INSTALL}"
        ) from exc
    # psycopg warns of an error it drops while another is raised (a pipeline
    # closed on a lost connection): the one raised is the one the user is told.
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    return psycopg


def _where(url: DatabaseURL) -> str:
    parts = urlsplit(url.url)
    host = parts.netloc.rsplit("@", 1)[-1] or "the local socket"
    database = parts.path.lstrip("/") or parts.username or "(the user's own)"
    return f"database {database} on {host}"


def server_error(exc: BaseException, url: DatabaseURL) -> StoreFileError | None:
    """The one-line ``StoreFileError`` a psycopg error amounts to, or None for an SQL error.

    The server's messages on connecting carry no SQLSTATE through libpq, so
    they are told apart by their (English) text; anything else about the
    connection still comes out as one line.
    """
    psycopg = psycopg_module()
    if isinstance(exc, StoreFileError) or not isinstance(exc, psycopg.Error):
        return None
    said = hide_password(" ".join(str(exc).split()), url.url)
    check = f"`aah db check {url}` tells what is missing"
    where = _where(url)
    user = urlsplit(url.url).username or "the current user"
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        lowered = said.lower()
        if "for table" in lowered or "for sequence" in lowered or "for relation" in lowered:
            grant = table_grants(user)
        elif "for database" in lowered:
            grant = f"an admin can GRANT CONNECT, CREATE ON DATABASE to {user}"
        else:
            grant = f"an admin can GRANT CREATE ON SCHEMA public TO {user}"
        return StoreFileError(
            f"user {user} lacks a privilege the store needs in {where} ({said})",
            f"{grant}; {check}",
            url,
        )
    if isinstance(
        exc, psycopg.errors.InvalidSqlStatementName | psycopg.errors.DuplicatePreparedStatement
    ):
        # A pooler in transaction mode handed a statement prepared on one
        # server connection to another.
        return StoreFileError(
            f"a pooler between aah and {where} mixed up prepared statements ({said})",
            f"set {PREPARE_ENV}=off for every aah that uses it, or let the pooler track them"
            " (PgBouncer 1.21 or later with max_prepared_statements)",
            url,
        )
    if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return None
    lowered = said.lower()
    if "invalid connection option" in lowered or ("invalid" in lowered and "value" in lowered):
        return StoreFileError(
            f"{url} is not a PostgreSQL URL libpq can use ({said})",
            "fix the URL's options (postgresql://USER@HOST:5432/DATABASE?sslmode=require...)",
            url,
        )
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return StoreFileError(
            # The server does not say whether the user exists, by design.
            f"PostgreSQL refused the password of user {user} for {where}"
            " (or there is no such user)",
            f"put the right one in the URL, PGPASSWORD or ~/.pgpass; {check}",
            url,
        )
    if "does not exist" in lowered and "database" in lowered:
        return StoreFileError(
            f"there is no {where}",
            f"create it (createdb, or CREATE DATABASE as an admin); {check}",
            url,
        )
    if "role" in lowered and "does not exist" in lowered or "pg_hba.conf" in lowered:
        return StoreFileError(
            f"PostgreSQL does not let user {user} into {where} ({said})",
            f"create the user or allow it in pg_hba.conf; {check}",
            url,
        )
    if "permission denied" in lowered:
        return StoreFileError(
            f"user {user} may not connect to {where} ({said})",
            f"GRANT CONNECT ON DATABASE to {user}; {check}",
            url,
        )
    return ServerAwayError(
        f"cannot reach the PostgreSQL server for {where} ({said})",
        f"start the server or fix the URL's host and port; {check}",
        url,
    )


def table_grants(user: str) -> str:
    """What an admin runs so that ``user`` may use the store's tables (made by another user)."""
    return (
        "an admin can GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public "
        f"TO {user} and GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {user}"
    )


def raise_server_error(exc: BaseException, url: DatabaseURL) -> None:
    """Raise what ``exc`` amounts to (a ``StoreFileError``), or ``exc`` itself."""
    error = server_error(exc, url)
    if error is None:
        raise exc
    raise error from exc


@contextmanager
def translated_errors(url: DatabaseURL) -> Iterator[None]:
    """Turn what goes wrong with the server inside the block into a one-line error."""
    try:
        yield
    except Exception as exc:
        raise_server_error(exc, url)


@contextmanager
def setting_up(db: PgDatabase, what: str) -> Iterator[None]:
    """Hold the server's setup lock on ``db`` for the block: one process at a time.

    Processes that start together against a new database would each make the
    same tables, and ``CREATE TABLE IF NOT EXISTS`` run side by side fails in
    all but one (a duplicate key in ``pg_type``). The lock is a session-level
    advisory lock, so the block may run statements that refuse a transaction
    (``CREATE INDEX CONCURRENTLY``). It is polled, not waited for: a waiter
    blocked inside ``pg_advisory_lock`` is an open transaction, which such an
    index build waits for in turn, and the two would deadlock.

    Raises:
        StoreFileError: Another process held the lock for ``SETUP_WAIT_S``.
    """

    def locked() -> bool:
        return bool(db.execute(f"SELECT pg_try_advisory_lock({SETUP_LOCK_KEY})").fetchone()[0])

    if not tried_until(locked, SETUP_WAIT_S):
        raise StoreFileError(
            f"another process has been setting up {what} for {SETUP_WAIT_S:.0f} s",
            "see what holds it in pg_stat_activity, then try again",
            db.url,
        )
    try:
        yield
    finally:
        if not db.broken:  # a connection that is gone let go of the lock with it
            db.execute(f"SELECT pg_advisory_unlock({SETUP_LOCK_KEY})")


@lru_cache(maxsize=1)
def _pipelines_supported() -> bool:
    """Whether the libpq psycopg uses has pipeline mode (libpq 14 and later)."""
    return bool(psycopg_module().Pipeline.is_supported())


class PgCursor:
    """The rows of one statement, as the store reads an sqlite3 cursor's.

    Outside a pipeline they are read at once: the connection may go back to
    its pool (and to another thread) before the caller reads them. Inside
    one (``PgDatabase.pipelined``) the statement is only sent, and the first
    read of its rows or ``rowcount`` waits for the replies of everything sent
    so far: statements that nobody reads in between share one round trip.
    """

    def __init__(self, cursor: Any, db: PgDatabase | None = None) -> None:
        self._cursor: Any = cursor
        self._db = db
        self._rows: list[Any] = []
        self._rowcount = -1
        self._next = 0
        if db is None:
            self.load()

    def load(self) -> None:
        """Read the rows (waiting for the reply first if it is still on its way)."""
        cursor, self._cursor = self._cursor, None
        if cursor is None:
            return
        if self._db is not None:
            self._db.wait_for(cursor)
        self._rowcount = cursor.rowcount
        self._rows = list(cursor.fetchall()) if cursor.description else []
        cursor.close()

    def forget(self) -> None:
        """Drop the statement unread (its pipeline failed): it reads as no rows."""
        self._cursor = None

    @property
    def rowcount(self) -> int:
        """The rows the statement wrote (or read), as sqlite3 counts them."""
        self.load()
        return self._rowcount

    def fetchone(self) -> Any:
        """The next row (a tuple), or None."""
        self.load()
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        """Every row left."""
        self.load()
        rows, self._next = self._rows[self._next :], len(self._rows)
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgDatabase:
    """One psycopg connection, autocommitting unless the store begins a transaction.

    Args:
        url: The server's URL.

    Raises:
        AahError: The ``postgres`` extra is not installed.
        StoreFileError: The server cannot be reached or used (one line).
    """

    engine = "postgresql"

    def __init__(self, url: DatabaseURL) -> None:
        psycopg = psycopg_module()
        self.url = url
        try:
            # A statement run often is prepared, so the server parses and
            # plans it once per connection (perf/postgres_store.py: 40% less
            # server CPU per task), unless a pooler in between cannot follow.
            self._conn = psycopg.connect(
                url.url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                prepare_threshold=PREPARE_AFTER if prepares() else None,
            )
        except (psycopg.ProgrammingError, ValueError, UnicodeError) as exc:
            # libpq could not read the URL (an unknown option, a bad value).
            said = " ".join(hide_password(str(exc), url.url).split())
            raise AahError(
                f"{url} is not a PostgreSQL URL libpq can use ({said}): "
                "write postgresql://USER@HOST:5432/DATABASE"
            ) from exc
        except psycopg.Error as exc:
            raise_server_error(exc, url)
        self._pipeline: Any = None
        self._sent: list[PgCursor] | None = None

    @contextmanager
    def pipelined(self) -> Iterator[None]:
        """Send the block's statements without waiting for each reply (psycopg's pipeline mode).

        A statement's reply is waited for when its cursor is first read
        (``PgCursor``), and every reply by the end of the block, which
        raises the first statement's error, if any. Then every cursor of the
        block holds its rows, so reading one afterwards touches the
        connection no more (it may be another thread's by then). Not for
        ``executescript``: a pipeline sends one statement at a time.
        """
        if self._pipeline is not None or not _pipelines_supported():
            yield  # nested, or a libpq before 14: each statement waits for its reply
            return
        sent: list[PgCursor] = []
        try:
            with self._conn.pipeline() as pipeline:
                self._pipeline, self._sent = pipeline, sent
                try:
                    yield
                finally:
                    self._pipeline = self._sent = None
        except Exception as exc:
            for cursor in sent:
                cursor.forget()
            raise_server_error(exc, self.url)
        for cursor in sent:
            cursor.load()

    def wait_for(self, cursor: Any) -> None:
        """Wait for the reply to ``cursor``'s statement, sent in the pipeline."""
        if cursor.pgresult is None and self._pipeline is not None:
            try:
                self._pipeline.sync()
            except Exception as exc:
                raise_server_error(exc, self.url)

    @property
    def broken(self) -> bool:
        """Whether the connection is lost (the server restarted, the network dropped)."""
        return bool(self._conn.broken or self._conn.closed)

    def dropped_while_idle(self) -> bool:
        """Whether the server ended this idle connection (a restart, an idle timeout).

        A server that ends a connection says so and closes it, but the client
        learns it only at its next statement, which then fails. A
        connection that asked nothing and listens to nothing has nothing to
        read, so anything there (most likely that last word, and the close)
        retires it: at worst a connection is opened again for nothing.
        """
        if self.broken:
            return True
        try:
            # poll, not select: a process with over 1,024 files open (a web
            # server's clients) may hand out a larger descriptor.
            poller = select.poll()
            poller.register(self._conn.pgconn.socket, select.POLLIN)
            return bool(poller.poll(0))
        except Exception:  # no socket any more
            return True

    @property
    def idle(self) -> bool:
        """Whether no transaction is open on the connection."""
        psycopg = psycopg_module()
        return bool(self._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)

    @property
    def raw(self) -> Any:
        """The psycopg connection itself (for LangGraph's ``PostgresSaver``)."""
        return self._conn

    @property
    def conn(self) -> PgDatabase:
        """Itself: the store passes ``db.conn`` where SQLite's raw connection goes."""
        return self

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> PgCursor:
        """Run one statement (SQLite's dialect, see ``dialect``)."""
        from psycopg.rows import tuple_row

        try:
            # Tuples whatever the connection's row factory (a saver's gives dicts).
            cursor = self._conn.cursor(row_factory=tuple_row)
            cursor.execute(render(sql, "postgresql"), params or ())
            if self._sent is None:
                return PgCursor(cursor)
            self._sent.append(PgCursor(cursor, self))
            return self._sent[-1]
        except Exception as exc:
            raise_server_error(exc, self.url)
            raise  # unreachable: for the type checker

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement once per row; the cursor's ``rowcount`` is their total."""
        try:
            with self._conn.cursor() as cursor:
                cursor.executemany(render(sql, "postgresql"), list(rows))
                if self._pipeline is not None:
                    self._pipeline.sync()  # for the rowcount
                return PgCursor(cursor)
        except Exception as exc:
            raise_server_error(exc, self.url)
            raise

    def executescript(self, sql: str) -> None:
        """Run several statements of PostgreSQL's own SQL, as they are (no parameters)."""
        try:
            self._conn.execute(sql)
        except Exception as exc:
            raise_server_error(exc, self.url)

    def query(
        self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """The rows ``sql`` selects, as dicts by column name."""
        from psycopg.rows import dict_row

        try:
            with self._conn.cursor(row_factory=dict_row) as cursor:
                cursor.execute(render(sql, "postgresql"), params or ())
                self.wait_for(cursor)
                rows = cursor.fetchall() if cursor.description else []
        except Exception as exc:
            raise_server_error(exc, self.url)
            raise
        return iter(rows)

    def rollback(self) -> None:
        """End the open transaction, if any, writing nothing."""
        if self._conn.closed:
            return
        try:
            self._conn.execute("ROLLBACK")
        except Exception as exc:
            raise_server_error(exc, self.url)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def prepares() -> bool:
    """Whether connections prepare their frequent statements: ``AAH_PG_PREPARE``, on by default.

    Off (``AAH_PG_PREPARE=off``) for a pooler in transaction mode that does
    not track prepared statements (PgBouncer before 1.21, or without
    ``max_prepared_statements``): it may hand a statement to a server
    connection that never prepared it.

    Raises:
        AahError: The variable is neither on nor off.
    """
    said = os.environ.get(PREPARE_ENV, "").strip().lower()
    if said in ("", "on", "1", "yes", "true"):
        return True
    if said in ("off", "0", "no", "false"):
        return False
    raise AahError(
        f"{PREPARE_ENV}={said!r} is neither on nor off: write {PREPARE_ENV}=off behind a pooler"
        " that does not track prepared statements"
    )


def pool_size() -> int:
    """``AAH_PG_POOL_SIZE`` (connections per pool), or the default.

    Raises:
        AahError: It is not a whole number of at least 1.
    """
    said = os.environ.get(POOL_SIZE_ENV, "").strip()
    if not said:
        return DEFAULT_POOL_SIZE
    try:
        size = int(said)
    except ValueError:
        size = 0
    if size < 1:
        raise AahError(f"{POOL_SIZE_ENV}={said!r} is not a number of connections: write e.g. 8")
    return size


class PgPool:
    """Connections to one database, shared by a process's threads, at most ``size`` lent.

    A thread borrows one for a statement or a transaction and gives it back;
    one the server dropped (a restart, a network cut) is closed on its
    return, and the next borrower opens a new one, so each process
    reconnects on its own. A thread that finds every connection lent waits
    for one. Opening a connection fails the way ``PgDatabase`` does, at once
    and in one line: psycopg_pool's pool would instead retry in the
    background and fail after its timeout without the server's reason.

    Args:
        url: The server's URL.
        size: The most connections open at once (``pool_size()`` if None).
    """

    def __init__(self, url: DatabaseURL, size: int | None = None) -> None:
        self.url = url
        self.size = size if size is not None else pool_size()
        self._idle: list[PgDatabase] = []
        self._lent: set[PgDatabase] = set()
        self._opening = 0
        self._retired: set[PgDatabase] = set()
        self._ready = threading.Condition()

    @contextmanager
    def connection(self) -> Iterator[PgDatabase]:
        """A connection of the pool's, this thread's alone until the block ends."""
        db = self._take()
        try:
            yield db
        finally:
            self._give_back(db)

    def _take(self) -> PgDatabase:
        with self._ready:
            while True:
                while self._idle:
                    db = self._idle.pop()
                    if not db.dropped_while_idle():
                        self._lent.add(db)
                        return db
                    db.close()
                if len(self._lent) + self._opening < self.size:
                    self._opening += 1
                    break
                self._ready.wait()
        try:
            db = PgDatabase(self.url)
        except BaseException:
            with self._ready:
                self._opening -= 1
                self._ready.notify()
            raise
        with self._ready:
            self._opening -= 1
            self._lent.add(db)
        return db

    def _give_back(self, db: PgDatabase) -> None:
        if not db.broken and not db.idle:
            # A transaction left open (an error between BEGIN and COMMIT).
            try:
                db.rollback()
            except Exception:
                db.close()
        with self._ready:
            self._lent.discard(db)
            if db in self._retired or db.broken:
                self._retired.discard(db)
                db.close()
            else:
                self._idle.append(db)
            self._ready.notify()

    def close(self) -> None:
        """Close every connection: the idle ones now, a lent one on its return.

        The pool stays usable: a later borrower opens a new connection.
        """
        with self._ready:
            idle, self._idle = self._idle, []
            self._retired |= self._lent
        for db in idle:
            db.close()


class PooledPgDatabase:
    """A ``PgDatabase`` whose statements borrow a connection of a ``PgPool`` each.

    Inside ``pinned()`` the thread keeps one connection for every statement
    (a transaction needs them all on one); outside, each statement borrows
    whichever is free, so threads that read at once do not queue on one
    connection, and a process's connections stay bounded however many
    threads it runs (a web server's workers).
    """

    engine = "postgresql"

    def __init__(self, pool: PgPool) -> None:
        self.pool = pool
        self.url = pool.url
        self._local = threading.local()

    @contextmanager
    def pinned(self) -> Iterator[PgDatabase]:
        """One connection for this thread's statements until the block ends."""
        held: PgDatabase | None = getattr(self._local, "held", None)
        if held is not None:
            yield held
            return
        with self.pool.connection() as db:
            self._local.held = db
            try:
                yield db
            finally:
                self._local.held = None

    @property
    def conn(self) -> PooledPgDatabase:
        """Itself: the store passes ``db.conn`` where SQLite's raw connection goes."""
        return self

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> PgCursor:
        """``PgDatabase.execute`` on a borrowed connection."""
        with self.pinned() as db:
            return db.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """``PgDatabase.executemany`` on a borrowed connection."""
        with self.pinned() as db:
            return db.executemany(sql, rows)

    def executescript(self, sql: str) -> None:
        """``PgDatabase.executescript`` on a borrowed connection."""
        with self.pinned() as db:
            db.executescript(sql)

    def query(
        self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """``PgDatabase.query`` on a borrowed connection."""
        with self.pinned() as db:
            return db.query(sql, params)

    def rollback(self) -> None:
        """Roll back this thread's pinned connection, if it holds one."""
        held: PgDatabase | None = getattr(self._local, "held", None)
        if held is not None:
            held.rollback()

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()
