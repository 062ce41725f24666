"""A compressed reply is capped after decompression, in bounded memory, for every role.

Each bomb is a few hundred kilobytes on the wire (well under the 1 MB
reply cap, AAH_MAX_REPLY_BYTES) that inflates to 200 MB. The real client
meets it over HTTP through the agent's ``complete``, the text replies the
simulated human, grader and judge read, and ``aah models check``'s probe;
each refuses it with one line, within seconds, while Python's traced memory
stays under a few megabytes.
"""

from __future__ import annotations

import asyncio
import gzip
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hostile_model_server import Hostile, HostileServer
from langchain_core.messages import HumanMessage
from model_servers import Planned, RawModelServer, completion
from pydantic import SecretStr

from aah.llm import ChatClient, ModelConfig, ModelError, probe_server

INFLATED = 200 * 1024 * 1024
PIECE = b"x" * (1024 * 1024)
PEAK_LIMIT = 16 * 1024 * 1024


def squeeze(wbits: int) -> bytes:
    """A completion whose content is ``INFLATED`` bytes, compressed piece by piece."""
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    parts = [packer.compress(b'{"choices": [{"message": {"content": "')]
    parts += [packer.compress(PIECE) for _ in range(INFLATED // len(PIECE))]
    parts += [packer.compress(b'"}}]}'), packer.flush()]
    return b"".join(parts)


def squeezed_other(encoding: str) -> bytes | None:
    """The bomb in brotli or zstd, when the library that writes it is installed."""
    plain = b'{"choices": [{"message": {"content": "' + b"x" * (50 * 1024 * 1024) + b'"}}]}'
    try:
        if encoding == "br":
            import brotli

            return bytes(brotli.compress(plain, quality=5))
        import zstandard

        return bytes(zstandard.ZstdCompressor(level=3).compress(plain))
    except ImportError:
        return None


GZIP, ZLIB, RAW = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS, -zlib.MAX_WBITS


def bombs() -> list[tuple[str, Planned]]:
    gzipped = squeeze(GZIP)
    found = [
        ("gzip", Planned(gzipped, headers={"Content-Encoding": "gzip"})),
        ("deflate (zlib)", Planned(squeeze(ZLIB), headers={"Content-Encoding": "deflate"})),
        ("deflate (raw)", Planned(squeeze(RAW), headers={"Content-Encoding": "deflate"})),
        ("x-gzip", Planned(gzipped, headers={"Content-Encoding": "x-gzip"})),
        ("gzip, chunked", Planned(gzipped, headers={"Content-Encoding": "gzip"}, chunked=True)),
        (
            "gzip twice",
            Planned(gzip.compress(gzipped), headers={"Content-Encoding": "gzip, gzip"}),
        ),
    ]
    for encoding in ("br", "zstd"):
        body = squeezed_other(encoding)
        if body is not None:
            found.append((encoding, Planned(body, headers={"Content-Encoding": encoding})))
    return found


BOMBS = bombs()


def config(base_url: str) -> ModelConfig:
    return ModelConfig(
        base_url=base_url, model="m", api_key=SecretStr("sk-x"), retries=0, timeout=20
    )


def measured(ask: Callable[[], Awaitable[Any]]) -> tuple[Any, float, int]:
    """What ``ask`` returned or raised, its seconds, and the peak of Python's traced memory."""

    async def run() -> Any:
        try:
            return await ask()
        except ModelError as exc:
            return exc

    tracemalloc.start()
    started = time.monotonic()
    try:
        outcome = asyncio.run(run())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome, time.monotonic() - started, peak


def test_the_bombs_are_small_on_the_wire() -> None:
    assert len(BOMBS) >= 6
    for name, planned in BOMBS:
        assert len(planned.body) < 1_000_000, name


@pytest.mark.parametrize("role", ["agent", "text replies"])
@pytest.mark.parametrize(("name", "planned"), BOMBS, ids=[b[0] for b in BOMBS])
def test_a_compressed_bomb_is_refused_in_bounded_memory(
    name: str, planned: Planned, role: str
) -> None:
    with RawModelServer([planned]) as server:
        client = ChatClient(config(server.base_url))

        async def ask() -> Any:
            try:
                if role == "agent":
                    return await client.complete([HumanMessage("hi")])
                return await client.reply_texts([HumanMessage("hi")], n=3)
            finally:
                await client.aclose()

        outcome, seconds, peak = measured(ask)
    assert isinstance(outcome, ModelError), f"{name}: accepted {type(outcome).__name__}"
    message = str(outcome)
    assert "\n" not in message and server.base_url in message
    # aiohttp reads neither x-gzip, nor two encodings, nor zstd without its
    # optional library: those stay compressed or undecodable, a one-line error.
    if name not in ("x-gzip", "gzip twice", "zstd"):
        assert "sent a reply of more than 1,000,000 bytes" in message, message
    assert peak < PEAK_LIMIT, f"{name}: peak {peak:,} bytes"
    assert seconds < 10


def test_a_compressed_reply_under_the_cap_is_read() -> None:
    body = completion({"role": "assistant", "content": "fine " * 1000})
    for encoding, packed in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body))):
        planned = Planned(packed, headers={"Content-Encoding": encoding})
        with RawModelServer([planned]) as server:
            client = ChatClient(config(server.base_url))
            reply = asyncio.run(client.complete([HumanMessage("hi")]))
        assert reply.text == "fine " * 1000


@pytest.mark.parametrize(("name", "planned"), BOMBS[:3], ids=[b[0] for b in BOMBS[:3]])
def test_the_models_check_probe_reads_a_bomb_in_bounded_memory(name: str, planned: Planned) -> None:
    shape = Hostile(planned.body, headers=dict(planned.headers), chunked=planned.chunked)
    # Every request gets the bomb: the listing and each probe request.
    with HostileServer([(f"bomb {i}", shape) for i in range(20)]) as server:
        report, seconds, peak = measured(
            lambda: probe_server(config(server.base_url), overflow_probe=False)
        )
    assert report.reachable and report.served_models == []
    assert peak < PEAK_LIMIT, f"{name}: peak {peak:,} bytes"
    assert seconds < 30
