"""A server's Retry-After is bounded by one budget per request (AAH_LLM_RETRY_BUDGET).

A fake server answers 429 (or 503) with every kind of Retry-After value;
wall time is measured. A wait longer than the budget left is not taken:
the request fails at once with one line naming the server's rate limit and
the setting to raise. Unreadable, negative and past values fall back to
the client's own short backoff.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from model_servers import Planned, RawModelServer, completion, planned_json
from pydantic import SecretStr

from aah.events import ErrorEvent
from aah.llm import ChatClient, ModelConfig, ModelStatusError
from aah.store import SessionStore

BUSY = {"error": {"message": "Rate limit reached for requests", "type": "requests"}}


def limited(status: int = 429, **headers: str) -> Planned:
    return planned_json(BUSY, status, **headers)


def config(base_url: str, **fields: object) -> ModelConfig:
    base: dict[str, object] = {"base_url": base_url, "model": "m", "api_key": SecretStr("sk-x")}
    return ModelConfig(**{**base, "timeout": 3, "retries": 3, "retry_budget": 5.0, **fields})


def timed_failure(cfg: ModelConfig) -> tuple[BaseException, float]:
    async def ask() -> BaseException:
        client = ChatClient(cfg)
        try:
            await client.complete([HumanMessage("hi")])
        except BaseException as exc:  # noqa: B036 - the test reads what came out
            return exc
        finally:
            await client.aclose()
        raise AssertionError("the request succeeded")

    started = time.monotonic()
    error = asyncio.run(ask())
    return error, time.monotonic() - started


def in_an_hour() -> str:
    return formatdate(time.time() + 3600, usegmt=True)


# (name, headers): the server asks for more than the 5 s budget.
TOO_LONG: list[tuple[str, dict[str, str]]] = [
    ("Retry-After 59", {"Retry-After": "59"}),
    ("retry-after-ms 59000", {"retry-after-ms": "59000"}),
    ("HTTP date in an hour", {"Retry-After": in_an_hour()}),
    ("Retry-After 1e308", {"Retry-After": "1e308"}),
    ("Retry-After inf", {"Retry-After": "inf"}),
    ("Retry-After of 5,000 digits", {"Retry-After": "9" * 5000}),
    ("Retry-After 86400 with x-should-retry", {"Retry-After": "86400", "x-should-retry": "true"}),
]


@pytest.mark.parametrize(("name", "headers"), TOO_LONG, ids=[c[0] for c in TOO_LONG])
def test_a_wait_past_the_budget_fails_at_once_naming_the_rate_limit(
    name: str, headers: dict[str, str]
) -> None:
    with RawModelServer([limited(**headers)]) as server:
        error, seconds = timed_failure(config(server.base_url))
        sent = len(server.requests)
    assert seconds < 2.0, f"{name}: waited {seconds:.1f} s"
    assert sent == 1
    assert isinstance(error, ModelStatusError) and error.status == 429
    message = str(error)
    assert "\n" not in message and len(message) < 400
    assert message.startswith(f"the model server at {server.base_url} is rate-limiting (HTTP 429")
    assert "wait and rerun, or raise AAH_LLM_RETRY_BUDGET (now 5 s)" in message
    assert "Rate limit reached" in message


def test_a_503_asking_too_long_a_wait_says_so() -> None:
    with RawModelServer([limited(503, **{"Retry-After": "120"})]) as server:
        error, seconds = timed_failure(config(server.base_url))
    assert seconds < 2.0
    assert "asks aah to wait (HTTP 503, retry-after 120)" in str(error)


# (name, headers): nothing usable is asked; the client's own backoff applies.
UNUSABLE: list[tuple[str, dict[str, str]]] = [
    ("negative", {"Retry-After": "-30"}),
    ("zero", {"Retry-After": "0"}),
    ("NaN", {"Retry-After": "nan"}),
    ("a word", {"Retry-After": "soon"}),
    ("empty", {"Retry-After": ""}),
    ("a date in the past", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
    ("ms not a number", {"retry-after-ms": "later"}),
]


@pytest.mark.parametrize(("name", "headers"), UNUSABLE, ids=[c[0] for c in UNUSABLE])
def test_an_unusable_retry_after_falls_back_to_the_short_backoff(
    name: str, headers: dict[str, str]
) -> None:
    with RawModelServer([limited(**headers)]) as server:
        error, seconds = timed_failure(config(server.base_url, retries=2))
        sent = len(server.requests)
    assert sent == 3 and seconds < 4.0, f"{name}: {sent} requests in {seconds:.1f} s"
    assert isinstance(error, ModelStatusError) and "after 3 attempts" in str(error)


def test_waits_the_server_asks_for_stop_at_the_budget() -> None:
    with RawModelServer([limited(**{"Retry-After": "1"})]) as server:
        cfg = config(server.base_url, retries=10, retry_budget=2.5)
        error, seconds = timed_failure(cfg)
        sent = len(server.requests)
    # Two one-second waits fit in 2.5 s; the third does not and is not taken.
    assert sent == 3 and 1.9 < seconds < 3.5, (sent, seconds)
    assert "is rate-limiting (HTTP 429, retry-after 1)" in str(error)


def test_a_wait_within_the_budget_is_taken_and_the_request_succeeds() -> None:
    plan = [limited(**{"retry-after-ms": "300"}), Planned(completion({"content": "fine"}))]
    with RawModelServer(plan) as server:
        started = time.monotonic()
        reply = asyncio.run(ChatClient(config(server.base_url)).complete([HumanMessage("hi")]))
        seconds = time.monotonic() - started
    assert reply.text == "fine" and 0.3 <= seconds < 2.0


def test_aah_run_fails_its_session_at_once_with_the_rate_limit_line(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    with RawModelServer([limited(**{"Retry-After": "59"})]) as server:
        env.update(AAH_MODEL="m", AAH_API_KEY="sk-x", AAH_BASE_URL=server.base_url)
        env.update(AAH_LLM_TIMEOUT="3", AAH_LLM_RETRY_BUDGET="10", NO_COLOR="1")
        args = ["run", "Weather?", "--awareness", "none", "--db", str(db)]
        started = time.monotonic()
        child = subprocess.run(
            [sys.executable, "-m", "aah", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        seconds = time.monotonic() - started
    assert child.returncode == 2 and "Traceback" not in child.stderr, child.stderr[-1000:]
    last = child.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "is rate-limiting (HTTP 429, retry-after 59)" in last
    assert "AAH_LLM_RETRY_BUDGET (now 10 s)" in last
    assert seconds < 30, seconds
    with SessionStore(db) as store:
        [session] = store.list_sessions()
        errors = [e for e in store.events(session.id) if isinstance(e, ErrorEvent)]
    assert session.status == "error" and "is rate-limiting" in errors[-1].message
