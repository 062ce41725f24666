"""BFCL multi-turn scores of a run: each entry's turn checks read back, stored, and the figures.

A multi-turn entry is one session; at every turn's end the runner stores the
check of the conversation so far (``TurnEndedEvent.check``). After a run,
``score_multi_turn_run`` stores one grade per session (grader
``bfcl:multi_turn``, one vote): the entry passes when every turn ended and the
last check passed (science.md §6); ``passed_official`` is bfcl-eval's own
reading, which never applies the empty-turn rule and lets a long-context
entry's model and ground truth share BFCL's padding records
(``multi_turn_check``). An entry with fewer ended
turns than it has (the step limit, a reply cut off) is ``force_terminated``.

Each turn whose ground truth is empty (the model cannot do it: a parameter or
a function is missing) gets one reading, the first that holds of:

1. ``guessed``: a call with an argument value the conversation never gave;
2. ``called``: a call, every value given;
3. ``attempted``: a malformed call (``IFE``), or the turn's last reply is a
   call attempt by the intent rules of science.md §3 (``classify_reply``);
4. ``asked``: a question to a person (``ask_human``), or the last reply is a
   follow-up question;
5. ``declined``: the last reply says it cannot do this;
6. ``answered``: anything else.

Beside the reading: whether the turn asked a person at all (``asked_any``),
and whether a call named a function not offered yet (``called_missing``) or
used one that is (``misused``). Sessions that ended in error are not scored,
and counted; so are sessions not finished.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aah.benchmark.bfcl.multi_turn_tasks import MultiTurnTask
from aah.benchmark.bfcl.tasks import MULTI_TURN_CATEGORIES, BfclTask
from aah.benchmark.when2call import original_tool_name
from aah.events import excerpt
from aah.scoring import Proportion, base_task_id, wilson
from aah.scoring.behavior import classify_reply
from aah.store import CallStep, SessionStore, TurnMark, Verdict
from aah.tools import ASK_HUMAN, BUILTIN_TOOLS

GRADER = "bfcl:multi_turn"
GRADER_VERSION = "1"
REPLY_CHARS = 1_000
FORCE_TERMINATED = "force_terminated"
# An empty-ground-truth turn's readings, in precedence order.
READINGS = ("guessed", "called", "attempted", "asked", "declined", "answered")
# A session in one of these has ended and holds what its turns did.
ENDED = frozenset({"finished", "skipped", "step_limit", "cut_off", "terminated"})
MISS_PARAM = "multi_turn_miss_param"
MISS_FUNC = "multi_turn_miss_func"
MISS_PARAM_READINGS = ("asked", "declined", "guessed", "attempted", "called", "answered")
# The multi-turn figures of a run, in the order reports show them.
MULTI_TURN_FIGURES = (
    "mt_accuracy",
    # Per category by its BFCL name, as ``ast_<category>``: ``mt_multi_turn_base``...
    *(f"mt_{category}" for category in MULTI_TURN_CATEGORIES),
    "mt_accuracy_official",
    *(f"mt_{category}_official" for category in MULTI_TURN_CATEGORIES),
    *(f"miss_param_{reading}" for reading in MISS_PARAM_READINGS),
    "miss_param_asked_any",
    "miss_func_noticed",
    "miss_func_called_missing",
    "miss_func_misused",
)
_INDEX = re.compile(r"(\d+)$")


def score_multi_turn_run(
    store: SessionStore, run: str, tasks: Sequence[BfclTask | MultiTurnTask]
) -> int:
    """Read and store the turn checks of every multi-turn session of ``run`` not yet scored.

    Single-turn items among ``tasks`` are left to ``score_bfcl_run``. The
    run's steps, marks and grades are read in bulk and the grades written in
    one transaction.

    Returns:
        How many sessions were scored now.
    """
    by_id = {task.id: task for task in tasks if isinstance(task, MultiTurnTask)}
    with store.queries() as queries:
        sessions = queries.session_tasks([run])
        done = {session_id for session_id, _ in queries.grade_votes([run], GRADER)}
        steps: dict[str, list[CallStep | TurnMark]] = {}
        for step in queries.call_steps([run]):
            steps.setdefault(step.session_id, []).append(step)
        for mark in queries.turn_marks([run]):
            steps.setdefault(mark.session_id, []).append(mark)
    grades: list[tuple[str, list[Any], Verdict]] = []
    for session_id, task_id, status in sessions:
        task = by_id.get(base_task_id(task_id or ""))
        # A session in error is run again by the next run of the command; one
        # still running has turns to come.
        if task is None or status not in ENDED or session_id in done:
            continue
        ordered = sorted(steps.get(session_id, []), key=lambda step: step.seq)
        vote = entry_vote(task, ordered)
        grades.append((session_id, [vote], "pass" if vote["passed"] else "fail"))
    return store.add_grades(GRADER, GRADER_VERSION, grades)


@dataclass
class _TurnActivity:
    """What one turn of a session did: its replies, its tool calls, whether it asked."""

    replies: list[CallStep] = field(default_factory=list)
    tools: list[CallStep] = field(default_factory=list)
    asked: bool = False


def entry_vote(task: MultiTurnTask, steps: Sequence[CallStep | TurnMark]) -> dict[str, Any]:
    """What one session did on one entry, as the stored vote.

    Args:
        task: The entry.
        steps: The session's model and tool calls and turn marks, in seq order.
    """
    activity: dict[int, _TurnActivity] = {0: _TurnActivity()}
    checks: dict[int, Mapping[str, Any]] = {}
    stopped: str | None = None
    turn = 0
    for step in steps:
        if isinstance(step, TurnMark):
            if step.kind == "user_turn" and step.turn is not None:
                turn = step.turn
                activity.setdefault(turn, _TurnActivity())
            elif step.kind == "turn_ended" and step.turn is not None:
                checks[step.turn] = step.check or {}  # a resumed turn's last check wins
            elif step.kind == "human_question":
                activity[turn].asked = True
            elif step.kind == "stopped":
                stopped = step.reason or "stopped"
        elif step.kind == "model_call" and step.purpose == "agent":
            activity[turn].replies.append(step)
        elif step.kind == "tool_call":
            activity[turn].tools.append(step)
            activity[turn].asked |= step.tool == ASK_HUMAN
    turns = len(task.turns)
    ended = sum(1 for index in checks if 0 <= index < turns)
    last = checks.get(max(checks)) if checks else None
    complete = ended == turns and last is not None
    passed = complete and bool(last and last.get("passed"))
    passed_official = complete and bool(last and last.get("passed_official"))
    error_type = None if last is None else last.get("error_type")
    failed_turn = None if last is None else last.get("failed_turn")
    reason = "" if last is None else str(last.get("reason") or "")
    if not complete:
        error_type = FORCE_TERMINATED
        if failed_turn is None:
            failed_turn = ended
        stop = f" ({stopped})" if stopped else ""
        reason = f"{ended} of {turns} turns ended{stop}" + (f"; {reason}" if reason else "")
    return {
        "id": task.id,
        "category": task.category,
        "language": "en",
        "turns": turns,
        "turns_ended": ended,
        "passed": passed,
        "passed_official": passed_official,
        "error_type": error_type if not passed else None,
        "failed_turn": failed_turn if not passed else None,
        "reason": reason,
        "restored": any(bool(check.get("restored")) for check in checks.values()),
        "empty_turns": [
            empty_turn_reading(task, index, activity[index], checks.get(index))
            for index in range(turns)
            if not task.ground_truth[index] and index in activity
        ],
    }


def empty_turn_reading(
    task: MultiTurnTask, turn: int, did: _TurnActivity, check: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One empty-ground-truth turn's reading (see the module docstring), as the vote keeps it."""
    offered = task.functions_at(turn)
    calls = _turn_calls(did, check, {tool.original for tool in offered})
    reply = _last_reply(did.replies)
    text = (reply.raw or reply.text or "") if reply is not None else ""
    names = [tool.name for tool in offered] + [ASK_HUMAN]
    label = classify_reply(text, names).label
    malformed = any(step.check == "IFE" for step in did.tools)
    if any(call.get("guessed") for call in calls):
        reading = "guessed"
    elif calls:
        reading = "called"
    elif malformed or label == "tool_call":
        reading = "attempted"
    elif did.asked or label == "request_for_info":
        reading = "asked"
    elif label == "cannot_answer":
        reading = "declined"
    else:
        reading = "answered"
    return {
        "turn": turn,
        "ended": check is not None,
        "reading": reading,
        "asked_any": did.asked or label == "request_for_info",
        "called_missing": any(call.get("offered") is False for call in calls),
        "misused": any(call.get("offered") is True for call in calls),
        "calls": [str(call.get("name")) for call in calls],
        "reply": excerpt(_shown(reply, text), REPLY_CHARS),
    }


def _turn_calls(
    did: _TurnActivity, check: Mapping[str, Any] | None, offered: set[str]
) -> list[Mapping[str, Any]]:
    """The turn's decoded BFCL calls: the check's, or (a turn that never ended) its tool calls.

    Without a check, whether a value was guessed is unknown: none is taken as guessed.
    """
    stored = check.get("calls") if check is not None else None
    if isinstance(stored, list):
        return [call for call in stored if isinstance(call, Mapping)]
    names = [
        original_tool_name(step.tool)
        for step in did.tools
        if step.tool is not None and step.tool not in BUILTIN_TOOLS and step.check != "IFE"
    ]
    return [{"name": name, "offered": name in offered, "guessed": []} for name in names]


def _shown(reply: CallStep | None, raw: str) -> str:
    """What a reply said: its text, or its raw text when calls left no text."""
    if reply is None:
        return ""
    return reply.text or raw


def _last_reply(replies: Sequence[CallStep]) -> CallStep | None:
    """The turn's last reply; a reply cut at its length limit only when no other is left."""
    whole = [reply for reply in replies if not reply.cut_off] or list(replies)
    return whole[-1] if whole else None


# -- figures from the votes -----------------------------------------------------


@dataclass(frozen=True)
class EmptyTurnReply:
    """The last reply on a turn whose ground truth is empty, and how it reads."""

    run: str
    id: str
    category: str
    turn: int
    reading: str
    reply: str


@dataclass(frozen=True)
class MultiTurnCounts:
    """How one run's multi-turn figures were counted.

    Attributes:
        scored: Entries (sessions) scored.
        errors: Sessions that ended in error: not scored.
        unscored: Other sessions without a score (not finished, or not scored yet).
        restored: Scored entries with a turn checked on state rebuilt from a checkpoint.
        empty_turns: Every empty-ground-truth turn's last reply, by entry and turn.
    """

    scored: int
    errors: int
    unscored: int
    restored: int
    empty_turns: list[EmptyTurnReply] = field(default_factory=list)


def multi_turn_figures(votes: Sequence[Mapping[str, Any]]) -> dict[str, Proportion]:
    """The figures of ``MULTI_TURN_FIGURES`` that have items, from the votes of one run."""
    by_category: dict[str, list[Mapping[str, Any]]] = {c: [] for c in MULTI_TURN_CATEGORIES}
    for vote in votes:
        by_category.setdefault(str(vote.get("category")), []).append(vote)
    figures: dict[str, Proportion] = {}
    for reading in ("", "_official"):
        key = "passed" + reading
        figures[f"mt_accuracy{reading}"] = _share(votes, lambda v, key=key: v.get(key) is True)
        for category in MULTI_TURN_CATEGORIES:
            figures[f"mt_{category}{reading}"] = _share(
                by_category[category], lambda v, key=key: v.get(key) is True
            )
    param = _empty_turns(by_category[MISS_PARAM])
    for name in MISS_PARAM_READINGS:
        figures[f"miss_param_{name}"] = _share(param, lambda t, name=name: t.get("reading") == name)
    figures["miss_param_asked_any"] = _share(param, lambda t: bool(t.get("asked_any")))
    func = _empty_turns(by_category[MISS_FUNC])
    figures["miss_func_noticed"] = _share(func, lambda t: t.get("reading") in ("asked", "declined"))
    figures["miss_func_called_missing"] = _share(func, lambda t: bool(t.get("called_missing")))
    figures["miss_func_misused"] = _share(func, lambda t: bool(t.get("misused")))
    return {name: figures[name] for name in MULTI_TURN_FIGURES if figures[name].n}


def multi_turn_counts(
    run: str, votes: Sequence[Mapping[str, Any]], errors: int, unscored: int
) -> MultiTurnCounts:
    """The counts beside one run's figures, and its empty-turn replies in entry order."""
    replies = [
        EmptyTurnReply(
            run,
            str(vote.get("id")),
            str(vote.get("category")),
            int(turn.get("turn") or 0),
            str(turn.get("reading")),
            str(turn.get("reply") or ""),
        )
        for vote in sorted(votes, key=_entry_order)
        for turn in _empty_turns([vote])
    ]
    restored = sum(1 for vote in votes if vote.get("restored"))
    return MultiTurnCounts(len(votes), errors, unscored, restored, replies)


def is_multi_turn_id(task_id: str) -> bool:
    """Whether a session's task id names a multi-turn entry (``multi_turn_base_0#epoch2``)."""
    return base_task_id(task_id).rsplit("_", 1)[0] in MULTI_TURN_CATEGORIES


def _empty_turns(votes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    turns = [turn for vote in votes for turn in vote.get("empty_turns") or ()]
    return [turn for turn in turns if isinstance(turn, Mapping)]


def _share(items: Sequence[Mapping[str, Any]], counts: Any) -> Proportion:
    return wilson(sum(1 for item in items if counts(item)), len(items))


def _entry_order(vote: Mapping[str, Any]) -> tuple[int, int, str]:
    """Categories in BFCL's order, entries by number (``_9`` before ``_10``)."""
    category = str(vote.get("category"))
    rank = MULTI_TURN_CATEGORIES.index(category) if category in MULTI_TURN_CATEGORIES else 99
    entry = str(vote.get("id"))
    found = _INDEX.search(entry)
    return (rank, int(found.group(1)) if found else -1, entry)
