"""Extension points: one registry each, typed names, one-line errors for unknown names."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

import pytest

from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.humans import (
    BATCH_HUMANS,
    BatchHumanOptions,
    OracleHuman,
    task_human_factory,
)
from aah.cli.classify import BEHAVIOUR_JUDGES, choose_judge
from aah.errors import AahError
from aah.extensions import (
    BASE_HTTP_MODE_NAMES,
    BATCH_HUMAN_NAMES,
    BEHAVIOUR_JUDGE_NAMES,
    HTTP_MODE_NAMES,
    HUMAN_CHANNEL_NAMES,
    BatchHumanName,
    BehaviourJudgeName,
    HttpModeName,
    HumanChannelName,
    choose,
    known_name,
)
from aah.runtime.humans import (
    HUMAN_CHANNELS,
    ChannelOptions,
    ConsoleHuman,
    QueueHuman,
    make_human_channel,
)
from aah.store import SessionStore
from aah.tools.http import BASE_HTTP_MODES, HTTP_MODES, make_executor

# Each registry, the names its Literal allows, and what its error calls a name.
REGISTRIES: list[tuple[Mapping[str, Any], tuple[str, ...], str]] = [
    (HUMAN_CHANNELS, HUMAN_CHANNEL_NAMES, "human channel"),
    (BATCH_HUMANS, BATCH_HUMAN_NAMES, "human"),
    (HTTP_MODES, HTTP_MODE_NAMES, "HTTP mode"),
    (BASE_HTTP_MODES, BASE_HTTP_MODE_NAMES, "base HTTP mode"),
]
# Names no registry knows: empty, wrong case, padded, a near miss, another point's name.
UNKNOWN_NAMES = ["", "Oracle", "mock ", "telepathy", "consol", "fault-mode", "oracle\nmock"]


def test_each_registry_holds_exactly_its_literal_names_in_order() -> None:
    assert HUMAN_CHANNEL_NAMES == get_args(HumanChannelName)
    assert BATCH_HUMAN_NAMES == get_args(BatchHumanName)
    assert HTTP_MODE_NAMES == get_args(HttpModeName)
    for table, names, _ in REGISTRIES:
        assert tuple(table) == names
    assert set(HTTP_MODE_NAMES) - set(BASE_HTTP_MODE_NAMES) == {"fault"}


@pytest.mark.parametrize("name", UNKNOWN_NAMES)
@pytest.mark.parametrize(("table", "names", "what"), REGISTRIES)
def test_an_unknown_name_is_one_line_listing_the_valid_ones(
    table: Mapping[str, Any], names: tuple[str, ...], what: str, name: str
) -> None:
    with pytest.raises(AahError) as caught:
        choose(table, name, what)
    message = str(caught.value)
    assert message == f"unknown {what} {name!r}: use one of {', '.join(names)}"
    assert "\n" not in message
    with pytest.raises(AahError, match="^unknown") as typed:
        known_name(names, name, what)
    assert str(typed.value) == message


@pytest.mark.parametrize("name", UNKNOWN_NAMES)
def test_an_unknown_judge_names_the_valid_flags_in_one_line(name: str) -> None:
    assert tuple(BEHAVIOUR_JUDGES) == BEHAVIOUR_JUDGE_NAMES == get_args(BehaviourJudgeName)
    with pytest.raises(AahError) as caught:
        choose_judge(name)
    assert str(caught.value) == f"unknown judge {name!r}: use --judge rule or --judge llm"
    assert choose_judge("rule") is BEHAVIOUR_JUDGES["rule"]


def test_known_names_come_back_typed() -> None:
    for table, names, what in REGISTRIES:
        for name in names:
            assert known_name(names, name, what) == name
            assert choose(table, name, what) is table[name]


def _facts() -> TaskFacts:
    return TaskFacts(query="Price of a coin?", hidden_facts=["bitcoin"], setting="underspecified")


# The public entry points that pick by name, each with an unknown name.
ENTRY_POINTS: list[tuple[str, Callable[[Path, str], object]]] = [
    ("human channel", lambda tmp, name: make_human_channel(name, ChannelOptions(tmp / "s.db"))),
    ("human", lambda tmp, name: task_human_factory(name, BatchHumanOptions())),
    ("HTTP mode", lambda tmp, name: make_executor(name)),
]


@pytest.mark.parametrize(("what", "pick"), ENTRY_POINTS)
def test_entry_points_refuse_unknown_names_in_one_line(
    what: str, pick: Callable[[Path, str], object], tmp_path: Path
) -> None:
    with pytest.raises(AahError, match=f"^unknown {what} 'nobody': use one of [a-z, ]+$"):
        pick(tmp_path, "nobody")


def test_registries_build_what_they_name(tmp_path: Path) -> None:
    options = ChannelOptions(tmp_path / "s.db", deadline_seconds=3)
    assert isinstance(make_human_channel("console", options), ConsoleHuman)
    queue = make_human_channel("queue", options)
    assert isinstance(queue, QueueHuman) and queue.deadline_seconds == 3
    queue.store.close()
    store = SessionStore(tmp_path / "b.db")
    make = task_human_factory("oracle", BatchHumanOptions())
    assert isinstance(make(_facts(), store), OracleHuman)
    batch_queue = task_human_factory("queue", BatchHumanOptions(deadline_seconds=7))(
        _facts(), store
    )
    assert isinstance(batch_queue, QueueHuman) and batch_queue.deadline_seconds == 7
    store.close()
    for mode in ("live", "mock"):
        executor = make_executor(mode)
        assert type(executor) is type(HTTP_MODES[mode](_options()))
        executor.close()


def _options() -> Any:
    from aah.config import get_settings
    from aah.tools.http import ExecutorOptions
    from aah.tools.http.modes import HttpLimits

    settings = get_settings()
    limits = HttpLimits(settings.http_timeout, settings.http_retries, settings.http_max_bytes, 0.5)
    return ExecutorOptions(limits)


def _aah(*args: str, columns: int = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update({"COLUMNS": str(columns), "NO_COLOR": "1", "AAH_MODEL": "m"})
    env["AAH_BASE_URL"] = "http://127.0.0.1:9/v1"
    return subprocess.run(
        [sys.executable, "-m", "aah", *args], text=True, capture_output=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["run", "Hi", "--human", "nobody"],
            "error: unknown human channel 'nobody': use one of console, queue",
        ),
        (
            ["bench", "run", "--run", "r", "--human", "nobody"],
            "error: unknown --human 'nobody': use one of oracle, simulated, queue",
        ),
        (
            ["bench", "run", "--run", "r", "--http", "fault"],
            "error: unknown --http 'fault': use one of live, record, replay, mock",
        ),
    ],
)
def test_the_command_line_names_the_valid_choices_in_one_line(
    args: list[str], error: str, tmp_path: Path
) -> None:
    result = _aah(*args, "--db", str(tmp_path / "s.db"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == error


def test_help_lists_the_registry_names() -> None:
    run_help = _aah("run", "--help", columns=250).stdout
    bench_help = _aah("bench", "run", "--help", columns=250).stdout
    assert f"Who answers: {', '.join(HUMAN_CHANNEL_NAMES)}." in run_help
    assert f"{', '.join(HTTP_MODE_NAMES)}." in run_help
    assert f"{', '.join(BATCH_HUMAN_NAMES)}." in bench_help
    assert f"{', '.join(BASE_HTTP_MODE_NAMES)}." in bench_help
