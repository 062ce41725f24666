"""The latency ``aah mcp serve`` adds: from a person's answer in the store to the MCP client.

Starts ``aah mcp serve`` (stdio, then streamable HTTP on 127.0.0.1) in its
own process, and with the SDK's own client asks ``ask_human`` and
``request_approval`` N times each. This process answers each request
through the store's API, as the web page does, and times from the answer
being stored to the client holding the tool's result. A person answers at
a random moment (0 to 0.5 s after the request is seen); the desk looks for
answers every 0.5 s, so about 0.25 s on average is the poll's share.

Run: .venv/bin/python perf/mcp_desk_latency.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from mcp import Client, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client

from aah.store import SessionStore

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "perf-desk-token-0123456789"
POLL_SECONDS = 0.5  # HumanTools's default


async def pending(db: Path, kind: str) -> str:
    """The id of the one pending request of ``kind``, once the server wrote it."""
    store = SessionStore(db)
    try:
        while True:
            if db.exists():
                for request in store.humans.pending_human_requests():
                    if request.kind == kind:
                        return request.id
            await asyncio.sleep(0.01)
    finally:
        store.close()


def settle(db: Path, request_id: str, kind: str) -> None:
    store = SessionStore(db)
    try:
        store.humans.claim_request(request_id, "perf")
        if kind == "approval":
            store.humans.decide_approval(request_id, "perf", "approve")
        else:
            store.humans.answer_human_request(request_id, "perf", "yes")
    finally:
        store.close()


async def one(client: Any, db: Path, tool: str, arguments: dict[str, Any], kind: str) -> float:
    """Seconds from the answer stored to the client holding the result."""
    asking = asyncio.ensure_future(client.call_tool(tool, arguments))
    request_id = await pending(db, kind)
    await asyncio.sleep(random.uniform(0, POLL_SECONDS))  # people answer at any moment
    await asyncio.to_thread(settle, db, request_id, kind)
    answered = time.perf_counter()
    result = await asking
    assert not result.is_error, result
    return time.perf_counter() - answered


async def measure(transport: Any, db: Path, rounds: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {"ask_human": [], "request_approval": []}
    info = Implementation(name="perf", version="1")
    async with Client(transport, client_info=info) as client:
        for n in range(rounds):
            question = {"question": f"Question {n}?", "id": f"q{n}"}
            found["ask_human"].append(await one(client, db, "ask_human", question, "question"))
            call = {"tool": "deploy", "arguments": {"n": n}, "id": f"c{n}"}
            seconds = await one(client, db, "request_approval", call, "approval")
            found["request_approval"].append(seconds)
    return found


def show(transport: str, found: dict[str, list[float]]) -> None:
    for tool, seconds in found.items():
        ordered = sorted(seconds)
        p90 = ordered[max(0, round(0.9 * len(ordered)) - 1)]
        print(
            f"{transport:5} {tool:16} n={len(ordered):3}  median {statistics.median(ordered):.3f} s"
            f"  p90 {p90:.3f} s  max {ordered[-1]:.3f} s"
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_http(db: Path, rounds: int, run: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AAH_MCP_TOKEN": TOKEN}
    command = [sys.executable, "-m", "aah", "mcp", "serve", "--port", str(port), "--db", str(db)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30, read=300)
        )
        return asyncio.run(
            run(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http))
        )
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="requests per tool and transport")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "stdio.db"
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "aah", "mcp", "serve", "--db", str(db)],
            env={"PYTHONPATH": str(ROOT)},
        )
        show("stdio", asyncio.run(measure(stdio_client(params), db, args.rounds)))
        db = Path(folder) / "http.db"
        show("http", run_http(db, args.rounds, lambda t: measure(t, db, args.rounds)))


if __name__ == "__main__":
    main()
