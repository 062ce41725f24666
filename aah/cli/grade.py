"""``aah grade``: the majority-vote pass verdict for every finished session of a run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aah.cli.output import WideOption, print_error, print_table, table
from aah.cli.sessions import open_store
from aah.errors import AahError

if TYPE_CHECKING:
    from rich.table import Table

    from aah.scoring.grader import GradeSummary


def grade(
    run: str = typer.Option(..., "--run", help="The run whose sessions to grade."),
    votes: int = typer.Option(5, "--votes", help="Grader votes per session (odd)."),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Sessions graded at once."),
    model: str | None = typer.Option(
        None, "--model", help="Grader model (default AAH_GRADER_MODEL, else AAH_MODEL)."
    ),
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature (> 0)."),
    db: Path | None = typer.Option(None, "--db", help="Session database (default AAH_DB)."),
    wide: bool = WideOption,
) -> None:
    """Grade a run's finished sessions by majority vote; graded ones are not sent again."""
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
