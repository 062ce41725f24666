"""BFCL scores of a run: each turn checked, stored, and the figures read back (science.md §6).

After a run, ``score_bfcl_run`` reads each session's one turn (``read_turn``)
and stores a grade: ``grader_model`` ``bfcl:ast``, one vote holding the item's
category and language, the calls, both readings (standard and intent), the
AST verdict with its reason, and the raw reply; the verdict is ``pass`` when
the turn did the right thing (AST categories: the calls match; irrelevance:
no call by intent; relevance: some call). The figures then come from the
store alone, per run and language, each a proportion with its Wilson interval:

- ``ast`` over every AST item, and ``ast_<category>`` per category;
- ``irrelevance_standard`` / ``irrelevance_intent``: no call on the
  ``irrelevance`` items, read the standard way or by intent (MBFCL's Irr),
  and ``irrelevance_gap``: the items where the two disagree (a reply that
  tried to call and failed);
- ``live_relevance``: some well-formed call on the ``live_relevance`` items;
- ``live_hallucination_standard`` / ``live_hallucination_intent`` (MBFCL's
  H-S / H-I): over ``live_irrelevance`` plus ``live_relevance``, the share
  that behaved right (no call for an irrelevance item, read each way; some
  well-formed call for a relevance item), and ``live_hallucination_gap``.

Sessions that ended in error hold no turn: they are not scored, and counted.
A run's multi-turn entries (``multi_turn_scoring``) add their figures
(``MULTI_TURN_FIGURES``) to the English row, with their counts beside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aah.benchmark.bfcl.checker import Call, call_problem, check_calls
from aah.benchmark.bfcl.multi_turn_scoring import (
    GRADER as MULTI_TURN_GRADER,
)
from aah.benchmark.bfcl.multi_turn_scoring import (
    MultiTurnCounts,
    is_multi_turn_id,
    multi_turn_counts,
    multi_turn_figures,
)
from aah.benchmark.bfcl.published import published_for
from aah.benchmark.bfcl.reading import Turn, called_intent, called_standard, read_turn
from aah.benchmark.bfcl.tasks import AST_CATEGORIES, CATEGORIES, BfclTask
from aah.events import excerpt
from aah.scoring import Proportion, base_task_id, wilson
from aah.store import CallStep, SessionStore, Verdict

GRADER = "bfcl:ast"
GRADER_VERSION = "1"
RAW_CHARS = 4_000
# The figures of a run, in the order reports show them (``ast_<category>`` after ``ast``).
FIGURES = (
    "ast",
    *(f"ast_{category}" for category in AST_CATEGORIES),
    "irrelevance_standard",
    "irrelevance_intent",
    "irrelevance_gap",
    "live_relevance",
    "live_hallucination_standard",
    "live_hallucination_intent",
    "live_hallucination_gap",
)
LIVE_HALLUCINATION = ("live_irrelevance", "live_relevance")


def score_bfcl_run(store: SessionStore, run: str, tasks: Sequence[BfclTask]) -> int:
    """Check and store every turn of ``run`` not yet scored.

    The run's steps and grades are read in bulk and the grades written in one
    transaction: a whole single-turn set scores in seconds.

    Returns:
        How many sessions were scored now.
    """
    by_id = {task.id: task for task in tasks}
    with store.queries() as queries:
        sessions = queries.session_tasks([run])
        done = {session_id for session_id, _ in queries.grade_votes([run], GRADER)}
        steps: dict[str, list[CallStep]] = {}
        for step in queries.call_steps([run]):
            steps.setdefault(step.session_id, []).append(step)
    grades: list[tuple[str, list[Any], Verdict]] = []
    for session_id, task_id, status in sessions:
        task = by_id.get(base_task_id(task_id or ""))
        # A session that ended in error is run again by the next run of the command.
        if task is None or status == "error" or session_id in done:
            continue
        turn = read_turn(steps.get(session_id, []))
        if turn is None:
            continue
        vote = turn_vote(task, turn)
        grades.append((session_id, [vote], "pass" if vote["right"] else "fail"))
    return store.add_grades(GRADER, GRADER_VERSION, grades)


def turn_vote(task: BfclTask, turn: Turn) -> dict[str, Any]:
    """What one turn did on one item, as the stored vote.

    The raw reply is kept where the two readings disagree (the report lists
    those); every raw reply stays in the session's events.
    """
    names = [tool.name for tool in task.functions]
    standard = called_standard(turn)
    intent = called_intent(turn, names)
    ast: bool | None = None
    reason = ""
    if task.category in AST_CATEGORIES:
        verdict = check_calls(task, turn.calls)
        ast, reason = verdict.ok, verdict.reason
        right = verdict.ok
    elif task.category == "live_relevance":
        right = standard
    else:
        right = not intent
    return {
        "id": task.id,
        "category": task.category,
        "language": task.language,
        "calls": [_stored_call(call) for call in turn.calls],
        "malformed": turn.malformed,
        "standard_call": standard,
        "intent_call": intent,
        "ast": ast,
        "reason": reason,
        "right": right,
        "raw": excerpt(turn.raw, RAW_CHARS) if intent and not standard else None,
    }


def _stored_call(call: Call) -> dict[str, Any]:
    """A call as its vote holds it; one the checker cannot read keeps only why (in ``note``)."""
    problem = call_problem(call)
    if problem is None:
        return {call.name: dict(call.arguments)}
    return {"note": problem}


# -- figures from the store -----------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    """A reply the standard reading takes as no call and the intent reading as a call."""

    run: str
    id: str
    category: str
    language: str
    raw: str


@dataclass(frozen=True)
class BfclScores:
    """One run's BFCL figures in one language.

    Attributes:
        run: The run.
        model: The run's model.
        language: The items' language (``en`` for BFCL's own files).
        scored: Sessions scored.
        unscored: Sessions of the run in this language without a score (ended
            in error), when known; the run's total otherwise.
        figures: Each figure of ``FIGURES`` that has items, by name.
        disagreements: Replies read as no call by the standard reading and as
            a call by intent: the gap's items, each with its raw text.
        published: MBFCL's published baseline for this model and language (percent).
        aah: Whether the run's agent could ask a person (the manifest's ``aah``), if known.
        multi_turn: How the multi-turn figures were counted, for a run with
            multi-turn entries (English only); None otherwise. ``scored`` and
            ``unscored`` above count single-turn items only.
    """

    run: str
    model: str
    language: str
    scored: int
    unscored: int
    figures: dict[str, Proportion]
    disagreements: list[Disagreement] = field(default_factory=list)
    published: dict[str, float] | None = None
    aah: bool | None = None
    multi_turn: MultiTurnCounts | None = None


def bfcl_run_scores(
    store: SessionStore, run: str, model: str, aah: bool | None = None
) -> list[BfclScores]:
    """The run's figures, one ``BfclScores`` per language (in name order).

    Multi-turn entries join the English row: their figures among the others,
    their counts in ``multi_turn``.
    """
    latest: dict[str, Mapping[str, Any]] = {}
    multi: dict[str, Mapping[str, Any]] = {}
    with store.queries() as queries:
        sessions = queries.session_tasks([run])
        for grader, found in ((GRADER, latest), (MULTI_TURN_GRADER, multi)):
            for session_id, stored in queries.grade_votes([run], grader):  # the last one wins
                if stored and isinstance(stored[0], dict):
                    found[session_id] = stored[0]
    # Every session of a BFCL run has a task id.
    entries = {s: status for s, task_id, status in sessions if is_multi_turn_id(task_id or "")}
    items = sum(1 for s, task_id, _ in sessions if task_id and s not in entries)
    votes: dict[str, list[Mapping[str, Any]]] = {}
    for session_id, vote in latest.items():
        if session_id not in entries:
            votes.setdefault(str(vote.get("language") or "en"), []).append(vote)
    counts: MultiTurnCounts | None = None
    mt_votes = [vote for session_id, vote in multi.items() if session_id in entries]
    if entries:
        left = [status for session_id, status in entries.items() if session_id not in multi]
        errors = sum(1 for status in left if status == "error")
        counts = multi_turn_counts(run, mt_votes, errors, len(left) - errors)
        votes.setdefault("en", [])
    unscored = items - sum(len(v) for v in votes.values())
    # The unscored items' language is unknown: they are told where there is one language.
    languages = [language for language, found in votes.items() if found] or ["en"]
    told = languages[0] if len(languages) == 1 else None
    return [
        _scores(
            run,
            model,
            language,
            votes[language],
            unscored if language == told else 0,
            aah=aah,
            multi=(counts, mt_votes) if language == "en" and counts is not None else None,
        )
        for language in sorted(votes)
    ]


def _scores(
    run: str,
    model: str,
    language: str,
    votes: Sequence[Mapping[str, Any]],
    unscored: int,
    *,
    aah: bool | None = None,
    multi: tuple[MultiTurnCounts, Sequence[Mapping[str, Any]]] | None = None,
) -> BfclScores:
    by_category: dict[str, list[Mapping[str, Any]]] = {c: [] for c in CATEGORIES}
    for vote in votes:
        by_category.setdefault(str(vote.get("category")), []).append(vote)
    figures: dict[str, Proportion] = {}
    ast_votes = [v for c in AST_CATEGORIES for v in by_category[c]]
    figures["ast"] = _share(ast_votes, lambda v: v.get("ast") is True)
    for category in AST_CATEGORIES:
        figures[f"ast_{category}"] = _share(by_category[category], lambda v: v.get("ast") is True)
    irrelevance = by_category["irrelevance"]
    figures["irrelevance_standard"] = _share(irrelevance, lambda v: not v.get("standard_call"))
    figures["irrelevance_intent"] = _share(irrelevance, lambda v: not v.get("intent_call"))
    figures["irrelevance_gap"] = _share(irrelevance, _disagrees)
    relevance = by_category["live_relevance"]
    figures["live_relevance"] = _share(relevance, lambda v: bool(v.get("standard_call")))
    live = [v for c in LIVE_HALLUCINATION for v in by_category[c]]
    figures["live_hallucination_standard"] = _share(live, lambda v: _live_right(v, "standard"))
    figures["live_hallucination_intent"] = _share(live, lambda v: _live_right(v, "intent"))
    figures["live_hallucination_gap"] = _share(
        [v for v in live if v.get("category") == "live_irrelevance"], _disagrees
    )
    disagreements = [
        Disagreement(run, str(v.get("id")), str(v.get("category")), language, str(v.get("raw")))
        for v in votes
        if _disagrees(v)
    ]
    kept = {name: value for name, value in figures.items() if value.n}
    if multi is not None:
        kept.update(multi_turn_figures(multi[1]))
    published = published_for(model, language) if votes else None
    return BfclScores(
        run=run,
        model=model,
        language=language,
        scored=len(votes),
        unscored=unscored,
        figures=kept,
        disagreements=disagreements,
        aah=aah,
        multi_turn=None if multi is None else multi[0],
        published=None
        if published is None
        else {
            "ast": published.ast,
            "irrelevance_standard": published.irrelevance,
            "live_hallucination_intent": published.h_i,
            "live_hallucination_standard": published.h_s,
        },
    )


def _share(votes: Sequence[Mapping[str, Any]], counts: Any) -> Proportion:
    return wilson(sum(1 for vote in votes if counts(vote)), len(votes))


def _disagrees(vote: Mapping[str, Any]) -> bool:
    return not vote.get("standard_call") and bool(vote.get("intent_call"))


def _live_right(vote: Mapping[str, Any], reading: str) -> bool:
    if vote.get("category") == "live_relevance":
        return bool(vote.get("standard_call"))
    return not vote.get(f"{reading}_call")


def bfcl_scores_to_json(scores: BfclScores) -> dict[str, Any]:
    """One run's figures in one language as plain JSON values.

    Shape: ``{"run": str, "model": str, "aah": bool | null, "language": str,
    "scored": int, "unscored": int, "figures": {<name>: {"value", "low",
    "high", "n", "k"}}, "published": {<name>: float} | null,
    "disagreements": [{"id", "category", "language", "raw"}], "multi_turn":
    null | {"scored": int, "errors": int, "unscored": int, "restored": int,
    "empty_turns": [{"id", "category", "turn", "reading", "reply"}]}}``;
    ``<name>`` one of ``FIGURES`` or ``MULTI_TURN_FIGURES`` that has items;
    ``published`` holds MBFCL's percent figures where model and language
    match; ``scored`` and ``unscored`` count single-turn items, ``multi_turn``
    the multi-turn entries (a run with some; English only).
    """
    multi = scores.multi_turn
    return {
        "run": scores.run,
        "model": scores.model,
        "aah": scores.aah,
        "language": scores.language,
        "scored": scores.scored,
        "unscored": scores.unscored,
        "figures": {name: value._asdict() for name, value in scores.figures.items()},
        "published": scores.published,
        "disagreements": [
            {"id": d.id, "category": d.category, "language": d.language, "raw": d.raw}
            for d in scores.disagreements
        ],
        "multi_turn": None
        if multi is None
        else {
            "scored": multi.scored,
            "errors": multi.errors,
            "unscored": multi.unscored,
            "restored": multi.restored,
            "empty_turns": [
                {
                    "id": reply.id,
                    "category": reply.category,
                    "turn": reply.turn,
                    "reading": reply.reading,
                    "reply": reply.reply,
                }
                for reply in multi.empty_turns
            ],
        },
    }
