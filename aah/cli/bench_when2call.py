"""``aah bench run --benchmark when2call``: the When2Call questions as one resumable run.

The same run machinery as Fail-TaLMs (names, resume, shards, progress bar,
store); afterwards every first turn is labelled by the rules, and by the LLM
judge with ``--judge``, and the labels are stored for ``aah report``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from aah.cli.output import console

if TYPE_CHECKING:
    from aah.benchmark.when2call import When2CallTask
    from aah.events import AwarenessMode
    from aah.llm import ModelConfig
    from aah.store import SessionStore


class When2CallFlags(NamedTuple):
    """The ``aah bench run`` flags a When2Call run reads."""

    run: str
    aah: bool
    limit: int | None
    ids: list[str]
    concurrency: int
    shard: str | None
    model: str | None
    seed: int | None
    task_timeout: float
    turns: int
    awareness: AwarenessMode
    judge: bool
    judge_model: str | None
    db: Path | None
    data: Path | None
    epochs: int = 1
    tool_mode: str = "native"
    probe: bool = True
    workers: int = 1
    ray: str | None = None


def choose_questions(
    tasks: list[When2CallTask], limit: int | None, ids: list[str]
) -> list[When2CallTask]:
    """Questions named by ``--ids``, else at most ``limit`` per gold behaviour, in data order.

    Raises:
        AahError: an id names no question.
    """
    from aah.cli.bench_run import choose_by_group

    return choose_by_group(tasks, limit, ids, lambda task: task.gold, "when2call-276e4475")


def run_when2call(flags: When2CallFlags) -> None:
    """Run (or resume) a When2Call run, then label its first turns; print a summary.

    Raises:
        AahError: no data, a bad flag, an unreachable model, or a run made otherwise.
    """
    from aah.benchmark import RunOptions, parse_shard, shard_tasks
    from aah.benchmark.when2call import (
        When2CallRunner,
        label_run_with_rules,
        load_when2call,
        questions_file,
    )
    from aah.cli.bench_run import act_on_probe, print_summary, run_with_progress
    from aah.config import get_settings
    from aah.data import find_data_dir
    from aah.llm import model_config, probe_server
    from aah.runtime import Activity, choose_tool_mode, run_async, tool_mode_choice
    from aah.store import SessionStore

    data_dir = find_data_dir(flags.data)
    all_tasks = load_when2call(data_dir)
    tasks = choose_questions(all_tasks, flags.limit, flags.ids)
    tasks = shard_tasks(tasks, parse_shard(flags.shard))
    config = model_config("agent", model=flags.model)
    judge_config = model_config("judge", model=flags.judge_model) if flags.judge else None
    choice = tool_mode_choice(flags.tool_mode)
    report = run_async(probe_server(config, overflow_probe=False)) if flags.probe else None
    if report is not None:
        act_on_probe(report)
    mode, why = run_async(choose_tool_mode(choice, config, report))
    options = RunOptions(
        run=flags.run,
        aah=flags.aah,
        concurrency=flags.concurrency,
        task_timeout=flags.task_timeout,
        seed=flags.seed,
        step_limit=flags.turns,
        epochs=flags.epochs,
        tool_mode=mode,
        probe=report.model_dump(mode="json") if report is not None else None,
        workers=flags.workers,
        ray=flags.ray,
    )
    runner = When2CallRunner(options, config, turns=flags.turns, awareness=flags.awareness)
    db_path = flags.db or get_settings().db
    console.print(
        f"run [bold]{flags.run}[/]: {len(tasks)} When2Call questions, model {config.model}, "
        f"aah {'on' if flags.aah else 'off'}, awareness {flags.awareness}, "
        f"turns {flags.turns}, tools {mode} ({why})"
        + (f" × {flags.epochs} epochs" if flags.epochs > 1 else ""),
        highlight=False,
    )
    data_sha256 = hashlib.sha256(questions_file(data_dir).read_bytes()).hexdigest()
    activity = Activity()
    summary = run_with_progress(
        flags.run,
        len(tasks) * flags.epochs,
        lambda on_done, on_waiting: runner.run(
            tasks, db_path, on_done, data_sha256=data_sha256, activity=activity
        ),
        activity,
    )
    with SessionStore(db_path) as store:
        labelled = label_run_with_rules(store, flags.run, all_tasks)
        judged = _judge(store, flags, all_tasks, judge_config) if judge_config else 0
    print_summary(flags.run, summary, db_path, next_step=f"aah report --run {flags.run}")
    console.print(
        f"[dim]first turns labelled now: {labelled} by the rules"
        + (f", {judged} by the judge {judge_config.model}" if judge_config else "")
        + "[/]",
        highlight=False,
    )


def _judge(
    store: SessionStore, flags: When2CallFlags, tasks: list[When2CallTask], config: ModelConfig
) -> int:
    from aah.benchmark.when2call import label_run_with_judge
    from aah.runtime import run_async

    return run_async(
        label_run_with_judge(store, flags.run, tasks, config, concurrency=flags.concurrency)
    )
