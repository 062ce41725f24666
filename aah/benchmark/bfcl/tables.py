"""BFCL's part of the report: AST per category, refusal read two ways, MBFCL beside, multi-turn.

One row per run and language; a run with multi-turn entries also gets rows in
the multi-turn tables (plain and Aah runs side by side, the manifest's
``aah`` says which): accuracy per category read as science.md §6 and as
bfcl-eval reads it, the readings of the turns whose ground truth is empty,
and those turns' last replies. Rates read as in the other tables
(``format_rate``: percent and 95% Wilson interval). Multilingual-BFCL's
published baseline is shown where the run's model and the language match one
of its rows; its figures are rounded percents from the paper, not aah's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aah.benchmark.bfcl.published import MBFCL_SOURCE
from aah.benchmark.bfcl.scoring import BfclScores
from aah.benchmark.bfcl.tasks import AST_CATEGORIES
from aah.events import excerpt
from aah.scoring import NO_DATA, RATE_NOTE, ReportTable, format_rate, quote

SHOWN_DISAGREEMENTS = 20
DISAGREEMENT_CHARS = 400
# The multi-turn categories' short names (figures ``mt_multi_turn_<short>``), in BFCL's order.
_MULTI_TURN = ("base", "miss_param", "miss_func", "long_context")
# Replies on empty-ground-truth turns shown per run (the JSON has all of them).
SHOWN_EMPTY_TURNS = 20
EMPTY_TURN_CHARS = 400
_MISS_PARAM = (
    ("miss_param_asked", "asked"),
    ("miss_param_declined", "declined"),
    ("miss_param_guessed", "guessed"),
    ("miss_param_attempted", "attempted"),
    ("miss_param_called", "called"),
    ("miss_param_answered", "answered"),
    ("miss_param_asked_any", "asked at all"),
)
_MISS_FUNC = (
    ("miss_func_noticed", "noticed"),
    ("miss_func_called_missing", "called the missing one"),
    ("miss_func_misused", "called an offered one"),
)
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


def bfcl_tables(runs: Sequence[BfclScores]) -> list[ReportTable]:
    """The BFCL tables; none without BFCL runs."""
    single = [s for s in runs if s.multi_turn is None or s.scored or s.unscored]
    multi = [s for s in runs if s.multi_turn is not None]
    tables = []
    if single:
        tables += [_summary_table(single), _category_table(single)]
        published = [s for s in single if s.published is not None]
        if published:
            tables.append(_published_table(published))
        tables.append(_disagreement_table(single))
    if multi:
        tables += multi_turn_tables(multi)
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


# -- multi-turn ------------------------------------------------------------------


def multi_turn_tables(runs: list[BfclScores]) -> list[ReportTable]:
    """The multi-turn tables of the runs with multi-turn entries (``multi_turn`` set).

    A table of empty-ground-truth turns shows only where some run has such turns.
    """
    tables = [_multi_turn_accuracy_table(runs)]
    for category, figures, caption in (
        ("miss_param", _MISS_PARAM, _MISS_PARAM_CAPTION),
        ("miss_func", _MISS_FUNC, _MISS_FUNC_CAPTION),
    ):
        if any(figures[0][0] in s.figures for s in runs):
            tables.append(_empty_turn_table(runs, category, figures, caption))
    if any(s.multi_turn is not None and s.multi_turn.empty_turns for s in runs):
        tables.append(_empty_turn_reply_table(runs))
    return tables


def _aah(scores: BfclScores) -> str:
    return "?" if scores.aah is None else ("on" if scores.aah else "off")


def _multi_turn_accuracy_table(runs: list[BfclScores]) -> ReportTable:
    rows = []
    for s in runs:
        counts = s.multi_turn
        assert counts is not None
        for reading, suffix in (("science.md", ""), ("bfcl-eval", "_official")):
            rows.append(
                [
                    s.run,
                    s.model,
                    _aah(s),
                    reading,
                    str(counts.scored),
                    _rate(s, f"mt_accuracy{suffix}"),
                    *(_rate(s, f"mt_multi_turn_{short}{suffix}") for short in _MULTI_TURN),
                    str(counts.restored),
                ]
            )
    columns = ["run", "model", "Aah", "reading", "N", "all", *_MULTI_TURN, "restored"]
    caption = (
        f"{RATE_NOTE}, over entries; {NO_DATA} where the run has none. science.md: an entry "
        "passes when every turn ended and passed, a turn whose ground truth is empty only "
        "when the model made no decodable call in it at all. bfcl-eval: the official "
        "checker's reading, which never applies that rule. An entry cut short (the step "
        "limit, a reply cut off) fails both ways (force_terminated). restored: entries with "
        "a turn checked on state rebuilt from a checkpoint (arguments the log redacts, such "
        "as passwords, may differ there)."
    )
    caption += _left_out(runs)
    return ReportTable("BFCL multi-turn accuracy", columns, rows, caption, keys=4)


def _left_out(runs: list[BfclScores]) -> str:
    counted = [s.multi_turn for s in runs if s.multi_turn is not None]
    errors = sum(counts.errors for counts in counted)
    unscored = sum(counts.unscored for counts in counted)
    restored = sum(counts.restored for counts in counted)
    said = ""
    if errors:
        said += (
            f" {errors} session(s) ended in error and are not scored (the same "
            "`aah bench run` runs them again)."
        )
    if unscored:
        said += (
            f" {unscored} session(s) are not finished or not scored yet: the figures "
            "leave them out."
        )
    if restored:
        said += f" {restored} entr{'y was' if restored == 1 else 'ies were'} restored."
    return said


_MISS_PARAM_CAPTION = (
    "Turns of miss_param entries whose ground truth is empty (a parameter is missing), "
    "each read once, the first that holds: guessed (a call with a value the conversation "
    "never gave), called (a call, every value given), attempted (a malformed call, or a "
    "call attempt in the reply's text), asked (a question to a person, or a follow-up "
    "question), declined (the reply says it cannot), answered (anything else). asked at "
    "all: the turn asked a person or ended with a question, whatever else it did."
)
_MISS_FUNC_CAPTION = (
    "Turns of miss_func entries whose ground truth is empty (a function is missing): "
    "noticed (asked or declined, no call and no attempt), called the missing one (a call "
    "to a function not offered yet), called an offered one (a call to another offered "
    "function in its place)."
)


def _empty_turn_table(
    runs: list[BfclScores], category: str, figures: tuple[tuple[str, str], ...], caption: str
) -> ReportTable:
    rows = []
    for s in runs:
        first = s.figures.get(figures[0][0])
        turns = str(first.n) if first is not None else "0"
        rows.append([s.run, _aah(s), turns, *(_rate(s, name) for name, _ in figures)])
    columns = ["run", "Aah", "turns", *(label for _, label in figures)]
    return ReportTable(
        f"BFCL multi-turn: {category} turns without ground truth",
        columns,
        rows,
        f"{RATE_NOTE}. {caption}",
        keys=2,
    )


def _empty_turn_reply_table(runs: list[BfclScores]) -> ReportTable:
    rows = []
    total = 0
    for s in runs:
        replies = s.multi_turn.empty_turns if s.multi_turn is not None else []
        total += len(replies)
        for reply in replies[:SHOWN_EMPTY_TURNS]:
            rows.append(
                [
                    s.run,
                    reply.id,
                    str(reply.turn),
                    reply.reading,
                    quote(reply.reply, EMPTY_TURN_CHARS) if reply.reply else "(no text)",
                ]
            )
    shown = len(rows)
    caption = (
        "The last reply on each turn whose ground truth is empty, with its reading; texts "
        "cut short"
        + (
            f"; the first {SHOWN_EMPTY_TURNS} per run, {shown} of {total} (all are in the JSON)."
            if shown < total
            else "."
        )
    )
    return ReportTable(
        "BFCL multi-turn: replies on turns without ground truth",
        ["run", "entry", "turn", "reading", "reply"],
        rows,
        caption,
        keys=2,
    )


def bfcl_csv_rows(runs: Sequence[BfclScores]) -> list[list[Any]]:
    """The BFCL figures as CSV rows: a header, then one row per run, language and figure.

    Values are left as they are; the CSV writer makes them text.
    """
    rows: list[list[Any]] = [["run", "model", "language", "figure", "value", "low", "high"]]
    rows[0] += ["k", "n"]
    for s in runs:
        # In FIGURES' order, then the multi-turn figures' (``MULTI_TURN_FIGURES``).
        for name, value in s.figures.items():
            rows.append([s.run, s.model, s.language, name, *value[2:], value.k, value.n])
    return rows
