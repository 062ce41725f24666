"""Every number of seconds and every JSON text from outside is bounded, with one line when not.

The bounds live in ``aah.bounds``; this corpus walks the ways they enter:
``AAH_*`` settings, ``--human-deadline``, an approval policy file, the
channels' own constructors (a resumed session's recipe), and the parse of
JSON a person or a peer wrote.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from test_cli import aah

from aah.bounds import (
    MAX_NESTING,
    MAX_WAIT_SECONDS,
    OutOfBounds,
    check_nesting,
    check_seconds,
    nesting,
    parse_json,
)
from aah.config import get_settings
from aah.errors import AahError

# Numbers no clock should be handed, in the spellings an environment or a JSON client uses.
WILD = ["1e18", "nan", "NaN", "inf", "-Infinity", "-1", "0", "2592001", "1e400", "0x10", " "]
SECONDS_SETTINGS = [
    "AAH_HTTP_TIMEOUT",
    "AAH_LLM_TIMEOUT",
    "AAH_MCP_TIMEOUT",
    "AAH_MCP_START_TIMEOUT",
    "AAH_NOTIFY_AFTER",
    "AAH_NOTIFY_INTERVAL",
]


@pytest.mark.parametrize("name", SECONDS_SETTINGS)
@pytest.mark.parametrize("value", [v for v in WILD if v.strip()])
def test_a_seconds_setting_past_the_bounds_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(AahError) as refused:
        get_settings()
    line = str(refused.value)
    assert line.startswith(name) and line.endswith("fix or unset it") and "\n" not in line


@pytest.mark.parametrize(
    ("name", "value"),
    [("AAH_HTTP_RETRIES", "1e18"), ("AAH_HTTP_RETRIES", "99"), ("AAH_LLM_RETRIES", "-1")]
    + [("AAH_MAX_REPLY_BYTES", "10000000000"), ("AAH_LLM_RETRY_BUDGET", "inf")],
)
def test_a_count_setting_past_the_bounds_is_one_line(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(AahError, match=f"^{name}"):
        get_settings()


def test_a_url_setting_that_fails_is_named_without_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AAH_RETRIEVAL", "sk-live-0123456789abcdef")
    with pytest.raises(AahError) as refused:
        get_settings()
    assert "sk-live" not in str(refused.value) and str(refused.value).startswith("AAH_RETRIEVAL")


@pytest.mark.parametrize(
    "value", [1e18, math.nan, math.inf, -math.inf, -1, 0, 10**400, True, "x", None, [1]]
)
def test_check_seconds_refuses_what_no_clock_can_add(value: Any) -> None:
    with pytest.raises(OutOfBounds, match="at most 2,592,000 \\(30 days\\)"):
        check_seconds(value, "the deadline")


@pytest.mark.parametrize("value", [0.001, 1, "30", " 2.5 ", MAX_WAIT_SECONDS])
def test_check_seconds_takes_a_bounded_number(value: Any) -> None:
    assert 0 < check_seconds(value, "the deadline") <= MAX_WAIT_SECONDS


DEEP_TEXTS = {
    "array 101": "[" * 101 + "]" * 101,
    "array 100,000": "[" * 100_000 + "]" * 100_000,
    "object 1,000": '{"a": ' * 1_000 + "1" + "}" * 1_000,
    "mixed 150": '[{"a": ' * 75 + "0" + "}]" * 75,
    "unclosed 5,000": "[" * 5_000,
}


@pytest.mark.parametrize("text", DEEP_TEXTS.values(), ids=DEEP_TEXTS.keys())
def test_parse_json_refuses_nesting_past_the_one_limit(text: str) -> None:
    try:
        parse_json(text, "the edit")
    except OutOfBounds as refused:
        assert str(refused) == "the edit nests deeper than 100 levels: flatten it"
    except json.JSONDecodeError:
        assert text.count("[") != text.count("]")  # only the unclosed one is plain bad JSON
    else:
        raise AssertionError("parsed")


def test_parse_json_takes_the_limit_and_refuses_past_its_size_cap() -> None:
    assert nesting(parse_json("[" * MAX_NESTING + "]" * MAX_NESTING, "x")) == MAX_NESTING
    with pytest.raises(OutOfBounds, match="over the cap of 10"):
        parse_json('"' + "x" * 20 + '"', "the answer", max_chars=10)
    built: Any = 1
    for _ in range(MAX_NESTING + 1):
        built = (built,)
    with pytest.raises(OutOfBounds):
        check_nesting(built, "a tuple")  # Python data walked without recursion, too


@pytest.mark.parametrize("value", ["1e18", "nan", "inf", "-3", "0"])
def test_human_deadline_past_the_bounds_is_one_usage_line(value: str, tmp_path: Path) -> None:
    result = aah("run", "hi", "--human", "queue", "--db", str(tmp_path / "a.db"), "--human-deadline", value)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "--human-deadline" in line and "at most 2,592,000" in line


def test_an_approval_policy_deadline_past_the_bounds_is_one_line(tmp_path: Path) -> None:
    from aah.runtime.approval_policy import load_policy

    for value in ("1e18", ".nan", ".inf", "-1"):
        policy = tmp_path / "policy.yaml"
        policy.write_text(f"deadline: {value}\nrules:\n  - tools: ['*']\n")
        with pytest.raises(AahError) as refused:
            load_policy(policy)
        assert "'deadline'" in str(refused.value) and "\n" not in str(refused.value)


def test_the_channels_refuse_a_deadline_from_a_recipe(tmp_path: Path) -> None:
    from aah.runtime import ApprovalRequest, QueueHuman
    from aah.store import SessionStore

    with SessionStore(tmp_path / "s.db") as store:
        with pytest.raises(OutOfBounds):
            QueueHuman(store, deadline_seconds=1e18)
    with pytest.raises(ValueError, match="at most 2,592,000"):
        ApprovalRequest(
            request_id="r", session_id="s", call_id="c", tool="t", method="GET",
            deadline_seconds=math.inf,
        )  # fmt: skip
