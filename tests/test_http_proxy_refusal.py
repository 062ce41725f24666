"""Tool calls and proxies: with the address guard on, no call goes through a proxy.

A proxy resolves a tool host itself, so the guard's check would have judged
the proxy's address, not the target's: ``metadata.google.internal`` (which
does not resolve here) reached the proxy, and through it the metadata server.
Now, with internal addresses refused (the default), a host that does not
resolve here is refused, every other host is resolved here, checked, and
connected to directly at a checked address, whatever ``HTTP_PROXY``,
``HTTPS_PROXY`` or ``ALL_PROXY`` say; ``AAH_HTTP_ALLOW_PRIVATE=1`` sends calls
through the proxy again, which then decides what they reach.

The proxy here is a canary on 127.0.0.1 that records every target it is asked
for (absolute-form requests and CONNECT tunnels) and never connects onward.
Name resolution goes through a fake DNS table handed to aah, and a fence
refuses any connection or DNS lookup that would leave this machine, so a
regression fails a test instead of sending traffic out. 127.0.0.2 stands for
a public address (``is_public`` is widened to it): the "public" API the tests
call listens there.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from http_server import make_spec

from aah.tools.http import make_executor, transport
from aah.tools.http.executor import new_session
from aah.tools.http.modes import Executor
from aah.tools.http.results import ToolResult

PUBLIC_STAND_IN = "127.0.0.2"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
ALL_PROXY_SPELLINGS = [*PROXY_VARIABLES, *(name.lower() for name in PROXY_VARIABLES)]
# The fence wraps socket.getaddrinfo; the fake DNS reads IP literals with the real one.
_system_getaddrinfo = socket.getaddrinfo


# The fence: nothing leaves 127.0.0.0/8 and ::1, not even a DNS query.


class Fence:
    """Records every connection or lookup that would leave the machine (and refuses it)."""

    def __init__(self) -> None:
        self.escapes: list[str] = []

    def connect(self, real: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def fenced(sock: socket.socket, address: Any) -> Any:
            if isinstance(address, tuple) and not _is_loopback(str(address[0])):
                self.escapes.append(f"connect {address[0]}")
                raise OSError(101, "the test fence refuses addresses off this machine")
            return real(sock, address)

        return fenced

    def getaddrinfo(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def fenced(
            host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
        ) -> Any:
            try:
                return real(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)
            except socket.gaierror:
                self.escapes.append(f"dns {host}")
                raise socket.gaierror(socket.EAI_NONAME, "the test fence refuses DNS") from None

        return fenced


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def fence(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fence]:
    """Every test runs fenced in; a test whose code tried to leave fails."""
    guard = Fence()
    monkeypatch.setattr(socket.socket, "connect", guard.connect(socket.socket.connect))
    monkeypatch.setattr(socket, "getaddrinfo", guard.getaddrinfo(socket.getaddrinfo))
    yield guard
    assert guard.escapes == []


@pytest.fixture(autouse=True)
def public_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """127.0.0.2 counts as public, so a "public" API can listen on this machine."""
    real = transport.is_public
    stand_in = ipaddress.ip_address(PUBLIC_STAND_IN)
    monkeypatch.setattr(
        transport, "is_public", lambda address: address == stand_in or real(address)
    )


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [*ALL_PROXY_SPELLINGS, "NO_PROXY", "no_proxy", "AAH_HTTP_ALLOW_PRIVATE"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(transport, "proxy_note", transport.ProxyNote())


# Fake DNS, handed to aah as its resolver.


class FakeDns:
    """A DNS table: each name answers its lists of addresses in turn (the last one repeats).

    IP literals in any spelling resolve as the system reads them, without a
    query; a name not in the table does not resolve.
    """

    def __init__(self, table: Mapping[str, Sequence[Sequence[str]]] | None = None) -> None:
        self.table = {name: list(answers) for name, answers in (table or {}).items()}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        answers = self.table.get(host.rstrip("."))
        if answers is not None:
            return list(answers.pop(0) if len(answers) > 1 else answers[0])
        found = _system_getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
        return [str(sockaddr[0]) for *_, sockaddr in found]


# Servers: the canary proxy and the "public" API.


class _Handler(BaseHTTPRequestHandler):
    server: _RecordingServer
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        self.server.record(self.command, self.path, self.headers.get("Host", ""))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps({"served_by": self.server.name, "host": self.headers.get("Host")})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    do_GET = do_POST = _answer

    def do_CONNECT(self) -> None:
        # A canary never opens the tunnel: being asked is what it reports.
        self.server.record(self.command, self.path, self.headers.get("Host", ""))
        self.send_response(502, "no tunnels here")
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, name: str, address: str, port: int = 0, tls: ssl.SSLContext | None = None):
        super().__init__((address, port), _Handler)
        self.name = name
        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.port = self.server_address[1]
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.01})
        self._thread.daemon = True
        self._thread.start()

    def record(self, method: str, target: str, host: str) -> None:
        with self._lock:
            self.requests.append((method, target, host))

    @property
    def targets(self) -> list[str]:
        with self._lock:
            return [target for _, target, _ in self.requests]

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client that gave up (a refused certificate) closes early

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture
def canary() -> Iterator[_RecordingServer]:
    server = _RecordingServer("canary proxy", "127.0.0.1")
    yield server
    server.stop()


@pytest.fixture
def public_api() -> Iterator[_RecordingServer]:
    server = _RecordingServer("public api", PUBLIC_STAND_IN)
    yield server
    server.stop()


def _proxy_through(
    monkeypatch: pytest.MonkeyPatch, canary: _RecordingServer, names: Sequence[str]
) -> None:
    for name in names:
        monkeypatch.setenv(name, f"http://127.0.0.1:{canary.port}")


def _call(mode: str, url: str, dns: FakeDns, tmp_path: Path, *, method: str = "GET") -> ToolResult:
    executor: Executor = make_executor(
        mode, cache_path=tmp_path / "http_cache.sqlite", timeout=3.0, retries=0, resolve=dns
    )
    try:
        return executor.call(make_spec(url, method=method), {})
    finally:
        executor.close()


def _assert_refused_in_one_line(result: ToolResult) -> str:
    assert not result.ok and result.status is None
    assert result.error is not None
    assert result.error.startswith("refused to call "), result.error
    assert "set AAH_HTTP_ALLOW_PRIVATE=1" in result.error and "\n" not in result.error
    return result.error


# The refused targets: with the guard on, none reaches the proxy.

# (URL, what the fake DNS answers for its name, what the refusal says)
UNRESOLVED = "does not resolve here"
NOT_PUBLIC = "not a public address"
REFUSED_TARGETS: list[tuple[str, dict[str, list[list[str]]], str]] = [
    ("http://metadata.google.internal/computeMetadata/v1/", {}, UNRESOLVED),
    ("https://metadata.google.internal/computeMetadata/v1/", {}, UNRESOLVED),
    ("http://metadata.google.internal./computeMetadata/v1/", {}, UNRESOLVED),
    ("http://METADATA.Google.Internal/computeMetadata/v1/", {}, UNRESOLVED),
    ("http://intranet.corp.invalid/wiki", {}, UNRESOLVED),
    ("https://intranet.corp.invalid:8443/wiki", {}, UNRESOLVED),
    (
        "http://metadata.google.internal/",
        {"metadata.google.internal": [["169.254.169.254"]]},
        NOT_PUBLIC,
    ),
    ("http://intranet.corp.example/", {"intranet.corp.example": [["10.1.2.3"]]}, NOT_PUBLIC),
    ("http://split.example/", {"split.example": [[PUBLIC_STAND_IN, "10.0.0.5"]]}, NOT_PUBLIC),
    ("http://v6.example/", {"v6.example": [["fd00::1"]]}, NOT_PUBLIC),
    ("http://localhost/admin", {}, NOT_PUBLIC),
    ("http://LocalHost./admin", {}, NOT_PUBLIC),
    ("http://api.localhost/admin", {}, NOT_PUBLIC),
    ("https://api.localhost/admin", {}, NOT_PUBLIC),
    ("http://10.0.0.1/", {}, NOT_PUBLIC),
    ("https://10.0.0.1/", {}, NOT_PUBLIC),
    ("http://169.254.169.254/latest/meta-data/", {}, NOT_PUBLIC),
    ("http://[::1]/", {}, NOT_PUBLIC),
    ("http://[::ffff:169.254.169.254]/", {}, NOT_PUBLIC),
    ("http://0x7f.1/", {}, NOT_PUBLIC),
    ("http://2130706433/", {}, NOT_PUBLIC),
    ("http://100.64.0.1/", {}, NOT_PUBLIC),
]


@pytest.mark.parametrize("mode", ["live", "record"])
@pytest.mark.parametrize(("url", "table", "says"), REFUSED_TARGETS)
def test_a_refused_target_never_reaches_the_proxy(
    mode: str,
    url: str,
    table: dict[str, list[list[str]]],
    says: str,
    canary: _RecordingServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _proxy_through(monkeypatch, canary, PROXY_VARIABLES)
    result = _call(mode, url, FakeDns(table), tmp_path)
    error = _assert_refused_in_one_line(result)
    assert says in error
    assert canary.targets == []


@pytest.mark.parametrize("variable", ALL_PROXY_SPELLINGS)
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_every_proxy_variable_spelling_is_left_out(
    variable: str,
    scheme: str,
    canary: _RecordingServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _proxy_through(monkeypatch, canary, [variable])
    result = _call("live", f"{scheme}://metadata.google.internal/", FakeDns(), tmp_path)
    assert UNRESOLVED in _assert_refused_in_one_line(result)
    assert canary.targets == []


def test_a_name_that_does_not_resolve_is_refused_without_a_proxy_too(tmp_path: Path) -> None:
    result = _call("live", "http://intranet.corp.invalid/wiki", FakeDns(), tmp_path)
    assert result.error == (
        "refused to call intranet.corp.invalid: cannot check that it is a public address, "
        "as it does not resolve here (set AAH_HTTP_ALLOW_PRIVATE=1 to call it, through a "
        "proxy if one is set)"
    )


# Public names: called directly, at the address aah checked, never through the proxy.


@pytest.mark.parametrize("mode", ["live", "record"])
def test_a_public_name_is_called_directly_at_the_checked_address(
    mode: str,
    canary: _RecordingServer,
    public_api: _RecordingServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _proxy_through(monkeypatch, canary, PROXY_VARIABLES)
    dns = FakeDns({"api.public.example": [[PUBLIC_STAND_IN]]})
    url = f"http://api.public.example:{public_api.port}/weather"
    with caplog.at_level(logging.WARNING, logger=transport.__name__):
        first = _call(mode, url, dns, tmp_path)
        second = _call(mode, url, dns, tmp_path)
    for result in (first, second):
        assert result.ok, result.error
        assert result.data == {
            "served_by": "public api",
            "host": f"api.public.example:{public_api.port}",
        }
    assert canary.targets == []
    assert [target for _, target, _ in public_api.requests] == ["/weather", "/weather"]
    notes = [record.getMessage() for record in caplog.records]
    assert len(notes) == 1, notes
    assert "do not go through the proxy" in notes[0] and "AAH_HTTP_ALLOW_PRIVATE=1" in notes[0]


def test_no_note_without_a_proxy(
    public_api: _RecordingServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dns = FakeDns({"api.public.example": [[PUBLIC_STAND_IN]]})
    with caplog.at_level(logging.WARNING, logger=transport.__name__):
        result = _call("live", f"http://api.public.example:{public_api.port}/x", dns, tmp_path)
    assert result.ok, result.error
    assert caplog.records == []


def test_a_proxy_set_on_the_session_is_left_out_too(
    canary: _RecordingServer, public_api: _RecordingServer
) -> None:
    dns = FakeDns({"api.public.example": [[PUBLIC_STAND_IN]]})
    with new_session(public_only=True, resolve=dns) as session:
        session.proxies = {"all": f"http://127.0.0.1:{canary.port}"}
        response = session.get(f"http://api.public.example:{public_api.port}/x", timeout=3)
    assert response.json()["served_by"] == "public api"
    assert canary.targets == []


@pytest.mark.parametrize("mode", ["live", "record"])
def test_a_rebinding_name_cannot_move_the_connection(
    mode: str,
    canary: _RecordingServer,
    public_api: _RecordingServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # Public for the first look, loopback for every later one, where a server waits.
    secret = _RecordingServer("secret", "127.0.0.1", public_api.port)
    try:
        _proxy_through(monkeypatch, canary, PROXY_VARIABLES)
        dns = FakeDns({"rebind.example": [[PUBLIC_STAND_IN], ["127.0.0.1"]]})
        result = _call(mode, f"http://rebind.example:{public_api.port}/secrets", dns, tmp_path)
    finally:
        secret.stop()
    error = _assert_refused_in_one_line(result)
    assert error.startswith("refused to call rebind.example (127.0.0.1): not a public address")
    assert secret.requests == [] and canary.targets == [] and public_api.requests == []


# HTTPS: pinned to the checked address, the certificate still checked against the name.


def _tls_files(where: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA and a certificate it signed for ``name``: (CA file, certificate, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aah test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = where / "ca.pem", where / "cert.pem", where / "key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, cert_file, key_file


@pytest.mark.parametrize(
    ("called", "certified", "ok"),
    [
        ("api.public.example", "api.public.example", True),
        ("api.public.example", "other.example", False),
    ],
)
def test_https_goes_direct_and_checks_the_certificate_against_the_name(
    called: str,
    certified: str,
    ok: bool,
    canary: _RecordingServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    ca_file, cert_file, key_file = _tls_files(tmp_path, certified)
    served_names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda sock, name, ctx: served_names.append(name)
    server = _RecordingServer("public tls api", PUBLIC_STAND_IN, tls=context)
    try:
        _proxy_through(monkeypatch, canary, PROXY_VARIABLES)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca_file))
        dns = FakeDns({called: [[PUBLIC_STAND_IN]]})
        result = _call("live", f"https://{called}:{server.port}/weather", dns, tmp_path)
    finally:
        server.stop()
    assert canary.targets == []
    assert served_names == [called]  # SNI names the host, not the pinned address
    if ok:
        assert result.ok, result.error
        assert result.data == {"served_by": "public tls api", "host": f"{called}:{server.port}"}
    else:
        assert not result.ok and server.requests == []


# With AAH_HTTP_ALLOW_PRIVATE=1 the operator trusts the proxy: calls go through it.


@pytest.mark.parametrize("mode", ["live", "record"])
def test_allowing_private_addresses_sends_calls_through_the_proxy(
    mode: str, canary: _RecordingServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AAH_HTTP_ALLOW_PRIVATE", "1")
    _proxy_through(monkeypatch, canary, PROXY_VARIABLES)
    dns = FakeDns()
    result = _call(mode, "http://intranet.corp.invalid/wiki", dns, tmp_path)
    assert result.ok, result.error
    assert result.data == {"served_by": "canary proxy", "host": "intranet.corp.invalid"}
    tunnelled = _call(mode, "https://intranet.corp.invalid/wiki", dns, tmp_path)
    assert not tunnelled.ok
    assert canary.targets == ["http://intranet.corp.invalid/wiki", "intranet.corp.invalid:443"]
    assert dns.asked == []  # the proxy resolves: aah checks nothing


def test_allowing_private_addresses_keeps_no_proxy(
    canary: _RecordingServer,
    public_api: _RecordingServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("AAH_HTTP_ALLOW_PRIVATE", "1")
    _proxy_through(monkeypatch, canary, PROXY_VARIABLES)
    monkeypatch.setenv("NO_PROXY", PUBLIC_STAND_IN)
    result = _call("live", f"http://{PUBLIC_STAND_IN}:{public_api.port}/x", FakeDns(), tmp_path)
    assert result.ok and result.data is not None
    assert result.data["served_by"] == "public api"
    assert canary.targets == []
