"""A raw-socket server on 127.0.0.1 where each path is one way a tool API misbehaves.

``http.server`` cannot trickle a status line, send a 200 KB header line or
stream a body that never ends, so each route here writes its bytes to the
socket itself. A behaviour gets the socket and a ``stop`` event; it returns
when it is done or the server stops, whichever comes first.

Routes are given to the server as a mapping from path to behaviour, e.g.
``HostileToolServer({"/trickle": trickle(b"...", every=2.0)})``.
"""

from __future__ import annotations

import gzip
import socket
import socketserver
import threading
import zlib
from collections.abc import Callable, Mapping
from functools import cache
from http import HTTPStatus
from typing import Any

Behaviour = Callable[[socket.socket, threading.Event], None]
ONE_GB = 1024**3


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: HostileToolServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (its deadline, its size cap) closes early: expected.
        return None


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        owner = self.server.owner
        head = _read_head(self.request)
        if head is None:
            return
        path = head.split(b" ", 2)[1].decode("latin-1") if head.count(b" ") >= 2 else "/"
        with owner.lock:
            owner.hits.append(path)
        behaviour = owner.routes.get(path.split("?", 1)[0])
        if behaviour is None:
            self.request.sendall(_response(404, b"no such route"))
            return
        behaviour(self.request, owner.stop_event)


def _read_head(sock: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65_536)
        if not chunk:
            return None
        data += chunk
    return data


class HostileToolServer:
    """Start with ``with HostileToolServer(routes) as server:``; ``server.url("/x")``."""

    def __init__(self, routes: Mapping[str, Behaviour]) -> None:
        self.routes = dict(routes)
        self.hits: list[str] = []
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self.port: int = self._server.server_address[1]

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def __enter__(self) -> HostileToolServer:
        thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self._server.shutdown()
        self._server.server_close()


def _response(status: int, body: bytes, headers: Mapping[str, str] | None = None) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _send(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True


def trickle(data: bytes, *, every: float) -> Behaviour:
    """Send ``data`` one byte every ``every`` seconds (status line and headers included)."""

    def behave(sock: socket.socket, stop: threading.Event) -> None:
        for index in range(len(data)):
            if not _send(sock, data[index : index + 1]) or stop.wait(every):
                return

    return behave


def slow_headers(every: float) -> Behaviour:
    """A status line, then header lines that never end, one byte every ``every`` seconds."""
    return trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 100_000, every=every)


def slow_body(every: float) -> Behaviour:
    """Complete headers at once, then a 10 KB body one byte every ``every`` seconds."""

    def behave(sock: socket.socket, stop: threading.Event) -> None:
        head = _response(200, b"", {"Content-Type": "text/plain"}).replace(
            b"Content-Length: 0", b"Content-Length: 10000"
        )
        if _send(sock, head):
            trickle(b"x" * 10_000, every=every)(sock, stop)

    return behave


def chunked_forever(every: float) -> Behaviour:
    """A chunked body that never ends: a 1-byte chunk every ``every`` seconds."""

    def behave(sock: socket.socket, stop: threading.Event) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        if not _send(sock, head):
            return
        while _send(sock, b"1\r\nx\r\n") and not stop.wait(every):
            pass

    return behave


def silent(sock: socket.socket, stop: threading.Event) -> None:
    """Accept, read the request, never answer."""
    stop.wait(120)


def raw(data: bytes) -> Behaviour:
    """Send ``data`` as is, then close."""

    def behave(sock: socket.socket, stop: threading.Event) -> None:
        _send(sock, data)

    return behave


def answer(body: bytes, headers: Mapping[str, str], *, length: int | None = None) -> Behaviour:
    """A whole response; ``length`` replaces the true ``Content-Length`` (a lie), -1 omits it."""
    head = _response(200, b"", headers)
    if length == -1:
        head = head.replace(b"Content-Length: 0\r\n", b"")
    else:
        size = len(body) if length is None else length
        head = head.replace(b"Content-Length: 0", f"Content-Length: {size}".encode())
    return raw(head + body)


def chunked(body: bytes, headers: Mapping[str, str]) -> Behaviour:
    """``body`` sent in 64 KB chunks, without a ``Content-Length``."""
    head = _response(200, b"", {**headers, "Transfer-Encoding": "chunked"}).replace(
        b"Content-Length: 0\r\n", b""
    )
    pieces = [body[i : i + 65_536] for i in range(0, len(body), 65_536)]
    encoded = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces)
    return raw(head + encoded + b"0\r\n\r\n")


# Compressed bombs: small on the wire, ONE_GB (or more) once decompressed.


def _raw_deflate_zeros(size: int) -> bytes:
    """Raw deflate of ``size`` zero bytes, built from one repeated block.

    After a full flush the compressor starts afresh, so every 1 MB block of
    zeros compresses to the same bytes: compress two, repeat the second.
    """
    block = bytes(1024 * 1024)
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    return first + again * (size // len(block) - 1) + packer.flush()


@cache
def gzip_bomb() -> bytes:
    """gzip of 1 GB of zeros, about 1 MB: one 64 MB member repeated (gzip allows members)."""
    member = gzip.compress(bytes(64 * 1024 * 1024), compresslevel=9)
    return member * (ONE_GB // (64 * 1024 * 1024))


@cache
def zlib_bomb() -> bytes:
    """zlib-wrapped deflate of 1 GB of zeros (``Content-Encoding: deflate`` done right)."""
    # The adler-32 of n zero bytes: a stays 1, b adds a (1) n times.
    checksum = (ONE_GB % 65_521) << 16 | 1
    return b"\x78\xda" + _raw_deflate_zeros(ONE_GB) + checksum.to_bytes(4, "big")


@cache
def raw_deflate_bomb() -> bytes:
    """Raw deflate of 1 GB of zeros (``Content-Encoding: deflate`` as many servers send it)."""
    return _raw_deflate_zeros(ONE_GB)


@cache
def nested_gzip_bomb() -> bytes:
    """gzip of gzip: each layer alone is small, the inner one decompresses to 1 GB."""
    return gzip.compress(gzip_bomb(), compresslevel=9)


@cache
def brotli_bomb() -> bytes | None:
    """br of 1 GB of zeros, or ``None`` where brotli is not installed."""
    try:
        import brotli
    except ImportError:
        return None
    packer = brotli.Compressor(quality=1)
    block = bytes(1024 * 1024)
    parts = [packer.process(block) for _ in range(ONE_GB // len(block))]
    return bytes(b"".join(parts) + packer.finish())
