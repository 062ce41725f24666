"""τ²-bench as a ``Benchmark``: its flags, its run, its part of the report.

Each task is a conversation between the agent and a user: the simulated user
(an LLM, ``--user-model``), the gold-playing scripted user (``--user gold``,
for offline checks with ``python -m aah.testing.tau2_script``), or a person
at the desk (``--user person``). Once the run ends, every ended simulation's
grade (τ²'s evaluator) is stored, and with ``--nl`` its natural-language
assertions judged by aah's grader.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from aah.benchmark.protocol import BenchOption, PreparedRun, RunFlags
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.benchmark.batch import ProgressHook, RunOptions, RunSummary
    from aah.benchmark.tau2.scores import Tau2Scores
    from aah.llm import ModelConfig
    from aah.runtime import Activity
    from aah.scoring import ReportTable
    from aah.store import RunRecord, SessionStore

USERS = ("simulated", "gold", "person")


class Tau2Report:
    """τ²'s part of the report: per run and domain, pass^k, reward components, ends, turns."""

    key = "tau2"
    step = "τ²"
    always = False

    def scores(
        self, store: SessionStore, run: RunRecord, has_sessions: bool
    ) -> tuple[list[Any], list[str]]:
        """The run's figures, one per domain (only graded simulations count)."""
        from aah.benchmark.tau2.scores import tau2_run_scores

        return list(tau2_run_scores(store, run.name, run.manifest.get("aah"))), []

    def to_json(self, scores: Tau2Scores) -> dict[str, Any]:
        """``tau2_scores_to_json``'s object."""
        from aah.benchmark.tau2.scores import tau2_scores_to_json

        return tau2_scores_to_json(scores)

    def tables(self, scores: Sequence[Tau2Scores]) -> list[ReportTable]:
        """The τ² tables, with the published leaderboard beside."""
        from aah.benchmark.tau2.tables import tau2_tables

        return tau2_tables(scores)

    def csv_rows(self, scores: Sequence[Any]) -> list[list[Any]]:
        """None yet: the JSON holds τ²'s figures."""
        return []


class Tau2Export:
    """τ²'s own ``Results`` format, so τ²'s evaluator re-grades an aah run."""

    noun = "τ² simulations"

    def results_json(self, store: SessionStore, sessions: Sequence[Any]) -> tuple[str, int]:
        """The ended simulations among ``sessions`` as τ²'s results JSON, and how many."""
        from aah.benchmark.tau2.export import tau2_results_json

        return tau2_results_json(store, sessions)


class Tau2:
    """τ²-bench (Sierra Research): agents that talk with a user while they act under a policy."""

    name = "tau2"
    title = "τ²-bench"
    group = "domain"
    options: Sequence[BenchOption] = (
        BenchOption(
            "domain",
            "--domain",
            str,
            "all",
            "τ²: airline, retail, telecom, mock, a comma list, or all (the three).",
        ),
        BenchOption(
            "split",
            "--split",
            str,
            "base",
            "τ²: the tasks, base, train or test (telecom: also small).",
        ),
        BenchOption(
            "user",
            "--user",
            str,
            "simulated",
            "τ²: simulated (an LLM), gold (the scripted gold play) or person (at the desk).",
        ),
        BenchOption(
            "user_model",
            "--user-model",
            str,
            None,
            "τ²: the simulated user's model (default AAH_HUMAN_MODEL, else the agent's).",
        ),
        BenchOption(
            "nl",
            "--nl",
            bool,
            False,
            "τ²: judge NL assertions with aah's grader (AAH_GRADER_MODEL).",
            off_flag="--no-nl",
        ),
        BenchOption("votes", "--votes", int, 5, "τ²: grader votes per NL assertion.", minimum=1),
    )
    reads: frozenset[str] = frozenset()
    defaults: Mapping[str, Any] = MappingProxyType({"aah": False, "task_timeout": 1800.0})
    report = Tau2Report()
    export = Tau2Export()
    published: Sequence[str] = (
        "τ²-bench leaderboard, https://taubench.com (standard setup, user simulator gpt-5.2)",
    )

    def blockers(self, store: SessionStore, run: RunRecord) -> None:
        """None: a τ² task's user holds what it withholds and tells it in turns of its own."""
        return None

    def prepare(self, flags: RunFlags) -> PreparedRun:
        """Load the domains and their tasks, pick and shard them; grade once the run ends.

        Raises:
            AahError: an unknown user or domain, missing or damaged τ² files,
                no pinned wheel, or an id that names no task.
        """
        from aah.benchmark.batch import parse_shard, pick_tasks, shard_tasks
        from aah.benchmark.tau2 import (
            load_tau2_domain,
            load_tau2_tasks,
            parse_domains,
            run_tasks,
            user_factory,
        )
        from aah.data import find_data_dir
        from aah.llm import model_config

        user: str = flags["user"]
        if user not in USERS:
            raise AahError(f"unknown --user {user!r}: use {' or '.join(USERS)}")
        names = parse_domains(flags["domain"])
        split: str = flags["split"]
        source = flags.data if flags.data is not None else find_data_dir(None)
        domains = {name: load_tau2_domain(name, source) for name in names}
        every = [task for name in names for task in load_tau2_tasks(domains[name], split=split)]
        tasks = pick_tasks(
            run_tasks(every), flags.limit, flags.ids, lambda t: t.domain, "airline/12"
        )
        tasks = shard_tasks(tasks, parse_shard(flags.shard))
        user_config = (
            model_config("human", model=flags["user_model"]) if user == "simulated" else None
        )
        user_name = user if user_config is None else f"simulated:{user_config.model}"
        grader = model_config("grader") if flags["nl"] else None
        votes: int = flags["votes"]

        def start(
            options: RunOptions,
            model: ModelConfig,
            db: Path,
            on_done: ProgressHook,
            on_waiting: Callable[[int], None],
            activity: Activity,
        ) -> Coroutine[Any, Any, RunSummary]:
            from aah.benchmark.tau2.runner import Tau2Runner

            runner = Tau2Runner(
                options,
                model,
                domains,
                every,
                user_factory(user, user_config),
                split=split,
                user_name=user_name,
            )
            return runner.run(tasks, db, on_done, activity=activity)

        def finish(store: SessionStore) -> list[str]:
            from aah.benchmark.tau2 import grade_nl_assertions, score_tau2_run, summarize_tau2_run
            from aah.runtime import run_async

            scored = score_tau2_run(store, flags.run)
            lines = []
            if grader is not None:
                judged = run_async(grade_nl_assertions(store, flags.run, grader, votes))
                lines.append(f"NL assertions judged now: {judged} simulations")
            lines.append(f"simulations graded now: {scored}")
            return [*lines, *summarize_tau2_run(store, flags.run)]

        return PreparedRun(
            tasks,
            "τ² tasks",
            start,
            details=f"({', '.join(names)}; {split})",
            finish=finish,
            header=f", user {user_name}",
        )


BENCHMARK = Tau2()
