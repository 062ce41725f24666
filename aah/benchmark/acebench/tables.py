"""ACEBench Special's tables in the report: upstream's reading, then aah's classes."""

from __future__ import annotations

from collections.abc import Sequence

from aah.benchmark.acebench.scoring import AceScores
from aah.benchmark.acebench.tasks import CATEGORIES, LANGUAGES
from aah.scoring import NOT_REPORTED, ReportTable, format_number, format_rate
from aah.scoring.behavior import BEHAVIOR_CLASSES, CLASS_NAMES

SOURCE = (
    "ACEBench (Chen et al. 2025), Special data: compare the acebench reading with the "
    "paper's Special column (same prompt, same string rules)"
)


def _cell_text(scores: AceScores, lang: str, category: str) -> str:
    cell = next((c for c in scores.cells if c.lang == lang and c.category == category), None)
    return NOT_REPORTED if cell is None else format_rate(cell.accuracy)


def _summary_text(value: float | None) -> str:
    return NOT_REPORTED if value is None else format_number(100 * value)


def acebench_tables(scores: Sequence[AceScores]) -> list[ReportTable]:
    """The accuracy table (both readings) and the aah reading's class shares."""
    if not scores:
        return []
    rows = []
    for score in scores:
        for lang in LANGUAGES:
            if not any(c.lang == lang for c in score.cells):
                continue
            errors = {
                kind: sum(c.error_types.get(kind, 0) for c in score.cells if c.lang == lang)
                for kind in ("error_detection", "error_correction")
            }
            rows.append(
                [
                    score.run,
                    score.reading,
                    lang,
                    *(_cell_text(score, lang, category) for category in CATEGORIES),
                    _summary_text(score.summary(lang)),
                    (
                        f"{errors['error_detection']} / {errors['error_correction']}"
                        if score.reading == "acebench"
                        else NOT_REPORTED
                    ),
                ]
            )
    tables = [
        ReportTable(
            "ACEBench Special: accuracy per category",
            [
                "run",
                "reading",
                "lang",
                *CATEGORIES,
                "summary",
                "detection / correction errors",
            ],
            rows,
            caption=(
                "% right [95% Wilson]; summary: the unweighted mean of the three categories "
                f"(upstream's). {SOURCE}; the aah reading reads behaviour, not fixed sentences."
            ),
            keys=3,
        )
    ]
    aah_rows = []
    for score in scores:
        if score.reading != "aah":
            continue
        for cell in score.cells:
            shares = [
                f"{100 * cell.classes.get(c, 0) / cell.accuracy.n:.1f}"
                if cell.accuracy.n
                else NOT_REPORTED
                for c in BEHAVIOR_CLASSES
            ]
            blockers = f"{cell.addressed} of {cell.blockers}" if cell.blockers else NOT_REPORTED
            aah_rows.append([score.run, cell.lang, cell.category, *shares, blockers])
    if aah_rows:
        tables.append(
            ReportTable(
                "ACEBench Special (aah reading): behaviour classes",
                [
                    "run",
                    "lang",
                    "category",
                    *(f"% {CLASS_NAMES[c]}" for c in BEHAVIOR_CLASSES),
                    "blockers named",
                ],
                aah_rows,
                caption=(
                    "first turns by class (rules, science.md §3); incomplete needs a question "
                    "naming every missing parameter, error_param a question or refusal naming "
                    "the bad value, irrelevant a refusal"
                ),
                keys=3,
            )
        )
    return tables
