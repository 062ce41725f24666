"""`aah models check`: the probe against aah's fake server and small odd servers.

The fake model server plays tool calls, text calls, think tags, latency and
``n``; a tiny aiohttp server on 127.0.0.1 plays what the fake cannot: a
server that ignores ``n`` and serves one request at a time, reports its
context, refuses an overflowing prompt, or has no ``/models`` at all.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from pydantic import SecretStr

from aah.llm import ModelConfig, ProbeReport, probe_server
from aah.testing import FakeLLMServer, Script

HERMES_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def config_for(base_url: str, model: str = "fake-model", **extra: Any) -> ModelConfig:
    return ModelConfig(
        base_url=base_url, model=model, api_key=SecretStr("k"), timeout=10, retries=0, **extra
    )


def probe(base_url: str, **kwargs: Any) -> ProbeReport:
    return asyncio.run(probe_server(config_for(base_url), **kwargs))


def rules(tool_reply: dict[str, Any] | str, text: str = "OK") -> Script:
    return Script.model_validate(
        {
            "rules": [
                {"when": {"has_tools": True}, "reply": tool_reply},
                {"when": {}, "reply": text},
            ]
        }
    )


NATIVE = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}


@pytest.mark.parametrize(
    ("reply", "mode", "form"),
    [
        (NATIVE, "native", None),
        (HERMES_CALL, "text", "hermes"),
        ('[get_weather(city="Paris")]', "text", "pythonic"),
        ("The weather in Paris is sunny.", "ignored", None),
        (
            {
                "error": {
                    "status": 400,
                    "message": "auto tool choice requires --enable-auto-tool-choice",
                }
            },
            "failed",
            None,
        ),
    ],
    ids=["native", "hermes-text", "pythonic-text", "ignored", "refused"],
)
def test_tool_call_mode(reply: Any, mode: str, form: str | None) -> None:
    with FakeLLMServer(rules(reply)) as server:
        report = probe(server.base_url, overflow_probe=False)
    assert report.reachable and not report.missing_v1
    assert report.tool_calls == mode
    assert report.tool_call_form == form
    assert report.tools_usable == (mode in ("native", "text"))
    if mode == "failed":
        assert "enable-auto-tool-choice" in (report.tool_detail or "")


def test_fake_server_honours_n_serves_concurrently_and_is_timed() -> None:
    with FakeLLMServer(rules(NATIVE), latency_ms=150) as server:
        report = probe(server.base_url, overflow_probe=False)
        sent = server.requests
    assert report.served_models == ["fake-model"]
    assert report.n_returned == 3 and report.n_honoured
    assert report.concurrent is True
    assert report.latency_seconds is not None and report.latency_seconds >= 0.15
    assert not report.reasoning
    tool_request = next(body for body in sent if body.get("tools"))
    assert tool_request["tool_choice"] == "auto"
    assert tool_request["messages"][0]["role"] == "system"
    assert all(body.get("max_tokens") for body in sent)
    checks = {line.check: line for line in report.lines()}
    assert checks["n (several choices)"].action == "the grader asks for all votes in one request"
    assert not any(line.warning for line in report.lines())


def test_think_tags_are_seen_as_reasoning() -> None:
    with FakeLLMServer(rules(NATIVE, "<think>The user wants OK.</think>OK")) as server:
        report = probe(server.base_url, overflow_probe=False)
    assert report.reasoning
    assert "splits it off" in {line.check: line for line in report.lines()}["reasoning"].action


def test_base_url_without_v1_is_found_and_used() -> None:
    with FakeLLMServer(rules(NATIVE)) as server:
        report = probe(server.base_url.removesuffix("/v1"), overflow_probe=False)
    assert report.reachable and report.missing_v1
    assert report.tool_calls == "native"
    line = report.lines()[0]
    assert line.warning and line.action == f"set AAH_BASE_URL={server.base_url}"


def test_unreachable_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report = probe(f"http://127.0.0.1:{port}/v1")
    assert not report.reachable
    assert [line.check for line in report.lines()] == ["reachable"]
    assert "start the server or fix AAH_BASE_URL" in report.lines()[0].action


# --- odd servers -----------------------------------------------------------------


class OddServer:
    """An aiohttp model server in a thread: one request at a time, one choice, optional quirks."""

    def __init__(
        self,
        *,
        models: Any = None,
        context: int | None = None,
        overflow_at: int | None = None,
        delay: float = 0.1,
    ) -> None:
        self.models = models
        self.context = context
        self.overflow_at = overflow_at
        self.delay = delay
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._runner: web.AppRunner | None = None

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        words = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        if self.overflow_at is not None and words >= self.overflow_at:
            message = (
                f"This model's maximum context length is {self.overflow_at} tokens. However, you "
                f"requested {words + 1} tokens ({words} in the messages, 1 in the completion)."
            )
            return web.json_response(
                {
                    "error": {
                        "message": message,
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
                status=400,
            )
        async with self._lock:  # one request at a time, like llama.cpp's server
            await asyncio.sleep(self.delay)
        # n is ignored: one choice, always.
        message = {"role": "assistant", "content": "Sunny in Paris."}
        return web.json_response(
            {
                "id": "c",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": words,
                    "completion_tokens": 3,
                    "total_tokens": words + 3,
                },
            }
        )

    async def _models(self, request: web.Request) -> web.Response:
        entry: dict[str, Any] = {"id": "odd", "object": "model"}
        if self.context is not None:
            entry["max_model_len"] = self.context
        return web.json_response({"object": "list", "data": [entry]})

    async def _start(self) -> None:
        self._lock = asyncio.Lock()
        app = web.Application(client_max_size=10 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        if self.models != "absent":
            app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._started.set()
        self._loop.run_forever()

    def __enter__(self) -> OddServer:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def test_single_slot_server_that_ignores_n_and_tools() -> None:
    with OddServer(context=8192, delay=0.2) as server:
        report = probe(server.base_url)
    assert report.served_models == ["odd"]
    assert report.tool_calls == "ignored"
    assert report.n_returned == 1 and report.n_honoured is False
    assert report.concurrent is False
    assert report.pair_seconds is not None and report.single_seconds is not None
    assert report.pair_seconds >= 1.5 * report.single_seconds
    assert (report.context_length, report.context_source) == (8192, "models")
    checks = {line.check: line for line in report.lines()}
    assert checks["tool calls"].warning and "TOOLS IGNORED" in checks["tool calls"].result
    assert checks["n (several choices)"].action == "the grader sends one request per vote"
    assert "AAH_MAX_CONNECTIONS=1" in checks["concurrent requests"].action
    assert checks["model"].warning  # fake-model is not what the server lists


def test_context_length_from_an_overflow_refusal() -> None:
    with OddServer(overflow_at=4096, delay=0.0) as server:
        report = probe(server.base_url)
    assert (report.context_length, report.context_source) == (4096, "overflow")


def test_overflow_probe_can_be_turned_off() -> None:
    with OddServer(overflow_at=4096, delay=0.0) as server:
        report = probe(server.base_url, overflow_probe=False)
    assert report.context_length is None


def test_server_without_a_models_listing_is_still_probed() -> None:
    with OddServer(models="absent", delay=0.0) as server:
        report = probe(server.base_url, overflow_probe=False)
    assert report.reachable and report.served_models == []
    assert report.tool_calls == "ignored"
    assert "HTTP 404" in (report.error or "")


# --- the command -------------------------------------------------------------------


@pytest.fixture
def clean_env() -> Iterator[dict[str, str]]:
    yield {
        k: v for k, v in os.environ.items() if not k.startswith("AAH_") and k != "OPENAI_API_KEY"
    }


def run_check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aah", "models", "check", *args],
        env={**env, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_table_and_exit_status(clean_env: dict[str, str]) -> None:
    with FakeLLMServer(rules(NATIVE)) as server:
        env = {**clean_env, "AAH_BASE_URL": server.base_url, "AAH_MODEL": "fake-model"}
        done = run_check(env, "--no-overflow-probe")
        as_json = run_check(env, "--json", "--no-overflow-probe")
    assert done.returncode == 0, done.stderr
    assert "native tool_calls" in done.stdout and "aah reads the native calls" in done.stdout
    assert done.stderr == ""
    report = ProbeReport.model_validate(json.loads(as_json.stdout))
    assert report.tool_calls == "native" and report.n_honoured


def test_cli_tools_ignored_is_a_loud_warning_and_exit_1(clean_env: dict[str, str]) -> None:
    with OddServer(delay=0.0) as server:
        env = {**clean_env, "AAH_BASE_URL": server.base_url, "AAH_MODEL": "odd"}
        done = run_check(env, "--no-overflow-probe")
        grader = run_check(
            {**env, "AAH_GRADER_MODEL": "odd"}, "--role", "grader", "--no-overflow-probe"
        )
    assert done.returncode == 1
    assert (
        "warning: tool calls: a run would measure a model that never saw its tools" in done.stderr
    )
    assert "TOOLS IGNORED" in done.stdout  # the table says what was found
    assert "Traceback" not in done.stdout + done.stderr
    assert grader.returncode == 0  # the grader offers no tools


@pytest.mark.parametrize(
    ("args", "env_extra", "message"),
    [
        (
            ["--role", "boss"],
            {"AAH_MODEL": "m"},
            "error: unknown role 'boss': use one of agent, grader, human, judge",
        ),
        ([], {}, "error: no model configured for the agent"),
    ],
)
def test_cli_errors_are_one_line(
    clean_env: dict[str, str], args: list[str], env_extra: dict[str, str], message: str
) -> None:
    done = run_check({**clean_env, **env_extra, "AAH_BASE_URL": "http://127.0.0.1:9/v1"}, *args)
    assert done.returncode == 2
    assert done.stderr.startswith(message)
    assert done.stderr.count("\n") == 1


def test_cli_unreachable_exits_1(clean_env: dict[str, str]) -> None:
    done = run_check({**clean_env, "AAH_BASE_URL": "http://127.0.0.1:9/v1", "AAH_MODEL": "m"})
    assert done.returncode == 1
    assert "warning: reachable: cannot reach http://127.0.0.1:9/v1/models" in done.stderr
