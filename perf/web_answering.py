"""Answering the queue through the web page's handlers (target: < 5 ms an answer, flat).

Fills a temporary store with N waiting sessions, one pending question each
(with the context a benchmark question carries), signs one annotator in and
answers every question through the Queue tab's handlers, called directly as
the page would call them: each Send stores the answer, opens the next
question (claiming it) and shows the annotator's latest answers. Prints the
per-answer time (min / median / max) for the first and the last chunks of
200 answers, so that growth with the number already answered shows, and the
time of the page's refresh (the queue's first rows, the counter, the latest
answers: what the page's timer reads every few seconds) at the start and the end.

Run: ``.venv/bin/python perf/web_answering.py --sessions 2000`` (and 10000).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aah.desk import DeskWorkflow
from aah.store import SessionStore
from aah.ui.web.auth import Annotator
from aah.ui.web.queue_page import QueueHandlers

TARGET_MS = 5.0
CHUNK = 200
# Where the opened request is among the outputs of ``start`` (status, skipped,
# then the form) and of ``answer`` (status, done, then the form): the form's last.
_OPENED = 2 + 16


def fill(store: SessionStore, sessions: int) -> None:
    """``sessions`` waiting sessions, each with one pending question."""
    store.create_run("perf", {"human": "queue"})
    tools = [f"weather__endpoint_{n}: returns the weather for a city and a day" for n in range(8)]
    for n in range(sessions):
        session = store.open_session(
            f"What is the weather in Porto on day {n}?",
            run="perf",
            task_id=f"task-{n}",
            setting="underspecified",
        )
        store.set_status(session.id, "waiting")
        context = {
            "query": "What is the weather?",
            "original_query": f"What is the weather in Porto on day {n}?",
            "setting": "underspecified",
            "tools": tools,
            "conversation": [{"role": "agent", "text": "Let me check the forecast."}],
        }
        store.humans.create_human_request(session.id, f"Which city and day ({n})?", context)


def timed(call: Callable[[], object]) -> tuple[float, object]:
    """Milliseconds ``call`` took, and what it returned."""
    start = time.perf_counter()
    result = call()
    return (time.perf_counter() - start) * 1000, result


def summary(label: str, times: list[float]) -> str:
    """One line: min / median / max milliseconds of ``times``."""
    return (
        f"{label}: min {min(times):.2f} ms, median {statistics.median(times):.2f} ms,"
        f" max {max(times):.2f} ms"
    )


def main() -> int:
    """Fill, answer everything through the handlers, print the figures; 1 if over target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000, help="waiting sessions (questions)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(Path(folder) / "perf.db")
        started = time.perf_counter()
        fill(store, args.sessions)
        print(f"filled {args.sessions:,} waiting sessions in {time.perf_counter() - started:.1f} s")
        handlers = QueueHandlers(store, DeskWorkflow(store))
        who = Annotator("perf-annotator", admin=False)
        list_start, _ = timed(lambda: handlers.lists(who))
        shown = handlers.start(who)
        opened = shown[_OPENED]
        chunks: list[list[float]] = []
        answered = 0
        while opened is not None:
            if answered % CHUNK == 0:
                chunks.append([])
            start = time.perf_counter()
            outputs = handlers.answer(who, opened, "Porto, tomorrow", None, [], declined=False)
            ms = (time.perf_counter() - start) * 1000
            chunks[-1].append(ms)
            answered += 1
            opened = outputs[_OPENED]
        list_end, _ = timed(lambda: handlers.lists(who))
        left = store.humans.queue_listing(limit=0).total
    print(f"answered {answered:,} questions through the web handlers ({left} left)")
    print(summary(f"first {len(chunks[0])} answers, per answer", chunks[0]))
    print(summary(f"last {len(chunks[-1])} answers, per answer", chunks[-1]))
    medians = [statistics.median(chunk) for chunk in chunks]
    print(
        f"median per answer over the {len(chunks)} chunks of {CHUNK}:"
        f" {min(medians):.2f} to {max(medians):.2f} ms"
    )
    print(
        f"refresh (queue rows, counter, latest answers): {list_start:.2f} ms at the start,"
        f" {list_end:.2f} ms at the end"
    )
    worst = max(medians)
    verdict = "meets" if worst < TARGET_MS else "misses"
    print(f"worst chunk median {worst:.2f} ms: {verdict} the {TARGET_MS:.0f} ms target")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
