"""How well an agent asks (science.md §8): blockers, the questions that address them, the figures.

A **blocker** is one piece of information a task needs that the agent was
not given; each benchmark with blockers says which its tasks have
(``Benchmark.blockers``). A **question** is one ``ask_human`` call, or an
agent turn read as a follow-up question by the behaviour rules (§3). A
question **addresses** a blocker when answering it would supply that
information: read here by rules first (the parameter's name, its
description's key words, or the missing span's words appear in the
question), else by the majority-vote grader (``asking_grader``'s reading,
with its quorum), and both readings are kept.

The figures, per run, setting and category:

- question precision (questions that address at least one blocker / all
  questions, fully specified tasks included) and blocker recall (blockers
  addressed by some question / all blockers), each with its Wilson interval;
  Ask-F1, their harmonic mean (HiL-Bench, Scale AI 2026), with a seeded
  bootstrap interval over tasks (1,000 resamples);
- asked before acting (tasks with a blocker whose first question comes before
  the first tool call other than ``ask_human``) and the first question's
  position (model steps before it / the session's model steps; median and
  quartiles), after "Ask Early, Ask Late, Ask Right" (2026);
- the cost of asking: questions per task, person-seconds per task (a
  question's time from entering the queue to its answer, fallbacks included),
  the share of answers that were the fallback or "I don't know";
- blockers resolved per question (blockers addressed / questions).

This module imports nothing from ``aah.benchmark``: blockers arrive as values.
"""

from __future__ import annotations

import difflib
import random
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aah.events import (
    Event,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.scoring.behavior import classify_reply
from aah.scoring.intervals import Proportion, wilson

if TYPE_CHECKING:
    from aah.store import SessionStore

BOOTSTRAP_RESAMPLES = 1_000
BOOTSTRAP_SEED = 20_260_401
CONFIDENCE = 0.95
# Tools of aah's own that are no action on the task.
_OWN_TOOLS = frozenset({"ask_human", "find_tools"})
_FALLBACK_BY = frozenset({"deadline-fallback"})
_IDK = re.compile(r"^\W*(i\s+(?:do\s*n[o']?t|don’t)\s+know|idk)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SPLIT_NAME = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.\s]+")
# Words that say nothing about which information is meant.
_STOP = frozenset(
    """a an the and or of to in on at for from by with without into onto as is are be been was
    were it its this that these those there their them they you your yours we our us i me my
    do does did done can could would should will shall may might must please provide provided
    give given specify specified specific which what when where who whom whose why how any all
    some each every other more most such than then also only just not no yes if else e g eg ie
    example examples format formatted default defaults value values string number integer
    boolean list array object field parameter parameters param optional required etc like
    user users use used using want wants need needs needed let know tell sure okay ok
    one two include includes including whether type types name names set get able""".split()
)
Reading = Literal["yes", "no"]


@dataclass(frozen=True)
class Blocker:
    """One piece of information a task needs that the agent was not given.

    Attributes:
        key: Its id within the task (``param:location``, ``span:1``).
        kind: ``parameter`` (a missing parameter) or ``span`` (words of the
            user's request the agent's request lacks).
        name: The parameter's name ("" for a span).
        text: The parameter's description, or the missing span itself.
        source: Which benchmark rule made it (``when2call request_for_info``...).
    """

    key: str
    kind: Literal["parameter", "span"]
    name: str
    text: str
    source: str = ""

    def to_json(self) -> dict[str, str]:
        """The blocker as a JSON object (what a session's context keeps)."""
        # "id", not "key": the store scrubs a field named "key" as a secret.
        return {
            "id": self.key,
            "kind": self.kind,
            "name": self.name,
            "text": self.text,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, value: Any) -> Blocker | None:
        """The blocker a stored JSON object holds, or None when it is not one."""
        if not isinstance(value, Mapping):
            return None
        kind = value.get("kind")
        key, name, text = value.get("id"), value.get("name", ""), value.get("text", "")
        if kind not in ("parameter", "span") or not isinstance(key, str) or not key:
            return None
        if not isinstance(name, str) or not isinstance(text, str):
            return None
        source = value.get("source", "")
        return cls(key, kind, name, text, source if isinstance(source, str) else "")


def parameter_blocker(name: str, description: str, source: str) -> Blocker:
    """The blocker of a missing parameter ``name``."""
    return Blocker(f"param:{name}", "parameter", name, " ".join(description.split()), source)


def missing_spans(full: str, given: str) -> list[str]:
    """The runs of words of ``full`` that ``given`` lacks (compared without case), in order.

    The same reading as the desk's diff of a user's request (the words it marks).
    """
    ours, theirs = full.split(), given.split()
    # As ``aah.ui.briefing.word_diff`` compares them, so the spans are the words the page marks.
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in ours], b=[w.lower() for w in theirs])
    return [
        " ".join(ours[a1:a2])
        for op, a1, a2, _b1, _b2 in matcher.get_opcodes()
        if op in ("replace", "delete") and a2 > a1
    ]


def span_blockers(full: str, given: str, source: str) -> list[Blocker]:
    """One blocker per span of ``full`` that ``given`` lacks, when it holds a key word."""
    spans = [span for span in missing_spans(full, given) if key_words(span)]
    return [Blocker(f"span:{i}", "span", "", span, source) for i, span in enumerate(spans)]


# -- the rules -----------------------------------------------------------------


def _stem(word: str) -> str:
    word = word.casefold()
    for ending in ("ies", "es", "s"):
        if len(word) > len(ending) + 2 and word.endswith(ending):
            return word[: -len(ending)] + ("y" if ending == "ies" else "")
    return word


def _words(text: str) -> set[str]:
    return {_stem(word) for word in _WORD.findall(text)}


def key_words(text: str) -> list[str]:
    """The words of ``text`` that say which information is meant (stemmed, in order).

    A description's example ("e.g. ...") is left out: its values are not the
    information's name.
    """
    head = re.split(r"\be\.?g\.|\bfor example\b|\bsuch as\b|\(", text, maxsplit=1)[0]
    seen: dict[str, None] = {}
    for word in _WORD.findall(head):
        stem = _stem(word)
        if len(stem) > 2 and stem not in _STOP and not stem.isdigit():
            seen.setdefault(stem, None)
    return list(seen)


def name_words(name: str) -> list[str]:
    """A parameter name's words (``maxResults``, ``max_results2``: max, result), digits dropped."""
    parts = (_stem(part.rstrip("0123456789")) for part in _SPLIT_NAME.split(name))
    return [part for part in parts if len(part) > 1 and part not in _STOP]


def rule_reading(question: str, blocker: Blocker) -> bool | None:
    """True when the rules read ``question`` as asking for ``blocker``; None: they cannot say.

    A parameter is asked for when its name is in the question (all its words,
    or its last word: ``departure_date``'s "date"), or two of the first four
    key words of its description (the only one, if it has one); a span when
    half its key words (at least one) are. The rules never say no: a question
    they do not match goes to the grader. On the hand-labelled corpus
    (tests/fixtures/asking_labels.jsonl) their yes is a person's yes 97% of the time.
    """
    words = _words(question)
    if blocker.kind == "parameter":
        parts = name_words(blocker.name)
        if parts and (parts[-1] in words or all(part in words for part in parts)):
            return True
        keys = key_words(blocker.text)[:4]
        if keys and sum(word in words for word in keys) >= min(2, len(keys)):
            return True
        return None
    keys = key_words(blocker.text)
    if keys and 2 * sum(word in words for word in keys) >= len(keys):
        return True
    return None


# -- sessions as questions -----------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One question an agent asked in a session.

    Attributes:
        seq: The seq of the event that holds it.
        text: The question as the agent wrote it.
        steps_before: Model steps of the agent before the one that asked it.
        via: ``ask_human`` or ``reply`` (a turn read as a follow-up question).
        seconds: Time from the question to its answer; None when not answered.
        fallback: Whether the answer was the fallback, "I don't know" or a decline.
    """

    seq: int
    text: str
    steps_before: int
    via: Literal["ask_human", "reply"]
    seconds: float | None = None
    fallback: bool = False


@dataclass(frozen=True)
class AskingTask:
    """One session as the asking figures read it.

    Attributes:
        session_id: The session.
        run: Its run.
        setting: Its setting.
        category: Its category ("" when the benchmark has none).
        aah: Whether Aah was on.
        blockers: What the task withheld ([] for a fully specified one).
        questions: Every question, in order.
        steps: The agent's model steps.
        first_action_seq: The seq of its first tool call other than aah's own; None if none.
        readings: Per question seq, per blocker key, the final reading.
    """

    session_id: str
    run: str
    setting: str
    category: str
    aah: bool
    blockers: tuple[Blocker, ...]
    questions: tuple[Question, ...]
    steps: int
    first_action_seq: int | None
    readings: Mapping[int, Mapping[str, bool]] = field(default_factory=dict)

    def addressed(self) -> set[str]:
        """The keys of the blockers some question addresses."""
        return {key for per in self.readings.values() for key, yes in per.items() if yes}

    def useful_questions(self) -> int:
        """Questions that address at least one blocker."""
        return sum(any(per.values()) for per in self.readings.values())

    def asked_before_acting(self) -> bool:
        """Whether the first question came before the first action (or no action came)."""
        if not self.questions:
            return False
        first = self.questions[0].seq
        return self.first_action_seq is None or first < self.first_action_seq

    def first_position(self) -> float | None:
        """Model steps before the first question / the session's model steps; None without one."""
        if not self.questions or self.steps <= 0:
            return None
        return min(self.questions[0].steps_before / self.steps, 1.0)


def session_questions(events: Sequence[Event]) -> tuple[list[Question], int, int | None]:
    """The questions of one session's ``events``, its agent model steps, its first action's seq.

    An ``ask_human`` call is a question (its answer's time and whether it was
    the fallback come from the answer event); an agent reply without calls
    that the behaviour rules read as a follow-up question is one too.
    """
    answers = {e.request_id: e for e in events if isinstance(e, HumanAnswerEvent)}
    questions: list[Question] = []
    steps = 0
    first_action: int | None = None
    for event in events:
        if isinstance(event, ModelCallEvent) and event.purpose == "agent":
            steps += 1
            if event.n_tool_calls == 0 and event.text.strip():
                label = classify_reply(event.text).label
                if label == "request_for_info":
                    questions.append(Question(event.seq, event.text, steps - 1, "reply"))
        elif isinstance(event, HumanQuestionEvent):
            answer = answers.get(event.request_id)
            questions.append(
                Question(
                    event.seq,
                    event.question,
                    max(steps - 1, 0),
                    "ask_human",
                    seconds=answer.seconds if answer is not None else None,
                    fallback=answer is not None and is_fallback(answer),
                )
            )
        elif isinstance(event, ToolCallEvent) and event.tool not in _OWN_TOOLS:
            if first_action is None:
                first_action = event.seq
    return questions, steps, first_action


def is_fallback(answer: HumanAnswerEvent) -> bool:
    """Whether an answer was the deadline's fallback, a decline or "I don't know"."""
    return (
        answer.declined
        or answer.answered_by in _FALLBACK_BY
        or bool(_IDK.match(answer.answer.strip()))
    )


GraderReadings = Mapping[tuple[int, str], bool | None]
"""The grader's reading per (question seq, blocker key); None: no quorum."""


def read_questions(
    questions: Sequence[Question],
    blockers: Sequence[Blocker],
    grader: GraderReadings | None = None,
) -> dict[int, dict[str, bool]]:
    """Per question, per blocker, whether it addresses it: the rules' yes, else the grader's.

    Where neither says yes (the rules cannot, the grader said no, had no
    quorum or was not asked) the question does not address the blocker.
    """
    readings: dict[int, dict[str, bool]] = {}
    for question in questions:
        per: dict[str, bool] = {}
        for blocker in blockers:
            ruled = rule_reading(question.text, blocker)
            graded = (grader or {}).get((question.seq, blocker.key))
            per[blocker.key] = bool(ruled) or bool(graded)
        readings[question.seq] = per
    return readings


def asking_task(
    session: Any,
    events: Sequence[Event],
    blockers: Sequence[Blocker],
    category: str = "",
    grader: GraderReadings | None = None,
) -> AskingTask:
    """One stored session (a ``SessionRecord``) with its events and blockers, read."""
    questions, steps, first_action = session_questions(events)
    return AskingTask(
        session_id=session.id,
        run=session.run or "",
        setting=session.setting or "",
        category=category,
        aah=bool(session.aah),
        blockers=tuple(blockers),
        questions=tuple(questions),
        steps=steps,
        first_action_seq=first_action,
        readings=read_questions(questions, blockers, grader),
    )


# -- the figures ---------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """Median and quartiles of a set of values; all None without values."""

    median: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True)
class BootF1:
    """Ask-F1 with its bootstrap interval over tasks; None where it cannot be computed."""

    value: float | None
    low: float | None
    high: float | None
    tasks: int


@dataclass(frozen=True)
class AskingFigures:
    """The asking figures of one cell (run, setting, category).

    Attributes:
        run, setting, category, aah: The cell.
        tasks: Sessions in it.
        blocked_tasks: Sessions with at least one blocker.
        precision: Questions addressing a blocker, of all questions.
        recall: Blockers addressed, of all blockers.
        ask_f1: Harmonic mean of precision and recall, bootstrap interval.
        before_acting: Tasks with a blocker whose first question came before acting.
        first_position: The first question's position (tasks with a question).
        questions_per_task: Mean questions per session.
        person_seconds_per_task: Mean seconds people (or the fallback) took per session.
        fallback_share: Answers that were the fallback or "I don't know", of answers.
        resolved_per_question: Blockers addressed / questions; None without questions.
        why: Per figure that cannot be computed, why (one line each).
        positions: Each task's first-question position (for a chart).
        benchmark: The benchmark the run ran ("" when not said).
    """

    run: str
    setting: str
    category: str
    aah: bool
    tasks: int
    blocked_tasks: int
    precision: Proportion
    recall: Proportion
    ask_f1: BootF1
    before_acting: Proportion
    first_position: Spread
    questions_per_task: float | None
    person_seconds_per_task: float | None
    fallback_share: Proportion
    resolved_per_question: float | None
    why: dict[str, str] = field(default_factory=dict)
    positions: tuple[float, ...] = ()
    benchmark: str = ""


def f1(precision: float | None, recall: float | None) -> float | None:
    """The harmonic mean of ``precision`` and ``recall``; 0 when both are 0, None if either is."""
    if precision is None or recall is None:
        return None
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _pooled_f1(tasks: Sequence[AskingTask]) -> float | None:
    questions = sum(len(t.questions) for t in tasks)
    blockers = sum(len(t.blockers) for t in tasks)
    precision = sum(t.useful_questions() for t in tasks) / questions if questions else None
    recall = sum(len(t.addressed()) for t in tasks) / blockers if blockers else None
    if precision is None and recall is not None:
        # No question at all: nothing asked well, nothing addressed.
        precision = 0.0
    return f1(precision, recall)


def bootstrap_f1(tasks: Sequence[AskingTask], seed: int = BOOTSTRAP_SEED) -> BootF1:
    """Ask-F1 over ``tasks`` with a 95% percentile bootstrap over tasks (seeded)."""
    value = _pooled_f1(tasks)
    if value is None:
        return BootF1(None, None, None, len(tasks))
    rng = random.Random(seed)
    values = sorted(
        v
        for v in (_pooled_f1(rng.choices(tasks, k=len(tasks))) for _ in range(BOOTSTRAP_RESAMPLES))
        if v is not None
    )
    if not values:
        return BootF1(value, None, None, len(tasks))
    tail = (1 - CONFIDENCE) / 2
    low = values[int(tail * (len(values) - 1))]
    high = values[int((1 - tail) * (len(values) - 1) + 0.5)]
    return BootF1(value, low, high, len(tasks))


def spread(values: Sequence[float]) -> Spread:
    """Median and quartiles (inclusive method) of ``values``."""
    if not values:
        return Spread(None, None, None, 0)
    if len(values) == 1:
        return Spread(values[0], values[0], values[0], 1)
    low, median, high = statistics.quantiles(values, n=4, method="inclusive")
    return Spread(median, low, high, len(values))


def asking_figures(tasks: Sequence[AskingTask]) -> AskingFigures:
    """The figures of one cell's ``tasks`` (every task from the same run, setting, category)."""
    first = tasks[0] if tasks else None
    questions = [q for t in tasks for q in t.questions]
    n_blockers = sum(len(t.blockers) for t in tasks)
    addressed = sum(len(t.addressed()) for t in tasks)
    blocked = [t for t in tasks if t.blockers]
    answered = [q for q in questions if q.seconds is not None]
    positions = [p for p in (t.first_position() for t in tasks) if p is not None]
    why: dict[str, str] = {}
    if not questions:
        why["precision"] = "no question was asked"
    if not n_blockers:
        why["recall"] = "no task withheld anything (no blockers)"
        why["before_acting"] = "no task had a blocker"
    if not answered:
        why["fallback_share"] = "no question was answered"
    if not positions:
        why["first_position"] = "no question was asked"
    ask = bootstrap_f1(tasks)
    if ask.value is None:
        why["ask_f1"] = why.get("recall", why.get("precision", "no tasks"))
    return AskingFigures(
        run=first.run if first else "",
        setting=first.setting if first else "",
        category=first.category if first else "",
        aah=first.aah if first else False,
        tasks=len(tasks),
        blocked_tasks=len(blocked),
        precision=wilson(sum(t.useful_questions() for t in tasks), len(questions)),
        recall=wilson(addressed, n_blockers),
        ask_f1=ask,
        before_acting=wilson(sum(t.asked_before_acting() for t in blocked), len(blocked)),
        first_position=spread(positions),
        questions_per_task=len(questions) / len(tasks) if tasks else None,
        person_seconds_per_task=(
            sum(q.seconds or 0.0 for q in answered) / len(tasks) if tasks else None
        ),
        fallback_share=wilson(sum(q.fallback for q in answered), len(answered)),
        resolved_per_question=addressed / len(questions) if questions else None,
        why=why,
        positions=tuple(positions),
    )


def cells(
    tasks: Iterable[AskingTask], key: Callable[[AskingTask], tuple[str, ...]] | None = None
) -> list[AskingFigures]:
    """The figures per run, setting and category (or per ``key``), in first-seen order."""
    groups: dict[tuple[str, ...], list[AskingTask]] = {}
    for task in tasks:
        groups.setdefault((key or _cell)(task), []).append(task)
    return [asking_figures(group) for group in groups.values()]


def _cell(task: AskingTask) -> tuple[str, ...]:
    return (task.run, task.setting, task.category)


def figures_to_json(figures: AskingFigures) -> dict[str, Any]:
    """One cell's figures as the report's JSON object."""

    def rate(value: Proportion) -> dict[str, Any]:
        return {
            "k": value.k,
            "n": value.n,
            "value": value.value,
            "low": value.low,
            "high": value.high,
        }

    return {
        "benchmark": figures.benchmark,
        "run": figures.run,
        "setting": figures.setting,
        "category": figures.category,
        "aah": figures.aah,
        "tasks": figures.tasks,
        "blocked_tasks": figures.blocked_tasks,
        "question_precision": rate(figures.precision),
        "blocker_recall": rate(figures.recall),
        "ask_f1": {
            "value": figures.ask_f1.value,
            "low": figures.ask_f1.low,
            "high": figures.ask_f1.high,
            "tasks": figures.ask_f1.tasks,
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
        },
        "asked_before_acting": rate(figures.before_acting),
        "first_question_position": {
            "median": figures.first_position.median,
            "q1": figures.first_position.low,
            "q3": figures.first_position.high,
            "n": figures.first_position.n,
        },
        "questions_per_task": figures.questions_per_task,
        "person_seconds_per_task": figures.person_seconds_per_task,
        "fallback_share": rate(figures.fallback_share),
        "blockers_resolved_per_question": figures.resolved_per_question,
        "not_computed": dict(figures.why),
    }


# -- reading a run from the store ----------------------------------------------

CONTEXT_KEY = "blockers"
"""Where a session's context keeps its task's blockers (as ``Blocker.to_json``)."""


def context_blockers(context: Mapping[str, Any]) -> list[Blocker] | None:
    """The blockers a session's stored context lists; None when it lists none at all."""
    listed = context.get(CONTEXT_KEY)
    if not isinstance(listed, list):
        return None
    return [b for b in (Blocker.from_json(item) for item in listed) if b is not None]


def stored_blockers(store: SessionStore, run: str) -> dict[str, list[Blocker]]:
    """Each session of ``run`` whose context lists its blockers, with them ([]: none withheld)."""
    found: dict[str, list[Blocker]] = {}
    for session in store.list_sessions(run=run):
        context = store.session_recipe(session.id).get("context") or {}
        listed = context_blockers(context) if isinstance(context, Mapping) else None
        if listed is not None:
            found[session.id] = listed
    return found


def run_asking_tasks(
    store: SessionStore,
    run: str,
    blockers: Mapping[str, Sequence[Blocker]],
    grader: Mapping[str, GraderReadings] | None = None,
) -> list[AskingTask]:
    """The sessions of ``run`` that ``blockers`` names, read (the others are not the benchmark's).

    The category is the session context's ``category`` ("" without one).
    """
    tasks = []
    for session in store.list_sessions(run=run):
        if session.id not in blockers:
            continue
        context = store.session_recipe(session.id).get("context") or {}
        category = context.get("category", "") if isinstance(context, Mapping) else ""
        tasks.append(
            asking_task(
                session,
                store.events(session.id),
                blockers[session.id],
                category if isinstance(category, str) else "",
                (grader or {}).get(session.id),
            )
        )
    return tasks
