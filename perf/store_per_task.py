"""What one task costs the store: rows, bytes, transactions and server CPU, per task.

The figures behind the scaling note (docs/operators/scaling-design.md): the under-specified
setting's tasks (an awareness question, tool calls, one question to the
oracle human, a final answer) against the zero-latency fake model at
concurrency 16, once on a SQLite file and once on a throwaway PostgreSQL
server started the way the tests start theirs (initdb; fsync off), then:

- SQLite: rows per task in each table, and bytes per task (the file after
  a WAL checkpoint);
- PostgreSQL: committed transactions, rows inserted / updated / deleted and
  the server's CPU per task (``pg_stat_database``, the server's processes),
  and the most connections the runner held at once (``pg_stat_activity``).

Run: PYTHONPATH=.:tests .venv/bin/python perf/store_per_task.py [--tasks 200]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path

from batch_bench import fake_model, run
from postgres_store import new_database, postgres, server_cpu

from aah.benchmark.failtalms.dataset import load_tasks
from aah.data.locate import find_data_dir
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

CONCURRENCY = 16


def sqlite_figures(db: Path, tasks: int) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        rows = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        conn.close()
    size = db.stat().st_size
    print(f"SQLite, {tasks} tasks: {size / tasks / 1024:.1f} KiB a task in the file")
    for table, count in sorted(rows.items(), key=lambda item: -item[1]):
        if count:
            print(f"  {table:<28} {count / tasks:6.1f} rows a task")


def postgres_figures(db: Path, run_tasks: object, tasks: int) -> None:
    import psycopg

    url = str(getattr(db, "url", db))

    def stats() -> tuple[int, int, int, int]:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(
                "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted "
                "FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])

    def connections() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
        return int(row[0]) if row else 0

    peak: list[int] = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], connections())

    before = stats()
    spent: list[float] = []
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with server_cpu(spent):
            run_tasks(db)  # type: ignore[operator]
    finally:
        done.set()
        sampler.join()
    after = stats()
    commits, inserted, updated, deleted = (b - a for a, b in zip(before, after, strict=True))
    print(
        f"PostgreSQL, {tasks} tasks: {commits / tasks:.1f} transactions a task; rows "
        f"{inserted / tasks:.1f} inserted, {updated / tasks:.1f} updated, "
        f"{deleted / tasks:.1f} deleted a task; server CPU {spent[0] / tasks * 1000:.1f} ms a task"
    )
    print(f"  connections of the one runner process at most: {peak[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    data = find_data_dir()
    with tempfile.TemporaryDirectory(prefix="aah-store-task-") as folder:
        tmp = Path(folder)
        build_registry(data, tmp / "registry.db")
        registry = Registry(tmp / "registry.db")
        tasks = load_tasks(data, ["underspecified"])[: args.tasks]
        with fake_model(tmp, 0) as config:

            def run_tasks(db: Path) -> None:
                run(tasks, config, registry, db, CONCURRENCY, "s")

            run_tasks(tmp / "s.db")
            sqlite_figures(tmp / "s.db", len(tasks))
            try:
                with postgres(None) as (base, admin):
                    postgres_figures(new_database(base, admin), run_tasks, len(tasks))
            except BaseException as exc:  # no PostgreSQL here: the SQLite figures stand
                if type(exc).__name__ not in ("Skipped", "Failed"):
                    raise
                print(f"PostgreSQL: not measured ({exc})", file=sys.stderr)


if __name__ == "__main__":
    main()
