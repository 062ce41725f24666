"""The sockets under tool calls: one deadline for a whole call, and public addresses only.

A per-read timeout does not bound a call: a server that sends one byte every
second never trips a ten-second read timeout. :class:`CallDeadline` shuts the
call's sockets down when its time is up, wherever the call is (status line,
headers, body), so a blocked read returns at once.

An endpoint spec names a host; nothing stops it from naming an address inside
the user's network (``169.254.169.254``, ``localhost``, a router). Where the
guard is on, :func:`refused_address` checks every address a host resolves
to before a request is sent, and :class:`GuardedAdapter` checks the address
each new socket actually connected to, so a name that resolves again to
another address between the two (DNS rebinding) is refused too.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, ClassVar

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager

__all__ = [
    "ALLOW_PRIVATE_SETTING",
    "CallDeadline",
    "GuardedAdapter",
    "PrivateAddressError",
    "is_public",
    "refused_address",
]

ALLOW_PRIVATE_SETTING = "AAH_HTTP_ALLOW_PRIVATE=1"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Well-known NAT64 prefix: the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_current = threading.local()


class PrivateAddressError(OSError):
    """A connection to an address that is not public, refused by the guard."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(private_address_message(host, address))
        self.host = host
        self.address = address


def private_address_message(host: str, address: str) -> str:
    """The one line a refused call reports: the host, its address and the setting."""
    named = host if host == address else f"{host} ({address})"
    return (
        f"refused to call {named}: not a public address "
        f"(set {ALLOW_PRIVATE_SETTING} to allow local and private addresses)"
    )


def is_public(address: IPAddress) -> bool:
    """Whether ``address`` is on the public internet.

    Loopback, private, link-local, shared (CGNAT), multicast, unspecified,
    reserved and documentation ranges are not; neither is an IPv6 address
    that embeds a non-public IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64).
    """
    if isinstance(address, ipaddress.IPv6Address):
        # An IPv4 address in IPv6 form reaches that IPv4 address: judge it alone.
        if address.ipv4_mapped is not None:
            return is_public(address.ipv4_mapped)
        if address in _NAT64:
            return is_public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        tunnelled = [address.sixtofour, *(address.teredo or ())]
        if any(inner is not None and not is_public(inner) for inner in tunnelled):
            return False
        if address.is_site_local:
            return False
    return address.is_global and not (
        address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
    )


def _address(text: str) -> IPAddress:
    # A scoped IPv6 address (fe80::1%eth0) carries its zone after a percent sign.
    return ipaddress.ip_address(text.split("%", 1)[0])


def refused_address(host: str, port: int) -> str | None:
    """The first address of ``host`` that is not public, or ``None`` when all are.

    Every spelling resolves the way the connection will resolve it
    (``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` are all 127.0.0.1), and a
    name in ``/etc/hosts`` counts with what it names there. ``localhost`` and
    names under ``.localhost`` are loopback by definition (RFC 6761), resolved
    or not. A name that does not resolve is left to the connection to report.
    """
    name = host.strip("[]").lower()
    bare = name.rstrip(".")
    if bare == "localhost" or bare.endswith(".localhost"):
        return "127.0.0.1"
    for candidate in dict.fromkeys([name, bare]):
        try:
            found = socket.getaddrinfo(candidate, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            continue
        for *_, sockaddr in found:
            text = str(sockaddr[0])
            if not is_public(_address(text)):
                return text
    return None


class CallDeadline:
    """A time limit for one tool call, from the first connect to the last body byte.

    Entered around a call on the thread that makes it: every socket a
    :class:`GuardedAdapter` connection uses meanwhile is watched, and shut
    down when the time is up, so a blocked read returns at once.

    Args:
        seconds: The time the whole call may take.
        clock: Seconds on a monotonic clock (a parameter for tests).
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._ends = clock() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        """The time is up (the call's sockets were shut down)."""
        return self._expired

    def remaining(self) -> float:
        """Seconds left, never below zero."""
        return max(0.0, self._ends - self._clock())

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the time is up (at once if it already is)."""
        with self._lock:
            if self._expired:
                _shut(sock)
            else:
                self._sockets.append(sock)

    def __enter__(self) -> CallDeadline:
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._timer.cancel()
        _current.deadline = None
        with self._lock:
            # Pooled sockets outlive the call; the next call watches them anew.
            self._sockets.clear()

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            for sock in self._sockets:
                _shut(sock)
            self._sockets.clear()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing left to stop


def _watch(sock: socket.socket | None) -> None:
    deadline: CallDeadline | None = getattr(_current, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.watch(sock)


def _checked(conn: HTTPConnection, sock: socket.socket, public_only: bool) -> socket.socket:
    """Watch a new socket for the call's deadline, and refuse a peer that is not public."""
    _watch(sock)
    # Through a proxy the peer is the proxy; the target was checked by name before.
    if public_only and conn.proxy is None:
        peer = str(sock.getpeername()[0])
        if not is_public(_address(peer)):
            sock.close()
            raise PrivateAddressError(conn.host, peer)
    return sock


class _HTTPConnection(HTTPConnection):
    public_only: ClassVar[bool] = False

    def _new_conn(self) -> socket.socket:
        return _checked(self, super()._new_conn(), self.public_only)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self.sock)  # a pooled connection, reused: its socket is watched anew
        super().request(*args, **kwargs)


class _HTTPSConnection(HTTPSConnection):
    public_only: ClassVar[bool] = False

    def _new_conn(self) -> socket.socket:
        return _checked(self, super()._new_conn(), self.public_only)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self.sock)
        super().request(*args, **kwargs)


class _PublicHTTPConnection(_HTTPConnection):
    public_only = True


class _PublicHTTPSConnection(_HTTPSConnection):
    public_only = True


def _pool_classes(public_only: bool) -> dict[str, type[HTTPConnectionPool]]:
    http_conn = _PublicHTTPConnection if public_only else _HTTPConnection
    https_conn = _PublicHTTPSConnection if public_only else _HTTPSConnection
    http_pool = type("_Pool", (HTTPConnectionPool,), {"ConnectionCls": http_conn})
    https_pool = type("_SecurePool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn})
    return {"http": http_pool, "https": https_pool}


class GuardedAdapter(HTTPAdapter):
    """A pooled adapter whose connections obey the call's deadline and the address guard.

    Args:
        public_only: Refuse a socket whose peer is not a public address.
        **kwargs: Passed to ``HTTPAdapter`` (pool sizes).
    """

    def __init__(self, *, public_only: bool, **kwargs: Any) -> None:
        self._pool_classes = _pool_classes(public_only)
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """Build the pool manager, then make its pools use the watched connections."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pool_classes

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        """The proxy's pool manager, with the watched connections too."""
        manager: PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = self._pool_classes
        return manager
