"""A throwaway PostgreSQL cluster owned by the test run, and a fresh database per test.

``initdb`` makes a cluster in a temporary folder; it listens on a free port of
127.0.0.1 (and a Unix socket in that folder) and is stopped, its folder
removed, when the test session ends. The binaries are found on PATH or under
``/usr/lib/postgresql/*/bin`` (Debian's package, which CI installs).
PostgreSQL refuses to run as root, so under root the cluster runs as the
``postgres`` user that Debian's package creates, owning the folder.

Without PostgreSQL the tests that use it are skipped, unless
``AAH_POSTGRES_REQUIRED=1`` (set by ``.ci/run``) makes that a failure.

Use: ``from postgres_cluster import postgres_server, postgres_url`` in a test
module (pytest finds fixtures a module imports).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from glob import glob
from pathlib import Path
from urllib.parse import quote

import pytest

SUPERUSER = "aah_admin"
SUPERUSER_PASSWORD = "admin-pw-for-tests"


def _binaries() -> Path | None:
    """The folder holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    for folder in sorted(glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_owner(command: list[str]) -> list[str]:
    """``command`` run as the cluster's owner: ``postgres`` when this process is root."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


@dataclass
class PostgresServer:
    """A running cluster: where it listens and how to reach it as its superuser."""

    host: str
    port: int
    folder: Path

    def url(
        self, database: str = "postgres", user: str = SUPERUSER, password: str | None = None
    ) -> str:
        """A URL for ``database`` as ``user``; the superuser's password comes from PGPASSWORD."""
        who = quote(user) if password is None else f"{quote(user)}:{quote(password)}"
        return f"postgresql://{who}@{self.host}:{self.port}/{database}"

    def admin(self, sql: str, database: str = "postgres") -> None:
        """Run ``sql`` as the superuser (autocommit, so CREATE DATABASE works)."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)

    def restart(self) -> None:
        """Stop the server (fast: every connection is cut) and start it again on the same port."""
        binaries = _binaries()
        assert binaries is not None
        subprocess.run(
            _as_owner([str(binaries / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast"])
            + ["-l", str(self.folder / "log"), "-w", "restart"],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def create_database(self) -> str:
        """A new empty database's name."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.admin(f'CREATE DATABASE "{name}"')
        return name


def _start() -> Iterator[PostgresServer]:
    binaries = _binaries()
    if binaries is None:
        if os.environ.get("AAH_POSTGRES_REQUIRED") == "1":
            pytest.fail("AAH_POSTGRES_REQUIRED=1 but PostgreSQL (initdb, pg_ctl) is not installed")
        pytest.skip("PostgreSQL is not installed (initdb, pg_ctl); apt-get install postgresql")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        if os.environ.get("AAH_POSTGRES_REQUIRED") == "1":
            pytest.fail("AAH_POSTGRES_REQUIRED=1 but the postgres extra is not installed")
        pytest.skip("the postgres extra is not installed: pip install 'aah[postgres]'")
    folder = Path(tempfile.mkdtemp(prefix="aah-pg-"))
    data = folder / "data"
    pwfile = folder / "pw"
    pwfile.write_text(SUPERUSER_PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(pwfile, "postgres")
    port = _free_port()
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    try:
        subprocess.run(
            _as_owner(
                [str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}"]
                + ["--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync"]
            ),
            **run,  # type: ignore[arg-type]
        )
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            _as_owner(
                [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "log")]
                + ["-o", options, "-w", "start"]
            ),
            **run,  # type: ignore[arg-type]
        )
    except subprocess.CalledProcessError as exc:
        log = (folder / "log").read_text() if (folder / "log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"could not start PostgreSQL: {exc.stderr}\n{log}") from exc
    # As a user would keep it: out of the URL (which then passes whole to
    # child processes; aah prints a URL's password as [redacted]).
    saved = os.environ.get("PGPASSWORD")
    os.environ["PGPASSWORD"] = SUPERUSER_PASSWORD
    try:
        yield PostgresServer("127.0.0.1", port, folder)
    finally:
        if saved is None:
            os.environ.pop("PGPASSWORD", None)
        else:
            os.environ["PGPASSWORD"] = saved
        with contextlib.suppress(subprocess.SubprocessError):
            subprocess.run(
                _as_owner([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The test run's cluster (started on first use, stopped at the end)."""
    yield from _start()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database of the test run's cluster."""
    return postgres_server.url(postgres_server.create_database())


ENGINES = ("sqlite", "postgresql")


@pytest.fixture(params=ENGINES)
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a store test's store lives: a new SQLite file, then a new PostgreSQL database."""
    from aah.db_url import parse_location

    if request.param == "sqlite":
        return tmp_path / "store" / "aah.db"
    return parse_location(request.getfixturevalue("postgres_url"))


def raw_rows(location: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """The rows ``sql`` reads from the store's tables, through the engine's own driver."""
    from aah.db_url import DatabaseURL

    if isinstance(location, DatabaseURL):
        import psycopg

        with psycopg.connect(location.url) as conn:
            return list(conn.execute(sql.replace("?", "%s"), params).fetchall())
    import sqlite3

    with contextlib.closing(sqlite3.connect(location)) as conn:
        return list(conn.execute(sql, params).fetchall())


def stored_bytes(location: Path) -> bytes:
    """Every byte the store holds: the SQLite file (WAL folded in), or every row's text."""
    from aah.db_url import DatabaseURL

    if not isinstance(location, DatabaseURL):
        import sqlite3

        with contextlib.closing(sqlite3.connect(location)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return location.read_bytes()
    tables = raw_rows(
        location,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    text = [
        str(row[0])
        for (table,) in tables
        for row in raw_rows(location, f'SELECT t::text FROM "{table}" AS t')
    ]
    return "\n".join(text).encode()
