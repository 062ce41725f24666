"""The behaviour judge under science.md §2's quorum rule, and hostile judge servers.

The judge's label stands only when at least ceil(V/2) of its V votes are
readable and no two classes tie for the most; otherwise the rules' class
stands in, marked ``llm_no_quorum:`` or ``llm_tie:``, and ``aah classify``
counts those replies. Text that cannot be stored as UTF-8 (a lone surrogate
from a ``\\ud800`` JSON escape), in a reply to judge or in the judge's own
answer, never crashes ``aah classify --judge llm``.
"""

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from hostile_model_server import Hostile, HostileServer
from model_servers import Planned, RawModelServer
from pydantic import SecretStr
from typer.testing import CliRunner

from aah.cli.classify import classify
from aah.errors import AahError
from aah.llm import ModelConfig
from aah.scoring.behavior import BehaviorClass, classify_with_llm, tally_votes

T, Q, C, D = "tool_call", "request_for_info", "cannot_answer", "direct"
WORDS = {T: "TOOL_CALL", Q: "QUESTION", C: "CANNOT_ANSWER", D: "DIRECT"}


# -- the quorum rule ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("votes", "asked", "label", "flag"),
    [
        ([D], 1, D, None),
        ([None], 1, None, "no quorum"),
        ([Q, Q, None], 3, Q, None),  # 2 valid of 3 is a quorum
        ([Q, None, None], 3, None, "no quorum"),
        ([T, D, C], 3, None, "tie"),  # three classes, one vote each
        ([T, T, D, None, None], 5, T, None),  # 3 valid of 5, a plurality of 2
        ([T, T, None, None, None], 5, None, "no quorum"),  # 2 < ceil(5/2)
        ([T, T, D, D, None], 5, None, "tie"),
        ([C, C, D, D, Q], 5, None, "tie"),
        ([C, C, C, D, D], 5, C, None),
        ([D, D, D, D, D, None, None], 7, D, None),
        ([D, D, D, None, None, None, None], 7, None, "no quorum"),
    ],
)
def test_a_label_needs_a_quorum_and_no_tie(
    votes: list[BehaviorClass | None], asked: int, label: str | None, flag: str | None
) -> None:
    tally = tally_votes(votes, asked)
    assert (tally.label, tally.flag) == (label, flag)


# -- over HTTP ---------------------------------------------------------------------------


def choices(*texts: str) -> Planned:
    """One completion with a choice per text."""
    body = {
        "id": "c",
        "object": "chat.completion",
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            for i, text in enumerate(texts)
        ],
    }
    return Planned(json.dumps(body).encode())


def config(server: RawModelServer | HostileServer) -> ModelConfig:
    return ModelConfig(
        base_url=server.base_url,
        model="m",
        api_key=SecretStr("sk-judge"),
        timeout=5,
        retries=0,
        role="judge",
    )


@pytest.mark.parametrize(
    ("plan", "rule", "label", "sent"),
    [
        # Two readable votes of three agree: the judge's label.
        ([choices("DIRECT", "DIRECT.", "QUESTION")], "llm:behavior-judge/1", D, 1),
        # One vote each: a tie, so the rules decide ("Which city?" asks).
        ([choices("DIRECT", "QUESTION", "CANNOT_ANSWER")], "llm_tie:question", Q, 1),
        # One readable vote, and the retries stay unreadable: no quorum.
        ([choices("CANNOT_ANSWER", "hmm", "well"), choices("no", "idea")], "llm_no_quorum:", Q, 3),
        # Retries ask only for the votes still missing, until all V are readable.
        ([choices("CANNOT_ANSWER", "hmm", "well"), choices("CANNOT_ANSWER", "eh")], "llm:", C, 3),
        # A server that ignores n sends one choice: the rest are asked one by one.
        ([choices("DIRECT"), choices("DIRECT"), choices("QUESTION")], "llm:", D, 3),
    ],
)
async def test_judge_votes_over_http(plan: list[Planned], rule: str, label: str, sent: int) -> None:
    with RawModelServer(plan) as server:
        got = await classify_with_llm("Which city?", [], config(server), votes=3)
        bodies = [request["body"] for request in server.requests]
    assert got.label == label and got.rule.startswith(rule)
    assert len(bodies) == sent
    assert bodies[0]["n"] == 3 and bodies[0]["temperature"] == 1.0


async def test_a_server_that_refuses_n_is_asked_one_vote_at_a_time() -> None:
    refusal = Planned(json.dumps({"error": {"message": "n must be 1", "param": "n"}}).encode(), 400)
    with RawModelServer(
        [refusal, choices("QUESTION"), choices("QUESTION"), choices("QUESTION")]
    ) as server:
        got = await classify_with_llm("Which city?", [], config(server), votes=3)
        assert len(server.requests) == 4
    assert tuple(got) == (Q, "llm:behavior-judge/1")


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(classify)
    app.command("noop")(lambda: None)
    return app


def judge_env(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("AAH_JUDGE_BASE_URL", base_url)
    monkeypatch.setenv("AAH_JUDGE_MODEL", "fake-model")
    monkeypatch.setenv("AAH_LLM_RETRIES", "0")


def test_classify_counts_the_replies_the_judge_gave_no_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "replies.jsonl"
    replies = ["Which city?", "Paris is sunny.", "It rains."]
    source.write_text("".join(json.dumps({"reply": r}) + "\n" for r in replies), "utf-8")
    # Three replies judged one after another: a plurality, a tie, no quorum.
    plan = [
        choices("QUESTION", "QUESTION", "DIRECT"),
        choices("DIRECT", "QUESTION", "CANNOT_ANSWER"),
        choices("??", "??", "DIRECT"),
        choices("??", "??"),
        choices("??", "??"),
    ]
    with RawModelServer(plan) as server:
        judge_env(monkeypatch, server.base_url)
        args = ["classify", str(source), "--judge", "llm", "--votes", "3", "--concurrency", "1"]
        result = CliRunner().invoke(cli(), args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [row["rule"] for row in rows] == [
        "llm:behavior-judge/1",
        "llm_tie:plain_answer",
        "llm_no_quorum:plain_answer",
    ]
    assert "the LLM judge gave no label on 2 of 3 replies (no quorum 1, tie 1)" in result.stderr


def test_compare_judge_leaves_out_replies_without_a_judge_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "replies.jsonl"
    source.write_text('{"reply": "Which city?"}\n{"reply": "Hi."}\n', "utf-8")
    plan = [
        choices("QUESTION", "QUESTION", "DIRECT"),
        choices("DIRECT", "QUESTION", "CANNOT_ANSWER"),
    ]
    with RawModelServer(plan) as server:
        judge_env(monkeypatch, server.base_url)
        args = ["classify", str(source), "--compare-judge", "--votes", "3", "--concurrency", "1"]
        result = CliRunner().invoke(cli(), args)
    assert result.exit_code == 0, result.output
    assert "rules vs LLM judge on 1 replies" in result.stderr
    assert "1 replies left out: the judge's votes gave no label" in result.stderr
    assert "(tie 1)" in result.stderr


# -- text that cannot be stored ---------------------------------------------------------


def raw_completion(content_json: str, reasoning_json: str | None = None) -> bytes:
    """A completion whose content is ``content_json``, a JSON string literal as sent."""
    reasoning = f', "reasoning_content": {reasoning_json}' if reasoning_json else ""
    return (
        '{"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": '
        f'{{"role": "assistant", "content": {content_json}{reasoning}}}, "finish_reason": "stop"}}]}}'
    ).encode()


# Judge answers and errors holding lone surrogates, one shape per reply (SHAPE-<n>).
UNSTORABLE: list[tuple[str, Hostile]] = [
    ("label then a lone surrogate", Hostile(raw_completion('"DIRECT \\ud800 plain"'))),
    ("only a lone surrogate", Hostile(raw_completion('"\\ud800"'))),
    ("a low surrogate first", Hostile(raw_completion('"\\udc00QUESTION"'))),
    ("surrogate in reasoning", Hostile(raw_completion('"QUESTION"', '"\\ud83d think"'))),
    ("reversed pair", Hostile(raw_completion('"CANNOT_ANSWER \\ude00\\ud83d"'))),
    ("NUL and surrogate", Hostile(raw_completion('"\\u0000\\ud800 TOOL_CALL"'))),
    (
        "error message with a surrogate",
        Hostile(b'{"error": {"message": "bad \\ud800 request"}}', status=400),
    ),
    ("status 500 with a surrogate", Hostile(b'{"error": {"message": "\\udfff"}}', status=500)),
]


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "out-file"])
def test_unstorable_text_never_crashes_classify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, to_file: bool
) -> None:
    source = tmp_path / "replies.jsonl"
    lines = [
        # The reply to judge holds a lone surrogate too, as a JSON escape.
        '{"reply": "SHAPE-%d Which city? \\ud800", "id": %d}' % (n, n)
        for n in range(len(UNSTORABLE))
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with HostileServer(UNSTORABLE) as server:
        judge_env(monkeypatch, server.base_url)
        args = ["classify", str(source), "--judge", "llm", "--concurrency", "1"]
        result = CliRunner().invoke(cli(), args + (["--out", str(out)] if to_file else []))
    if result.exception is not None:
        assert isinstance(result.exception, AahError), repr(result.exception)
        message = str(result.exception)
        assert "\n" not in message and message.encode("utf-8")
    text = out.read_text(encoding="utf-8") if to_file else result.stdout
    rows: list[dict[str, Any]] = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
    assert [row["id"] for row in rows] == list(range(len(UNSTORABLE)))
    # The reply comes back exactly as it was read, its escape kept.
    assert all(row["reply"].endswith("Which city? \ud800") for row in rows)
    by_id = {row["id"]: row for row in rows}
    assert by_id[0]["class"] == D and by_id[0]["rule"].startswith("llm:")
    assert by_id[3]["class"] == Q and by_id[3]["rule"].startswith("llm:")
    assert by_id[6]["rule"].startswith("llm_failed:")
    result.stderr.encode("utf-8")
