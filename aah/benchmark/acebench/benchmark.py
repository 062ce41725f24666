"""ACEBench Special as a ``Benchmark``: its flags, its run, its part of the report.

A run answers each item once, under one reading (``--reading``): upstream's
special prompt with no tools, scored by upstream's string rules
(``acebench``), or native tool calling with ``ask_human`` offered, read by
the behaviour classes (``aah``). ``--lang`` picks English, Chinese or both.
Items the data cannot give (a damaged line, ground truth naming an API the
item does not offer, a question too long) are named in one line each as the
run is prepared; the others run.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from aah.benchmark.protocol import BenchOption, PreparedRun, RunFlags
from aah.errors import AahError

if TYPE_CHECKING:
    from aah.benchmark.acebench.scoring import AceScores
    from aah.benchmark.batch import ProgressHook, RunOptions, RunSummary
    from aah.llm import ModelConfig
    from aah.runtime import Activity
    from aah.scoring import Blocker, ReportTable
    from aah.store import RunRecord, SessionStore

LANG_CHOICES = ("en", "zh", "both")
READING_CHOICES = ("acebench", "aah")


class AceBenchReport:
    """ACEBench's part of the report: accuracy per category and language, per reading."""

    key = "acebench"
    step = "ACEBench"
    always = False

    def scores(
        self, store: SessionStore, run: RunRecord, has_sessions: bool
    ) -> tuple[list[Any], list[str]]:
        """The run's scores under its reading; a note when no reply is read yet."""
        from aah.benchmark.acebench.scoring import run_scores

        scores = run_scores(store, run.name, run.manifest.get("aah"))
        notes = []
        if not scores and has_sessions:
            notes.append(
                f"run {run.name}: no ACEBench reply is read yet (its sessions ended in "
                "error): run the same `aah bench run --benchmark acebench` again"
            )
        return list(scores), notes

    def to_json(self, scores: AceScores) -> dict[str, Any]:
        """``scores_to_json``'s object."""
        from aah.benchmark.acebench.scoring import scores_to_json

        return scores_to_json(scores)

    def tables(self, scores: Sequence[AceScores]) -> list[ReportTable]:
        """The ACEBench tables."""
        from aah.benchmark.acebench.tables import acebench_tables

        return acebench_tables(scores)

    def csv_rows(self, scores: Sequence[AceScores]) -> list[list[Any]]:
        """One row per run, reading, language and category."""
        rows: list[list[Any]] = [
            ["run", "reading", "lang", "category", "right", "items", "accuracy", "low", "high"]
        ]
        for score in scores:
            for cell in score.cells:
                p = cell.accuracy
                rows.append(
                    [score.run, score.reading, cell.lang, cell.category, p.k, p.n]
                    + [p.value, p.low, p.high]
                )
        return rows if len(rows) > 1 else []


def _choice(flags: RunFlags, name: str, choices: Sequence[str]) -> str:
    value = str(flags[name])
    if value not in choices:
        raise AahError(f"--{name} {value!r}: use {' or '.join(choices)}")
    return value


class AceBench:
    """ACEBench (Chen et al. 2025), its Special data: incomplete, wrong and impossible requests."""

    name = "acebench"
    title = "ACEBench Special"
    group = "language and category"
    options: Sequence[BenchOption] = (
        BenchOption(
            "reading",
            "--reading",
            str,
            "acebench",
            "ACEBench: acebench (upstream's prompt and string rules) or aah (tools, ask_human, "
            "behaviour classes).",
        ),
        BenchOption("lang", "--lang", str, "both", "ACEBench: en, zh or both."),
    )
    reads: frozenset[str] = frozenset()
    defaults: Mapping[str, Any] = MappingProxyType({"aah": True, "task_timeout": 300.0})
    report = AceBenchReport()
    export = None
    published: Sequence[str] = (
        "Chen et al., ACEBench: Who Wins the Match Point in Tool Usage? (2025), Special "
        "category, upstream commit 56dd66cf (compare with the acebench reading only)",
    )

    def blockers(self, store: SessionStore, run: RunRecord) -> Mapping[str, Sequence[Blocker]]:
        """Each item's blockers as its session keeps them (an incomplete item's missing ones)."""
        from aah.scoring import stored_blockers

        return stored_blockers(store, run.name)

    def prepare(self, flags: RunFlags) -> PreparedRun:
        """Load the items, pick and shard them; read the replies once the run ends.

        Raises:
            AahError: no ACEBench data, a bad --reading or --lang, an id that
                names no item, or --aah with the acebench reading.
        """
        import hashlib

        from aah.benchmark.acebench.scoring import Reading, label_run
        from aah.benchmark.acebench.tasks import LANGUAGES, Language, load_acebench, load_prompts
        from aah.benchmark.batch import parse_shard, pick_tasks, shard_tasks
        from aah.data import find_data_dir

        reading = cast("Reading", _choice(flags, "reading", READING_CHOICES))
        lang = _choice(flags, "lang", LANG_CHOICES)
        if reading == "acebench" and flags.aah:
            raise AahError(
                "--reading acebench offers no tools, ask_human included: leave out --aah, "
                "or use --reading aah"
            )
        langs: tuple[Language, ...] = LANGUAGES if lang == "both" else (cast("Language", lang),)
        data_dir = find_data_dir(flags.data)
        loaded = load_acebench(data_dir, langs)
        for line in loaded.problems:
            flags.say(line)
        if not loaded.tasks:
            raise AahError(f"no ACEBench item could be read under {data_dir}: fetch the data again")
        prompts = {one: load_prompts(data_dir, one) for one in langs}
        prompts_sha256 = hashlib.sha256(
            "\n".join(f"{p.system}\n{p.user}" for p in prompts.values()).encode("utf-8")
        ).hexdigest()
        chosen = pick_tasks(
            loaded.tasks, flags.limit, flags.ids, lambda task: task.group, loaded.tasks[0].id
        )
        tasks = shard_tasks(chosen, parse_shard(flags.shard))
        every = loaded.tasks

        def start(
            options: RunOptions,
            model: ModelConfig,
            db: Path,
            on_done: ProgressHook,
            on_waiting: Callable[[int], None],
            activity: Activity,
        ) -> Coroutine[Any, Any, RunSummary]:
            from aah.benchmark.acebench.runner import AceRunner

            runner = AceRunner(
                options,
                model,
                reading=reading,
                lang=lang,
                prompts=prompts,
                prompts_sha256=prompts_sha256,
            )
            return runner.run(tasks, db, on_done, data_sha256=loaded.sha256, activity=activity)

        def finish(store: SessionStore) -> list[str]:
            read, problems = label_run(store, flags.run, every, reading)
            rule = "upstream's string rules" if reading == "acebench" else "the behaviour rules"
            return [f"replies read now: {read} by {rule}", *problems]

        return PreparedRun(
            tasks,
            "ACEBench Special items",
            start,
            details=f"({reading} reading; {lang})",
            # The acebench reading offers no tools, ask_human included: Aah is off.
            options={"step_limit": 1, **({"aah": False} if reading == "acebench" else {})},
            finish=finish,
            header=", reading acebench (no tools)" if reading == "acebench" else ", reading aah",
        )


BENCHMARK = AceBench()
