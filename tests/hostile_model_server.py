"""One small model server on 127.0.0.1 that answers each conversation with its own hostile shape.

The shapes are the client corpus (``test_model_replies.CORPUS``: malformed
JSON, wrong types, errors with status 200...) plus what only a transport can
do wrong: a reply cut short or reset mid-chunk, a gzip header over plain
bytes, 10 MB bodies, redirects to another host, a trickle, and a tool call
id reused every turn.

A request is given a shape by its *key*: the tag ``SHAPE-<n>`` when its
text holds one (a test puts it in a query, a session or a reply to judge),
else the whole conversation, each new key taking the next shape not yet
served. Retries of one request thus get the same shape, and one batch run of
many tasks meets every shape once.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from model_servers import Planned, completion
from test_model_replies import CORPUS

TAG = re.compile(r"SHAPE-(\d+)")
TEN_MB = 10 * 1024 * 1024


@dataclass
class Hostile(Planned):
    """A planned answer that may also reset the connection after ``reset_after`` body bytes."""

    reset_after: int | None = None


def _big_reply() -> bytes:
    return completion({"role": "assistant", "content": "x" * TEN_MB})


def _reused_call() -> bytes:
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "ask_human", "arguments": '{"question": "Which city?"}'},
    }
    return completion({"role": "assistant", "content": None, "tool_calls": [call]})


# Shapes a client may well accept (a valid body under another content type,
# a reused call id): whatever the outcome, it must not crash anything.
BENIGN = {"wrong content type, valid body", "call id reused every turn"}


def transport_shapes(elsewhere: str) -> list[tuple[str, Hostile]]:
    """What only the transport can do wrong; ``elsewhere`` is another server's URL."""
    valid = completion({"role": "assistant", "content": "fine"})
    return [
        ("gzip lie", Hostile(b'{"choices": []}', headers={"Content-Encoding": "gzip"})),
        ("cut short", Hostile(b'{"choices": [', length=500, headers={"Connection": "close"})),
        ("chunked then reset", Hostile(valid * 50, chunked=True, reset_after=2500)),
        ("reset before any byte", Hostile(valid, reset_after=0)),
        ("10 MB reply", Hostile(_big_reply())),
        ("10 MB chunked reply", Hostile(_big_reply(), chunked=True)),
        ("empty chunked body", Hostile(b"", chunked=True)),
        ("wrong content type, valid body", Hostile(valid, headers={"Content-Type": "image/png"})),
        ("html error page 502", Hostile(b"<html><h1>502 Bad Gateway</h1></html>", status=502)),
        *(
            (f"redirect {status} to another host", _redirect(status, f"{elsewhere}?from={status}"))
            for status in (301, 302, 303, 307, 308)
        ),
        ("redirect to the same server", _redirect(302, "/v1/chat/completions")),
        ("trickle past the deadline", Hostile(valid, trickle=0.4)),
        ("call id reused every turn", Hostile(_reused_call())),
        ("status 200 JSON array 200k deep", Hostile(b"[" * 200_000 + b"]" * 200_000)),
    ]


def _redirect(status: int, location: str) -> Hostile:
    return Hostile(b"", status=status, headers={"Location": location, "Content-Length": "0"})


def all_shapes(elsewhere: str) -> list[tuple[str, Hostile]]:
    """The whole corpus: the client's malformed replies, then the transport's."""
    client = [
        (name, Hostile(p.body, p.status, p.headers, p.trickle, p.length, p.chunked))
        for name, p, _ in CORPUS
    ]
    return client + transport_shapes(elsewhere)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: HostileServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # clients give up on purpose here (deadlines, size caps)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.server.owner.answer(self)

    def do_GET(self) -> None:
        self.server.owner.answer(self)


class HostileServer:
    """Start with ``with HostileServer(shapes) as server:``; ``server.base_url``.

    Attributes:
        served: The key given each shape, by shape name.
        requests: Every request's key and body text, in order.
    """

    def __init__(
        self,
        shapes: list[tuple[str, Hostile]] | None = None,
        *,
        hold_until: int = 0,
        untooled: bytes | None = None,
    ) -> None:
        """Serve ``shapes``.

        With ``hold_until``, no answer goes out before that many shapes are
        asked for; with ``untooled``, a request offering no tools (the
        awareness question) gets that body instead of a shape.
        """
        self.shapes = list(shapes or [])
        self.hold_until = hold_until
        self.untooled = untooled
        self._arrived = threading.Condition()
        self.served: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []
        self._by_key: dict[str, tuple[str, Hostile]] = {}
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.address}/v1"

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``, as messages name the server."""
        return f"127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> HostileServer:
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def shape_for(self, text: str) -> tuple[str, Hostile] | None:
        """The shape for a request whose text is ``text`` (see the module docstring)."""
        tagged = TAG.search(text)
        key = tagged.group(0) if tagged else text
        with self._lock:
            self.requests.append((key, text))
            if key not in self._by_key:
                if tagged:
                    index = int(tagged.group(1))
                    if index >= len(self.shapes):
                        return None
                    chosen = self.shapes[index]
                else:
                    unused = [s for s in self.shapes if s[0] not in self.served]
                    if not unused:
                        return None
                    chosen = unused[0]
                self._by_key[key] = chosen
                self.served[chosen[0]] = key
            return self._by_key[key]

    def answer(self, handler: _Handler) -> None:
        """Send the request's shape (404 when it has none)."""
        size = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(size).decode("utf-8", "replace")
        try:
            body = json.loads(raw)
            text = json.dumps(body.get("messages"), ensure_ascii=False)
        except (ValueError, AttributeError):
            body, text = {}, raw
        if self.untooled is not None and not body.get("tools"):
            send(handler, Hostile(self.untooled))
            return
        if not self.shapes:
            with self._lock:
                self.requests.append((handler.path, text))
        chosen = self.shape_for(text) if self.shapes else None
        with self._arrived:
            self._arrived.notify_all()
            # A client that stops at its first failure still sends every request.
            self._arrived.wait_for(lambda: len(self.served) >= self.hold_until, timeout=10)
        planned = chosen[1] if chosen else Hostile(b'{"error": "no shape"}', status=404)
        send(handler, planned)


def send(handler: BaseHTTPRequestHandler, planned: Hostile) -> None:
    """Write ``planned`` to ``handler``'s connection, as badly as it says."""
    handler.send_response(planned.status)
    for name, value in planned.headers.items():
        handler.send_header(name, value)
    if planned.chunked:
        handler.send_header("Transfer-Encoding", "chunked")
    elif planned.status != 204 and "Content-Length" not in planned.headers:
        length = planned.length if planned.length is not None else len(planned.body)
        handler.send_header("Content-Length", str(length))
    handler.end_headers()
    body = planned.body
    if planned.reset_after is not None:
        body = body[: planned.reset_after]
    if planned.chunked:
        for start in range(0, len(body), 64 * 1024):
            piece = body[start : start + 64 * 1024]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        if planned.reset_after is None:
            handler.wfile.write(b"0\r\n\r\n")
    elif planned.trickle:
        for byte in body:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(planned.trickle)
    else:
        handler.wfile.write(body)
    if planned.reset_after is not None:
        handler.wfile.flush()
        # SO_LINGER 0: close with a reset, not a clean end of stream.
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        handler.close_connection = True
