"""The trace receiver is a peer: each OTLP/HTTP export is read through aah's bounded reader.

The SDK's exporter reads a receiver's whole answer into memory (one that
answers with a gigabyte fills it) under a timeout per read (one that sends a
byte a second holds an export as long as it likes). Here the exporter's
requests session goes through :class:`ReceiverAdapter`: every exchange has
one deadline over the whole of it (its sockets are shut down when the time is
up, see :class:`aah.peer_read.SocketDeadline`), and the answer is read at
most :data:`RESPONSE_CAP` bytes, counted after decompression, then dropped
with its connection. An export past either bound fails; :class:`BoundedSpanExporter`
keeps the refusal's one line for the warning that says spans are dropped.
"""

from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager

from aah.bounds import OutOfBounds, check_seconds
from aah.peer_read import (
    PeerBound,
    PeerOutOfBounds,
    SocketDeadline,
    read_capped,
    too_large,
    too_slow,
    watch_socket,
)

_log = logging.getLogger(__name__)

# An export's whole exchange with the receiver, retries included, unless
# OTEL_EXPORTER_OTLP_TIMEOUT (or its _TRACES_ form) says otherwise.
EXPORT_TIMEOUT_S = 2.0
# A receiver's answer to an export is a few bytes (an ExportTraceServiceResponse).
RESPONSE_CAP = 64 * 1024
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
# The most seconds an export may be given: past it a stuck receiver holds the process's exit.
MAX_EXPORT_TIMEOUT_S = 600.0


class _WatchedConnection(HTTPConnection):
    """A connection whose socket the exchange's deadline shuts down when time is up."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        watch_socket(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        watch_socket(self.sock)  # a pooled connection, reused: watched anew by this exchange
        super().request(*args, **kwargs)


class _WatchedSecureConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        watch_socket(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        watch_socket(self.sock)
        super().request(*args, **kwargs)


class _Pool(HTTPConnectionPool):
    ConnectionCls = _WatchedConnection


class _SecurePool(HTTPSConnectionPool):
    ConnectionCls = _WatchedSecureConnection


_POOLS: dict[str, type[HTTPConnectionPool]] = {"http": _Pool, "https": _SecurePool}


class ReceiverAdapter(HTTPAdapter):
    """A requests adapter whose every exchange keeps ``bound``: one deadline, a capped answer.

    The deadline of one exchange is the timeout the exporter passes (what is
    left of its export's time), at most ``bound.seconds``. An answer read
    whole is handed on as the response's content; past the cap or the
    deadline the exchange raises :class:`PeerOutOfBounds`, kept in
    :attr:`refusal` (the exporter swallows what a request raises).

    Args:
        bound: The receiver's bound: its name, the answer's cap, the export's seconds.
    """

    def __init__(self, bound: PeerBound) -> None:
        self.bound = bound
        self.refusal: PeerOutOfBounds | None = None
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """Build the pool manager, then make its pools use the watched connections."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        """An HTTP(S) proxy's pool manager, with the watched connections too."""
        manager: PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            # A SOCKS manager's pools make SOCKS connections: they keep their own.
            manager.pool_classes_by_scheme = _POOLS
        return manager

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """Send ``request`` and read its answer within the bound (``stream`` is ignored)."""
        response: requests.Response | None = None
        with SocketDeadline(_seconds(timeout, self.bound.seconds)) as deadline:
            try:
                response = super().send(request, True, timeout, verify, cert, proxies)
                read = partial(response.raw.read, decode_content=True)
                body = read_capped(read, self.bound.max_bytes)
            except Exception:
                if response is not None:
                    response.close()
                if deadline.expired:
                    raise self._refuse(too_slow(self.bound)) from None
                raise
        if deadline.expired or not body.whole:
            response.close()  # its connection goes too: the rest of the answer is never read
            refusal = too_slow(self.bound) if deadline.expired else too_large(self.bound)
            raise self._refuse(refusal)
        response._content = body.data
        response._content_consumed = True  # type: ignore[attr-defined]
        return response

    def _refuse(self, refusal: PeerOutOfBounds) -> PeerOutOfBounds:
        self.refusal = refusal
        return refusal


def _seconds(timeout: Any, most: float) -> float:
    """An exchange's whole time: the timeout requests was given (a number), at most ``most``."""
    if isinstance(timeout, int | float) and math.isfinite(timeout):
        return max(0.0, min(float(timeout), most))
    return most


class BoundedSpanExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, its exchanges with the receiver bounded.

    Args:
        seconds: An export's whole time, retries included.
        endpoint: The receiver's URL (default: the standard variables').
    """

    def __init__(self, seconds: float, endpoint: str | None = None) -> None:
        session = _credential_session() or requests.Session()
        super().__init__(endpoint=endpoint, timeout=seconds, session=session)
        self.adapter = ReceiverAdapter(
            PeerBound(receiver_name(self._endpoint), RESPONSE_CAP, seconds)
        )
        session.mount("http://", self.adapter)
        session.mount("https://", self.adapter)

    @property
    def refusal(self) -> PeerOutOfBounds | None:
        """Why the last export failed, when the receiver passed a bound."""
        return self.adapter.refusal

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Send ``spans`` in one export, within its deadline."""
        self.adapter.refusal = None
        return super().export(spans)


def _credential_session() -> requests.Session | None:
    """The session a credential provider gives (the SDK's variable), which the adapter then bounds.

    Passing a session of aah's own would leave the provider out: the SDK asks
    it only when no session is given.
    """
    from opentelemetry.exporter.otlp.proto.http._common import _load_session_from_envvar

    return _load_session_from_envvar("OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER")


def receiver_name(endpoint: str) -> str:
    """The receiver as a refusal names it: scheme, host and port (never a path's token)."""
    parts = urlsplit(endpoint)
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    return f"the trace receiver at {parts.scheme}://{parts.hostname or '?'}{port}"


def export_seconds() -> float:
    """An export's whole time: the standard timeout variable's seconds, else 2 s.

    A value that is not a number of seconds above 0 (at most 600) is said in
    one line, and the default holds.
    """
    for name in TIMEOUT_VARIABLES:
        raw = os.environ.get(name, "").strip()
        if not raw:
            continue
        try:
            return check_seconds(raw, name, maximum=MAX_EXPORT_TIMEOUT_S)
        except OutOfBounds:
            _log.warning(
                "traces: %s is not a number of seconds above 0 and at most %g: "
                "an export gives up after %g s",
                name,
                MAX_EXPORT_TIMEOUT_S,
                EXPORT_TIMEOUT_S,
            )
            return EXPORT_TIMEOUT_S
    return EXPORT_TIMEOUT_S
