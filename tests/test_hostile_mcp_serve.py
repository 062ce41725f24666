"""``aah mcp serve`` answers every request: hostile lines and bodies over stdio and HTTP.

The SDK's readers dropped a message they could not validate (over stdio,
without a word) or answered it without its id (over HTTP), so a client whose
line held a lone surrogate, a ``params`` that was text or a ``jsonrpc`` of
"1.0" waited for ever. Every message now passes
``aah.mcp.intake.screen_message`` first. A corpus of hostile lines
(``tests/fixtures/hostile/mcp_serve_lines.jsonl``) goes through the screen in
this process and through the real ``aah mcp serve`` on stdio and on
streamable HTTP, each answered for its id within a second. Hypothesis builds
JSON-RPC lines (valid shapes with hostile values, batches, garbled bytes):
many for the screen, fewer for the real servers, which must answer each id
once and go on answering the next request.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mcp_serve import SERVE_ENV, TOKEN, free_port

from aah.store import SessionStore

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

import httpx2  # noqa: E402
from mcp import Client, Implementation, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp_types import JSONRPCError, JSONRPCRequest, jsonrpc_message_adapter  # noqa: E402

from aah.mcp import HumanTools, Question  # noqa: E402
from aah.mcp.caps import MAX_MESSAGE_BYTES  # noqa: E402
from aah.mcp.intake import (  # noqa: E402
    HEAD_BYTES,
    MAX_BATCH_ANSWERS,
    MAX_ID_CHARS,
    MAX_ID_INTEGER,
    NOTE_CHARS,
    Screened,
    screen_message,
    screen_too_large,
)

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "mcp_serve_lines.jsonl"
BOM = b"\xef\xbb\xbf"
PROTOCOL = "2025-06-18"
# How long a refused line may wait for its answer.
ANSWER_SECONDS = 1.0
# The codes a refusal may carry (JSON-RPC 2.0 §5.1).
REFUSAL_CODES = {-32700, -32600, -32602}


class Case(NamedTuple):
    """One corpus line: what it holds and how aah must answer it."""

    why: str
    raw: bytes
    ids: list[Any]  # the ids answered (by a refusal, or by the SDK when passed)
    code: int | None  # the refusal's code; None: passed on to the SDK
    named: bool  # one of the cases the issue names


def corpus() -> list[Case]:
    cases = []
    for text in CORPUS.read_text(encoding="utf-8").splitlines():
        entry = json.loads(text)
        raw = bytes.fromhex(entry["hex"]) if "hex" in entry else entry["line"].encode()
        if expand := entry.get("expand"):
            filler = expand["text"] * expand["times"] + expand.get("close", "") * expand["times"]
            raw = raw.replace(expand["marker"].encode(), filler.encode())
        cases.append(
            Case(entry["why"], raw, entry["ids"], entry["code"], entry.get("named", False))
        )
    return cases


CASES = corpus()


def screened_as_served(raw: bytes) -> Screened:
    """What both transports make of ``raw``: past the size cap, only its head is screened."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return screen_too_large(raw[:HEAD_BYTES], MAX_MESSAGE_BYTES)
    return screen_message(raw)


def answerable(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_ID_INTEGER
    if not isinstance(value, str) or len(value) > MAX_ID_CHARS:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def expected_ids(raw: bytes) -> list[Any] | None:
    """The ids a server must answer for ``raw``, as Python's own parser reads it.

    None where that parser cannot read ``raw``: then at most one id, found
    leniently, is answered.
    """
    try:
        value = json.loads(raw.removeprefix(BOM).strip().decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    ids: list[Any] = []
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict) or "id" not in item or not answerable(item["id"]):
            continue
        responds = "method" not in item and ("result" in item or "error" in item)
        if not responds and item["id"] not in ids:
            ids.append(item["id"])
    return ids


def sdk_ids(message: str) -> list[Any]:
    """The id the SDK answers for a message it reads (none for a notification or a response)."""
    read = jsonrpc_message_adapter.validate_json(message, by_name=False)
    return [read.id] if isinstance(read, JSONRPCRequest) else []


def check_screened(raw: bytes, screened: Screened) -> None:
    """What holds for whatever the screen makes of ``raw``."""
    assert (screened.message is None) == (screened.error is not None)
    if screened.message is not None:
        sdk_ids(screened.message)  # the SDK's reader takes it: never dropped
        assert not screened.answer_to
        return
    for reply in screened.replies():
        json.dumps(reply, allow_nan=False)  # plain JSON
        JSONRPCError.model_validate(reply)
        assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] in REFUSAL_CODES
        assert "\n" not in reply["error"]["message"] and len(reply["error"]["message"]) < 400
    if not screened.answer_to:
        note = screened.note
        assert note is not None and note.startswith("aah mcp serve: ")
        assert len(note) <= NOTE_CHARS and note.isprintable()


# -- the corpus, in this process -----------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.why[:60] for case in CASES])
def test_each_corpus_line_is_passed_on_or_answered_for_its_id(case: Case) -> None:
    screened = screened_as_served(case.raw)
    check_screened(case.raw, screened)
    if case.code is None:
        assert screened.message is not None and sdk_ids(screened.message) == case.ids
    else:
        assert screened.error is not None and screened.error["code"] == case.code
        assert list(screened.answer_to) == case.ids
    if screened.note is not None:  # a secret, a control or the line itself never reaches the log
        assert "sk-proj" not in screened.note and "nnnnnnnnnn" not in screened.note


# -- the real server, on stdio ---------------------------------------------------


def probe(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": f"probe-{n}", "method": "ping"}).encode()


def hello(name: str = "hostile") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "hello",
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": name, "version": "1"},
        },
    }


class StdioServer:
    """``aah mcp serve`` on stdio, written raw lines; what it answers is read as it comes."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "aah", "mcp", "serve", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=SERVE_ENV,
            cwd=db.parent,
        )
        self.lines: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.probes = 0
        self.send(json.dumps(hello()).encode())
        assert "result" in self.replies_until("hello", timeout=60)[-1][1]
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put((time.monotonic(), json.loads(line)))

    def send(self, raw: bytes) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()
        return time.monotonic()

    def replies_until(self, last: Any, timeout: float = 30) -> list[tuple[float, dict[str, Any]]]:
        """The answers (messages with an id) up to the one for ``last``, with when each came."""
        found = []
        deadline = time.monotonic() + timeout
        while True:
            at, message = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if "id" in message:
                found.append((at, message))
                if message["id"] == last:
                    return found

    def answers(self, raw: bytes) -> tuple[float, list[dict[str, Any]]]:
        """What the server answers for ``raw`` (a probe after it marks the end), and how fast."""
        sent = self.send(raw)
        self.probes += 1
        self.send(probe(self.probes))
        *answered, (_, pong) = self.replies_until(f"probe-{self.probes}")
        assert pong["result"] == {}  # alive, and answering the next request
        waited = max((at for at, _ in answered), default=sent) - sent
        return waited, [message for _, message in answered]

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            self.process.kill()
        return self.process.stderr.read().decode("utf-8", "replace")


def check_notes(log: str) -> None:
    """The server's log: one short scrubbed line per note, never a traceback or a line echoed."""
    assert "Traceback" not in log and "sk-proj" not in log and "\x1b[2J" not in log
    assert "n" * 1000 not in log and "x" * 1000 not in log
    notes = [line for line in log.splitlines() if line.startswith("aah mcp serve:")]
    assert notes and all(len(note) <= NOTE_CHARS for note in notes)


def test_every_corpus_line_is_answered_over_stdio_within_a_second(tmp_path: Path) -> None:
    server = StdioServer(tmp_path / "desk.db")
    try:
        for case in CASES:
            waited, answered = server.answers(case.raw)
            assert [message["id"] for message in answered] == case.ids, case.why
            if case.code is not None:
                assert all(m["error"]["code"] == case.code for m in answered), case.why
            assert waited < ANSWER_SECONDS, case.why
    finally:
        log = server.close()
    check_notes(log)


# -- the real server, on streamable HTTP ------------------------------------------


class HttpServer:
    """``aah mcp serve --port`` with a session open, POSTed raw bodies."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=30)
        self.headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        opened = self.http.post(url, headers=self.headers, content=json.dumps(hello()))
        assert opened.status_code == 200, opened.text
        self.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = PROTOCOL
        initialized = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
        assert self.post(initialized)[0] == 202
        self.probes = 0

    def post(self, body: bytes) -> tuple[int, list[dict[str, Any]]]:
        """The status and the messages of the answer to ``body`` (JSON, or server-sent events)."""
        answer = self.http.post(self.url, headers=self.headers, content=body)
        kind = answer.headers.get("content-type", "")
        if kind.startswith("text/event-stream"):
            data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
            return answer.status_code, [json.loads(d) for d in data if d.strip()]
        if not answer.content:
            return answer.status_code, []
        found = answer.json()
        return answer.status_code, found if isinstance(found, list) else [found]

    def answers(self, body: bytes) -> tuple[int, list[dict[str, Any]], float]:
        """The answer to ``body`` and how long it took; then a probe must be answered too."""
        sent = time.monotonic()
        status, messages = self.post(body)
        waited = time.monotonic() - sent
        self.probes += 1
        assert self.post(probe(self.probes))[1][0]["result"] == {}
        return status, messages, waited


@contextmanager
def http_served(tmp_path: Path) -> Iterator[HttpServer]:
    """``aah mcp serve --port`` on a fresh store, its log kept in ``tmp_path / "serve.log"``."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")} | SERVE_ENV
    env["AAH_MCP_TOKEN"] = TOKEN
    command = [sys.executable, "-m", "aah", "mcp", "serve", "--port", str(port)]
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--db", str(tmp_path / "desk.db")], env=env, stderr=log, cwd=tmp_path
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            server = HttpServer(f"http://127.0.0.1:{port}/mcp")
            try:
                yield server
            finally:
                server.http.close()
        finally:
            process.kill()
            process.wait(timeout=30)


def test_every_corpus_body_is_answered_over_http_within_a_second(tmp_path: Path) -> None:
    with http_served(tmp_path) as server:
        for case in CASES:
            status, messages, waited = server.answers(case.raw)
            assert waited < ANSWER_SECONDS, case.why
            if case.code is None:
                assert status == 200 and [m["id"] for m in messages] == case.ids, case.why
                continue
            assert status == (413 if len(case.raw) > MAX_MESSAGE_BYTES else 400), case.why
            assert all(m["error"]["code"] == case.code for m in messages), case.why
            # With no id to answer, the one error carries a null id (JSON-RPC 2.0 §5).
            assert [m["id"] for m in messages] == (case.ids or [None]), case.why
    check_notes((tmp_path / "serve.log").read_text(encoding="utf-8", errors="replace"))


# -- a client's name ---------------------------------------------------------------


async def introduced(transport: Any, name: str) -> str:
    """How the server answers a client that gives ``name``: its refusal, or "connected"."""
    try:
        async with Client(transport, client_info=Implementation(name=name, version="1")):
            return "connected"
    except Exception as exc:  # the SDK's client raises the server's error (in a group)
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return str(exc)


def test_a_client_name_of_100_000_characters_is_refused_at_once_over_stdio_and_http(
    tmp_path: Path,
) -> None:
    name = "n" * 100_000
    db = tmp_path / "desk.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(tmp_path),
    )
    refusals = [asyncio.run(asyncio.wait_for(introduced(stdio_client(params), name), 60))]
    with http_served(tmp_path) as server:
        bearer = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        transport = streamable_http_client(server.url, http_client=bearer)
        started = time.monotonic()
        refusals.append(asyncio.run(introduced(transport, name)))
        assert time.monotonic() - started < ANSWER_SECONDS  # not the client's read timeout
        # The session opened before is still served.
        assert server.post(probe(0))[1][0]["result"] == {}
    for refusal in refusals:
        assert "'params.clientInfo.name' is 100,000 characters, over aah's cap of 200" in refusal
    assert not db.exists() or SessionStore(db).list_sessions() == []


def test_a_client_name_is_kept_as_one_bounded_line_without_controls(tmp_path: Path) -> None:
    async def ask_as(names: list[str]) -> None:
        store = SessionStore(tmp_path / "desk.db")
        try:
            desk = HumanTools(store)
            for name in names:
                await desk.start_ask(Question("Which city?"), name)
        finally:
            store.close()

    asyncio.run(ask_as(["\x1b]0;pwned\x07evil\n\tplanner\x1b[2J", "w" * 500, "  "]))
    with SessionStore(tmp_path / "desk.db") as store:
        models = sorted(session.model or "" for session in store.list_sessions())
        queries = [session.query for session in store.list_sessions()]
        askers = [r.context["asker"] for r in store.humans.pending_human_requests()]
    assert models == ["mcp:evil planner", "mcp:unknown", "mcp:" + "w" * 199 + "…"]
    for text in [*queries, *askers]:
        assert text.isprintable() and len(text) < 300 and "pwned" not in text


# -- generated lines -------------------------------------------------------------------

# The server's methods that answer at once (no person waits), for the real servers.
PROMPT_METHODS = ["ping", "tools/list", "prompts/list", "no/such/method"]
ALL_METHODS = [*PROMPT_METHODS, "tools/call", "initialize", "notifications/initialized"]
MISSING = object()


class Raw(str):
    """A JSON token written as it is: NaN, Infinity, a number of 5,000 digits, deep brackets."""


def dump(value: Any) -> str:
    """``value`` as JSON text, lone surrogates escaped and :class:`Raw` tokens as they are."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(dump(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{dump(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


HOSTILE_TEXTS = st.sampled_from(
    ["\ud800", "\udfff", "a\udc00b", "\x00", "\x1b[2J", "\u202e", "é", "😀", "2.0", "id"]
) | st.sampled_from(["sk-proj-abcdefghijklmnopqrstuvwxyz012345", "x" * 199, "x" * 201])
TEXTS = st.text(max_size=12) | HOSTILE_TEXTS
HOSTILE_NUMBERS = st.one_of(
    st.floats(),
    st.sampled_from([MAX_ID_INTEGER, MAX_ID_INTEGER + 1, -MAX_ID_INTEGER - 1]),
    st.sampled_from(
        ["NaN", "Infinity", "-Infinity", "1e999", "-0", "1e-999", "1" + "0" * 1200]
    ).map(Raw),
)
# Most values are plain, so that a message holds one hostile value more often than five.
VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.text(max_size=12),
        st.integers(),
        HOSTILE_TEXTS,
        HOSTILE_NUMBERS,
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
DEEP = st.integers(90, 320).map(lambda n: Raw("[" * n + "]" * n))
IDS = st.one_of(
    st.integers(-1000, 1000),
    st.text(max_size=12),
    st.integers(-1000, 1000),
    TEXTS,
    HOSTILE_NUMBERS,
    st.booleans() | st.none() | st.just(MISSING),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
CLIENT_INFO = st.fixed_dictionaries(
    {
        "protocolVersion": st.just(PROTOCOL),
        "capabilities": st.just({}),
        "clientInfo": st.fixed_dictionaries(
            {"name": TEXTS | st.integers(150, 3000).map("n".__mul__), "version": TEXTS}
        ),
    }
)
PARAMS = st.one_of(
    st.just(MISSING),
    st.dictionaries(st.text(max_size=6), VALUES, max_size=3),
    st.dictionaries(st.text(max_size=6), VALUES, max_size=3),
    st.none(),
    TEXTS | HOSTILE_NUMBERS | st.lists(VALUES, max_size=2),
    st.dictionaries(TEXTS, VALUES | DEEP, max_size=3),
    CLIENT_INFO,
    CLIENT_INFO.map(lambda p: {"_meta": {"io.modelcontextprotocol/clientInfo": p["clientInfo"]}}),
)
EXTRA = st.sampled_from(
    [[], [], [], [], [("result", {})], [("result", "x")], [("error", {"code": 1, "message": "m"})]]
)
FRAMES = st.tuples(st.sampled_from([b"", BOM, b" "]), st.sampled_from([b"", b"\r", b" \t"]))


def envelopes(methods: list[str]) -> st.SearchStrategy[str]:
    """JSON-RPC messages in any key order, valid in shape and hostile in value, as text.

    Half are requests right in every field but their params' values; the
    others draw every field from hostile choices too.
    """
    named = st.sampled_from(methods)
    sound = st.tuples(
        st.just("2.0"),
        st.integers(-1000, 1000) | st.text(max_size=12),
        named,
        st.dictionaries(st.text(max_size=6), VALUES, max_size=3) | CLIENT_INFO,
        st.just([]),
        st.just(False),
    )
    versions = st.just("2.0") | st.just("2.0") | st.sampled_from(["1.0", "", None, 2.0, MISSING])
    hostile = st.tuples(
        versions,
        IDS,
        named | named | named | st.sampled_from([MISSING, 7, None, "m" * 201]),
        PARAMS,
        EXTRA,
        st.integers(0, 9).map(lambda n: n == 0),
    )
    pairs = (sound | hostile).map(lambda drawn: _pairs(*drawn))
    return pairs.flatmap(st.permutations).map(
        lambda found: "{" + ",".join(f"{json.dumps(k)}:{dump(v)}" for k, v in found) + "}"
    )


def _pairs(
    version: Any, request_id: Any, method: Any, params: Any, extra: Any, twice: bool
) -> list[tuple[str, Any]]:
    drawn = [("jsonrpc", version), ("id", request_id), ("method", method), ("params", params)]
    found = [(key, value) for key, value in drawn if value is not MISSING] + extra
    if twice and request_id is not MISSING:
        found.append(("id", 99))  # the id given twice: a parser reads the last
    return found


def garble(line: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """``line`` with bytes deleted, inserted or replaced."""
    for position, kind, piece in edits:
        at = position % (len(line) + 1)
        if kind == 0:
            line = line[:at] + line[at + len(piece) :]
        elif kind == 1:
            line = line[:at] + piece + line[at:]
        else:
            line = line[:at] + piece + line[at + len(piece) :]
    return line


PIECES = st.binary(max_size=3) | st.sampled_from(
    [b'"', b"{", b"}", b"[", b"]", b"\\", b"\xff", b"\x00", b",", b":", b'"id":', b"\xed\xa0\x80"]
)


def lines(methods: list[str]) -> st.SearchStrategy[bytes]:
    """Lines a client could send: messages, batches, garbled messages and noise."""
    messages = st.builds(
        lambda text, frame: frame[0] + text.encode() + frame[1], envelopes(methods), FRAMES
    )
    batches = st.lists(envelopes(methods), max_size=3).map(lambda m: f"[{','.join(m)}]".encode())
    edits = st.lists(
        st.tuples(st.integers(0, 2000), st.integers(0, 2), PIECES), min_size=1, max_size=3
    )
    garbled = st.builds(garble, messages, edits)
    return st.one_of(
        messages, messages, batches, garbled, garbled, st.binary(min_size=1, max_size=30)
    )


GENERATED = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(GENERATED, max_examples=600)
@given(raw=lines(ALL_METHODS))
def test_every_generated_line_is_passed_on_or_answered_once_for_its_id(raw: bytes) -> None:
    screened = screen_message(raw)
    check_screened(raw, screened)
    expected = expected_ids(raw)
    if screened.message is not None:
        assert expected is not None and sdk_ids(screened.message) == expected
    elif expected is None:
        assert len(screened.answer_to) <= 1  # found leniently in text that is no JSON
    else:
        assert list(screened.answer_to) == expected[:MAX_BATCH_ANSWERS]


def one_line(raw: bytes) -> bytes:
    return raw.replace(b"\n", b" ")  # a line over stdio holds no newline


def test_generated_lines_are_each_answered_once_by_the_real_server_over_stdio(
    tmp_path: Path,
) -> None:
    server = StdioServer(tmp_path / "desk.db")

    @settings(GENERATED, max_examples=100)
    @given(raw=lines(PROMPT_METHODS).map(one_line))
    def answered_once(raw: bytes) -> None:
        _, answered = server.answers(raw)
        expected = expected_ids(raw)
        found = [message["id"] for message in answered]
        if expected is None:
            assert len(found) <= 1
        else:
            assert found == expected

    try:
        answered_once()
    finally:
        log = server.close()
    assert "Traceback" not in log


def test_generated_bodies_are_each_answered_once_by_the_real_server_over_http(
    tmp_path: Path,
) -> None:
    with http_served(tmp_path) as server:

        @settings(GENERATED, max_examples=60)
        @given(raw=lines(PROMPT_METHODS))
        def answered_once(raw: bytes) -> None:
            status, messages, _ = server.answers(raw)
            expected = expected_ids(raw)
            found = [message["id"] for message in messages if message["id"] is not None]
            if expected is None:
                assert len(found) <= 1
            else:
                assert found == expected
            assert status in (200, 202, 400) and len(messages) <= max(1, len(found))

        answered_once()
    assert "Traceback" not in (tmp_path / "serve.log").read_text(errors="replace")
