"""Approval metrics per run and setting (science.md §7).

A call needing approval is one with an ``ApprovalRequestedEvent``; it ends in
exactly one decision (``ApprovalDecidedEvent``): approved, edited, rejected,
responded (a person gave the result; the call did not run), timed out (the
fallback's decision applied) or terminated. Rates are per call
needing approval, with Wilson intervals; a call still waiting counts in N as
``undecided`` and in none of the rates' numerators. Time to decide runs from
the call's first request entering the queue (its first ``ApprovalRequested``
event: a timeout that asks again keeps the first) to the decision, excluding
nothing; median and p90 are over decided calls. An edited call is one whose
executed arguments differ from the proposed ones (the runtime records an
edit that changed nothing as approved).

Beside them, the pass rate of the sessions with at least one edited call
and of those with calls needing approval but none edited.

JSON shape (``approval_cell_to_json``), one object per run × setting::

    {"run": str | null, "setting": str | null, "sessions": int, "calls": int,
     "undecided": int, "approved": P, "edited": P, "rejected": P,
     "responded": P, "timed_out": P, "terminated": P,
     "decide_seconds_median": float | null, "decide_seconds_p90": float | null,
     "pass_rate_with_edits": P, "pass_rate_without_edits": P}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from aah.events import ApprovalDecidedEvent, ApprovalOutcome, ApprovalRequestedEvent
from aah.scoring.intervals import Proportion, wilson
from aah.scoring.metrics import TaskOutcome, passes, proportion_to_json
from aah.store import ApprovalStep, SessionStore

OUTCOMES: tuple[ApprovalOutcome, ...] = (
    "approved",
    "edited",
    "rejected",
    "responded",
    "timed_out",
    "terminated",
)


@dataclass(frozen=True)
class ApprovalCall:
    """One call that needed approval, and how it ended.

    Attributes:
        session_id: The calling session.
        run: The session's run.
        setting: The session's setting.
        call_id: The call.
        tool: The qualified tool name.
        outcome: How it ended; None while it waits.
        decided_by: Who decided (``deadline-fallback`` for a timeout).
        decide_seconds: From the first request to the decision; None while it waits.
        proposed: The arguments the model proposed.
        executed: The arguments it ran with (an edit's); None when it did not run edited.
        reason: The reason given with the decision.
    """

    session_id: str
    run: str | None
    setting: str | None
    call_id: str
    tool: str
    outcome: ApprovalOutcome | None
    decided_by: str
    decide_seconds: float | None
    proposed: dict[str, Any]
    executed: dict[str, Any] | None
    reason: str


def approval_calls(steps: Iterable[ApprovalStep]) -> list[ApprovalCall]:
    """Each call that needed approval, from the stored approval events, in order."""
    first: dict[tuple[str, str], tuple[ApprovalStep, ApprovalRequestedEvent]] = {}
    decided: dict[tuple[str, str], ApprovalDecidedEvent] = {}
    for step in steps:
        event = step.event
        if isinstance(event, ApprovalRequestedEvent):
            first.setdefault((step.session_id, event.call_id), (step, event))
        elif isinstance(event, ApprovalDecidedEvent):
            decided.setdefault((step.session_id, event.call_id), event)
    calls = []
    for key, (step, requested) in first.items():
        decision = decided.get(key)
        seconds = (
            max(0.0, (decision.ts - requested.ts).total_seconds()) if decision is not None else None
        )
        calls.append(
            ApprovalCall(
                session_id=step.session_id,
                run=step.run,
                setting=step.setting,
                call_id=requested.call_id,
                tool=requested.tool,
                outcome=decision.outcome if decision is not None else None,
                decided_by=decision.decided_by if decision is not None else "",
                decide_seconds=seconds,
                proposed=dict(requested.arguments),
                executed=decision.arguments if decision is not None else None,
                reason=decision.reason if decision is not None else "",
            )
        )
    return calls


@dataclass(frozen=True)
class ApprovalCell:
    """The approval metrics of one run × setting (see the module docstring)."""

    run: str | None
    setting: str | None
    sessions: int
    calls: int
    undecided: int
    approved: Proportion
    edited: Proportion
    rejected: Proportion
    responded: Proportion
    timed_out: Proportion
    terminated: Proportion
    decide_seconds_median: float | None
    decide_seconds_p90: float | None
    pass_rate_with_edits: Proportion
    pass_rate_without_edits: Proportion


def approval_metrics(
    calls: Sequence[ApprovalCall], outcomes: Sequence[TaskOutcome] = ()
) -> list[ApprovalCell]:
    """One cell per run × setting that has calls needing approval, in first-seen order.

    Args:
        calls: The calls that needed approval (``approval_calls``).
        outcomes: The sessions' outcomes (``load_outcomes``), for the pass rates.
    """
    by_session = {task.session_id: task for task in outcomes}
    cells: dict[tuple[str | None, str | None], list[ApprovalCall]] = {}
    for call in calls:
        cells.setdefault((call.run, call.setting), []).append(call)
    return [_cell(run, setting, group, by_session) for (run, setting), group in cells.items()]


def _cell(
    run: str | None,
    setting: str | None,
    calls: Sequence[ApprovalCall],
    by_session: dict[str, TaskOutcome],
) -> ApprovalCell:
    n = len(calls)
    counts = {outcome: sum(1 for c in calls if c.outcome == outcome) for outcome in OUTCOMES}
    seconds = sorted(c.decide_seconds for c in calls if c.decide_seconds is not None)
    sessions = list(dict.fromkeys(c.session_id for c in calls))
    edited = {c.session_id for c in calls if c.outcome == "edited"}
    graded = [by_session[s] for s in sessions if s in by_session]
    with_edits = [t for t in graded if t.session_id in edited]
    without = [t for t in graded if t.session_id not in edited]
    return ApprovalCell(
        run=run,
        setting=setting,
        sessions=len(sessions),
        calls=n,
        undecided=sum(1 for c in calls if c.outcome is None),
        approved=wilson(counts["approved"], n),
        edited=wilson(counts["edited"], n),
        rejected=wilson(counts["rejected"], n),
        responded=wilson(counts["responded"], n),
        timed_out=wilson(counts["timed_out"], n),
        terminated=wilson(counts["terminated"], n),
        decide_seconds_median=quantile(seconds, 0.5),
        decide_seconds_p90=quantile(seconds, 0.9),
        pass_rate_with_edits=wilson(sum(1 for t in with_edits if passes(t)), len(with_edits)),
        pass_rate_without_edits=wilson(sum(1 for t in without if passes(t)), len(without)),
    )


def quantile(ordered: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile of sorted values, linear between ranks (numpy's default), or None."""
    if not ordered:
        return None
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def load_approval_calls(
    store: SessionStore, runs: Sequence[str] | None = None
) -> list[ApprovalCall]:
    """The calls that needed approval in ``runs`` (None: every session)."""
    return approval_calls(store.approval_steps(runs))


def approval_cell_to_json(cell: ApprovalCell) -> dict[str, Any]:
    """``cell`` as the JSON object of the module docstring."""
    out: dict[str, Any] = {}
    for field in fields(cell):
        value = getattr(cell, field.name)
        out[field.name] = proportion_to_json(value) if isinstance(value, Proportion) else value
    return out
