"""A newcomer's first hour, met as they meet it: commands run as subprocesses.

Tables at 60, 80 and 120 columns fit and mark every cut with "…"; a mistyped
``--data`` is an error; a run against a dead server stops at once; a run
whose output is a log prints plain progress lines; help text has no markup.
"""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len

from aah.store import SessionStore
from aah.testing import FakeLLMServer, load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "scripted_agent.yaml"
WEATHER = "openmeteo__get_weather_forecast"
BOX = set("━─┏┓┗┛┳┻╇┩┡┠┨┯┷└┘┌┐┬┴├┤┼╋")


def aah(
    *args: str, env: dict[str, str] | None = None, width: int = 200, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``aah ARGS`` in a clean environment (no AAH_* or keys), at a terminal width."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    clean.update({"COLUMNS": str(width), "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        text=True,
        capture_output=True,
        env=clean,
        timeout=300,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def fake_model() -> Iterator[dict[str, str]]:
    with FakeLLMServer(load_script(SCRIPT)) as server:
        yield {"AAH_BASE_URL": server.base_url, "AAH_MODEL": "fake-model", "AAH_API_KEY": "fake"}


@pytest.fixture(scope="module")
def world(
    shared_registry: Path, fake_model: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """A registry, a model, and a database holding more sessions than a page."""
    db = tmp_path_factory.mktemp("sessions") / "aah.db"
    env = {**fake_model, "AAH_REGISTRY": str(shared_registry), "AAH_DB": str(db)}
    made = aah("bench", "run", "--run", "smoke", "--limit", "5", env=env)
    assert made.returncode == 0, made.stderr
    return env


TABLE_COMMANDS = [
    ("tools", "search", "weather forecast"),
    ("tools", "list", "--category", "Weather"),
    ("tools", "show", WEATHER),
    ("bench", "data", "--stats"),
    ("bench", "data", "--show", "underspecified-17"),
    ("sessions", "list"),
    ("sessions", "list", "--all"),
    ("models", "check"),
    ("grade", "--run", "smoke"),
]


@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("width", [60, 80, 120])
def test_tables_fit_the_terminal_and_cut_words_end_in_an_ellipsis(
    command: tuple[str, ...], width: int, world: dict[str, str]
) -> None:
    fitted = aah(*command, env=world, width=width)
    whole = aah(*command, "--wide", env=world, width=width)
    assert fitted.returncode == whole.returncode == 0, fitted.stderr + whole.stderr
    # Figures such as latencies differ between the two runs: compare words' shapes.
    words = set(re.sub(r"\d", "0", whole.stdout).split())
    for line in fitted.stdout.splitlines():
        assert cell_len(line) <= width, line
        shapes = re.sub(r"\d", "0", line.replace(" …", "…"))
        for word in re.split(r"[\s│┃]+", shapes):
            if word and not set(word) <= BOX:
                assert word in words or word.endswith("…"), (word, line)


def test_sessions_list_pages_and_counts_the_rest(world: dict[str, str]) -> None:
    paged = aah("sessions", "list", env=world).stdout
    every = aah("sessions", "list", "--all", env=world).stdout
    assert "the newest 20 sessions" in paged and "25 sessions in all" in paged
    assert "--all lists every one" in paged
    assert every.startswith("25 sessions") and len(every.splitlines()) > len(paged.splitlines())


def _not_data(tmp_path: Path) -> list[Path]:
    file = tmp_path / "a-file"
    file.write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    only_openapi = tmp_path / "only-openapi"
    (only_openapi / "openapi").mkdir(parents=True)
    return [tmp_path / "missing", file, empty, only_openapi, tmp_path / "missing" / "deeper"]


@pytest.mark.parametrize(
    "command",
    [("tools", "search", "weather"), ("tools", "show", WEATHER), ("run", "hello")],
    ids=" ".join,
)
def test_data_that_names_no_data_directory_is_an_error(
    command: tuple[str, ...], world: dict[str, str], tmp_path: Path
) -> None:
    for bad in _not_data(tmp_path):
        result = aah(*command, "--data", str(bad), env=world)
        assert result.returncode == 2, (bad, result.stdout)
        assert result.stderr.startswith(f"error: --data {bad} is not a data directory"), bad
        assert len(result.stderr.splitlines()) == 1


def test_bench_run_against_a_dead_server_stops_before_any_task(
    shared_registry: Path, tmp_path: Path
) -> None:
    env = {
        "AAH_BASE_URL": "http://127.0.0.1:9/v1",
        "AAH_MODEL": "m",
        "AAH_API_KEY": "x",
        "AAH_REGISTRY": str(shared_registry),
        "AAH_DB": str(tmp_path / "aah.db"),
    }
    result = aah("bench", "run", "--run", "dead", "--limit", "2", env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: the model server is unreachable: cannot reach")
    assert "no task was run" in result.stderr and "aah grade" not in result.stdout


def test_bench_run_into_a_log_prints_plain_progress_lines(
    world: dict[str, str], tmp_path: Path
) -> None:
    env = {**world, "AAH_DB": str(tmp_path / "log.db")}
    result = aah("bench", "run", "--run", "logged", "--limit", "2", env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("logged: ")]
    assert result.returncode == 0, result.stderr
    assert lines[-1].startswith("logged: 10/10 tasks ended")
    assert len(lines) == 10  # one line a tenth of the run


def test_plain_progress_speaks_while_no_task_ends(capsys: pytest.CaptureFixture[str]) -> None:
    from aah.cli.bench_run import PlainProgress

    now = [0.0]
    progress = PlainProgress("slow", 3, lambda done: "0.00 tasks/s", clock=lambda: now[0])
    progress.tick()
    now[0] = 29.0
    progress.tick()
    assert capsys.readouterr().out == ""
    now[0] = 31.0
    progress.tick()
    assert capsys.readouterr().out.startswith("slow: 0/3 tasks ended (still running)")
    now[0] = 45.0
    progress.tick()  # 14 s after the last line: quiet
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("cap", "warned"), [(None, True), (2, True), (1, False)])
def test_one_at_a_time_server_advice_heeds_the_cap_already_set(
    cap: int | None, warned: bool
) -> None:
    from aah.llm import ProbeReport

    report = ProbeReport(
        role="agent", base_url="u", model="m", reachable=True, concurrent=False,
        max_connections=cap,
    )  # fmt: skip
    line = next(row for row in report.lines() if row.check == "concurrent requests")
    assert line.warning is warned
    assert ("set AAH_MAX_CONNECTIONS=1" in line.action) is warned


def _commands() -> list[list[str]]:
    import typer.main

    from aah.cli import app

    paths: list[list[str]] = []

    def walk(group: object, path: list[str]) -> None:
        for name, command in getattr(group, "commands", {}).items():
            paths.append([*path, name])
            walk(command, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_no_help_shows_docstring_markup() -> None:
    from typer.testing import CliRunner

    from aah.cli import app

    runner = CliRunner()
    for path in [[], *_commands()]:
        text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"}).output
        assert "``" not in text and ":func:" not in text, (path, text)


def test_bench_run_without_the_probe_stops_after_the_same_failure_repeats(
    shared_registry: Path, tmp_path: Path
) -> None:
    env = {
        "AAH_BASE_URL": "http://127.0.0.1:9/v1",
        "AAH_MODEL": "m",
        "AAH_API_KEY": "x",
        "AAH_LLM_RETRIES": "0",
        "AAH_REGISTRY": str(shared_registry),
        "AAH_DB": str(tmp_path / "aah.db"),
    }
    result = aah("bench", "run", "--run", "dead", "--limit", "20", "--no-probe", env=env)
    assert result.returncode == 2, result.stdout
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: the first 8 tasks all failed the same way (")
    assert "cannot reach" in last and "run the same command again" in last
    with SessionStore(tmp_path / "aah.db") as store:
        sessions = store.list_sessions(run="dead")
    assert len(sessions) < 100  # stopped: far fewer than the 100 tasks asked for
