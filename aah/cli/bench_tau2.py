"""``aah bench tau2``: τ²-bench's simulations as one resumable run, graded as τ² grades.

The same run machinery as the other benchmarks (names, resume, shards,
epochs, workers, the probe, the progress bar, the store). Each task is a
conversation between the agent and a user: the simulated user (an LLM,
``--user-model``), the gold-playing scripted user (``--user gold``, for
offline checks with ``python -m aah.testing.tau2_script``), or a person.
Afterwards every ended simulation's grade (τ²'s evaluator) is stored for
``aah report``.
"""

from __future__ import annotations

import typer

from aah.cli.options import (
    AahOption,
    ConcurrencyOption,
    DataOption,
    DbOption,
    ModelOption,
    RayOption,
    RunOption,
    ToolModeOption,
    WorkersOption,
)
from aah.cli.output import console
from aah.errors import AahError

USERS = ("simulated", "gold", "person")


def bench_tau2(
    run: RunOption,
    domain: str = typer.Option(
        "all", "--domain", help="airline, retail, telecom, mock, a comma list, or all (the three)."
    ),
    split: str = typer.Option(
        "base", "--split", help="The tasks: base, train or test (telecom: also small)."
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N tasks per domain."),
    ids: list[str] = typer.Option([], "--ids", help="Only these tasks, as domain/id (repeatable)."),
    epochs: int = typer.Option(
        1,
        "--epochs",
        min=1,
        help="Run each task this many times (epoch by epoch; the same name resumes; "
        "the report adds pass@k and pass^k).",
    ),
    concurrency: ConcurrencyOption = 8,
    workers: WorkersOption = "1",
    ray: RayOption = None,
    shard: str | None = typer.Option(None, "--shard", help="Run shard i of n, e.g. 1/4."),
    aah: AahOption = None,
    user: str = typer.Option(
        "simulated",
        "--user",
        help="simulated (an LLM), gold (the scripted gold play) or person (at the desk).",
    ),
    user_model: str | None = typer.Option(
        None,
        "--user-model",
        help="The simulated user's model (default AAH_HUMAN_MODEL, else the agent's).",
    ),
    model: ModelOption = None,
    seed: int | None = typer.Option(None, "--seed", help="Seed sent to the model."),
    task_timeout: float = typer.Option(1800.0, "--task-timeout", help="Seconds per simulation."),
    tool_mode: ToolModeOption = "native",
    probe: bool = typer.Option(
        True,
        "--probe/--no-probe",
        help="Probe the agent's server once before the run (as `aah models check`) and "
        "store what it found in the run's manifest.",
    ),
    db: DbOption = None,
    data: DataOption = None,
    nl: bool = typer.Option(
        False, "--nl/--no-nl", help="Judge NL assertions with aah's grader (AAH_GRADER_MODEL)."
    ),
    votes: int = typer.Option(5, "--votes", min=1, help="Grader votes per NL assertion (odd)."),
) -> None:
    """Run τ²-bench simulations (agent and user) as one named, resumable run."""
    from aah.benchmark import (
        RunOptions,
        check_local_workers,
        concurrency_shares,
        parse_shard,
        parse_workers,
        shard_tasks,
    )
    from aah.benchmark.tau2 import (
        Tau2Runner,
        load_tau2_domain,
        load_tau2_tasks,
        run_tasks,
        score_tau2_run,
        summarize_tau2_run,
        user_factory,
    )
    from aah.cli.bench_run import act_on_probe, choose_by_group, print_summary, run_with_progress
    from aah.config import get_settings
    from aah.data import find_data_dir
    from aah.llm import model_config, probe_server
    from aah.runtime import Activity, choose_tool_mode, run_async, tool_mode_choice
    from aah.store import SessionStore

    processes = parse_workers(workers)
    concurrency_shares(concurrency, processes)
    if ray is not None:
        from aah.benchmark import check_ray

        check_ray(db or get_settings().db)
    else:
        check_local_workers(processes)
    if user not in USERS:
        raise AahError(f"unknown --user {user!r}: use {' or '.join(USERS)}")
    from aah.benchmark.tau2 import parse_domains

    names = parse_domains(domain)
    source = data if data is not None else find_data_dir(None)
    domains = {name: load_tau2_domain(name, source) for name in names}
    tasks = [task for name in names for task in load_tau2_tasks(domains[name], split=split)]
    chosen = choose_by_group(run_tasks(tasks), limit, ids, lambda t: t.domain, "airline/12")
    chosen = shard_tasks(chosen, parse_shard(shard))
    config = model_config("agent", model=model)
    user_config = model_config("human", model=user_model) if user == "simulated" else None
    report = run_async(probe_server(config, overflow_probe=False)) if probe else None
    if report is not None:
        act_on_probe(report)
    mode, why = run_async(choose_tool_mode(tool_mode_choice(tool_mode), config, report))
    options = RunOptions(
        run=run,
        aah=bool(aah),
        concurrency=concurrency,
        task_timeout=task_timeout,
        seed=seed,
        epochs=epochs,
        tool_mode=mode,
        probe=report.model_dump(mode="json") if report is not None else None,
        workers=processes,
        ray=ray,
    )
    runner = Tau2Runner(
        options,
        config,
        domains,
        tasks,
        user_factory(user, user_config),
        split=split,
        user_name=user if user_config is None else f"simulated:{user_config.model}",
    )
    db_path = db or get_settings().db
    console.print(
        f"run [bold]{run}[/]: {len(chosen)} τ² tasks ({', '.join(names)}; {split}), "
        f"model {config.model}, user {runner.user_name}, aah {'on' if aah else 'off'}, "
        f"tools {mode} ({why})" + (f" × {epochs} epochs" if epochs > 1 else ""),
        highlight=False,
    )
    activity = Activity()
    summary = run_with_progress(
        run,
        len(chosen) * epochs,
        lambda on_done, on_waiting: runner.run(chosen, db_path, on_done, activity=activity),
        activity,
    )
    grader = model_config("grader") if nl else None
    with SessionStore(db_path) as store:
        scored = score_tau2_run(store, run)
        if grader is not None:
            from aah.benchmark.tau2 import grade_nl_assertions

            judged = run_async(grade_nl_assertions(store, run, grader, votes))
            console.print(f"[dim]NL assertions judged now: {judged} simulations[/]")
        lines = summarize_tau2_run(store, run)
    console.print(f"[dim]simulations graded now: {scored}[/]", highlight=False)
    for line in lines:
        console.print(line, highlight=False, markup=False)
    print_summary(run, summary, db_path, next_step=f"aah report --run {run}")
