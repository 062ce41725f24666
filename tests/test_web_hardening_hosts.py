"""The web app answers only to its own host names and its own pages (no DNS rebinding).

A real app served on 127.0.0.1, asked with crafted ``Host``, ``Origin`` and
``X-Forwarded-Host`` headers over a raw HTTP client, on every kind of route
Gradio serves (the page, its config and API, the queue, the sign-in call,
an upload route) and the page's beacon.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from web_support import free_port  # noqa: E402

from aah.errors import AahError  # noqa: E402
from aah.ui.web.app import build_app, launch_app  # noqa: E402
from aah.ui.web.auth import WebAuth  # noqa: E402
from aah.ui.web.guard import ClientErrorLog, WebGuard  # noqa: E402
from aah.ui.web.hosts import (  # noqa: E402
    ALLOWED_HOSTS_ENV,
    AllowedHosts,
    HostPort,
    parse_allowed_hosts,
    split_host,
)

LISTED = "aah.lan"


@contextmanager
def serve_app(db: Path, allowed_hosts: Sequence[str] | None) -> Iterator[str]:
    """The app as ``aah web`` serves it (no token), on 127.0.0.1 at a free port."""
    app = build_app(db, auth=WebAuth())
    url = launch_app(app, port=free_port(), block=False, allowed_hosts=allowed_hosts)
    try:
        yield url
    finally:
        app.close()


class Served:
    """The app's port, and a way to send it one request with the headers given."""

    def __init__(self, url: str) -> None:
        self.port = int(url.rstrip("/").rsplit(":", 1)[1])

    def ask(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes | None = None,
    ) -> tuple[int, str]:
        """The status and body of one request sent with exactly ``headers`` (Host among them)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Type", "application/json")
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            reply = connection.getresponse()
            return reply.status, reply.read().decode("utf-8", "replace")
        finally:
            connection.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The app as ``aah web`` serves it without a token, with one listed name."""
    db = tmp_path_factory.mktemp("hosts") / "s.db"
    with serve_app(db, allowed_hosts=[LISTED]) as url:
        yield Served(url)


# What a route is asked with: method, path, body.
SIGN_IN_BODY = json.dumps({"data": ["mallory", ""]}).encode()
ROUTES = [
    pytest.param("GET", "/", None, id="page"),
    pytest.param("GET", "/config", None, id="config"),
    pytest.param("GET", "/gradio_api/info", None, id="api-info"),
    pytest.param("POST", "/gradio_api/call/sign_in", SIGN_IN_BODY, id="sign-in-call"),
    pytest.param("POST", "/gradio_api/queue/join", b"{}", id="queue-join"),
    pytest.param("GET", "/gradio_api/queue/data?session_hash=x", None, id="queue-data"),
    pytest.param("POST", "/aah/release", b'{"token": "t", "request_id": "r"}', id="beacon"),
    pytest.param("POST", "/gradio_api/upload", b"{}", id="upload"),
    pytest.param("OPTIONS", "/gradio_api/call/sign_in", None, id="preflight"),
]


def _host(port: int, spelled: str) -> str:
    return spelled.replace("PORT", str(port))


# Host headers a browser sends for a page whose name is not the app's (a
# rebinding attacker's), and malformed ones: each is answered 421.
FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:PORT",
    "127.0.0.1.evil.example",
    "127.0.0.1.evil.example:PORT",
    "localhost.evil.example:PORT",
    "evil.example.localhost",
    "localhost.",  # the trailing dot: another spelling, not listed
    "localhost.:PORT",
    "aah.lan.:PORT",
    "LOCALHOST.EVIL.EXAMPLE",
    "",
    " ",
    "127.0.0.1@evil.example",
    "evil.example#127.0.0.1",
    "127.0.0.1:PORT@evil.example",
    "localhost:PORT/evil",
    "localhost:notaport",
    "localhost:99999",
    "::1",  # unbracketed: no Host spells IPv6 so
    "[::1",
    "[localhost]:PORT",
    "[::ffff:127.0.0.1]:PORT",  # an IPv4-mapped address is another name
    "0.0.0.0:PORT",
    "127.0.0.2:PORT",
    "2130706433:PORT",  # 127.0.0.1 as one number
    "0x7f.0.0.1:PORT",
    "127.1:PORT",
    "xn--lcalhost-0za:PORT",
    "localhost\tevil",
]
# Allowed hosts, in the spellings a browser or a client may use.
OWN_HOSTS = [
    "127.0.0.1:PORT",
    "127.0.0.1",
    "localhost:PORT",
    "LOCALHOST:PORT",
    "LocalHost",
    "[::1]:PORT",
    "[0:0:0:0:0:0:0:1]:PORT",
    "localhost:8080",  # any port: the name is what a rebinding page cannot fake
    "aah.lan:PORT",
    "AAH.LAN",
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize("spelled", FOREIGN_HOSTS)
def test_a_foreign_host_is_refused_on_every_route(
    served: Served, method: str, path: str, body: bytes | None, spelled: str
) -> None:
    status, text = served.ask(method, path, [("Host", _host(served.port, spelled))], body)
    assert status == 421, (status, text[:200])
    assert text.count("\n") == 1 and ALLOWED_HOSTS_ENV in text
    assert "mallory" not in text and "event_id" not in text


@pytest.mark.parametrize("spelled", OWN_HOSTS)
def test_the_apps_own_names_are_served(served: Served, spelled: str) -> None:
    status, text = served.ask("GET", "/", [("Host", _host(served.port, spelled))])
    assert status == 200 and "<html" in text.lower()


def test_a_rebound_sign_in_never_starts(served: Served) -> None:
    """The attack as a browser makes it: Host and Origin both the attacker's name."""
    rebound = [
        ("Host", f"evil.example:{served.port}"),
        ("Origin", f"http://evil.example:{served.port}"),
    ]
    status, text = served.ask("POST", "/gradio_api/call/sign_in", rebound, SIGN_IN_BODY)
    assert status == 421 and "event_id" not in text
    # The same call from the page's own address starts (the route works).
    own = [("Host", f"127.0.0.1:{served.port}"), ("Origin", f"http://127.0.0.1:{served.port}")]
    status, text = served.ask("POST", "/gradio_api/call/sign_in", own, SIGN_IN_BODY)
    assert status == 200 and "event_id" in text


def test_two_host_headers_are_refused(served: Served) -> None:
    twice = [("Host", f"127.0.0.1:{served.port}"), ("Host", "evil.example")]
    status, _ = served.ask("GET", "/", twice)
    assert status in (400, 421)  # the server's parser or the guard: never served


def test_a_request_without_host_is_refused(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as raw:
        raw.sendall(b"GET / HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := raw.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 421"), reply[:200]


# Origins of other pages: each is answered 403 (the Host being the app's own).
FOREIGN_ORIGINS = [
    "null",
    "",
    "http://evil.example",
    "http://evil.example:PORT",
    "https://evil.example",
    "http://127.0.0.1:1",  # another port of localhost: another page
    "http://localhost:8080",
    "http://localhost",
    "http://127.0.0.1@evil.example",
    "http://127.0.0.1:PORT@evil.example",
    "http://evil.example@127.0.0.1:PORT",  # userinfo: no origin has any
    "http://127.0.0.1.evil.example:PORT",
    "http://localhost.:PORT",
    "http://localhost:PORT/",
    "http://localhost:PORT/path",
    "ftp://127.0.0.1:PORT",
    "file://",
    "chrome-extension://abcdefgh",
    "127.0.0.1:PORT",
    "http//127.0.0.1:PORT",
    "http://[::1]:PORT",  # a page at ::1 sending to the page at 127.0.0.1: another origin
    "http://aah.lan:PORT",  # an allowed name, but not the one the request was sent to
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_a_foreign_origin_is_refused_on_every_route(
    served: Served, method: str, path: str, body: bytes | None, origin: str
) -> None:
    headers = [("Host", f"127.0.0.1:{served.port}"), ("Origin", _host(served.port, origin))]
    status, text = served.ask(method, path, headers, body)
    assert status == 403, (status, text[:200])
    assert text.count("\n") == 1 and text.startswith("refused: a page from another origin")


# (Host, Origin) pairs of the app's own page: served.
OWN_ORIGINS = [
    ("127.0.0.1:PORT", "http://127.0.0.1:PORT"),
    ("localhost:PORT", "http://localhost:PORT"),
    ("localhost:PORT", "HTTP://LOCALHOST:PORT"),
    ("[::1]:PORT", "http://[::1]:PORT"),
    ("aah.lan", "https://aah.lan"),  # behind a proxy that passes Host through
    ("aah.lan:443", "https://aah.lan"),
    ("aah.lan:8443", "https://aah.lan:8443"),
    ("localhost", "http://localhost:80"),
]


@pytest.mark.parametrize(("host", "origin"), OWN_ORIGINS)
def test_the_apps_own_origin_is_served(served: Served, host: str, origin: str) -> None:
    headers = [("Host", _host(served.port, host)), ("Origin", _host(served.port, origin))]
    status, _ = served.ask("POST", "/gradio_api/call/sign_in", headers, SIGN_IN_BODY)
    assert status == 200


def test_two_origin_headers_are_refused(served: Served) -> None:
    own = f"http://127.0.0.1:{served.port}"
    headers = [("Host", f"127.0.0.1:{served.port}"), ("Origin", own), ("Origin", own)]
    status, _ = served.ask("POST", "/gradio_api/call/sign_in", headers, SIGN_IN_BODY)
    assert status == 403


@pytest.mark.parametrize(
    "forwarded", ["evil.example", "127.0.0.1, evil.example", "localhost.evil.example:443", ""]
)
def test_a_foreign_forwarded_host_is_refused(served: Served, forwarded: str) -> None:
    # Gradio builds the page's links from X-Forwarded-Host: it must name the app too.
    headers = [("Host", f"127.0.0.1:{served.port}"), ("X-Forwarded-Host", forwarded)]
    status, _ = served.ask("GET", "/config", headers)
    assert status == 421


def test_an_own_forwarded_host_is_served(served: Served) -> None:
    headers = [("Host", f"127.0.0.1:{served.port}"), ("X-Forwarded-Host", "aah.lan")]
    assert served.ask("GET", "/config", headers)[0] == 200


def test_the_allowed_hosts_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, " Team.Example , 10.0.0.5 ")
    with serve_app(tmp_path / "s.db", allowed_hosts=None) as url:
        port = Served(url).port
        for name, status in (("team.example", 200), ("10.0.0.5", 200), ("evil.example", 421)):
            assert Served(url).ask("GET", "/", [("Host", f"{name}:{port}")])[0] == status


BAD_LISTS = ["*", "aah.lan:7860", "http://aah.lan", "aah.lan/x", "a b", "*.example.org", "[x]"]


@pytest.mark.parametrize("raw", BAD_LISTS)
def test_a_bad_allowed_hosts_setting_stops_the_app_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    with pytest.raises(ValueError, match=ALLOWED_HOSTS_ENV) as refused:
        parse_allowed_hosts(raw)
    assert "\n" not in str(refused.value)
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, raw)
    app = build_app(tmp_path / "s.db", auth=WebAuth())
    with pytest.raises(AahError, match=ALLOWED_HOSTS_ENV):
        launch_app(app, port=1, block=False)


def test_the_bound_address_is_a_name_unless_it_is_every_address() -> None:
    assert "192.168.1.5" in AllowedHosts("192.168.1.5").names
    assert "myhost.lan" in AllowedHosts("MyHost.lan").names
    assert "fe80::1" in AllowedHosts("fe80::1").names
    for every in ("0.0.0.0", "::", "[::]"):
        names = AllowedHosts(every).names
        assert names == {"127.0.0.1", "localhost", "::1"}, every
    assert split_host("[::1]:7860") == HostPort("::1", 7860)
    assert split_host("LOCALHOST") == HostPort("localhost", None)


def test_a_websocket_from_a_foreign_host_is_closed_before_it_opens() -> None:
    """Gradio serves no websocket today; one it might serve is guarded all the same."""
    reached: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    guard = WebGuard(app, ClientErrorLog(), AllowedHosts())

    for host, origin in ((b"evil.example", b"http://evil.example"), (b"localhost", b"null")):
        scope = {
            "type": "websocket",
            "path": "/ws",
            "headers": [(b"host", host), (b"origin", origin)],
        }
        asyncio.run(guard(scope, receive, send))
    assert reached == [] and [m["type"] for m in sent] == ["websocket.close"] * 2
    own = [(b"host", b"localhost:7860"), (b"origin", b"http://localhost:7860")]
    asyncio.run(guard({"type": "websocket", "path": "/ws", "headers": own}, receive, send))
    asyncio.run(guard({"type": "lifespan"}, receive, send))
    assert reached == ["websocket", "lifespan"]
