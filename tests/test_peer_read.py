"""The one bounded reader: size caps, total deadlines and depth, on real sockets and files.

Then generated hostile input at the model server's border: whatever a model
server answers (status, headers, bytes, JSON of any shape), the real client
ends each request with a reply or one readable ``ModelError`` line, in time.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from model_servers import Planned, RawModelServer, completion
from pydantic import SecretStr

from aah.llm import ChatClient, ModelConfig, ModelError
from aah.peer_read import (
    NotARegularFile,
    PeerBound,
    PeerOutOfBounds,
    SocketDeadline,
    aread,
    gather_capped,
    parse_json,
    read_capped,
    read_file,
    watch_socket,
)

BOUND = PeerBound("the test peer", max_bytes=1000, seconds=0.5, setting="AAH_TEST_BYTES")


def test_a_capped_read_stops_just_past_the_cap_and_never_holds_the_rest() -> None:
    asked: list[int] = []

    def endless(size: int) -> bytes:
        asked.append(size)
        return b"x" * size

    body = read_capped(endless, 10_000, chunk=4096)
    assert not body.whole and 10_000 < body.size <= 10_000 + 4096
    assert sum(asked) == body.size  # nothing read beyond what is held

    pulled = 0

    def chunks() -> Iterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"y" * 1000

    assert not gather_capped(chunks(), 2500).whole and pulled == 3
    assert gather_capped([b"ab", b"", b"cd"], 4) == (b"abcd", 4, True)


def test_a_refusal_is_one_line_naming_the_peer_the_bound_and_the_setting() -> None:
    with pytest.raises(PeerOutOfBounds) as caught:
        parse_json(b"[" * 2000 + b"]" * 2000, BOUND.__class__("the test peer", 10**6))
    assert caught.value.kind == "depth" and "nested deeper than 100 levels" in str(caught.value)
    with pytest.raises(PeerOutOfBounds) as caught:
        parse_json(b"1" * 1001, BOUND)
    message = str(caught.value)
    assert caught.value.kind == "size" and "\n" not in message
    assert message.startswith("the test peer sent more than 1,000 bytes")
    assert "AAH_TEST_BYTES" in message
    with pytest.raises(PeerOutOfBounds, match="thousands of digits"):
        parse_json(b"9" * 5000, PeerBound("p", 10**6))


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


def _hostile_json_text() -> st.SearchStrategy[bytes]:
    nested = st.integers(1, 3000).map(lambda depth: b"[" * depth + b"]" * depth)
    strings = st.integers(1, 3000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth)
    digits = st.integers(1, 9000).map(lambda count: b"7" * count)
    valid = JSON_VALUES.map(lambda value: json.dumps(value).encode())
    escapes = st.sampled_from(
        [b'"\\ud800"', b'"\\udfff\\ud800"', b"NaN", b"[Infinity]", b"\xef\xbb\xbf{}"]
    )
    return nested | strings | digits | valid | escapes | st.binary(max_size=300)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_hostile_json_text())
def test_parse_json_gives_a_value_or_one_of_two_errors_for_any_bytes(data: bytes) -> None:
    bound = PeerBound("a peer", 100_000)
    try:
        parse_json(data, bound)
    except PeerOutOfBounds as exc:
        assert "\n" not in str(exc) and str(exc).startswith("a peer sent ")
    except ValueError:
        pass  # not JSON (JSONDecodeError, or bytes that are not UTF-8)


def test_a_file_past_its_cap_a_device_and_a_fifo_are_refused_without_reading_them(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 5000)
    with pytest.raises(PeerOutOfBounds, match="more than 1,000 bytes"):
        read_file(big, BOUND)
    small = tmp_path / "small.json"
    small.write_bytes(b"{}")
    assert read_file(small, BOUND) == b"{}"
    with pytest.raises(NotARegularFile):
        read_file(Path("/dev/zero"), BOUND)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(NotARegularFile):
        read_file(fifo, BOUND)  # opening a FIFO nobody writes to would block for ever
    assert time.monotonic() - started < 1


class _Trickler:
    """A TCP server on 127.0.0.1 that sends one byte every ``pause`` seconds until told to stop."""

    def __init__(self, pause: float = 0.05) -> None:
        self.pause = pause
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            while not self._stop.wait(self.pause):
                try:
                    connection.sendall(b"x")
                except OSError:
                    return

    def close(self) -> None:
        self._stop.set()
        self._listener.close()


def test_a_trickling_peer_is_cut_at_the_total_deadline_whatever_each_read_waits() -> None:
    trickler = _Trickler()
    try:
        started = time.monotonic()
        with SocketDeadline(0.4) as deadline:
            sock = socket.create_connection(("127.0.0.1", trickler.port))
            sock.settimeout(5)  # each read alone would wait far longer than the deadline
            watch_socket(sock)
            body = read_capped(sock.recv, 10**6)
        elapsed = time.monotonic() - started
        sock.close()
    finally:
        trickler.close()
    assert deadline.expired and body.whole  # the read ended, with what had come
    assert 0.3 < elapsed < 1.5


def test_an_async_read_of_a_trickling_peer_ends_at_the_deadline() -> None:
    trickler = _Trickler()

    async def read() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", trickler.port)
        try:
            await aread(reader.read, BOUND)
        finally:
            writer.close()

    started = time.monotonic()
    try:
        with pytest.raises(PeerOutOfBounds) as caught:
            asyncio.run(read())
    finally:
        trickler.close()
    assert caught.value.kind == "time" and "within 0.5 s" in str(caught.value)
    assert time.monotonic() - started < 1.5


# --- generated model-server answers ---------------------------------------------------------

HEADERS = st.fixed_dictionaries(
    {"Content-Type": st.sampled_from(["application/json", "text/html", "text/event-stream", ""])},
    optional={
        "Retry-After": st.sampled_from(
            ["0", "-1", "1e400", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"]
        ),
        "x-should-retry": st.sampled_from(["true", "false", "maybe"]),
        "Location": st.just("http://127.0.0.1:1/elsewhere"),
    },
)
MESSAGES = st.fixed_dictionaries(
    {},
    optional={
        "role": JSON_SCALARS,
        "content": JSON_VALUES,
        "tool_calls": JSON_VALUES
        | st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": JSON_SCALARS,
                    "type": JSON_SCALARS,
                    "function": JSON_VALUES
                    | st.fixed_dictionaries(
                        {}, optional={"name": JSON_SCALARS, "arguments": JSON_VALUES}
                    ),
                },
            ),
            max_size=3,
        ),
        "reasoning_content": JSON_VALUES,
    },
)
BODIES = (
    MESSAGES.map(completion)
    | st.builds(
        lambda message, usage: completion(message, usage=usage),
        MESSAGES,
        JSON_VALUES,
    )
    | _hostile_json_text()
    | JSON_VALUES.map(lambda value: json.dumps(value).encode())
)
ANSWERS = st.builds(
    lambda status, headers, body: Planned(body, status, {k: v for k, v in headers.items() if v}),
    st.sampled_from([200, 200, 200, 201, 204, 301, 400, 401, 404, 408, 413, 422, 429, 500, 503]),
    HEADERS,
    BODIES,
)


@pytest.fixture(scope="module")
def model_server() -> Iterator[RawModelServer]:
    with RawModelServer([Planned(completion({"content": "fine"}))]) as server:
        yield server


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ANSWERS)
def test_any_model_server_answer_ends_in_a_reply_or_one_model_error_line(
    model_server: RawModelServer, answer: Planned
) -> None:
    model_server.plan = [answer]
    config = ModelConfig(
        base_url=model_server.base_url,
        model="m",
        api_key=SecretStr("sk-test-secret-value"),
        retries=0,
        timeout=3.0,
        max_reply_bytes=200_000,
    )

    async def ask() -> None:
        client = ChatClient(config)
        try:
            for call in (
                lambda: client.complete([HumanMessage("hi")]),
                lambda: client.reply_texts([HumanMessage("hi")], n=2),
            ):
                try:
                    await call()
                except ModelError as exc:
                    message = str(exc)
                    assert message and "\n" not in message and len(message) < 1000, message
                    assert "sk-test-secret-value" not in message
        finally:
            await client.aclose()

    started = time.monotonic()
    asyncio.run(ask())
    assert time.monotonic() - started < 8


def test_data_files_from_outside_are_read_through_the_bound(tmp_path: Path) -> None:
    from aah.benchmark.failtalms.published import read_answers
    from aah.errors import AahError

    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" + b'{"a":' * 500 + b"1" + b"}" * 500 + b"]")
    with pytest.raises(AahError, match=r"deep\.json holds JSON nested deeper than 100 levels"):
        read_answers(deep)
    digits = tmp_path / "digits.json"
    digits.write_bytes(b"[" + b"9" * 5000 + b"]")
    with pytest.raises(AahError, match="a number of thousands of digits"):
        read_answers(digits)
