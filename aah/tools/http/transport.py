"""The sockets under tool calls: one deadline for a whole call, and public addresses only.

A per-read timeout does not bound a call: a server that sends one byte every
second never trips a ten-second read timeout. :class:`CallDeadline` shuts the
call's sockets down when its time is up, wherever the call is (status line,
headers, body), so a blocked read returns at once.

An endpoint spec names a host; nothing stops it from naming an address inside
the user's network (``169.254.169.254``, ``localhost``, a router). Where the
guard is on, :class:`AddressGuard` resolves the host here and checks every
address it resolves to, and a :class:`GuardedAdapter` connection connects
only to the addresses it checked: a name that resolves again to another
address in between (DNS rebinding) cannot move the connection. A name that
does not resolve here cannot be checked, so it is refused. Nor does a guarded
call go through a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``): the
proxy would resolve the name again, itself, and connect wherever that leads.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from requests import PreparedRequest, Response
from requests.adapters import HTTPAdapter
from requests.utils import select_proxy
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.poolmanager import PoolManager
from urllib3.util.connection import create_connection

from aah.peer_read import SocketDeadline as CallDeadline
from aah.peer_read import watch_socket

__all__ = [
    "ALLOW_PRIVATE_SETTING",
    "AddressGuard",
    "CallDeadline",
    "GuardedAdapter",
    "PrivateAddressError",
    "RefusedHostError",
    "Resolver",
    "UnresolvedHostError",
    "is_public",
    "resolve_host",
]

ALLOW_PRIVATE_SETTING = "AAH_HTTP_ALLOW_PRIVATE=1"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Well-known NAT64 prefix: the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_log = logging.getLogger(__name__)
# Resolves a host and port to the addresses a connection may use (IP strings).
Resolver = Callable[[str, int], Sequence[str]]


class RefusedHostError(OSError):
    """A host the address guard refused; its message is the one line to report."""


class PrivateAddressError(RefusedHostError):
    """A connection to an address that is not public, refused by the guard."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(private_address_message(host, address))
        self.host = host
        self.address = address


class UnresolvedHostError(RefusedHostError):
    """A host that does not resolve here, so the guard cannot check where it leads."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"refused to call {host}: cannot check that it is a public address, as it does "
            f"not resolve here (set {ALLOW_PRIVATE_SETTING} to call it, through a proxy "
            "if one is set)"
        )
        self.host = host


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


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to here, the way a connection resolves it.

    Every spelling of an address counts as what it reaches (``2130706433``,
    ``0x7f.1`` and ``0177.0.0.1`` are all 127.0.0.1), and a name in
    ``/etc/hosts`` as what it names there.

    Raises:
        OSError: The host does not resolve (``socket.gaierror``).
    """
    found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(sockaddr[0]) for *_, sockaddr in found))


@dataclass(frozen=True)
class AddressGuard:
    """Public addresses only: a host is resolved here and every address checked.

    Args:
        resolve: How a host is resolved (a parameter for tests; default: the
            system's resolver).
    """

    resolve: Resolver = resolve_host

    def check(self, host: str, port: int) -> list[str]:
        """The addresses of ``host`` to connect to, every one of them public.

        ``localhost`` and names under ``.localhost`` are loopback by
        definition (RFC 6761), resolved or not.

        Raises:
            PrivateAddressError: One of its addresses is not public.
            UnresolvedHostError: It does not resolve here, so it cannot be checked.
        """
        name = host.strip("[]").lower()
        bare = name.rstrip(".")
        if bare == "localhost" or bare.endswith(".localhost"):
            raise PrivateAddressError(name, "127.0.0.1")
        try:
            addresses = list(self.resolve(name, port))
        except (OSError, UnicodeError) as exc:
            raise UnresolvedHostError(name) from exc
        if not addresses:
            raise UnresolvedHostError(name)
        for address in addresses:
            if not is_public(_address(address)):
                raise PrivateAddressError(name, address)
        return addresses


def _connect_checked(conn: HTTPConnection, guard: AddressGuard) -> socket.socket:
    """A socket to one of the addresses ``guard`` checked for ``conn``'s host, never a proxy.

    The connection keeps its host name for the ``Host`` header, TLS SNI and the
    certificate check; only the address it connects to is pinned.
    """
    if conn.proxy is not None:
        # Guarded adapters never pass a proxy on; a pool built elsewhere might.
        raise RefusedHostError(proxy_refused_message(conn.host))
    last_error: OSError | None = None
    for address in guard.check(conn._dns_host, conn.port):
        try:
            sock = create_connection(
                (address, conn.port),
                conn.timeout,
                source_address=conn.source_address,
                socket_options=conn.socket_options,
            )
        except OSError as exc:
            last_error = exc  # the next address may answer, as a plain connection would try
            continue
        sys.audit("http.client.connect", conn, conn.host, conn.port)
        return _checked_peer(conn, sock)
    if isinstance(last_error, TimeoutError):
        message = f"Connection to {conn.host} timed out. (connect timeout={conn.timeout})"
        raise ConnectTimeoutError(conn, message) from last_error
    raise NewConnectionError(conn, f"Failed to establish a new connection: {last_error}")


def proxy_refused_message(host: str) -> str:
    """Why a guarded call to ``host`` does not go through a proxy, in one line."""
    return (
        f"refused to call {host} through a proxy: the proxy resolves the name itself, "
        f"so aah cannot check the address it connects to (set {ALLOW_PRIVATE_SETTING} "
        "to use the proxy)"
    )


def _checked_peer(conn: HTTPConnection, sock: socket.socket) -> socket.socket:
    """Refuse a socket whose peer is not public: the last check, on what was connected."""
    watch_socket(sock)
    peer = str(sock.getpeername()[0])
    if not is_public(_address(peer)):
        sock.close()
        raise PrivateAddressError(conn.host, peer)
    return sock


class _HTTPConnection(HTTPConnection):
    guard: ClassVar[AddressGuard | None] = None

    def _new_conn(self) -> socket.socket:
        if self.guard is None:
            sock = super()._new_conn()
            watch_socket(sock)
            return sock
        return _connect_checked(self, self.guard)

    def request(self, *args: Any, **kwargs: Any) -> None:
        watch_socket(self.sock)  # a pooled connection, reused: its socket is watched anew
        super().request(*args, **kwargs)


class _HTTPSConnection(HTTPSConnection):
    guard: ClassVar[AddressGuard | None] = None

    def _new_conn(self) -> socket.socket:
        if self.guard is None:
            sock = super()._new_conn()
            watch_socket(sock)
            return sock
        return _connect_checked(self, self.guard)

    def request(self, *args: Any, **kwargs: Any) -> None:
        watch_socket(self.sock)
        super().request(*args, **kwargs)


def _pool_classes(guard: AddressGuard | None) -> dict[str, type[HTTPConnectionPool]]:
    http_conn = type("_Connection", (_HTTPConnection,), {"guard": guard})
    https_conn = type("_SecureConnection", (_HTTPSConnection,), {"guard": guard})
    http_pool = type("_Pool", (HTTPConnectionPool,), {"ConnectionCls": http_conn})
    https_pool = type("_SecurePool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn})
    return {"http": http_pool, "https": https_pool}


class GuardedAdapter(HTTPAdapter):
    """A pooled adapter whose connections obey the call's deadline and the address guard.

    With the guard on, a request never goes through a proxy, whatever the
    environment or the session says: the connection goes straight to an
    address the guard checked. The first time a proxy is left out, one line
    says so (once per process).

    Args:
        public_only: Connect only to public addresses, checked here, never
            through a proxy.
        resolve: How the guard resolves a host (default: the system's resolver).
        **kwargs: Passed to ``HTTPAdapter`` (pool sizes).
    """

    def __init__(
        self, *, public_only: bool, resolve: Resolver = resolve_host, **kwargs: Any
    ) -> None:
        self.public_only = public_only
        self._pool_classes = _pool_classes(AddressGuard(resolve) if public_only else None)
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

    def send(  # type: ignore[override]
        self,
        request: PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: dict[str, str] | None = None,
    ) -> Response:
        """Send ``request``; with the guard on, directly, never through a proxy."""
        if self.public_only and proxies:
            if select_proxy(request.url or "", proxies):
                proxy_note.give()
            proxies = None
        return super().send(request, stream, timeout, verify, cert, proxies)


class ProxyNote:
    """Says once per process that tool calls go direct although a proxy is set."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._given = False

    def give(self) -> None:
        """Log the line, unless it was logged before."""
        with self._lock:
            if self._given:
                return
            self._given = True
        _log.warning(
            "aah: tool calls do not go through the proxy set in the environment: aah "
            "connects directly to addresses it checked are public (set %s to use the "
            "proxy; it then decides what tool calls can reach)",
            ALLOW_PRIVATE_SETTING,
        )


proxy_note = ProxyNote()
