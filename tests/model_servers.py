"""Tiny HTTP servers on 127.0.0.1 that answer model requests with exact bytes.

``RawModelServer`` plays a list of planned answers (status, headers, body),
one per request, and records each request's headers and JSON body, so a test
can send a hostile or odd reply to the real client and check what the client
sent. A planned answer may trickle its body, to test the client's deadline.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Planned:
    """One answer: status, headers, body; ``trickle`` seconds between body bytes."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    trickle: float = 0.0
    length: int | None = None  # the Content-Length to announce; default the body's
    chunked: bool = False  # send the body in chunks, with no length announced


def completion(message: Any, **extra: Any) -> bytes:
    """A chat completion body with one choice holding ``message``."""
    return json.dumps(
        {"id": "c1", "object": "chat.completion", "choices": [{"message": message}], **extra}
    ).encode()


def planned_json(data: Any, status: int = 200, **headers: str) -> Planned:
    """An answer with ``data`` as its JSON body."""
    return Planned(
        json.dumps(data).encode(), status, {"Content-Type": "application/json", **headers}
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: RawModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client that gave up (deadline, size cap) is expected here


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.server.owner.answer(self)


class RawModelServer:
    """Start with ``with RawModelServer([...]) as server:``; ``server.base_url``."""

    def __init__(self, plan: list[Planned], *, path_prefix: str = "/v1") -> None:
        self.plan = list(plan)
        self.path_prefix = path_prefix
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self

    @property
    def base_url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.path_prefix}"

    def __enter__(self) -> RawModelServer:
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer(self, handler: _Handler) -> None:
        """Record the request, then send the next planned answer (the last one repeats)."""
        size = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(size)
        with self._lock:
            self.requests.append(
                {
                    "path": handler.path,
                    "headers": {k.lower(): v for k, v in handler.headers.items()},
                    "body": json.loads(raw) if raw else None,
                }
            )
            planned = self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]
        handler.send_response(planned.status)
        for name, value in planned.headers.items():
            handler.send_header(name, value)
        length = planned.length if planned.length is not None else len(planned.body)
        if planned.chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        elif planned.status != 204:
            handler.send_header("Content-Length", str(length))
        handler.end_headers()
        if planned.chunked:
            for start in range(0, len(planned.body), 1000):
                piece = planned.body[start : start + 1000]
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            handler.wfile.write(b"0\r\n\r\n")
            return
        if not planned.trickle:
            handler.wfile.write(planned.body)
            return
        for byte in planned.body:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(planned.trickle)
