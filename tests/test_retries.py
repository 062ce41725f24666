"""Retries with backoff: the one policy (aah.retries) and the three clients that use it.

The policy is tested on plain calls with a recorded sleep. The tool executor
and the data fetch are tested against a real server on 127.0.0.1 that fails
a planned number of times, with the sleep injected, so the pauses are read
instead of waited. (The model client's retries: test_chat_client.py and
test_retry_budget.py.)
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from http_server import closed_port, make_spec

from aah.data.fetch import Manifest, ManifestFile, Origin, fetch_data, origin_url
from aah.errors import AahError
from aah.llm.transport import INITIAL_RETRY_DELAY, MAX_RETRY_DELAY, backoff
from aah.retries import Backoff, RetryPolicy, Stopped, call_with_retries, retry_async
from aah.tools.http.executor import HttpExecutor

# --- the policy -----------------------------------------------------------------


class Busy(Exception):
    """A failure worth another try."""


class Broken(Exception):
    """A failure that is not."""


class Tries:
    """A call that fails with the planned outcomes, then returns "done"; counts its tries."""

    def __init__(self, *planned: BaseException | str) -> None:
        self.planned = list(planned)
        self.numbers: list[int] = []

    def __call__(self, number: int) -> str:
        self.numbers.append(number)
        outcome = self.planned.pop(0) if self.planned else "done"
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def policy(**fields: Any) -> RetryPolicy[str]:
    base: dict[str, Any] = {
        "tries": 4,
        "backoff": Backoff(0.5, 3.0),
        "retry_error": lambda error: isinstance(error, Busy),
        "retry_result": lambda result: result == "busy",
    }
    return RetryPolicy(**{**base, **fields})


def test_failures_worth_retrying_are_tried_again_after_doubling_pauses() -> None:
    pauses: list[float] = []
    call = Tries(Busy(), "busy", Busy())
    assert call_with_retries(policy(), call, sleep=pauses.append) == "done"
    assert call.numbers == [1, 2, 3, 4]
    assert pauses == [0.5, 1.0, 2.0]


def test_the_pauses_stop_at_the_cap() -> None:
    pauses: list[float] = []
    call = Tries(*[Busy()] * 5)
    assert call_with_retries(policy(tries=6), call, sleep=pauses.append) == "done"
    assert pauses == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_out_of_tries_the_last_outcome_comes_back_as_it_was() -> None:
    pauses: list[float] = []
    last = Busy("the fourth")
    with pytest.raises(Busy) as caught:
        call_with_retries(policy(), Tries(Busy(), Busy(), Busy(), last), sleep=pauses.append)
    assert caught.value is last and len(pauses) == 3
    # A result worth retrying is returned as is when no try is left.
    assert call_with_retries(policy(tries=2), Tries("busy", "busy"), sleep=pauses.append) == "busy"


def test_a_failure_not_worth_retrying_ends_the_call_at_once() -> None:
    pauses: list[float] = []
    call = Tries(Busy(), Broken("final"))
    with pytest.raises(Broken, match="final"):
        call_with_retries(policy(), call, sleep=pauses.append)
    assert call.numbers == [1, 2] and pauses == [0.5]


def test_one_try_at_least() -> None:
    for tries in (0, -3, 1):
        call = Tries(Busy())
        with pytest.raises(Busy):
            call_with_retries(policy(tries=tries), call, sleep=lambda _: None)
        assert call.numbers == [1]


def test_a_pause_past_the_budget_is_not_taken_and_on_stop_says_which() -> None:
    pauses: list[float] = []
    stops: list[Stopped[str]] = []

    def give_up(stopped: Stopped[str]) -> str:
        stops.append(stopped)
        return "gave up"

    # 0.5 + 1.0 fit in 2.0; the next 2.0 would make 3.5.
    chosen = policy(tries=10, budget=2.0, on_stop=give_up)
    assert call_with_retries(chosen, Tries(*[Busy()] * 9), sleep=pauses.append) == "gave up"
    assert pauses == [0.5, 1.0]
    [stopped] = stops
    assert stopped.tries == 3 and stopped.refused_pause == 2.0
    assert isinstance(stopped.last.error, Busy) and stopped.last.result is None
    # Out of tries, no pause was refused.
    stops.clear()
    call_with_retries(policy(tries=2, on_stop=give_up), Tries(Busy(), "busy"), sleep=pauses.append)
    assert stops[0].refused_pause is None and stops[0].last.result == "busy"


def test_a_pause_exactly_filling_the_budget_is_taken() -> None:
    pauses: list[float] = []
    chosen = policy(tries=3, budget=1.5)
    assert call_with_retries(chosen, Tries(Busy(), Busy()), sleep=pauses.append) == "done"
    assert pauses == [0.5, 1.0]


def test_a_pause_longer_than_the_time_left_is_not_taken() -> None:
    pauses: list[float] = []
    left = iter([10.0, 0.7])  # the deadline nears as the call goes on
    chosen = policy(time_left=lambda: next(left))
    with pytest.raises(Busy):
        call_with_retries(chosen, Tries(Busy(), Busy(), Busy()), sleep=pauses.append)
    assert pauses == [0.5]


def test_the_pause_may_come_from_the_outcome() -> None:
    pauses: list[float] = []
    seen: list[tuple[int, str | None]] = []

    def server_says(retry: int, outcome: Any) -> float:
        seen.append((retry, str(outcome.error) if outcome.error else outcome.result))
        return 7.0 if outcome.result == "busy" else 0.1

    closed: list[str | None] = []
    chosen = policy(pause=server_says, before_pause=lambda outcome: closed.append(outcome.result))
    call_with_retries(chosen, Tries(Busy("first"), "busy"), sleep=pauses.append)
    assert seen == [(0, "first"), (1, "busy")] and pauses == [0.1, 7.0]
    assert closed == [None, "busy"]


def test_jitter_takes_off_up_to_its_fraction() -> None:
    jittered = Backoff(2.0, 8.0, jitter=0.25)
    for retry in range(6):
        full = min(2.0 * 2**retry, 8.0)
        assert all(0.75 * full <= jittered.seconds(retry) <= full for _ in range(200))
    # The model client's own backoff: half a second doubling to 8 s, a quarter off at most.
    for retry in range(8):
        full = min(INITIAL_RETRY_DELAY * 2**retry, MAX_RETRY_DELAY)
        assert 0.75 * full <= backoff(retry) <= full


def test_the_async_retrier_pauses_without_blocking_and_counts_tries() -> None:
    pauses: list[float] = []
    planned = Tries(Busy(), "busy")

    async def attempt(number: int) -> str:
        await asyncio.sleep(0)
        return planned(number)

    async def record(seconds: float) -> None:
        pauses.append(seconds)

    assert asyncio.run(retry_async(policy(), attempt, sleep=record)) == "done"
    assert planned.numbers == [1, 2, 3] and pauses == [0.5, 1.0]


def test_a_cancelled_call_is_not_retried() -> None:
    tries: list[int] = []

    async def attempt(number: int) -> str:
        tries.append(number)
        raise asyncio.CancelledError

    # Even a policy that retries every error stops at a cancellation (or Ctrl-C).
    chosen = policy(retry_error=lambda error: True)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(retry_async(chosen, attempt, sleep=lambda _: asyncio.sleep(0)))
    assert tries == [1]
    with pytest.raises(KeyboardInterrupt):
        call_with_retries(chosen, Tries(KeyboardInterrupt()), sleep=lambda _: None)


# --- a server that fails a planned number of times --------------------------------


class Answer(NamedTuple):
    """One planned answer: status, headers, body."""

    status: int
    headers: dict[str, str]
    body: bytes = b""


class PlannedServer:
    """Answers each request with the next planned answer, then with ``final`` for ever."""

    def __init__(self, planned: list[Answer], final: Answer) -> None:
        self.planned = list(planned)
        self.final = final
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                owner.requests.append(self.path)
                answer = owner.planned.pop(0) if owner.planned else owner.final
                self.send_response(answer.status)
                for name, value in {**answer.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"http://{self.host}"

    def __enter__(self) -> PlannedServer:
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def busy(status: int = 503, **headers: str) -> Answer:
    return Answer(status, {"Content-Type": "application/json", **headers}, b'{"error":"busy"}')


OK = Answer(200, {"Content-Type": "application/json"}, b'{"ok":true}')


# --- the tool executor ------------------------------------------------------------


@pytest.fixture
def recorded() -> list[float]:
    return []


def executor(pauses: list[float], **fields: Any) -> HttpExecutor:
    base: dict[str, Any] = {"timeout": 10, "retries": 3, "backoff": 0.25, "max_backoff": 8.0}
    return HttpExecutor(allow_private=True, sleep=pauses.append, **{**base, **fields})


def test_busy_statuses_are_retried_with_doubling_pauses(recorded: list[float]) -> None:
    with PlannedServer([busy(429), busy(502), busy(504)], OK) as server:
        with executor(recorded) as http:
            result = http.call(make_spec(server.url + "/a"), {})
    assert result.ok and result.data == {"ok": True}
    assert len(server.requests) == 4 and recorded == [0.25, 0.5, 1.0]


def test_retry_after_lengthens_a_pause_up_to_the_longest(recorded: list[float]) -> None:
    planned = [busy(503, **{"Retry-After": "3"}), busy(429, **{"Retry-After": "120"})]
    with PlannedServer(planned, OK) as server:
        with executor(recorded, max_backoff=5.0) as http:
            result = http.call(make_spec(server.url + "/a"), {})
    assert result.ok and recorded == [3.0, 5.0]


@pytest.mark.parametrize("value", ["0", "soon", "-4", "2.5", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_retry_after_other_than_whole_seconds_leaves_the_backoff(
    recorded: list[float], value: str
) -> None:
    with PlannedServer([busy(503, **{"Retry-After": value})], OK) as server:
        with executor(recorded) as http:
            assert http.call(make_spec(server.url + "/a"), {}).ok
    assert recorded == [0.25]


def test_a_pause_past_the_calls_deadline_is_not_taken(recorded: list[float]) -> None:
    with PlannedServer([busy(503, **{"Retry-After": "30"})], OK) as server:
        with executor(recorded, timeout=2.0, max_backoff=60.0) as http:
            result = http.call(make_spec(server.url + "/a"), {})
    # The busy answer is the result: waiting 30 s would pass the 2 s deadline.
    assert not result.ok and result.status == 503 and result.error == "HTTP 503 Service Unavailable"
    assert len(server.requests) == 1 and recorded == []


def test_other_statuses_are_not_retried(recorded: list[float]) -> None:
    with PlannedServer([busy(400), busy(501)], OK) as server:
        with executor(recorded) as http:
            first = http.call(make_spec(server.url + "/a"), {})
            second = http.call(make_spec(server.url + "/a"), {})
    assert (first.status, second.status) == (400, 501) and recorded == []


def test_a_refused_connection_is_retried_then_said_in_one_line(recorded: list[float]) -> None:
    port = closed_port()
    with executor(recorded, retries=2) as http:
        result = http.call(make_spec(f"http://127.0.0.1:{port}/a"), {})
    assert not result.ok and recorded == [0.25, 0.5]
    assert result.error is not None and "\n" not in result.error
    assert f"127.0.0.1:{port}" in result.error and "refused" in result.error


# --- the data fetch ---------------------------------------------------------------

DATA = b'{"question": "Where is the station?"}\n'


def one_file() -> Manifest:
    origin = Origin(repo="owner/repo", commit="c" * 40, path="data/q.jsonl")
    entry = ManifestFile(
        path="set/q.jsonl", sha256=hashlib.sha256(DATA).hexdigest(), size=len(DATA), origin=origin
    )
    return Manifest(files=[entry])


FILE_OK = Answer(200, {"Content-Type": "application/octet-stream"}, DATA)


def fetch(server: PlannedServer, dest: Path, pauses: list[float], **fields: Any) -> None:
    options: dict[str, Any] = {"retries": 3, "backoff": 0.5, "timeout": 5.0, **fields}
    fetch_data(dest, base_url=server.url, manifest=one_file(), sleep=pauses.append, **options)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_a_busy_data_server_is_retried_with_doubling_pauses(
    tmp_path: Path, recorded: list[float], status: int
) -> None:
    with PlannedServer([busy(status), busy(status)], FILE_OK) as server:
        fetch(server, tmp_path, recorded)
    assert (tmp_path / "set" / "q.jsonl").read_bytes() == DATA
    assert server.requests == [origin_url("", one_file().files[0].origin)] * 3
    assert recorded == [0.5, 1.0]


def test_a_data_server_busy_for_ever_is_one_line_after_the_last_try(
    tmp_path: Path, recorded: list[float]
) -> None:
    with PlannedServer([], busy(503)) as server:
        with pytest.raises(AahError) as caught:
            fetch(server, tmp_path, recorded, retries=2)
    assert len(server.requests) == 3 and recorded == [0.5, 1.0]  # no pause after the last try
    assert str(caught.value) == (
        f"{server.host} answered HTTP 503 for set/q.jsonl: try again later "
        "or use `aah data fetch --from DIR`"
    )
    assert not list(tmp_path.rglob("*.jsonl*"))


def test_a_missing_data_file_is_not_retried(tmp_path: Path, recorded: list[float]) -> None:
    with PlannedServer([], busy(404)) as server:
        with pytest.raises(AahError, match=r"set/q.jsonl: .* answered HTTP 404"):
            fetch(server, tmp_path, recorded)
    assert len(server.requests) == 1 and recorded == []


def test_a_body_that_does_not_decode_is_not_retried(tmp_path: Path, recorded: list[float]) -> None:
    garbled = Answer(200, {"Content-Encoding": "gzip"}, b"not gzip at all" * 10)
    with PlannedServer([], garbled) as server:
        with pytest.raises(AahError, match="with a Content-Encoding it does not decode as"):
            fetch(server, tmp_path, recorded)
    assert len(server.requests) == 1 and recorded == []


def test_no_retries_means_one_try(tmp_path: Path, recorded: list[float]) -> None:
    with PlannedServer([busy(503)], FILE_OK) as server:
        with pytest.raises(AahError, match="answered HTTP 503"):
            fetch(server, tmp_path, recorded, retries=-1)
    assert len(server.requests) == 1 and recorded == []
