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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aah.benchmark.bfcl.checker import Call, call_problem, check_calls
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
    """

    run: str
    model: str
    language: str
    scored: int
    unscored: int
    figures: dict[str, Proportion]
    disagreements: list[Disagreement] = field(default_factory=list)
    published: dict[str, float] | None = None


def bfcl_run_scores(store: SessionStore, run: str, model: str) -> list[BfclScores]:
    """The run's figures, one ``BfclScores`` per language (in name order)."""
    latest: dict[str, Mapping[str, Any]] = {}
    with store.queries() as queries:
        sessions = queries.task_ids([run])  # every session of a BFCL run has a task id
        for session_id, stored in queries.grade_votes([run], GRADER):  # the last one wins
            if stored and isinstance(stored[0], dict):
                latest[session_id] = stored[0]
    votes: dict[str, list[Mapping[str, Any]]] = {}
    for vote in latest.values():
        votes.setdefault(str(vote.get("language") or "en"), []).append(vote)
    unscored = len(sessions) - sum(len(v) for v in votes.values())
    return [
        _scores(run, model, language, votes[language], unscored if len(votes) == 1 else 0)
        for language in sorted(votes)
    ]


def _scores(
    run: str, model: str, language: str, votes: Sequence[Mapping[str, Any]], unscored: int
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
    published = published_for(model, language)
    return BfclScores(
        run=run,
        model=model,
        language=language,
        scored=len(votes),
        unscored=unscored,
        figures={name: value for name, value in figures.items() if value.n},
        disagreements=disagreements,
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

    Shape: ``{"run": str, "model": str, "language": str, "scored": int,
    "unscored": int, "figures": {<name>: {"value", "low", "high", "n", "k"}},
    "published": {<name>: float} | null, "disagreements": [{"id", "category",
    "language", "raw"}]}``; ``<name>`` one of ``FIGURES`` that has items;
    ``published`` holds MBFCL's percent figures where model and language match.
    """
    return {
        "run": scores.run,
        "model": scores.model,
        "language": scores.language,
        "scored": scores.scored,
        "unscored": scores.unscored,
        "figures": {name: value._asdict() for name, value in scores.figures.items()},
        "published": scores.published,
        "disagreements": [
            {"id": d.id, "category": d.category, "language": d.language, "raw": d.raw}
            for d in scores.disagreements
        ],
    }
