"""The agent's chat client over real HTTP: replies, retries, and openai's exceptions."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import openai
import pytest
from http_server import LocalServer, closed_port
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from pydantic import SecretStr

from aah.llm.client import ChatClient
from aah.llm.config import ModelConfig, model_error
from aah.llm.transport import ChatTransport, env_proxy, retry_after, should_retry
from aah.testing import FakeLLMServer, error_reply, text_reply, tool_reply

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def config(base_url: str, *, retries: int = 0, timeout: float = 5.0) -> ModelConfig:
    return ModelConfig(
        base_url=base_url,
        model="fake-model",
        api_key=SecretStr("sk-test"),
        retries=retries,
        timeout=timeout,
    )


async def complete(client: ChatClient, text: str, tools: list[dict[str, Any]] | None = None) -> Any:
    try:
        return await client.complete([HumanMessage(text)], tools or [])
    finally:
        await client.aclose()


def test_a_tool_call_and_its_result_round_trip() -> None:
    with FakeLLMServer(
        [tool_reply("get_weather", {"city": "Oslo"}), text_reply("Sunny.")]
    ) as server:
        client = ChatClient(config(server.base_url), temperature=0.0, seed=7)

        async def conversation() -> tuple[Any, Any]:
            messages: list[Any] = [SystemMessage("Be brief."), HumanMessage("Weather in Oslo?")]
            first = await client.complete(messages, [WEATHER])
            call = first.tool_calls[0]
            messages += [first, ToolMessage('{"temp": 21}', tool_call_id=call["id"])]
            second = await client.complete(messages, [WEATHER])
            await client.aclose()
            return first, second

        first, second = asyncio.run(conversation())
        sent = server.requests[1]
    assert first.tool_calls[0]["name"] == "get_weather"
    assert first.tool_calls[0]["args"] == {"city": "Oslo"}
    assert second.text == "Sunny."
    assert second.usage_metadata is not None
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert sent["temperature"] == 0.0 and sent["seed"] == 7
    assert sent["tools"] == [WEATHER]


def test_the_key_goes_in_the_authorization_header_only() -> None:
    with LocalServer() as server:
        transport = ChatTransport(config(server.url("")))

        async def echo() -> dict[str, Any]:
            try:
                return await transport.post("/echo", {"model": "fake-model"})
            finally:
                await transport.aclose()

        seen = asyncio.run(echo())
    assert seen["headers"]["authorization"] == "Bearer sk-test"
    assert "sk-test" not in seen["body"]
    assert seen["headers"]["user-agent"].startswith("aah/")


def test_failures_are_retried_until_the_model_answers() -> None:
    script = [
        error_reply(500, "overloaded"),
        error_reply(429, "slow down"),
        text_reply("Recovered."),
    ]
    with FakeLLMServer(script) as server:
        started = time.perf_counter()
        reply = asyncio.run(complete(ChatClient(config(server.base_url, retries=2)), "hi"))
        elapsed = time.perf_counter() - started
        assert len(server.requests) == 3
    assert reply.text == "Recovered."
    assert elapsed < 1.0  # the server's retry-after-ms wins over the client's backoff


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (503, openai.InternalServerError),
    ],
)
def test_http_errors_raise_openais_exceptions(status: int, error: type[Exception]) -> None:
    with FakeLLMServer([error_reply(status, "scripted failure")]) as server:
        with pytest.raises(error, match="scripted failure") as caught:
            asyncio.run(complete(ChatClient(config(server.base_url)), "hi"))
    assert isinstance(caught.value, openai.APIStatusError)
    assert caught.value.status_code == status
    line = str(model_error(caught.value, config(server.base_url)))
    assert "\n" not in line and server.base_url in line


def test_client_errors_are_not_retried() -> None:
    with FakeLLMServer([error_reply(400, "bad request"), "never sent"]) as server:
        with pytest.raises(openai.BadRequestError):
            asyncio.run(complete(ChatClient(config(server.base_url, retries=3)), "hi"))
        assert len(server.requests) == 1


def test_a_retry_after_beyond_a_minute_is_not_waited_for() -> None:
    slow = error_reply(429, "come back later")
    assert slow.error is not None
    slow.error.retry_after_ms = 120_000
    with FakeLLMServer([slow, "never sent"]) as server:
        with pytest.raises(openai.RateLimitError):
            asyncio.run(complete(ChatClient(config(server.base_url, retries=3)), "hi"))
        assert len(server.requests) == 1


def test_an_unreachable_endpoint_is_a_connection_error_with_a_one_line_fix() -> None:
    cfg = config(f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(openai.APIConnectionError) as caught:
        asyncio.run(complete(ChatClient(cfg), "hi"))
    assert "start the server or fix AAH_BASE_URL" in str(model_error(caught.value, cfg))


def test_a_slow_endpoint_times_out() -> None:
    with FakeLLMServer(["too late"], latency_ms=1000) as server:
        cfg = config(server.base_url, timeout=0.2)
        with pytest.raises(openai.APITimeoutError) as caught:
            asyncio.run(complete(ChatClient(cfg), "hi"))
    assert "did not answer within" in str(model_error(caught.value, cfg))


def test_an_answer_that_is_not_json_is_a_validation_error() -> None:
    with LocalServer() as server:
        transport = ChatTransport(config(server.url("")))

        async def text() -> dict[str, Any]:
            try:
                return await transport.post("/text", {})
            finally:
                await transport.aclose()

        with pytest.raises(openai.APIResponseValidationError, match="no JSON object"):
            asyncio.run(text())


def test_a_client_serves_one_event_loop_after_another() -> None:
    with FakeLLMServer(["first", "second"]) as server:
        client = ChatClient(config(server.base_url))
        first = asyncio.run(client.complete([HumanMessage("one")]))
        second = asyncio.run(complete(client, "two"))
    assert (first.text, second.text) == ("first", "second")


def test_retry_rules_follow_openais() -> None:
    assert should_retry(500, {}) and should_retry(429, {}) and should_retry(408, {})
    assert not should_retry(400, {}) and not should_retry(404, {})
    assert should_retry(400, {"x-should-retry": "true"})
    assert not should_retry(503, {"X-Should-Retry": "false"})
    assert not should_retry(429, {"retry-after": "600"})
    assert retry_after({"Retry-After-Ms": "250"}) == 0.25
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "600"}) is None
    assert retry_after({"retry-after": "soon"}) is None


def test_proxies_come_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert env_proxy("https://api.openai.com/v1")[0] == "http://proxy.internal:3128"
    assert env_proxy("http://127.0.0.1:8000/v1") == (None, None)
