"""Human labels on final answers: which sessions to show, what to show, how to store a label.

A label is a grade like the LLM grader's, so agreement between people and the
grader is one query away: ``grader_model`` is ``human:<name>``, the prompt
version ``human-label/1``, and the one vote names the annotator.
"""

from __future__ import annotations

from dataclasses import dataclass

from aah.runtime.prompts import Prompt
from aah.scoring import HUMAN_GRADER_PREFIX
from aah.scoring.grader import load_case, render_prompt
from aah.store import SessionRecord, SessionStore, Verdict
from aah.ui.web.format import plain

HUMAN_LABEL_PROMPT = "human-label/1"
# The evidence part of the grader's prompt, rendered by the grader's own code,
# so that people judge from what the grader sees (the request and answer are
# shown in their own boxes).
_EVIDENCE = Prompt(
    HUMAN_LABEL_PROMPT,
    "Tool calls made:\n{tool_calls}\n\nQuestions asked to the user:\n{human_exchanges}\n",
)


@dataclass(frozen=True)
class GradingView:
    """What the grading page shows of one session (plain text but ``meta``)."""

    session_id: str
    meta: str
    query: str
    answer: str
    steps: str


def human_grader(annotator: str) -> str:
    """The ``grader_model`` a label by ``annotator`` is stored under."""
    return f"{HUMAN_GRADER_PREFIX}{annotator}"


def run_names(store: SessionStore) -> list[str]:
    """Every run's name, newest first (the one being worked on is usually the last)."""
    return [run.name for run in reversed(store.runs())]


def to_label(store: SessionStore, run: str, annotator: str) -> list[SessionRecord]:
    """Finished sessions of ``run`` that ``annotator`` has not labelled, oldest first."""
    grader = human_grader(annotator)
    return [
        session
        for session in store.list_sessions(run=run, status="finished")
        if not any(grade.grader_model == grader for grade in store.grades(session.id))
    ]


def grading_view(store: SessionStore, session: SessionRecord, left: int) -> GradingView:
    """What to show of ``session``; ``left`` counts the sessions still to label, it included."""
    case = load_case(store, session)
    steps = render_prompt(case, _EVIDENCE)
    meta = (
        f"task {plain(session.task_id or '-')} · setting "
        f"{plain(session.setting or 'interactive')} · {left} left to label in this run"
    )
    return GradingView(session.id, meta, case.query, case.answer or "(no final answer)", steps)


def record_label(store: SessionStore, session_id: str, annotator: str, verdict: Verdict) -> None:
    """Store ``annotator``'s Pass/Fail on the session's final answer.

    Raises:
        ValueError: The annotator has labelled this session already.
    """
    grader = human_grader(annotator)
    if any(grade.grader_model == grader for grade in store.grades(session_id)):
        raise ValueError("you labelled this answer already: press Next answer")
    store.add_grade(
        session_id,
        grader,
        HUMAN_LABEL_PROMPT,
        [{"annotator": annotator, "vote": verdict}],
        verdict,
    )
