"""When2Call behaviour classes of agent turns, with their rates and scores (science.md §3).

Every agent turn is exactly one of: a tool call, a follow-up question
(``request_for_info``), ``cannot_answer``, or a ``direct`` answer. Replies are
classified by rules (`classify_reply`, see ``behavior_rules``) or, on request,
by an LLM judge (`classify_with_llm`). Turns are read back from the session
store: a turn whose tool calls all go to ``ask_human`` is a follow-up question.

Derived rates, each a Wilson proportion with its N, over the sessions that
took at least one agent turn (a skipped session, where awareness said no,
never took one; the skip ratio scores it):

- tool hallucination: no-tools sessions with any turn that calls, or tries to
  call, a tool (``ask_human`` is a question, not a tool call);
- answer hallucination: sessions of a setting whose tasks need tools
  (perfect, under-specified, replaceable, non-replaceable) whose first turn
  is a direct answer: the right first move was a call, a question or declining;
- parameter hallucination: under-specified sessions whose first turn is a
  tool call instead of a follow-up question.

Gold labels exist for first turns only: under-specified → ``request_for_info``;
no-tools → ``direct``, since a no-tools task should call nothing and answer
from the model's own knowledge (a refusal or a question there counts as a
miss, the tool call as the error). Other settings have no gold label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from aah.events import DiscoveryEvent, Event, HumanQuestionEvent, ModelCallEvent, ToolCallEvent
from aah.scoring.behavior.judge import (
    JudgePrompt,
    JudgeVotes,
    classify_with_llm,
    load_judge_prompt,
    parse_judge_reply,
    tally_votes,
)
from aah.scoring.behavior.rules import (
    BEHAVIOR_CLASSES,
    BehaviorClass,
    Classification,
    classify_reply,
)
from aah.scoring.intervals import Proportion, wilson
from aah.scoring.settings import canonical_setting
from aah.store import SessionStore
from aah.tools import ASK_HUMAN, FIND_TOOLS

__all__ = [
    "BEHAVIOR_CLASSES",
    "BehaviorClass",
    "BehaviorReport",
    "ClassScores",
    "Classification",
    "ConfusionMatrix",
    "HallucinationRates",
    "JudgePrompt",
    "JudgeVotes",
    "LabelPair",
    "SessionTurns",
    "TurnClass",
    "behavior_report",
    "classify_reply",
    "classify_turns",
    "turn_class",
    "classify_with_llm",
    "confusion",
    "gold_label",
    "gold_pairs",
    "hallucination_rates",
    "load_judge_prompt",
    "parse_judge_reply",
    "run_turns",
    "session_turns",
    "tally_votes",
]

# Settings whose tasks need tools: answering straight away there is a hallucination.
TOOL_SETTINGS = frozenset({"perfect", "underspecified", "replaceable", "nonreplaceable"})
_FIRST_TURN_GOLD: dict[str, BehaviorClass] = {
    "underspecified": "request_for_info",
    "notools": "direct",
}


# -- turns from the session store ---------------------------------------------


class TurnClass(NamedTuple):
    """The class of one agent turn of a session.

    Attributes:
        session_id: The session.
        turn: The turn's number among the session's agent turns, from 1.
        seq: The seq of the turn's model-call event.
        label: The behaviour class.
        rule: The rule that decided it.
    """

    session_id: str
    turn: int
    seq: int
    label: BehaviorClass
    rule: str


def classify_turns(events: Sequence[Event]) -> list[TurnClass]:
    """Classify each agent turn among one session's ``events`` (in seq order).

    A turn's calls are the tool-call and human-question events that follow
    its model call, up to the next model call; a valid ``ask_human`` call
    leaves only a human-question event behind. A turn without calls is
    classified from its text without the offered tool names, which the store
    does not keep; calls the runtime recovered from text already count as calls.
    """
    turns: list[TurnClass] = []
    for index, event in enumerate(events):
        if not isinstance(event, ModelCallEvent) or event.purpose != "agent":
            continue
        label, rule = turn_class(event.n_tool_calls, event.text, _calls_after(events, index))
        turns.append(TurnClass(event.session_id, len(turns) + 1, event.seq, label, rule))
    return turns


def session_turns(store: SessionStore, session_id: str) -> list[TurnClass]:
    """Classify each agent turn of the session ``session_id``."""
    return classify_turns(store.events(session_id))


def _calls_after(events: Sequence[Event], index: int) -> list[str]:
    called: list[str] = []
    for event in events[index + 1 :]:
        if isinstance(event, ModelCallEvent):
            break
        if isinstance(event, ToolCallEvent):
            called.append(event.tool)
        elif isinstance(event, HumanQuestionEvent):
            called.append(ASK_HUMAN)
        elif isinstance(event, DiscoveryEvent):
            called.append(FIND_TOOLS)
    return called


def turn_class(n_tool_calls: int, text: str, called: Sequence[str]) -> Classification:
    """One agent turn's class from its call count, its text and the calls that followed.

    A turn whose calls are all ``ask_human`` is a follow-up question.
    """
    if n_tool_calls == 0:
        return classify_reply(text)
    if called and all(name == ASK_HUMAN for name in called):
        return Classification("request_for_info", "ask_human")
    return Classification("tool_call", "native_call")


@dataclass(frozen=True)
class SessionTurns:
    """One session's classified agent turns, with its (normalized) setting."""

    session_id: str
    setting: str | None
    status: str
    turns: list[TurnClass]


def run_turns(store: SessionStore, run: str | None) -> list[SessionTurns]:
    """The classified turns of every session of ``run`` (every session when None)."""
    return [
        SessionTurns(s.id, canonical_setting(s.setting), s.status, session_turns(store, s.id))
        for s in store.list_sessions(run=run)
    ]


class HallucinationRates(NamedTuple):
    """The three hallucination rates of science.md §3, each k/N with its interval."""

    tool: Proportion
    answer: Proportion
    parameter: Proportion


def hallucination_rates(sessions: Sequence[SessionTurns]) -> HallucinationRates:
    """Tool, answer and parameter hallucination over ``sessions`` (module docstring)."""
    acted = [s for s in sessions if s.turns]
    notools = [s for s in acted if s.setting == "notools"]
    needs_tools = [s for s in acted if s.setting in TOOL_SETTINGS]
    under = [s for s in acted if s.setting == "underspecified"]
    called = sum(any(t.label == "tool_call" for t in s.turns) for s in notools)
    return HallucinationRates(
        tool=wilson(called, len(notools)),
        answer=wilson(sum(s.turns[0].label == "direct" for s in needs_tools), len(needs_tools)),
        parameter=wilson(sum(s.turns[0].label == "tool_call" for s in under), len(under)),
    )


# -- gold labels and scores -----------------------------------------------------


class LabelPair(NamedTuple):
    """A gold label and the class predicted for the same turn."""

    gold: BehaviorClass
    predicted: BehaviorClass


def gold_label(setting: str | None, turn: int) -> BehaviorClass | None:
    """The right class of turn ``turn`` of a task in ``setting``, where one is known."""
    return _FIRST_TURN_GOLD.get(canonical_setting(setting) or "") if turn == 1 else None


def gold_pairs(sessions: Iterable[SessionTurns]) -> list[LabelPair]:
    """(gold, predicted) for every first turn that has a gold label."""
    pairs: list[LabelPair] = []
    for session in sessions:
        gold = gold_label(session.setting, 1)
        if gold is not None and session.turns:
            pairs.append(LabelPair(gold, session.turns[0].label))
    return pairs


class ClassScores(NamedTuple):
    """Precision, recall and F1 of one class; None where nothing defines them.

    Attributes:
        precision: Right among the turns predicted as the class.
        recall: Found among the turns whose gold label is the class.
        f1: Their harmonic mean; 0 when the class occurs but is never hit.
        support: Turns whose gold label is the class.
    """

    precision: float | None
    recall: float | None
    f1: float | None
    support: int


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of (gold, predicted) pairs: rows are gold, columns predicted.

    Rows and columns follow ``BEHAVIOR_CLASSES``.
    """

    counts: tuple[tuple[int, ...], ...]

    def count(self, gold: BehaviorClass, predicted: BehaviorClass) -> int:
        """How many turns with gold label ``gold`` were classed as ``predicted``."""
        return self.counts[BEHAVIOR_CLASSES.index(gold)][BEHAVIOR_CLASSES.index(predicted)]

    @property
    def total(self) -> int:
        """How many pairs the matrix counts."""
        return sum(map(sum, self.counts))

    @property
    def accuracy(self) -> Proportion:
        """The share of pairs on the diagonal, with its interval."""
        return wilson(sum(self.counts[i][i] for i in range(len(BEHAVIOR_CLASSES))), self.total)

    def scores(self, label: BehaviorClass) -> ClassScores:
        """Precision, recall and F1 of ``label``."""
        i = BEHAVIOR_CLASSES.index(label)
        hit = self.counts[i][i]
        predicted = sum(row[i] for row in self.counts)
        support = sum(self.counts[i])
        precision = hit / predicted if predicted else None
        recall = hit / support if support else None
        if not (predicted or support):
            return ClassScores(None, None, None, 0)
        f1 = 2 * hit / (predicted + support)  # the harmonic mean of precision and recall
        return ClassScores(precision, recall, f1, support)

    @property
    def macro_f1(self) -> float | None:
        """The mean F1 over the classes that occur as gold or predicted labels."""
        f1s = [s.f1 for s in map(self.scores, BEHAVIOR_CLASSES) if s.f1 is not None]
        return sum(f1s) / len(f1s) if f1s else None


def confusion(pairs: Iterable[tuple[BehaviorClass, BehaviorClass]]) -> ConfusionMatrix:
    """The 4×4 confusion matrix of (gold, predicted) pairs."""
    size = len(BEHAVIOR_CLASSES)
    counts = [[0] * size for _ in range(size)]
    for gold, predicted in pairs:
        counts[BEHAVIOR_CLASSES.index(gold)][BEHAVIOR_CLASSES.index(predicted)] += 1
    return ConfusionMatrix(tuple(tuple(row) for row in counts))


@dataclass(frozen=True)
class BehaviorReport:
    """Behaviour over a run: every session's turns, the rates, the gold scores."""

    sessions: list[SessionTurns]
    rates: HallucinationRates
    matrix: ConfusionMatrix


def behavior_report(store: SessionStore, run: str | None) -> BehaviorReport:
    """Classify every turn of ``run`` and score what can be scored."""
    sessions = run_turns(store, run)
    return BehaviorReport(sessions, hallucination_rates(sessions), confusion(gold_pairs(sessions)))
