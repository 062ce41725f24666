"""How MCP servers' questions went, per run and setting: asked, accepted, declined, waited.

Read from the sessions' ``elicitation_asked`` and ``elicitation_answered``
events. A question aah refused to show (not primitives-only, too big) is
counted as refused, apart from the person's declines; a decline at the
deadline is counted as timed out. Waits are the seconds each server waited
for its answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aah.events import ElicitationAnsweredEvent, ElicitationAskedEvent
from aah.scoring.approvals import quantile
from aah.store import ElicitationStep, SessionStore

_TIMED_OUT_BY = "deadline-fallback"


@dataclass(frozen=True)
class ElicitationCell:
    """The elicitation counts of one run × setting."""

    run: str | None
    setting: str | None
    sessions: int
    asked: int
    accepted: int
    declined: int
    cancelled: int
    refused: int
    timed_out: int
    unanswered: int
    wait_seconds_median: float | None
    wait_seconds_p90: float | None


def elicitation_metrics(steps: Iterable[ElicitationStep]) -> list[ElicitationCell]:
    """One cell per run × setting that has servers' questions, in first-seen order."""
    groups: dict[tuple[str | None, str | None], list[ElicitationStep]] = {}
    for step in steps:
        groups.setdefault((step.run, step.setting), []).append(step)
    return [_cell(run, setting, group) for (run, setting), group in groups.items()]


def _cell(run: str | None, setting: str | None, steps: list[ElicitationStep]) -> ElicitationCell:
    asked = [s.event for s in steps if isinstance(s.event, ElicitationAskedEvent)]
    answers = [s.event for s in steps if isinstance(s.event, ElicitationAnsweredEvent)]
    refused = {e.request_id for e in asked if e.refused}
    shown = [e for e in answers if e.request_id not in refused]
    waits = sorted(e.seconds for e in shown)
    answered_ids = {e.request_id for e in answers}
    return ElicitationCell(
        run=run,
        setting=setting,
        sessions=len({s.session_id for s in steps}),
        asked=len(asked),
        accepted=sum(e.action == "accept" for e in shown),
        declined=sum(e.action == "decline" and e.answered_by != _TIMED_OUT_BY for e in shown),
        cancelled=sum(e.action == "cancel" for e in shown),
        refused=len(refused),
        timed_out=sum(e.answered_by == _TIMED_OUT_BY for e in shown),
        unanswered=sum(e.request_id not in answered_ids for e in asked),
        wait_seconds_median=quantile(waits, 0.5),
        wait_seconds_p90=quantile(waits, 0.9),
    )


def load_elicitation_cells(
    store: SessionStore, runs: list[str] | None = None
) -> list[ElicitationCell]:
    """The elicitation cells of ``runs`` (None: every session)."""
    return elicitation_metrics(store.elicitation_steps(runs))
