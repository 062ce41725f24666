"""The web app's outer door: what it refuses before Gradio sees a request, and what it logs.

The page takes no files and serves none, but Gradio's server has routes
that store any upload (``/gradio_api/upload``, ``/process_recording``, a
multipart ``/component_server``, streaming input) and that serve stored
files back to anyone (``/gradio_api/file=...``). ``WebGuard`` refuses all of
them, by route and by body type, so that no stranger can park files on the
machine or read back what another Gradio app on it stored.

A client can also make Gradio fail: an unknown session id on
``/gradio_api/queue/data`` (after the reply has begun), an unknown event
handler on ``/gradio_api/queue/join``, an unknown component. The server
would print a full traceback per request; ``WebGuard`` answers (or ends)
such a reply itself and ``ClientErrorLog`` notes it in one line, at most
once per ``QUIET_SECONDS`` for each kind, so a client cannot flood the log.

Before any of that, ``WebGuard`` checks that the request names a host this
app answers to and, if it says which page sent it, that the page is this
app's own (``AllowedHosts``: no DNS rebinding, no other site's page), for
every route, the beacon's and websockets' included.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

from aah.ui.web.hosts import AllowedHosts, Refusal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The largest request body the app reads: an answer is a few thousand characters.
MAX_REQUEST_BYTES = 1_000_000
QUIET_SECONDS = 60.0
# Gradio's routes (gradio/routes.py) that take files in or give files out,
# as the first segment after the ``/gradio_api`` prefix.
_FILE_ROUTES = frozenset({"upload", "upload_progress", "process_recording", "stream", "file"})
_FILE_ROUTE_PREFIXES = ("file=", "proxy=")
_API_PREFIX = "gradio_api"
_NO_UPLOADS = "this app takes no uploads"
_NO_FILES = "this app serves no files"
# At most this many kinds of client error are kept apart; the rest share one.
_MAX_KINDS = 64

_log = logging.getLogger(__name__)


def refusal(method: str, path: str, content_type: str) -> tuple[int, str] | None:
    """The status and one-line reason ``WebGuard`` answers a request with, or None to let it by.

    Args:
        method: The HTTP method.
        path: The request path, percent-decoded (as ASGI gives it).
        content_type: The ``Content-Type`` headers, joined ("" when absent).
    """
    if "multipart/" in content_type.lower():
        return 403, _NO_UPLOADS
    parts = [part.casefold() for part in path.split("/") if part]
    while parts and parts[0] == _API_PREFIX:
        parts.pop(0)
    if not parts:
        return None
    first = parts[0]
    if first in _FILE_ROUTES or first.startswith(_FILE_ROUTE_PREFIXES):
        return 403, (_NO_UPLOADS if method not in ("GET", "HEAD") else _NO_FILES)
    return None


class ClientErrorLog:
    """One log line per kind of client-caused failure, at most once per ``interval`` seconds.

    Args:
        interval: Seconds between two lines of one kind.
        clock: Monotonic seconds (a test can move time).
        logger: Where the lines go.
    """

    def __init__(
        self,
        interval: float = QUIET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = _log,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._logger = logger
        self._last: dict[str, float] = {}
        self._quieted: dict[str, int] = {}
        self._lock = threading.Lock()

    def note(self, kind: str, detail: str = "") -> bool:
        """Log ``kind`` once if its last line is ``interval`` old; True when a line was written.

        Args:
            kind: What failed; lines are counted per kind.
            detail: Said on the line, but no part of the kind (a client chooses it).
        """
        now = self._clock()
        with self._lock:
            if len(self._last) >= _MAX_KINDS and kind not in self._last:
                kind = "other client errors"
            last = self._last.get(kind)
            if last is not None and now - last < self.interval:
                self._quieted[kind] = self._quieted.get(kind, 0) + 1
                return False
            self._last[kind] = now
            quieted = self._quieted.pop(kind, 0)
        since = f" ({quieted} more since the last such line)" if quieted else ""
        self._logger.warning(
            "aah web: %s%s%s; lines like this one come at most every %g s",
            kind,
            f" ({detail})" if detail else "",
            since,
            self.interval,
        )
        return True


class WebGuard:
    """ASGI middleware in front of the Gradio app: foreign hosts, pages and files refused.

    Args:
        app: The application behind the guard.
        errors: Where failures a client caused after its reply began are noted.
        hosts: The host names the app answers to; default: localhost's only.
    """

    def __init__(
        self,
        app: ASGIApp,
        errors: ClientErrorLog | None = None,
        hosts: AllowedHosts | None = None,
    ) -> None:
        self.app = app
        self.errors = errors or ClientErrorLog()
        self.hosts = hosts or AllowedHosts()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ASGI connection."""
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        foreign = self.hosts.refusal(
            _headers(scope, b"host"),
            _headers(scope, b"origin"),
            _headers(scope, b"x-forwarded-host"),
        )
        if foreign is not None:
            await self._refuse(scope, send, foreign)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        content_type = ";".join(_headers(scope, b"content-type"))
        refused = refusal(str(scope.get("method", "")), path, content_type)
        if refused is not None:
            await plain_reply(send, *refused)
            return
        reply = _ReplyState(send)
        try:
            await self.app(scope, receive, reply.send)
        except Exception as exc:
            # Past the guard, what fails on a request is a client naming what is
            # not there (a session, an event handler, a component) far more
            # often than a bug; either way one line per kind says where.
            status = _client_status(exc)
            if status is not None:
                self.errors.note(f"a client's request failed (HTTP {status} on {path[:80]})")
            else:
                kind = f"a request to {path[:80]} failed"
                self.errors.note(kind, f"{type(exc).__name__}: {_one_line(exc)}")
            if not reply.started:
                await plain_reply(send, 500, "the app could not answer this request")
            elif not reply.ended:
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _refuse(self, scope: Scope, send: Send, refused: Refusal) -> None:
        self.errors.note(refused.kind, refused.detail)
        if scope["type"] == "websocket":
            # Closed before it is accepted: the server answers the handshake with 403.
            await send({"type": "websocket.close", "code": 1008})
            return
        await plain_reply(send, refused.status, refused.reason)


class _ReplyState:
    """Whether the reply to one request has begun and ended."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.ended = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.ended = True
        await self._send(message)


def _client_status(exc: BaseException) -> int | None:
    """The 4xx status of an ``HTTPException`` in ``exc``'s chain: a failure the client caused."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, HTTPException) and 400 <= current.status_code < 500:
            return current.status_code
        current = current.__cause__ or current.__context__
    return None


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:120] + ("..." if len(text) > 120 else "")


def _headers(scope: Scope, name: bytes) -> list[str]:
    # Every copy: a second Content-Type must not slip a multipart body past the first.
    return [
        bytes(value).decode("latin-1")
        for key, value in scope.get("headers", ())
        if bytes(key).lower() == name
    ]


async def plain_reply(send: Send, status: int, text: str) -> None:
    """Answer with ``status`` and ``text`` as one line of plain text (no body when empty)."""
    body = f"{text}\n".encode() if text else b""
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
