"""τ²'s domains and tasks read from the data directory: splits, ids, and a damaged file in one line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tau2_data import corpus, damaged_copy, domain, shared_data

from aah.benchmark.tau2 import load_tau2_domain, load_tau2_tasks, split_names
from aah.errors import AahError

COUNTS = {
    ("airline", "base"): 50,
    ("airline", "train"): 30,
    ("airline", "test"): 20,
    ("retail", "base"): 114,
    ("retail", "train"): 74,
    ("retail", "test"): 40,
    ("telecom", "base"): 114,
    ("telecom", "train"): 74,
    ("telecom", "test"): 40,
    ("telecom", "small"): 20,
    ("mock", "base"): 10,
}


@pytest.mark.parametrize(("name", "split"), sorted(COUNTS))
def test_each_split_has_its_tasks(tau2_wheel: Path, name: str, split: str) -> None:
    tasks = load_tau2_tasks(domain(name, tau2_wheel), split=split)
    assert len(tasks) == COUNTS[name, split]
    assert len({task.id for task in tasks}) == len(tasks)
    assert all(task.domain == name and task.task.id == task.id for task in tasks)


def test_splits_and_ids(tau2_wheel: Path) -> None:
    telecom = domain("telecom", tau2_wheel)
    assert split_names(telecom) == ["small", "train", "test", "base"]
    base = load_tau2_tasks(telecom)
    train = {t.id for t in load_tau2_tasks(telecom, split="train")}
    assert train < {t.id for t in base}
    chosen = load_tau2_tasks(telecom, ids=[base[5].id, base[2].id, base[5].id])
    assert [t.id for t in chosen] == [base[5].id, base[2].id]
    airline = domain("airline", tau2_wheel)
    first = load_tau2_tasks(airline, ids=["3"])[0]
    assert first.reward_basis == ("DB", "COMMUNICATE")
    assert first.nl_assertions and "Instructions:" in first.user_scenario
    assert [a.name for a in first.gold_actions] == ["get_reservation_details", "get_user_details"]
    assert airline.guidelines.startswith("# User Simulation Guidelines")
    assert telecom.guidelines != airline.guidelines  # the user has tools in telecom
    assert "<main_policy>" in telecom.policy and "<tech_support_policy>" in telecom.policy


@pytest.mark.parametrize(
    ("name", "options", "problem"),
    [
        (
            "airline",
            {"split": "small"},
            "unknown split 'small' of τ²'s airline: use train, test, base",
        ),
        (
            "telecom",
            {"split": "full"},
            "the full telecom set (2,285 generated tasks) is not in aah's data",
        ),
        ("airline", {"ids": ["3", "nope"]}, "no task 'nope' in τ²'s airline (base): check --ids"),
        ("airline", {"split": "test", "ids": ["0"]}, "no task '0' in τ²'s airline (test)"),
    ],
)
def test_unknown_splits_and_ids_are_one_line(
    tau2_wheel: Path, name: str, options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(AahError) as caught:
        load_tau2_tasks(domain(name, tau2_wheel), **options)
    assert problem in str(caught.value) and "\n" not in str(caught.value)


def test_an_unknown_domain_or_folder_is_one_line(tau2_wheel: Path, tmp_path: Path) -> None:
    with pytest.raises(AahError, match="unknown τ² domain 'banking': use one of airline, retail"):
        load_tau2_domain("banking", shared_data(), wheel=tau2_wheel)
    with pytest.raises(AahError, match="no τ² data at .*: run `aah data fetch tau2`"):
        load_tau2_domain("mock", tmp_path, wheel=tau2_wheel)


def test_the_upstream_only_retail_lookup_is_allowed_in_gold_actions(tau2_wheel: Path) -> None:
    retail = domain("retail", tau2_wheel)
    named = {a.name for t in load_tau2_tasks(retail) for a in t.gold_actions}
    # Upstream's fixed tasks use it; the pinned wheel's retail tools do not have it.
    assert "get_item_details" in named and "get_item_details" not in retail.agent_tool_names


@pytest.mark.parametrize("case", corpus(), ids=lambda case: case["why"])
def test_every_damaged_file_is_one_line(
    case: dict[str, Any], tau2_wheel: Path, tmp_path: Path
) -> None:
    data = damaged_copy(tmp_path, case["file"], case["mutation"])
    with pytest.raises(AahError) as caught:
        loaded = load_tau2_domain(case["domain"], data, wheel=tau2_wheel)
        assert case["stage"] == "tasks", "the domain loaded"
        load_tau2_tasks(loaded, split=case.get("split", "base"))
    message = str(caught.value)
    assert "\n" not in message
    assert re.search(case["error"], message), message
    assert str(tmp_path) in message or "unknown" in message
