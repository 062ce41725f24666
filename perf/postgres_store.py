"""The PostgreSQL store beside the SQLite one, in one sitting: throughput, wake-up, a large queue.

1. Batch throughput: the batch benchmark of perf/batch_bench.py, the
   whole under-specified setting (599 tasks; ``--tasks N`` runs the first N)
   against the fake model (its own process, ``--latency-ms`` per reply,
   default 300) at ``--concurrency`` (default 64), oracle human, once into
   a new SQLite file and once into a new PostgreSQL database, in turn
   ``--repeats`` times; tasks/s and CPU ms per task of the runner (and of
   the PostgreSQL server's processes, which SQLite does not have). Target:
   PostgreSQL within 10% of SQLite's tasks/s. A short run (``--tasks
   120``: two rounds of 64 sessions that start together and wait on the
   store together) measures the start and the end of a batch rather than
   its pace, and the queue on the store's thread weighs more there.
   ``--latency-ms 0 --concurrency 16`` makes it a CPU-bound stress instead,
   where the server's CPU competes with the runner's on a small machine.
2. Answer-to-resume across processes: a watcher process (a runner's
   ``AnswerWatcher`` loop) watches ``--answers`` waiting requests, this
   process answers them one by one; the delay from the answer's call to the
   wake in the other process (median, p99, max). SQLite wakes on its 0.5 s
   timer, PostgreSQL on NOTIFY. Target (PostgreSQL): p99 under 100 ms.
3. 10,000 waiting sessions (``--waiting``): made in SQLite through the store
   API, copied to PostgreSQL with ``aah db copy``'s code; the database size
   and the light queue listing's time (min / median / max of 5). Target:
   listing 10,000 waiting under 100 ms. Then again with this process's
   start-up objects frozen, as ``aah web`` and ``aah tui`` freeze theirs
   (``aah.ui.heap``): Python's full collections, which a listing this size
   sets off, then skip them.

The load average is printed with each section: on a shared machine the
figures move with it. Without ``--url`` a throwaway cluster is started the
way the tests start theirs (tests/postgres_cluster.py: initdb, fsync off).
Run: .venv/bin/python perf/postgres_store.py [--tasks N] [--repeats 3] [--url URL]
     [--latency-ms 300] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from batch_bench import fake_model, run

from aah.benchmark.failtalms.dataset import load_tasks
from aah.data.locate import find_data_dir
from aah.db_url import parse_location
from aah.store import SessionStore, copy_database
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry
from aah.ui.heap import freeze_start_up

TESTS = Path(__file__).resolve().parent.parent / "tests"

WATCHER = """
import asyncio, json, sys, time
from aah.db_url import parse_location
from aah.runtime import AnswerWatcher

async def main():
    ids = json.loads(sys.stdin.readline())
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


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def spread(values: list[float], digits: int = 1) -> str:
    ordered = sorted(values)
    return " / ".join(
        f"{v:.{digits}f}" for v in (ordered[0], statistics.median(ordered), ordered[-1])
    )


def postgres_cpu() -> dict[int, float]:
    """User + system CPU seconds of each running ``postgres`` process, by pid (Linux /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


@contextmanager
def server_cpu(spent: list[float]) -> Iterator[None]:
    """Append the CPU seconds PostgreSQL's processes spent in the block.

    A backend ends with its connection, taking its counters along, so they
    are sampled every 0.1 s meanwhile (what one spends after its last sample
    is missed: the figure is a little low).
    """
    first = postgres_cpu()
    last = dict(first)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            last.update(postgres_cpu())

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join()
        last.update(postgres_cpu())
        spent.append(sum(cpu - first.get(pid, 0.0) for pid, cpu in last.items()))


@contextmanager
def postgres(url: str | None) -> Iterator[tuple[str, object]]:
    """The server's URL without a database, and what makes databases: ``--url``'s, or a new one."""
    if url is not None:
        import psycopg

        class Admin:
            def create_database(self) -> str:
                name = f"perf_{uuid.uuid4().hex[:12]}"
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return name

        yield url.rsplit("/", 1)[0], Admin()
        return
    sys.path.insert(0, str(TESTS))
    from postgres_cluster import _start

    started = _start()
    server = next(started)
    try:
        yield server.url().rsplit("/", 1)[0], server
    finally:
        started.close()


def where(db: Path) -> str:
    """What names ``db`` on a command line: a path, or the URL as given."""
    return str(getattr(db, "url", db))


def new_database(base: str, admin: object) -> Path:
    return parse_location(f"{base}/{admin.create_database()}")  # type: ignore[attr-defined]


def throughput(
    tasks: list,
    registry: Registry,
    tmp: Path,
    base: str,
    admin: object,
    repeats: int,
    latency_ms: int,
    concurrency: int,
) -> None:
    figures: dict[str, dict[str, list[float]]] = {
        e: {"rate": [], "cpu": [], "server": []} for e in ("sqlite", "postgresql")
    }
    with fake_model(tmp, latency_ms) as config:
        run(tasks[:5], config, registry, tmp / "warm.db", concurrency, "warm")  # imports
        for repeat in range(repeats):
            for engine in ("sqlite", "postgresql"):
                db = tmp / f"t{repeat}.db" if engine == "sqlite" else new_database(base, admin)
                spent: list[float] = []
                with server_cpu(spent):
                    wall, cpu = run(tasks, config, registry, db, concurrency, f"t{repeat}")
                server = spent[0] if engine == "postgresql" else 0.0
                figures[engine]["rate"].append(len(tasks) / wall)
                figures[engine]["cpu"].append(cpu / len(tasks) * 1000)
                figures[engine]["server"].append(server / len(tasks) * 1000)
    print(
        f"1. batch throughput, {len(tasks)} tasks, model latency {latency_ms} ms, concurrency "
        f"{concurrency}, {repeats} repeats (min / median / max); {load()}"
    )
    for engine, got in figures.items():
        extra = (
            f", PostgreSQL server {spread(got['server'])} ms CPU per task"
            if engine == "postgresql"
            else ""
        )
        print(
            f"   {engine:10s} {spread(got['rate'])} tasks/s, "
            f"runner {spread(got['cpu'])} ms CPU per task{extra}"
        )
    ratio = statistics.median(figures["postgresql"]["rate"]) / statistics.median(
        figures["sqlite"]["rate"]
    )
    print(f"   PostgreSQL / SQLite median tasks/s: {ratio:.2f} (target >= 0.90)")


def waiting_requests(db: Path, n: int) -> tuple[SessionStore, list[str]]:
    store = SessionStore(db)
    ids = []
    for _ in range(n):
        session = store.open_session("Weather where I live?")
        store.set_status(session.id, "waiting")
        ids.append(store.humans.create_human_request(session.id, "Which city?").id)
    return store, ids


ANSWER_CALLS: list[float] = []


def wake_delays(db: Path, n: int) -> list[float]:
    """Seconds from each answer's call to its wake in a watcher process."""
    store, ids = waiting_requests(db, n)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    child = subprocess.Popen(
        [sys.executable, "-c", WATCHER, where(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps(ids) + "\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "watching"
    answered = {}
    for request_id in ids:
        answered[request_id] = time.time()
        store.humans.answer_human_request(request_id, "perf", "Lisbon")
        ANSWER_CALLS.append(time.time() - answered[request_id])
        time.sleep(0.02)
    woken = json.loads(child.stdout.readline())
    child.wait()
    store.close()
    return [woken[r] - answered[r] for r in ids]


def answer_to_resume(tmp: Path, base: str, admin: object, n: int, repeats: int) -> None:
    delays: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    calls: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    for repeat in range(repeats):
        for engine in delays:
            db = tmp / f"wake{repeat}.db" if engine == "sqlite" else new_database(base, admin)
            ANSWER_CALLS.clear()
            delays[engine] += wake_delays(db, n)
            calls[engine] += ANSWER_CALLS
    print(f"2. answer-to-resume across processes, {n} answers x {repeats} repeats; {load()}")
    for engine, got in delays.items():
        ordered = sorted(got)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(
            f"   {engine:10s} median {statistics.median(ordered) * 1000:.0f} ms,"
            f" p99 {p99 * 1000:.0f} ms,"
            f" max {ordered[-1] * 1000:.0f} ms"
            + f"; the answer's own call: median {statistics.median(calls[engine]) * 1000:.0f} ms"
            + (" (target p99 < 100 ms)" if engine == "postgresql" else "")
        )


def timed(work: object, repeats: int = 5) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return times


def large_queue(tmp: Path, base: str, admin: object, n: int) -> None:
    sqlite_db = tmp / "waiting.db"
    made = time.perf_counter()
    waiting_requests(sqlite_db, n)[0].close()
    made_s = time.perf_counter() - made
    pg_db = new_database(base, admin)
    copied = time.perf_counter()
    copy_database(sqlite_db, pg_db)
    copied_s = time.perf_counter() - copied
    import psycopg

    with psycopg.connect(where(pg_db)) as conn:
        pg_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    stores = {"sqlite": SessionStore(sqlite_db), "postgresql": SessionStore(pg_db)}
    listing: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    frozen: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    for store in stores.values():
        assert store.humans.queue_listing().total == n
    for _ in range(3):
        for engine, store in stores.items():
            listing[engine] += timed(store.humans.queue_listing)
    # What the faces do once started (aah.ui.heap): this process's own
    # start-up objects then leave the full collections too.
    freeze_start_up()
    for _ in range(3):
        for engine, store in stores.items():
            frozen[engine] += timed(store.humans.queue_listing)
    sqlite_bytes = sqlite_db.stat().st_size + sum(
        p.stat().st_size for p in tmp.glob("waiting.db-*")
    )
    print(
        f"3. {n} waiting sessions (made in SQLite in {made_s:.1f} s, copied to PostgreSQL in "
        f"{copied_s:.1f} s); {load()}"
    )
    print(
        f"   database size: SQLite {sqlite_bytes / 1e6:.1f} MB, "
        f"PostgreSQL {pg_bytes / 1e6:.1f} MB (the whole database)"
    )
    for engine, got in listing.items():
        print(
            f"   {engine:10s} light queue listing of all {n}: {spread(got)} ms "
            "(min / median / max of 15; target < 100 ms)"
        )
    for engine, got in frozen.items():
        print(
            f"   {engine:10s} the same, start-up objects frozen as in aah web and aah tui: "
            f"{spread(got)} ms"
        )
    for store in stores.values():
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--tasks", type=int, help="Tasks per batch run: the first N (all 599 by default)."
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, default=300, help="The fake model's delay.")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--only", choices=["throughput", "wake", "queue"], help="Run one section only."
    )
    parser.add_argument("--answers", type=int, default=100, help="Answers per wake-up repeat.")
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument(
        "--url", help="A PostgreSQL server's URL (any database): a throwaway one by default."
    )
    args = parser.parse_args()
    print(load())
    data = find_data_dir(None, need_benchmark=True)
    with tempfile.TemporaryDirectory() as name, postgres(args.url) as (base, admin):
        tmp = Path(name)
        build_registry(data, tmp / "registry.db")
        registry = Registry(tmp / "registry.db")
        tasks = load_tasks(data, ["underspecified"])[: args.tasks]
        if args.only in (None, "throughput"):
            throughput(
                tasks, registry, tmp, base, admin, args.repeats, args.latency_ms, args.concurrency
            )
        if args.only in (None, "wake"):
            answer_to_resume(tmp, base, admin, args.answers, args.repeats)
        if args.only in (None, "queue"):
            large_queue(tmp, base, admin, args.waiting)


if __name__ == "__main__":
    main()
