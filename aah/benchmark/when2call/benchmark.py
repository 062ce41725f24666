"""When2Call as a ``Benchmark``: its flags, its run, its part of the report.

A run answers each question once (``--turns`` model turns, the first scored),
with Aah on by default; afterwards every first turn is labelled by the rules,
and by the LLM judge with ``--judge``, and the labels are stored for the report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from aah.benchmark.protocol import BenchOption, PreparedRun, RunFlags

if TYPE_CHECKING:
    from aah.benchmark.batch import ProgressHook, RunOptions, RunSummary
    from aah.benchmark.when2call.scoring import When2CallScores
    from aah.benchmark.when2call.tasks import When2CallTask
    from aah.events import AwarenessMode
    from aah.llm import ModelConfig
    from aah.runtime import Activity
    from aah.scoring import Blocker, ReportTable
    from aah.store import RunRecord, SessionStore


def choose_questions(
    tasks: Sequence[When2CallTask], limit: int | None, ids: Sequence[str]
) -> list[When2CallTask]:
    """Questions named by ``--ids``, else at most ``limit`` per gold behaviour, in data order.

    Raises:
        AahError: an id names no question.
    """
    from aah.benchmark.batch import pick_tasks

    return pick_tasks(tasks, limit, ids, lambda task: task.gold, "when2call-276e4475")


class When2CallReport:
    """When2Call's part of the report: scores per run and labeller, confusion, published figures."""

    key = "when2call"
    step = "When2Call"
    always = True

    def scores(
        self, store: SessionStore, run: RunRecord, has_sessions: bool
    ) -> tuple[list[Any], list[str]]:
        """The run's scores, one per labeller; a note when none is labelled yet."""
        from aah.benchmark.when2call.scoring import run_scores

        scores = run_scores(store, run.name, run.manifest.get("aah"))
        notes = []
        if not scores and has_sessions:
            notes.append(
                f"run {run.name}: no When2Call first turn is labelled yet (its sessions "
                "ended in error): run the same `aah bench run --benchmark when2call` again"
            )
        return list(scores), notes

    def to_json(self, scores: When2CallScores) -> dict[str, Any]:
        """``scores_to_json``'s object."""
        from aah.benchmark.when2call.scoring import scores_to_json

        return scores_to_json(scores)

    def tables(self, scores: Sequence[When2CallScores]) -> list[ReportTable]:
        """The When2Call tables."""
        from aah.benchmark.when2call.tables import when2call_tables

        return when2call_tables(scores)

    def csv_rows(self, scores: Sequence[Any]) -> list[list[Any]]:
        """None: the per-cell CSV holds When2Call's runs."""
        return []


class When2Call:
    """When2Call (NVIDIA, NAACL 2025): when to call a tool, ask, or say it cannot."""

    name = "when2call"
    title = "When2Call"
    group = "gold behaviour"
    options: Sequence[BenchOption] = (
        BenchOption(
            "turns",
            "--turns",
            int,
            1,
            "When2Call: model turns per question (the first is scored).",
            minimum=1,
        ),
        BenchOption(
            "judge",
            "--judge",
            bool,
            False,
            "When2Call: label first turns with the LLM judge too.",
        ),
        BenchOption(
            "judge_model",
            "--judge-model",
            str,
            None,
            "When2Call judge model (default AAH_JUDGE_MODEL).",
        ),
    )
    reads = frozenset({"awareness"})
    defaults: Mapping[str, Any] = MappingProxyType({"aah": True, "task_timeout": 600.0})
    report = When2CallReport()
    export = None
    published: Sequence[str] = (
        "Ross et al., When2Call, NAACL 2025: its LLM-as-judge evaluation of the test split "
        "(for reference: aah labels by its rules or its own judge prompt)",
    )

    def blockers(self, store: SessionStore, run: RunRecord) -> Mapping[str, Sequence[Blocker]]:
        """Each question's blockers as its session keeps them (science.md §8)."""
        from aah.scoring import stored_blockers

        return stored_blockers(store, run.name)

    def prepare(self, flags: RunFlags) -> PreparedRun:
        """Load the questions, pick and shard them; label first turns once the run ends.

        Raises:
            AahError: no When2Call data, or an id that names no question.
        """
        from aah.benchmark.batch import parse_shard, shard_tasks
        from aah.benchmark.when2call.tasks import load_when2call, questions_file
        from aah.data import find_data_dir
        from aah.llm import model_config

        data_dir = find_data_dir(flags.data)
        every = load_when2call(data_dir)
        tasks = shard_tasks(
            choose_questions(every, flags.limit, flags.ids), parse_shard(flags.shard)
        )
        turns: int = flags["turns"]
        awareness: AwarenessMode = flags["awareness"] or "none"
        judge = model_config("judge", model=flags["judge_model"]) if flags["judge"] else None
        data_sha256 = hashlib.sha256(questions_file(data_dir).read_bytes()).hexdigest()

        def start(
            options: RunOptions,
            model: ModelConfig,
            db: Path,
            on_done: ProgressHook,
            on_waiting: Callable[[int], None],
            activity: Activity,
        ) -> Coroutine[Any, Any, RunSummary]:
            from aah.benchmark.when2call.runner import When2CallRunner

            runner = When2CallRunner(options, model, turns=turns, awareness=awareness)
            return runner.run(tasks, db, on_done, data_sha256=data_sha256, activity=activity)

        def finish(store: SessionStore) -> list[str]:
            from aah.benchmark.when2call.scoring import label_run_with_judge, label_run_with_rules
            from aah.runtime import run_async

            labelled = label_run_with_rules(store, flags.run, every)
            line = f"first turns labelled now: {labelled} by the rules"
            if judge is not None:
                judged = run_async(
                    label_run_with_judge(
                        store, flags.run, every, judge, concurrency=flags.concurrency
                    )
                )
                line += f", {judged} by the judge {judge.model}"
            return [line]

        return PreparedRun(
            tasks,
            "When2Call questions",
            start,
            options={"step_limit": turns},
            finish=finish,
            header=f", awareness {awareness}, turns {turns}",
        )


BENCHMARK = When2Call()
