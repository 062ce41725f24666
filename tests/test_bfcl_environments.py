"""BFCL's multi-turn API classes, served from the pinned wheel: loading, fresh state, BFCL's call semantics."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl.environments import BfclEnvironment
from aah.benchmark.bfcl.wheel import CLASS_MODULES, api_classes, find_bfcl_wheel
from aah.data.bfcl_wheel import BFCL_WHEEL
from aah.errors import AahError

FILES = {
    "root": {
        "alex": {
            "type": "directory",
            "contents": {
                "notes.txt": {"type": "file", "content": "hello"},
                "docs": {"type": "directory", "contents": {}},
            },
        }
    }
}


@pytest.fixture
def classes(bfcl_wheel: Path) -> Any:
    return api_classes(bfcl_wheel)


def test_the_classes_come_from_the_wheel_and_nothing_else_of_bfcl_eval(bfcl_wheel: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from aah.benchmark.bfcl.wheel import api_classes\n"
        f"classes = api_classes(Path({str(bfcl_wheel)!r}))\n"
        "print(sorted(classes))\n"
        "print(sorted({c.__module__ for c in classes.values()}))\n"
        "print([m for m in sys.modules if m.startswith('bfcl_eval')])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    names, modules, bfcl_modules = done.stdout.splitlines()
    assert names == repr(sorted(CLASS_MODULES))
    assert modules == repr(sorted(f"aah_bfcl_wheel.{stem}" for stem in CLASS_MODULES.values()))
    assert bfcl_modules == "[]"


def test_a_tampered_wheel_is_refused_in_one_line(bfcl_wheel: Path, tmp_path: Path) -> None:
    tampered = tmp_path / BFCL_WHEEL
    shutil.copyfile(bfcl_wheel, tampered)
    with tampered.open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(AahError, match="not the pinned") as error:
        api_classes(tampered)
    assert "\n" not in str(error.value)


def test_where_the_wheel_is_found(
    bfcl_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AAH_DATA_DIR", raising=False)
    monkeypatch.setenv("AAH_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / BFCL_WHEEL).symlink_to(bfcl_wheel)
    monkeypatch.setenv("AAH_BFCL_WHEEL", str(folder))
    assert find_bfcl_wheel() == bfcl_wheel.resolve()
    monkeypatch.setenv("AAH_BFCL_WHEEL", str(tmp_path / "nowhere.whl"))
    with pytest.raises(AahError, match="AAH_BFCL_WHEEL") as named:
        find_bfcl_wheel()
    monkeypatch.delenv("AAH_BFCL_WHEEL")
    data = tmp_path / "data"
    (data / "bfcl").mkdir(parents=True)
    (data / "bfcl" / BFCL_WHEEL).symlink_to(bfcl_wheel)
    assert find_bfcl_wheel(data) == bfcl_wheel.resolve()
    with pytest.raises(AahError, match="aah data fetch bfcl") as missing:
        find_bfcl_wheel()
    assert "pip download --no-deps bfcl-eval==2026.3.23" in str(missing.value)
    assert "\n" not in str(named.value) + str(missing.value)


def test_each_environment_starts_fresh(classes: Any) -> None:
    config = {"GorillaFileSystem": FILES}
    first = BfclEnvironment(["GorillaFileSystem"], config, classes=classes)
    assert first.execute("mkdir", {"dir_name": "new"}) == "None"
    assert first.execute("cd", {"folder": "docs"}) == '{"current_working_directory": "docs"}'
    second = BfclEnvironment(["GorillaFileSystem"], config, classes=classes)
    assert second.execute("pwd", {}) == '{"current_working_directory": "/alex"}'
    assert second.execute("ls", {}) == '{"current_directory_content": ["notes.txt", "docs"]}'
    assert list(config["GorillaFileSystem"]["root"]["alex"]["contents"]) == ["notes.txt", "docs"]
    assert set(first.differences(second)) == {"GorillaFileSystem"}
    assert set(first.differences(second)["GorillaFileSystem"]) == {"root"}
    assert second.differences(BfclEnvironment(["GorillaFileSystem"], config, classes=classes)) == {}


def test_long_context_padding_is_never_shared(classes: Any) -> None:
    # BFCL's padding lends each instance its module's own card records.
    first = BfclEnvironment(["TravelAPI"], {}, long_context=True, classes=classes)
    cards = first._instances["TravelAPI"].credit_card_list
    card = next(iter(cards))
    cards[card]["balance"] = -1.0
    second = BfclEnvironment(["TravelAPI"], {}, long_context=True, classes=classes)
    assert second._instances["TravelAPI"].credit_card_list[card]["balance"] != -1.0
    assert len(second._instances["TravelAPI"].credit_card_list) == len(cards)


def test_calls_run_as_bfcl_runs_them(classes: Any) -> None:
    env = BfclEnvironment(
        ["GorillaFileSystem", "MathAPI"], {"GorillaFileSystem": FILES}, classes=classes
    )
    assert env.execute("mean", {"numbers": [1, 2]}) == '{"result": 1.5}'
    assert env.execute("cd", {"folder": "nope"}) == (
        '{"error": "cd: \'nope\': No such file or directory"}'
    )
    assert env.execute("cd", {"directory": "docs"}) == (
        "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument "
        "'directory'"
    )
    assert env.execute("teleport", {"to": "moon"}) == (
        "Error during execution: name 'teleport' is not defined"
    )
    for name, shown in [("kill", "kill"), ("run", "run"), ("os.remove", "remove")]:
        assert env.execute(name, {}) == (
            f"Error during execution: Function call {shown} is not allowed."
        )
    assert {"cd", "mean", "ls"} <= env.method_names()
    assert "_load_scenario" not in env.method_names()
    assert env.parameter_names()["cd"] == ("folder",)


def test_a_later_class_wins_a_shared_name() -> None:
    class First:
        def _load_scenario(self, config: dict[str, Any], long_context: bool = False) -> None:
            self.seen = config

        def ping(self) -> str:
            return "first"

    class Second(First):
        def ping(self) -> str:
            return "second"

        def numbers(self) -> list[int]:
            return [1, 2]

        def odd(self) -> dict[str, Any]:
            return {"set": {1}}

    env = BfclEnvironment(["A", "B"], {"A": {"x": 1}}, classes={"A": First, "B": Second})
    assert env.execute("ping", {}) == "second"
    assert env.execute("numbers", {}) == "[1, 2]"
    assert env.execute("odd", {}) == "{'set': {1}}"  # not JSON: its str, as BFCL
    assert env.state() == {"A": {"seen": {"x": 1}}, "B": {"seen": {}}}
    with pytest.raises(AahError, match="no BFCL API class 'C'"):
        BfclEnvironment(["C"], {}, classes={"A": First})


def test_a_call_never_shares_its_arguments_with_the_state() -> None:
    class Keeper:
        def _load_scenario(self, config: dict[str, Any], long_context: bool = False) -> None:
            self.kept: list[str] = []

        def keep(self, items: list[str]) -> None:
            self.kept = items

        def grow(self) -> None:
            self.kept.append("more")

    env = BfclEnvironment(["K"], {}, classes={"K": Keeper})
    items = ["a"]
    env.execute("keep", {"items": items})
    env.execute("grow", {})
    assert items == ["a"] and env.state() == {"K": {"kept": ["a", "more"]}}


def test_the_state_is_json_safe(shared_data: Path, classes: Any) -> None:
    from aah.benchmark.bfcl.multi_turn_tasks import MULTI_TURN_CATEGORIES, load_multi_turn

    tasks = load_multi_turn(shared_data / "bfcl", MULTI_TURN_CATEGORIES)
    seen: set[str] = set()
    for task in tasks:
        if task.long_context or not set(task.involved_classes) <= seen:
            env = BfclEnvironment.for_task(task, classes=classes)
            state = env.state()
            assert json.loads(json.dumps(state, allow_nan=False)) == state
            assert "MathAPI" not in state
            assert set(state) == set(task.involved_classes) - {"MathAPI"}
            seen |= set(task.involved_classes)
    assert seen == set(CLASS_MODULES)
    env = BfclEnvironment(["GorillaFileSystem"], {"GorillaFileSystem": FILES}, classes=classes)
    docs = env.state()["GorillaFileSystem"]["root"]["contents"]["docs"]
    assert docs == {"name": "docs", "parent": "<Directory: alex>", "contents": {}}
