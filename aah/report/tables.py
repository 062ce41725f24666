"""The report's tables as plain text cells, ready for any output format.

Every table is built once, format-neutral (``ReportTable``: a title, column
names, rows of strings, a caption); the terminal, Markdown and HTML outputs
(``report_text``, ``report_html``) only differ in how they draw and escape it.
A rate reads ``47.4 [37.6–57.3]``: percent, then its 95% Wilson interval;
``of n`` follows where the rate counts other tasks than the row's N; ``—``
marks a figure the setting does not report; ``no data`` one it reports but
has nothing to count.

Paper tables pair the runs that share a model (and setup) and differ in Aah:
each setting's row for the run without Aah comes right above the one with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from typing import Any, NamedTuple

from aah.benchmark.failtalms import Comparison
from aah.report.build import PAPER_METRIC_LABELS, Report
from aah.report.discovery import GIVEN
from aah.report.team_tables import team_tables
from aah.scoring import (
    ERROR_PATTERNS,
    NO_DATA,
    NOT_REPORTED,
    RATE_NOTE,
    SETTINGS,
    CellMetrics,
    Estimate,
    ReportTable,
    format_estimate,
    format_number,
    format_rate,
)
from aah.scoring.behavior import BEHAVIOR_CLASSES, CLASS_NAMES, ConfusionMatrix, confusion
from aah.store import RunRecord

# Manifest fields that, with the model, make two runs the same experiment but for Aah.
PAIRING_FIELDS = (
    "http",
    "unavailable",
    "step_limit",
    "registry_hash",
    "imported",
    "tools",
    "discover",
)
# What a pairing field means when an older run's manifest lacks it.
_PAIRING_DEFAULTS: dict[str, Any] = {"tools": "given", "discover": False}
# Beside a cell's N when some of its sessions ended in error, hold a flagged or no
# verdict, or never gave a readable awareness answer: the notes say how many.
TROUBLE_MARK = "*"
TROUBLE_NOTE = (
    f"{TROUBLE_MARK} beside N: some sessions of the cell ended in error, stopped without a "
    "final answer (step limit, reply cut off), hold a flagged verdict (tie or no quorum of "
    "valid votes), gave no readable awareness answer, or are not graded or not finished; "
    "the notes count each. PR shows — while sessions are ungraded or "
    "unfinished; PR graded is the pass rate over the sessions that have a verdict."
)
AAH_PHRASES = {"without": "without Aah", "with": "with Aah", "unknown": "Aah unknown"}


class RunPair(NamedTuple):
    """The runs of one model without and with Aah (either may be missing).

    A run whose sessions do not say one Aah setting stands alone as ``unknown_aah``.
    """

    model: str | None
    without: str | None
    with_aah: str | None
    unknown_aah: str | None = None

    def labelled(self) -> list[tuple[str, str]]:
        """``(run, "without" | "with" | "unknown")`` for the runs present, in that order."""
        runs = ((self.without, "without"), (self.with_aah, "with"), (self.unknown_aah, "unknown"))
        return [(name, label) for name, label in runs if name is not None]


def run_label(run: RunRecord) -> str:
    """A run's name, with how its model was told of the tools when not natively.

    A run in ``prompt`` tool mode measured a model that read its tools in the
    system prompt: the report says so wherever it names the run.
    """
    mode = run.manifest.get("tool_mode")
    return f"{run.name} (tools in the prompt)" if mode == "prompt" else run.name


def pair_runs(runs: Sequence[RunRecord], cells: Sequence[CellMetrics]) -> list[RunPair]:
    """Pair runs of one model and setup that differ in Aah; others stand alone."""
    groups: dict[tuple[Any, ...], tuple[list[str], list[str]]] = {}
    alone: list[RunPair] = []
    for run in runs:
        model, aah = _shared(run, cells, "model"), _shared(run, cells, "aah")
        if aah is None:
            alone.append(RunPair(model, None, None, run.name))
            continue
        key = (
            model,
            *(repr(run.manifest.get(name, _PAIRING_DEFAULTS.get(name))) for name in PAIRING_FIELDS),
        )
        without, with_aah = groups.setdefault(key, ([], []))
        (with_aah if aah else without).append(run.name)
    pairs = [
        RunPair(key[0], without, with_aah)
        for key, (offs, ons) in groups.items()
        for without, with_aah in zip_longest(sorted(offs), sorted(ons))
    ]
    return sorted([*pairs, *alone], key=lambda pair: pair.labelled()[0][0])


def _shared(run: RunRecord, cells: Sequence[CellMetrics], name: str) -> Any:
    """The one value of ``name`` ("model" or "aah") that a run's manifest and cells agree on."""
    values = {getattr(cell, name) for cell in cells if cell.run == run.name}
    if name in run.manifest:
        values.add(run.manifest[name])
    return next(iter(values)) if len(values) == 1 else None


# -- the tables -----------------------------------------------------------------


def paper_tables(report: Report) -> list[ReportTable]:
    """One table per run pair: settings × PR, Aware, Unexp, Skip, Inter (science.md §2)."""
    by_key = {(cell.run, cell.setting): cell for cell in report.cells}
    tables = []
    for pair in pair_runs(report.runs, report.cells):
        present = pair.labelled()
        settings = _settings_of(report.cells, [name for name, _ in present])
        cells = [
            (by_key[name, setting], label)
            for setting in settings
            for name, label in present
            if (name, setting) in by_key
        ]
        # PR over the graded sessions only where PR itself cannot be shown.
        graded = any(cell.ungraded or cell.unfinished for cell, _ in cells)
        columns = ["setting", "Aah", "N", "PR", *(["PR graded"] if graded else [])]
        columns += ["Aware", "Unexp", "Skip", "Inter", "share of no or idk"]
        rows = [_paper_row(cell, label, graded) for cell, label in cells]
        title = "Paper metrics: " + " vs ".join(
            f"{name} ({AAH_PHRASES[label]})" for name, label in present
        )
        if pair.model:
            title += f", model {pair.model}"
        caption = (
            f"{RATE_NOTE}. Aware and Unexp follow each setting's formula (science.md §2); "
            "Inter counts tasks not skipped; share of no or idk is the plain reading, the same "
            "in every setting. No-tools reports PR only."
        )
        if any(cell.troubles for cell, _ in cells):
            caption += " " + TROUBLE_NOTE
        rows = rows or [[NO_DATA] * len(columns)]
        tables.append(ReportTable(title, columns, rows, caption, keys=2))
    return tables


def _settings_of(cells: Sequence[CellMetrics], runs: Sequence[str]) -> list[str | None]:
    found = {cell.setting for cell in cells if cell.run in runs}
    known = [setting for setting in SETTINGS if setting in found]
    return [*known, *sorted((s for s in found if s not in SETTINGS), key=lambda s: s or "")]


def _paper_row(cell: CellMetrics, aah: str, graded: bool) -> list[str]:
    only_pr = cell.setting == "notools"
    rates = [cell.awareness, cell.unexpected, cell.skip, cell.interaction]
    return [
        cell.setting or "(no setting)",
        aah,
        f"{cell.n}{TROUBLE_MARK}" if cell.troubles else str(cell.n),
        headline_pass_rate(cell),
        *([format_rate(cell.pass_rate_graded, cell.n)] if graded else []),
        *(format_rate(rate, cell.n) for rate in rates),
        NOT_REPORTED if only_pr else format_rate(cell.no_or_idk, cell.n),
    ]


def headline_pass_rate(cell: CellMetrics) -> str:
    """PR as the paper counts it, or ``—`` while some sessions have no verdict yet.

    An ungraded or unfinished session would count as a fail in #pass / N, so
    the figure would read lower than anything measured: it is not shown.
    """
    if cell.ungraded or cell.unfinished:
        return NOT_REPORTED
    return format_rate(cell.pass_rate, cell.n)


def failure_table(report: Report) -> ReportTable:
    """Per cell: sessions in error, flagged, stopped, awareness none, ungraded, unfinished..."""
    columns = [
        "run",
        "setting",
        "N",
        "error",
        "flagged",
        "no quorum",
        "step limit",
        "cut off",
        "terminated",
        "aware none",
        "ungraded",
        "unfinished",
        "cancelled",
    ]
    rows = [
        [
            cell.run or "",
            cell.setting or "(no setting)",
            str(cell.n),
            *(
                str(count)
                for count in (
                    cell.errors,
                    cell.flagged,
                    cell.no_quorum,
                    cell.step_limit,
                    cell.cut_off,
                    cell.terminated,
                    cell.awareness_none,
                    cell.ungraded,
                    cell.unfinished,
                    cell.cancelled,
                )
            ),
        ]
        for cell in report.cells
        if cell.troubles
    ]
    if not rows:
        rows = [["every cell", "", "", *["0"] * (len(columns) - 3)]] if report.cells else []
    caption = (
        "Cells with any such session. Sessions per cell: ended in error; latest verdict "
        "flagged (a tie or no quorum of valid votes, counted as Fail), and of those, short "
        "of a quorum; stopped without a final answer at the step limit, or with the reply "
        "cut by its length limit (Fail, not graded); awareness reply never parsed (none); "
        "finished but not graded; still running or waiting; cancelled."
    )
    rows = rows or [[NO_DATA] * len(columns)]
    return ReportTable("What failed underneath", columns, rows, caption, keys=2)


def repeat_tables(report: Report) -> list[ReportTable]:
    """pass@k, pass^k and agreement across epochs, for runs with repeats (else none)."""
    if not report.repeats:
        return []
    most = max(scores.epochs for scores in report.repeats)
    ks = sorted({1, 2, most} & set(range(1, most + 1)))
    columns = ["run", "setting", "tasks", "epochs"]
    columns += [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks]
    columns += ["all epochs agree", "pair agreement"]
    rows = [
        [
            scores.run or "",
            scores.setting or "(no setting)",
            str(scores.tasks),
            str(scores.epochs)
            if scores.least_trials == scores.epochs
            else f"{scores.least_trials}–{scores.epochs}",
            *(_estimate_at(scores.pass_at, k) for k in ks),
            *(_estimate_at(scores.pass_hat, k) for k in ks),
            format_rate(scores.unanimous, scores.tasks),
            format_number(scores.pairwise, 3),
        ]
        for scores in report.repeats
    ]
    caption = (
        "Mean over tasks, percent [95% percentile bootstrap over tasks]; a task with n judged "
        "trials and c passes gives pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k), "
        "averaged over tasks with n ≥ k. All epochs agree: tasks whose trials all pass or all "
        f"fail, {RATE_NOTE}; pair agreement: mean share of agreeing trial pairs per task."
    )
    return [ReportTable("Repeats: pass@k and pass^k", columns, rows, caption, keys=2)]


def _estimate_at(values: dict[int, Estimate], k: int) -> str:
    return format_estimate(values[k]) if k in values else NOT_REPORTED


def paper_comparison_table(report: Report) -> list[ReportTable]:
    """Computed vs published, one table per run, one row per figure (``--compare paper``).

    A table per run keeps every row's name (setting and metric) beside its
    figures, and the run, the paper's model and Aah in the title, so that even
    a terminal of 80 columns shows a whole row; rows whose published value
    lies outside the computed interval are flagged.
    """
    if report.paper is None:
        return []
    columns = ["setting", "metric", "computed", "published", "diff", "inside"]
    caption = (
        f"Computed: {RATE_NOTE}; published: {report.paper.source}; diff: computed minus "
        "published, in percentage points; inside: the published value lies inside the "
        "computed interval (NO: it lies outside)."
    )
    title = "Computed vs published (Fail-TaLMs paper)"
    by_run: dict[str | None, list[Comparison]] = {}
    for row in report.paper.rows:
        by_run.setdefault(row.run, []).append(row)
    if not by_run:
        return [ReportTable(title, columns, [[NO_DATA] + [""] * (len(columns) - 1)], caption)]
    tables = []
    for run, rows in by_run.items():
        first = rows[0]
        named = f"{title}: run {run or '(no run)'}, model {first.model}, "
        named += AAH_PHRASES["with" if first.aah else "without"]
        cells = [
            [
                row.setting,
                PAPER_METRIC_LABELS[row.metric],
                format_rate(row.computed),
                f"{100 * row.published:.1f}",
                NO_DATA if row.difference is None else f"{row.difference:+.1f}",
                NO_DATA if row.inside is None else ("yes" if row.inside else "NO"),
            ]
            for row in rows
        ]
        outside = tuple(index for index, row in enumerate(rows) if row.inside is False)
        tables.append(
            ReportTable(named, columns, cells, caption, keys=2, flagged=outside, flag="outside")
        )
    return tables


def extra_table(report: Report) -> ReportTable:
    """Beyond the paper: graceful failure, redundant questions, cost per task."""
    columns = ["run", "setting", "N", "graceful failure", "redundant questions", "steps"]
    columns += ["tool calls", "questions", "human s", "tokens", "latency ms", "ungraded"]
    rows = [
        [
            cell.run or "",
            cell.setting or "(no setting)",
            str(cell.n),
            format_rate(cell.graceful_failure, cell.n),
            format_rate(cell.redundant_questions),
            format_number(cell.mean_steps),
            format_number(cell.mean_tool_calls),
            format_number(cell.mean_questions, 2),
            format_number(cell.human_seconds_per_task),
            format_number(cell.tokens_per_task, 0),
            format_number(cell.latency_ms_per_task, 0),
            str(cell.ungraded),
        ]
        for cell in report.cells
    ]
    caption = (
        f"{RATE_NOTE}; means are per task. Graceful failure: not passed, and skipped, asked "
        "or said it cannot; redundant questions are over all questions asked."
    )
    return ReportTable("More per-cell figures", columns, rows, caption, keys=2)


def behavior_tables(report: Report) -> list[ReportTable]:
    """Class shares per run, then hallucination rates and gold-label scores."""
    class_rows = [
        [
            b.run,
            str(b.sessions),
            str(b.turns),
            *(format_rate(b.classes[c]) for c in BEHAVIOR_CLASSES),
        ]
        for b in report.behavior
    ]
    score_rows = [
        [
            b.run,
            format_rate(b.rates.tool),
            format_rate(b.rates.answer),
            format_rate(b.rates.parameter),
            format_rate(b.matrix.accuracy),
            str(b.matrix.total),
            format_number(b.matrix.macro_f1, 3),
        ]
        for b in report.behavior
    ]
    classes = [CLASS_NAMES[c] for c in BEHAVIOR_CLASSES]
    return [
        ReportTable(
            "Behaviour classes (share of agent turns)",
            ["run", "sessions acted", "turns", *classes],
            class_rows,
            f"{RATE_NOTE}; When2Call classes, by the rules of aah.scoring.behavior.classes.",
        ),
        ReportTable(
            "Hallucination and gold-label scores",
            ["run", "tool halluc.", "answer halluc.", "parameter halluc.", "accuracy"]
            + ["gold N", "macro F1"],
            score_rows,
            f"{RATE_NOTE}; gold labels exist for first turns of under-specified (follow-up "
            "question) and no-tools (direct answer) tasks.",
        ),
    ]


def pooled_matrix(report: Report) -> ConfusionMatrix:
    """The confusion matrices of every run, added up."""
    pairs = [
        (gold, predicted)
        for b in report.behavior
        for gold in BEHAVIOR_CLASSES
        for predicted in BEHAVIOR_CLASSES
        for _ in range(b.matrix.count(gold, predicted))
    ]
    return confusion(pairs)


def confusion_table(report: Report) -> ReportTable:
    """The pooled confusion matrix: rows gold, columns predicted."""
    matrix = pooled_matrix(report)
    rows = [
        [CLASS_NAMES[gold], *(str(matrix.count(gold, p)) for p in BEHAVIOR_CLASSES)]
        for gold in BEHAVIOR_CLASSES
    ]
    caption = "First turns of every run; rows are gold labels, columns predicted classes."
    if matrix.total == 0:
        caption += f" {NO_DATA}: no gold-labelled turns."
    columns = ["gold \\ predicted", *(CLASS_NAMES[c] for c in BEHAVIOR_CLASSES)]
    return ReportTable("Behaviour confusion matrix", columns, rows, caption)


def error_table(report: Report) -> ReportTable:
    """The share of calls (tasks, for IAC) free of each ToolScan pattern, per run."""
    rows = [
        [
            e.run or "",
            str(e.calls),
            *(format_rate(e.free[p]) for p in ERROR_PATTERNS if p != "IAC"),
            str(e.tasks),
            format_rate(e.free["IAC"]),
        ]
        for e in report.error_patterns
    ]
    columns = ["run", "calls", *(p for p in ERROR_PATTERNS if p != "IAC"), "tasks", "IAC"]
    caption = f"Share free of each pattern, {RATE_NOTE}; IAC is over tasks not skipped."
    return ReportTable("Tool-call error patterns (ToolScan)", columns, rows, caption)


def discovery_tables(report: Report) -> list[ReportTable]:
    """``find_tools`` searches and gold endpoints found per run; given-versus-found pass rates."""
    tables: list[ReportTable] = []
    if report.discovery:
        rows = [
            [
                d.run,
                d.tools,
                str(d.tasks),
                str(d.searches),
                format_number(d.searches_per_task, 2),
                format_rate(d.gold_found),
            ]
            for d in report.discovery
        ]
        columns = ["run", "tools", "tasks", "find_tools calls", "per task", "gold found"]
        caption = (
            "Runs whose agent could search the registry; tasks not skipped. Gold found: share of "
            f"tasks with gold endpoints whose every one was among some search's hits, {RATE_NOTE}."
        )
        tables.append(ReportTable("Tool discovery", columns, rows, caption))
    if report.discovery_cost:
        rows = [
            [
                c.setting or "",
                c.model or "",
                {True: "on", False: "off", None: "?"}[c.aah],
                format_rate(c.given),
                format_rate(c.found),
                NO_DATA if c.difference is None else f"{c.difference:+.1f}",
            ]
            for c in report.discovery_cost
        ]
        columns = ["setting", "model", "Aah", f"PR {GIVEN}", "PR found the tools", "difference"]
        caption = (
            "The same setting, model and setup with the task's endpoints handed to the agent "
            "and with only find_tools over the registry (--tools registry); difference in "
            "percentage points, found minus given."
        )
        tables.append(ReportTable("Cost of discovery", columns, rows, caption, keys=3))
    return tables


def agreement_tables(report: Report) -> list[ReportTable]:
    """Grader vs people, annotators among themselves, people vs a stand-in."""
    agreement = report.agreement
    grader = agreement.grader_human
    grader_rows = [
        [
            "LLM grader vs human labels (this report)",
            str(grader.result.agreement.n),
            format_rate(grader.result.agreement),
            format_number(grader.result.kappa, 3),
        ],
        [
            "human graders vs LLM grader (the Fail-TaLMs paper's figure)",
            NOT_REPORTED,
            f"{100 * grader.paper_agreement:.1f}",
            NOT_REPORTED,
        ],
    ]
    people = agreement.annotators
    people_rows = [
        [
            "all answer pairs",
            f"{people.requests} requests",
            format_rate(people.rating),
            NOT_REPORTED,
            format_rate(people.declined),
            NOT_REPORTED,
        ]
    ]
    for pair in people.pairs:
        people_rows.append(
            [
                f"{pair.first} & {pair.second}",
                str(pair.declined.agreement.n),
                format_rate(pair.rating.agreement),
                format_number(pair.rating.kappa, 3),
                format_rate(pair.declined.agreement),
                format_number(pair.declined.kappa, 3),
            ]
        )
    sims = [
        [
            c.human_run,
            f"{c.simulated_run} ({c.simulated_kind})",
            str(c.tasks),
            *(format_rate(p) for p in (*c.pass_rate, *c.interaction)),
        ]
        for c in agreement.human_vs_simulated
    ]
    sim_columns = ["people's run", "stand-in run", "shared tasks", "PR people", "PR stand-in"]
    sim_columns += ["Inter people", "Inter stand-in"]
    return [
        ReportTable(
            "Grader vs human labels",
            ["", "N", "agreement", "Cohen's kappa"],
            grader_rows,
            f"{RATE_NOTE}; sessions with both a human label and an LLM grade.",
        ),
        ReportTable(
            "Annotator agreement (requests answered by two or more people)",
            ["annotators", "items", "rating agreement", "rating kappa"]
            + ["declined agreement", "declined kappa"],
            people_rows,
            f"{RATE_NOTE}; rating is the 0/1 rating of the question, over pairs that both rated.",
        ),
        ReportTable(
            "People vs simulated human (same tasks, runs differing only in who answered)",
            sim_columns,
            sims or [[NO_DATA] * len(sim_columns)],
            RATE_NOTE,
            keys=2,
        ),
    ]


def example_table(report: Report) -> ReportTable:
    """The first few sessions per run that did not pass."""
    rows = [
        [
            e.run,
            e.task_id or e.session_id[:12],
            e.setting or "",
            e.status,
            e.awareness or "",
            e.query,
            e.final_answer,
        ]
        for e in report.examples
    ]
    columns = ["run", "task", "setting", "status", "awareness", "query", "final answer"]
    return ReportTable(
        "Sessions that did not pass (first few per run)",
        columns,
        rows or [[NO_DATA] + [""] * (len(columns) - 1)],
        "Graded fail or ended in error; texts cut short (3 lines, long words cut, control "
        "and invisible characters dropped).",
        keys=2,
    )


def benchmark_tables(report: Report) -> list[ReportTable]:
    """Each benchmark's own tables (``ReportPart.tables``), in registry order."""
    from aah.benchmark import report_parts

    return [
        table
        for _benchmark, part in report_parts()
        if report.benchmarks.get(part.key)
        for table in part.tables(report.benchmarks[part.key])
    ]


def report_tables(report: Report) -> list[ReportTable]:
    """Every table of the report, in reading order."""
    # Imported here: the When2Call tables build on this module's helpers.
    from aah.report.approval_tables import approval_tables
    from aah.report.asking_tables import asking_tables
    from aah.report.elicitation_tables import elicitation_tables
    from aah.report.external_tables import external_tables

    if not report.runs:
        return external_tables(report)  # a store with external agents' sessions only
    return [
        *paper_tables(report),
        *paper_comparison_table(report),
        failure_table(report),
        *repeat_tables(report),
        extra_table(report),
        *behavior_tables(report),
        confusion_table(report),
        error_table(report),
        *discovery_tables(report),
        *benchmark_tables(report),
        *asking_tables(report),
        *approval_tables(report),
        *elicitation_tables(report),
        *external_tables(report),
        *agreement_tables(report),
        *team_tables(report),
        example_table(report),
    ]
