"""Tool calls against hostile servers: trickles, huge headers and compressed bombs.

Every server is a real socket on 127.0.0.1 (``hostile_tool_server``); the
executor is the one ``aah run`` uses. What each case must show: the call ends
within its timeout, memory stays small, and the agent reads one clear line
saying what the server did.
"""

from __future__ import annotations

import gzip
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest
from hostile_tool_server import (
    Behaviour,
    HostileToolServer,
    answer,
    brotli_bomb,
    chunked,
    chunked_forever,
    gzip_bomb,
    nested_gzip_bomb,
    raw,
    raw_deflate_bomb,
    silent,
    slow_body,
    slow_headers,
    trickle,
    zlib_bomb,
)
from http_server import make_spec

from aah.tools.http import HttpExecutor, ToolResult

TIMEOUT = 1.0
CAP = 200_000
OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"

# A whole response (status line, headers, body), each byte arriving in time
# for a per-read timeout, the whole never in time for the call's.
TRICKLES: dict[str, Behaviour] = {
    "whole response, a byte every 0.3 s": trickle(OK_HEAD + b"hello", every=0.3),
    "status line then endless header, a byte every 0.3 s": slow_headers(0.3),
    "headers at once, body a byte every 0.3 s": slow_body(0.3),
    "chunked body that never ends": chunked_forever(0.05),
    "accepts, never answers": silent,
    "headers, then silence": trickle(OK_HEAD + b"h", every=30.0),
}


def _call(server: HostileToolServer, path: str, **options: float) -> ToolResult:
    with HttpExecutor(
        timeout=options.get("timeout", TIMEOUT),
        retries=2,
        backoff=0.01,
        max_bytes=CAP,
        allow_private=True,
    ) as http:
        return http.call(make_spec(server.url(path)), {})


@pytest.fixture(scope="module")
def trickling() -> Iterator[HostileToolServer]:
    routes = {f"/t{i}": behaviour for i, behaviour in enumerate(TRICKLES.values())}
    with HostileToolServer(routes) as server:
        yield server


@pytest.mark.parametrize("index", range(len(TRICKLES)), ids=list(TRICKLES))
def test_the_timeout_bounds_the_whole_call(trickling: HostileToolServer, index: int) -> None:
    started = time.monotonic()
    result = _call(trickling, f"/t{index}")
    elapsed = time.monotonic() - started
    assert elapsed < TIMEOUT + 1.0, (elapsed, result.error)
    assert not result.ok and result.status is None
    assert result.error == f"no response from {trickling.host} within 1 s (timeout)"
    assert result.text == f"request failed: {result.error}"


def test_a_fast_endless_body_is_cut_at_the_cap() -> None:
    with HostileToolServer({"/endless": chunked_forever(0.0)}) as server:
        result = _call(server, "/endless", timeout=10.0)
    assert result.ok and result.truncated
    assert result.text.endswith(f"…[truncated at {CAP} bytes]")


# Response heads that http.client gives up on: the agent must not read "could not connect".
HUGE_HEADS: dict[str, bytes] = {
    "one 200 KB header line": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
    "5,000 headers": b"HTTP/1.1 200 OK\r\n"
    + b"".join(b"X-H%d: v\r\n" % i for i in range(5_000))
    + b"\r\n",
    "101 headers": b"HTTP/1.1 200 OK\r\n" + b"X-H: v\r\n" * 101 + b"\r\n",
    "a 100 KB status line": b"HTTP/1.1 200 " + b"O" * 100_000 + b"\r\n\r\n",
    "a 70 KB Set-Cookie": b"HTTP/1.1 200 OK\r\nSet-Cookie: a=" + b"b" * 70_000 + b"\r\n\r\n",
}


@pytest.mark.parametrize("head", list(HUGE_HEADS))
def test_huge_response_headers_are_named(head: str) -> None:
    with HostileToolServer({"/h": raw(HUGE_HEADS[head])}) as server:
        result = _call(server, "/h")
    assert not result.ok and result.status is None
    assert result.error is not None and "could not connect" not in result.error
    assert result.error == (
        f"the response headers from {server.host} were too large or malformed "
        "(over 64 KB or 100 headers)"
    ), result.error


def _bombs() -> dict[str, Callable[[], Behaviour]]:
    gz = {"Content-Encoding": "gzip", "Content-Type": "text/plain"}
    bombs: dict[str, Callable[[], Behaviour]] = {
        "gzip": lambda: answer(gzip_bomb(), gz),
        "deflate (zlib)": lambda: answer(zlib_bomb(), {"Content-Encoding": "deflate"}),
        "deflate (raw)": lambda: answer(raw_deflate_bomb(), {"Content-Encoding": "deflate"}),
        "gzip of gzip, both named": lambda: answer(
            nested_gzip_bomb(), {"Content-Encoding": "gzip, gzip"}
        ),
        "gzip of gzip, two headers": lambda: raw(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(nested_gzip_bomb()), nested_gzip_bomb())
        ),
        "gzip, GZIP (case)": lambda: answer(nested_gzip_bomb(), {"Content-Encoding": "GZIP, gzip"}),
        "chunked gzip, no Content-Length": lambda: chunked(gzip_bomb(), gz),
        "gzip with a lying Content-Length": lambda: answer(gzip_bomb(), gz, length=150_000),
        "gzip JSON": lambda: answer(
            gzip.compress(b'{"a": "' + b"x" * 50_000_000 + b'"}'),
            {"Content-Encoding": "gzip", "Content-Type": "application/json"},
        ),
    }
    if brotli_bomb() is not None:
        bombs["br"] = lambda: answer(brotli_bomb() or b"", {"Content-Encoding": "br"})
    return bombs


BOMBS = _bombs()


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_compressed_bomb_is_cut_at_the_cap_with_little_memory(bomb: str) -> None:
    behaviour = BOMBS[bomb]()
    with HostileToolServer({"/bomb": behaviour}) as server:
        tracemalloc.start()
        try:
            result = _call(server, "/bomb", timeout=20.0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 50_000_000, peak
    assert not result.ok and result.status == 200 and result.truncated
    assert result.error == f"response too large (over {CAP} bytes decompressed)"
    assert result.text == f"HTTP 200 OK\n{result.error}"


@pytest.mark.parametrize("head", ["one 200 KB header line", "5,000 headers"])
async def test_the_model_client_names_huge_headers_too(head: str) -> None:
    from langchain_core.messages import HumanMessage

    from aah.llm import ChatClient, ModelConfig, ModelConnectionError

    with HostileToolServer({"/v1/chat/completions": raw(HUGE_HEADS[head])}) as server:
        config = ModelConfig(base_url=server.url("/v1"), model="m", api_key="k", retries=0)
        client = ChatClient(config)
        try:
            with pytest.raises(ModelConnectionError) as caught:
                await client.complete([HumanMessage("hi")])
        finally:
            await client.aclose()
    message = str(caught.value)
    assert "cannot reach" not in message and "\n" not in message
    assert "sent response headers that were too large or malformed" in message
