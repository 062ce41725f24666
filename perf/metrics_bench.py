"""Metrics figures: load_outcomes + compute_metrics over 10,000 graded sessions.

The sessions (with ~11 events each, grades, and some human questions) are
written straight into a fresh store's tables in a few batched transactions,
so that generating them takes seconds, not the time of 100,000 appends.

Run: .venv/bin/python perf/metrics_bench.py [--sessions N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aah.events import (
    AwarenessEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.scoring.metrics import SETTINGS, cell_to_json, compute_metrics, load_outcomes
from aah.store import schema as schema
from aah.store.sessions import SessionStore

RUNS = 4
ANSWERS = ("yes", "idk", "no")
FINALS = (
    "The forecast for Oslo is 21 degrees and sunny.",
    "I'm sorry, but I cannot do this: no available tool gives that information.",
    "Here are the five latest stories from the front page.",
)


def session_events(sid: str, rng: random.Random, skipped: bool) -> list[Event]:
    """A plausible session: awareness, agent turns, tool calls, a question, the answer."""
    answer = "no" if skipped else rng.choice(ANSWERS[:2])
    events: list[Event] = [
        ModelCallEvent(session_id=sid, model="m", purpose="awareness", latency_ms=80),
        AwarenessEvent(session_id=sid, question="tool", answer=answer, reason="Because."),
    ]
    if not skipped:
        for turn in range(3):
            events.append(
                ModelCallEvent(
                    session_id=sid,
                    model="m",
                    latency_ms=rng.uniform(200, 900),
                    prompt_tokens=1200 + 300 * turn,
                    completion_tokens=60,
                    n_tool_calls=1,
                    text="",
                )
            )
            events.append(
                ToolCallEvent(
                    session_id=sid,
                    call_id=f"c{turn}",
                    tool="weather__forecast",
                    arguments={"city": "Oslo"},
                    status_code=200,
                    ok=True,
                    result='{"temp": 21}',
                )
            )
        if rng.random() < 0.4:
            rid = f"{sid}-q"
            events.append(
                HumanQuestionEvent(session_id=sid, request_id=rid, question="Which city?")
            )
            events.append(
                HumanAnswerEvent(
                    session_id=sid, request_id=rid, answer="Oslo", answered_by="oracle", seconds=3
                )
            )
    events.append(FinalAnswerEvent(session_id=sid, text=rng.choice(FINALS)))
    return events


def fill(path: Path, sessions: int, seed: int = 7) -> int:
    """Write ``sessions`` sessions over a few runs and settings; return the event count."""
    SessionStore(path).close()  # creates the schema
    rng = random.Random(seed)
    now = "2025-01-01T00:00:00+00:00"
    session_rows: list[tuple[Any, ...]] = []
    event_rows: list[tuple[Any, ...]] = []
    grade_rows: list[tuple[Any, ...]] = []
    for index in range(sessions):
        sid = f"s{index:06d}"
        run, setting = f"run{index % RUNS}", SETTINGS[index // RUNS % len(SETTINGS)]
        skipped = rng.random() < 0.1
        events = session_events(sid, rng, skipped)
        bump = {"model_calls": 0, "tool_calls": 0, "tool_errors": 0, "human_questions": 0}
        bump |= {"prompt_tokens": 0, "completion_tokens": 0}
        awareness = None
        for seq, event in enumerate(events, start=1):
            event_rows.append((sid, seq, event.kind, now, schema.event_payload(event)))
            step = schema.session_bump(event)
            for key in bump:
                bump[key] += step[key]
            awareness = step["tool_awareness"] or awareness
        status = "skipped" if skipped else "finished"
        final = events[-1].text  # type: ignore[union-attr]
        session_rows.append(
            (sid, run, f"t{index}", setting, "What is the weather?", status, index % 2)
            + ("m", sid, now, now, final, None, awareness, len(events))
            + tuple(bump.values())
        )
        if not skipped:
            verdict = "pass" if rng.random() < 0.5 else "fail"
            grade_rows.append((sid, "grader", "v1", "[]", verdict, 0, now))
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO runs (name, created, manifest) VALUES (?, ?, '{}')",
            [(f"run{r}", now) for r in range(RUNS)],
        )
        conn.executemany(
            "INSERT INTO sessions (id, run, task_id, setting, query, status, aah, model,"
            " thread_id, started, ended, final_answer, info_awareness, tool_awareness, n_events,"
            " n_model_calls, n_tool_calls, n_tool_errors, n_human_questions, prompt_tokens,"
            " completion_tokens) VALUES (" + ", ".join("?" * 21) + ")",
            session_rows,
        )
        conn.executemany(
            "INSERT INTO events (session_id, seq, kind, ts, payload) VALUES (?, ?, ?, ?, ?)",
            event_rows,
        )
        conn.executemany(
            "INSERT INTO grades (session_id, grader_model, prompt_version, votes, verdict,"
            " flagged, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            grade_rows,
        )
    conn.close()
    return len(event_rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        n_events = fill(path, args.sessions)
        print(
            f"generated {args.sessions} sessions, {n_events} events "
            f"in {time.perf_counter() - started:.2f} s"
        )
        loads, computes, totals = [], [], []
        with SessionStore(path) as store:
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                outcomes = load_outcomes(store)
                t1 = time.perf_counter()
                cells = compute_metrics(outcomes)
                [cell_to_json(cell) for cell in cells]
                t2 = time.perf_counter()
                loads.append(t1 - t0)
                computes.append(t2 - t1)
                totals.append(t2 - t0)
        print(f"{len(outcomes)} outcomes, {len(cells)} cells")
        print(
            f"load_outcomes: median {statistics.median(loads) * 1000:.0f} ms; "
            f"compute_metrics + JSON: median {statistics.median(computes) * 1000:.0f} ms"
        )
        print(
            f"metrics total: median {statistics.median(totals) * 1000:.0f} ms "
            f"(min {min(totals) * 1000:.0f}, max {max(totals) * 1000:.0f}); "
            "target for the whole report: < 2000 ms"
        )
        cold = [cold_process(path) for _ in range(3)]
        print(
            f"cold process (start, imports, load, compute, JSON): median "
            f"{statistics.median(cold) * 1000:.0f} ms"
        )


COLD_CODE = """
import json, sys
from aah.scoring.metrics import cell_to_json, compute_metrics, load_outcomes
from aah.store.sessions import SessionStore
with SessionStore(sys.argv[1]) as store:
    cells = compute_metrics(load_outcomes(store))
json.dumps([cell_to_json(cell) for cell in cells])
"""


def cold_process(path: Path) -> float:
    """Wall time of a fresh Python process that computes every cell's JSON."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", COLD_CODE, str(path)], check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
