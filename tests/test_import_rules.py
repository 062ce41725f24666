"""The package's import rules, read from the source (ARCHITECTURE.md's layers).

- ``aah/scoring/`` imports nothing from ``aah/benchmark/``: scoring is what any
  benchmark uses, so it cannot know one;
- ``aah/cli/`` and ``aah/report/`` import no benchmark's folder by name: they
  find benchmarks through the registry (``aah.benchmark.get_benchmark``,
  ``report_parts``), so adding a benchmark is its folder and a registry line.
  The exceptions are listed below, each with its reason;
- every benchmark folder the registry names meets the ``Benchmark`` protocol,
  and every folder beside the registry with a ``benchmark.py`` is in it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aah
from aah.benchmark import all_benchmarks, benchmark_names, get_benchmark, report_parts
from aah.benchmark.protocol import COMMON_FLAGS, PreparedRun
from aah.benchmark.registry import REGISTRY
from aah.errors import AahError

PACKAGE = Path(aah.__file__).parent
BENCHMARK_FOLDERS = sorted(
    path.parent.name for path in (PACKAGE / "benchmark").glob("*/benchmark.py")
)
# Modules that may name one benchmark's folder, and why. Each is that
# benchmark's own command or the report's figures built on it.
ALLOWED = {
    # `aah bench data`: the Fail-TaLMs data's coverage (settings, originals, hidden facts).
    ("aah/cli/bench.py", "failtalms"),
    # `aah import failtalms-outputs`: the Fail-TaLMs paper's published answers.
    ("aah/cli/importing.py", "failtalms"),
    # The report's common figures are science.md's per-setting metrics, which
    # the Fail-TaLMs paper defines: its tables beside them (--compare paper),
    # its imports' notes, and the endpoints its tasks need (IAC).
    ("aah/report/build.py", "failtalms"),
    ("aah/report/tables.py", "failtalms"),
}


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports (at any depth of the file), as written."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def modules_under(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_the_rules_read_real_imports() -> None:
    # The reader must see a function-level import, or the rules below prove nothing.
    modules = imported_modules(PACKAGE / "report" / "tables.py")
    assert "aah.benchmark.report_parts" in modules
    assert BENCHMARK_FOLDERS == ["acebench", "bfcl", "failtalms", "tau2", "when2call"]


def test_scoring_imports_nothing_from_the_benchmarks() -> None:
    broken = [
        f"{relative(path)} imports {module}"
        for path in modules_under("scoring")
        for module in imported_modules(path)
        if module == "aah.benchmark" or module.startswith("aah.benchmark.")
    ]
    assert broken == []


@pytest.mark.parametrize("layer", ["cli", "report"])
def test_cli_and_report_find_benchmarks_only_through_the_registry(layer: str) -> None:
    broken = sorted(
        {
            f"{relative(path)} imports aah.benchmark.{folder}"
            for path in modules_under(layer)
            for module in imported_modules(path)
            for folder in BENCHMARK_FOLDERS
            if (module + ".").startswith(f"aah.benchmark.{folder}.")
            and (relative(path), folder) not in ALLOWED
        }
    )
    assert broken == []


def test_every_benchmark_folder_is_registered_and_meets_the_protocol() -> None:
    folders = {entry.split(":")[0].split(".")[2] for entry in REGISTRY.values()}
    assert folders == set(BENCHMARK_FOLDERS)
    for benchmark in all_benchmarks():
        assert benchmark.name in benchmark_names()
        assert benchmark.title and benchmark.group
        assert set(benchmark.defaults) == {"aah", "task_timeout"}
        assert not benchmark.reads & set(COMMON_FLAGS)
        for option in benchmark.options:
            assert option.flag.startswith("--") and option.name not in COMMON_FLAGS
            assert option.kind in (str, int, float, bool, list)
        assert callable(benchmark.prepare)
        assert callable(benchmark.blockers)
    keys = [part.key for _, part in report_parts()]
    assert len(keys) == len(set(keys))


def test_an_unknown_benchmark_is_one_line_naming_every_one() -> None:
    with pytest.raises(AahError) as raised:
        get_benchmark("gorilla")
    assert str(raised.value) == (
        "unknown --benchmark 'gorilla': use " + " or ".join(benchmark_names())
    )


def test_a_prepared_run_defaults_to_no_scoring_and_no_warnings() -> None:
    async def never(*_args: object) -> None:
        raise AssertionError("not started")

    prepared = PreparedRun([], "tasks", never)  # type: ignore[arg-type]
    assert prepared.finish(None) == []  # type: ignore[arg-type]
    assert prepared.warnings(None, None, None) == []  # type: ignore[arg-type]


def test_bench_list_shows_every_registered_benchmark_and_its_flags() -> None:
    import json

    from typer.testing import CliRunner

    from aah.cli import app

    done = CliRunner().invoke(app, ["bench", "list", "--json"])
    assert done.exit_code == 0, done.output
    listed = {row["name"]: row for row in json.loads(done.output)}
    assert list(listed) == list(benchmark_names())
    assert listed["bfcl"]["flags"] == ["--category"] and listed["bfcl"]["aah_default"] is False
    assert listed["tau2"]["export"] == "--tau2" and listed["tau2"]["report"] == "tau2"
    assert all(row["published"] for row in listed.values())
    help_text = CliRunner().invoke(app, ["bench", "run", "--help"], terminal_width=200).output
    for benchmark in all_benchmarks():
        for option in benchmark.options:
            assert option.flag in help_text


def test_every_benchmark_says_what_its_tasks_withheld(tmp_path: Path) -> None:
    # The Asking table reads each benchmark's blockers: a mapping (empty for a run
    # with no sessions), or None for a benchmark with nothing withheld to ask for.
    from aah.store import SessionStore

    with SessionStore(tmp_path / "s.db") as store:
        run = store.create_run("r", {"benchmark": "x"})
        found = {b.name: b.blockers(store, run) for b in all_benchmarks()}
    assert found == {"fail-talms": {}, "when2call": {}, "bfcl": {}, "tau2": None, "acebench": {}}
