"""What goes wrong with the session database's file itself, said in one line with the fix.

A damaged file, one that is not a database, a directory, a file this user
may not read or write, a full disk: SQLite reports each as a bare
``sqlite3.DatabaseError`` ("file is not a database", "database or disk is
full"...) from whichever query first touches the bad page, which may be
deep inside any command. Every store connection is opened by
``open_connection``, whose connections and cursors turn those errors into a
``StoreFileError`` that names the file and what to do, wherever they
surface. Errors about the SQL or the data (a constraint, a busy lock that
the writer retries) pass through unchanged.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from aah.errors import AahError

# SQLite's primary result codes that are about the file or the disk, not the SQL.
_PERM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 8, 10, 11, 13, 14, 26
# Where a Python build reports no code, the messages SQLite gives for them.
_CODE_OF_MESSAGE = {
    "access permission denied": _PERM,
    "attempt to write a readonly database": _READONLY,
    "disk I/O error": _IOERR,
    "database disk image is malformed": _CORRUPT,
    "database or disk is full": _FULL,
    "unable to open database file": _CANTOPEN,
    "file is not a database": _NOTADB,
}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_GZIP_MAGIC = b"\x1f\x8b"


class StoreFileError(AahError, sqlite3.DatabaseError):
    """The session database's file cannot be used: damaged, not aah's, unreadable, or its disk full.

    Its message is one line: the problem, naming the file, then what to do
    (first ``aah db check`` on it, where the file may be damaged). It is also
    a ``sqlite3.DatabaseError``, so code that handles the driver's errors (a
    rollback, the batch runner's watch) handles it as before.

    Attributes:
        path: The database file.
        problem: What is wrong, naming the file.
        advice: What to do about it.
        damaged: The file itself may be damaged, which ``aah db check`` tells.
    """

    def __init__(self, problem: str, advice: str, path: Path, *, damaged: bool = False) -> None:
        check = f"run `aah db check --db {path}` to see what is wrong; " if damaged else ""
        super().__init__(f"{problem}: {check}{advice}")
        self.path = path
        self.problem = problem
        self.advice = advice
        self.damaged = damaged


class ServerAwayError(StoreFileError):
    """The store's server cannot be reached now: stopped, restarting, or the network dropped.

    Unlike the file's other troubles it may pass by itself: a wait for a
    person tries again (``aah.runtime.humans``), and the pool opens a new
    connection at the next use.
    """


RESTORE = "restore it from a backup or pass another --db"
ACCESS = (
    "give this user permission to read and write the file and its folder "
    "(aah and SQLite write -wal, -shm and -drivers files beside it), or pass another --db"
)


def file_error(exc: BaseException, path: Path) -> StoreFileError | None:
    """The ``StoreFileError`` that ``exc`` amounts to for the file ``path``, or None.

    None when ``exc`` is not about the file (an SQL or constraint error, a
    busy lock) or is a ``StoreFileError`` already.
    """
    if isinstance(exc, StoreFileError):
        return None
    if isinstance(exc, OSError):
        return StoreFileError(f"cannot use {path} ({_os_reason(exc)})", ACCESS, path)
    if not isinstance(exc, sqlite3.Error):
        return None
    said = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else _CODE_OF_MESSAGE.get(said)
    if primary == _FULL:
        return StoreFileError(
            f"the disk holding {path} is full ({said})",
            "free some space, then run the same command again; what was saved is kept",
            path,
        )
    if primary == _IOERR:
        return StoreFileError(
            f"cannot read or write {path} ({said})",
            "free some space if the disk is full, else check the disk",
            path,
            damaged=True,
        )
    if primary == _CORRUPT:
        return StoreFileError(f"{path} is damaged ({said})", RESTORE, path, damaged=True)
    if primary == _NOTADB:
        return _not_a_database(path, said)
    if primary in (_READONLY, _PERM):
        return StoreFileError(f"cannot write to {path} ({said})", ACCESS, path)
    if primary == _CANTOPEN:
        return StoreFileError(f"cannot open {path} ({said})", ACCESS, path)
    return None


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _not_a_database(path: Path, said: str) -> StoreFileError:
    head = _head(path)
    if head.startswith(_SQLITE_MAGIC):
        broken = f"{path} is damaged ({said}: its header is broken)"
        return StoreFileError(broken, RESTORE, path, damaged=True)
    if head.startswith(_GZIP_MAGIC):
        compressed = f"{path} is gzip-compressed, not a database"
        return StoreFileError(compressed, "decompress it and pass that to --db", path)
    return StoreFileError(
        f"{path} is not an SQLite database ({said})",
        "pass the session database to --db, or restore it from a backup",
        path,
    )


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            return file.read(len(_SQLITE_MAGIC))
    except OSError:
        return b""


def raise_file_error(exc: BaseException, path: Path) -> NoReturn:
    """Raise what ``exc`` amounts to for ``path``: a ``StoreFileError``, or ``exc`` itself."""
    error = file_error(exc, path)
    if error is None:
        raise exc
    raise error from exc


def check_path(path: Path) -> None:
    """Refuse, before SQLite opens it, what can never be a session database at ``path``.

    A directory or a special file (a named pipe, where reading would wait
    for a writer, or a device such as /dev/null, which takes writes and
    keeps nothing) is refused; so is a file this user may not read. A path
    that does not exist yet is fine: it becomes a new database.

    Raises:
        StoreFileError: What is at ``path`` cannot be a session database.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreFileError(f"cannot use {path} ({_os_reason(exc)})", ACCESS, path) from exc
    if stat.S_ISDIR(mode):
        raise StoreFileError(
            f"{path} is a directory, not a session database",
            "pass a file's path to --db (a new database is made there)",
            path,
        )
    if not stat.S_ISREG(mode):
        raise StoreFileError(
            f"{path} is not a regular file (a pipe, a device or a socket)",
            "pass a file's path to --db (a new database is made there)",
            path,
        )
    if not os.access(path, os.R_OK):
        raise StoreFileError(f"cannot read {path} (permission denied)", ACCESS, path)


def open_connection(path: Path, *, read_only: bool = False, **options: Any) -> sqlite3.Connection:
    """A connection to ``path`` whose file errors are ``StoreFileError``, wherever they surface.

    Args:
        path: The database file.
        read_only: Open it read-only (SQLite's ``mode=ro``): nothing can be written.
        **options: Passed on to ``sqlite3.connect``.

    Raises:
        StoreFileError: ``path`` cannot be opened as a database.
    """
    check_path(path)
    target = f"{path.resolve().as_uri()}?mode=ro" if read_only else str(path)
    try:
        conn = sqlite3.connect(target, uri=read_only, factory=_CheckedConnection, **options)
    except sqlite3.Error as exc:
        raise_file_error(exc, path)
    assert isinstance(conn, _CheckedConnection)
    conn.path = path
    return conn


class _CheckedCursor(sqlite3.Cursor):
    """A cursor whose file errors name the file (see the module docstring)."""

    def _path(self) -> Path:
        return getattr(self.connection, "path", Path("?"))

    def execute(self, sql: str, parameters: Any = (), /) -> _CheckedCursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise_file_error(exc, self._path())
        return self

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _CheckedCursor:
        try:
            super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            raise_file_error(exc, self._path())
        return self

    def executescript(self, sql_script: str, /) -> _CheckedCursor:
        try:
            super().executescript(sql_script)
        except sqlite3.Error as exc:
            raise_file_error(exc, self._path())
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise_file_error(exc, self._path())

    def fetchmany(self, size: int | None = None) -> list[Any]:
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        except sqlite3.Error as exc:
            raise_file_error(exc, self._path())

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise_file_error(exc, self._path())

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]  # a generator, not self
        # A generator over the cursor's own C iteration: rows cost no Python
        # call each (a report streams hundreds of thousands), errors are caught.
        return _checked_rows(self, self._path())


def _checked_rows(cursor: sqlite3.Cursor, path: Path) -> Iterator[Any]:
    # The cursor's C-level next, called by a C-level iterator: not the
    # cursor's own ``__iter__``, which is this generator.
    rows = iter(sqlite3.Cursor.__next__.__get__(cursor), _END)
    try:
        yield from rows
    except sqlite3.Error as exc:
        raise_file_error(exc, path)


_END = object()


class _CheckedConnection(sqlite3.Connection):
    """A connection whose statements and commits name the file in their file errors."""

    path: Path

    def cursor(self, factory: Any = _CheckedCursor) -> Any:
        return super().cursor(factory)

    def _checked_cursor(self) -> _CheckedCursor:
        return _CheckedCursor(self)

    def execute(self, sql: str, parameters: Any = (), /) -> _CheckedCursor:
        return self._checked_cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> _CheckedCursor:
        return self._checked_cursor().executemany(sql, parameters)

    def executescript(self, sql_script: str, /) -> _CheckedCursor:
        return self._checked_cursor().executescript(sql_script)

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.Error as exc:
            raise_file_error(exc, self.path)

    def rollback(self) -> None:
        try:
            super().rollback()
        except sqlite3.Error as exc:
            raise_file_error(exc, self.path)
