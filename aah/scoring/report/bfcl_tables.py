"""The report's BFCL section: AST per category, refusal read two ways, MBFCL beside.

One row per run and language. Rates read as in the other tables
(``format_rate``: percent and 95% Wilson interval). Multilingual-BFCL's
published baseline is shown where the run's model and the language match one
of its rows; its figures are rounded percents from the paper, not aah's.
"""

from __future__ import annotations

from typing import Any

from aah.benchmark.bfcl import AST_CATEGORIES, FIGURES, MBFCL_SOURCE, BfclScores
from aah.events import excerpt
from aah.scoring.report.build import Report
from aah.scoring.report.tables import NO_DATA, RATE_NOTE, ReportTable, format_rate

SHOWN_DISAGREEMENTS = 20
DISAGREEMENT_CHARS = 400
_SUMMARY = (
    ("ast", "AST"),
    ("irrelevance_standard", "Irr standard"),
    ("irrelevance_intent", "Irr intent"),
    ("irrelevance_gap", "Irr gap"),
    ("live_relevance", "live relevance"),
    ("live_hallucination_standard", "H-S"),
    ("live_hallucination_intent", "H-I"),
    ("live_hallucination_gap", "H gap"),
)
_PUBLISHED = (
    ("ast", "AST"),
    ("irrelevance_standard", "Irr"),
    ("live_hallucination_intent", "H-I"),
    ("live_hallucination_standard", "H-S"),
)


def bfcl_tables(report: Report) -> list[ReportTable]:
    """The BFCL tables; none when the report covers no BFCL run."""
    if not report.bfcl:
        return []
    tables = [_summary_table(report.bfcl), _category_table(report.bfcl)]
    published = [s for s in report.bfcl if s.published is not None]
    if published:
        tables.append(_published_table(published))
    tables.append(_disagreement_table(report.bfcl))
    return tables


def _rate(scores: BfclScores, name: str) -> str:
    value = scores.figures.get(name)
    return format_rate(value) if value is not None else NO_DATA


def _summary_table(runs: list[BfclScores]) -> ReportTable:
    rows = [
        [s.run, s.model, s.language, str(s.scored), *(_rate(s, name) for name, _ in _SUMMARY)]
        for s in runs
    ]
    columns = ["run", "model", "lang", "N", *(label for _, label in _SUMMARY)]
    caption = (
        f"{RATE_NOTE}. AST: calls matching the possible answers, over every AST item. "
        "Irr: no call on the irrelevance items, read the standard way (no parsed call) or "
        "by intent (no parsed call and no attempt: a malformed call, tags, name + arguments, "
        "JSON-like or func(arg=...) calls); the gap is the share of items where they differ. "
        "H-S / H-I: live hallucination over live_irrelevance + live_relevance, read each way "
        "(a relevance item needs a well-formed call either way)."
    )
    unscored = sum(s.unscored for s in runs)
    if unscored:
        caption += f" {unscored} session(s) ended in error and are not scored."
    return ReportTable("BFCL", columns, rows, caption)


def _category_table(runs: list[BfclScores]) -> ReportTable:
    rows = [[s.run, s.language, *(_rate(s, f"ast_{c}") for c in AST_CATEGORIES)] for s in runs]
    columns = ["run", "lang", *AST_CATEGORIES]
    caption = f"AST accuracy per category, {RATE_NOTE}; {NO_DATA} where the run has no items."
    return ReportTable("BFCL AST per category", columns, rows, caption)


def _published_table(runs: list[BfclScores]) -> ReportTable:
    rows = []
    for s in runs:
        assert s.published is not None
        for name, label in _PUBLISHED:
            rows.append([s.run, s.language, label, _rate(s, name), f"{s.published[name]:.0f}"])
    columns = ["run", "lang", "figure", "this run", "MBFCL published"]
    caption = (
        f"{MBFCL_SOURCE}, for the same model and language (rounded percent; temperature 0, "
        "2,048 new tokens). Irr there is the standard reading."
    )
    return ReportTable("BFCL beside Multilingual-BFCL", columns, rows, caption)


def _disagreement_table(runs: list[BfclScores]) -> ReportTable:
    found = [d for s in runs for d in s.disagreements]
    rows = [
        [d.run, d.id, d.category, d.language, excerpt(d.raw, DISAGREEMENT_CHARS)]
        for d in found[:SHOWN_DISAGREEMENTS]
    ]
    caption = (
        "Replies the standard reading counts as no call (a refusal) and the intent reading "
        "as a call attempt: the items that make the gap. Raw text cut short"
        + (
            f"; the first {SHOWN_DISAGREEMENTS} of {len(found)} (all are in the JSON)."
            if len(found) > SHOWN_DISAGREEMENTS
            else "."
        )
    )
    return ReportTable(
        "BFCL: standard and intent readings disagree",
        ["run", "item", "category", "lang", "raw reply"],
        rows or [[NO_DATA, "", "", "", ""]],
        caption,
    )


def bfcl_csv_rows(report: Report) -> list[list[Any]]:
    """The BFCL figures as CSV rows: a header, then one row per run, language and figure.

    Values are left as they are; the CSV writer makes them text.
    """
    rows: list[list[Any]] = [["run", "model", "language", "figure", "value", "low", "high"]]
    rows[0] += ["k", "n"]
    for s in report.bfcl:
        for name in FIGURES:
            value = s.figures.get(name)
            if value is None:
                continue
            rows.append([s.run, s.model, s.language, name, *value[2:], value.k, value.n])
    return rows
