"""When2Call's part of the report: scores per run and labeller, confusion, published figures.

Rates read as in the other tables (``format_rate``: percent and 95% Wilson
interval). The paper's figures come from its LLM-as-judge evaluation of the
same test split and are shown for reference only: a run's labels come from
aah's rules or from aah's judge prompt, not from the paper's judge.
"""

from __future__ import annotations

from collections.abc import Sequence

from aah.benchmark.when2call.scoring import PUBLISHED, When2CallScores
from aah.scoring import NO_DATA, RATE_NOTE, ReportTable, format_number, format_rate
from aah.scoring.behavior import BEHAVIOR_CLASSES, CLASS_NAMES, BehaviorClass

GOLD_CLASSES: tuple[BehaviorClass, ...] = ("tool_call", "request_for_info", "cannot_answer")
ASK_HUMAN_NOTE = (
    "With Aah on, a call to ask_human counts as a follow-up question (request_for_info); "
    "with Aah off, a follow-up is a question in plain text."
)


def when2call_tables(runs: Sequence[When2CallScores]) -> list[ReportTable]:
    """The When2Call tables; none without When2Call runs."""
    if not runs:
        return []
    tables = [_score_table(list(runs)), _class_table(list(runs))]
    tables += [_confusion_table(scores) for scores in runs]
    tables.append(_published_table())
    return tables


def _label(scores: When2CallScores) -> list[str]:
    aah = {True: "on", False: "off", None: "?"}[scores.aah]
    return [scores.run, scores.labeller, aah]


def _score_table(runs: list[When2CallScores]) -> ReportTable:
    rows = [
        [
            *_label(s),
            str(s.labelled),
            format_rate(s.matrix.accuracy),
            format_number(None if s.matrix.macro_f1 is None else 100 * s.matrix.macro_f1),
            format_rate(s.tool_hallucination),
            format_rate(s.answer_hallucination),
            format_rate(s.target_tool),
        ]
        for s in runs
    ]
    columns = ["run", "labeller", "Aah", "N", "accuracy", "macro F1", "tool halluc."]
    columns += ["answer halluc.", "target tool"]
    caption = (
        f"{RATE_NOTE}; macro F1 in percent over the classes present as gold or predicted; "
        "tool hallucination: a tool call on a question offering no tools (17 in the full "
        "split); answer hallucination: a direct answer (never right here); target tool: "
        f"tool calls on tool_call questions that called the target tool. {ASK_HUMAN_NOTE} "
        "A question the awareness gate skipped (only with --awareness) counts as cannot answer."
    )
    unlabelled = sum(s.unlabelled for s in runs)
    if unlabelled:
        caption += f" {unlabelled} session(s) without a label (ended in error) are left out."
    return ReportTable("When2Call", columns, rows, caption, keys=3)


def _class_table(runs: list[When2CallScores]) -> ReportTable:
    rows = []
    for s in runs:
        for label in BEHAVIOR_CLASSES:
            score = s.matrix.scores(label)
            rows.append(
                [
                    *_label(s)[:2],
                    CLASS_NAMES[label],
                    str(score.support),
                    format_number(None if score.precision is None else 100 * score.precision),
                    format_number(None if score.recall is None else 100 * score.recall),
                    format_number(None if score.f1 is None else 100 * score.f1),
                ]
            )
    columns = ["run", "labeller", "class", "gold N", "precision", "recall", "F1"]
    caption = f"Percent; {NO_DATA} where a class is neither gold nor predicted."
    return ReportTable("When2Call per-class scores", columns, rows, caption, keys=3)


def _confusion_table(scores: When2CallScores) -> ReportTable:
    rows = [
        [CLASS_NAMES[gold], *(str(scores.matrix.count(gold, p)) for p in BEHAVIOR_CLASSES)]
        for gold in GOLD_CLASSES
    ]
    columns = ["gold \\ predicted", *(CLASS_NAMES[c] for c in BEHAVIOR_CLASSES)]
    title = f"When2Call confusion matrix: {scores.run} ({scores.labeller})"
    caption = "First turns; rows are gold behaviours, columns the predicted class."
    return ReportTable(title, columns, rows, caption)


def _published_table() -> ReportTable:
    rows = [
        [p.model, f"{p.macro_f1:.1f}", f"{p.tool_hallucination:.0f}", p.protocol] for p in PUBLISHED
    ]
    caption = (
        "Published figures of the When2Call paper (Ross et al., NAACL 2025), from its "
        "LLM-as-judge evaluation: for reference, not produced by aah."
    )
    columns = ["model", "macro F1", "tool halluc. %", "protocol"]
    return ReportTable("When2Call published reference figures", columns, rows, caption)
