"""Who the client is: the connecting address, unless it is a proxy the admin trusts.

The server (uvicorn, started by Gradio) believes ``X-Forwarded-For`` from the
addresses in ``FORWARDED_ALLOW_IPS``, which defaults to 127.0.0.1: any
local process, or anything a local proxy passes on, could then name itself
any address and dodge the sign-in limit. The app trusts the addresses in
``AAH_WEB_TRUSTED_PROXIES`` instead (comma-separated addresses or networks;
default: none). From a trusted proxy the client is the last address in
``X-Forwarded-For`` that is not itself a trusted proxy; ``Forwarded`` and
``X-Real-IP`` are never read.

The sign-in limiter counts failures per ``client_key``: an IPv6 client owns
its whole /64, so it is counted as that network, not one address of it.
"""

from __future__ import annotations

import ipaddress
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

TRUSTED_PROXIES_ENV = "AAH_WEB_TRUSTED_PROXIES"
# uvicorn reads this when its server is configured (inside Gradio's launch).
_UVICORN_ENV = "FORWARDED_ALLOW_IPS"
# uvicorn trusts an address equal to one of its entries: "" is no address at all.
_NOBODY = ""
_IPV6_CLIENT_PREFIX = 64
_env_lock = threading.Lock()


def parse_proxies(raw: str | None) -> tuple[str, ...]:
    """The trusted proxies ``raw`` lists (``AAH_WEB_TRUSTED_PROXIES``), as networks.

    Raises:
        ValueError: An entry is neither an IP address nor a network.
    """
    proxies = []
    for entry in (raw or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        try:
            proxies.append(str(ipaddress.ip_network(entry, strict=False)))
        except ValueError:
            raise ValueError(
                f"set {TRUSTED_PROXIES_ENV} to comma-separated IP addresses or networks of "
                f"your reverse proxies (e.g. 127.0.0.1,10.0.0.0/8), not {entry!r}"
            ) from None
    return tuple(proxies)


@contextmanager
def uvicorn_trusting(proxies: Sequence[str]) -> Iterator[None]:
    """While inside, a uvicorn server configured here trusts exactly ``proxies`` (none: nobody).

    Gradio configures uvicorn without a word on proxies, so uvicorn reads
    ``FORWARDED_ALLOW_IPS``; it is set for the launch and put back after.
    """
    with _env_lock:
        before = os.environ.get(_UVICORN_ENV)
        os.environ[_UVICORN_ENV] = ",".join(proxies) or _NOBODY
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(_UVICORN_ENV, None)
            else:
                os.environ[_UVICORN_ENV] = before


def client_key(host: str) -> str:
    """What the sign-in limiter counts ``host`` as: its IPv4 address, or its IPv6 /64."""
    try:
        address = ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{_IPV6_CLIENT_PREFIX}", strict=False))
    return str(address)
