"""``aah grade``: the majority-vote pass verdict for every finished session of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from aah.cli.options import ConcurrencyOption, DbOption, ModelOption, RunOption, WideOption
from aah.cli.output import print_error, print_table, table
from aah.cli.sessions import open_store
from aah.errors import AahError

if TYPE_CHECKING:
    from rich.table import Table

    from aah.scoring.grader import GradeSummary


def grade(
    run: RunOption,
    votes: int = typer.Option(5, "--votes", help="Grader votes per session (odd)."),
    concurrency: ConcurrencyOption = 8,
    model: ModelOption = None,
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature (> 0)."),
    db: DbOption = None,
    wide: WideOption = False,
    asking: bool = typer.Option(
        False,
        "--asking",
        help="Instead: read each question against what its task withheld (rules, then the "
        "grader where they cannot say), for the report's Asking table.",
    ),
) -> None:
    """Grade a run's finished sessions by majority vote; graded ones are not sent again.

    The grader model is AAH_GRADER_MODEL (else AAH_MODEL) unless --model names one.
    """
    if asking:
        grade_asking_run(run, votes, model, temperature, db)
        return
    from aah.llm import model_config
    from aah.runtime import run_async
    from aah.scoring.grader import check_vote_settings, grade_run

    # Bad flags are reported before anything is opened or configured.
    check_vote_settings(votes, temperature)
    config = model_config("grader", model=model)
    with open_store(db) as store:
        summary = run_async(
            grade_run(
                store,
                run,
                config,
                votes=votes,
                concurrency=concurrency,
                temperature=temperature,
            )
        )
    print_table(summary_table(run, config.model, votes, summary), wide=wide)
    if summary.failed:
        # One line per kind of failure, then the exit status says the run is incomplete.
        for message, count in summary.failures.most_common():
            print_error(f"{count} session(s): {message}")
        flagged = f"; {summary.flagged} verdict(s) flagged" if summary.flagged else ""
        raise AahError(
            f"{summary.failed} of {summary.sessions} session(s) could not be graded{flagged}: "
            f"run `aah grade --run {run}` again to grade them (verdicts made are kept)"
        )


_ENDED_LABELS = {
    "error": "error",
    "cancelled": "cancelled",
    "step_limit": "step limit",
    "cut_off": "reply cut off",
    "terminated": "terminated by a person",
}


def summary_table(run: str, model: str, votes: int, summary: GradeSummary) -> Table:
    """The summary of a grading pass as a two-column rich table."""
    from aah.scoring.grader import quorum

    judged = summary.graded + summary.cached
    rows = [
        ("sessions", summary.sessions),
        ("graded now", summary.graded),
        ("already graded (cached)", summary.cached),
        ("skipped (not sent, fail)", summary.skipped),
        *(
            (f"no final answer: {_ENDED_LABELS.get(status, status)} (not sent, fail)", count)
            for status, count in sorted(summary.ended.items())
        ),
        ("still running or waiting (no verdict yet)", summary.unfinished),
        ("pass", f"{summary.passed} of {judged} graded"),
        ("flagged: tie (counted as fail)", summary.flagged - summary.no_quorum),
        (f"flagged: no quorum of {quorum(votes)} valid votes (fail)", summary.no_quorum),
        ("could not be graded (grader failed)", summary.failed),
        ("grader requests sent", summary.requests),
    ]
    return table(f"grades of {run}: {model}, {votes} votes", ["", "count"], rows)


def grade_asking_run(run: str, votes: int, model: str | None, temperature: float, db: Any) -> None:
    """``aah grade --asking``: both readings of each question against its task's blockers."""
    from aah.benchmark import benchmark_names, get_benchmark
    from aah.llm import model_config
    from aah.runtime import run_async
    from aah.scoring import grade_asking
    from aah.scoring.grader import check_vote_settings

    check_vote_settings(votes, temperature)
    config = model_config("grader", model=model)
    with open_store(db) as store:
        record = store.get_run(run)
        if record is None:
            known = ", ".join(r.name for r in store.runs()) or "none yet"
            raise AahError(f"no run named {run!r}: pass --run with one of {known}")
        name = record.manifest.get("benchmark")
        blockers = (
            get_benchmark(name).blockers(store, record)
            if isinstance(name, str) and name in benchmark_names()
            else None
        )
        if blockers is None:
            raise AahError(
                f"run {run!r} is of no benchmark whose tasks withhold anything to ask for "
                "(fail-talms, when2call, bfcl, acebench): nothing to read"
            )
        pairs, graded = run_async(
            grade_asking(store, run, blockers, config, votes=votes, temperature=temperature)
        )
    typer.echo(
        f"asking: {pairs} question-blocker pair(s) read, {graded} of them by the grader "
        f"{config.model}"
    )
