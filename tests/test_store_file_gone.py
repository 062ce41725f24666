"""A session database deleted or replaced while a store uses it takes no more writes.

SQLite keeps writing to a file that was deleted under it (the data goes with
the unlinked file), and a thread that opens its first connection would make
the file again, empty. Both faces and every runner would then go on as if
all were well: a person's answer reported stored, then lost.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from aah.store import SessionStore, StoreFileError


def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["deleted", "moved away", "replaced by a copy"])
def test_a_store_whose_file_went_refuses_writes_in_one_line(tmp_path: Path, how: str) -> None:
    db = tmp_path / "aah.db"
    store = SessionStore(db)
    session = store.open_session("Which city?")
    request = store.humans.create_human_request(session.id, "Which city?", {})
    if how == "deleted":
        _remove(db)
    elif how == "moved away":
        os.rename(db, tmp_path / "elsewhere.db")
    else:
        store.close()  # a backup taken and put back in its place
        shutil.copy(db, tmp_path / "backup.db")
        store = SessionStore(db)
        os.replace(tmp_path / "backup.db", db)
    with pytest.raises(StoreFileError) as gone:
        store.humans.answer_human_request(request.id, "ana", "Lisbon")
    said = str(gone.value)
    assert "\n" not in said and "was deleted or replaced while in use" in said
    assert str(db) in said and "--db" in said

    # A thread that opens its first connection now does not make the file again.
    seen: list[BaseException] = []

    def read() -> None:
        try:
            store.get_session(session.id)
        except BaseException as exc:  # noqa: BLE001 - what the thread met is the point
            seen.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    reader.join()
    assert len(seen) == 1 and isinstance(seen[0], StoreFileError)
    if how != "replaced by a copy":
        assert not db.exists()
    store.close()


def test_a_store_that_keeps_its_file_goes_on_writing(tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    with SessionStore(db) as store:
        session = store.open_session("q")
        for _ in range(3):
            store.set_status(session.id, "waiting")
            store.set_status(session.id, "running")
        assert store.get_session(session.id).status == "running"  # type: ignore[union-attr]
