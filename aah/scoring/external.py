"""Asking and approval metrics of external agents: MCP clients of ``aah mcp serve``.

An external agent is an MCP client by the name it gives; each has one
session (model ``mcp:NAME``) holding its questions (``ask_human``) and its
calls to approve (``request_approval``). Per agent:

- questions: questions asked (each logged once, however often re-asked),
  per session; answered by a person, fell back (the deadline passed and the
  fallback was the answer), declined, and still waiting;
- time to answer: from the question entering the queue (its
  ``HumanQuestionEvent``) to its answer (``HumanAnswerEvent``), over
  questions a person answered; median and p90 (linear between ranks, as
  the approval times are);
- answered by: how many answers each person gave;
- approvals: calls needing approval and how each ended (science.md §7:
  approved, edited, rejected, responded, timed out, terminated, or still undecided),
  and the median and p90 time to decide over decided calls.

JSON shape (``external_to_json``), one object per agent::

    {"agent": str, "sessions": int, "questions": int, "questions_per_session": float,
     "answered": int, "fallbacks": int, "declined": int, "waiting": int,
     "answer_seconds_median": float | null, "answer_seconds_p90": float | null,
     "answered_by": {person: int}, "approval_calls": int,
     "approvals": {"approved": int, "edited": int, "rejected": int, "responded": int,
                   "timed_out": int, "terminated": int, "undecided": int},
     "decide_seconds_median": float | null, "decide_seconds_p90": float | null}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from aah.events import (
    ApprovalDecidedEvent,
    ApprovalRequestedEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
)
from aah.scoring.approvals import OUTCOMES, approval_calls, quantile
from aah.store import ApprovalStep, SessionRecord, SessionStore

# The model an external agent's session is stored under: ``mcp:`` and the client's name.
EXTERNAL_MODEL_PREFIX = "mcp:"
# Who answers when a question's deadline passes (``QueueHuman``).
FALLBACK_ANSWERER = "deadline-fallback"


@dataclass(frozen=True)
class ExternalAgentAsking:
    """The asking and approval metrics of one external agent (see the module docstring)."""

    agent: str
    sessions: int
    questions: int
    questions_per_session: float
    answered: int
    fallbacks: int
    declined: int
    waiting: int
    answer_seconds_median: float | None
    answer_seconds_p90: float | None
    answered_by: dict[str, int] = field(default_factory=dict)
    approval_calls: int = 0
    approvals: dict[str, int] = field(default_factory=dict)
    decide_seconds_median: float | None = None
    decide_seconds_p90: float | None = None


def is_external(session: SessionRecord) -> bool:
    """Whether ``session`` holds an external agent's questions (``aah mcp serve``)."""
    return session.run is None and (session.model or "").startswith(EXTERNAL_MODEL_PREFIX)


def load_external_agents(store: SessionStore) -> list[ExternalAgentAsking]:
    """The metrics of every external agent in ``store``, by agent name."""
    by_agent: dict[str, list[SessionRecord]] = {}
    for session in store.list_sessions():
        if is_external(session):
            agent = (session.model or "").removeprefix(EXTERNAL_MODEL_PREFIX)
            by_agent.setdefault(agent, []).append(session)
    return [_agent_metrics(agent, sessions, store) for agent, sessions in sorted(by_agent.items())]


def _agent_metrics(
    agent: str, sessions: Sequence[SessionRecord], store: SessionStore
) -> ExternalAgentAsking:
    asked: dict[str, HumanQuestionEvent] = {}
    answers: dict[str, HumanAnswerEvent] = {}
    steps: list[ApprovalStep] = []
    for session in sessions:
        for event in store.events(session.id):
            if isinstance(event, HumanQuestionEvent):
                asked.setdefault(event.request_id, event)
            elif isinstance(event, HumanAnswerEvent):
                answers.setdefault(event.request_id, event)
            elif isinstance(event, ApprovalRequestedEvent | ApprovalDecidedEvent):
                steps.append(ApprovalStep(session.id, session.run, session.setting, event))
    by_people = [
        answers[request]
        for request in asked
        if request in answers and answers[request].answered_by != FALLBACK_ANSWERER
    ]
    answered = [a for a in by_people if not a.declined]
    seconds = sorted(
        max(0.0, (answers[r].ts - q.ts).total_seconds())
        for r, q in asked.items()
        if r in answers and answers[r].answered_by != FALLBACK_ANSWERER
    )
    calls = approval_calls(steps)
    ended: Counter[str] = Counter(call.outcome or "undecided" for call in calls)
    decide = sorted(c.decide_seconds for c in calls if c.decide_seconds is not None)
    return ExternalAgentAsking(
        agent=agent,
        sessions=len(sessions),
        questions=len(asked),
        questions_per_session=len(asked) / len(sessions),
        answered=len(answered),
        fallbacks=sum(answers[r].answered_by == FALLBACK_ANSWERER for r in asked if r in answers),
        declined=len(by_people) - len(answered),
        waiting=sum(r not in answers for r in asked),
        answer_seconds_median=quantile(seconds, 0.5),
        answer_seconds_p90=quantile(seconds, 0.9),
        answered_by=dict(sorted(Counter(a.answered_by for a in by_people).items())),
        approval_calls=len(calls),
        approvals={name: ended[name] for name in (*OUTCOMES, "undecided")},
        decide_seconds_median=quantile(decide, 0.5),
        decide_seconds_p90=quantile(decide, 0.9),
    )


def external_to_json(agent: ExternalAgentAsking) -> dict[str, Any]:
    """``agent``'s metrics as the JSON object of the module docstring."""
    return asdict(agent)
