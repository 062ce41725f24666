"""A PostgreSQL URL as --db or AAH_DB: never a folder, and every failure one line with the fix.

Before URLs were recognised, every URL shape below was taken for a file
path: aah made a folder ``postgresql:`` (or ``mysql:``...) in the working
directory and an SQLite file in it, and the command went on as if nothing
were wrong.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from postgres_cluster import PostgresServer, raw_rows

from aah.cli import main
from aah.db_url import DatabaseURL, parse_location
from aah.store import SessionStore
from aah.store.schema import SCHEMA_VERSION

SECRET = "s3cret-Pw-123"

# Shapes of PostgreSQL URL a user may pass; nothing listens on port 1.
URL_SHAPES = [
    "postgresql://alice@127.0.0.1:1/aah",
    f"postgres://alice:{SECRET}@127.0.0.1:1/aah",
    "POSTGRESQL://127.0.0.1:1/aah",
    "Postgres://127.0.0.1:1/aah",
    f"postgresql://alice:{SECRET}@127.0.0.1:1/aah?sslmode=disable&connect_timeout=2",
    "postgresql://[::1]:1/aah",
    "postgresql://127.0.0.1:1,127.0.0.1:2/aah",
    "postgresql:///aah?host=/nonexistent-socket-folder",
    "postgresql://127.0.0.1:1",
    f"postgresql://al%40ice:{SECRET.replace('-', '%2D')}@127.0.0.1:1/a%20b",
]
# Not a usable store location at all: a PostgreSQL URL missing its '//',
# a bad port or database name, or another scheme.
MALFORMED = [
    "postgresql:/127.0.0.1/aah",
    "postgres:aah",
    "postgresql://127.0.0.1:port/aah",
    "postgresql://127.0.0.1:99999/aah",
    "postgresql://127.0.0.1:1/aah/extra",
    "mysql://alice@127.0.0.1/aah",
    "sqlite:///tmp/aah.db",
    "http://example.com/aah",
    "file:///tmp/aah.db",
]


def aah(
    args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """``aah ARGS`` in this process, from ``cwd``: its exit status and all it printed."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["aah", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    out = capsys.readouterr()
    return int(exited.value.code or 0), out.out + out.err


def assert_one_line(status: int, printed: str, *fragments: str) -> str:
    lines = printed.strip().splitlines()
    assert status == 2, printed
    assert len(lines) == 1 and lines[0].startswith("error: "), printed
    assert SECRET not in printed and "Traceback" not in printed
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def given(args: list[str], location: str, via: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``args`` with the store ``location`` given the way ``via`` names: --db or AAH_DB."""
    if via == "AAH_DB":
        monkeypatch.setenv("AAH_DB", location)
        return args
    return [*args, "--db", location]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# A command that only reads a store, and one that makes it if missing (the
# one that, before, made the folder ``postgresql:`` and a file inside it).
def commands(tmp_path: Path) -> dict[str, list[str]]:
    outputs = tmp_path / "outputs"
    outputs.mkdir(exist_ok=True)
    return {
        "sessions list": ["sessions", "list"],
        "import": ["import", "failtalms-outputs", str(outputs)],
    }


@pytest.mark.parametrize("url", URL_SHAPES)
@pytest.mark.parametrize("via", ["--db", "AAH_DB"])
@pytest.mark.parametrize("command", ["sessions list", "import"])
def test_a_url_is_a_server_never_a_folder(
    url: str,
    via: str,
    command: str,
    tmp_path: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("psycopg")
    args = commands(tmp_path)[command]
    args = given(args, url, via, monkeypatch)
    status, printed = aah(args, workdir, monkeypatch, capsys)
    assert list(workdir.iterdir()) == []  # no folder "postgresql:", no file
    assert_one_line(status, printed, "aah db check")


@pytest.mark.parametrize("text", MALFORMED)
@pytest.mark.parametrize("via", ["--db", "AAH_DB"])
@pytest.mark.parametrize("command", ["sessions list", "import"])
def test_a_malformed_url_is_refused_in_one_line(
    text: str,
    via: str,
    command: str,
    tmp_path: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = commands(tmp_path)[command]
    args = given(args, text, via, monkeypatch)
    status, printed = aah(args, workdir, monkeypatch, capsys)
    assert list(workdir.iterdir()) == []
    assert_one_line(status, printed, "postgresql://USER@HOST:5432/DATABASE")


@pytest.mark.parametrize("path", ["aah.db", "sessions/aah.db", "C:/x.db", "postgresql.db"])
def test_file_paths_stay_paths(path: str) -> None:
    parsed = parse_location(path)
    assert not isinstance(parsed, DatabaseURL) and parsed == Path(path)


def test_a_url_prints_without_its_password() -> None:
    url = parse_location(f"postgresql://alice:{SECRET}@db.example:5432/aah")
    assert isinstance(url, DatabaseURL) and SECRET in url.url
    for shown in (str(url), repr(url), os.fspath(url), f"{url}"):
        assert SECRET not in shown and "[redacted]" in shown


@pytest.mark.parametrize("command", ["sessions list", "import"])
def test_without_the_extra_one_line_says_how_to_install_it(
    command: str,
    tmp_path: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # the import fails, as uninstalled
    url = f"postgresql://alice:{SECRET}@127.0.0.1:1/aah"
    args = [*commands(tmp_path)[command], "--db", url]
    status, printed = aah(args, workdir, monkeypatch, capsys)
    assert list(workdir.iterdir()) == []
    assert_one_line(status, printed, "pip install 'aah[postgres]'")


# -- a real server that refuses: each failure is one line naming what to do -----------


def _no_create_role(server: PostgresServer) -> str:
    database = server.create_database()
    role = f"reader_{database}"
    server.admin(f"CREATE ROLE {role} LOGIN PASSWORD 'reader-pw'")
    server.admin(f'GRANT CONNECT ON DATABASE "{database}" TO {role}')
    server.admin("REVOKE CREATE ON SCHEMA public FROM PUBLIC", database)
    return server.url(database, role, "reader-pw")


def _role_on_a_store_made_by_another(server: PostgresServer, *grants: str) -> str:
    """A role that may connect to a store the admin made, with only ``grants`` on its tables."""
    database = server.create_database()
    SessionStore(parse_location(server.url(database))).close()  # the admin makes the tables
    role = f"user_{database}"
    server.admin(f"CREATE ROLE {role} LOGIN PASSWORD 'user-pw'")
    server.admin(f'GRANT CONNECT ON DATABASE "{database}" TO {role}')
    for grant in grants:
        server.admin(f"GRANT {grant} ON ALL TABLES IN SCHEMA public TO {role}", database)
    return server.url(database, role, "user-pw")


def _free_port_url(server: PostgresServer) -> str:
    from postgres_cluster import _free_port

    return f"postgresql://aah_admin@127.0.0.1:{_free_port()}/aah"


FAILURES = {
    "wrong password": (
        lambda s: s.url(s.create_database(), "aah_admin", SECRET),
        "refused the password",
    ),
    "no such database": (lambda s: s.url("no_such_db"), "create it"),
    # The server answers a user that does not exist as a wrong password, by design.
    "no such user": (lambda s: s.url("postgres", "nobody", SECRET), "or there is no such user"),
    "a bad option": (lambda s: s.url("postgres") + "?sslmode=sometimes", "libpq can use"),
    "server unreachable": (_free_port_url, "start the server"),
    "missing privileges": (_no_create_role, "GRANT CREATE ON SCHEMA public TO reader_"),
    "no privilege on the tables": (
        _role_on_a_store_made_by_another,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO user_",
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("command", ["sessions list", "db check"])
def test_a_server_that_refuses_is_one_line_with_the_fix(
    failure: str,
    command: str,
    postgres_server: PostgresServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_url, advice = FAILURES[failure]
    url = make_url(postgres_server)
    status, printed = aah([*command.split(), "--db", url], workdir, monkeypatch, capsys)
    assert list(workdir.iterdir()) == []
    assert SECRET not in printed
    if command == "db check":
        assert status == 1, printed
        problems = [line for line in printed.splitlines() if line.startswith("problem: ")]
        assert len(problems) == 1 and advice in problems[0], printed
    else:
        # A URL libpq cannot read needs no check of the server to say so.
        check = () if failure == "a bad option" else ("aah db check",)
        assert_one_line(status, printed, advice, *check)


def test_db_check_takes_the_url_as_its_argument_and_counts_the_store(
    postgres_url: str,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from aah.store import SessionStore

    with SessionStore(postgres_url) as store:
        store.open_session("q")
    status, printed = aah(["db", "check", postgres_url, "--json"], workdir, monkeypatch, capsys)
    assert status == 0, printed
    assert '"sessions": 1' in printed and '"healthy": true' in printed
    assert raw_rows(parse_location(postgres_url), "SELECT count(*) FROM sessions") == [(1,)]


@pytest.mark.parametrize(
    "args",
    [
        ["db", "merge", "a.db", "--into", "postgresql://alice@127.0.0.1:1/aah"],
        ["db", "merge", "postgres://alice@127.0.0.1:1/aah", "--into", "all.db"],
        ["db", "merge", "a.db", "--into", "postgresql:/127.0.0.1/aah"],
    ],
)
def test_merge_refuses_a_url_instead_of_making_a_folder(
    args: list[str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from aah.store import SessionStore

    SessionStore(workdir / "a.db").close()
    status, printed = aah(args, workdir, monkeypatch, capsys)
    assert sorted(p.name for p in workdir.iterdir()) == ["a.db"]
    assert_one_line(status, printed, "PostgreSQL")


def test_db_migrate_makes_the_tables_once(
    postgres_url: str,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for _ in range(2):  # the second run finds them made
        status, printed = aah(["db", "migrate", postgres_url], workdir, monkeypatch, capsys)
        assert status == 0 and "uses session schema" in printed, printed
    assert raw_rows(parse_location(postgres_url), "SELECT version FROM aah_schema") == [
        (SCHEMA_VERSION,)
    ]
    assert list(workdir.iterdir()) == []


# Passwords written into the URL as they are, with the characters a URL gives
# a meaning of its own (and an invalid percent escape, which libpq quotes
# back whole when it refuses it). None of their pieces may be printed.
UNENCODED_PASSWORDS = [
    "Sl/ash-Pw-123",
    "At@sign-Pw-12",
    "Ha#sh-Pw-1234",
    "Qu?est-Pw-123",
    "Co:lon@x/yz-9",
    "Pc%zz-Pw-1234",
    "Wp@a:b/c%41zq",
]


def _pieces(password: str) -> list[str]:
    """The runs of a password between its URL characters, that a leak would show."""
    return [p for p in re.split(r"[@:/#?%]", password) if len(p) >= 3]


@pytest.mark.parametrize("password", UNENCODED_PASSWORDS)
@pytest.mark.parametrize(
    "shape",
    [
        "postgresql://weird:{}@127.0.0.1:1/aah",
        "postgres:/weird:{}@127.0.0.1:1/aah",
        "postgresql//weird:{}@127.0.0.1:1/aah",
        "postgresql://weird@127.0.0.1:1/aah?password={}",
    ],
)
@pytest.mark.parametrize("via", ["--db", "AAH_DB"])
def test_a_password_written_as_it_is_is_never_printed(
    password: str,
    shape: str,
    via: str,
    tmp_path: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("psycopg")
    url = shape.format(password)
    args = commands(tmp_path)["sessions list"]
    args = given(args, url, via, monkeypatch)
    status, printed = aah(args, workdir, monkeypatch, capsys)
    assert list(workdir.iterdir()) == []  # not taken for a folder either
    line = assert_one_line(status, printed)
    assert [piece for piece in _pieces(password) if piece in line] == [], line


def test_an_empty_aah_db_is_unset_and_an_empty_db_is_refused(
    tmp_path: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AAH_DB", "")
    status, printed = aah(["sessions", "list"], workdir, monkeypatch, capsys)
    assert_one_line(status, printed, "no session database at sessions/aah.db")
    for blank in ("", "  "):
        monkeypatch.delenv("AAH_DB")
        status, printed = aah(["sessions", "list", "--db", blank], workdir, monkeypatch, capsys)
        assert_one_line(status, printed, "given as empty")
        monkeypatch.setenv("AAH_DB", blank)
    assert list(workdir.iterdir()) == []


def test_a_user_who_may_only_read_the_tables_is_told_by_db_check_and_by_a_write(
    postgres_server: PostgresServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = _role_on_a_store_made_by_another(postgres_server, "SELECT")
    grant = "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO user_"
    status, printed = aah(["db", "check", url], workdir, monkeypatch, capsys)
    problems = [line for line in printed.splitlines() if line.startswith("problem: ")]
    assert status == 1 and len(problems) == 1, printed
    assert "may not read and write" in problems[0] and grant in problems[0]
    assert "sessions" in problems[0]  # the tables it names
    status, printed = aah(["sessions", "list", "--db", url], workdir, monkeypatch, capsys)
    assert status == 0, printed  # reading is allowed
    with SessionStore(parse_location(postgres_server.url(url.rsplit("/", 1)[1]))) as store:
        session = store.open_session("q")
    status, printed = aah(
        ["sessions", "cancel", session.id, "--db", url], workdir, monkeypatch, capsys
    )
    assert_one_line(status, printed, grant)


def test_a_database_of_another_program_is_refused_with_how_to_make_one_for_aah(
    postgres_server: PostgresServer,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = postgres_server.create_database()
    postgres_server.admin("CREATE TABLE sessions (id text, owner text)", database)
    postgres_server.admin("INSERT INTO sessions VALUES ('s1', 'theirs')", database)
    url = postgres_server.url(database)
    status, printed = aah(["sessions", "list", "--db", url], workdir, monkeypatch, capsys)
    assert_one_line(status, printed, "another program's PostgreSQL database", "CREATE DATABASE")
    assert "a new database is made there" not in printed
    assert raw_rows(parse_location(url), "SELECT * FROM sessions") == [("s1", "theirs")]
