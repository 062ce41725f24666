"""The PostgreSQL engine: a connection that speaks like the store's SQLite one.

psycopg 3 comes with the optional ``postgres`` extra; without it a
PostgreSQL URL is refused with one line saying how to install it. A
``PgDatabase`` offers what the store calls on sqlite-utils' ``Database``
(``execute``, ``executemany``, ``query``, ``executescript``, ``rollback``,
``close``, ``conn``), running each statement as ``dialect.render`` gives it.

What can go wrong reaching a server (not running, wrong password, no such
database, a user without the privileges the store needs, a dropped
connection) becomes a ``StoreFileError``: one line naming the server
(without its password) and what to do, as for an SQLite file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from aah.db_url import DatabaseURL
from aah.errors import AahError
from aah.store.dialect import render
from aah.store.file_errors import StoreFileError

INSTALL = "pip install 'aah[postgres]'"
# How long opening a connection may take before the server counts as unreachable.
CONNECT_TIMEOUT_S = 10


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
    said = " ".join(str(exc).split())
    check = f"`aah db check {url}` tells what is missing"
    where = _where(url)
    user = urlsplit(url.url).username or "the current user"
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreFileError(
            f"user {user} lacks a privilege the store needs in {where} ({said})",
            f"grant it, e.g. GRANT CREATE ON SCHEMA public TO {user}; {check}",
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
    return StoreFileError(
        f"cannot reach the PostgreSQL server for {where} ({said})",
        f"start the server or fix the URL's host and port; {check}",
        url,
    )


def raise_server_error(exc: BaseException, url: DatabaseURL) -> None:
    """Raise what ``exc`` amounts to (a ``StoreFileError``), or ``exc`` itself."""
    error = server_error(exc, url)
    if error is None:
        raise exc
    raise error from exc


class PgCursor:
    """The rows of one statement, as the store reads an sqlite3 cursor's."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self.rowcount: int = cursor.rowcount

    def fetchone(self) -> Any:
        """The next row (a tuple), or None."""
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Any]:
        """Every row left."""
        return list(self._cursor.fetchall()) if self._cursor.description else []

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
            # No prepared statements: a pooler (PgBouncer) in between may
            # hand each statement to another server connection.
            self._conn = psycopg.connect(
                url.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, prepare_threshold=None
            )
        except (psycopg.ProgrammingError, ValueError, UnicodeError) as exc:
            # libpq could not read the URL (an unknown option, a bad value).
            said = " ".join(str(exc).replace(url.url, str(url)).split())
            raise AahError(
                f"{url} is not a PostgreSQL URL libpq can use ({said}): "
                "write postgresql://USER@HOST:5432/DATABASE"
            ) from exc
        except psycopg.Error as exc:
            raise_server_error(exc, url)

    @property
    def broken(self) -> bool:
        """Whether the connection is lost (the server restarted, the network dropped)."""
        return bool(self._conn.broken or self._conn.closed)

    @property
    def raw(self) -> Any:
        """The psycopg connection itself (for LangGraph's ``PostgresSaver``)."""
        return self._conn

    @contextmanager
    def translated_errors(self) -> Iterator[None]:
        """Turn what goes wrong with the server inside the block into a one-line error."""
        try:
            yield
        except Exception as exc:
            raise_server_error(exc, self.url)

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
            return PgCursor(cursor.execute(render(sql, "postgresql"), params or ()))
        except Exception as exc:
            raise_server_error(exc, self.url)
            raise  # unreachable: for the type checker

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement once per row; the cursor's ``rowcount`` is their total."""
        try:
            with self._conn.cursor() as cursor:
                cursor.executemany(render(sql, "postgresql"), list(rows))
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
