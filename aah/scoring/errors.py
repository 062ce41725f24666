"""ToolScan error patterns in a run's logged tool calls (science.md §4).

Per call: **IFN** (function name not offered), **IAN** (argument name not in
the schema), **IAT** (argument of the wrong type), **IFE** (output not
parseable as a call), **RAC** (exact repeat of an earlier call in the
session), **IAV** (missing required argument or wrong value). Per task:
**IAC** (some needed endpoint never called). Each pattern is reported, as
ToolScan does, as the share of calls (tasks, for IAC) *free* of it, with k/N
and a Wilson interval; with N = 0 the value is None.

Choices made here:

- The runtime checks a call before it runs and logs the first pattern that
  stopped it (``ToolCallEvent.check``), so a rejected call counts under one
  pattern, the first its check found.
- IAV also counts executed calls that the API answered with HTTP 400 or 422:
  the checks see a missing argument, only the API sees a wrong value. Other
  failures (404, 5xx, timeouts) are the tool's, not the call's, and fault
  mode injects exactly those.
- ``ask_human`` calls are tool calls and pass the same checks, so they are in
  the per-call denominators: a rejected one is a tool-call event with its
  code, and a valid one leaves only a human-question event, counted as a
  clean call. They never satisfy a needed endpoint. ``find_tools`` calls are
  counted the same way (science.md names no exception for either): a valid
  one leaves only a discovery event, a clean call; finding an endpoint is
  not calling it.
- IAC: a needed endpoint counts as called when any call named it, run or
  rejected (a rejected call is already counted by its own pattern). Tasks
  with no needed endpoint, tasks missing from ``needed``, and skipped tasks
  (awareness said no, so nothing was tried) are outside N.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from aah.events import DiscoveryEvent, Event, HumanQuestionEvent, ToolCallEvent
from aah.scoring.intervals import Proportion, wilson
from aah.store import SessionStore
from aah.tools import ASK_HUMAN

ErrorPattern = Literal["IFN", "IAN", "IAT", "IFE", "RAC", "IAV", "IAC"]
ERROR_PATTERNS: tuple[ErrorPattern, ...] = get_args(ErrorPattern)
CALL_PATTERNS: tuple[ErrorPattern, ...] = ("IFN", "IAN", "IAT", "IFE", "RAC", "IAV")
# An API that rejects a call's arguments answers one of these.
WRONG_VALUE_STATUSES = frozenset({400, 422})


@dataclass(frozen=True)
class ErrorPatternReport:
    """The share of calls (tasks, for IAC) free of each pattern, over one run.

    Attributes:
        run: The run scored (None: every session in the store).
        calls: How many calls the per-call shares are over.
        tasks: How many tasks the IAC share is over.
        free: Each pattern's share of calls (tasks) free of it, k/N with interval.
        hits: How many calls (tasks) show each pattern.
        incomplete: The needed endpoints never called, by session, for tasks with IAC.
    """

    run: str | None
    calls: int
    tasks: int
    free: dict[ErrorPattern, Proportion]
    hits: dict[ErrorPattern, int]
    incomplete: dict[str, list[str]]


def call_patterns(event: ToolCallEvent) -> frozenset[ErrorPattern]:
    """The error patterns one logged call shows (empty for a clean call)."""
    return patterns_of(event.check, event.status_code)


def patterns_of(check: str | None, status: int | None) -> frozenset[ErrorPattern]:
    """The patterns of a call from its check result and HTTP status (stored columns).

    The check's pattern when a check stopped the call, else IAV when the API
    rejected a value (400/422), else none. A question refused for being past
    the cap on questions (``CAP``) passed every check: it shows no pattern.
    """
    if check in CALL_PATTERNS:
        return frozenset({check})
    if status in WRONG_VALUE_STATUSES:
        return frozenset({"IAV"})
    return frozenset()


def session_call_patterns(events: Sequence[Event]) -> list[frozenset[ErrorPattern]]:
    """The patterns of each call in one session's events, valid builtin calls included.

    A valid ``ask_human`` call leaves a question, a valid ``find_tools`` call a search.
    """
    found: list[frozenset[ErrorPattern]] = []
    for event in events:
        if isinstance(event, ToolCallEvent):
            found.append(call_patterns(event))
        elif isinstance(event, HumanQuestionEvent | DiscoveryEvent):
            found.append(frozenset())
    return found


def missing_endpoints(events: Sequence[Event], needed: Sequence[str]) -> list[str]:
    """The endpoints of ``needed`` that no call in ``events`` named, in order."""
    called = {e.tool for e in events if isinstance(e, ToolCallEvent)}
    return [name for name in dict.fromkeys(needed) if name != ASK_HUMAN and name not in called]


def error_patterns(
    store: SessionStore, run: str | None, needed: Mapping[str, Sequence[str]] | None = None
) -> ErrorPatternReport:
    """Score the ToolScan error patterns of every call and task of ``run``.

    Args:
        store: The session store.
        run: The run to score; None scores every session in the store.
        needed: For IAC, each session's needed endpoints (qualified names),
            keyed by session id; None leaves IAC with N = 0.

    Returns:
        Each pattern's share of calls (tasks, for IAC) free of it.
    """
    per_call: list[frozenset[ErrorPattern]] = []
    incomplete: dict[str, list[str]] = {}
    tasks = 0
    for session in store.list_sessions(run=run):
        events = store.events(session.id)
        per_call += session_call_patterns(events)
        wanted = [name for name in (needed or {}).get(session.id, ()) if name != ASK_HUMAN]
        if not wanted or session.status == "skipped":
            continue
        tasks += 1
        missing = missing_endpoints(events, wanted)
        if missing:
            incomplete[session.id] = missing
    hits: dict[ErrorPattern, int] = {p: sum(p in f for f in per_call) for p in CALL_PATTERNS}
    hits["IAC"] = len(incomplete)
    free = {p: wilson(len(per_call) - hits[p], len(per_call)) for p in CALL_PATTERNS}
    free["IAC"] = wilson(tasks - hits["IAC"], tasks)
    return ErrorPatternReport(run, len(per_call), tasks, free, hits, incomplete)
