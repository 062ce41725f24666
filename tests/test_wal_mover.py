"""A session store that moves its WAL in the background: commits never copy it, nothing is lost."""

import sqlite3
import threading
from pathlib import Path

from aah.events import ModelCallEvent
from aah.store import SessionStore


def _wal_left(path: Path) -> tuple[int, int]:
    """Frames in the WAL, and of those the ones already copied into the file."""
    with sqlite3.connect(path) as conn:
        _, logged, moved = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return logged, moved


def test_commits_leave_the_wal_to_the_mover_which_copies_it_all(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    before = set(threading.enumerate())
    store = SessionStore(path)
    store.move_wal_in_background()
    session = store.open_session(query="q")
    (autocheckpoint,) = store.thread_connection().execute("PRAGMA wal_autocheckpoint").fetchone()
    assert autocheckpoint == 0  # no commit of this store copies the WAL
    # A thread's connection opened later takes the same setting.
    seen: list[int] = []
    thread = threading.Thread(
        target=lambda: seen.append(
            store.thread_connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        )
    )
    thread.start()
    thread.join()
    assert seen == [0]
    big = "x" * 3000  # each event a page of its own: past SQLite's 1,000-page mark
    for n in range(1200):
        store.append_events([ModelCallEvent(session_id=session.id, model="m", text=f"{n}{big}")])
    store.close()
    logged, moved = _wal_left(path)
    assert logged == moved  # the mover's last round copied every frame
    reopened = SessionStore(path)
    events = reopened.events(session.id)
    assert [e.seq for e in events] == list(range(1, 1201))
    reopened.close()
    assert not set(threading.enumerate()) - before  # the mover's thread ended with the store


def test_a_store_that_does_not_ask_keeps_sqlites_own_copying(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    (autocheckpoint,) = store.thread_connection().execute("PRAGMA wal_autocheckpoint").fetchone()
    store.close()
    assert autocheckpoint == 1000
