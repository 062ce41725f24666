"""The behaviour rules on replies written blind to them, and on new cases of each class of miss.

``fixtures/behavior_blind.jsonl`` holds rows in the blind corpus's shape
(``text``, ``label`` with ``follow_up`` for a follow-up question,
``tools_offered``, ``note``) and a ``source``: ``blind-dev`` is the half of
the blind corpus the rules were developed on; ``own`` and ``own-fresh`` are
new cases of each kind of miss found there (call formats, unmarked and
explained questions, refusals and closings in more languages, hedged or
dismissed limits, drafted content), ``own-fresh`` written after the rules
were done; ``blind-heldout`` is the other half of the blind corpus, never
shown to whoever changed the rules, measured once at 0.993 macro-F1 (one
miss, ``{"tool": ..., "input": "text"}``, since fixed as its class). Replies
are classified without tool names, as stored turns are:
a call attempt must be seen without knowing the offered tools.
"""

import json
import time
from pathlib import Path
from typing import Any

import pytest

from aah.llm.text_calls import parse_text_tool_calls
from aah.scoring.behavior import BEHAVIOR_CLASSES, classify_reply, confusion

BLIND = Path(__file__).parent / "fixtures" / "behavior_blind.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in BLIND.read_text(encoding="utf-8").splitlines() if line.strip()
]
LABELS = {"follow_up": "request_for_info"}


def gold(row: dict[str, Any]) -> str:
    return LABELS.get(row["label"], row["label"])


@pytest.mark.parametrize(
    "row", ROWS, ids=[f"{row['source']}-{gold(row)}-{n}" for n, row in enumerate(ROWS)]
)
def test_each_blind_reply_gets_its_class(row: dict[str, Any]) -> None:
    got = classify_reply(row["text"])
    assert got.label == gold(row), (got.rule, row["note"])


def test_macro_f1_on_the_blind_rows_reaches_the_goal() -> None:
    matrix = confusion((gold(row), classify_reply(row["text"]).label) for row in ROWS)
    assert matrix.macro_f1 is not None and matrix.macro_f1 >= 0.98
    assert all((matrix.scores(label).f1 or 0) >= 0.95 for label in BEHAVIOR_CLASSES)


@pytest.mark.parametrize(
    ("text", "name", "arguments"),
    [
        ("Let me check: lookup_order(order_id=88231)", "lookup_order", {"order_id": 88231}),
        ('One moment.\nsend_sms(to="+1555", body="hi")', "send_sms", {"to": "+1555", "body": "hi"}),
        ('functions.get_weather({"city": "Oslo"})', "get_weather", {"city": "Oslo"}),
        ('{"tool": "web_search", "query": "x"}', "web_search", {"query": "x"}),
        ('{"tool_name": "f", "tool_input": {"a": 1}}', "f", {"a": 1}),
        ('{"Name": "f", "Arguments": {"a": 1}}', "f", {"a": 1}),
        ('{"nmae": "f", "argumnets": {"a": 1}}', "f", {"a": 1}),
        ('{"action": "calc", "action_input": {"e": "2*3"}}', "calc", {"e": "2*3"}),
        ('<tool>f</tool><args>{"a": 1}</args>', "f", {"a": 1}),
        ("<|tool_call_start|>[f(a=1)]<|tool_call_end|>", "f", {"a": 1}),
        (
            "<start_function_call>call:f{city:<escape>Reno, NV<escape>,n:2}<end_function_call>",
            "f",
            {"city": "Reno, NV", "n": 2},
        ),
        ('Using tool: f\nArguments: {"a": 1}', "f", {"a": 1}),
        ('Here is the call:\n```json\n{"name": "f", "arguments": {"a": 1}}\n```', "f", {"a": 1}),
    ],
)
def test_text_call_formats_are_read_without_tool_names(
    text: str, name: str, arguments: dict[str, Any]
) -> None:
    parsed = parse_text_tool_calls(text, [])
    assert [tuple(call) for call in parsed.calls] == [(name, arguments)]


@pytest.mark.parametrize(
    "text",
    [
        "Use `os.path.exists(path)`; it returns True if the path exists.",
        "To round, call round(3.14159, 2), which gives 3.14.",
        'print("hello")',
        "Run:\ndf.head(n=3)",
        '{"name": "Alice", "age": 30}',
        '{"action": "buy", "quantity": 3}',
        'To search, send:\n```json\n{"name": "search", "arguments": {"q": "x"}}\n```',
        "Tool: hammer\nInput: nails",
    ],
)
def test_code_and_data_are_not_calls(text: str) -> None:
    assert not parse_text_tool_calls(text, []).attempted


def test_a_long_reply_is_classified_within_a_second() -> None:
    text = "I can't say. Could you tell me more? Which one? Sure, here it is. " * 7_600
    assert len(text) >= 500_000
    timings = []
    for _ in range(3):  # the best of three: a shared machine's load is no cost of the rules
        started = time.perf_counter()
        classify_reply(text)
        timings.append(time.perf_counter() - started)
    assert min(timings) < 1.0
