"""HTTP modes: record/replay over SQLite, mock from sketches, fault plans."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer, closed_port, make_spec

from aah.errors import AahError
from aah.tools.http.executor import HttpExecutor
from aah.tools.http.faults import FAULT_KINDS, FaultPlan
from aah.tools.http.modes import Executor, default_cache_path, make_executor
from aah.tools.http.results import ToolResult
from aah.tools.spec import ParameterSpec, ParamLocation, ResponseSketch

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

# Quick retries and a generous timeout: a loaded machine must not turn a success into a timeout.
FAST: dict[str, Any] = {"timeout": 10, "retries": 2, "backoff": 0.001, "max_bytes": 10_000}
# For the calls meant to time out against the server's /slow path.
IMPATIENT: dict[str, Any] = {**FAST, "timeout": 0.2}


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as running:
        yield running


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "http_cache.sqlite"


def same_answer(a: ToolResult, b: ToolResult) -> bool:
    keep = {"ok", "status", "text", "data", "url", "error", "truncated"}
    return a.model_dump(include=keep) == b.model_dump(include=keep)


def post_spec(server: LocalServer) -> Any:
    params = [
        ParameterSpec(name="title", location=ParamLocation.BODY),
        ParameterSpec(name="X-Lang", location=ParamLocation.HEADER),
    ]
    return make_spec(server.url("/echo/post"), method="POST", params=params, name="post")


# --- record and replay ------------------------------------------------------


def test_record_then_replay_with_the_server_stopped(server: LocalServer, cache: Path) -> None:
    calls = [
        (make_spec(server.url("/json"), name="json"), {}),
        (make_spec(server.url("/missing"), name="missing"), {}),
        (make_spec(server.url("/redirect-home"), name="hop"), {}),
        (make_spec(server.url("/huge"), name="huge"), {}),
        (post_spec(server), {"title": "one", "X-Lang": "en"}),
        (post_spec(server), {"title": "two", "X-Lang": "en"}),
    ]
    recorder = make_executor("record", cache_path=cache, **FAST)
    recorded = [recorder.call(spec, args) for spec, args in calls]
    recorder.close()
    assert all(r.mode == "record" and not r.from_cache for r in recorded)
    server.stop()
    player = make_executor("replay", cache_path=cache, **FAST)
    replayed = [player.call(spec, args) for spec, args in calls]
    player.close()
    for before, after in zip(recorded, replayed, strict=True):
        assert same_answer(before, after), after
        assert after.from_cache and after.mode == "replay"
    assert replayed[4].data["body"] != replayed[5].data["body"]  # the POST body is in the key
    assert replayed[3].truncated and replayed[3].text.endswith("…[truncated at 10000 bytes]")


def test_replay_miss_is_unavailable_and_sends_nothing(server: LocalServer, cache: Path) -> None:
    recorder = make_executor("record", cache_path=cache, **FAST)
    recorder.call(post_spec(server), {"title": "one", "X-Lang": "en"})
    recorder.close()
    server.reset()
    player = make_executor("replay", cache_path=cache, **FAST)
    misses = [
        player.call(make_spec(server.url("/json"), name="json"), {}),
        player.call(post_spec(server), {"title": "other", "X-Lang": "en"}),
        player.call(post_spec(server), {"title": "one", "X-Lang": "fr"}),  # headers count too
    ]
    player.close()
    assert misses[0].text == "tool unavailable: no recorded response for local__json"
    assert misses[1].text == "tool unavailable: no recorded response for local__post"
    assert all(not m.ok and m.error == m.text and m.status is None for m in misses)
    assert server.count() == 0


def test_record_keeps_the_answer_after_a_retry(server: LocalServer, cache: Path) -> None:
    spec = make_spec(server.url("/flaky"), name="flaky")
    recorder = make_executor("record", cache_path=cache, **FAST)
    first = recorder.call(spec, {})
    recorder.close()
    player = make_executor("replay", cache_path=cache, **FAST)
    assert first.ok and same_answer(first, player.call(spec, {}))


def test_record_always_calls_the_api(server: LocalServer, cache: Path) -> None:
    recorder = make_executor("record", cache_path=cache, **FAST)
    spec = make_spec(server.url("/json"))
    recorder.call(spec, {})
    recorder.call(spec, {})
    assert server.count("/json") == 2


@pytest.mark.parametrize(
    ("name", "location"),
    [
        ("X-API-Key", ParamLocation.HEADER),
        ("x-rapidapi-key", ParamLocation.HEADER),
        ("appid", ParamLocation.QUERY),
    ],
)
def test_credentials_are_not_stored(
    server: LocalServer, cache: Path, name: str, location: ParamLocation
) -> None:
    spec = make_spec(server.url("/json"), params=[ParameterSpec(name=name, location=location)])
    recorder = make_executor("record", cache_path=cache, **FAST)
    recorder.call(spec, {name: "sekrit-123"})
    recorder.close()
    assert b"sekrit-123" not in cache.read_bytes()
    player = make_executor("replay", cache_path=cache, **FAST)
    assert player.call(spec, {name: "other-key"}).ok  # keys stay out of the cache key


async def test_replay_acall(server: LocalServer, cache: Path) -> None:
    spec = make_spec(server.url("/json"))
    make_executor("record", cache_path=cache, **FAST).call(spec, {})
    result = await make_executor("replay", cache_path=cache, **FAST).acall(spec, {})
    assert result.ok and result.from_cache


def test_replay_without_a_recording_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="record first"):
        make_executor("replay", cache_path=tmp_path / "nothing.sqlite")


def test_default_cache_path_follows_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAH_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "http_cache.sqlite"


# --- mock ---------------------------------------------------------------------

TEMPLATE = {
    "city": "string",
    "temp": "float",
    "count": "int",
    "windy": "boolean",
    "day": "date",
    "label": "Oslo",
    "hours": [{"hour": "integer", "rain": "number"}],
}
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 5, "maximum": 9},
        "status": {"type": "string", "enum": ["open", "closed"]},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {"type": "object", "properties": {"email": {"type": "string"}}},
        "score": {"type": ["number", "null"]},
        "fixed": {"type": "string", "example": "as documented"},
    },
}
SKETCHES = {
    "template": ResponseSketch(kind="template", content=TEMPLATE),
    "schema": ResponseSketch(kind="schema", content=SCHEMA),
    "example": ResponseSketch(kind="example", content={"answer": 42}),
    "none": ResponseSketch(),
}


def mock_spec(kind: str, server_url: str = "http://api.example.test") -> Any:
    param = ParameterSpec(name="q", location=ParamLocation.QUERY)
    return make_spec(f"{server_url}/x", params=[param], response=SKETCHES[kind], name=kind)


@pytest.mark.parametrize("kind", sorted(SKETCHES))
def test_mock_is_deterministic_for_each_sketch_kind(kind: str) -> None:
    mock = make_executor("mock")
    first = mock.call(mock_spec(kind), {"q": "a"})
    again = make_executor("mock").call(mock_spec(kind), {"q": "a"})
    assert first.ok and first.status == 200 and first.mode == "mock"
    assert isinstance(first.data, dict) and first.text.startswith("HTTP 200 OK\n{")
    assert same_answer(first, again)


def test_mock_varies_with_arguments() -> None:
    mock = make_executor("mock")
    assert (
        mock.call(mock_spec("template"), {"q": "a"}).data
        != mock.call(mock_spec("template"), {"q": "b"}).data
    )


def test_mock_template_values_are_typed() -> None:
    data = make_executor("mock").call(mock_spec("template"), {"q": "a"}).data
    assert isinstance(data["city"], str) and isinstance(data["temp"], float)
    assert isinstance(data["count"], int) and isinstance(data["windy"], bool)
    assert len(data["day"]) == 10 and data["day"][4] == "-"
    assert data["label"] == "Oslo"
    assert isinstance(data["hours"][0]["hour"], int) and isinstance(data["hours"][0]["rain"], float)


def test_mock_schema_instance_follows_the_schema() -> None:
    data = make_executor("mock").call(mock_spec("schema"), {}).data
    assert 5 <= data["id"] <= 9 and data["status"] in ("open", "closed")
    assert "T" in data["when"] and all(isinstance(tag, str) for tag in data["tags"])
    assert "@" in data["owner"]["email"] and isinstance(data["score"], float)
    assert data["fixed"] == "as documented"


def test_mock_other_kinds() -> None:
    mock = make_executor("mock")
    assert mock.call(mock_spec("example"), {}).data == {"answer": 42}
    echo = mock.call(mock_spec("none"), {"q": "z"}).data
    assert echo == {"status": "ok", "endpoint": "local__none", "arguments": {"q": "z"}}


def test_mock_tolerates_odd_sketches() -> None:
    def answer(sketch: ResponseSketch) -> ToolResult:
        return make_executor("mock").call(make_spec("http://h.test/x", response=sketch), {})

    broken = answer(ResponseSketch(kind="schema", content={"type": "integer", "minimum": "low"}))
    assert broken.ok and broken.data["status"] == "ok"
    assert isinstance(
        answer(ResponseSketch(kind="template", content='{"a": "int"}')).data["a"], int
    )
    text = answer(ResponseSketch(kind="example", content="plain words", media_type="text/plain"))
    assert text.text == "HTTP 200 OK\nplain words" and text.data is None
    created = answer(ResponseSketch(status=201))
    assert created.ok and created.text.startswith("HTTP 201 Created\n")


def test_mock_schema_depth_is_limited() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(20):
        schema = {"type": "object", "properties": {"next": schema}}
    spec = make_spec(
        "http://api.example.test/x", response=ResponseSketch(kind="schema", content=schema)
    )
    data = make_executor("mock").call(spec, {}).data
    depth = 0
    while isinstance(data, dict):
        data, depth = data["next"], depth + 1
    assert data is None and depth < 10


def test_mock_missing_required_is_a_400_and_no_request(server: LocalServer) -> None:
    param = ParameterSpec(name="q", location=ParamLocation.QUERY, required=True)
    spec = make_spec(server.url("/json"), params=[param], response=SKETCHES["example"])
    mock = make_executor("mock")
    bad, good = mock.call(spec, {}), mock.call(spec, {"q": "x"})
    assert bad.status == 400 and not bad.ok and good.ok
    assert server.count() == 0


# --- faults ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind(kind: str, server: LocalServer) -> None:
    spec = make_spec(server.url("/json"), name="weather")
    result = make_executor("fault", fault_plan=f"local__weather={kind}", **IMPATIENT).call(spec, {})
    expected = {
        "404": (404, "HTTP 404 Not Found\n{"),
        "500": (500, "HTTP 500 Internal Server Error\n{"),
        "deprecated": (410, "HTTP 410 Gone\n{"),
        "empty": (200, "HTTP 200 OK\n(empty body)"),
        "timeout": (None, f"request failed: no response from {server.host} within 0.2 s"),
        "refused": (None, f"request failed: connection refused by {server.host}"),
    }[kind]
    assert (result.status, result.text[: len(expected[1])]) == expected
    assert not result.ok and result.fault == kind and result.mode == "fault"
    assert result.error is not None and result.error.startswith(f"injected fault {kind}: ")
    assert "inject" not in result.text and "fault" not in result.text
    assert server.count() == 0


def test_deprecated_body_says_so() -> None:
    plan = make_executor("fault", fault_plan="*=deprecated")
    assert "deprecated" in plan.call(mock_spec("none"), {}).data["message"]


def test_faults_read_like_real_failures(server: LocalServer) -> None:
    live = HttpExecutor(**IMPATIENT)
    slow = make_spec(server.url("/slow"), name="slow")
    refused = make_spec(f"http://127.0.0.1:{closed_port()}/json", name="gone")
    missing = make_spec(server.url("/missing"), name="missing")
    faults = make_executor(
        "fault",
        fault_plan="local__slow=timeout,local__gone=refused,local__missing=404",
        **IMPATIENT,
    )
    assert faults.call(slow, {}).text == live.call(slow, {}).text
    assert faults.call(refused, {}).text == live.call(refused, {}).text
    fault_404, real_404 = faults.call(missing, {}), live.call(missing, {})
    assert fault_404.text.split("\n")[0] == real_404.text.split("\n")[0] == "HTTP 404 Not Found"
    assert fault_404.error == f"injected fault 404: {real_404.error}"


def test_tools_outside_the_plan_use_the_base_mode(server: LocalServer) -> None:
    spec = make_spec(server.url("/json"), name="fine", response=SKETCHES["example"])
    mocked = make_executor("fault", fault_plan="local__other=404").call(spec, {})
    live = make_executor("fault", fault_plan="local__other=404", base_mode="live", **FAST)
    assert mocked.mode == "mock" and mocked.data == {"answer": 42}
    assert live.call(spec, {}).data == {"city": "Oslo", "temp": 21.5}
    assert server.count("/json") == 1


def test_fault_plan_parsing() -> None:
    plan = FaultPlan.parse(["local__a=404, *=timeout", "weather=500;local__b=EMPTY"])
    assert str(plan) == "local__a=404,*=timeout,weather=500,local__b=empty"
    spec_a, spec_c = make_spec("http://h/x", name="a"), make_spec("http://h/x", name="c")
    weather = make_spec("http://h/x", name="today").model_copy(update={"tool": "weather"})
    assert plan.kind_for(spec_a) == "404"  # an exact name wins over *
    assert plan.kind_for(spec_c) == "timeout"
    assert plan.kind_for(weather) == "500"  # a tool name covers all its endpoints
    assert FaultPlan.parse("").kind_for(spec_a) is None


@pytest.mark.parametrize("text", ["local__a=boom", "local__a", "=404", "a=404,a=500"])
def test_bad_fault_plan_is_a_user_error(text: str) -> None:
    with pytest.raises(AahError) as caught:
        FaultPlan.parse(text)
    message = str(caught.value)
    assert "\n" not in message
    if "=" in text and "," not in text:
        assert "404, 500, timeout, refused, deprecated, empty" in message


@pytest.mark.parametrize(
    ("mode", "options", "match"),
    [
        ("telepathy", {}, "unknown HTTP mode 'telepathy': use one of live, record"),
        ("fault", {}, "needs a fault plan"),
        ("fault", {"fault_plan": "*=404", "base_mode": "fault"}, "bad base mode"),
    ],
)
def test_make_executor_errors(mode: str, options: dict[str, Any], match: str) -> None:
    with pytest.raises(AahError, match=match):
        make_executor(mode, **options)


def test_every_executor_satisfies_the_protocol(cache: Path, server: LocalServer) -> None:
    make_executor("record", cache_path=cache).close()
    for mode in ("live", "record", "replay", "mock"):
        executor: Executor = make_executor(mode, cache_path=cache)
        assert callable(executor.call) and callable(executor.acall)
        executor.close()


def test_mock_answers_agree_with_the_call() -> None:
    from aah.tools.http.mock import synthesize
    from aah.tools.spec import ParameterSpec, ResponseSketch

    spec = make_spec(
        "https://api.example.org/forecast",
        name="forecast",
        params=[
            ParameterSpec(name="latitude", type="number"),
            ParameterSpec(name="longitude", type="number"),
        ],
        response=ResponseSketch(
            kind="template",
            content={
                "latitude": "float",
                "longitude": "float",
                "timezone": "str",
                "hourly": {"temp": "float"},
            },
        ),
    )
    data = synthesize(spec, {"latitude": 52.52, "longitude": 13.41})
    assert data["latitude"] == 52.52 and data["longitude"] == 13.41
    assert "/" in data["timezone"] or data["timezone"] == "UTC"
    other = synthesize(spec, {"latitude": 1.0})
    assert -180 <= other["longitude"] <= 180
