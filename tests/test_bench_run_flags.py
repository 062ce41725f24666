"""`aah bench run`'s flags come from the registry: each benchmark's own, refused for the others."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from aah.cli import app
from aah.errors import AahError


@pytest.mark.parametrize(
    ("benchmark", "flags", "message"),
    [
        ("bfcl", ["--setting", "perfect"], "--setting applies to --benchmark fail-talms, not bfcl"),
        ("tau2", ["--category", "simple"], "--category applies to --benchmark bfcl, not tau2"),
        (
            "when2call",
            ["--approve-methods", "POST"],
            "--approve-methods applies to --benchmark fail-talms, not when2call",
        ),
        ("bfcl", ["--awareness", "both"], "--awareness applies to --benchmark when2call, not bfcl"),
        ("fail-talms", ["--user", "gold"], "--user applies to --benchmark tau2, not fail-talms"),
        ("tau2", ["--judge"], "--judge applies to --benchmark when2call, not tau2"),
        ("when2call", ["--tools", "registry"], "--tools applies to --benchmark fail-talms"),
        ("bfcl", ["--discover"], "--discover applies to --benchmark fail-talms, not bfcl"),
        ("tau2", ["--step-limit", "3"], "--step-limit applies to --benchmark fail-talms"),
    ],
)
def test_a_flag_another_benchmark_reads_is_refused_in_one_line(
    benchmark: str, flags: list[str], message: str
) -> None:
    # A flag that would change nothing is an error, never silently ignored.
    done = CliRunner().invoke(
        app, ["bench", "run", "--benchmark", benchmark, "--run", "r", "--no-probe", *flags]
    )
    # `aah` prints an AahError as one `error:` line with exit status 2 (aah.cli.main).
    assert isinstance(done.exception, AahError), done.output
    text = str(done.exception)
    assert text.startswith(message) and "\n" not in text and "drop it" in text


def test_a_flag_at_its_default_is_no_refusal() -> None:
    # --step-limit 10 and --category all-single-turn are the defaults: nothing was asked for.
    done = CliRunner().invoke(
        app,
        ["bench", "run", "--benchmark", "tau2", "--run", "r", "--step-limit", "10",
         "--user", "nobody"],
    )  # fmt: skip
    assert isinstance(done.exception, AahError)
    assert str(done.exception) == "unknown --user 'nobody': use simulated or gold or person"
