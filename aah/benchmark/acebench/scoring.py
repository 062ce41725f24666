"""ACEBench Special scores of a run: each reply read, the reading stored, figures read back.

A run has one reading (``--reading``):

- ``acebench``: the reply to upstream's special prompt, scored by upstream's
  string rules (``upstream.special_eval``): right or wrong, and the error
  type (``error_detection``, ``error_correction``);
- ``aah``: the first agent turn under native tool calling with ``ask_human``
  offered, put in a behaviour class by the rules (science.md §3), and right
  when the class is the one the item needs and says what it must:
  incomplete, a follow-up question naming every missing parameter (each a
  blocker, §8); error_param, a question or a refusal naming each bad value
  as written; irrelevant, a refusal (``cannot_answer``).

Each reading is stored as a grade of the session (``grader_model``
``acebench:upstream`` or ``acebench:behavior``), its one vote holding the
item's language and category and what was found; the figures come from the
store alone. A category's accuracy has its Wilson interval; upstream's
summary is the unweighted mean of the three categories.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from aah.benchmark.acebench.blockers import item_blockers
from aah.benchmark.acebench.tasks import CATEGORIES, LANGUAGES, AceTask
from aah.benchmark.acebench.upstream import ERROR_TYPES, special_eval
from aah.events import Event, HumanQuestionEvent, ModelCallEvent, ToolCallEvent
from aah.scoring import Proportion, base_task_id, rule_reading, wilson
from aah.scoring.behavior import BEHAVIOR_CLASSES, Classification, classify_reply, turn_class
from aah.store import STOPPED_STATUSES
from aah.tools import ASK_HUMAN

if TYPE_CHECKING:
    from aah.store import SessionRecord, SessionStore

Reading = Literal["acebench", "aah"]
READINGS: tuple[Reading, ...] = ("acebench", "aah")
GRADERS: dict[Reading, str] = {"acebench": "acebench:upstream", "aah": "acebench:behavior"}
VERSIONS: dict[Reading, str] = {"acebench": "special_eval", "aah": "rules"}
# The class each category needs under the aah reading (error_param: either).
NEEDED: dict[str, tuple[str, ...]] = {
    "incomplete": ("request_for_info",),
    "error_param": ("request_for_info", "cannot_answer"),
    "irrelevant": ("cannot_answer",),
}


class Turn(NamedTuple):
    """A session's first agent turn: its text, its calls, and the questions it put."""

    text: str
    tool_calls: int
    called: list[str]
    questions: list[str]


def first_turn(events: Sequence[Event]) -> Turn | None:
    """The first agent turn among a session's events (seq order); None if it took none."""
    for index, event in enumerate(events):
        if isinstance(event, ModelCallEvent) and event.purpose == "agent":
            called: list[str] = []
            questions: list[str] = []
            for later in events[index + 1 :]:
                if isinstance(later, ModelCallEvent):
                    break
                if isinstance(later, ToolCallEvent):
                    called.append(later.tool)
                elif isinstance(later, HumanQuestionEvent):
                    called.append(ASK_HUMAN)
                    questions.append(later.question)
            return Turn(event.text, event.n_tool_calls, called, questions)
    return None


_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)


def _squeezed(text: str) -> str:
    """Lower case, no spaces, ``_`` or punctuation: ``propertyDetails`` ~ ``property details``."""
    return _NOT_WORD.sub("", text.casefold())


def names_parameter(text: str, parameter: str) -> bool:
    """Whether ``text`` names ``parameter`` (its words run together, in any case)."""
    wanted = _squeezed(parameter)
    return bool(wanted) and wanted in _squeezed(text)


def upstream_vote(task: AceTask, reply: str) -> dict[str, Any]:
    """The acebench reading of ``reply``: upstream's verdict, as a stored vote."""
    verdict = special_eval(reply, task.ground_truth, task.category)
    return {
        "reading": "acebench",
        "lang": task.lang,
        "category": task.category,
        "right": verdict.valid,
        "error_type": verdict.error_type,
        "error": verdict.error,
    }


def behavior_vote(task: AceTask, turn: Turn | None, tool_names: Sequence[str]) -> dict[str, Any]:
    """The aah reading of a first turn: its class, the blockers it named, right or wrong."""
    if turn is None:
        label = Classification("cannot_answer", "awareness_no")
        asked = ""
    else:
        label = (
            classify_reply(turn.text, tool_names)
            if turn.tool_calls == 0
            else turn_class(turn.tool_calls, turn.text, turn.called)
        )
        asked = "\n".join([turn.text, *turn.questions])
    blockers = item_blockers(task)
    # Named when its name's words run together are in the turn, or the rules of
    # the asking figures read a question as asking for it (science.md §8).
    addressed = [
        b for b in blockers if names_parameter(asked, b.name) or rule_reading(asked, b) is True
    ]
    right = label.label in NEEDED[task.category]
    if task.category == "incomplete":
        right = right and len(addressed) == len(blockers)
    elif task.category == "error_param" and not isinstance(task.ground_truth, str):
        values = [v for vs in task.ground_truth.values() for v in vs]
        right = right and all(v.casefold() in asked.casefold() for v in values)
    return {
        "reading": "aah",
        "lang": task.lang,
        "category": task.category,
        "right": right,
        "class": label.label,
        "rule": label.rule,
        "blockers": len(blockers),
        "addressed": len(addressed),
        "questions": len(turn.questions) if turn is not None else 0,
        "called": turn.called if turn is not None else [],
    }


def offered_names(task: AceTask, aah: bool) -> list[str]:
    """The tool names the model saw for ``task`` (``ask_human`` with Aah on)."""
    from aah.benchmark.acebench.tools import offered_tools

    return [tool.name for tool in offered_tools(task)] + ([ASK_HUMAN] if aah else [])


def label_run(
    store: SessionStore, run: str, tasks: Sequence[AceTask], reading: Reading
) -> tuple[int, list[str]]:
    """Read and store every ended session of ``run`` not yet read; lines on what was not.

    Returns:
        How many sessions were read now, and one line per session left unread.
    """
    by_id = {task.id: task for task in tasks}
    grader = GRADERS[reading]
    done = 0
    problems: list[str] = []
    for session in store.list_sessions(run=run):
        if session.status not in ("finished", "skipped", *STOPPED_STATUSES):
            # Ended in error or not yet ended: a later run of the same command reads it.
            continue
        task = by_id.get(base_task_id(session.task_id or ""))
        if task is None:
            problems.append(f"session {session.id}: task {session.task_id} is not in the data")
            continue
        if any(grade.grader_model == grader for grade in store.grades(session.id)):
            continue
        turn = first_turn(store.events(session.id))
        if reading == "acebench":
            vote = upstream_vote(task, turn.text if turn is not None else "")
        else:
            vote = behavior_vote(task, turn, offered_names(task, session.aah))
        _store(store, session, grader, VERSIONS[reading], vote)
        done += 1
    return done, problems


def _store(
    store: SessionStore, session: SessionRecord, grader: str, version: str, vote: dict[str, Any]
) -> None:
    store.add_grade(session.id, grader, version, [vote], "pass" if vote["right"] else "fail")


# -- scores from the store ------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One language and category of a run: accuracy, upstream's error types, classes.

    Attributes:
        lang: ``en`` or ``zh``.
        category: ``incomplete``, ``error_param`` or ``irrelevant``.
        accuracy: Right replies among those read, with the Wilson interval.
        error_types: Wrong replies by upstream's error type (acebench reading).
        classes: Replies by behaviour class (aah reading).
        blockers: Missing parameters of the items read (aah reading, incomplete).
        addressed: Of those, the ones a question named.
    """

    lang: str
    category: str
    accuracy: Proportion
    error_types: Mapping[str, int]
    classes: Mapping[str, int]
    blockers: int
    addressed: int


@dataclass(frozen=True)
class AceScores:
    """One run's ACEBench Special figures under its reading.

    Attributes:
        run: The run.
        reading: ``acebench`` or ``aah``.
        aah: Whether ``ask_human`` was offered.
        labelled: Sessions read.
        unlabelled: Sessions of the run not read (ended in error, or not read yet).
        cells: Per language and category, in data order.
    """

    run: str
    reading: str
    aah: bool | None
    labelled: int
    unlabelled: int
    cells: tuple[Cell, ...]

    def summary(self, lang: str | None = None) -> float | None:
        """Upstream's summary: the unweighted mean of the three categories' accuracy.

        Over one language, or both pooled per category (``lang`` None); None
        when a category has no item read.
        """
        values = []
        for category in CATEGORIES:
            right = sum(
                c.accuracy.k
                for c in self.cells
                if c.category == category and lang in (None, c.lang)
            )
            total = sum(
                c.accuracy.n
                for c in self.cells
                if c.category == category and lang in (None, c.lang)
            )
            if total == 0:
                return None
            values.append(right / total)
        return sum(values) / len(values)


def run_scores(store: SessionStore, run: str, aah: bool | None = None) -> list[AceScores]:
    """The run's figures, once per reading stored for it (acebench first)."""
    sessions = store.list_sessions(run=run)
    by_reading: dict[Reading, list[Mapping[str, Any]]] = {}
    for session in sessions:
        latest: dict[Reading, Mapping[str, Any]] = {}
        for grade in store.grades(session.id):  # oldest first: the last one wins
            for reading, grader in GRADERS.items():
                vote = grade.votes[0] if grade.votes else None
                if grade.grader_model == grader and isinstance(vote, Mapping):
                    latest[reading] = vote
        for reading, vote in latest.items():
            by_reading.setdefault(reading, []).append(vote)
    return [
        _scores(run, reading, aah, by_reading[reading], len(sessions))
        for reading in READINGS
        if reading in by_reading
    ]


def _scores(
    run: str, reading: str, aah: bool | None, votes: Sequence[Mapping[str, Any]], sessions: int
) -> AceScores:
    cells = []
    for lang in LANGUAGES:
        for category in CATEGORIES:
            mine = [v for v in votes if v.get("lang") == lang and v.get("category") == category]
            if not mine:
                continue
            cells.append(
                Cell(
                    lang=lang,
                    category=category,
                    accuracy=wilson(sum(v.get("right") is True for v in mine), len(mine)),
                    error_types=dict(
                        Counter(
                            str(v["error_type"]) for v in mine if v.get("error_type") in ERROR_TYPES
                        )
                    ),
                    classes=dict(
                        Counter(str(v["class"]) for v in mine if v.get("class") in BEHAVIOR_CLASSES)
                    ),
                    blockers=sum(int(v.get("blockers") or 0) for v in mine),
                    addressed=sum(int(v.get("addressed") or 0) for v in mine),
                )
            )
    labelled = sum(c.accuracy.n for c in cells)
    return AceScores(run, reading, aah, labelled, sessions - labelled, tuple(cells))


def scores_to_json(scores: AceScores) -> dict[str, Any]:
    """One run's figures as plain JSON values.

    Shape: ``{"run", "reading": "acebench" | "aah", "aah": bool | null,
    "labelled": int, "unlabelled": int, "summary": {"en", "zh", "both": float | null},
    "cells": [{"lang", "category", "accuracy": P, "error_types": {type: int},
    "classes": {class: int}, "blockers": int, "blockers_addressed": int}]}``,
    where ``P`` is ``{"k", "n", "value", "low", "high"}`` (a Wilson proportion).
    """
    return {
        "run": scores.run,
        "reading": scores.reading,
        "aah": scores.aah,
        "labelled": scores.labelled,
        "unlabelled": scores.unlabelled,
        "summary": {
            "en": scores.summary("en"),
            "zh": scores.summary("zh"),
            "both": scores.summary(None),
        },
        "cells": [
            {
                "lang": cell.lang,
                "category": cell.category,
                "accuracy": cell.accuracy._asdict(),
                "error_types": {t: cell.error_types.get(t, 0) for t in ERROR_TYPES},
                "classes": {c: cell.classes.get(c, 0) for c in BEHAVIOR_CLASSES},
                "blockers": cell.blockers,
                "blockers_addressed": cell.addressed,
            }
            for cell in scores.cells
        ],
    }
