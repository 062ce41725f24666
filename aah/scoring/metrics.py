"""The Fail-TaLMs metrics per run and setting, each with its Wilson interval and N.

``load_outcomes`` reads one ``TaskOutcome`` per session from the store (a
handful of set-wide SQL queries, never one per session), and
``compute_metrics`` groups them into one ``CellMetrics`` per run × setting
with exactly the formulas of science.md §2:

==================  ===============  ================================  ============
metric              perfect          underspecified, nonreplaceable    replaceable
==================  ===============  ================================  ============
pass_rate           #pass / N        #pass / N                         #pass / N
awareness           #(a=yes) / N     #(a in {no, idk}) / N             #(a=idk) / N
unexpected          #(a=no) / N      #(a=yes and pass) / N             #(a=no) / N
skip                #skipped / N     #skipped / N                      #skipped / N
interaction         #(asked >= 1, not skipped) / #not skipped, in every setting
==================  ===============  ================================  ============

In ``notools`` only the pass rate is the paper's; its awareness, unexpected,
skip and interaction are null. Sessions of no known setting get pass rate,
skip and interaction, and null awareness and unexpected. ``a`` is resolved by
``resolve_awareness``. A skipped session never passes. A session's verdict is
its latest grade; a session that ended in error is no pass either. A finished
session with no grade counts as not passed (as PR = #pass / N demands) and is
counted in ``ungraded`` so that a report can say to run ``aah grade``.

Beside the paper's metrics every cell has: ``no_or_idk``, the plain reading
"share of no or idk" (#(a in {no, idk}) / N, in every setting);
``graceful_failure``, #(not passed, and skipped, asked, or said it cannot) / N,
so that pass rate + graceful + other failures = 1; ``redundant_questions``,
redundant questions / all questions (see ``is_redundant_question``); means per
task (over all N tasks) of agent steps, tool calls, human questions, human
seconds, tokens and model latency; and the ``ungraded`` and ``unfinished``
(running or waiting) counts; ``errors`` (sessions that ended in error),
``cancelled`` (sessions cancelled or expired before they ended: no pass),
``flagged`` (finished sessions whose latest grade is a flagged Fail: a tie or
no quorum of valid votes), ``no_quorum`` (those of them short of a quorum),
``step_limit`` and ``cut_off`` (sessions that stopped without a final answer at
the step limit, or with the model's reply cut by its length limit: no pass,
never graded), ``questions_capped`` (questions not asked, past the cap on
questions per reply or session) and ``awareness_none`` (an awareness reply
never parsed); and
``pass_rate_graded``, the pass rate over the sessions that have a verdict
(ungraded and unfinished ones left out), which a report shows in place of PR
where some are ungraded.

JSON shape (``cell_to_json``), one object per run × setting, keys in this order::

    {"run": str, "setting": str | null, "aah": bool | null, "model": str | null,
     "n": int,
     "pass_rate": P, "awareness": P | null, "unexpected": P | null,
     "skip": P | null, "interaction": P | null,
     "no_or_idk": P, "graceful_failure": P, "redundant_questions": P,
     "mean_steps": float | null, "mean_tool_calls": float | null,
     "mean_questions": float | null, "human_seconds_per_task": float | null,
     "tokens_per_task": float | null, "latency_ms_per_task": float | null,
     "ungraded": int, "unfinished": int,
     "errors": int, "flagged": int, "awareness_none": int, "cancelled": int,
     "pass_rate_graded": P, "no_quorum": int, "step_limit": int, "cut_off": int,
     "questions_capped": int, "terminated": int}

    P = {"k": int, "n": int, "value": float | null, "low": float | null,
         "high": float | null}   # value and bounds are null when n is 0

A metric is null where the setting does not report it; a P with ``n = 0`` is
a metric that applies but has no tasks to count. ``aah`` and ``model`` are
null when the cell's sessions disagree. Means are null when N is 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from aah.scoring.behavior import classify_reply
from aah.scoring.intervals import Proportion, wilson
from aah.scoring.redundancy import is_redundant_question

# The rules module, not ``aah.scoring.behavior.classes``: that one loads the OpenAI client,
# a second of start-up that a report over stored sessions never needs.
from aah.scoring.settings import SETTINGS, canonical_setting
from aah.store import STOPPED_STATUSES, GradeFlag, SessionStore, SessionSummary

_NOT_DONE = ("running", "waiting")


def resolve_awareness(setting: str | None, info: str | None, tool: str | None) -> str | None:
    """The awareness answer ``a`` the metrics use for a task (science.md §2).

    The information answer for underspecified; the tool answer for replaceable
    and nonreplaceable; otherwise the tool answer, or the information answer
    where no tool answer was recorded.
    """
    if setting == "underspecified":
        return info
    if setting in ("replaceable", "nonreplaceable"):
        return tool
    return tool if tool is not None else info


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What one session did and how it was judged: the unit every metric counts.

    Attributes:
        passed: The latest grade's verdict; False when skipped or ended in error
            (the grader grades finished sessions only); None when not graded.
        awareness: The answer ``a`` the setting's formulas use.
        asked: Human questions the agent asked.
        steps: Agent model calls (awareness calls not counted).
        human_seconds: Time people took to answer, summed.
        tokens: Prompt plus completion tokens of every model call.
        latency_ms: Wall time of every model call, summed.
        questions: The human questions' texts, in order.
        flagged: The latest grade is a flagged Fail (a tie, or no quorum of valid votes).
        flag: Why it is flagged: ``tie`` or ``no_quorum``.
        questions_capped: Questions not asked, past the cap on questions.
        error: The one-line error a session that ended in error gave, if recorded.
        task_id: The benchmark task the session ran (repeats share it; see ``base_task_id``).
    """

    session_id: str
    run: str | None
    setting: str | None
    aah: bool
    status: str
    skipped: bool
    passed: bool | None
    info_awareness: str | None
    tool_awareness: str | None
    awareness: str | None
    asked: int
    steps: int
    tool_calls: int
    human_seconds: float
    tokens: int
    latency_ms: float
    final_answer: str
    query: str
    model: str | None = None
    questions: tuple[str, ...] = ()
    flagged: bool = False
    error: str | None = None
    task_id: str | None = None
    flag: str | None = None
    questions_capped: int = 0


# -- loading ------------------------------------------------------------------

# The pass verdict is the grader's (or the published one); annotators' labels
# (grader_model "human:<name>") are compared with it in the report, never used as it.
_HUMAN_GRADER_PREFIX = "human:"


def load_outcomes(store: SessionStore, runs: Sequence[str] | None = None) -> list[TaskOutcome]:
    """One outcome per session of ``runs`` (every run when None), in run order.

    Sessions outside any run (interactive ones) are left out. The store's
    bulk queries read every session at once, never one per session, so
    10,000 sessions load in a fraction of a second.
    """
    with store.queries() as read:
        sessions = read.session_summaries(runs)
        # Oldest first, so the last verdict seen is the latest grade.
        verdicts = {
            grade.session_id: grade.verdict
            for grade in read.grade_verdicts(runs)
            if not grade.grader_model.startswith(_HUMAN_GRADER_PREFIX)
        }
        flags = {
            grade.session_id: grade
            for grade in read.grade_flags(runs)
            if not grade.grader_model.startswith(_HUMAN_GRADER_PREFIX)
        }
        errors = {sid: error.message for sid, error in read.session_errors(runs).items()}
    # A handful of distinct settings over thousands of sessions: each is normalized once.
    settings = {raw: canonical_setting(raw) for raw in {session.setting for session in sessions}}
    return [
        _outcome(
            session,
            settings[session.setting],
            verdicts.get(session.id),
            flag=flags.get(session.id),
            error=errors.get(session.id),
        )
        for session in sessions
    ]


# Sessions that ended with no verdict to wait for: skipped (awareness no), or
# with no final answer (science.md §2). Nobody will grade or resume them.
_NO_PASS = ("skipped", "error", "cancelled", *STOPPED_STATUSES)


def _verdict(status: str, verdict: str | None) -> bool | None:
    if status in _NO_PASS:
        return False
    return None if verdict is None else verdict == "pass"


def _outcome(
    session: SessionSummary,
    setting: str | None,
    verdict: str | None,
    *,
    flag: GradeFlag | None = None,
    error: str | None = None,
) -> TaskOutcome:
    info, tool = session.info_awareness, session.tool_awareness
    return TaskOutcome(
        session_id=session.id,
        run=session.run,
        setting=setting,
        aah=session.aah,
        status=session.status,
        skipped=session.status == "skipped",
        passed=_verdict(session.status, verdict),
        info_awareness=info,
        tool_awareness=tool,
        awareness=resolve_awareness(setting, info, tool),
        asked=session.human_questions,
        steps=session.agent_calls,
        tool_calls=session.tool_calls,
        human_seconds=session.human_seconds,
        tokens=session.tokens,
        latency_ms=session.latency_ms,
        final_answer=session.final_answer or "",
        query=session.query,
        model=session.model,
        questions=session.questions,
        flagged=bool(flag and flag.flagged) and session.status == "finished",
        error=error,
        task_id=session.task_id,
        flag=flag.reason if flag and flag.flagged and session.status == "finished" else None,
        questions_capped=session.questions_capped,
    )


# -- computing ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CellMetrics:
    """Every metric of one run × setting; None where the setting does not report it."""

    run: str | None
    setting: str | None
    aah: bool | None
    model: str | None
    n: int
    pass_rate: Proportion
    awareness: Proportion | None
    unexpected: Proportion | None
    skip: Proportion | None
    interaction: Proportion | None
    no_or_idk: Proportion
    graceful_failure: Proportion
    redundant_questions: Proportion
    mean_steps: float | None
    mean_tool_calls: float | None
    mean_questions: float | None
    human_seconds_per_task: float | None
    tokens_per_task: float | None
    latency_ms_per_task: float | None
    ungraded: int
    unfinished: int
    errors: int = 0
    flagged: int = 0
    awareness_none: int = 0
    cancelled: int = 0
    pass_rate_graded: Proportion | None = None
    no_quorum: int = 0
    step_limit: int = 0
    cut_off: int = 0
    questions_capped: int = 0
    # Sessions a person ended when asked to approve a tool call (science.md §7): no pass.
    terminated: int = 0

    @property
    def troubles(self) -> int:
        """Sessions in error, flagged, awareness none, ungraded, unfinished, cancelled, stopped."""
        return (
            self.errors
            + self.flagged
            + self.awareness_none
            + self.ungraded
            + self.unfinished
            + self.cancelled
            + self.step_limit
            + self.cut_off
            + self.terminated
        )


Predicate = Callable[[TaskOutcome], bool]


def passes(task: TaskOutcome) -> bool:
    """Whether the task counts as a pass: graded pass and not skipped."""
    return task.passed is True and not task.skipped


def _answered(*answers: str) -> Predicate:
    return lambda task: task.awareness in answers


def _yes_and_pass(task: TaskOutcome) -> bool:
    return task.awareness == "yes" and passes(task)


# (awareness, unexpected outcome) per setting, as science.md §2 defines them.
_AWARENESS_FORMULAS: dict[str, tuple[Predicate, Predicate]] = {
    "perfect": (_answered("yes"), _answered("no")),
    "underspecified": (_answered("no", "idk"), _yes_and_pass),
    "nonreplaceable": (_answered("no", "idk"), _yes_and_pass),
    "replaceable": (_answered("idk"), _answered("no")),
}


def said_it_cannot(task: TaskOutcome) -> bool:
    """Whether the final answer says the agent cannot do the task."""
    text = task.final_answer.strip()
    return bool(text) and classify_reply(text).label == "cannot_answer"


def failed_gracefully(task: TaskOutcome) -> bool:
    """Not passed, and the agent skipped, asked a person, or said it cannot."""
    if passes(task):
        return False
    return task.skipped or task.asked > 0 or said_it_cannot(task)


def compute_metrics(outcomes: Iterable[TaskOutcome]) -> list[CellMetrics]:
    """One ``CellMetrics`` per run × setting, runs by name, settings in paper order."""
    cells: dict[tuple[str | None, str | None], list[TaskOutcome]] = {}
    for task in outcomes:
        cells.setdefault((task.run, task.setting), []).append(task)
    return [cell_metrics(run, setting, cells[run, setting]) for run, setting in _order(cells)]


def _order(cells: Iterable[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
    def key(cell: tuple[str | None, str | None]) -> tuple[str, int, str]:
        run, setting = cell
        rank = SETTINGS.index(setting) if setting in SETTINGS else len(SETTINGS)
        return (run or "", rank, setting or "")

    return sorted(cells, key=key)


def cell_metrics(run: str | None, setting: str | None, tasks: Sequence[TaskOutcome]) -> CellMetrics:
    """The metrics of one cell from its tasks (which should share run and setting)."""
    n = len(tasks)

    def share(predicate: Predicate) -> Proportion:
        return wilson(sum(1 for task in tasks if predicate(task)), n)

    attempted = [task for task in tasks if not task.skipped]
    formulas = _AWARENESS_FORMULAS.get(setting or "")
    paper_only_pr = setting == "notools"
    questions = [(task.query, q) for task in tasks for q in task.questions]
    return CellMetrics(
        run=run,
        setting=setting,
        aah=_shared({task.aah for task in tasks}),
        model=_shared({task.model for task in tasks}),
        n=n,
        pass_rate=share(passes),
        awareness=share(formulas[0]) if formulas else None,
        unexpected=share(formulas[1]) if formulas else None,
        skip=None if paper_only_pr else share(lambda task: task.skipped),
        interaction=None
        if paper_only_pr
        else wilson(sum(1 for task in attempted if task.asked > 0), len(attempted)),
        no_or_idk=share(_answered("no", "idk")),
        graceful_failure=share(failed_gracefully),
        redundant_questions=wilson(
            sum(1 for query, q in questions if is_redundant_question(q, query)), len(questions)
        ),
        mean_steps=_mean([task.steps for task in tasks]),
        mean_tool_calls=_mean([task.tool_calls for task in tasks]),
        mean_questions=_mean([task.asked for task in tasks]),
        human_seconds_per_task=_mean([task.human_seconds for task in tasks]),
        tokens_per_task=_mean([task.tokens for task in tasks]),
        latency_ms_per_task=_mean([task.latency_ms for task in tasks]),
        ungraded=sum(1 for task in tasks if task.status == "finished" and task.passed is None),
        unfinished=sum(1 for task in tasks if task.status in _NOT_DONE),
        errors=sum(1 for task in tasks if task.status == "error"),
        flagged=sum(1 for task in tasks if task.flagged),
        awareness_none=sum(1 for task in tasks if task.awareness == "none"),
        cancelled=sum(1 for task in tasks if task.status == "cancelled"),
        pass_rate_graded=_graded_pass_rate(tasks),
        no_quorum=sum(1 for task in tasks if task.flag == "no_quorum"),
        step_limit=sum(1 for task in tasks if task.status == "step_limit"),
        cut_off=sum(1 for task in tasks if task.status == "cut_off"),
        questions_capped=sum(task.questions_capped for task in tasks),
        terminated=sum(1 for task in tasks if task.status == "terminated"),
    )


def _graded_pass_rate(tasks: Sequence[TaskOutcome]) -> Proportion:
    # Over the sessions with a verdict (graded, skipped or failed): what PR would be
    # if the ungraded and unfinished ones were left out rather than counted as fails.
    judged = [task for task in tasks if task.passed is not None]
    return wilson(sum(1 for task in judged if passes(task)), len(judged))


def _shared(values: set[Any]) -> Any:
    return next(iter(values)) if len(values) == 1 else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# -- JSON ---------------------------------------------------------------------


def proportion_to_json(value: Proportion | None) -> dict[str, Any] | None:
    """``{"k", "n", "value", "low", "high"}``, or None for a metric not reported."""
    return None if value is None else value._asdict()


def cell_to_json(cell: CellMetrics) -> dict[str, Any]:
    """The stable JSON object of one cell (its shape is in the module docstring)."""
    data: dict[str, Any] = {}
    for field in fields(cell):  # declaration order, which the docstring documents
        value = getattr(cell, field.name)
        data[field.name] = proportion_to_json(value) if isinstance(value, Proportion) else value
    return data
