"""The report over runs: paper metrics, behaviour, error patterns, agreement, notes.

``build_report`` gathers everything a report shows into one ``Report``; the
renderers turn it into rich tables or Markdown (``report_text``), one
self-contained HTML page (``report_html``) or JSON (``render_json``, here).
Every figure comes from the scoring modules, with the formulas of science.md;
this module only selects runs, reads the store in bulk (``report_steps``) and
groups. Imported published outputs hold no agent turns or tool calls, so their
behaviour and error patterns have no data. IAC needs each task's endpoints
from the benchmark data; without data it is left unscored, with a note.

JSON shape (``render_json``; keys sorted, lists in run order, settings in
paper order)::

    {"runs": [{"name": str, "created": str, "manifest": {...}}],
     "cells": [<cell_to_json object>, ...],          # one per run × setting
     "behavior": [{"run": str, "sessions": int, "turns": int,
                   "classes": {<class>: P},          # share of agent turns
                   "hallucination": {"tool": P, "answer": P, "parameter": P},
                   "accuracy": P, "macro_f1": float | null,
                   "scores": {<class>: {"precision": float | null,
                                        "recall": float | null,
                                        "f1": float | null, "support": int}},
                   "confusion": {"labels": [<class>, ...],
                                 "counts": [[int, ...], ...]}}],  # rows gold
     "error_patterns": [{"run": str, "calls": int,
                         "tasks": int,                # IAC's N; 0 when not scored
                         "free": {<pattern>: P}, "hits": {<pattern>: int}}],
     "agreement": {
        "grader_human": {"agreement": P, "kappa": float | null,
                         "paper_agreement": 0.832},
        "annotators": {"requests": int, "rating": P, "declined": P,
                       "pairs": [{"annotators": [str, str],
                                  "rating": {"agreement": P, "kappa": ...},
                                  "declined": {"agreement": P, "kappa": ...}}]},
        "human_vs_simulated": [{"human_run": str, "simulated_run": str,
                                "simulated_kind": str, "tasks": int,
                                "pass_rate": {"human": P, "simulated": P},
                                "interaction": {"human": P, "simulated": P}}],
        "team": {"answered": int, "reviewed": int,     # aah.report.team_tables
                 "annotators": {...}, "reviewers": {...},
                 "people": [{"name": str, "done": int, "offered": int, ...}]}},
     "when2call": [<scores_to_json object>, ...],    # When2Call runs, per labeller
     "bfcl": [<bfcl scores_to_json object>, ...],    # BFCL runs, per language
                                                     # (multi-turn entries: the en row)
     "repeats": [<repeat_to_json object>, ...],      # runs with epochs, per setting
     # Only reports over runs whose agent could search (find_tools) have these two keys.
     "discovery": [{"run": str, "tools": "given the tools" | "found the tools",
                    "tasks": int, "searches": int,   # find_tools calls, tasks not skipped
                    "searches_per_task": float | null, "per_task": {<task>: int},
                    "gold_found": P,                 # every gold endpoint among the hits
                    "missed": {<session>: [str, ...]}}],   # runs with find_tools only
     "discovery_cost": [{"setting", "model", "aah", "given_run", "found_run",
                         "pass_rate": {"given": P, "found": P},
                         "difference": float | null}],     # found - given, in points
     # Only reports over the whole store with external agents (MCP clients of
     # `aah mcp serve`) have this key: their asking and approval metrics.
     "external_agents": [<external_to_json object>, ...],
     "paper_comparison": null | {"source": str, "url": str,   # --compare paper
                                 "difference_unit": "percentage points",
                                 "rows": [{"run", "model", "setting", "aah", "metric",
                                           "table", "computed": P,
                                           "published": float,  # a fraction, 0 to 1
                                           "difference": float | null,  # computed -
                                           # published, in difference_unit (+1.0 is
                                           # one point: 0.01 as a fraction)
                                           "inside": bool | null}]},
     "examples": [{"run": str, "session_id": str, "task_id": str | null,
                   "setting": str | null, "status": str,
                   "awareness": str | null, "query": str, "final_answer": str}],
     "notes": [str, ...]}

``P`` is ``proportion_to_json``'s ``{"k", "n", "value", "low", "high"}``;
``<class>`` one of ``BEHAVIOR_CLASSES``, ``<pattern>`` one of
``ERROR_PATTERNS``. A section with nothing to count has ``n = 0`` (the text
formats say "no data"). ``examples`` holds, per run, the first few sessions
that did not pass (graded fail or ended in error), texts cut short (``quote``:
at most 3 lines and a few hundred characters, long words cut, escape
sequences, controls and invisible characters dropped, bidi controls named).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from aah.benchmark import report_parts
from aah.benchmark.failtalms import (
    Comparison,
    PaperTables,
    compare_with_paper,
    comparison_to_json,
    import_notes,
    load_paper_tables,
    parse_model_map,
    unmatched_runs,
)
from aah.config import get_settings
from aah.desk import TeamFigures, team_figures
from aah.errors import AahError
from aah.report.asking_tables import asking_json, load_asking
from aah.report.discovery import (
    DiscoveryCost,
    RunDiscovery,
    cost_to_json,
    discovering,
    discovery_costs,
    discovery_to_json,
    load_discoveries,
    run_discovery,
)
from aah.report.steps import (
    RunBehavior,
    group_by_run,
    load_steps,
    run_behavior,
    run_error_patterns,
    task_ids,
)
from aah.report.team_tables import team_to_json
from aah.scoring import (
    SETTINGS,
    Agreement,
    ApprovalCall,
    ApprovalCell,
    AskingFigures,
    CellMetrics,
    ElicitationCell,
    ErrorPatternReport,
    ExternalAgentAsking,
    PairAgreement,
    RepeatScores,
    TaskOutcome,
    approval_cell_to_json,
    approval_metrics,
    base_task_id,
    cell_to_json,
    cells_with_repeats,
    compute_metrics,
    external_to_json,
    load_agreement,
    load_approval_calls,
    load_elicitation_cells,
    load_external_agents,
    load_outcomes,
    proportion_to_json,
    quote,
    repeat_to_json,
)
from aah.scoring.behavior import BEHAVIOR_CLASSES
from aah.store import RunRecord, SessionStore

EXAMPLES_PER_RUN = 3
# The paper's metric names, as its tables and the report's columns print them.
PAPER_METRIC_LABELS = {
    "pass_rate": "PR",
    "awareness": "Aware",
    "unexpected": "Unexp",
    "skip": "Skip",
    "interaction": "Inter",
}
# What ``paper_comparison``'s ``difference`` counts in.
DIFFERENCE_UNIT = "percentage points"
SHOWN_RUNS = 20  # run names an unknown-run error lists
EXAMPLE_QUERY_CHARS = 160
EXAMPLE_ANSWER_CHARS = 300

ReportProgress = Callable[[str], None]


@dataclass(frozen=True)
class Example:
    """A session that did not pass, shown so a reader can see what failing looks like."""

    run: str
    session_id: str
    task_id: str | None
    setting: str | None
    status: str
    awareness: str | None
    query: str
    final_answer: str


@dataclass(frozen=True)
class Report:
    """Everything a report shows, for the runs it covers (in name order)."""

    runs: list[RunRecord]
    cells: list[CellMetrics]
    behavior: list[RunBehavior]
    error_patterns: list[ErrorPatternReport]
    agreement: Agreement
    examples: list[Example]
    notes: list[str]
    # Each benchmark's part (``ReportPart``): its scores by its key, in registry order.
    benchmarks: dict[str, list[Any]] = field(default_factory=dict)
    repeats: list[RepeatScores] = field(default_factory=list)
    paper: PaperComparison | None = None
    discovery: list[RunDiscovery] = field(default_factory=list)
    discovery_cost: list[DiscoveryCost] = field(default_factory=list)
    # Each person's work, the reviews and their agreement (``aah.desk.team``).
    team: TeamFigures | None = None
    # Calls that needed a person's approval, per run × setting and one by one.
    approval_cells: list[ApprovalCell] = field(default_factory=list)
    approval_calls: list[ApprovalCall] = field(default_factory=list)
    # MCP servers' questions for the user, per run × setting.
    elicitation_cells: list[ElicitationCell] = field(default_factory=list)
    # External agents' (MCP clients') asking and approval metrics, reported over the whole store.
    external: list[ExternalAgentAsking] = field(default_factory=list)
    # How well the agent asks, per run, setting and category (science.md §8).
    asking: list[AskingFigures] = field(default_factory=list)


@dataclass(frozen=True)
class PaperComparison:
    """Computed figures beside the paper's (``aah report --compare paper``) and their source."""

    source: str
    url: str
    rows: list[Comparison]


def paper_tables(path: Path | None = None) -> PaperTables:
    """The Fail-TaLMs paper's tables that ``--compare paper`` sets beside a report.

    Raises:
        AahError: ``path`` is not a readable tables file.
    """
    return load_paper_tables(path)


def compare_report_with_paper(
    report: Report, tables: PaperTables, model_map: Sequence[str] = ()
) -> Report:
    """``report`` with its figures set beside the paper's (see ``aah.benchmark.failtalms.paper``).

    Args:
        report: The built report.
        tables: The paper's tables.
        model_map: ``--as`` values: ``MODEL`` for every run, or ``RUN=MODEL``.

    Raises:
        AahError: A ``--as`` value names no run of the report.
    """
    model_of = parse_model_map(model_map, [run.name for run in report.runs])
    rows = compare_with_paper(report.cells, tables, model_of)
    notes = list(report.notes)
    missing = unmatched_runs(report.cells, rows, model_of)
    if missing:
        notes.append(
            "no published figure to compare for "
            + ", ".join(missing)
            + ": the paper's tables name no such model, setting and Aah; pass --as MODEL "
            "(or RUN=MODEL) where the model is spelled otherwise"
        )
    outside = [row for row in rows if row.inside is False]
    if rows:
        notes.append(
            f"compared with the paper: {len(rows) - len(outside)} of {len(rows)} published "
            "values lie inside the computed 95% Wilson interval"
            + (f"; outside: {_outside_cells(outside)}" if outside else "")
        )
    return replace(report, paper=PaperComparison(tables.source, tables.url, rows), notes=notes)


def _outside_cells(rows: Sequence[Comparison]) -> str:
    """Each published value outside its interval, by run: setting, metric and difference."""
    by_run: dict[str | None, list[str]] = {}
    for row in rows:
        metric = PAPER_METRIC_LABELS.get(row.metric, row.metric)
        difference = "" if row.difference is None else f" {row.difference:+.1f} points"
        by_run.setdefault(row.run, []).append(f"{row.setting} {metric}{difference}")
    return "; ".join(f"run {run} ({', '.join(cells)})" for run, cells in by_run.items())


def select_runs(
    store: SessionStore, names: Sequence[str] | None, *, none_is_fine: bool = False
) -> list[RunRecord]:
    """The runs named (all when None or empty), in name order.

    Raises:
        AahError: The store has no runs (unless ``none_is_fine``), or a name is not one of them.
    """
    known = {run.name: run for run in store.runs()}
    if not known and none_is_fine and not names:
        return []
    if not known:
        raise AahError(
            f"no runs in {store.path}: run `aah bench run` or `aah import` first, or pass --db"
        )
    wanted = list(dict.fromkeys(names or known))
    unknown = [name for name in wanted if name not in known]
    if unknown:
        everyone = sorted(known)
        shown = ", ".join(everyone[:SHOWN_RUNS])
        more = f" and {len(everyone) - SHOWN_RUNS} more" if len(everyone) > SHOWN_RUNS else ""
        raise AahError(f"no run named {unknown[0]!r}: pass one of {shown}{more}")
    return [known[name] for name in sorted(wanted)]


def build_report(
    store: SessionStore,
    runs: Sequence[str] | None = None,
    data_dir: Path | None = None,
    *,
    search_roots: Sequence[Path] | None = None,
    progress: ReportProgress | None = None,
) -> Report:
    """Gather the report over ``runs`` (every run when None).

    Args:
        store: The session store.
        runs: Run names to report on; None or empty: every run.
        data_dir: The benchmark data (for IAC); None: look for it as
            ``aah.data.locate`` does, and note its absence rather than fail
            (unless ``AAH_DATA_DIR`` names a folder without it).
        search_roots: Where to look for ``../shared/datasets`` (see
            ``find_data_dir``); the default places when None.
        progress: Told the name of each step as it starts.

    Raises:
        AahError: No runs, an unknown run, or a named data folder without data.
    """
    step = progress or (lambda _name: None)
    # External agents belong to no run: a report over the whole store shows them.
    external = [] if runs else load_external_agents(store)
    chosen = select_runs(store, runs, none_is_fine=bool(external))
    names = [run.name for run in chosen]
    step("metrics")
    outcomes = load_outcomes(store, names)
    cells = compute_metrics(outcomes)
    step("behaviour and tool calls")
    task_of = task_ids(store, names)
    steps = load_steps(store, names)
    imported = {run.name for run in chosen if run.manifest.get("imported")}
    notes: list[str] = []
    removed: dict[str, list[str]] = {}
    needed = _needed_endpoints(chosen, outcomes, task_of, data_dir, search_roots, notes, removed)
    by_run = group_by_run(outcomes)
    behavior = [run_behavior(name, by_run.get(name, []), steps) for name in names]
    patterns = [
        # An import's question records are no calls the model made: nothing to score.
        run_error_patterns(name, [], steps, None)
        if name in imported
        else run_error_patterns(name, by_run.get(name, []), steps, needed)
        for name in names
    ]
    step("agreement")
    agreement = load_agreement(store, chosen, outcomes, task_of, everything=not runs)
    team = team_figures(store, None if not runs else names)
    notes = _notes(chosen, cells, by_run, imported) + notes
    examples = _examples(names, by_run, task_of)
    benchmarks: dict[str, list[Any]] = {}
    for benchmark, part in report_parts():
        step(part.step)
        part_scores: list[Any] = []
        for run in chosen:
            if run.manifest.get("benchmark") == benchmark.name:
                scored, said = part.scores(store, run, bool(by_run.get(run.name)))
                part_scores += scored
                notes += said
        benchmarks[part.key] = part_scores
    repeats = cells_with_repeats(outcomes)
    for run_name in dict.fromkeys(scores.run for scores in repeats):
        notes.append(
            f"run {run_name} repeats its tasks (epochs): its PR and the other paper figures count "
            "every epoch's session as a task, so their Wilson intervals are too narrow; pass@k "
            "and pass^k average over tasks, with bootstrap intervals over tasks"
        )
    step("tool discovery")
    searched = [run for run in chosen if discovering(run)]
    found = load_discoveries(store, [run.name for run in searched]) if searched else {}
    discovery = [
        run_discovery(run, by_run.get(run.name, []), found, needed, removed) for run in searched
    ]
    step("approvals")
    gated = load_approval_calls(store, names)
    step("questions from MCP servers")
    elicited = load_elicitation_cells(store, names)
    step("asking")
    asking, asking_notes = load_asking(store, chosen)
    notes += asking_notes
    return Report(
        chosen,
        cells,
        behavior,
        patterns,
        agreement,
        examples,
        notes,
        benchmarks,
        repeats,
        discovery=discovery,
        discovery_cost=discovery_costs(chosen, cells),
        team=team,
        approval_cells=approval_metrics(gated, outcomes),
        approval_calls=gated,
        elicitation_cells=elicited,
        external=external,
        asking=asking,
    )


# -- IAC's needed endpoints -----------------------------------------------------


def _needed_endpoints(
    runs: Sequence[RunRecord],
    outcomes: Sequence[TaskOutcome],
    task_of: Mapping[str, str],
    data_dir: Path | None,
    search_roots: Sequence[Path] | None,
    notes: list[str],
    unavailable: dict[str, list[str]] | None = None,
) -> dict[str, list[str]] | None:
    """Each session's needed endpoints by session id; None (with a note) without data.

    ``unavailable``, when given, is filled with each session's endpoints that
    its setting made unavailable (a subset of the needed ones).
    """
    # Imported here: the dataset loaders are needed only for runs that made tool calls.
    from aah.benchmark.failtalms import load_tasks
    from aah.data import find_data_dir

    # IAC is a Fail-TaLMs figure: only its tasks name the endpoints they need.
    own = {
        run.name
        for run in runs
        if not run.manifest.get("imported")
        # Only Fail-TaLMs runs name no benchmark: every other benchmark's run names its own.
        and run.manifest.get("benchmark") is None
    }
    mine = [o for o in outcomes if o.run in own and o.session_id in task_of]
    if not mine:
        return None
    try:
        found = find_data_dir(data_dir, need_benchmark=True, search_roots=search_roots)
    except AahError:
        if data_dir is not None or get_settings().data_dir is not None:
            raise  # a folder the user named (flag or AAH_DATA_DIR) must hold the data
        notes.append(
            "IAC (needed endpoint never called) not scored: no benchmark data found; "
            "run `aah data fetch` or pass --data DIR"
        )
        return None
    present = {o.setting for o in mine}
    settings = [s for s in SETTINGS if s in present]
    tasks = load_tasks(found, settings)
    endpoints = {task.id: task.needed for task in tasks}
    taken = {task.id: task.unavailable for task in tasks if task.unavailable}
    # A repeat (epoch 2 and on) needs what its task needs.
    needed = {
        o.session_id: endpoints[base_task_id(task_of[o.session_id])]
        for o in mine
        if base_task_id(task_of[o.session_id]) in endpoints
    }
    if unavailable is not None:
        for session_id in needed:
            gone = taken.get(base_task_id(task_of[session_id]))
            if gone:
                unavailable[session_id] = list(gone)
    if not needed:
        notes.append(f"IAC not scored: no session's task id is a benchmark task in {found}")
    return needed


# -- notes and examples ---------------------------------------------------------


def _notes(
    runs: Sequence[RunRecord],
    cells: Sequence[CellMetrics],
    by_run: Mapping[str, Sequence[TaskOutcome]],
    imported: set[str],
) -> list[str]:
    notes: list[str] = []
    for run in runs:
        ungraded = sum(c.ungraded for c in cells if c.run == run.name)
        unfinished = sum(c.unfinished for c in cells if c.run == run.name)
        if not by_run.get(run.name):
            notes.append(f"run {run.name} has no sessions yet")
        if ungraded:
            notes.append(
                f"run {run.name}: {_sessions(ungraded, 'finished session')} no grade and "
                f"count as not passed: run `aah grade --run {run.name}`"
            )
        if unfinished:
            notes.append(
                f"run {run.name}: {_sessions(unfinished, 'session')} still running or "
                "waiting, so its figures may change"
            )
        for cell in cells:
            if cell.run == run.name:
                notes += _cell_notes(cell, by_run.get(run.name, []))
        if run.name in imported:
            notes += import_notes(run.name, run.manifest)
    if imported:
        notes.append(
            "imported published outputs hold no agent turns or tool calls, so behaviour and "
            f"error patterns have no data for {', '.join(sorted(imported))}"
        )
    return notes


# Distinct error messages a note lists before it says "and N more".
LISTED_ERRORS = 3
ERROR_CHARS = 120


def _cell_notes(cell: CellMetrics, outcomes: Sequence[TaskOutcome]) -> list[str]:
    """A note for each kind of trouble in one cell (errors grouped by message)."""
    where = f"run {cell.run}, {cell.setting or '(no setting)'}"
    notes: list[str] = []
    if cell.errors:
        mine = [o for o in outcomes if o.setting == cell.setting and o.status == "error"]
        # One line each: an error text is a server's or a tool's, whatever it holds.
        groups = Counter(quote(o.error or "no error recorded", ERROR_CHARS, 1) for o in mine)
        listed = "; ".join(
            f"{count}× {message}" for message, count in groups.most_common(LISTED_ERRORS)
        )
        more = len(groups) - LISTED_ERRORS
        listed += f"; and {more} other error(s)" if more > 0 else ""
        notes.append(
            f"{where}: {cell.errors} of {cell.n} sessions ended in error and count as not "
            f"passed ({listed}): fix the cause, then run the same `aah bench run` again "
            "(it retries sessions that ended in error)"
        )
    if cell.flagged:
        ties = cell.flagged - cell.no_quorum
        why = ", ".join(
            part
            for part in (
                f"{ties} tie(s)" if ties else "",
                f"{cell.no_quorum} short of a quorum of valid votes" if cell.no_quorum else "",
            )
            if part
        )
        notes.append(
            f"{where}: {cell.flagged} of {cell.n} verdicts are flagged ({why}) and count as "
            "Fail: run `aah grade` again with more --votes, or a grader that answers Pass or "
            "Fail, to settle them"
        )
    if cell.step_limit or cell.cut_off or cell.terminated:
        why = ", ".join(
            part
            for part in (
                f"{cell.step_limit} at the step limit" if cell.step_limit else "",
                f"{cell.cut_off} with the reply cut by its length limit" if cell.cut_off else "",
                f"{cell.terminated} terminated by a person" if cell.terminated else "",
            )
            if part
        )
        stopped = cell.step_limit + cell.cut_off + cell.terminated
        notes.append(
            f"{where}: {stopped} of {cell.n} sessions stopped without a "
            f"final answer ({why}): they count as Fail and were not sent to the grader"
        )
    if cell.questions_capped:
        notes.append(
            f"{where}: {cell.questions_capped} question(s) were not asked, past the cap on "
            "questions per reply or session (AAH_MAX_QUESTIONS_PER_REPLY, "
            "AAH_MAX_QUESTIONS_PER_SESSION); the model was told why"
        )
    if cell.cancelled:
        notes.append(
            f"{where}: {cell.cancelled} of {cell.n} sessions were cancelled or expired "
            "(`aah sessions cancel`/`expire`) before they ended and count as not passed"
        )
    if cell.awareness_none:
        notes.append(
            f"{where}: {cell.awareness_none} of {cell.n} awareness replies were never parsed "
            "(recorded as none): they count in no awareness figure's numerator"
        )
    if cell.ungraded or cell.unfinished:
        judged = cell.pass_rate_graded.n if cell.pass_rate_graded else 0
        notes.append(
            f"{where}: PR not shown ({cell.ungraded} ungraded, {cell.unfinished} unfinished of "
            f"{cell.n}); PR graded counts the {judged} sessions with a verdict"
        )
    return notes


def _sessions(count: int, noun: str) -> str:
    # "1 session has", "3 sessions have"
    return f"{count} {noun} has" if count == 1 else f"{count} {noun}s have"


def _examples(
    runs: Sequence[str], by_run: Mapping[str, Sequence[TaskOutcome]], task_of: Mapping[str, str]
) -> list[Example]:
    examples: list[Example] = []
    for run in runs:
        failed = [
            o
            for o in by_run.get(run, [])
            if o.status == "error" or (o.status == "finished" and o.passed is False)
        ]
        examples += [
            Example(
                run=run,
                session_id=o.session_id,
                task_id=task_of.get(o.session_id),
                setting=o.setting,
                status=o.status,
                awareness=o.awareness,
                query=quote(o.query, EXAMPLE_QUERY_CHARS),
                final_answer=quote(o.final_answer, EXAMPLE_ANSWER_CHARS),
            )
            for o in failed[:EXAMPLES_PER_RUN]
        ]
    return examples


# -- JSON -----------------------------------------------------------------------


def report_to_json(report: Report) -> dict[str, Any]:
    """The report as the JSON object described in the module docstring."""
    return {
        "runs": [
            {"name": run.name, "created": run.created.isoformat(), "manifest": run.manifest}
            for run in report.runs
        ],
        "cells": [cell_to_json(cell) for cell in report.cells],
        "behavior": [_behavior_json(behavior) for behavior in report.behavior],
        "error_patterns": [_patterns_json(patterns) for patterns in report.error_patterns],
        "agreement": {**_agreement_json(report.agreement), **team_to_json(report.team)},
        "examples": [asdict(example) for example in report.examples],
        "notes": list(report.notes),
        **_benchmark_json(report),
        "repeats": [repeat_to_json(scores) for scores in report.repeats],
        **(
            {
                "discovery": [discovery_to_json(item) for item in report.discovery],
                "discovery_cost": [cost_to_json(cost) for cost in report.discovery_cost],
            }
            if report.discovery
            else {}
        ),
        # Only reports over runs with approvals have this key.
        **(
            {"approvals": [approval_cell_to_json(cell) for cell in report.approval_cells]}
            if report.approval_cells
            else {}
        ),
        **(
            {"external_agents": [external_to_json(agent) for agent in report.external]}
            if report.external
            else {}
        ),
        # Only reports over runs of benchmarks with blockers have this key.
        **({"asking": asking_json(report)} if report.asking else {}),
        "paper_comparison": None
        if report.paper is None
        else {
            "source": report.paper.source,
            "url": report.paper.url,
            "difference_unit": DIFFERENCE_UNIT,
            "rows": [comparison_to_json(row) for row in report.paper.rows],
        },
    }


def render_json(report: Report) -> str:
    """The report's JSON text: keys sorted, two-space indent, UTF-8 kept."""
    return json.dumps(report_to_json(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _behavior_json(behavior: RunBehavior) -> dict[str, Any]:
    matrix = behavior.matrix
    return {
        "run": behavior.run,
        "sessions": behavior.sessions,
        "turns": behavior.turns,
        "classes": {c: proportion_to_json(behavior.classes[c]) for c in BEHAVIOR_CLASSES},
        "hallucination": {
            name: proportion_to_json(getattr(behavior.rates, name))
            for name in behavior.rates._fields
        },
        "accuracy": proportion_to_json(matrix.accuracy),
        "macro_f1": matrix.macro_f1,
        "scores": {c: matrix.scores(c)._asdict() for c in BEHAVIOR_CLASSES},
        "confusion": {
            "labels": list(BEHAVIOR_CLASSES),
            "counts": [list(row) for row in matrix.counts],
        },
    }


def _patterns_json(patterns: ErrorPatternReport) -> dict[str, Any]:
    return {
        "run": patterns.run,
        "calls": patterns.calls,
        "tasks": patterns.tasks,
        "free": {name: proportion_to_json(value) for name, value in patterns.free.items()},
        "hits": dict(patterns.hits),
    }


def _pair_json(pair: PairAgreement) -> dict[str, Any]:
    return {"agreement": proportion_to_json(pair.agreement), "kappa": pair.kappa}


def _agreement_json(agreement: Agreement) -> dict[str, Any]:
    grader, people = agreement.grader_human, agreement.annotators
    return {
        "grader_human": {**_pair_json(grader.result), "paper_agreement": grader.paper_agreement},
        "annotators": {
            "requests": people.requests,
            "rating": proportion_to_json(people.rating),
            "declined": proportion_to_json(people.declined),
            "pairs": [
                {
                    "annotators": [pair.first, pair.second],
                    "rating": _pair_json(pair.rating),
                    "declined": _pair_json(pair.declined),
                }
                for pair in people.pairs
            ],
        },
        "human_vs_simulated": [
            {
                "human_run": c.human_run,
                "simulated_run": c.simulated_run,
                "simulated_kind": c.simulated_kind,
                "tasks": c.tasks,
                "pass_rate": _side_by_side(*c.pass_rate),
                "interaction": _side_by_side(*c.interaction),
            }
            for c in agreement.human_vs_simulated
        ],
    }


def _side_by_side(people: Any, stand_in: Any) -> dict[str, Any]:
    return {"human": proportion_to_json(people), "simulated": proportion_to_json(stand_in)}


def _benchmark_json(report: Report) -> dict[str, Any]:
    """Each benchmark's part under its key (a part that is not ``always`` only with scores)."""
    out: dict[str, Any] = {}
    for _benchmark, part in report_parts():
        scores = report.benchmarks.get(part.key, [])
        if scores or part.always:
            out[part.key] = [part.to_json(one) for one in scores]
    return out
