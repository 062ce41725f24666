"""Whatever an MCP server writes, aah's client ends the call with a result or one line, at once.

The server is tests/mcp_puppet_server.py, writing each call's lines as its
arguments say; aah reads them through its real client (the gate, the SDK's
session, McpConnections) with small caps (64,000 bytes a message). The
concrete cases are tests/fixtures/hostile/mcp_client_messages.jsonl, run
over stdio and streamable HTTP; Hypothesis then writes messages of its own
(sizes, depths, long numbers, bad UTF-8, wrong types, questions) and each
call must end with a result or a one-line McpFailure well before its
deadline, the server still in use after it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mcp_client_bounds import STDIO, answer, http_target  # noqa: F401 - a fixture

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import McpConnections, McpFailure, McpReply, MessageBounds, parse_server  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "fixtures" / "hostile" / "mcp_client_messages.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
BOUNDS = MessageBounds(max_message_bytes=64_000, max_call_bytes=256_000)
# Far above what any case takes: a call that reaches it hung.
CALL_TIMEOUT = 20.0


async def _decline(server: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "decline"}


def _outcome(pool: McpConnections, target: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        reply: Any = asyncio.run(pool.acall(parse_server(target), "emit", arguments, _decline))
    except McpFailure as exc:
        reply = exc
    return reply, time.monotonic() - started


def _said(outcome: Any) -> str:
    if isinstance(outcome, McpFailure):
        return str(outcome)
    assert isinstance(outcome, McpReply)
    return " ".join(str(block.get("text", "")) for block in outcome.content)


def _one_line(failure: McpFailure) -> None:
    line = str(failure)
    assert "\n" not in line and len(line) < 500, line
    assert line.startswith("MCP server puppet"), line
    assert "exited" not in line and "stopped answering" not in line, line


@pytest.fixture(scope="module")
def pool() -> Iterator[McpConnections]:
    connections = McpConnections(start_timeout=60, call_timeout=CALL_TIMEOUT, bounds=BOUNDS)
    try:
        yield connections
    finally:
        connections.close()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, http_target: str) -> str:  # noqa: F811
    return STDIO if request.param == "stdio" else http_target


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_each_hostile_message_of_the_corpus(
    pool: McpConnections, target: str, case: dict[str, Any]
) -> None:
    script = case["script"] if case["await"] else [*case["script"], answer()]
    outcome, took = _outcome(pool, target, {"script": script, "await": case["await"]})
    assert took < CALL_TIMEOUT / 2, f"{case['name']} took {took:.1f} s"
    if case["expect"] == "failure":
        assert isinstance(outcome, McpFailure), (case["name"], _said(outcome))
        _one_line(outcome)
    else:
        assert isinstance(outcome, McpReply), (case["name"], _said(outcome))
    assert case["says"] in _said(outcome), (case["name"], _said(outcome))


# --- messages Hypothesis writes ---------------------------------------------------------

ANSWER = '{"jsonrpc":"2.0","id":{id},'
ASK = '{"jsonrpc":"2.0","id":"{ask}","method":"elicitation/create","params":'
_text = st.text(max_size=40).map(lambda s: json.dumps(s)[1:-1])


def _t(text: str) -> dict[str, Any]:
    return {"text": text}


@st.composite
def values(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Pieces that write one JSON value a server might send, fair or hostile."""
    kind = draw(
        st.sampled_from(["text", "long", "deep", "digits", "float", "bytes", "escape", "plain"])
    )
    if kind == "text":
        return [_t('"' + draw(_text) + '"')]
    if kind == "long":
        return [_t('"'), {"repeat": draw(st.sampled_from("xé\\n")), "times": draw(st.integers(0, 90_000))}, _t('"')]  # fmt: skip
    if kind == "deep":
        levels = draw(st.integers(1, 400))
        opener = draw(st.sampled_from(["[", '{"a":']))
        closer = "]" if opener == "[" else "}"
        return [{"repeat": opener, "times": levels}, _t("0"), {"repeat": closer, "times": levels}]
    if kind == "digits":
        return [_t(draw(st.sampled_from(["", "-"]))), {"repeat": "9", "times": draw(st.integers(1, 6000))}]  # fmt: skip
    if kind == "float":
        return [_t(draw(st.sampled_from(["NaN", "Infinity", "-1e999", "1e308", "0.5", "1E-400"])))]
    if kind == "bytes":
        return [_t('"'), {"hex": draw(st.binary(min_size=1, max_size=6)).hex()}, _t('"')]
    if kind == "escape":
        return [_t('"' + draw(st.sampled_from(["\\ud800", "\\udfff\\ud800", "\\u0000", "\\x"])) + '"')]  # fmt: skip
    return [_t(draw(st.sampled_from(["null", "true", "[]", "{}", "7", '""'])))]


@st.composite
def lines(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bool]:
    """One line a hostile server writes, and whether the call then waits for the client's reply."""
    value = draw(values())
    kind = draw(
        st.sampled_from(
            ["result", "content", "structured", "error", "question", "request", "note", "id", "raw"]
        )
    )
    if kind == "result":
        return [_t(ANSWER + '"result":'), *value, _t("}")], False
    if kind == "content":
        block = [_t('{"type":"text","text":'), *value, _t("}")]
        return [_t(ANSWER + '"result":{"content":['), *block, _t("]}}")], False
    if kind == "structured":
        return [_t(ANSWER + '"result":{"content":[],"structuredContent":{"v":'), *value, _t("}}}")], False  # fmt: skip
    if kind == "error":
        return [_t(ANSWER + '"error":{"code":-1,"message":"no","data":'), *value, _t("}}")], False
    if kind == "question":
        field = draw(st.sampled_from(["message", "requestedSchema", "mode", "url"]))
        base = {"message": "Which?", "requestedSchema": {"type": "object", "properties": {}}}
        head = json.dumps({k: v for k, v in base.items() if k != field})[:-1]
        return [_t(ASK + head + f',"{field}":'), *value, _t("}}")], True
    if kind == "request":
        method = draw(st.sampled_from(["sampling/createMessage", "roots/list", "ping", "x/y"]))
        return [_t('{"jsonrpc":"2.0","id":"{ask}","method":"' + method + '","params":{"v":'), *value, _t("}}")], True  # fmt: skip
    if kind == "note":
        return [_t('{"jsonrpc":"2.0","method":"notifications/message","params":{"v":'), *value, _t("}}")], False  # fmt: skip
    if kind == "id":
        return [_t('{"jsonrpc":"2.0","id":'), *value, _t(',"result":{"content":[]}}')], False
    return value, False


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(written=st.lists(lines(), min_size=1, max_size=3))
def test_a_call_ends_with_a_result_or_one_line_whatever_the_server_writes(
    pool: McpConnections, target: str, written: list[tuple[list[dict[str, Any]], bool]]
) -> None:
    waits = any(wait for _, wait in written)
    script = [line for line, _ in written] + ([] if waits else [answer()])
    # A question's reply is read once: the call is answered after the first one.
    outcome, took = _outcome(pool, target, {"script": script, "await": waits})
    assert took < CALL_TIMEOUT / 2, f"the call took {took:.1f} s"
    if isinstance(outcome, McpFailure):
        _one_line(outcome)
    else:
        assert isinstance(outcome, McpReply)


def test_the_server_is_still_in_use_after_all_of_it(pool: McpConnections, target: str) -> None:
    outcome, _ = _outcome(pool, target, {"script": [answer("still here")]})
    assert _said(outcome) == "still here"


# --- the pieces of the gate, on their own ---------------------------------------------------


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    lines=st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(1, 97), min_size=1, max_size=5),
)
def test_the_line_reader_holds_at_most_its_cap_and_loses_no_line_within_it(
    lines: list[bytes], cuts: list[int]
) -> None:
    from aah.mcp.child import LineReader, Overflow

    cap = 100
    reader = LineReader(cap)
    stream = b"".join(line + b"\n" for line in lines)
    out: list[bytes | Overflow] = []
    at, turn = 0, 0
    while at < len(stream):
        size = cuts[turn % len(cuts)]
        out += reader.feed(stream[at : at + size])
        at, turn = at + size, turn + 1
        held = sum(len(part) for part in reader._parts)
        assert held <= cap
    expected: list[bytes | tuple[bytes, bool]] = []
    for line in lines:
        if len(line) > cap:
            expected.append((line, True))
        elif line.strip():
            expected.append(line.strip())
    assert len(out) == len(expected)
    for got, want in zip(out, expected, strict=True):
        if isinstance(want, tuple):
            assert isinstance(got, Overflow) and want[0].startswith(got.head) and got.size > cap
        else:
            assert got == want


_ids = st.one_of(st.integers(-(10**15), 10**15), st.text(max_size=20))
_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    request_id=_ids,
    method=st.text(min_size=1, max_size=30),
    before=st.dictionaries(st.sampled_from(["jsonrpc", "params", "x"]), _junk, max_size=3),
    cut=st.integers(0, 400),
)
def test_a_refused_messages_id_and_method_are_found_from_its_top_level(
    request_id: Any, method: str, before: dict[str, Any], cut: int
) -> None:
    from aah.mcp.gate import top_level

    # Nested "id" and "method" keys (in params) are not the message's own.
    message = {"params": {"id": "inner", "method": "inner", "v": before}, **before}
    message.update(id=request_id, method=method)
    text = json.dumps(message).encode()
    whole = top_level(text)
    assert whole.id == request_id and whole.method == method
    # The same two first, then a rest cut anywhere: missing, too deep, or junk.
    head = json.dumps({"id": request_id, "method": method})[:-1].encode()
    rest = json.dumps(message).encode()[1:]
    found = top_level(head + b", " + rest[:cut] + b"[[[[")
    assert found.id == request_id and found.method == method
