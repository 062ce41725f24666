"""An OTLP/HTTP receiver on 127.0.0.1 that answers exports as a case says: huge, slow, broken.

A case (a line of ``fixtures/hostile/otlp_responses.jsonl``, or one that
Hypothesis draws) is a dict:

- ``head``: the status line and headers, without the blank line, and
  ``pad``: ``{"with": "a", "times": N}`` to add to it (a header line of N
  bytes); ``raw_hex`` instead: the whole answer's bytes, garbage included;
- ``body``: ``{"text": ...}``, ``{"zeros": N}``, ``{"forever": "x"}`` (a body
  that never ends), ``{"bomb": "gzip" | "deflate"}`` (1 GiB of zeros, about
  1 MB on the wire) or ``{"gzip_zeros": N}``; every body is made as it is sent,
  so a gigabyte is never held;
- ``framing``: ``"length"`` (a true Content-Length), ``"chunked"``,
  ``"close"`` (the body ends when the connection does) or ``{"claims": N}``
  (a Content-Length that lies);
- ``pace``: ``{"piece": BYTES, "every": SECONDS}``, the whole answer sent a
  few bytes at a time (default: at once);
- ``after``: ``"close"`` (default) or ``"hold"`` (the connection stays open, silent).

The receiver reads each request whole before it answers, counts what it sent,
and stops sending as soon as the client is gone or the server stops.
"""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any, Protocol

from hostile_tool_server import gzip_bomb, zlib_bomb


class Sender(Protocol):
    """Where an answer's bytes go (a socket that counts them)."""

    def sendall(self, data: bytes) -> None:
        """Send all of ``data``."""


# Answers one request; returns whether the connection may serve another.
Answer = Callable[[Sender, threading.Event], bool]
_BLOCK = 64 * 1024


class HostileReceiver:
    """``with HostileReceiver(answer, ...) as receiver:``; the n-th request gets the n-th answer.

    The last answer serves every request after it.
    """

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests = 0
        self.connections = 0
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._open: list[socket.socket] = []
        self.port = int(self._listener.getsockname()[1])

    @property
    def endpoint(self) -> str:
        """The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        """The traces path, as an exporter's ``endpoint`` takes it."""
        return f"{self.endpoint}/v1/traces"

    def __enter__(self) -> HostileReceiver:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            for sock in self._open:
                _close(sock)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._open.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        counted = _Counting(sock, self)
        try:
            while not self._stop.is_set() and _read_request(sock):
                with self._lock:
                    answer = self.answers[min(self.requests, len(self.answers) - 1)]
                    self.requests += 1
                if not answer(counted, self._stop):
                    return
        except OSError:
            return  # the client gave up (its deadline, its cap): expected
        finally:
            _close(sock)


class _Counting:
    """A socket's ``sendall`` that counts the bytes the receiver sent."""

    def __init__(self, sock: socket.socket, owner: HostileReceiver) -> None:
        self._sock = sock
        self._owner = owner

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(data)
        with self._owner._lock:
            self._owner.sent += len(data)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _read_request(sock: socket.socket) -> bool:
    """Read one request, head and body; False when the client closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65_536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65_536)
        if not chunk:
            return False
        body += chunk
    return True


def answer_for(case: dict[str, Any]) -> Answer:
    """The answer ``case`` describes (see the module's docstring)."""
    pace = case.get("pace") or {}
    piece, every = int(pace.get("piece", 0)), float(pace.get("every", 0.0))
    hold = case.get("after") == "hold"

    def answer(sock: Sender, stop: threading.Event) -> bool:
        for part in _paced(_wire(case), piece):
            sock.sendall(part)
            if every and stop.wait(every):
                return False
        if hold:
            stop.wait(60)
        return False

    return answer


def ok_answer(sock: Sender, stop: threading.Event) -> bool:
    """200 with an empty body, the connection kept for the next request."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n")
    sock.sendall(b"Content-Length: 0\r\n\r\n")
    return True


def _wire(case: dict[str, Any]) -> Iterator[bytes]:
    """The answer's bytes, made as they are sent."""
    if "raw_hex" in case:
        yield bytes.fromhex(case["raw_hex"])
        return
    framing = case.get("framing", "length")
    body = case.get("body", {"text": ""})
    pad = case.get("pad") or {"with": "", "times": 0}
    head = (case["head"] + pad["with"] * int(pad["times"])).encode("latin-1")
    if framing == "length":
        head += b"\r\nContent-Length: %d" % _size(body)
    elif framing == "chunked":
        head += b"\r\nTransfer-Encoding: chunked"
    elif isinstance(framing, dict):
        head += b"\r\nContent-Length: %d" % int(framing["claims"])
    yield head + b"\r\n\r\n"
    for part in _body(body):
        yield b"%x\r\n%s\r\n" % (len(part), part) if framing == "chunked" else part
    if framing == "chunked":
        yield b"0\r\n\r\n"


def _size(body: dict[str, Any]) -> int:
    if "forever" in body:
        return 2**62
    if "zeros" in body:
        return int(body["zeros"])
    return sum(len(part) for part in _body(body))


def _body(body: dict[str, Any]) -> Iterator[bytes]:
    if "text" in body:
        yield body["text"].encode("utf-8")
    elif "hex" in body:
        yield bytes.fromhex(body["hex"])
    elif "zeros" in body:
        size = int(body["zeros"])
        block = bytes(_BLOCK)
        for start in range(0, size, _BLOCK):
            yield block[: min(_BLOCK, size - start)]
    elif "forever" in body:
        yield from repeat(body["forever"].encode("utf-8") * 1024)
    elif "bomb" in body:
        data = gzip_bomb() if body["bomb"] == "gzip" else zlib_bomb()
        for start in range(0, len(data), _BLOCK):
            yield data[start : start + _BLOCK]
    elif "gzip_zeros" in body:
        yield gzip.compress(bytes(int(body["gzip_zeros"])), compresslevel=1)
    else:
        raise ValueError(f"no such body: {body}")


def _paced(parts: Iterator[bytes], piece: int) -> Iterator[bytes]:
    """``parts`` as they are, or cut into ``piece`` bytes each."""
    for part in parts:
        if piece <= 0:
            yield part
            continue
        for start in range(0, len(part), piece):
            yield part[start : start + piece]
