"""Which host names the web app answers to, and which pages may send it requests.

A browser sends any request to whatever address a name resolves to, and
names a web page's own host in ``Host``: a page at ``evil.example`` whose
name an attacker re-points at 127.0.0.1 (DNS rebinding) would reach a
local ``aah web`` as a page of its own, sign in and launch runs. So every
request (``WebGuard`` asks ``AllowedHosts`` before anything else answers):

- must name in ``Host`` one of the names this app answers to: 127.0.0.1,
  localhost and ::1 (any port: the name is what a rebinding page cannot
  fake), the address it is bound to (unless that is 0.0.0.0 or ::), and the
  names in ``AAH_WEB_ALLOWED_HOSTS`` (comma-separated names or addresses,
  matched exactly, letter case aside: ``localhost.`` with its trailing dot
  is another name). Anything else is answered 421 with one line saying
  how to allow the name. ``X-Forwarded-Host``, which Gradio builds its
  links from, must name allowed hosts too;
- when it carries an ``Origin`` (a browser's cross-site or state-changing
  request does), must come from this page: an ``http``/``https`` origin
  with the same name and port as the ``Host`` it was sent to. ``null``,
  another port of localhost, a userinfo trick (``http://127.0.0.1@evil``)
  are answered 403.

Behind a reverse proxy, have the proxy pass the browser's ``Host`` through
(nginx: ``proxy_set_header Host $http_host;``, Caddy and Traefik do by
default) and list the public name in ``AAH_WEB_ALLOWED_HOSTS``.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable
from typing import NamedTuple

ALLOWED_HOSTS_ENV = "AAH_WEB_ALLOWED_HOSTS"
LOCAL_NAMES = ("127.0.0.1", "localhost", "::1")
# A host name as DNS spells it (letters, digits, hyphens, dots; ``_`` as some
# LANs use it), lower case.
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]{0,251}[a-z0-9_.])?")
_PORT = re.compile(r"[0-9]{1,5}")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What of a refused name or origin the one-line answer repeats.
_SHOWN = re.compile(r"[A-Za-z0-9_.:\[\]/-]{1,100}")


class HostPort(NamedTuple):
    """A ``Host`` header's name (lower case, an IP address in its short form) and port."""

    name: str
    port: int | None


def split_host(value: str) -> HostPort | None:
    """The name and port ``value`` (``name``, ``name:port``, ``[v6]:port``) spells, or None."""
    text = value.strip().lower()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
        try:
            address = ipaddress.IPv6Address(name)
        except ValueError:
            return None
        return _with_port(str(address), port)
    if text.count(":") > 1:
        return None  # a bare IPv6 address: a Host header brackets it
    name, colon, port_text = text.partition(":")
    try:
        name = str(ipaddress.IPv4Address(name))
    except ValueError:
        if not _NAME.fullmatch(name):
            return None
    return _with_port(name, port_text if colon else None)


def _with_port(name: str, port: str | None) -> HostPort | None:
    if port is None:
        return HostPort(name, None)
    if not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        return None
    return HostPort(name, int(port))


def parse_allowed_hosts(raw: str | None) -> tuple[str, ...]:
    """The names ``raw`` (``AAH_WEB_ALLOWED_HOSTS``) lists, as ``Host`` headers are compared.

    Raises:
        ValueError: An entry is no host name or address (a port, a URL, a wildcard).
    """
    names = []
    for entry in (part.strip() for part in (raw or "").split(",")):
        if not entry:
            continue
        # An IPv6 address may be written bare or in brackets; a Host header brackets it.
        bare_ipv6 = entry.count(":") > 1 and not entry.startswith("[")
        parsed = split_host(f"[{entry}]" if bare_ipv6 else entry)
        if parsed is None or parsed.port is not None:
            raise ValueError(
                f"set {ALLOWED_HOSTS_ENV} to comma-separated host names or addresses the page "
                f"is opened as, without ports (e.g. aah.lan,10.0.0.5), not {entry[:60]!r}"
            )
        names.append(parsed.name)
    return tuple(names)


def allowed_hosts_from_env() -> tuple[str, ...]:
    """The names ``AAH_WEB_ALLOWED_HOSTS`` lists (unset: none).

    Raises:
        ValueError: See ``parse_allowed_hosts``.
    """
    return parse_allowed_hosts(os.environ.get(ALLOWED_HOSTS_ENV))


class Refusal(NamedTuple):
    """How ``WebGuard`` answers a request for a foreign host or from a foreign page."""

    status: int
    reason: str
    kind: str
    detail: str


class AllowedHosts:
    """The host names one served app answers to, and the check of a request's headers.

    Args:
        bound: The address the app is bound to (0.0.0.0 and :: name no host).
        listed: More names the operator allows (``AAH_WEB_ALLOWED_HOSTS``).
    """

    def __init__(self, bound: str = "127.0.0.1", listed: Iterable[str] = ()) -> None:
        names = set(LOCAL_NAMES) | set(listed)
        own = split_host(bound) or split_host(f"[{bound}]")
        if own is not None and not _unspecified(own.name):
            names.add(own.name)
        self.names = frozenset(names)

    def refusal(
        self, hosts: list[str], origins: list[str], forwarded_hosts: list[str]
    ) -> Refusal | None:
        """Why a request with these headers is refused, or None when it may pass.

        Args:
            hosts: Every ``Host`` header of the request.
            origins: Every ``Origin`` header.
            forwarded_hosts: Every ``X-Forwarded-Host`` header.
        """
        host = split_host(hosts[0]) if len(hosts) == 1 else None
        if host is None or host.name not in self.names:
            shown = _shown(hosts[0]) if len(hosts) == 1 else ""
            return self._foreign_host(shown)
        for value in (part for header in forwarded_hosts for part in header.split(",")):
            forwarded = split_host(value)
            if forwarded is None or forwarded.name not in self.names:
                return self._foreign_host(_shown(value))
        if not origins:
            return None
        if len(origins) == 1 and self._same_origin(origins[0], host):
            return None
        shown = _shown(origins[0]) if len(origins) == 1 else "several Origin headers"
        return Refusal(
            403,
            f"refused: a page from another origin ({shown or 'unnamed'}) may not use this "
            "aah web; open the page at the address you use for it",
            "refused a request from a page of another origin",
            shown,
        )

    def _same_origin(self, origin: str, host: HostPort) -> bool:
        """Whether ``origin`` is this page's own: http(s), same name and port as ``host``."""
        scheme, separator, rest = origin.strip().lower().partition("://")
        if scheme not in _DEFAULT_PORTS or not separator or any(c in rest for c in "/@?#\\"):
            return False
        sender = split_host(rest)
        if sender is None or sender.name not in self.names or sender.name != host.name:
            return False
        default = _DEFAULT_PORTS[scheme]
        return (sender.port or default) == (host.port or default)

    def _foreign_host(self, shown: str) -> Refusal:
        name = shown or "the name you opened"
        return Refusal(
            421,
            f"this aah web does not answer to {name}: open it as 127.0.0.1 or localhost, or add "
            f"the name to {ALLOWED_HOSTS_ENV} (comma-separated) and restart aah web",
            "refused a request for a host name this app does not answer to",
            shown,
        )


def _unspecified(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return False


def _shown(value: str) -> str:
    """``value`` as a refusal repeats it: only when it is short and plain."""
    text = value.strip()
    return text if _SHOWN.fullmatch(text) else ""
