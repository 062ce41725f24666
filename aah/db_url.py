"""Where the session store lives: an SQLite file's path, or a PostgreSQL server's URL.

``--db`` and ``AAH_DB`` take either. A path is a ``Path`` as always; a URL
(``postgresql://`` or ``postgres://``) becomes a ``DatabaseURL``, a ``Path``
subclass so that every signature that passes a database location along
keeps its type, which keeps the URL's text whole (a plain ``Path`` folds
``//`` and would make a folder ``postgresql:``) and prints without its
password. Anything else with a scheme (``mysql://``, ``sqlite:///``) or a
PostgreSQL URL that lost its slashes is refused with one line rather than
taken for a folder.

This module sits below ``config`` (which parses ``AAH_DB`` with it) and
imports nothing of aah's but ``errors``.
"""

from __future__ import annotations

import re
from pathlib import Path, PosixPath
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from aah.errors import AahError

POSTGRES_SCHEMES = ("postgresql", "postgres")
# What a URL's password prints as (the same mark ``aah.secrets`` uses).
_HIDDEN = "[redacted]"
# "scheme:" at the start, as RFC 3986 spells a scheme; one letter is a
# Windows drive ("C:"), never a scheme.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
_EXAMPLE = "postgresql://USER@HOST:5432/DATABASE"


class DatabaseURL(PosixPath):
    """A PostgreSQL server's URL where a database ``Path`` is expected.

    ``str()`` and ``repr()`` show it with its password hidden; ``url`` is the
    whole URL, for the driver only. It is no file: it "exists" (the server
    says whether the database does, when the store opens it), and the store
    never makes a folder for it.

    Args:
        url: The URL, as ``parse_location`` accepted it.
    """

    _url: str = ""

    def __new__(cls, url: str) -> DatabaseURL:  # noqa: D102 - documented on the class
        # The path parts are the URL's own, so that an accidental use as a
        # file still names it; every store path checks ``is_database_url`` first.
        self = super().__new__(cls, "postgresql-url")
        self._url = url
        return self

    @property
    def url(self) -> str:
        """The whole URL, password included: for the driver, never for a message."""
        return self._url

    @property
    def shown(self) -> str:
        """The URL with its password replaced by ``[redacted]``."""
        return _redact(self._url)

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"DatabaseURL({self.shown!r})"

    def __fspath__(self) -> str:
        return self.shown

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatabaseURL) and other._url == self._url

    def __hash__(self) -> int:
        return hash(("DatabaseURL", self._url))

    def __reduce__(self) -> tuple[Any, ...]:
        return (DatabaseURL, (self._url,))

    # A server's database is no file: code that asks whether "the file"
    # exists before opening the store lets the store's own check answer.
    def exists(self, *, follow_symlinks: bool = True) -> bool:  # noqa: D102
        return True

    def is_file(self) -> bool:  # noqa: D102
        return True

    def is_dir(self) -> bool:  # noqa: D102
        return False

    def is_symlink(self) -> bool:  # noqa: D102
        return False

    def resolve(self, strict: bool = False) -> DatabaseURL:  # noqa: D102
        return self

    def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        """Refused: a URL names no folder (the bug this class exists to prevent)."""
        raise AahError(f"{self} is a PostgreSQL URL, not a folder")


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:{_HIDDEN}@{host}"))


def is_database_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than an SQLite file."""
    return isinstance(location, DatabaseURL)


def parse_location(text: str | Path) -> Path:
    """What ``--db`` or ``AAH_DB`` names: an SQLite file's ``Path`` or a ``DatabaseURL``.

    Raises:
        AahError: ``text`` has a scheme aah does not store in, or is a
            PostgreSQL URL without its ``//`` (one line, with the form to use).
    """
    if isinstance(text, Path):
        return text
    raw = text.strip()
    scheme = _SCHEME.match(raw)
    if scheme is None:
        return Path(text)
    name = scheme.group(1).lower()
    rest = raw[scheme.end() :]
    if name in POSTGRES_SCHEMES:
        if not rest.startswith("//"):
            raise AahError(
                f"{_redact(raw)!r} is not a PostgreSQL URL (it lacks '//'): write {_EXAMPLE}"
            )
        # libpq knows the schemes in lower case only.
        return DatabaseURL(_checked(name + raw[scheme.end() - 1 :]))
    if rest.startswith("//") or name in ("sqlite", "sqlite3", "file"):
        raise AahError(
            f"aah stores sessions in an SQLite file or PostgreSQL, not {name}://: pass a "
            f"file's path (e.g. sessions/aah.db) or {_EXAMPLE}"
        )
    return Path(text)


def _checked(url: str) -> str:
    """``url`` if its parts read as a PostgreSQL URL; raise one line naming the bad part."""
    try:
        parts: SplitResult = urlsplit(url)
        hosts = parts.netloc.rsplit("@", 1)[-1]
        # Several hosts (host1:5432,host2:5433) are libpq's own form; check each port.
        for host in hosts.split(","):
            port = host.rsplit("]", 1)[-1].rpartition(":")[2] if ":" in host else ""
            if port and not (port.isdigit() and 0 < int(port) < 65536):
                raise ValueError(f"port {port!r}")
    except ValueError as exc:
        raise AahError(
            f"{_redact(url)!r} is not a PostgreSQL URL ({exc}): write {_EXAMPLE}"
        ) from exc
    database = unquote(parts.path.lstrip("/"))
    if "/" in database:
        raise AahError(
            f"{_redact(url)!r} names database {database!r}, which has a '/': write {_EXAMPLE}"
        )
    return url
