"""A small threaded HTTP server on 127.0.0.1 that plays the APIs the tests call.

Routes (any method):
  /json            200 {"city": "Oslo", "temp": 21.5}
  /missing         404 JSON error
  /flaky           500 for the first ``flaky_failures`` hits, then 200
  /broken          always 500
  /slow            sleeps ``slow_seconds`` before answering 200
  /huge            200 text of ``huge_size`` bytes
  /text            200 text/plain
  /empty           200 with no body
  /image.png       200 PNG bytes
  /redirect-home   302 to /json on the same host
  /redirect-away   302 to /json on http://localhost:<port> (another host name)
  /redirect-loop   302 to itself
  /echo...         200 JSON of the raw path, query, body and headers it got

Every request is counted, so a test can assert that none was sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from aah.tools.spec import (
    EndpointSource,
    EndpointSpec,
    ParameterSpec,
    ResponseSketch,
    qualified_name,
)

PNG_BYTES = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00"
    b"\x00\x00\x00IEND\xaeB`\x82"
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: LocalServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, size cap) closes early; that is expected here.
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle plus the
    # client's delayed ACK add ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        self.server.owner.handle(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET


class LocalServer:
    """Start with ``with LocalServer() as server:``; ``server.url("/json")``."""

    def __init__(
        self, *, flaky_failures: int = 1, slow_seconds: float = 1.0, huge_size: int = 1_000_000
    ) -> None:
        self.flaky_failures = flaky_failures
        self.slow_seconds = slow_seconds
        self.huge_size = huge_size
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.port: int = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def count(self, route: str | None = None) -> int:
        with self._lock:
            if route is None:
                return sum(self.hits.values())
            return self.hits[route]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()

    def start(self) -> LocalServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle(self, handler: _Handler) -> None:
        route = urlsplit(handler.path).path
        if route.startswith("/echo"):
            route = "/echo"
        with self._lock:
            self.hits[route] += 1
            seen = self.hits[route]
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        if route == "/json":
            self._send_json(handler, 200, {"city": "Oslo", "temp": 21.5})
        elif route == "/missing":
            self._send_json(handler, 404, {"error": "not found"})
        elif route == "/flaky":
            failed = seen <= self.flaky_failures
            self._send_json(handler, 500 if failed else 200, {"attempt": seen})
        elif route == "/broken":
            self._send_json(handler, 500, {"error": "boom"})
        elif route == "/slow":
            time.sleep(self.slow_seconds)
            self._send_json(handler, 200, {"slow": True})
        elif route == "/huge":
            self._send(handler, 200, b"x" * self.huge_size, "text/plain")
        elif route == "/text":
            self._send(handler, 200, "héllo wörld".encode(), "text/plain; charset=utf-8")
        elif route == "/empty":
            self._send(handler, 200, b"", "application/json")
        elif route == "/image.png":
            self._send(handler, 200, PNG_BYTES, "image/png")
        elif route == "/redirect-home":
            self._redirect(handler, "/json")
        elif route == "/redirect-away":
            self._redirect(handler, f"http://localhost:{self.port}/json")
        elif route == "/redirect-loop":
            self._redirect(handler, "/redirect-loop")
        elif route == "/echo":
            self._send_json(handler, 200, self._echo(handler, body))
        else:
            self._send_json(handler, 404, {"error": f"no route {route}"})

    def _echo(self, handler: _Handler, body: bytes) -> dict[str, Any]:
        parts = urlsplit(handler.path)
        return {
            "method": handler.command,
            "path": parts.path,
            "query": parts.query,
            "body": body.decode(),
            "headers": {k.lower(): v for k, v in handler.headers.items()},
        }

    def _redirect(self, handler: _Handler, location: str) -> None:
        handler.send_response(302)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def _send_json(self, handler: _Handler, status: int, data: Any) -> None:
        self._send(handler, status, json.dumps(data).encode(), "application/json")

    def _send(self, handler: _Handler, status: int, body: bytes, content_type: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            try:
                handler.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_spec(
    url: str,
    *,
    method: Any = "GET",
    params: list[ParameterSpec] | None = None,
    name: str = "endpoint",
    response: ResponseSketch | None = None,
) -> EndpointSpec:
    """An endpoint of the test tool "local" at `url`."""
    return EndpointSpec(
        tool="local",
        category="test",
        name=name,
        qualified_name=qualified_name("local", name),
        method=method,
        url_template=url,
        parameters=params or [],
        response=response or ResponseSketch(),
        source=EndpointSource(kind="builtin"),
    )
