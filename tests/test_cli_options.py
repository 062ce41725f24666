"""One option name, one meaning: every command's options, read from the Typer app itself."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.main import get_command

from aah.cli import app
from aah.cli.options import PER_COMMAND

Signature = tuple[tuple[str, Any], ...]


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Every leaf command of a click group, with its path (``sessions list``)."""
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        yield " ".join(path), command
        return
    for name, sub in subcommands.items():
        yield from _commands(sub, (*path, name))


def _signature(param: Any) -> Signature:
    """What a user sees of an option and what it accepts, not its Python name."""
    info = param.type_descriptor.parameter_info
    checks = {
        key: value
        for key, value in vars(info).items()
        if key not in ("default", "param_decls", "help")
        and isinstance(value, str | int | float | bool | type(None))
    }
    return (
        ("names", tuple(sorted(param.opts + param.secondary_opts))),
        ("type", str(param.type_descriptor.annotation)),
        ("default", repr(param.default)),
        ("required", param.required),
        ("help", param.help),
        *sorted(checks.items()),
    )


def option_uses(typer_app: typer.Typer) -> dict[str, dict[str, Signature]]:
    """For each ``--name``: the commands that take it, and how each declares it."""
    uses: dict[str, dict[str, Signature]] = {}
    for path, command in _commands(get_command(typer_app)):
        for param in command.params:
            if param.param_type_name != "option":
                continue
            for name in param.opts + param.secondary_opts:
                if name.startswith("--"):
                    uses.setdefault(name, {})[path] = _signature(param)
    return uses


def declared_two_ways(
    uses: dict[str, dict[str, Signature]], per_command: dict[tuple[str, str], str]
) -> list[str]:
    """Each option name whose commands (bar the excepted ones) declare it differently."""
    found = []
    for name, by_command in sorted(uses.items()):
        shared = {c: s for c, s in by_command.items() if (name, c) not in per_command}
        if len(set(shared.values())) > 1:
            found.append(f"{name} in {', '.join(sorted(shared))}")
    return found


def test_the_walk_sees_every_command_group() -> None:
    # A guard for the tests below: they must judge the whole app.
    uses = option_uses(app)
    assert {"bench run", "sessions resume", "db check", "web"} <= set(uses["--db"])
    assert len(uses["--db"]) >= 10
    assert len(uses["--json"]) >= 10


def test_one_option_name_is_declared_one_way_across_commands() -> None:
    assert declared_two_ways(option_uses(app), PER_COMMAND) == []


def test_each_per_command_exception_is_real() -> None:
    # An exception names a command that takes the option, and the option
    # really differs there; otherwise it belongs to the shared declaration.
    uses = option_uses(app)
    stale = []
    for name, command in PER_COMMAND:
        by_command = uses.get(name, {})
        others = {s for c, s in by_command.items() if c != command}
        if command not in by_command or not others or others == {by_command[command]}:
            stale.append(f"{name} in {command}")
    assert stale == []


def _two_command_app(second_help: str, second_default: int = 8) -> typer.Typer:
    small = typer.Typer()

    @small.command("one")
    def one(concurrency: int = typer.Option(8, "--concurrency", help="At once.")) -> None:
        """One."""

    @small.command("two")
    def two(
        concurrency: int = typer.Option(second_default, "--concurrency", help=second_help),
    ) -> None:
        """Two."""

    return small


@pytest.mark.parametrize(
    ("second_help", "second_default", "expected"),
    [
        ("At once.", 8, []),
        ("Probes at once.", 8, ["--concurrency in one, two"]),  # help drifted
        ("At once.", 4, ["--concurrency in one, two"]),  # default drifted
    ],
)
def test_declared_two_ways_finds_drift(
    second_help: str, second_default: int, expected: list[str]
) -> None:
    uses = option_uses(_two_command_app(second_help, second_default))
    assert declared_two_ways(uses, {}) == expected
    assert declared_two_ways(uses, {("--concurrency", "two"): "why"}) == []


def aah(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        text=True,
        capture_output=True,
        env=env,
        timeout=timeout,
    )


def test_the_old_deadline_spelling_is_the_same_option() -> None:
    uses = option_uses(app)
    for command in ("run", "bench run"):
        assert uses["--deadline"][command] == uses["--human-deadline"][command]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # --awareness is a mode everywhere; Fail-TaLMs and BFCL choose their own.
        (["bench", "run", "--run", "r", "--awareness", "both"], "--awareness applies to"),
        (
            ["bench", "run", "--run", "r", "--benchmark", "bfcl", "--awareness", "none"],
            "--awareness applies to",
        ),
        # The old bare switch, followed by another flag, is read as a mode and says what to write.
        (
            ["bench", "run", "--benchmark", "when2call", "--run", "r", "--awareness", "--judge"],
            "`--awareness both`",
        ),
        (["bench", "run", "--benchmark", "when2call", "--run", "r", "--awareness"], "argument"),
        (["run", "Weather?", "--awareness", "some"], "use info, tool, both or none"),
        (["data", "manifest"], "needs --from DIR"),
    ],
)
def test_option_mistakes_are_one_line(args: list[str], message: str) -> None:
    result = aah(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("error:")
    assert len(result.stderr.strip().splitlines()) == 1
