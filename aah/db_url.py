"""Where the session store lives: an SQLite file's path, or a PostgreSQL server's URL.

``--db`` and ``AAH_DB`` take either. A path is a ``Path`` as always; a URL
(``postgresql://`` or ``postgres://``) becomes a ``DatabaseURL``, a ``Path``
subclass so that every signature that passes a database location along
keeps its type, which keeps the URL's text whole (a plain ``Path`` folds
``//`` and would make a folder ``postgresql:``) and prints without its
password. Anything else with a scheme (``mysql://``, ``sqlite:///``) or a
PostgreSQL URL that lost its slashes is refused with one line rather than
taken for a folder.

The password is hidden however the URL is written: one left unencoded
(``@ : / # ?`` in it) ends at the URL's last ``@``, and ``aah.secrets``
learns it, so that no message that quotes it (libpq's among them) prints it.

This module sits below ``config`` (which parses ``AAH_DB`` with it) and
imports nothing of aah's but ``errors`` and ``secrets``.
"""

from __future__ import annotations

import re
from pathlib import Path, PosixPath
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from aah.errors import AahError
from aah.secrets import remember_secret

POSTGRES_SCHEMES = ("postgresql", "postgres")
# What a URL's password prints as (the same mark ``aah.secrets`` uses).
_HIDDEN = "[redacted]"
# "scheme:" at the start, as RFC 3986 spells a scheme; one letter is a
# Windows drive ("C:"), never a scheme.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
_EXAMPLE = "postgresql://USER@HOST:5432/DATABASE"
# A scheme and its slashes, then the user information up to the text's last
# "@": a password may hold any character, "@" and "/" too, when its writer
# did not percent-encode it, and hiding too much is the safe mistake.
_USER_INFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*(?::/*|//))(.*)@", re.DOTALL)
# libpq also takes the password as a query parameter.
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)
# A PostgreSQL URL that lost the colon after its scheme ("postgresql//...").
_NO_COLON = re.compile(r"^postgres(?:ql)?//", re.IGNORECASE)


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
    """``url`` with its password, wherever it is written, replaced by ``[redacted]``."""
    # The query's password first: an "@" of its own must not pass for the user's.
    url = _QUERY_PASSWORD.sub(rf"\g<1>{_HIDDEN}", url)
    found = _USER_INFO.match(url)
    if found is not None and ":" in found.group(2):
        user = found.group(2).split(":", 1)[0]
        url = f"{found.group(1)}{user}:{_HIDDEN}@{url[found.end() :]}"
    return url


def _passwords(url: str) -> list[str]:
    """The password(s) ``url`` holds, as written and percent-decoded."""
    written = [m.group(0).split("=", 1)[1] for m in _QUERY_PASSWORD.finditer(url)]
    found = _USER_INFO.match(_without_query_password(url))
    written += [found.group(2).split(":", 1)[1]] if found and ":" in found.group(2) else []
    return [form for password in written if password for form in {password, unquote(password)}]


def _without_query_password(url: str) -> str:
    return _QUERY_PASSWORD.sub(r"\g<1>", url)


def hide_password(text: str, url: str) -> str:
    """``text`` (a message about ``url``) with ``url``'s password in any form hidden."""
    text = text.replace(url, _redact(url))
    for password in sorted(_passwords(url), key=len, reverse=True):
        text = text.replace(password, _HIDDEN)
    return text


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
    if not raw:
        raise AahError(
            f"the session database is given as empty: pass a file's path (e.g. "
            f"sessions/aah.db) or {_EXAMPLE}"
        )
    if _SCHEME.match(raw) or _NO_COLON.match(raw):
        for password in _passwords(raw):
            remember_secret(password)  # whatever quotes the URL from now on hides it
    if _NO_COLON.match(raw):
        raise AahError(f"{_redact(raw)!r} is not a PostgreSQL URL (it lacks ':'): write {_EXAMPLE}")
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
    parts: SplitResult = urlsplit(url)
    user_info = _USER_INFO.match(_without_query_password(url))
    if user_info is not None and ":" in user_info.group(2):
        # A password read whole ends where the host begins. Cut short by a
        # character of its own ("/", "?", "#", "@"), it would be read as a
        # host, a port or a database: libpq could only fail on it, or
        # print a piece of it.
        read_as = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else None
        if read_as != user_info.group(2) or parts.netloc.count("@") != 1:
            raise AahError(f"{_redact(url)!r} is not a PostgreSQL URL libpq reads: {_UNENCODED}")
    try:
        hosts = parts.netloc.rsplit("@", 1)[-1]
        # Several hosts (host1:5432,host2:5433) are libpq's own form; check each port.
        for host in hosts.split(","):
            port = host.rsplit("]", 1)[-1].rpartition(":")[2] if ":" in host else ""
            if port and not (port.isdigit() and 0 < int(port) < 65536):
                raise ValueError(f"port {port!r}")
    except ValueError as exc:
        said = hide_password(f"{_redact(url)!r} is not a PostgreSQL URL ({exc})", url)
        raise AahError(f"{said}: {_UNENCODED}; write {_EXAMPLE}") from exc
    database = unquote(parts.path.lstrip("/"))
    if "/" in database:
        said = hide_password(f"{_redact(url)!r} names database {database!r}, which has a '/'", url)
        raise AahError(f"{said}: {_UNENCODED}; write {_EXAMPLE}")
    return url


# What to do when a password's own characters broke the URL apart.
_UNENCODED = (
    "percent-encode @ : / # ? % in the user name and password (%40 %3A %2F %23 %3F %25), "
    "or leave the password out of the URL and put it in PGPASSWORD or ~/.pgpass"
)
