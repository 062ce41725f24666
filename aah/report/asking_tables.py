"""The report's Asking table: how well an agent asks, on every benchmark that has blockers.

Each run whose benchmark says what its tasks withheld (``Benchmark.blockers``)
is read by ``aah.scoring.asking`` per setting and category; the table sets
the runs without Aah (plain) and with it side by side, one row per figure
of a cell. A figure that cannot be computed is said once, in one line, with
why (no question asked, no blocker in the cell...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aah.scoring import (
    NO_DATA,
    AskingFigures,
    BootF1,
    Proportion,
    ReportTable,
    Spread,
    cells,
    figures_to_json,
    format_rate,
    rule_reading,
    run_asking_tasks,
)

if TYPE_CHECKING:
    from aah.report.build import Report
    from aah.store import RunRecord, SessionStore

TITLE = "Asking: how well the agent asks (science.md §8)"
# (label, JSON key of a figure that may not be computed, how to show it)
_FIGURES: tuple[tuple[str, str], ...] = (
    ("Ask-F1", "ask_f1"),
    ("question precision", "precision"),
    ("blocker recall", "recall"),
    ("asked before acting", "before_acting"),
    ("first-question position", "first_position"),
    ("questions per task", "questions_per_task"),
    ("person-seconds per task", "person_seconds_per_task"),
    ("fallback / I don't know", "fallback_share"),
    ("blockers resolved per question", "resolved_per_question"),
)


def load_asking(
    store: SessionStore, runs: Sequence[RunRecord]
) -> tuple[list[AskingFigures], list[str]]:
    """The asking figures of each run whose benchmark has blockers, and a line per gap.

    A run whose benchmark is unknown or has no blockers is left out; a figure
    of a cell that cannot be computed gets one note saying why. Where the
    rules cannot say, the grader's stored reading (``aah grade --asking``) is
    used; without one, the question does not address the blocker.
    """
    from aah.benchmark import benchmark_names, get_benchmark

    found: list[AskingFigures] = []
    notes: list[str] = []
    for run in runs:
        name = run.manifest.get("benchmark")
        if not isinstance(name, str) or name not in benchmark_names():
            continue
        blockers = get_benchmark(name).blockers(store, run)
        if blockers is None:
            continue
        grader: dict[str, dict[tuple[int, str], bool | None]] = {}
        for reading in store.ask_readings.of_sessions(list(blockers)):
            if reading.grader_model is not None:
                grader.setdefault(reading.session_id, {})[
                    (reading.question_seq, reading.blocker)
                ] = reading.grader
        tasks = run_asking_tasks(store, run.name, blockers, grader)
        unread = sum(
            1
            for t in tasks
            for q in t.questions
            for b in t.blockers
            if not rule_reading(q.text, b) and (q.seq, b.key) not in grader.get(t.session_id, {})
        )
        if unread:
            notes.append(
                f"run {run.name}: {unread} question-blocker pair(s) the rules cannot read count "
                f"as not addressed until the grader reads them: run `aah grade --run {run.name} "
                "--asking`"
            )
        for figures in cells(tasks):
            found.append(replace(figures, benchmark=name))
            for key, why in figures.why.items():
                label = next(label for label, k in _FIGURES if k == key)
                notes.append(f"run {run.name} {_cell_name(figures)}: no {label}: {why}")
    return found, notes


def _cell_name(figures: AskingFigures) -> str:
    parts = [p for p in (figures.setting, figures.category) if p and p != figures.benchmark]
    return " · ".join(parts) or "all tasks"


def _number(value: float | None, digits: int = 2) -> str:
    return NO_DATA if value is None else f"{value:.{digits}f}"


def _f1(value: BootF1) -> str:
    if value.value is None:
        return NO_DATA
    if value.low is None or value.high is None:
        return f"{100 * value.value:.1f}"
    return f"{100 * value.value:.1f} [{100 * value.low:.1f}–{100 * value.high:.1f}]"


def _spread(value: Spread) -> str:
    if value.median is None or value.low is None or value.high is None:
        return NO_DATA
    return f"{value.median:.2f} [{value.low:.2f}–{value.high:.2f}]"


def figure_text(figures: AskingFigures, key: str) -> str:
    """One figure of a cell as the table shows it."""
    value: Any = {
        "ask_f1": figures.ask_f1,
        "precision": figures.precision,
        "recall": figures.recall,
        "before_acting": figures.before_acting,
        "first_position": figures.first_position,
        "questions_per_task": figures.questions_per_task,
        "person_seconds_per_task": figures.person_seconds_per_task,
        "fallback_share": figures.fallback_share,
        "resolved_per_question": figures.resolved_per_question,
    }[key]
    if isinstance(value, BootF1):
        return _f1(value)
    if isinstance(value, Proportion):
        return format_rate(value)
    if isinstance(value, Spread):
        return _spread(value)
    return _number(value, 1 if key == "person_seconds_per_task" else 2)


def _side(items: Sequence[AskingFigures], key: str) -> str:
    if not items:
        return "—"
    if len(items) == 1:
        return figure_text(items[0], key)
    return "; ".join(f"{f.run}: {figure_text(f, key)}" for f in items)


def asking_tables(report: Report) -> list[ReportTable]:
    """The Asking table (none when no run has blockers)."""
    if not report.asking:
        return []
    groups: dict[tuple[str, str], dict[bool, list[AskingFigures]]] = {}
    for figures in report.asking:
        key = (figures.benchmark, _cell_name(figures))
        groups.setdefault(key, {True: [], False: []})[figures.aah].append(figures)
    rows = [
        [benchmark, cell, label, _side(sides[False], key), _side(sides[True], key)]
        for (benchmark, cell), sides in groups.items()
        for label, key in _FIGURES
    ]
    return [
        ReportTable(
            TITLE,
            ["benchmark", "cell", "figure", "plain", "Aah"],
            rows,
            "precision, recall, asked before acting, fallback: percent [95% Wilson]; Ask-F1 "
            "(HiL-Bench): percent [95% bootstrap over tasks, 1,000 resamples, seeded]; "
            "first-question position (Ask Early, Ask Late, Ask Right): median [quartiles], "
            "0 = at once, 1 = at the end",
            keys=3,
        )
    ]


def asking_json(report: Report) -> list[dict[str, Any]]:
    """Each cell's figures as JSON."""
    return [figures_to_json(figures) for figures in report.asking]


def asking_csv_rows(report: Report) -> list[list[Any]]:
    """A header row, then one row per cell and figure: benchmark, run, cell, Aah, figure, value."""
    rows: list[list[Any]] = [["benchmark", "run", "cell", "aah", "figure", "value", "low", "high"]]
    for figures in report.asking:
        data = figures_to_json(figures)
        for name in (
            "ask_f1",
            "question_precision",
            "blocker_recall",
            "asked_before_acting",
            "fallback_share",
        ):
            value = data[name]
            rows.append(
                [figures.benchmark, figures.run, _cell_name(figures), figures.aah, name,
                 value["value"], value["low"], value["high"]]
            )  # fmt: skip
        position = data["first_question_position"]
        rows.append(
            [figures.benchmark, figures.run, _cell_name(figures), figures.aah,
             "first_question_position", position["median"], position["q1"], position["q3"]]
        )  # fmt: skip
        for name in (
            "questions_per_task",
            "person_seconds_per_task",
            "blockers_resolved_per_question",
        ):
            rows.append(
                [figures.benchmark, figures.run, _cell_name(figures), figures.aah, name,
                 data[name], None, None]
            )  # fmt: skip
    return rows
