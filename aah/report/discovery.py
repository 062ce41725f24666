"""Tool discovery in a report: ``find_tools`` searches per task, gold endpoints found, cost.

A run whose agent could discover tools (``--discover``, ``--tools registry``)
is scored on how it searched: the ``find_tools`` calls per task, and, for
Fail-TaLMs tasks with gold endpoints, whether every gold endpoint the task
needs was ever among a search's hits. An endpoint the setting removed (the
unavailable settings, with ``--unavailable hidden``) is no gold endpoint
here: the session could not find it. A broken one (``--unavailable broken``)
stays findable, and gold.

A run that found its tools (``--tools registry``) is set beside the run that
was given them (same model, Aah and setup but the tools), setting by setting,
so that what discovery costs is a number: the pass-rate difference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aah.scoring import CellMetrics, Proportion, TaskOutcome, proportion_to_json, wilson
from aah.store import Discovery, RunRecord, SessionStore
from aah.tools import ASK_HUMAN

# How a run's agent came by its endpoints, as the report names it.
GIVEN, FOUND = "given the tools", "found the tools"
# Manifest fields that, with the model, Aah and setting, make a given and a found run comparable.
COST_FIELDS = ("http", "unavailable", "step_limit", "registry_hash", "human")


def tools_label(run: RunRecord) -> str:
    """``found the tools`` for a ``--tools registry`` run, else ``given the tools``."""
    return FOUND if run.manifest.get("tools") == "registry" else GIVEN


def discovering(run: RunRecord) -> bool:
    """Whether the run's agent had ``find_tools``."""
    return bool(run.manifest.get("discover")) or run.manifest.get("tools") == "registry"


@dataclass(frozen=True)
class RunDiscovery:
    """How one run's agent searched for tools.

    Attributes:
        run: The run.
        tools: ``given the tools`` or ``found the tools``.
        tasks: Sessions of the run not skipped (skipped ones never acted).
        searches: ``find_tools`` calls that ran, over those sessions.
        per_task: Searches by task id (session id where a session has none).
        gold_found: Sessions whose every gold endpoint some search returned,
            over the sessions with gold endpoints that were not skipped.
        missed: The gold endpoints no search returned, by session id.
    """

    run: str
    tools: str
    tasks: int
    searches: int
    per_task: dict[str, int]
    gold_found: Proportion
    missed: dict[str, list[str]]

    @property
    def searches_per_task(self) -> float | None:
        """Mean ``find_tools`` calls per task not skipped; None with no task."""
        return self.searches / self.tasks if self.tasks else None


def load_discoveries(store: SessionStore, runs: Sequence[str]) -> dict[str, list[Discovery]]:
    """Every ``find_tools`` search of the runs' sessions, by session id, in order."""
    found: dict[str, list[Discovery]] = {}
    with store.queries() as read:
        for discovery in read.discoveries(runs):
            found.setdefault(discovery.session_id, []).append(discovery)
    return found


def run_discovery(
    run: RunRecord,
    outcomes: Sequence[TaskOutcome],
    discoveries: Mapping[str, Sequence[Discovery]],
    needed: Mapping[str, Sequence[str]] | None,
    unavailable: Mapping[str, Sequence[str]] | None = None,
) -> RunDiscovery:
    """Score one run's searches (see the module docstring).

    Args:
        run: The run.
        outcomes: Its sessions' outcomes.
        discoveries: Every search, by session id.
        needed: Each session's gold endpoints, by session id (None: no data).
        unavailable: Each session's endpoints its setting made unavailable.
    """
    acted = [o for o in outcomes if not o.skipped]
    hidden = run.manifest.get("unavailable", "hidden") == "hidden"
    per_task = Counter(
        {o.task_id or o.session_id: len(discoveries.get(o.session_id, ())) for o in acted}
    )
    missed: dict[str, list[str]] = {}
    with_gold = 0
    for outcome in acted:
        gone = set((unavailable or {}).get(outcome.session_id, ())) if hidden else set()
        wanted = (needed or {}).get(outcome.session_id, ())
        gold = [n for n in dict.fromkeys(wanted) if n != ASK_HUMAN and n not in gone]
        if not gold:
            continue
        with_gold += 1
        hits = {name for d in discoveries.get(outcome.session_id, ()) for name in d.hits}
        lost = [name for name in gold if name not in hits]
        if lost:
            missed[outcome.session_id] = lost
    return RunDiscovery(
        run=run.name,
        tools=tools_label(run),
        tasks=len(acted),
        searches=sum(per_task.values()),
        per_task=dict(per_task),
        gold_found=wilson(with_gold - len(missed), with_gold),
        missed=missed,
    )


@dataclass(frozen=True)
class DiscoveryCost:
    """One setting's pass rate with the tools given and with the tools found.

    Attributes:
        given_run: The run whose agent was handed the task's endpoints.
        found_run: The run whose agent found them with ``find_tools``.
        difference: Found minus given pass rate, in percentage points;
            None when either has no data.
    """

    setting: str | None
    model: str | None
    aah: bool | None
    given_run: str
    found_run: str
    given: Proportion
    found: Proportion

    @property
    def difference(self) -> float | None:
        """Found minus given pass rate, in percentage points."""
        if self.given.value is None or self.found.value is None:
            return None
        return 100 * (self.found.value - self.given.value)


def discovery_costs(runs: Sequence[RunRecord], cells: Sequence[CellMetrics]) -> list[DiscoveryCost]:
    """Each found run's cells beside the matching given run's, setting by setting."""
    by_name = {run.name: run for run in runs}

    def key(cell: CellMetrics) -> tuple[Any, ...]:
        manifest = by_name[cell.run].manifest if cell.run in by_name else {}
        return (cell.model, cell.aah, cell.setting, *(repr(manifest.get(f)) for f in COST_FIELDS))

    given: dict[tuple[Any, ...], CellMetrics] = {}
    for cell in cells:
        run = by_name.get(cell.run or "")
        if run is not None and tools_label(run) == GIVEN:
            given.setdefault(key(cell), cell)
    costs = []
    for cell in cells:
        run = by_name.get(cell.run or "")
        if run is None or tools_label(run) != FOUND:
            continue
        match = given.get(key(cell))
        if match is not None:
            costs.append(
                DiscoveryCost(
                    cell.setting,
                    cell.model,
                    cell.aah,
                    match.run or "",
                    run.name,
                    match.pass_rate,
                    cell.pass_rate,
                )
            )
    return costs


def discovery_to_json(discovery: RunDiscovery) -> dict[str, Any]:
    """One run's discovery scores as JSON (see ``report_to_json``)."""
    return {
        "run": discovery.run,
        "tools": discovery.tools,
        "tasks": discovery.tasks,
        "searches": discovery.searches,
        "searches_per_task": discovery.searches_per_task,
        "per_task": dict(sorted(discovery.per_task.items())),
        "gold_found": proportion_to_json(discovery.gold_found),
        "missed": discovery.missed,
    }


def cost_to_json(cost: DiscoveryCost) -> dict[str, Any]:
    """One setting's given-versus-found pass rates as JSON."""
    return {
        "setting": cost.setting,
        "model": cost.model,
        "aah": cost.aah,
        "given_run": cost.given_run,
        "found_run": cost.found_run,
        "pass_rate": {
            "given": proportion_to_json(cost.given),
            "found": proportion_to_json(cost.found),
        },
        "difference": cost.difference,
    }
