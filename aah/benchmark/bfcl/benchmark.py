"""BFCL as a ``Benchmark``: its flags, its run, its part of the report.

Single-turn items (one model turn each, Aah off by default) and multi-turn
entries (BFCL's own API classes from the pinned wheel, the turns' step
limit) run as one resumable run; afterwards every single-turn item is
checked (the AST check, the standard and intent readings) and every
multi-turn entry scored from its turns' checks, and the results stored for
the report.
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
    from aah.benchmark.bfcl.multi_turn_tasks import MultiTurnTask
    from aah.benchmark.bfcl.scoring import BfclScores
    from aah.benchmark.bfcl.tasks import BfclTask
    from aah.llm import ModelConfig
    from aah.runtime import Activity
    from aah.scoring import Blocker, ReportTable
    from aah.store import RunRecord, SessionStore


def choose_items(
    tasks: Sequence[BfclTask | MultiTurnTask], limit: int | None, ids: Sequence[str]
) -> list[BfclTask | MultiTurnTask]:
    """Items named by ``--ids``, else at most ``limit`` per category and language, in data order.

    Raises:
        AahError: an id names no item.
    """
    from aah.benchmark.batch import pick_tasks

    return pick_tasks(
        tasks, limit, ids, lambda task: f"{task.category}/{task.language}", "simple_python_12"
    )


class BfclReport:
    """BFCL's part of the report: AST per category, refusal two ways, MBFCL, multi-turn."""

    key = "bfcl"
    step = "BFCL"
    always = True

    def scores(
        self, store: SessionStore, run: RunRecord, has_sessions: bool
    ) -> tuple[list[Any], list[str]]:
        """The run's scores, one per language (multi-turn entries: the en row)."""
        from aah.benchmark.bfcl.scoring import bfcl_run_scores

        model = str(run.manifest.get("model") or "")
        return list(bfcl_run_scores(store, run.name, model, run.manifest.get("aah"))), []

    def to_json(self, scores: BfclScores) -> dict[str, Any]:
        """``bfcl_scores_to_json``'s object."""
        from aah.benchmark.bfcl.scoring import bfcl_scores_to_json

        return bfcl_scores_to_json(scores)

    def tables(self, scores: Sequence[BfclScores]) -> list[ReportTable]:
        """The BFCL tables."""
        from aah.benchmark.bfcl.tables import bfcl_tables

        return bfcl_tables(scores)

    def csv_rows(self, scores: Sequence[BfclScores]) -> list[list[Any]]:
        """One row per run, language and figure."""
        from aah.benchmark.bfcl.tables import bfcl_csv_rows

        return bfcl_csv_rows(scores) if scores else []


class Bfcl:
    """The Berkeley Function-Calling Leaderboard (v4): single-turn items and multi-turn entries."""

    name = "bfcl"
    title = "BFCL"
    group = "category"
    options: Sequence[BenchOption] = (
        BenchOption(
            "category",
            "--category",
            str,
            "all-single-turn",
            "BFCL: a category, a comma list, or all-single-turn.",
        ),
    )
    reads: frozenset[str] = frozenset()
    defaults: Mapping[str, Any] = MappingProxyType({"aah": False, "task_timeout": 600.0})
    report = BfclReport()
    export = None
    published: Sequence[str] = (
        "Multilingual-BFCL (SIGIR 2026 short paper), baseline columns, where the model "
        "and language match",
    )

    def blockers(self, store: SessionStore, run: RunRecord) -> Mapping[str, Sequence[Blocker]]:
        """Each multi-turn entry's blockers as its session keeps them (science.md §8).

        Single-turn entries withhold nothing to ask for: their sessions keep none.
        """
        from aah.scoring import stored_blockers

        return stored_blockers(store, run.name)

    def prepare(self, flags: RunFlags) -> PreparedRun:
        """Load the items (and BFCL's API classes for multi-turn), pick and shard them.

        Raises:
            AahError: no BFCL data, an unknown category, no pinned wheel for
                multi-turn, or an id that names no item.
        """
        from aah.benchmark.batch import parse_shard, shard_tasks
        from aah.benchmark.bfcl import (
            MULTI_TURN_STEP_LIMIT,
            BfclTask,
            MultiTurnTask,
            api_classes,
            bfcl_source,
            data_files,
            find_bfcl_wheel,
            is_multi_turn,
            load_bfcl,
            load_multi_turn,
            multi_turn_files,
            multi_turn_source,
            parse_categories,
        )
        from aah.data import find_data_dir

        categories = parse_categories(flags["category"])
        source = bfcl_source(flags.data if flags.data is not None else find_data_dir(None))
        single = [c for c in categories if not is_multi_turn(c)]
        multi = [c for c in categories if is_multi_turn(c)]
        every: list[BfclTask | MultiTurnTask] = [*load_bfcl(source, single)]
        classes = None
        if multi:
            every += load_multi_turn(multi_turn_source(source), multi)
            # BFCL's own API classes, from the pinned wheel: found (or refused) before any call.
            classes = api_classes(find_bfcl_wheel(flags.data))
        tasks = shard_tasks(choose_items(every, flags.limit, flags.ids), parse_shard(flags.shard))
        files = data_files(source, single) if single else []
        if multi:
            files += multi_turn_files(multi_turn_source(source), multi)
        digest = hashlib.sha256()
        for path in files:
            with path.open("rb") as file:  # in chunks: a data file is never held whole
                while chunk := file.read(1 << 20):
                    digest.update(chunk)
        data_sha256 = digest.hexdigest()

        def start(
            options: RunOptions,
            model: ModelConfig,
            db: Path,
            on_done: ProgressHook,
            on_waiting: Callable[[int], None],
            activity: Activity,
        ) -> Coroutine[Any, Any, RunSummary]:
            from aah.benchmark.bfcl.runner import BfclRunner

            runner = BfclRunner(options, model, classes)
            return runner.run(
                tasks,
                db,
                on_done,
                categories=categories,
                data_source=str(source.resolve()),
                data_sha256=data_sha256,
                activity=activity,
            )

        def finish(store: SessionStore) -> list[str]:
            from aah.benchmark.bfcl import score_bfcl_run, score_multi_turn_run

            items = [t for t in every if isinstance(t, BfclTask)]
            scored = score_bfcl_run(store, flags.run, items)
            if multi:
                entries = [t for t in every if isinstance(t, MultiTurnTask)]
                scored += score_multi_turn_run(store, flags.run, entries)
            return [f"turns checked now: {scored}"]

        languages = sorted({task.language for task in tasks})
        return PreparedRun(
            tasks,
            "BFCL entries" if not single else "BFCL items",
            start,
            details=f"({', '.join(categories)}; {', '.join(languages) or 'none'})",
            options={"step_limit": MULTI_TURN_STEP_LIMIT if multi else 1},
            finish=finish,
        )


BENCHMARK = Bfcl()
