"""The web app's server against hostile HTTP: spoofed client addresses, uploads, file reads, log floods.

Every test talks to a real server on 127.0.0.1 (the app as ``aah web``
serves it), with plain HTTP or Gradio's own client.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from gradio_client import Client  # noqa: E402
from web_support import free_port, serve_app  # noqa: E402

from aah.ui.web.auth import SignInLimiter, WebAuth  # noqa: E402
from aah.ui.web.guard import MAX_REQUEST_BYTES, ClientErrorLog, refusal  # noqa: E402
from aah.ui.web.proxies import client_key, parse_proxies  # noqa: E402

TOKEN = "team-token"


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sign_in(api: Client, headers: dict[str, str], token: str = "guess") -> str:
    """What the page says after one sign-in sent with ``headers``."""
    api.headers.update(headers)  # the client sends its headers with every request
    return str(api.predict("alice", token, api_name="/sign_in")[0])


# Ways a client may try to pass for another address on attempt ``i``.
SPOOFS: list[Callable[[int], dict[str, str]]] = [
    lambda i: {"X-Forwarded-For": f"10.0.0.{i}"},
    lambda i: {"X-Forwarded-For": f"10.0.0.{i}, 127.0.0.1"},
    lambda i: {"X-Forwarded-For": f"10.0.{i}.1:4{i}"},
    lambda i: {"X-Forwarded-For": f"2001:db8::{i}"},
    lambda i: {"X-Forwarded-For": f"[2001:db8::{i}]:80"},
    lambda i: {"X-Forwarded-For": f"host-{i}.example"},
    lambda i: {"X-Forwarded-For": f"10.0.0.{i}", "X-Forwarded-Proto": "https"},
    lambda i: {"Forwarded": f"for=10.0.0.{i};proto=https"},
    lambda i: {"Forwarded": f'for="[2001:db8::{i}]"'},
    lambda i: {"X-Real-IP": f"10.0.0.{i}"},
    lambda i: {"X-Client-IP": f"10.0.0.{i}", "True-Client-IP": f"10.0.1.{i}"},
    lambda i: {"CF-Connecting-IP": f"10.0.0.{i}"},
]


@pytest.fixture(scope="module")
def clock() -> _Clock:
    return _Clock()


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory, clock: _Clock) -> Iterator[str]:
    """The app with a token and no trusted proxy (the default)."""
    auth = WebAuth(token=TOKEN, limiter=SignInLimiter(clock=clock))
    with serve_app(tmp_path_factory.mktemp("direct") / "s.db", auth) as url:
        yield url


@pytest.mark.parametrize("spoof", SPOOFS, ids=[str(i) for i in range(len(SPOOFS))])
def test_forwarded_headers_do_not_dodge_the_sign_in_limit(
    direct: str, clock: _Clock, spoof: Callable[[int], dict[str, str]]
) -> None:
    clock.now += 3600  # a fresh window for each way of spoofing
    api = Client(direct, verbose=False)
    shown = [_sign_in(api, spoof(attempt)) for attempt in range(1, 7)]
    assert all(line.startswith("Wrong access token") for line in shown[:5]), shown
    assert shown[5].startswith("Too many failed sign-ins"), shown


def test_a_trusted_proxy_names_the_client(tmp_path: Path) -> None:
    auth = WebAuth(token=TOKEN, limiter=SignInLimiter(clock=_Clock()))
    with serve_app(tmp_path / "s.db", auth, trusted_proxies=["127.0.0.1"]) as url:
        api = Client(url, verbose=False)
        # Eight clients behind the proxy, one wrong token each: nobody is throttled.
        for client in range(1, 9):
            shown = _sign_in(api, {"X-Forwarded-For": f"198.51.100.{client}"})
            assert shown.startswith("Wrong access token"), shown
        # One client guessing is throttled, whatever it puts before the proxy's entry.
        for attempt in range(5):
            forged = {"X-Forwarded-For": f"10.9.9.{attempt}, 203.0.113.7"}
            assert _sign_in(api, forged).startswith("Wrong access token")
        forged = {"X-Forwarded-For": "10.9.9.99, 203.0.113.7"}
        assert _sign_in(api, forged, TOKEN).startswith("Too many failed sign-ins")
        # ...and its neighbour is not.
        neighbour = {"X-Forwarded-For": "203.0.113.8"}
        assert _sign_in(api, neighbour, TOKEN).startswith("Signed in as")


def test_the_trusted_proxies_setting_is_checked() -> None:
    assert parse_proxies(None) == ()
    assert parse_proxies(" 127.0.0.1, 10.0.0.0/8,::1 ") == ("127.0.0.1/32", "10.0.0.0/8", "::1/128")
    for bad in ("*", "proxy.local", "10.0.0.0/99", "127.0.0.1;rm"):
        with pytest.raises(ValueError, match="AAH_WEB_TRUSTED_PROXIES") as refused:
            parse_proxies(bad)
        assert "\n" not in str(refused.value)


def test_an_ipv6_client_is_counted_by_its_network() -> None:
    assert client_key("2001:db8::1") == client_key("2001:db8::ffff:1") == "2001:db8::/64"
    assert client_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert client_key("10.0.0.1") == "10.0.0.1" and client_key("") == ""


# -- uploads and files ---------------------------------------------------------

PAYLOAD = b"x" * 300_000
# Every way into Gradio's upload routes (gradio/routes.py), plain and disguised.
UPLOADS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/gradio_api/upload", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/upload?upload_id=abc", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/upload", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/upload/", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "//gradio_api//upload", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/%75pload", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/GRADIO_API/UPLOAD", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/gradio_api/upload", {"files": {"files": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/upload", {"content": PAYLOAD}),
    (
        "POST",
        "/gradio_api/upload",
        {"content": iter([PAYLOAD[:1000], PAYLOAD[1000:]])},
    ),
    ("POST", "/gradio_api/process_recording", {"files": {"data": ("a.wav", PAYLOAD)}}),
    ("POST", "/gradio_api/component_server", {"files": {"data": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/component_server/", {"files": {"data": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/queue/join", {"files": {"data": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/run/sign_in", {"files": {"data": ("x.bin", PAYLOAD)}}),
    ("POST", "/gradio_api/stream/abc", {"json": {"data": ["x"], "fn_index": 0}}),
    ("GET", "/gradio_api/upload_progress?upload_id=abc", {}),
    ("POST", "/gradio_api/queue/join", {"content": b"[" * (MAX_REQUEST_BYTES + 10)}),
]


@pytest.fixture
def upload_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where Gradio would keep uploads (read when the server starts)."""
    folder = tmp_path / "gradio-uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    return folder


def _stored(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def test_no_upload_route_takes_a_file(tmp_path: Path, upload_dir: Path) -> None:
    with serve_app(tmp_path / "s.db") as url, httpx.Client(base_url=url, timeout=30) as http:
        statuses = {}
        for method, path, kwargs in UPLOADS:
            reply = http.request(method, url.rstrip("/") + path, **kwargs)
            statuses[f"{method} {path}"] = reply.status_code
        time.sleep(0.5)  # Gradio moves uploads into place in a background task
        stored = _stored(upload_dir)
        config = http.get("/config").json()
    assert {k: v for k, v in statuses.items() if v not in (403, 413)} == {}
    assert stored == [] and config["max_file_size"] == 1


def test_no_stored_file_can_be_fetched(tmp_path: Path, upload_dir: Path) -> None:
    # A file as Gradio stores an upload (from an older aah, or another app on the machine).
    secret = upload_dir / "0123abcd" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("the contents of someone's upload")
    fetches = [
        ("GET", f"/gradio_api/file={secret}"),
        ("HEAD", f"/gradio_api/file={secret}"),
        ("GET", f"/gradio_api/file/{secret}"),
        ("GET", f"/gradio_api/file={str(secret).replace('/', '%2F')}"),
        ("GET", f"//gradio_api/FILE={secret}"),
        ("GET", f"/file={secret}"),
        ("GET", f"/gradio_api/file={secret.parent}/../0123abcd/secret.txt"),
        ("GET", "/gradio_api/proxy=http://127.0.0.1:1/x"),
    ]
    with serve_app(tmp_path / "s.db") as url, httpx.Client(timeout=30) as http:
        served = []
        for method, path in fetches:
            reply = http.request(method, url.rstrip("/") + path)
            if reply.status_code == 200 or b"someone's upload" in reply.content:
                served.append((method, path))
        assert served == []
        # The page itself still loads.
        assert http.get(url).status_code == 200


def test_refusal_covers_the_routes_and_lets_the_page_by() -> None:
    for path in ["/", "/config", "/gradio_api/queue/join", "/gradio_api/info", "/theme.css"]:
        assert refusal("GET", path, "") is None
        assert refusal("POST", path, "application/json") is None
    assert refusal("GET", "/assets/upload-123.js", "") is None
    assert refusal("POST", "/gradio_api/queue/join", "application/json;multipart/form-data")


# -- the server's log ----------------------------------------------------------


def test_client_errors_are_one_line_per_kind_per_interval() -> None:
    clock = _Clock()
    lines: list[str] = []

    class _Sink:
        def warning(self, message: str, *args: object) -> None:
            lines.append(message % args)

    log = ClientErrorLog(interval=60, clock=clock, logger=_Sink())  # type: ignore[arg-type]
    assert log.note("queue/data 404")
    assert not any(log.note("queue/data 404") for _ in range(50))
    assert log.note("heartbeat 404")  # another kind
    clock.now += 61
    assert log.note("queue/data 404")
    assert len(lines) == 3 and "(50 more since the last such line)" in lines[2]
    for kind in range(200):  # a flood of kinds is capped
        log.note(f"kind {kind}")
    assert len(lines) < 3 + 70


def test_requests_for_what_is_not_there_log_one_line_per_kind(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")}
    with log.open("w") as sink:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aah",
                "web",
                "--port",
                str(port),
                "--db",
                str(tmp_path / "s.db"),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, server)
        replies = []
        with httpx.Client(base_url=url, timeout=30) as http:
            for attempt in range(25):
                hashes = [f"nope-{attempt}", "", "x" * 300, "../../etc", "%00"]
                reply = http.get(
                    "/gradio_api/queue/data", params={"session_hash": hashes[attempt % 5]}
                )
                replies.append(reply.text)
            # Other names of things that are not there: an event handler, a component.
            for attempt in range(10):
                unknown = 9_000 + attempt
                join = {"data": [], "fn_index": unknown, "session_hash": f"s{attempt}"}
                failed = http.post("/gradio_api/queue/join", json=join)
                parts = {"session_hash": "s", "component_id": unknown, "fn_name": "f", "data": 1}
                missing = http.post("/gradio_api/component_server", json=parts)
                assert failed.status_code == missing.status_code == 500
            # A person's mistake the page answers in a line (nobody signed in).
            for _ in range(5):
                anonymous = http.post("/gradio_api/run/next_to_label", json={"data": [None, None]})
                assert anonymous.status_code == 500  # the page shows the line; the API, no detail
        assert all('"session_not_found":true' in text for text in replies), replies[:2]
    finally:
        server.terminate()
        server.wait(timeout=30)
    output = log.read_text()
    assert "sign in first" not in output
    assert "Traceback" not in output and "Exception in ASGI" not in output, output[:2000]
    for route in ("queue/data", "queue/join", "component_server"):
        assert len([line for line in output.splitlines() if route in line]) == 1, output


def _wait_until_up(url: str, server: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"aah web exited with {server.returncode}")
        try:
            if httpx.get(url + "/config", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("aah web did not come up in time")
