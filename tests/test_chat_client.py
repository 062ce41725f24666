"""The model client over real HTTP: requests every server takes, errors, retries, deadlines."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import pytest
from http_server import LocalServer, closed_port
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from model_servers import Planned, RawModelServer, completion, planned_json
from pydantic import SecretStr

from aah.llm import (
    ChatClient,
    ModelConfig,
    ModelConnectionError,
    ModelError,
    ModelReplyError,
    ModelStatusError,
    ModelTimeoutError,
)
from aah.llm.transport import ChatTransport, env_proxy, requested_delay, should_retry
from aah.testing import FakeLLMServer, error_reply, text_reply, tool_reply

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def config(base_url: str, *, retries: int = 0, timeout: float = 5.0, **extra: Any) -> ModelConfig:
    return ModelConfig(
        base_url=base_url,
        model="fake-model",
        api_key=SecretStr("sk-test"),
        retries=retries,
        timeout=timeout,
        **extra,
    )


async def complete(client: ChatClient, text: str, tools: list[dict[str, Any]] | None = None) -> Any:
    try:
        return await client.complete([HumanMessage(text)], tools or [])
    finally:
        await client.aclose()


def failure(cfg: ModelConfig, text: str = "hi") -> ModelError:
    """The ModelError the client raises for one request (and nothing else)."""
    with pytest.raises(ModelError) as caught:
        asyncio.run(complete(ChatClient(cfg), text))
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return caught.value


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


def test_requests_carry_content_tool_choice_and_max_tokens_every_server_accepts() -> None:
    with FakeLLMServer(["one", "two"]) as server:
        client = ChatClient(config(server.base_url, max_tokens=77))
        call = {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1"}
        history = [
            HumanMessage("Weather?"),
            AIMessage("", tool_calls=[call]),
            ToolMessage("sunny", tool_call_id="c1"),
            AIMessage(""),  # an empty answer, re-asked
            HumanMessage("Again?"),
        ]

        async def both() -> None:
            await client.complete(history, [WEATHER])
            await client.complete([HumanMessage("no tools")], max_tokens=12)
            await client.aclose()

        asyncio.run(both())
        with_tools, without = server.requests
    assistants = [m for m in with_tools["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in assistants] == ["", ""]
    assert with_tools["tool_choice"] == "auto" and with_tools["max_tokens"] == 77
    assert "tool_choice" not in without and "tools" not in without
    assert without["max_tokens"] == 12


def test_each_role_sends_its_own_max_tokens_by_default() -> None:
    with FakeLLMServer(["a"] * 4) as server:

        async def one_per_role() -> None:
            for role in ("agent", "human", "grader", "judge"):
                client = ChatClient(config(server.base_url, role=role))
                await client.reply_texts([HumanMessage("hi")])
                await client.aclose()

        asyncio.run(one_per_role())
        sent = [request["max_tokens"] for request in server.requests]
    assert sent == [1024, 300, 512, 256]


def test_the_legacy_function_call_field_is_a_tool_call() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    with RawModelServer([Planned(completion(message))]) as server:
        reply = asyncio.run(complete(ChatClient(config(server.base_url)), "hi", [WEATHER]))
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert reply.text == ""


def test_arguments_sent_as_an_object_or_broken_text_are_read() -> None:
    calls = [
        {"id": "a", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        {"id": "b", "function": {"name": "get_weather", "arguments": '{"city": '}},
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    with RawModelServer([Planned(completion(message))]) as server:
        reply = asyncio.run(complete(ChatClient(config(server.base_url)), "hi", [WEATHER]))
    assert reply.tool_calls[0]["args"] == {"city": "Oslo"}
    assert reply.invalid_tool_calls[0]["args"] == '{"city": '


def test_reasoning_is_split_off_the_answer_and_kept_beside_it() -> None:
    replies = [
        Planned(completion({"content": "Yes: all there.", "reasoning_content": "Let me see."})),
        Planned(completion({"content": "<think>Hmm, tools?</think>\nNo: nothing fits."})),
    ]
    with RawModelServer(replies) as server:
        client = ChatClient(config(server.base_url))

        async def two() -> tuple[AIMessage, AIMessage]:
            first = await client.complete([HumanMessage("a")])
            second = await client.complete([HumanMessage("b")])
            await client.aclose()
            return first, second

        first, second = asyncio.run(two())
    assert first.text == "Yes: all there."
    assert first.additional_kwargs["reasoning"] == "Let me see."
    assert second.text == "No: nothing fits."
    assert second.additional_kwargs["reasoning"] == "Hmm, tools?"


def test_text_replies_come_n_at_a_time_with_their_reasoning() -> None:
    body = {
        "choices": [
            {"message": {"content": "<think>short</think>Pass: fine."}},
            {"message": {"content": "Fail: wrong.", "reasoning": "checked"}},
            {"message": {"content": None}},
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 6},
    }
    with RawModelServer([planned_json(body)]) as server:
        client = ChatClient(config(server.base_url, role="grader"))

        async def votes() -> Any:
            try:
                return await client.reply_texts([HumanMessage("grade")], n=3, temperature=1.0)
            finally:
                await client.aclose()

        replies = asyncio.run(votes())
        sent = server.requests[0]["body"]
    assert replies.texts == ["Pass: fine.", "Fail: wrong.", ""]
    assert [c.reasoning for c in replies.choices] == ["short", "checked", ""]
    assert (replies.prompt_tokens, replies.completion_tokens) == (10, 6)
    assert sent["n"] == 3 and sent["temperature"] == 1.0 and sent["max_tokens"] == 512


def test_the_key_goes_in_the_authorization_header_only() -> None:
    with LocalServer() as server:
        transport = ChatTransport(config(server.url("")))

        async def echo() -> bytes:
            try:
                return await transport.post("/echo", {"model": "fake-model"})
            finally:
                await transport.aclose()

        seen = json.loads(asyncio.run(echo()))
    assert seen["headers"]["authorization"] == "Bearer sk-test"
    assert "sk-test" not in seen["body"]
    assert seen["headers"]["user-agent"].startswith("aah/")


def test_credentials_in_the_base_url_become_basic_auth_and_stay_secret() -> None:
    expected = "Basic " + base64.b64encode(b"alice:s3cr3t-pw").decode()
    echoed = f"bad password s3cr3t-pw in {expected}"
    refusal = planned_json({"error": {"message": echoed}}, status=401)
    with RawModelServer([Planned(completion({"content": "hello"})), refusal]) as server:
        url = server.base_url.replace("http://", "http://alice:s3cr3t-pw@")
        cfg = config(url)
        reply = asyncio.run(complete(ChatClient(cfg), "hi"))
        error = failure(cfg)
        sent = server.requests[0]
    assert reply.text == "hello"
    assert sent["headers"]["authorization"] == expected
    assert "s3cr3t-pw" not in json.dumps(cfg.describe()) and "s3cr3t-pw" not in str(cfg.base_url)
    assert cfg.describe()["auth"] == "basic (alice)"
    assert "s3cr3t-pw" not in str(error) and "refused the credentials" in str(error)
    assert expected.split()[1] not in str(error) and "bad password [redacted]" in str(error)
    assert "check AAH_BASE_URL's user name and password" in str(error)


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
    ("status", "expected"),
    [
        (400, "rejected the request (HTTP 400): scripted failure: fix the request"),
        (401, "refused the credentials (HTTP 401): scripted failure: check AAH_API_KEY"),
        (403, "refused the credentials (HTTP 403)"),
        (404, "model 'fake-model' not found at"),
        (422, "rejected the request (HTTP 422): scripted failure"),
    ],
)
def test_client_errors_are_sent_once_and_carry_the_servers_message(
    status: int, expected: str
) -> None:
    with FakeLLMServer([error_reply(status, "scripted failure"), "never sent"]) as server:
        error = failure(config(server.base_url, retries=3))
        assert len(server.requests) == 1
    assert isinstance(error, ModelStatusError) and error.status == status
    assert error.server_message == "scripted failure" and error.attempts == 1
    assert expected in str(error) and server.base_url in str(error)
    assert "attempts" not in str(error)


def test_a_context_overflow_reaches_the_user_in_the_servers_words() -> None:
    said = (
        "This model's maximum context length is 2048 tokens. However, you requested 3000 "
        "tokens. Please reduce the length of the messages."
    )
    body = {"error": {"message": said, "type": "invalid_request_error", "param": "messages"}}
    with RawModelServer([planned_json(body, status=400)]) as server:
        error = failure(config(server.base_url, retries=3))
        assert len(server.requests) == 1
    assert isinstance(error, ModelStatusError) and error.param == "messages"
    assert f"rejected the request (HTTP 400): {said.rstrip('.')}: fix" in str(error)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_retried_failures_say_how_many_attempts_were_made(status: int) -> None:
    with FakeLLMServer([error_reply(status, "busy")] * 3) as server:
        error = failure(config(server.base_url, retries=2))
        assert len(server.requests) == 3
    assert isinstance(error, ModelStatusError) and error.attempts == 3
    assert f"failed with HTTP {status} after 3 attempts: busy: try again later" in str(error)


def test_a_404_on_a_base_url_without_v1_says_so() -> None:
    body = {"detail": "Not Found"}
    with RawModelServer([planned_json(body, status=404)], path_prefix="") as server:
        error = failure(config(server.base_url))
    assert "base URL may be missing /v1" in str(error) and f"{server.base_url}/v1" in str(error)


def test_a_retry_after_beyond_the_retry_budget_is_not_waited_for() -> None:
    slow = error_reply(429, "come back later")
    assert slow.error is not None
    slow.error.retry_after_ms = 120_000
    with FakeLLMServer([slow, "never sent"]) as server:
        error = failure(config(server.base_url, retries=3))
        assert len(server.requests) == 1
    assert isinstance(error, ModelStatusError) and "(HTTP 429, retry-after-ms 120000)" in str(error)
    assert "raise AAH_LLM_RETRY_BUDGET (now 60 s)" in str(error)


def test_x_should_retry_overrides_the_status() -> None:
    refused = planned_json({"error": {"message": "nope"}}, 503, **{"x-should-retry": "false"})
    with RawModelServer([refused, Planned(completion({"content": "late"}))]) as server:
        error = failure(config(server.base_url, retries=3))
        assert len(server.requests) == 1
    assert isinstance(error, ModelStatusError) and error.status == 503


def test_an_unreachable_endpoint_is_a_connection_error_with_a_one_line_fix() -> None:
    cfg = config(f"http://127.0.0.1:{closed_port()}/v1", retries=1)
    error = failure(cfg)
    assert isinstance(error, ModelConnectionError)
    assert "start the server or fix AAH_BASE_URL" in str(error) and "after 2 attempts" in str(error)


def test_other_roles_name_their_own_settings() -> None:
    cfg = config(f"http://127.0.0.1:{closed_port()}/v1", role="human")
    assert "fix AAH_HUMAN_BASE_URL" in str(failure(cfg))


def test_a_slow_endpoint_times_out() -> None:
    with FakeLLMServer(["too late"], latency_ms=1000) as server:
        error = failure(config(server.base_url, timeout=0.2))
    assert isinstance(error, ModelTimeoutError)
    assert "did not answer within 0.2 s" in str(error)


def test_the_timeout_is_a_deadline_a_trickling_server_cannot_extend() -> None:
    body = completion({"content": "x" * 200})
    with RawModelServer([Planned(body, trickle=0.05)]) as server:
        started = time.perf_counter()
        error = failure(config(server.base_url, timeout=1.0))
        elapsed = time.perf_counter() - started
    assert isinstance(error, ModelTimeoutError)
    assert elapsed < 2.0  # the whole body would take over 10 s


@pytest.mark.parametrize("chunked", [False, True])
def test_a_reply_over_the_size_cap_is_refused(chunked: bool) -> None:
    # Without an announced length (chunked) the client must count what it reads.
    planned = Planned(completion({"content": "y" * 5000}), chunked=chunked)
    with RawModelServer([planned]) as server:
        error = failure(config(server.base_url, max_reply_bytes=1000))
    assert isinstance(error, ModelReplyError)
    assert "more than 1,000 bytes" in str(error) and "AAH_MAX_REPLY_BYTES" in str(error)


def test_a_client_serves_one_event_loop_after_another() -> None:
    with FakeLLMServer(["first", "second"]) as server:
        client = ChatClient(config(server.base_url))
        first = asyncio.run(client.complete([HumanMessage("one")]))
        second = asyncio.run(complete(client, "two"))
    assert (first.text, second.text) == ("first", "second")


def test_retry_rules() -> None:
    assert should_retry(500, {}) and should_retry(429, {}) and should_retry(408, {})
    assert should_retry(409, {})
    assert not should_retry(400, {}) and not should_retry(404, {})
    assert should_retry(400, {"x-should-retry": "true"})
    assert not should_retry(503, {"X-Should-Retry": "false"})
    assert requested_delay({"Retry-After-Ms": "250"}) == 0.25
    assert requested_delay({"retry-after": "2"}) == 2.0
    assert requested_delay({"retry-after": "600"}) == 600.0
    assert requested_delay({"retry-after": "soon"}) is None


def test_proxies_come_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert env_proxy("https://api.openai.com/v1")[0] == "http://proxy.internal:3128"
    assert env_proxy("http://127.0.0.1:8000/v1") == (None, None)
