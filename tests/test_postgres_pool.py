"""The PostgreSQL store's connection pool, against the test run's real server.

Threads share a bounded set of connections; one the server drops is
replaced on its next borrow; a transaction left open is not handed to the
next borrower; a bad pool size is refused in one line. Statements run
often are prepared unless ``AAH_PG_PREPARE=off``, and a pooler that loses
one is told in one line.
"""

from __future__ import annotations

import threading
import time

import pytest
from postgres_cluster import PostgresServer

from aah.db_url import parse_location
from aah.errors import AahError
from aah.store import SessionStore
from aah.store.postgres import PREPARE_AFTER, PgDatabase, PgPool, pool_size, prepares


def backends(server: PostgresServer, database: str) -> int:
    import psycopg

    with psycopg.connect(server.url()) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_threads_share_at_most_size_connections(postgres_server: PostgresServer) -> None:
    database = postgres_server.create_database()
    pool = PgPool(parse_location(postgres_server.url(database)), size=2)  # type: ignore[arg-type]
    most, inside, guard = [0], [0], threading.Lock()

    def borrow() -> None:
        with pool.connection() as db:
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            db.execute("SELECT pg_sleep(0.05)")
            with guard:
                inside[0] -= 1

    threads = [threading.Thread(target=borrow) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert most[0] == 2
    assert backends(postgres_server, database) == 2  # the two stay open for the next borrower
    pool.close()
    deadline = time.monotonic() + 10
    while backends(postgres_server, database) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backends(postgres_server, database) == 0
    with pool.connection() as db:  # a closed pool opens anew when used again
        assert db.execute("SELECT 1").fetchone() == (1,)
    pool.close()


def _pool_of_one(server: PostgresServer) -> tuple[PgPool, int]:
    """A pool of one connection to a new database, and that connection's backend pid."""
    database = server.create_database()
    pool = PgPool(parse_location(server.url(database)), size=1)  # type: ignore[arg-type]
    with pool.connection() as db:
        return pool, int(db.execute("SELECT pg_backend_pid()").fetchone()[0])


def _end_backend(server: PostgresServer, pid: int) -> None:
    """End backend ``pid`` as a restart would, and wait until it has said so and closed."""
    server.admin(f"SELECT pg_terminate_backend({pid})")
    import psycopg

    deadline = time.monotonic() + 30
    with psycopg.connect(server.url("postgres"), autocommit=True) as admin:
        while admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()[0]:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_a_connection_the_server_dropped_while_idle_is_replaced_before_use(
    postgres_server: PostgresServer,
) -> None:
    # What a server restart or an idle timeout does to a pooled connection:
    # the next borrower gets a new one, and its statement runs.
    pool, first_pid = _pool_of_one(postgres_server)
    _end_backend(postgres_server, first_pid)
    with pool.connection() as db:
        assert db.execute("SELECT pg_backend_pid()").fetchone()[0] != first_pid
    pool.close()


def test_a_connection_dropped_in_use_fails_one_statement_in_one_line(
    postgres_server: PostgresServer,
) -> None:
    pool, first_pid = _pool_of_one(postgres_server)
    with pool.connection() as db:
        _end_backend(postgres_server, first_pid)
        with pytest.raises(AahError, match="PostgreSQL") as lost:
            db.execute("SELECT 1")  # the statement that finds the cut
        assert "\n" not in str(lost.value)
    with pool.connection() as db:
        assert db.execute("SELECT pg_backend_pid()").fetchone()[0] != first_pid
    pool.close()


def test_a_transaction_left_open_is_not_handed_on(postgres_server: PostgresServer) -> None:
    database = postgres_server.create_database()
    pool = PgPool(parse_location(postgres_server.url(database)), size=1)  # type: ignore[arg-type]
    with pool.connection() as db:
        db.executescript("CREATE TABLE t (x integer)")
        db.executescript("BEGIN; INSERT INTO t VALUES (1)")
    with pool.connection() as db:
        assert db.idle
        assert db.execute("SELECT count(*) FROM t").fetchone() == (0,)
    pool.close()


def test_a_store_keeps_its_connections_bounded_however_many_threads_read(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_PG_POOL_SIZE", "3")
    database = postgres_server.create_database()
    store = SessionStore(parse_location(postgres_server.url(database)))
    session = store.open_session("Weather in Oslo?")
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(5):
                assert store.get_session(session.id) is not None
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert backends(postgres_server, database) <= 3
    store.close()


@pytest.mark.parametrize("said", ["0", "-2", "eight", "1.5"])
def test_a_bad_pool_size_is_refused_in_one_line(said: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_PG_POOL_SIZE", said)
    with pytest.raises(AahError, match="AAH_PG_POOL_SIZE") as caught:
        pool_size()
    assert "\n" not in str(caught.value)


def test_the_pool_size_defaults_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AAH_PG_POOL_SIZE", raising=False)
    assert pool_size() == 8
    monkeypatch.setenv("AAH_PG_POOL_SIZE", " 12 ")
    assert pool_size() == 12


def _prepared_on(db: PgDatabase) -> int:
    return int(db.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0])


@pytest.mark.parametrize(("said", "prepared"), [("", True), ("off", False), ("ON", True)])
def test_statements_run_often_are_prepared_unless_switched_off(
    said: str, prepared: bool, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_PG_PREPARE", said)
    database = postgres_server.create_database()
    db = PgDatabase(parse_location(postgres_server.url(database)))  # type: ignore[arg-type]
    for number in range(PREPARE_AFTER + 2):
        assert db.execute("SELECT ? + 1", [number]).fetchone() == (number + 1,)
    assert (_prepared_on(db) > 0) is prepared
    db.close()


def test_a_pooler_that_loses_a_prepared_statement_is_told_in_one_line(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AAH_PG_PREPARE", raising=False)
    database = postgres_server.create_database()
    db = PgDatabase(parse_location(postgres_server.url(database)))  # type: ignore[arg-type]
    for number in range(PREPARE_AFTER + 2):
        db.execute("SELECT ? * 2", [number])
    # What a pooler in transaction mode does: the next statement reaches a
    # server connection that never prepared it (here, past psycopg's back).
    db.raw.pgconn.exec_(b"DEALLOCATE ALL")
    with pytest.raises(AahError, match="AAH_PG_PREPARE=off") as caught:
        db.execute("SELECT ? * 2", [1])
    assert "\n" not in str(caught.value)
    db.close()


@pytest.mark.parametrize("said", ["maybe", "2", "of"])
def test_a_bad_prepare_switch_is_refused_in_one_line(
    said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_PG_PREPARE", said)
    with pytest.raises(AahError, match="AAH_PG_PREPARE") as caught:
        prepares()
    assert "\n" not in str(caught.value)
