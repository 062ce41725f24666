"""``aah bench run --benchmark bfcl``: BFCL's items and multi-turn entries as one resumable run.

The same run machinery as the other benchmarks (names, resume, shards,
epochs, the probe, the progress bar, the store); afterwards every
single-turn item is checked (the AST check, the standard and intent
readings) and every multi-turn entry scored from its turns' checks, and the
results stored for ``aah report``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from aah.cli.output import console

if TYPE_CHECKING:
    from aah.benchmark.bfcl import BfclTask, MultiTurnTask


class BfclFlags(NamedTuple):
    """The ``aah bench run`` flags a BFCL run reads."""

    run: str
    category: str
    aah: bool
    limit: int | None
    ids: list[str]
    concurrency: int
    shard: str | None
    model: str | None
    seed: int | None
    task_timeout: float
    db: Path | None
    data: Path | None
    epochs: int = 1
    tool_mode: str = "native"
    probe: bool = True
    workers: int = 1
    ray: str | None = None


def choose_items(
    tasks: list[BfclTask | MultiTurnTask], limit: int | None, ids: list[str]
) -> list[BfclTask | MultiTurnTask]:
    """Items named by ``--ids``, else at most ``limit`` per category and language, in data order.

    Raises:
        AahError: an id names no item.
    """
    from aah.cli.bench_run import choose_by_group

    return choose_by_group(
        tasks, limit, ids, lambda task: f"{task.category}/{task.language}", "simple_python_12"
    )


def bfcl_data(data: Path | None) -> Path:
    """The BFCL source of a run: ``--data`` (a file or folder), else the discovered data.

    Raises:
        AahError: no BFCL data there.
    """
    from aah.benchmark.bfcl import bfcl_source
    from aah.data import find_data_dir

    return bfcl_source(data if data is not None else find_data_dir(None))


def run_bfcl(flags: BfclFlags) -> None:
    """Run (or resume) a BFCL run, then check its turns; print a summary.

    Raises:
        AahError: no data, a bad flag, an unreachable model, or a run made otherwise.
    """
    from aah.benchmark import RunOptions, parse_shard, shard_tasks
    from aah.benchmark.bfcl import (
        MULTI_TURN_STEP_LIMIT,
        BfclRunner,
        BfclTask,
        MultiTurnTask,
        api_classes,
        data_files,
        find_bfcl_wheel,
        is_multi_turn,
        load_bfcl,
        load_multi_turn,
        multi_turn_files,
        multi_turn_source,
        parse_categories,
        score_bfcl_run,
        score_multi_turn_run,
    )
    from aah.cli.bench_run import act_on_probe, print_summary, run_with_progress
    from aah.config import get_settings
    from aah.llm import model_config, probe_server
    from aah.runtime import Activity, choose_tool_mode, run_async, tool_mode_choice
    from aah.store import SessionStore

    categories = parse_categories(flags.category)
    source = bfcl_data(flags.data)
    single = [c for c in categories if not is_multi_turn(c)]
    multi = [c for c in categories if is_multi_turn(c)]
    all_tasks: list[BfclTask | MultiTurnTask] = [*load_bfcl(source, single)]
    classes = None
    if multi:
        all_tasks += load_multi_turn(multi_turn_source(source), multi)
        # BFCL's own API classes, from the pinned wheel: found (or refused) before any model call.
        classes = api_classes(find_bfcl_wheel(flags.data))
    tasks = shard_tasks(choose_items(all_tasks, flags.limit, flags.ids), parse_shard(flags.shard))
    config = model_config("agent", model=flags.model)
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
        step_limit=MULTI_TURN_STEP_LIMIT if multi else 1,
        epochs=flags.epochs,
        tool_mode=mode,
        probe=report.model_dump(mode="json") if report is not None else None,
        workers=flags.workers,
        ray=flags.ray,
    )
    runner = BfclRunner(options, config, classes)
    db_path = flags.db or get_settings().db
    languages = sorted({task.language for task in tasks})
    what = "BFCL entries" if not single else "BFCL items"
    console.print(
        f"run [bold]{flags.run}[/]: {len(tasks)} {what} ({', '.join(categories)}; "
        f"{', '.join(languages) or 'none'}), model {config.model}, "
        f"aah {'on' if flags.aah else 'off'}, tools {mode} ({why})"
        + (f" × {flags.epochs} epochs" if flags.epochs > 1 else ""),
        highlight=False,
    )
    digest = hashlib.sha256()
    files = data_files(source, single) if single else []
    if multi:
        files += multi_turn_files(multi_turn_source(source), multi)
    for path in files:
        with path.open("rb") as file:  # in chunks: a data file is never held whole
            while chunk := file.read(1 << 20):
                digest.update(chunk)
    activity = Activity()
    summary = run_with_progress(
        flags.run,
        len(tasks) * flags.epochs,
        lambda on_done, on_waiting: runner.run(
            tasks,
            db_path,
            on_done,
            categories=categories,
            data_source=str(source.resolve()),
            data_sha256=digest.hexdigest(),
            activity=activity,
        ),
        activity,
    )
    with SessionStore(db_path) as store:
        scored = score_bfcl_run(store, flags.run, [t for t in all_tasks if isinstance(t, BfclTask)])
        if multi:
            scored += score_multi_turn_run(
                store, flags.run, [t for t in all_tasks if isinstance(t, MultiTurnTask)]
            )
    print_summary(flags.run, summary, db_path, next_step=f"aah report --run {flags.run}")
    console.print(f"[dim]turns checked now: {scored}[/]", highlight=False)
