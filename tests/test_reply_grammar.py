"""The one reply grammar: a regression set of labelled replies, read directly and over HTTP.

``fixtures/reply_grammar.yaml`` holds the replies, each with its right
reading; every misread found belongs there. They are read by each public
parser (the grader's, the runtime's, the grammar's own), then sent once
through the real grader and awareness paths against the fake model server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from runtime_support import fake_config

from aah.llm import (
    ChatClient,
    ReplyGrammar,
    parse_awareness_reply,
    parse_verdict_reply,
)
from aah.runtime.awareness import ask_awareness, parse_awareness
from aah.scoring.behavior.judge import parse_judge_reply
from aah.scoring.grader.vote import MajorityVoteGrader, parse_vote
from aah.testing import FakeLLMServer

REPLIES = yaml.safe_load(
    (Path(__file__).parent / "fixtures" / "reply_grammar.yaml").read_text(encoding="utf-8")
)
VERDICTS: list[dict[str, Any]] = REPLIES["verdict"]
AWARENESS: list[dict[str, Any]] = REPLIES["awareness"]


def _id(case: dict[str, Any]) -> str:
    return repr(case["reply"])[:60]


def test_the_regression_set_is_large_and_well_formed() -> None:
    assert len(VERDICTS) + len(AWARENESS) >= 160 and len(VERDICTS) >= 80 and len(AWARENESS) >= 80
    assert {c["expected"] for c in VERDICTS} == {"pass", "fail", None}
    assert {c["expected"] for c in AWARENESS} == {"yes", "idk", "no", None}
    # An answer comes with the reason it must leave; a non-answer has none.
    assert all(("reason" in c) == (c["expected"] is not None) for c in AWARENESS)


@pytest.mark.parametrize("case", VERDICTS, ids=_id)
def test_verdict_replies(case: dict[str, Any]) -> None:
    assert parse_verdict_reply(case["reply"]) == case["expected"]
    assert parse_vote(case["reply"]) == case["expected"]


@pytest.mark.parametrize("case", AWARENESS, ids=_id)
def test_awareness_replies(case: dict[str, Any]) -> None:
    expected = None if case["expected"] is None else (case["expected"], case["reason"])
    assert parse_awareness_reply(case["reply"]) == expected
    assert parse_awareness(case["reply"]) == expected


@pytest.mark.parametrize(
    ("content", "reasoning", "expected"),
    [
        ("Fail", "It looks like a pass at first.", "fail"),
        ("", "Pass", None),  # the reasoning field is never the answer
        ("<think>Pass?</think>", "Fail", None),
    ],
)
def test_a_separate_reasoning_field_is_never_read_as_the_verdict(
    content: str, reasoning: str, expected: str | None
) -> None:
    assert parse_vote(content, reasoning) == expected


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("TOOL_CALL/QUESTION/CANNOT_ANSWER/DIRECT: DIRECT", "direct"),
        ("Label: **QUESTION** - it asks for the date", "request_for_info"),
        ("<think>maybe direct</think>CANNOT_ANSWER", "cannot_answer"),
        ("Tool call or direct answer?", None),
        ("Class: tool-call", "tool_call"),
        ("Direct answer or question", None),
    ],
)
def test_the_behaviour_judge_reads_its_class_by_the_same_grammar(
    reply: str, label: str | None
) -> None:
    assert parse_judge_reply(reply) == label


def test_a_grammar_over_any_options() -> None:
    colours = ReplyGrammar({"red": "red", "dark blue": "blue"})
    assert colours.read("Answer: Dark-Blue, as asked") is not None
    choice = colours.read("Answer: Dark-Blue, as asked")
    assert choice is not None and (choice.value, choice.rest) == ("blue", "as asked")
    assert colours.read("Red/Dark blue: red") is not None
    assert colours.read("Red or dark blue") is None
    assert colours.read("Reddish") is None


async def test_every_verdict_reply_through_the_real_grader_over_http() -> None:
    texts = [case["reply"] for case in VERDICTS]
    expected = [case["expected"] for case in VERDICTS]
    if len(texts) % 2 == 0:  # the grader asks for an odd number of votes
        texts.append("Pass")
        expected.append("pass")
    with FakeLLMServer(texts) as llm:
        async with MajorityVoteGrader(fake_config(llm), votes=len(texts), vote_retries=0) as grader:
            records = await grader.collect_votes("Grade this session.")
        assert len(llm.requests) == 1 and llm.requests[0]["n"] == len(texts)
    assert [record["vote"] for record in records] == expected


async def test_every_awareness_reply_through_the_real_awareness_question_over_http() -> None:
    texts = [case["reply"] for case in AWARENESS]
    with FakeLLMServer(texts) as llm:
        client = ChatClient(fake_config(llm))
        try:
            results = [
                await ask_awareness(client, "tool", "Weather in Oslo?", "- weather", retries=0)
                for _ in texts
            ]
        finally:
            await client.aclose()
        assert len(llm.requests) == len(texts)
    for case, result in zip(AWARENESS, results, strict=True):
        if case["expected"] is None:
            assert (result.answer, result.reason) == ("none", ""), case["reply"]
        else:
            assert (result.answer, result.reason) == (case["expected"], case["reason"]), case
