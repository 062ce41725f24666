"""Cost of logging one event with SessionStore.append_event (target: <= 1 ms).

Appends N realistic tool-call events to a fresh database in a temporary
folder, first from one thread, then from 16 threads at once (one session
each), and prints the wall time per event and the per-call latency
percentiles. Run: ``.venv/bin/python perf/store_event_cost.py [N]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from aah.events import ToolCallEvent
from aah.store.sessions import SessionStore

TARGET_MS = 1.0


def make_event(session_id: str, i: int) -> ToolCallEvent:
    return ToolCallEvent(
        session_id=session_id,
        call_id=f"call_{i}",
        tool="weather__current",
        arguments={"city": "Lisbon", "units": "metric", "day": i},
        status_code=200,
        ok=True,
        latency_ms=123.4,
        result='{"temperature": 21.5, "conditions": "clear"} ' * 12,
        http_mode="replay",
    )


def append_many(store: SessionStore, session_id: str, n: int, latencies: list[float]) -> None:
    for i in range(n):
        event = make_event(session_id, i)
        start = time.perf_counter()
        store.append_event(event)
        latencies.append(time.perf_counter() - start)


def measure(store: SessionStore, n: int, threads: int) -> tuple[float, list[float]]:
    """Wall seconds for n appends spread over `threads` threads, and every latency."""
    sessions = [store.open_session(f"perf query {k}").id for k in range(threads)]
    per_thread: list[list[float]] = [[] for _ in range(threads)]
    workers = [
        threading.Thread(target=append_many, args=(store, sid, n // threads, lat))
        for sid, lat in zip(sessions, per_thread, strict=True)
    ]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - start
    counted = sum(len(store.events(sid)) for sid in sessions)
    assert counted == n // threads * threads, (counted, n)  # nothing lost or doubled
    return wall, [x for lat in per_thread for x in lat]


def report(label: str, n: int, wall: float, latencies: list[float]) -> None:
    per_event_ms = wall / n * 1000
    quantiles = statistics.quantiles(latencies, n=100)
    print(
        f"{label:>10}: {per_event_ms:.3f} ms/event wall ({n / wall:,.0f} events/s), "
        f"call latency p50 {quantiles[49] * 1000:.3f} ms, p99 {quantiles[98] * 1000:.3f} ms; "
        f"target {TARGET_MS} ms -> {per_event_ms / TARGET_MS:.2f}x of budget"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp) / "perf.db")
        measure(store, 200, 1)  # warm up: connections, statement cache
        for threads in (1, 16):
            wall, latencies = measure(store, n, threads)
            report(f"{threads} thread" + ("s" if threads > 1 else ""), n, wall, latencies)
        store.close()


if __name__ == "__main__":
    main()
