"""Damaged session-database files, made on demand from a healthy one (the corpus of kinds).

Each kind takes a healthy database and a folder and returns the path to
pass as ``--db``: the same file truncated, with pages overwritten, a header
broken, the database of another program, a directory, a named pipe... Some
kinds need a process that file permissions apply to: run as root, the
command runs without the capabilities that let root ignore them (``run_as``).
"""

from __future__ import annotations

import ctypes
import gzip
import os
import random
import shutil
import sqlite3
import struct
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

PAGE = 4096
# Linux capabilities that let root read and write whatever the file modes say.
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_PR_CAPBSET_DROP = 24


class Damage(NamedTuple):
    """One kind of damage.

    Attributes:
        make: Builds the damaged file from a healthy one in a folder; returns the ``--db`` path.
        readable: SQLite can still read what the file holds, so commands may succeed.
        unprivileged: The damage is in file permissions, which root ignores.
        checkpointed: A -wal file beside it holds pages that SQLite moves into
            the file when the last connection closes: other bytes, the same content.
    """

    make: Callable[[Path, Path], Path]
    readable: bool = False
    unprivileged: bool = False
    checkpointed: bool = False


def _copy(healthy: Path, folder: Path) -> Path:
    path = folder / "aah.db"
    shutil.copyfile(healthy, path)
    return path


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        file.write(data)


def truncated(healthy: Path, folder: Path) -> Path:
    path = _copy(healthy, folder)
    os.truncate(path, path.stat().st_size * 2 // 5)
    return path


def corrupt_pages(healthy: Path, folder: Path) -> Path:
    """Random bytes over the start of every page but the first (where b-tree headers are)."""
    path = _copy(healthy, folder)
    rng = random.Random(19)
    for page in range(1, path.stat().st_size // PAGE):
        _overwrite(path, page * PAGE, rng.randbytes(32))
    return path


def zeroed_pages(healthy: Path, folder: Path) -> Path:
    """Pages in the middle gone to zeros, as a filesystem may leave them after a crash."""
    path = _copy(healthy, folder)
    pages = path.stat().st_size // PAGE
    _overwrite(path, PAGE * 2, bytes(PAGE * (pages // 2)))
    return path


def broken_header(healthy: Path, folder: Path) -> Path:
    path = _copy(healthy, folder)
    _overwrite(path, 0, random.Random(7).randbytes(100))
    return path


def bad_page_size(healthy: Path, folder: Path) -> Path:
    """The magic string intact, but a page size no SQLite file can have."""
    path = _copy(healthy, folder)
    _overwrite(path, 16, struct.pack(">H", 768))
    return path


def plain_text(healthy: Path, folder: Path) -> Path:
    path = folder / "aah.db"
    path.write_text("These are my notes, not a database.\n" * 200)
    return path


def gzipped(healthy: Path, folder: Path) -> Path:
    """A compressed backup passed as the database itself."""
    path = folder / "aah.db"
    path.write_bytes(gzip.compress(healthy.read_bytes()))
    return path


def _sqlite(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    return path


def other_program(healthy: Path, folder: Path) -> Path:
    return _sqlite(
        folder / "aah.db",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
        "INSERT INTO notes (body) VALUES ('buy milk'), ('call mum');",
    )


def other_program_sessions(healthy: Path, folder: Path) -> Path:
    """Another program's database with a ``sessions`` table of its own shape."""
    return _sqlite(
        folder / "aah.db",
        "CREATE TABLE sessions (token TEXT PRIMARY KEY, user TEXT, expires INTEGER);"
        "INSERT INTO sessions VALUES ('abc', 'ann', 0);",
    )


def empty_schema_3(healthy: Path, folder: Path) -> Path:
    return _sqlite(folder / "aah.db", "PRAGMA user_version = 3;")


def missing_table(healthy: Path, folder: Path) -> Path:
    """An aah database whose ``events`` table is gone."""
    return _sqlite(_copy(healthy, folder), "PRAGMA foreign_keys = OFF; DROP TABLE events;")


def missing_column(healthy: Path, folder: Path) -> Path:
    """An aah database whose sessions lost a column (altered by hand or another tool)."""
    return _sqlite(_copy(healthy, folder), "ALTER TABLE sessions DROP COLUMN final_answer;")


def renamed_column(healthy: Path, folder: Path) -> Path:
    """An aah database with a request column renamed, so queries naming it fail."""
    return _sqlite(
        _copy(healthy, folder), "ALTER TABLE human_requests RENAME COLUMN question TO q;"
    )


def newer_schema(healthy: Path, folder: Path) -> Path:
    return _sqlite(_copy(healthy, folder), "PRAGMA user_version = 99;")


def directory(healthy: Path, folder: Path) -> Path:
    path = folder / "aah.db"
    path.mkdir()
    return path


def parent_is_file(healthy: Path, folder: Path) -> Path:
    (folder / "runs").write_text("a file where a folder should be\n")
    return folder / "runs" / "aah.db"


def empty_file(healthy: Path, folder: Path) -> Path:
    path = folder / "aah.db"
    path.touch()
    return path


def named_pipe(healthy: Path, folder: Path) -> Path:
    """Reading it would wait for a writer that never comes."""
    path = folder / "aah.db"
    os.mkfifo(path)
    return path


def device(healthy: Path, folder: Path) -> Path:
    """A link to /dev/null: every read is empty and every write is lost."""
    path = folder / "aah.db"
    path.symlink_to(os.devnull)
    return path


def no_permission(healthy: Path, folder: Path) -> Path:
    path = _copy(healthy, folder)
    path.chmod(0)
    return path


def read_only_file(healthy: Path, folder: Path) -> Path:
    path = _copy(healthy, folder)
    path.chmod(0o444)
    return path


def read_only_folder(healthy: Path, folder: Path) -> Path:
    """The file may be written, but its folder not: SQLite cannot make its -wal and -shm files."""
    inner = folder / "locked"
    inner.mkdir()
    path = _copy(healthy, inner)
    inner.chmod(0o555)
    return path


def wal_is_directory(healthy: Path, folder: Path) -> Path:
    path = _copy(healthy, folder)
    Path(f"{path}-wal").mkdir()
    return path


def corrupt_wal(healthy: Path, folder: Path) -> Path:
    """A -wal file whose frames carry garbage pages under valid checksums.

    SQLite skips frames whose checksums fail, so garbage alone is harmless;
    a WAL written by a faulty disk or program has checksums that match.
    """
    source = folder / "writer"
    source.mkdir()
    live = _copy(healthy, source)
    writer = sqlite3.connect(live, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    # Pages of every table that commands read go into the WAL.
    writer.execute("UPDATE events SET payload = json_object('text', 'rewritten') WHERE seq = 1")
    writer.execute("UPDATE sessions SET final_answer = 'rewritten'")
    writer.execute("UPDATE runs SET manifest = '{}'")
    path = folder / "aah.db"
    shutil.copyfile(live, path)  # the database, and its WAL before any checkpoint
    wal = bytearray(Path(f"{live}-wal").read_bytes())
    writer.close()
    rng = random.Random(23)
    for frame in range(32, len(wal), 24 + PAGE):
        wal[frame + 24 : frame + 24 + 64] = rng.randbytes(64)
    Path(f"{path}-wal").write_bytes(_rechecksummed(wal))
    return path


def _rechecksummed(wal: bytearray) -> bytes:
    """``wal`` with every frame's checksum made valid again (SQLite's WAL format)."""
    order = ">" if struct.unpack(">I", wal[:4])[0] & 1 else "<"
    salts = wal[16:24]
    s0, s1 = _checksum(wal[:24], 0, 0, order)
    wal[24:32] = struct.pack(">II", s0, s1)
    for frame in range(32, len(wal), 24 + PAGE):
        wal[frame + 8 : frame + 16] = salts
        s0, s1 = _checksum(wal[frame : frame + 8], s0, s1, order)
        s0, s1 = _checksum(wal[frame + 24 : frame + 24 + PAGE], s0, s1, order)
        wal[frame + 16 : frame + 24] = struct.pack(">II", s0, s1)
    return bytes(wal)


def _checksum(data: bytes | bytearray, s0: int, s1: int, order: str) -> tuple[int, int]:
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for x0, x1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


# The kinds of the report first, then kinds of our own.
DAMAGES: dict[str, Damage] = {
    "truncated": Damage(truncated),
    "corrupt-pages": Damage(corrupt_pages),
    "broken-header": Damage(broken_header),
    "plain-text": Damage(plain_text),
    "other-program": Damage(other_program),
    "empty-schema-3": Damage(empty_schema_3),
    "directory": Damage(directory),
    "empty-file": Damage(empty_file, readable=True),
    "no-permission": Damage(no_permission, unprivileged=True),
    "corrupt-wal": Damage(corrupt_wal, checkpointed=True),
    "newer-schema": Damage(newer_schema),
    "zeroed-pages": Damage(zeroed_pages),
    "bad-page-size": Damage(bad_page_size),
    "gzipped": Damage(gzipped),
    "other-program-sessions": Damage(other_program_sessions),
    "missing-table": Damage(missing_table),
    "missing-column": Damage(missing_column),
    "renamed-column": Damage(renamed_column),
    "parent-is-file": Damage(parent_is_file),
    "named-pipe": Damage(named_pipe),
    "device": Damage(device),
    "read-only-file": Damage(read_only_file, readable=True, unprivileged=True),
    "read-only-folder": Damage(read_only_folder, readable=True, unprivileged=True),
    "wal-is-directory": Damage(wal_is_directory),
}


def run_as() -> Callable[[], None] | None:
    """What a subprocess runs first so that file permissions apply to it (None: they do).

    Root keeps its user id (its interpreter may live in a folder only root
    may enter) but loses, for good, the capabilities that override file modes.
    """
    if os.geteuid() != 0:
        return None

    def drop() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "cannot drop root's file capabilities")

    return drop


def restore_modes(folder: Path) -> None:
    """Make every folder under ``folder`` writable again, so that it can be removed."""
    for inner in folder.rglob("*"):
        if inner.is_dir() and not inner.is_symlink():
            inner.chmod(0o755)
