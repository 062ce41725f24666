"""HttpExecutor against a real HTTP server on 127.0.0.1 (no external network)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from http_server import PNG_BYTES, LocalServer, closed_port, make_spec

from aah.tools.http.executor import HttpExecutor
from aah.tools.http.request import same_host
from aah.tools.spec import ParameterSpec, ParamLocation

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

CAP = 10_000


@pytest.fixture(scope="module")
def running() -> Iterator[LocalServer]:
    with LocalServer(slow_seconds=2.0) as server:
        yield server


@pytest.fixture
def server(running: LocalServer) -> LocalServer:
    running.reset()
    return running


@pytest.fixture
def executor() -> Iterator[HttpExecutor]:
    # A generous timeout: a loaded machine must not turn a success into a timeout.
    with HttpExecutor(timeout=10, retries=2, backoff=0.001, max_bytes=CAP) as http:
        yield http


def test_json_success(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/json")), {})
    assert result.ok and result.status == 200 and result.error is None
    assert result.data == {"city": "Oslo", "temp": 21.5}
    assert result.text == 'HTTP 200 OK\n{"city":"Oslo","temp":21.5}'
    assert result.url == server.url("/json")
    assert result.latency_ms > 0 and result.mode == "live" and not result.from_cache


def test_404_is_a_result_not_a_retry(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/missing")), {})
    assert not result.ok and result.status == 404
    assert result.error == "HTTP 404 Not Found"
    assert result.text.startswith("HTTP 404 Not Found\n")
    assert server.count("/missing") == 1


def test_500_is_retried_until_it_succeeds(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/flaky")), {})
    assert result.ok and result.data == {"attempt": 2}
    assert server.count("/flaky") == 2


def test_retries_are_bounded(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/broken")), {})
    assert (
        not result.ok and result.status == 500 and result.error == "HTTP 500 Internal Server Error"
    )
    assert server.count("/broken") == 3  # the first try and two retries


def test_slow_server_times_out(server: LocalServer) -> None:
    started = time.perf_counter()
    with HttpExecutor(timeout=0.2, retries=2, backoff=0.001, max_bytes=CAP) as impatient:
        result = impatient.call(make_spec(server.url("/slow")), {})
    assert time.perf_counter() - started < 1.5  # the server answers after 2 s
    assert not result.ok and result.status is None
    assert result.error == f"no response from {server.host} within 0.2 s (timeout)"
    assert result.text == f"request failed: {result.error}"
    assert server.count("/slow") == 1  # a read timeout is not retried


def test_huge_body_is_cut_with_a_marker(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/huge")), {})
    assert result.ok and result.truncated
    assert result.text.endswith(f"…[truncated at {CAP} bytes]")
    assert result.text.count("x") == CAP


def test_binary_body_is_described(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/image.png")), {})
    assert result.ok and result.data is None
    assert result.text == f"HTTP 200 OK\nbinary image/png, {len(PNG_BYTES)} bytes"


def test_text_and_empty_bodies(server: LocalServer, executor: HttpExecutor) -> None:
    assert executor.call(make_spec(server.url("/text")), {}).text == "HTTP 200 OK\nhéllo wörld"
    assert executor.call(make_spec(server.url("/empty")), {}).text == "HTTP 200 OK\n(empty body)"


def test_same_host_redirect_is_followed(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/redirect-home")), {})
    assert result.ok and result.data == {"city": "Oslo", "temp": 21.5}
    assert result.url == server.url("/json")


def test_redirect_to_another_host_is_refused(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/redirect-away")), {})
    assert not result.ok and result.status == 302
    assert result.error is not None and "another host" in result.error
    assert f"localhost:{server.port}" in result.error
    assert server.count("/json") == 0


def test_redirect_loop_stops(server: LocalServer, executor: HttpExecutor) -> None:
    result = executor.call(make_spec(server.url("/redirect-loop")), {})
    assert not result.ok and result.error == "too many redirects (more than 5)"
    assert server.count("/redirect-loop") == 6


@pytest.mark.parametrize("value", ["../admin", "a?x=1", "b#frag", "a/b c", "%2e%2e", "...", "@x:1"])
def test_hostile_path_values_stay_in_one_segment(
    server: LocalServer, executor: HttpExecutor, value: str
) -> None:
    param = ParameterSpec(name="item", location=ParamLocation.PATH, required=True)
    spec = make_spec(server.url("/echo/{item}/info"), params=[param])
    result = executor.call(spec, {"item": value})
    assert result.ok
    assert result.data["path"] == f"/echo/{quote(value, safe='')}/info"
    assert result.data["query"] == ""
    assert result.data["headers"]["host"] == server.host


def test_arguments_go_where_their_parameters_say(
    server: LocalServer, executor: HttpExecutor
) -> None:
    params = [
        ParameterSpec(name="id", type="integer", location=ParamLocation.PATH, required=True),
        ParameterSpec(name="q", location=ParamLocation.QUERY),
        ParameterSpec(name="tags", type="array", location=ParamLocation.QUERY),
        ParameterSpec(name="flag", type="boolean", location=ParamLocation.QUERY),
        ParameterSpec(name="units", location=ParamLocation.QUERY, default="metric"),
        ParameterSpec(name="X-Lang", location=ParamLocation.HEADER),
        ParameterSpec(name="title", location=ParamLocation.BODY),
        ParameterSpec(name="count", type="integer", location=ParamLocation.BODY),
        ParameterSpec(name="note", location=ParamLocation.BODY),
    ]
    spec = make_spec(server.url("/echo/{id}"), method="POST", params=params)
    arguments = {
        "id": 7,
        "q": "a b&c=d",
        "tags": ["x", "y"],
        "flag": True,
        "X-Lang": "en",
        "title": "hi",
        "count": 3,
        "note": None,
    }
    result = executor.call(spec, arguments)
    echo = result.data
    assert echo["method"] == "POST" and echo["path"] == "/echo/7"
    assert echo["query"] == "q=a+b%26c%3Dd&tags=x&tags=y&flag=true"  # no default "units"
    assert json.loads(echo["body"]) == {"title": "hi", "count": 3}  # None left out
    assert echo["headers"]["x-lang"] == "en"
    assert echo["headers"]["content-type"] == "application/json"
    assert result.url == server.url("/echo/7?q=a+b%26c%3Dd&tags=x&tags=y&flag=true")


def test_bad_calls_send_nothing(server: LocalServer, executor: HttpExecutor) -> None:
    param = ParameterSpec(name="id", location=ParamLocation.PATH, required=True)
    spec = make_spec(server.url("/echo/{id}"), params=[param])
    missing = executor.call(spec, {})
    unknown = executor.call(spec, {"id": 1, "bogus": 2})
    assert not missing.ok and missing.error == "missing path argument(s) id for local__endpoint"
    assert not unknown.ok and unknown.error is not None and "bogus" in unknown.error
    assert server.count() == 0


@pytest.mark.parametrize("value", [".", ".."])
def test_dot_segments_are_refused(server: LocalServer, executor: HttpExecutor, value: str) -> None:
    param = ParameterSpec(name="item", location=ParamLocation.PATH, required=True)
    result = executor.call(
        make_spec(server.url("/echo/{item}/info"), params=[param]), {"item": value}
    )
    assert not result.ok and result.error == f"a path argument cannot be {value!r}"
    assert server.count() == 0


def test_host_guard_refuses_other_hosts(server: LocalServer, executor: HttpExecutor) -> None:
    param = ParameterSpec(name="where", location=ParamLocation.PATH, required=True)
    spec = make_spec("http://{where}/json", params=[param])
    result = executor.call(spec, {"where": server.host})
    assert not result.ok and result.error is not None and "refused to call" in result.error
    assert server.count() == 0


def test_connection_refused(executor: HttpExecutor) -> None:
    port = closed_port()
    result = executor.call(make_spec(f"http://127.0.0.1:{port}/json"), {})
    assert not result.ok and result.status is None
    assert result.error == f"connection refused by 127.0.0.1:{port}"


async def test_acall_runs_in_a_thread(server: LocalServer, executor: HttpExecutor) -> None:
    result = await executor.acall(make_spec(server.url("/json")), {})
    assert result.ok and result.data == {"city": "Oslo", "temp": 21.5}


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.example.org/x", True),
        ("https://API.example.org:443/x", True),
        ("http://api.example.org/x", True),  # an http -> https upgrade keeps the host
        ("https://api.example.org:8443/x", False),
        ("https://api.example.org@evil.test/x", False),
        ("https://evil.test/api.example.org", False),
        ("ftp://api.example.org/x", False),
    ],
)
def test_same_host_rules(url: str, allowed: bool) -> None:
    assert same_host(url, "api.example.org") is allowed


def test_form_encoded_bodies_are_sent_as_form_fields() -> None:
    from aah.tools.http.executor import HttpExecutor
    from aah.tools.spec import ParameterSpec, ParamLocation

    with LocalServer() as server:
        spec = make_spec(
            server.url("/echo"),
            method="POST",
            name="form",
            params=[
                ParameterSpec(name="url", location=ParamLocation.BODY),
                ParameterSpec(name="tags", type="array", location=ParamLocation.BODY),
            ],
        ).model_copy(update={"body_encoding": "form"})
        with HttpExecutor(timeout=2, retries=0) as executor:
            result = executor.call(spec, {"url": "http://x.test/a?b=1", "tags": ["p", "q"]})
    assert result.ok, result.error
    echoed = result.data
    assert "url=http%3A%2F%2Fx.test%2Fa%3Fb%3D1" in echoed["body"]
    assert "tags=p&tags=q" in echoed["body"]
    assert "application/x-www-form-urlencoded" in str(echoed["headers"]).lower()


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Host", "evil.example"),
        ("host", "evil.example"),
        ("Transfer-Encoding", "chunked"),
        ("Content-Length", "0"),
        ("Connection", "close"),
        ("Proxy-Authorization", "Basic eA=="),
    ],
)
def test_declared_host_and_hop_by_hop_headers_are_never_sent(
    server: LocalServer, executor: HttpExecutor, header: str, value: str
) -> None:
    # A registry built before the importer dropped such headers, or a
    # project fix, may still declare one: the request is refused, not sent.
    param = ParameterSpec(name=header, location=ParamLocation.HEADER)
    spec = make_spec(server.url("/echo/x"), params=[param])
    result = executor.call(spec, {header: value})
    assert not result.ok
    assert result.error == f"header {header!r} is set by the HTTP layer, never by a tool call"
    assert server.count() == 0


def test_a_header_value_cannot_smuggle_another_header(
    server: LocalServer, executor: HttpExecutor
) -> None:
    spec = make_spec(
        server.url("/echo/x"), params=[ParameterSpec(name="X-Lang", location=ParamLocation.HEADER)]
    )
    result = executor.call(spec, {"X-Lang": "en\r\nHost: evil.example"})
    assert not result.ok and result.error == "header 'X-Lang' cannot hold a line break"
    assert server.count() == 0
    sent = executor.call(spec, {"X-Lang": "en"})
    assert sent.ok and sent.data["headers"]["host"] == server.host
