"""The desk's typed contexts and replies: old rows read, damaged values read as empty."""

from __future__ import annotations

from typing import Any

import pytest

from aah.desk import (
    CONTEXT_VERSION,
    Answer,
    ApprovalContext,
    QuestionContext,
    approval_context,
    question_context,
)


def test_a_context_written_before_versions_reads_with_its_old_keys() -> None:
    old = {
        "agent": "MCP client deployer",
        "fallback": "ask later",
        "content_digest": "abc",
        "query": "Book two rooms.",
        "approval": {"tool": "hotel__book", "arguments": {"rooms": 2}, "ask": 2},
        "conversation": [{"role": "agent", "text": "Looking.", "reasoning_chars": 40}],
    }
    context = approval_context(old)
    assert (context.asker, context.fallback_answer, context.content_digest) == (
        "MCP client deployer",
        "ask later",
        "abc",
    )
    assert (context.call.tool, context.call.arguments, context.call.ask) == (
        "hotel__book",
        {"rooms": 2},
        2,
    )
    assert context.conversation[0].reasoning_chars == 40
    assert context.version == CONTEXT_VERSION


def test_a_stored_context_reads_back_the_same() -> None:
    context = QuestionContext(
        asker="MCP client x", query="q", tools=["a: b"], unavailable=["c"], setting="perfect"
    )
    stored = context.stored()
    assert stored["version"] == CONTEXT_VERSION and "task_id" not in stored  # defaults left out
    assert question_context(stored) == context
    call = ApprovalContext.model_validate({**stored, "call": {"tool": "t"}})
    assert approval_context(call.stored()) == call


# Values of the wrong shape: each reads as empty, the rest of the context as written.
DAMAGED: list[tuple[dict[str, Any], str, Any]] = [
    ({"conversation": "not a list"}, "conversation", []),
    ({"conversation": [1, "x", None]}, "conversation", []),
    ({"tools": 5}, "tools", []),
    ({"tools": ["a", "", "  ", None]}, "tools", ["a", "None"]),
    ({"unavailable": "a: one\nb: two"}, "unavailable", ["a: one", "b: two"]),
    ({"setting": None}, "setting", None),
    ({"setting": ""}, "setting", None),
    ({"query": None}, "query", ""),
    ({"query": 12}, "query", "12"),
    ({"version": "seven"}, "version", CONTEXT_VERSION),
    ({"version": True}, "version", CONTEXT_VERSION),
]


@pytest.mark.parametrize(("stored", "field", "reads"), DAMAGED)
def test_a_damaged_question_context_still_reads(
    stored: dict[str, Any], field: str, reads: Any
) -> None:
    context = question_context({**stored, "task_id": "t1"})
    assert getattr(context, field) == reads and context.task_id == "t1"


DAMAGED_CALLS: list[tuple[Any, str, Any]] = [
    ("not a call", "tool", ""),
    ({"arguments": [1, 2]}, "arguments", {}),
    ({"parameters": "rooms"}, "parameters", []),
    ({"parameters": [{"name": "rooms"}, 3]}, "parameters", [{"name": "rooms"}]),
    ({"ask": -1}, "ask", 1),
    ({"ask": "2"}, "ask", 1),
    ({"deadline_seconds": "soon"}, "deadline_seconds", None),
    ({"deadline_seconds": float("nan")}, "deadline_seconds", None),
    ({"deadline_seconds": True}, "deadline_seconds", None),
]


@pytest.mark.parametrize(("call", "field", "reads"), DAMAGED_CALLS)
def test_a_damaged_call_still_reads_with_the_rest_of_its_context(
    call: Any, field: str, reads: Any
) -> None:
    context = approval_context({"query": "Book.", "approval": call})
    assert getattr(context.call, field) == reads and context.query == "Book."


RESUMED: list[tuple[Any, str, bool]] = [
    ({"answer": "Lisbon", "answered_by": "ann"}, "Lisbon", False),
    ({"text": "Porto", "declined": False}, "Porto", False),  # resumed by an older aah
    ({"answer": "", "declined": True}, "", True),
    ("Faro", "Faro", False),
    (None, "", False),
]


@pytest.mark.parametrize(("value", "answer", "declined"), RESUMED)
def test_the_graph_reads_the_resumed_answer_under_one_name(
    value: Any, answer: str, declined: bool
) -> None:
    read = Answer.from_resumed(value)
    assert (read.answer, read.declined) == (answer, declined)
    assert Answer.from_resumed(read.resumed()) == read
