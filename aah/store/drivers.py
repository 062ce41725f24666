"""One driver per session: a lock a process holds on a session while it runs it.

Two processes may try to run one session at once: its runner woken by an
answer and ``aah sessions resume``, or a resume of a session that still runs
elsewhere. The store's rows cannot tell a live driver from a crashed one (a
crash leaves the session ``running``), so the lock is one the operating
system or the server lets go of when its holder dies:

- an SQLite store: a one-byte ``fcntl`` lock, at an offset made from the
  session id, on the file ``<database>-drivers`` beside the database (the
  kernel drops it when the process ends, however it ends); ``fcntl`` locks
  belong to a process, so the process's own holders are kept in a set;
- a PostgreSQL store: a session-level advisory lock on a connection of the
  store's own (the server drops it when the connection goes).

A lock not taken is never waited for: the caller is told that another
process runs the session.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import threading
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from aah.store.file_errors import StoreFileError

if TYPE_CHECKING:
    from aah.db_url import DatabaseURL
    from aah.store.postgres import PgDatabase

_log = logging.getLogger(__name__)

# Offsets below 2**62: past any file size that matters, within a signed off_t.
_OFFSETS = 2**62


def _key(session_id: str) -> int:
    """A 62-bit number for ``session_id``: equal ids, equal numbers; others almost never."""
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % _OFFSETS


class _FileLocks:
    """The sessions this process drives in one SQLite database, and their locks in one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held: set[str] = set()
        self.fd: int | None = None

    def take(self, session_id: str) -> bool:
        import fcntl

        if session_id in self.held:
            return False
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise StoreFileError(
                    f"cannot open {self.path}, the store's session locks ({exc.strerror})",
                    "check that this user may write the database's folder",
                    self.path,
                ) from exc
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _key(session_id))
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise StoreFileError(
                    f"cannot lock a session in {self.path} ({exc.strerror})",
                    "put the database on a local disk (its file system has no locks)",
                    self.path,
                ) from exc
            self._close_if_idle()
            return False
        self.held.add(session_id)
        return True

    def let_go(self, session_id: str) -> None:
        import fcntl

        if session_id not in self.held or self.fd is None:
            return
        self.held.discard(session_id)
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, _key(session_id))
        finally:
            self._close_if_idle()

    def _close_if_idle(self) -> None:
        # Closing any descriptor of the file drops all of the process's locks
        # on it: only when it holds none.
        if not self.held and self.fd is not None:
            os.close(self.fd)
            self.fd = None


# One per database file and process: fcntl locks are the process's, not a descriptor's.
_FILES: dict[str, _FileLocks] = {}
_FILES_GUARD = threading.Lock()


class _AdvisoryLocks:
    """A store's session locks in a PostgreSQL database: advisory locks on one connection.

    A server restart drops the connection and every lock on it: the next
    call opens a new one and takes the store's held sessions' locks again.
    """

    def __init__(self, url: DatabaseURL) -> None:
        self.url = url
        self.db: PgDatabase | None = None

    def _locked(self, session_id: str, db: PgDatabase) -> bool:
        (taken,) = db.execute("SELECT pg_try_advisory_lock(?)", [_key(session_id)]).fetchone()
        return bool(taken)

    def _connection(self, held: Collection[str]) -> PgDatabase:
        from aah.store.postgres import PgDatabase

        if self.db is None:
            self.db = PgDatabase(self.url)
            for session_id in held:  # after a restart: held again, if still free
                if not self._locked(session_id, self.db):
                    _log.warning(
                        "session %s was taken elsewhere while the server restarted", session_id
                    )
        return self.db

    def _drop_connection(self) -> None:
        if self.db is not None:
            with contextlib.suppress(Exception):
                self.db.close()
            self.db = None

    def take(self, session_id: str, held: Collection[str]) -> bool:
        """Lock ``session_id``; ``held``: the store's other locks, to retake on a new connection."""
        try:
            return self._locked(session_id, self._connection(held))
        except StoreFileError:
            self._drop_connection()  # gone (a restart): once more on a new connection
            return self._locked(session_id, self._connection(held))

    def let_go(self, session_id: str) -> None:
        if self.db is None:
            return
        try:
            self.db.execute("SELECT pg_advisory_unlock(?)", [_key(session_id)]).fetchone()
        except StoreFileError:
            self._drop_connection()  # the lock went with the connection

    def close(self) -> None:
        self._drop_connection()  # the server lets go of every lock the connection held


class SessionDrivers:
    """Which sessions a store's process runs now, so that no other process runs them too.

    Args:
        location: The SQLite database file, or a ``DatabaseURL``.
    """

    def __init__(self, location: Path | DatabaseURL) -> None:
        from aah.db_url import is_database_url

        self._guard = threading.Lock()
        self._mine: set[str] = set()  # the sessions this store holds
        self._server: _AdvisoryLocks | None = None
        self._file: _FileLocks | None = None
        if is_database_url(location):
            self._server = _AdvisoryLocks(location)  # type: ignore[arg-type]  # a URL
        else:
            name = str(Path(location).resolve()) + "-drivers"
            with _FILES_GUARD:
                self._file = _FILES.setdefault(name, _FileLocks(Path(name)))

    def take(self, session_id: str) -> bool:
        """Lock ``session_id`` for this store; False when another driver holds it (never waits)."""
        with self._guard:
            if session_id in self._mine:
                return False
            if self._server is not None:
                taken = self._server.take(session_id, held=self._mine)
            else:
                assert self._file is not None
                with _FILES_GUARD:
                    taken = self._file.take(session_id)
            if taken:
                self._mine.add(session_id)
            return taken

    def let_go(self, session_id: str) -> None:
        """Unlock ``session_id`` (nothing when this store does not hold it)."""
        with self._guard:
            if session_id not in self._mine:
                return
            self._mine.discard(session_id)
            self._unlock([session_id])

    def close(self) -> None:
        """Let go of every session this store still holds."""
        with self._guard:
            mine, self._mine = self._mine, set()
            if self._server is not None:
                self._server.close()
            else:
                self._unlock(mine)

    def _unlock(self, session_ids: Collection[str]) -> None:
        if self._server is not None:
            for session_id in session_ids:
                self._server.let_go(session_id)
            return
        assert self._file is not None
        with _FILES_GUARD:
            for session_id in session_ids:
                self._file.let_go(session_id)
