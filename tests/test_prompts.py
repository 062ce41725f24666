"""Model-facing text lives in versioned prompt files, and a run's manifest records them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import SecretStr

import aah
from aah.benchmark import RunOptions, run_manifest
from aah.benchmark.failtalms.humans import CANNOT_HELP, JOKE, benchmark_prompt_versions
from aah.llm import ModelConfig
from aah.prompts import PromptFolder, read_prompt
from aah.runtime.humans import IDK_REPLY
from aah.runtime.prompts import PROMPT_DIR, load_prompt, prompt_versions
from aah.tools import tool_prompt, tool_prompt_versions
from aah.tools.builtin import ASK_HUMAN_DESCRIPTION, ASK_HUMAN_PARAMETERS
from aah.tools.calls import CallChecker
from aah.tools.spec import ParameterSpec

PACKAGE = Path(aah.__file__).resolve().parent
EVERY_PROMPT_FILE = sorted(PACKAGE.rglob("prompts/*.md"))


def test_there_are_prompt_files_in_several_packages() -> None:
    folders = {path.parent.relative_to(PACKAGE).as_posix() for path in EVERY_PROMPT_FILE}
    assert {"runtime/prompts", "tools/prompts", "benchmark/failtalms/prompts"} <= folders


@pytest.mark.parametrize("path", EVERY_PROMPT_FILE, ids=lambda p: p.stem)
def test_every_prompt_file_declares_a_version(path: Path) -> None:
    assert path.read_text(encoding="utf-8").startswith("---\nversion: ")
    version = read_prompt(path).version
    assert re.fullmatch(r"[a-z0-9-]+/\d+", version), version


def test_the_session_prompts_gather_runtime_and_tools_without_clashes() -> None:
    runtime = PromptFolder(PROMPT_DIR).versions()
    tools = tool_prompt_versions()
    assert not set(runtime) & set(tools)
    assert prompt_versions() == {**runtime, **tools}
    for name in ("declined_answer", "skip_message", "agent_system"):
        assert name in runtime
    for name in (
        "check_ifn",
        "check_ian",
        "check_iat",
        "check_iav",
        "check_ife",
        "check_rac",
        "check_blank",
    ):
        assert name in tools
    assert {"unreadable_call", "ask_human_tool", "ask_human_question"} <= set(tools)


def test_the_run_manifest_records_every_prompt_version() -> None:
    config = ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=SecretStr("k"))
    manifest = run_manifest(RunOptions(run="r"), config, "hash", ["perfect"])
    versions = manifest["prompt_versions"]
    assert versions["check_ifn"] == tool_prompt("check_ifn").version == "check-ifn/1"
    assert versions["declined_answer"] == load_prompt("declined_answer").version
    assert versions["simulated_human"].startswith("simulated-human/")
    assert versions["idk_reply"] == "idk-reply/1"
    assert versions["oracle_cannot_help"] == "oracle-cannot-help/1"
    assert versions["oracle_joke"] == "oracle-joke/1"
    assert set(prompt_versions()) | set(benchmark_prompt_versions()) == set(versions)
    assert not set(prompt_versions()) & set(benchmark_prompt_versions())


def test_the_fixed_human_replies_read_their_prompt_files() -> None:
    assert IDK_REPLY == "I don't know." == load_prompt("idk_reply").render()
    assert CANNOT_HELP == "I can't look that up myself."
    assert JOKE.startswith("Why did the developer go broke?")


def test_a_folder_reports_a_changed_version(tmp_path: Path) -> None:
    (tmp_path / "hello.md").write_text("---\nversion: hello/1\n---\nHi {name}.\n")
    (tmp_path / "bare.md").write_text("No front matter.\n")
    folder = PromptFolder(tmp_path)
    assert folder.versions() == {"bare": "bare", "hello": "hello/1"}
    assert folder.load("hello").render(name="Ada") == "Hi Ada."
    (tmp_path / "hello.md").write_text("---\nversion: hello/2\n---\nHello {name}.\n")
    read_prompt.cache_clear()
    assert folder.versions()["hello"] == "hello/2"


TOOLS = {
    "weather__get": [
        ParameterSpec(name="city", required=True),
        ParameterSpec(name="days", type="integer"),
    ]
}
VALID = "Valid arguments: city (string, required), days (integer)."
# One bad call per check, and the feedback it must get (the same words as
# before the texts moved to prompt files).
BAD_CALLS = [
    (
        "weather__get",
        "not json",
        "IFE",
        "The arguments of your call to 'weather__get' are not a JSON object. "
        "Send the arguments as a JSON object of named values.",
    ),
    (
        "nothing__here",
        {},
        "IFN",
        "There is no tool named 'nothing__here'. Available tools: weather__get.",
    ),
    (
        "weather__get",
        {"city": "Oslo", "town": "x"},
        "IAN",
        f"weather__get has no argument named 'town'. {VALID}",
    ),
    (
        "weather__get",
        {"days": 2},
        "IAV",
        f"weather__get needs the argument(s) city, which your call left out. {VALID} "
        "If you do not know a value, ask the user.",
    ),
    (
        "weather__get",
        {"city": "Oslo", "days": "many"},
        "IAT",
        "weather__get got argument(s) of the wrong type: days (Input should be a valid "
        f"integer, unable to parse string as an integer). {VALID}",
    ),
]


@pytest.mark.parametrize(("name", "arguments", "code", "feedback"), BAD_CALLS)
def test_check_feedback_comes_from_the_prompt_files(
    name: str, arguments: object, code: str, feedback: str
) -> None:
    assert CallChecker(TOOLS).check(name, arguments) == (code, feedback)


def test_a_repeated_call_gets_the_repeat_feedback() -> None:
    checker = CallChecker(TOOLS)
    assert checker.check("weather__get", {"city": "Oslo"}).ok
    verdict = checker.check("weather__get", {"city": "Oslo"})
    assert verdict == (
        "RAC",
        tool_prompt("check_rac").render(name="weather__get"),
    )


def test_the_ask_human_tool_reads_its_prompt_files() -> None:
    assert ASK_HUMAN_DESCRIPTION == tool_prompt("ask_human_tool").render()
    assert ASK_HUMAN_PARAMETERS[0].description == tool_prompt("ask_human_question").render()
    unreadable = tool_prompt("unreadable_call").render(error="bad JSON")
    assert unreadable.startswith("Your tool call could not be read (bad JSON).")
    assert '{"name": ..., "arguments": {...}}' in unreadable
