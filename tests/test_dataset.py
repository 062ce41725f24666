"""The Fail-TaLMs settings as tasks, read from the shared data copy."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aah.benchmark.failtalms.coverage import measure_coverage
from aah.benchmark.failtalms.dataset import SETTINGS, Task, load_setting, load_tasks
from aah.benchmark.failtalms.derive import hidden_facts, similarity
from aah.cli.bench import app
from aah.errors import AahError
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry


@pytest.fixture(scope="module")
def registry_path(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


@pytest.fixture(scope="module")
def tasks(shared_data: Path, registry_path: Path) -> list[Task]:
    registry = Registry(registry_path)
    try:
        return load_tasks(shared_data, registry=registry)
    finally:
        registry.close()


@pytest.fixture(scope="module")
def by_id(tasks: list[Task]) -> dict[str, Task]:
    return {task.id: task for task in tasks}


def of(tasks: list[Task], setting: str) -> list[Task]:
    return [task for task in tasks if task.setting == setting]


def test_counts_per_setting_in_order(tasks: list[Task]) -> None:
    counts = Counter(task.setting for task in tasks)
    assert counts == {
        "perfect": 575,
        "underspecified": 599,
        "replaceable": 204,
        "nonreplaceable": 297,
        "notools": 575,
    }
    assert list(dict.fromkeys(task.setting for task in tasks)) == list(SETTINGS)


def test_ids_are_unique_and_stable(shared_data: Path, tasks: list[Task]) -> None:
    ids = [task.id for task in tasks]
    assert len(set(ids)) == len(ids)
    assert all(task.id == f"{task.setting}-{task.query_id}" for task in tasks)
    again = load_setting(shared_data, "replaceable")
    assert [task.id for task in again] == [task.id for task in of(tasks, "replaceable")]


def test_every_endpoint_is_in_the_registry(tasks: list[Task], registry_path: Path) -> None:
    registry = Registry(registry_path)
    names = {name for task in tasks for name in (*task.offered, *task.needed)}
    try:
        assert sorted(name for name in names if name not in registry) == []
    finally:
        registry.close()
    assert [task.id for task in tasks if task.missing_endpoints] == []


def test_endpoints_the_registry_lacks_are_reported(
    shared_data: Path, registry_path: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "registry.db"
    shutil.copy(registry_path, copy)
    with sqlite3.connect(copy) as db:
        db.execute("DELETE FROM endpoints WHERE qualified_name = 'coinlore__get_all_exchanges'")
    registry = Registry(copy)
    try:
        tasks = load_tasks(shared_data, ["perfect", "notools"], registry)
    finally:
        registry.close()
    flagged = [task for task in tasks if task.missing_endpoints]
    # Original 1 offers it; its no-tools copy needs it.
    assert {task.id for task in flagged} >= {"perfect-1", "notools-1"}
    assert all(task.missing_endpoints == ["coinlore__get_all_exchanges"] for task in flagged)
    assert all("coinlore__get_all_exchanges" in task.needed for task in flagged)
    report = measure_coverage(tasks)
    assert all(row.missing_endpoints == ["coinlore__get_all_exchanges"] for row in report.settings)


def test_perfect_tasks_are_their_own_original(tasks: list[Task]) -> None:
    for task in of(tasks, "perfect"):
        assert task.match == "self"
        assert task.original_id == task.id
        assert task.needed == task.offered


def test_underspecified_hidden_facts(tasks: list[Task]) -> None:
    under = of(tasks, "underspecified")
    assert all(task.needed == task.offered for task in under)
    # 35 under-specified queries are word for word their original: nothing
    # was removed, so no fact can be recovered from them.
    unchanged = [task for task in under if task.query == task.original_query]
    assert len(unchanged) == 35
    changed = [task for task in under if task.query != task.original_query]
    with_facts = [task for task in changed if task.hidden_facts]
    assert len(with_facts) / len(changed) >= 0.95
    assert sum(bool(task.hidden_facts) for task in under) == 560


def test_crypto_query_hides_ethereum_and_binance_smart_chain(tasks: list[Task]) -> None:
    query = (
        "Find the top markets and exchanges for a specific cryptocurrency and also list all "
        "decentralized exchanges supported on a blockchain network."
    )
    (task,) = [t for t in of(tasks, "underspecified") if t.query == query]
    assert task.match == "exact"
    assert task.original_query is not None and "Ethereum" in task.original_query
    assert "Ethereum" in task.hidden_facts
    assert any("Binance Smart Chain" in fact for fact in task.hidden_facts)


@pytest.mark.parametrize(
    ("task_id", "original_id", "facts"),
    [
        # "...associated with the IFSC code 'HDFC0000123'" -> "a specific IFSC code"
        ("underspecified-12", "perfect-9", ["HDFC0000123"]),
        # "available in the US" -> "in my home nation": "US" is a name, not "us"
        ("underspecified-369", "perfect-344", ["US"]),
        # "the exchange rate of USD from table 'A'": quotes kept around the value
        ("underspecified-34", "perfect-45", ["table 'A'"]),
        # "Honda" is hidden once although the query still says it elsewhere
        ("underspecified-465", "perfect-433", ["Honda"]),
    ],
)
def test_underspecified_spot_checks(
    by_id: dict[str, Task], task_id: str, original_id: str, facts: list[str]
) -> None:
    task = by_id[task_id]
    assert task.original_id == original_id
    assert task.hidden_facts == facts


def test_text_beats_a_wrong_endpoint_list(by_id: dict[str, Task]) -> None:
    # underspecified-33 asks for the OKX ticker, but its api_list is the one
    # of another query (Gemini candles, N.exchange history): its original is
    # the ticker query, found by text.
    task = by_id["underspecified-33"]
    assert task.original_id == "perfect-44"
    assert task.match == "fuzzy"
    assert task.hidden_facts == ["Kraken"]


def test_replaceable_and_nonreplaceable_exact_matches(tasks: list[Task]) -> None:
    for setting, expected in (("replaceable", 186), ("nonreplaceable", 271)):
        exact = [task for task in of(tasks, setting) if task.match == "exact"]
        assert len(exact) == expected
        for task in exact:
            assert task.query == task.original_query
            assert set(task.offered) <= set(task.needed)
        odd = [task.id for task in exact if len(task.unavailable) != 1]
        # Two non-replaceable queries offer both endpoints of their original.
        assert odd == (["nonreplaceable-263", "nonreplaceable-266"] if expected == 271 else [])


def test_unavailable_endpoint_from_a_fuzzy_original(by_id: dict[str, Task]) -> None:
    # "weather stations" where the original says "senseBoxes".
    task = by_id["replaceable-66"]
    assert (task.match, task.original_id) == ("fuzzy", "perfect-135")
    assert task.unavailable == ["opensensemap__get_all_boxes"]


def test_unavailable_endpoint_from_same_text_queries(by_id: dict[str, Task]) -> None:
    # No Original query asks this, but non-replaceable 136 and 138 share the
    # text and each offers the endpoint the other lacks.
    first, second = by_id["nonreplaceable-136"], by_id["nonreplaceable-138"]
    assert first.match == second.match == "unmatched"
    assert first.unavailable == second.offered == ["countryis__get_data_sources_info"]
    assert second.unavailable == first.offered == ["opentopodata__get_health"]
    # Replaceable 127 and non-replaceable 187 differ by "using Celestrak".
    assert by_id["replaceable-127"].unavailable == by_id["nonreplaceable-187"].offered


def test_notools_originals(tasks: list[Task]) -> None:
    notools = of(tasks, "notools")
    assert sum(task.match == "exact" for task in notools) == 572
    assert all(task.offered == [] and task.needed for task in notools)
    assert {task.original_id for task in notools if task.match == "fuzzy"} == {
        "perfect-525",
        "perfect-546",
        "perfect-558",
    }


def test_coverage_counts_add_up(tasks: list[Task]) -> None:
    report = measure_coverage(tasks)
    rows = {row.setting: row for row in report.settings}
    for row in report.settings:
        kinds = row.self_matched + row.exact + row.fuzzy + row.ambiguous + row.unmatched
        assert kinds == row.total
    assert rows["underspecified"].facts_nonempty == 560
    assert rows["nonreplaceable"].nothing_unavailable is not None
    hard = {case.id for case in report.hard_cases}
    assert {"underspecified-13", "nonreplaceable-263", "nonreplaceable-136"} <= hard
    assert "underspecified-12" not in hard
    # Why a task has no facts: its query is its original's, or words were only added.
    assert rows["underspecified"].same_as_original == 35
    reasons = {case.id: case.reasons for case in report.hard_cases}
    assert "no hidden facts: same text as its original" in reasons["underspecified-13"]
    assert "no hidden facts: no words removed" in reasons["underspecified-230"]


def test_hidden_facts_merge_and_trim() -> None:
    facts = hidden_facts(
        "Get the sunrise in Sydney, Australia and an avatar in the 'pixel-art' style.",
        "Get the sunrise in my city and an avatar in a style.",
    )
    assert facts == ["Sydney, Australia", "pixel-art"]
    assert hidden_facts("Show all the items.", "Show the items.") == []


def test_similarity_bounds() -> None:
    assert similarity("list the breeds of dogs", "list the breeds of dogs") == 1.0
    assert similarity("list the breeds of dogs", "weather in Paris tomorrow") == 0.0


def test_missing_data_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="aah data fetch"):
        load_tasks(tmp_path)


def test_cli_stats_json(
    shared_data: Path, registry_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_REGISTRY", str(registry_path))
    result = CliRunner().invoke(app, ["data", "--data", str(shared_data), "--stats", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["registry_checked"] is True
    assert [row["setting"] for row in body["settings"]] == list(SETTINGS)
    assert body["settings"][1]["facts_nonempty"] == 560
    assert any(case["id"] == "nonreplaceable-263" for case in body["hard_cases"])


def test_cli_show_and_missing_registry(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_REGISTRY", str(tmp_path / "absent.db"))
    runner = CliRunner()
    args = ["data", "--data", str(shared_data), "--show", "underspecified-12", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hidden_facts"] == ["HDFC0000123"]
    assert "endpoint names not checked" in result.stderr
    missing = runner.invoke(app, ["data", "--data", str(shared_data), "--show", "nope-1"])
    assert isinstance(missing.exception, AahError)
    table = runner.invoke(app, ["data", "--data", str(shared_data), "--setting", "notools"])
    assert table.exit_code == 0 and "572" in table.stdout
