"""From one sent item to the next item ready, with 1,000 waiting (target: median under 0.3 s).

Fills a store on each engine (a SQLite file; a PostgreSQL database) with
``--waiting`` items (default 1,000: 5% approvals, 5% MCP forms, the rest
questions, a tenth of them with a deadline), as runners leave them, then
sends items through the web page's own handlers, called as the page calls
them: a question's Send (``QueueHandlers.answer``), a decision on a call or
a form (``QueueHandlers.decide``). Each is timed from the call to its
return, which holds the next item's form, claimed and shown (the queue's
order: approvals and forms first, then the nearest deadline, then the
oldest), and the answer's row in the latest answers. After each send a new
item is added (untimed; kinds in the same shares), so the queue stays at
``--waiting``: the approvals and forms go first, then questions.

The engines take turns, ``--sends`` items at a time, ``--repeats`` times
(interleaved, so that a busy moment of a shared machine falls on both);
printed per engine: median, min and max seconds per send over all rounds,
the median of each round, and the median per kind sent. Without ``--url`` a throwaway PostgreSQL
cluster is started as the tests start theirs (tests/postgres_cluster.py:
initdb, fsync off); ``--no-postgres`` measures SQLite alone.

Run: .venv/bin/python perf/desk_next_item.py [--waiting 1000] [--sends 40] [--repeats 5]
     [--url postgresql://...] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from postgres_store import new_database, postgres

from aah.desk import DeskWorkflow, ElicitationRequest, OpenedRequest
from aah.store import SessionStore
from aah.store.schema import RequestKind
from aah.ui.web.auth import Annotator
from aah.ui.web.queue_page import QueueHandlers

TARGET_S = 0.3
# Where the opened request is among the outputs of ``start`` (status, skipped,
# then the form), ``answer`` (status, done, then the form) and ``decide``
# (status, done, then the form): the form's last value.
_OPENED = 2 + 16
_TOOLS = [f"weather__endpoint_{n}: returns the weather for a city and a day" for n in range(8)]
_FORM = ElicitationRequest.from_params(
    "hotel-server",
    {
        "message": "Confirm the booking",
        "mode": "form",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Guest name"}},
            "required": ["name"],
        },
    },
).model_dump(mode="json")


def kind_of(n: int) -> RequestKind:
    """The n-th item's kind: one in twenty an approval, one in twenty a form."""
    return "approval" if n % 20 == 7 else "elicitation" if n % 20 == 13 else "question"


def add_item(store: SessionStore, n: int, kind: RequestKind) -> None:
    """One waiting session with one pending item of ``kind``, as a runner leaves it."""
    session = store.open_session(
        f"What is the weather in Porto on day {n}?",
        run="perf",
        task_id=f"task-{n}",
        setting="underspecified",
    )
    store.set_status(session.id, "waiting")
    deadline = store.clock.now() + timedelta(hours=1 + n % 7) if n % 10 == 3 else None
    if kind == "approval":
        call = {"tool": "weather__forecast", "method": "GET", "arguments": {"city": "Porto"}}
        context: dict[str, Any] = {"approval": call, "query": "What is the weather?"}
        question = "Approve this call? GET weather__forecast"
    elif kind == "elicitation":
        context, question = _FORM, "Confirm the booking"
    else:
        context = {
            "query": "What is the weather?",
            "original_query": f"What is the weather in Porto on day {n}?",
            "setting": "underspecified",
            "tools": _TOOLS,
            "conversation": [{"role": "agent", "text": "Let me check the forecast."}],
        }
        question = f"Which city and day ({n})?"
    fallback = "idk" if deadline is not None else None
    store.humans.create_human_request(
        session.id, question, context, kind=kind, deadline=deadline, fallback=fallback
    )


@dataclass
class Desk:
    """One engine's store, the page's handlers on it, and what is open now."""

    name: str
    store: SessionStore
    handlers: QueueHandlers
    who: Annotator
    opened: OpenedRequest | None = None
    added: int = 0
    rounds: list[list[float]] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)

    def send_one(self) -> float:
        """Send the open item as a person would; seconds until the next is ready."""
        assert self.opened is not None, f"{self.name}: nothing open"
        request = self.store.humans.get_human_request(self.opened.request_id)
        assert request is not None
        start = time.perf_counter()
        if request.kind == "question":
            outputs = self.handlers.answer(
                self.who, self.opened, "Porto, tomorrow", None, [], declined=False
            )
        else:
            sent = (
                {"decision": "approve"}
                if request.kind == "approval"
                else {"action": "accept", "content": {"name": "Ana"}}
            )
            outputs = self.handlers.decide(self.who, self.opened, json.dumps(sent), [])
        seconds = time.perf_counter() - start
        assert outputs[1] == request.id, f"{self.name}: not sent: {outputs[0]}"
        self.opened = outputs[_OPENED]
        # The queue stays at its size: a runner asks again meanwhile (untimed).
        add_item(self.store, 1_000_000 + self.added, kind_of(self.added))
        self.added += 1
        self.by_kind.setdefault(request.kind, []).append(seconds)
        return seconds


def desk(name: str, store: SessionStore, waiting: int) -> Desk:
    """``store`` filled with ``waiting`` items and an annotator signed in, the first item open."""
    store.create_run("perf", {"human": "queue"})
    started = time.perf_counter()
    for n in range(waiting):
        add_item(store, n, kind_of(n))
    filled = time.perf_counter() - started
    print(f"{name}: {waiting:,} items waiting, made in {filled:.1f} s", flush=True)
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("perf-annotator", admin=False)
    made = Desk(name, store, handlers, who)
    made.opened = handlers.start(who)[_OPENED]
    return made


def spread(values: list[float]) -> str:
    """Median, min and max seconds of ``values``."""
    return (
        f"median {statistics.median(values):.4f} s, min {min(values):.4f} s,"
        f" max {max(values):.4f} s"
    )


def engines(args: argparse.Namespace, stack: ExitStack) -> Iterator[tuple[str, SessionStore]]:
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    yield "SQLite", stack.enter_context(SessionStore(folder / "perf.db"))
    if args.no_postgres:
        return
    base, admin = stack.enter_context(postgres(args.url))
    yield "PostgreSQL", stack.enter_context(SessionStore(new_database(base, admin)))


def main() -> int:
    """Fill both engines, send items in interleaved rounds, print the figures; 1 if over target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiting", type=int, default=1000, help="items waiting throughout")
    parser.add_argument("--sends", type=int, default=40, help="items sent per engine per round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds, engines in turn")
    parser.add_argument("--url", help="a PostgreSQL server's URL (a database is made there)")
    parser.add_argument("--no-postgres", action="store_true", help="measure SQLite alone")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    with ExitStack() as stack:
        desks = [desk(name, store, args.waiting) for name, store in engines(args, stack)]
        for _ in range(args.repeats):
            for each in desks:
                each.rounds.append([each.send_one() for _ in range(args.sends)])
        over = False
        for each in desks:
            times = [seconds for round_ in each.rounds for seconds in round_]
            medians = ", ".join(f"{statistics.median(r):.4f}" for r in each.rounds)
            left = each.store.humans.queue_listing(limit=0)
            kinds = ", ".join(
                f"{len(sent)} {kind}s {statistics.median(sent):.4f}"
                for kind, sent in sorted(each.by_kind.items())
            )
            print(
                f"{each.name}: sent item to next item ready, {len(times)} sends with"
                f" {left.total:,} waiting: {spread(times)} (round medians: {medians} s;"
                f" medians by kind sent: {kinds} s)"
            )
            over = over or statistics.median(times) >= TARGET_S
    print(f"target: median under {TARGET_S} s: {'MISSED' if over else 'met'}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
