"""Files a person names for a command to write: never an existing one unless --force, never
through a symbolic link, and ``-`` is standard output.

``aah sessions export --otlp``, ``aah report --out`` and ``aah classify --out`` share the rule.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from aah.benchmark.failtalms.imports import import_failtalms_outputs
from aah.cli import app
from aah.errors import AahError
from aah.store import SessionStore

PUBLISHED = Path(__file__).parent / "fixtures" / "published_outputs"
OLD = "the file that was there\n"

# Each command that writes a named file: its arguments before the file, and its option.
Command = Callable[[Path], list[str]]


@pytest.fixture
def commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Command]:
    """``name -> (file -> arguments)`` for the three commands, each with data to write."""
    monkeypatch.delenv("AAH_DATA_DIR", raising=False)
    monkeypatch.setenv("AAH_CACHE_DIR", str(tmp_path / "empty-cache"))
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        import_failtalms_outputs(PUBLISHED, store)
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"reply": "Which city do you mean?"}) + "\n", encoding="utf-8")
    return {
        "export": lambda out: ["sessions", "export", "--db", str(db), "--otlp", str(out)],
        "report": lambda out: ["report", "--db", str(db), "--format", "md", "--out", str(out)],
        "classify": lambda out: ["classify", str(replies), "--out", str(out)],
    }


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(app, args)


def refusal(result: Result) -> str:
    assert isinstance(result.exception, AahError), result.output
    message = str(result.exception)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("name", ["export", "report", "classify"])
def test_an_existing_file_is_refused_without_force_and_replaced_with_it(
    name: str, commands: dict[str, Command], tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    out.write_text(OLD, encoding="utf-8")
    out.chmod(0o600)
    message = refusal(invoke(commands[name](out)))
    assert f"{out} exists: pass --force to replace it" in message
    assert out.read_text(encoding="utf-8") == OLD
    result = invoke([*commands[name](out), "--force"])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") != OLD
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # a private file stays private
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []


@pytest.mark.parametrize("name", ["export", "report", "classify"])
def test_a_symbolic_link_is_never_written_through(
    name: str, commands: dict[str, Command], tmp_path: Path
) -> None:
    target = tmp_path / "precious.txt"
    target.write_text(OLD, encoding="utf-8")
    link = tmp_path / "out.txt"
    link.symlink_to(target)
    assert "exists: pass --force" in refusal(invoke(commands[name](link)))
    result = invoke([*commands[name](link), "--force"])
    assert result.exit_code == 0, result.output
    # The link itself was replaced by the new file; what it pointed at is untouched.
    assert target.read_text(encoding="utf-8") == OLD
    assert not link.is_symlink() and link.read_text(encoding="utf-8") != OLD


def test_a_dangling_link_is_not_followed_to_make_its_target(
    commands: dict[str, Command], tmp_path: Path
) -> None:
    planted = tmp_path / "made-through-the-link.txt"
    link = tmp_path / "spans.json"
    link.symlink_to(planted)
    assert "exists: pass --force" in refusal(invoke(commands["export"](link)))
    assert not planted.exists()


def test_a_dash_writes_to_standard_output(
    commands: dict[str, Command], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(commands["export"](Path("-")))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["resourceSpans"]
    assert "to standard output" in result.stderr
    result = invoke(commands["report"](Path("-")))
    assert result.exit_code == 0 and result.stdout.startswith("# aah report")
    assert not (tmp_path / "-").exists()


def test_a_new_file_is_written_and_a_folder_or_a_missing_one_is_one_line(
    commands: dict[str, Command], tmp_path: Path
) -> None:
    out = tmp_path / "spans.json"
    result = invoke(commands["export"](out))
    assert result.exit_code == 0, result.output
    assert "resourceSpans" in json.loads(out.read_text(encoding="utf-8"))
    assert "is a folder" in refusal(invoke([*commands["export"](tmp_path), "--force"]))
    missing = tmp_path / "no" / "such" / "spans.json"
    assert "cannot write" in refusal(invoke(commands["export"](missing)))


def test_the_default_report_html_is_replaced_never_written_through_a_link(
    tmp_path: Path, commands: dict[str, Command], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    (tmp_path / "report.html").symlink_to(target)
    monkeypatch.chdir(tmp_path)
    args = [arg for arg in commands["report"](Path("x"))[:-2] if arg != "md"]
    args = [arg if arg != "--format" else "--format=html" for arg in args]
    for _ in range(2):  # a new report replaces the last one's report.html
        result = invoke(args)
        assert result.exit_code == 0, result.output
    assert target.read_text() == "keep me"
    assert not (tmp_path / "report.html").is_symlink()
    assert "<html" in (tmp_path / "report.html").read_text().lower()
