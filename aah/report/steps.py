"""Agent turns and tool calls of many sessions, read in bulk, and their per-run scores.

The store's bulk ``steps`` query reads every model call, tool call and human
question of the runs reported on; each step is classified as light data by
the same rules as ``behavior.classify_turns`` and ``errors.call_patterns``. Building one
pydantic event per row would cost more than a whole report may take (over a
second for 100,000 rows). The scores themselves are the shared ones:
``hallucination_rates``, ``gold_pairs`` and ``confusion`` of the behaviour
module, and ToolScan's share of calls (tasks, for IAC) free of each pattern.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import attrgetter

from aah.scoring import (
    CALL_PATTERNS,
    ErrorPattern,
    ErrorPatternReport,
    Proportion,
    TaskOutcome,
    patterns_of,
    wilson,
)
from aah.scoring.behavior import (
    BEHAVIOR_CLASSES,
    BehaviorClass,
    ConfusionMatrix,
    HallucinationRates,
    SessionTurns,
    TurnClass,
    confusion,
    gold_pairs,
    hallucination_rates,
    turn_class,
)
from aah.store import SessionStore, Step
from aah.tools import ASK_HUMAN, FIND_TOOLS


@dataclass(frozen=True)
class RunBehavior:
    """When2Call behaviour over one run's agent turns.

    Attributes:
        sessions: Sessions that took at least one agent turn.
        turns: Agent turns in all.
        classes: Each class's share of the turns.
        rates: Tool, answer and parameter hallucination.
        matrix: Gold against predicted first-turn classes.
    """

    run: str
    sessions: int
    turns: int
    classes: dict[BehaviorClass, Proportion]
    rates: HallucinationRates
    matrix: ConfusionMatrix


@dataclass
class SessionSteps:
    """What the behaviour and error-pattern scores need of one session's events."""

    turns: list[TurnClass]
    call_patterns: list[frozenset[ErrorPattern]]
    called: set[str]


_CLEAN: frozenset[ErrorPattern] = frozenset()


def load_steps(store: SessionStore, runs: Sequence[str]) -> dict[str, SessionSteps]:
    """The classified turns and calls of every session of ``runs`` that has any, by id."""
    with store.queries() as read:
        by_session = groupby(read.steps(runs), attrgetter("session_id"))
        return {sid: session_steps(sid, found) for sid, found in by_session}


def session_steps(session_id: str, steps: Iterable[Step]) -> SessionSteps:
    """One session's turns and calls from its steps, in seq order.

    A turn's calls are the tool calls and questions after its model call, up
    to the next model call of any purpose, as in ``behavior.classify_turns``.
    """
    found = SessionSteps([], [], set())
    turn: tuple[int, int, str] | None = None  # the open agent turn: seq, calls made, text
    calls: list[str] = []
    # Unpacked rather than read by attribute: this loop runs once per stored step.
    for _, seq, kind, purpose, n_tool_calls, text, tool, status_code, check in steps:
        if kind == "model_call":
            _end_turn(session_id, found, turn, calls)
            turn = (seq, n_tool_calls or 0, text or "") if purpose == "agent" else None
            calls = []
        elif kind == "tool_call":
            name = tool or ""
            found.call_patterns.append(patterns_of(check, status_code))
            found.called.add(name)
            calls.append(name)
        else:  # a valid ask_human (find_tools) call leaves only its question (search) behind
            found.call_patterns.append(_CLEAN)
            calls.append(FIND_TOOLS if kind == "discovery" else ASK_HUMAN)
    _end_turn(session_id, found, turn, calls)
    return found


def _end_turn(
    session_id: str, found: SessionSteps, turn: tuple[int, int, str] | None, calls: list[str]
) -> None:
    if turn is None:
        return
    seq, n_calls, text = turn
    label, rule = turn_class(n_calls, text, calls)
    found.turns.append(TurnClass(session_id, len(found.turns) + 1, seq, label, rule))


def task_ids(store: SessionStore, runs: Sequence[str]) -> dict[str, str]:
    """Each session's task id, by session id, for the sessions of ``runs`` that have one."""
    with store.queries() as read:
        return read.task_ids(runs)


def group_by_run(outcomes: Iterable[TaskOutcome]) -> dict[str, list[TaskOutcome]]:
    """``outcomes`` by run name, in the order given."""
    grouped: dict[str, list[TaskOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.run or "", []).append(outcome)
    return grouped


# -- per-run scores -------------------------------------------------------------


def run_behavior(
    run: str, outcomes: Sequence[TaskOutcome], steps: Mapping[str, SessionSteps]
) -> RunBehavior:
    """Class shares, hallucination rates and gold scores of one run's sessions."""
    sessions = [
        SessionTurns(o.session_id, o.setting, o.status, _steps(steps, o.session_id).turns)
        for o in outcomes
    ]
    labels = [turn.label for session in sessions for turn in session.turns]
    classes = {c: wilson(labels.count(c), len(labels)) for c in BEHAVIOR_CLASSES}
    return RunBehavior(
        run=run,
        sessions=sum(1 for session in sessions if session.turns),
        turns=len(labels),
        classes=classes,
        rates=hallucination_rates(sessions),
        matrix=confusion(gold_pairs(sessions)),
    )


def run_error_patterns(
    run: str,
    outcomes: Sequence[TaskOutcome],
    steps: Mapping[str, SessionSteps],
    needed: Mapping[str, Sequence[str]] | None,
) -> ErrorPatternReport:
    """The share of calls (tasks, for IAC) of one run free of each ToolScan pattern.

    Args:
        run: The run.
        outcomes: Its sessions' outcomes.
        steps: Every session's classified calls, by session id.
        needed: For IAC, each session's needed endpoints by session id; None
            leaves IAC with N = 0, as ``errors.error_patterns`` does.
    """
    per_call = [p for o in outcomes for p in _steps(steps, o.session_id).call_patterns]
    incomplete: dict[str, list[str]] = {}
    tasks = 0
    for outcome in outcomes:
        wanted = [name for name in (needed or {}).get(outcome.session_id, ()) if name != ASK_HUMAN]
        if not wanted or outcome.skipped:
            continue
        tasks += 1
        called = _steps(steps, outcome.session_id).called
        missing = [name for name in dict.fromkeys(wanted) if name not in called]
        if missing:
            incomplete[outcome.session_id] = missing
    # Counted in one pass over the calls: most calls have no pattern at all.
    found = Counter(pattern for patterns in per_call for pattern in patterns)
    hits: dict[ErrorPattern, int] = {p: found[p] for p in CALL_PATTERNS}
    hits["IAC"] = len(incomplete)
    free = {p: wilson(len(per_call) - hits[p], len(per_call)) for p in CALL_PATTERNS}
    free["IAC"] = wilson(tasks - hits["IAC"], tasks)
    return ErrorPatternReport(run, len(per_call), tasks, free, hits, incomplete)


def _steps(steps: Mapping[str, SessionSteps], session_id: str) -> SessionSteps:
    return steps.get(session_id) or SessionSteps([], [], set())
