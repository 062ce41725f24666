"""Tool calls must not queue behind Python's default thread pool.

Live HTTP tool calls run on ``requests`` in worker threads (``asyncio.to_thread``).
Python's default pool has ``min(32, cores + 4)`` threads, so on this 2-core
machine 64 sessions calling tools at once wait for 6 threads. A batch run
gives the loop a pool sized for its concurrency (``aah.runtime.loop.worker_threads``).

This fires N concurrent live-mode tool calls at a local HTTP server that
answers each after a fixed delay, first on the default pool, then inside
``worker_threads(N)``, and prints the wall time of each. Ideal: one delay.
Run: .venv/bin/python perf/tool_call_threads.py [--calls 64] [--delay 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aah.runtime.loop import run_async, worker_count, worker_threads
from aah.tools.http import Executor, make_executor
from aah.tools.spec import EndpointSource, EndpointSpec, ResponseSketch, qualified_name


def _slow_server(delay: float) -> ThreadingHTTPServer:
    class Slow(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the handler's own name
            time.sleep(delay)
            body = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        # The default backlog of 5 drops bursts of connections, and a dropped
        # connection is retried a second later: that, not threads, would be timed.
        request_queue_size = 256

    server = Server(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _spec(port: int) -> EndpointSpec:
    return EndpointSpec(
        tool="local",
        category="perf",
        name="slow",
        qualified_name=qualified_name("local", "slow"),
        method="GET",
        url_template=f"http://127.0.0.1:{port}/slow",
        parameters=[],
        response=ResponseSketch(),
        source=EndpointSource(kind="builtin"),
    )


async def _fire(executor: Executor, spec: EndpointSpec, calls: int) -> float:
    started = time.perf_counter()
    results = await asyncio.gather(*(executor.acall(spec, {}) for _ in range(calls)))
    elapsed = time.perf_counter() - started
    assert all(result.ok for result in results), [r.error for r in results if not r.ok][:3]
    return elapsed


def _measure(body: Callable[[], Awaitable[float]]) -> float:
    return run_async(body())


def main() -> None:
    """Print wall times of N concurrent live tool calls, default pool vs sized pool."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.1)
    args = parser.parse_args()
    server = _slow_server(args.delay)
    spec = _spec(server.server_address[1])
    executor = make_executor("live", retries=0, timeout=30)
    try:
        # One warm-up call so that imports and the first connection are not timed.
        _measure(lambda: _fire(executor, spec, 1))

        async def default_pool() -> float:
            return await _fire(executor, spec, args.calls)

        async def sized_pool() -> float:
            async with worker_threads(args.calls):
                return await _fire(executor, spec, args.calls)

        before = _measure(default_pool)
        after = _measure(sized_pool)
    finally:
        executor.close()
        server.shutdown()
    default_threads = min(32, (os.cpu_count() or 1) + 4)
    print(f"{args.calls} concurrent live tool calls, {args.delay * 1000:.0f} ms each")
    print(f"default pool ({default_threads} threads):  {before:.2f} s")
    print(f"worker_threads({args.calls}) ({worker_count(args.calls)} threads): {after:.2f} s")
    print(f"speedup {before / after:.1f}x; ideal wall time {args.delay:.2f} s")


if __name__ == "__main__":
    main()
