"""PostgreSQL's LISTEN/NOTIFY wakes parked sessions: across processes, after a lost notification,
after a dropped listening connection.

The store's triggers notify in the transaction that answers, declines,
expires or adds a request, or ends a session; a watch runs its join only
after that (or on its slow fallback poll), and a runner's loop wakes on the
listening socket instead of its timer.
"""

from __future__ import annotations

import json
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from postgres_cluster import PostgresServer, raw_rows
from runtime_support import waiting_request

from aah.db_url import parse_location
from aah.store import RequestWatch, SessionStore
from aah.store import watch as watch_module

# A runner's watch loop in its own process: prints when each request's wake was called.
WATCHER = """
import asyncio, json, sys, time
from aah.db_url import parse_location
from aah.runtime import AnswerWatcher

async def main():
    ids = json.loads(sys.argv[2])
    watcher = AnswerWatcher(parse_location(sys.argv[1]), poll_seconds=0.5)
    woken = {}
    for rid in ids:
        watcher.watch(rid, None, lambda rid=rid: woken.__setitem__(rid, time.time()))
    print("watching", flush=True)
    while len(woken) < len(ids):
        await watcher.pause()
        watcher.check()
    watcher.close()
    print(json.dumps(woken), flush=True)

asyncio.run(main())
"""


def heard(watch: RequestWatch, within: float = 5.0) -> bool:
    fd = watch.fileno()
    assert fd is not None, "the watch does not listen"
    return bool(select.select([fd], [], [], within)[0])


def test_an_answer_in_one_process_wakes_the_watcher_of_another_at_once(postgres_url: str) -> None:
    db = parse_location(postgres_url)
    with SessionStore(db) as store:
        ids = [waiting_request(store) for _ in range(20)]
        child = subprocess.Popen(
            [sys.executable, "-c", WATCHER, postgres_url, json.dumps(ids)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "watching", child.stderr
        answered: dict[str, float] = {}
        for request_id in ids:
            answered[request_id] = time.time()
            store.humans.answer_human_request(request_id, "ana", "Lisbon")
            time.sleep(0.05)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    woken = json.loads(out.strip().splitlines()[-1])
    assert sorted(woken) == sorted(ids)
    delays = sorted(woken[r] - answered[r] for r in ids)
    print(
        f"answer-to-wake: median {statistics.median(delays) * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms"
    )
    # Without the notification a wake waits for the fallback poll (5 s).
    assert delays[-1] < watch_module.FALLBACK_POLL_S / 2


def test_a_new_request_and_a_session_that_ends_are_notified(postgres_url: str) -> None:
    db = parse_location(postgres_url)
    with SessionStore(db) as store:
        watch = RequestWatch(db)
        waiting_request(store)
        assert heard(watch)
        while heard(watch, 0.2):  # its two transactions' notifications
            watch.ready()
        session = store.open_session("Weather?")
        assert not heard(watch, 0.2)  # a session's start is not news to a watch
        store.set_status(session.id, "waiting")
        assert heard(watch)
        watch.close()


def test_a_lost_notification_is_made_up_for_by_the_slow_poll(
    postgres_url: str, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch_module, "FALLBACK_POLL_S", 0.3)
    db = parse_location(postgres_url)
    with SessionStore(db) as store:
        request_id = waiting_request(store)
        watch = RequestWatch(db)
        watch.add([request_id])
        assert watch.ready() == []
        # The answer's notification never comes (as if sent while the connection was down).
        postgres_server.admin(
            "DROP TRIGGER notify_requests ON human_requests", postgres_url.rsplit("/", 1)[1]
        )
        store.humans.answer_human_request(request_id, "ana", "Lisbon")
        assert watch.ready() == []  # no news, and the last join was just now
        time.sleep(0.35)
        assert watch.ready() == [request_id]
        watch.close()


def test_a_dropped_listening_connection_is_opened_again(
    postgres_url: str, postgres_server: PostgresServer
) -> None:
    db = parse_location(postgres_url)
    database = postgres_url.rsplit("/", 1)[1]
    with SessionStore(db) as store:
        first, second = waiting_request(store), waiting_request(store)
        watch = RequestWatch(db)
        watch.add([first, second])
        assert watch.ready() == []
        listening = raw_rows(
            db,
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%%' AND datname = ?",
            (database,),
        )
        assert len(listening) == 1
        postgres_server.admin(f"SELECT pg_terminate_backend({listening[0][0]})")
        # Answered while nobody listened: the reconnection's first look finds it.
        store.humans.answer_human_request(first, "ana", "Lisbon")
        assert heard(watch)  # the dropped connection's socket wakes the loop
        assert watch.ready() == [first]
        store.humans.answer_human_request(second, "ana", "Porto")
        assert heard(watch)  # the new connection listens
        assert watch.ready() == [second]
        watch.close()


def test_sqlite_has_no_socket_to_wait_on(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    SessionStore(db).close()
    watch = RequestWatch(db)
    assert watch.fileno() is None
    watch.close()


def test_a_database_made_before_the_store_notified_is_watched_on_every_look(
    postgres_url: str, postgres_server: PostgresServer
) -> None:
    db = parse_location(postgres_url)
    database = postgres_url.rsplit("/", 1)[1]
    with SessionStore(db) as store:
        request_id = waiting_request(store)
        postgres_server.admin("DROP TRIGGER notify_requests ON human_requests", database)
        postgres_server.admin("DROP TRIGGER notify_sessions ON sessions", database)
        watch = RequestWatch(db)
        watch.add([request_id])
        assert watch.ready() == []
        store.humans.answer_human_request(request_id, "ana", "Lisbon")
        assert watch.ready() == [request_id]  # no notification, no waiting for the slow poll
        watch.close()
