"""When2Call scores of a run: first turns labelled, stored, and scored against gold.

Each session's first agent turn is put in one of the four behaviour classes
(science.md §3) by the rules (``aah.scoring.behavior``) or by the LLM judge,
and the label is stored as a grade of the session: ``grader_model`` names the
labeller (``when2call:rules`` or ``when2call-judge:<model>``), the one vote
holds the label, the rule, the gold behaviour and what the turn called, and
the verdict is ``pass`` when the label is the gold behaviour. The run's
figures are then read back from the store alone:

- accuracy, per-class precision / recall / F1, macro F1 (over the classes
  that occur as gold or predicted, as scikit-learn's macro average), and the
  4x4 confusion matrix (gold rows: tool_call, request_for_info, cannot_answer);
- tool hallucination: a tool call (or an attempted one) on a question that
  offers no tools (``ask_human`` is a question, not a tool);
- answer hallucination: a direct answer (the gold is never ``direct``);
- target tool: of the tool calls on ``tool_call`` questions, the share whose
  calls include the question's target tool.

With Aah on, a call to ``ask_human`` is a follow-up question. A session the
awareness gate skipped (only with ``--awareness``) declined the task: it is
labelled ``cannot_answer`` (rule ``awareness_no``). Sessions that ended in
error are not labelled and are counted apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from aah.events import Event, HumanQuestionEvent, ModelCallEvent, ToolCallEvent
from aah.scoring import Proportion, base_task_id, wilson
from aah.scoring.behavior import (
    BEHAVIOR_CLASSES,
    BehaviorClass,
    Classification,
    ConfusionMatrix,
    classify_reply,
    confusion,
    turn_class,
)
from aah.store import SessionRecord, SessionStore
from aah.tools import ASK_HUMAN

if TYPE_CHECKING:
    from aah.benchmark.when2call import When2CallTask
    from aah.llm import ChatClient, ModelConfig

RULE_GRADER = "when2call:rules"
RULES_VERSION = "rules"
JUDGE_PREFIX = "when2call-judge:"


class PublishedFigure(NamedTuple):
    """A figure the When2Call paper published, shown beside a run's for reference."""

    model: str
    macro_f1: float
    tool_hallucination: float
    protocol: str


# From the paper's LLM-as-judge evaluation (Ross et al., NAACL 2025).
PUBLISHED = (
    PublishedFigure("GPT-4o", 61.3, 26.0, "LLM-as-judge"),
    PublishedFigure("GPT-4o-mini", 52.9, 41.0, "LLM-as-judge"),
)


class FirstTurn(NamedTuple):
    """What a session's first agent turn did: its text, its calls and what they named."""

    text: str
    tool_calls: int
    called: list[str]


def first_turn(events: Sequence[Event]) -> FirstTurn | None:
    """The first agent turn among a session's events (seq order); None if it took none.

    Its calls are the tool-call and human-question events between its model
    call and the next one (a valid ``ask_human`` call leaves a question).
    """
    for index, event in enumerate(events):
        if isinstance(event, ModelCallEvent) and event.purpose == "agent":
            called: list[str] = []
            for later in events[index + 1 :]:
                if isinstance(later, ModelCallEvent):
                    break
                if isinstance(later, ToolCallEvent):
                    called.append(later.tool)
                elif isinstance(later, HumanQuestionEvent):
                    called.append(ASK_HUMAN)
            return FirstTurn(event.text, event.n_tool_calls, called)
    return None


def offered_names(task: When2CallTask, aah: bool) -> list[str]:
    """The tool names the model saw for ``task`` (``ask_human`` with Aah on)."""
    return [tool.name for tool in task.tools] + ([ASK_HUMAN] if aah else [])


def rule_label(turn: FirstTurn, tool_names: Sequence[str]) -> Classification:
    """The rules' class of a first turn; a reply without calls is read with the tool names."""
    if turn.tool_calls == 0:
        return classify_reply(turn.text, tool_names)
    return turn_class(turn.tool_calls, turn.text, turn.called)


def _vote(task: When2CallTask, label: Classification, turn: FirstTurn | None) -> dict[str, Any]:
    return {
        "class": label.label,
        "rule": label.rule,
        "gold": task.gold,
        "tools_offered": len(task.tools),
        "called": turn.called if turn is not None else [],
        "target_tool": task.target_tool_name,
    }


def _todo(
    store: SessionStore, run: str, tasks: Sequence[When2CallTask], grader: str
) -> list[tuple[SessionRecord, When2CallTask]]:
    by_id = {task.id: task for task in tasks}
    todo = []
    for session in store.list_sessions(run=run):
        task = by_id.get(base_task_id(session.task_id or ""))
        if task is None or session.status not in ("finished", "skipped"):
            continue
        if any(grade.grader_model == grader for grade in store.grades(session.id)):
            continue  # labelled by an earlier pass over this run
        todo.append((session, task))
    return todo


def _store_label(
    store: SessionStore,
    session: SessionRecord,
    task: When2CallTask,
    grader: str,
    version: str,
    label: Classification,
    turn: FirstTurn | None,
) -> None:
    vote = [_vote(task, label, turn)]
    store.add_grade(
        session.id, grader, version, vote, "pass" if label.label == task.gold else "fail"
    )


def label_run_with_rules(store: SessionStore, run: str, tasks: Sequence[When2CallTask]) -> int:
    """Label and store every first turn of ``run`` not yet labelled by the rules.

    Returns:
        How many sessions were labelled now.
    """
    todo = _todo(store, run, tasks, RULE_GRADER)
    for session, task in todo:
        turn = first_turn(store.events(session.id))
        if session.status == "skipped" or turn is None:
            label = Classification("cannot_answer", "awareness_no")
        else:
            label = rule_label(turn, offered_names(task, session.aah))
        _store_label(store, session, task, RULE_GRADER, RULES_VERSION, label, turn)
    return len(todo)


async def label_run_with_judge(
    store: SessionStore,
    run: str,
    tasks: Sequence[When2CallTask],
    config: ModelConfig,
    *,
    concurrency: int = 8,
    client: ChatClient | None = None,
) -> int:
    """Label and store, with the LLM judge, every first turn of ``run`` it has not labelled.

    Turns with calls need no judge (a call, or a question when all go to
    ``ask_human``); the judge reads the replies without calls.

    Returns:
        How many sessions were labelled now.

    Raises:
        AahError: the judge model cannot be reached or refuses the request.
    """
    from aah.llm import ChatClient
    from aah.scoring.behavior import classify_with_llm, load_judge_prompt

    grader = f"{JUDGE_PREFIX}{config.model}"
    version = load_judge_prompt().version
    todo = _todo(store, run, tasks, grader)
    gate = asyncio.Semaphore(concurrency)
    judge = client or ChatClient(config)

    async def one(session: SessionRecord, task: When2CallTask) -> None:
        turn = first_turn(store.events(session.id))
        if session.status == "skipped" or turn is None:
            label = Classification("cannot_answer", "awareness_no")
        elif turn.tool_calls > 0:
            label = rule_label(turn, ())
        else:
            async with gate:
                names = offered_names(task, session.aah)
                label = await classify_with_llm(turn.text, names, config, client=judge)
        _store_label(store, session, task, grader, version, label, turn)

    try:
        await asyncio.gather(*(one(session, task) for session, task in todo))
    finally:
        if client is None:
            await judge.aclose()
    return len(todo)


# -- scores from the store ------------------------------------------------------


@dataclass(frozen=True)
class When2CallScores:
    """One run's When2Call figures by one labeller.

    Attributes:
        run: The run.
        labeller: ``rules`` or ``judge <model>``.
        aah: Whether ``ask_human`` was offered (then a call to it is a question).
        labelled: Sessions with a label.
        unlabelled: Sessions of the run without one (ended in error, or not labelled yet).
        matrix: Gold x predicted counts (rows and columns: ``BEHAVIOR_CLASSES``).
        tool_hallucination: Tool calls among the questions offering no tools.
        answer_hallucination: Direct answers among all labelled questions.
        target_tool: Calls naming the target tool, among tool calls on
            ``tool_call`` questions.
    """

    run: str
    labeller: str
    aah: bool | None
    labelled: int
    unlabelled: int
    matrix: ConfusionMatrix
    tool_hallucination: Proportion
    answer_hallucination: Proportion
    target_tool: Proportion


class _Label(NamedTuple):
    gold: BehaviorClass
    predicted: BehaviorClass
    tools_offered: int
    called: list[str]
    target_tool: str | None


def run_scores(store: SessionStore, run: str, aah: bool | None = None) -> list[When2CallScores]:
    """The run's figures, once per labeller that labelled it (rules first)."""
    sessions = store.list_sessions(run=run)
    by_labeller: dict[str, list[_Label]] = {}
    for session in sessions:
        latest: dict[str, _Label] = {}
        for grade in store.grades(session.id):  # oldest first: the last one wins
            labeller = _labeller(grade.grader_model)
            label = _read_vote(grade.votes)
            if labeller is not None and label is not None:
                latest[labeller] = label
        for labeller, label in latest.items():
            by_labeller.setdefault(labeller, []).append(label)
    ordered = sorted(by_labeller, key=lambda name: (name != "rules", name))
    return [_scores(run, name, aah, by_labeller[name], len(sessions)) for name in ordered]


def _labeller(grader_model: str) -> str | None:
    if grader_model == RULE_GRADER:
        return "rules"
    if grader_model.startswith(JUDGE_PREFIX):
        return f"judge {grader_model.removeprefix(JUDGE_PREFIX)}"
    return None


def _read_vote(votes: Sequence[Any]) -> _Label | None:
    vote = votes[0] if votes and isinstance(votes[0], Mapping) else None
    if vote is None:
        return None
    gold, predicted = vote.get("gold"), vote.get("class")
    if gold not in BEHAVIOR_CLASSES or predicted not in BEHAVIOR_CLASSES:
        return None
    called = [str(name) for name in vote.get("called") or []]
    target = vote.get("target_tool")
    return _Label(gold, predicted, int(vote.get("tools_offered") or 0), called, target)


def _scores(
    run: str, labeller: str, aah: bool | None, labels: Sequence[_Label], sessions: int
) -> When2CallScores:
    no_tools = [label for label in labels if label.tools_offered == 0]
    calls = [label for label in labels if label.gold == label.predicted == "tool_call"]
    return When2CallScores(
        run=run,
        labeller=labeller,
        aah=aah,
        labelled=len(labels),
        unlabelled=sessions - len(labels),
        matrix=confusion((label.gold, label.predicted) for label in labels),
        tool_hallucination=wilson(
            sum(label.predicted == "tool_call" for label in no_tools), len(no_tools)
        ),
        answer_hallucination=wilson(
            sum(label.predicted == "direct" for label in labels), len(labels)
        ),
        target_tool=wilson(sum(label.target_tool in label.called for label in calls), len(calls)),
    )


def scores_to_json(scores: When2CallScores) -> dict[str, Any]:
    """One run's When2Call figures as plain JSON values.

    Shape: ``{"run": str, "labeller": "rules" | "judge <model>", "aah": bool | null,
    "labelled": int, "unlabelled": int, "accuracy": P, "macro_f1": float | null,
    "scores": {<class>: {"precision", "recall", "f1": float | null, "support": int}},
    "confusion": {"labels": [<class>, ...], "counts": [[int, ...], ...]},  # rows gold
    "tool_hallucination": P, "answer_hallucination": P, "target_tool": P}``, where
    ``P`` is ``{"k", "n", "value", "low", "high"}`` (a Wilson proportion).
    """
    matrix = scores.matrix
    return {
        "run": scores.run,
        "labeller": scores.labeller,
        "aah": scores.aah,
        "labelled": scores.labelled,
        "unlabelled": scores.unlabelled,
        "accuracy": matrix.accuracy._asdict(),
        "macro_f1": matrix.macro_f1,
        "scores": {c: matrix.scores(c)._asdict() for c in BEHAVIOR_CLASSES},
        "confusion": {
            "labels": list(BEHAVIOR_CLASSES),
            "counts": [list(row) for row in matrix.counts],
        },
        "tool_hallucination": scores.tool_hallucination._asdict(),
        "answer_hallucination": scores.answer_hallucination._asdict(),
        "target_tool": scores.target_tool._asdict(),
    }
