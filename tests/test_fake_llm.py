"""The fake OpenAI-compatible server, driven by the real openai client and aah's own."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import typer
from ctrl_c import restore_ctrl_c
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import SecretStr, ValidationError
from typer.testing import CliRunner

from aah.errors import AahError
from aah.llm import ChatClient, ModelConfig
from aah.testing import (
    FakeLLMServer,
    Reply,
    Rule,
    Script,
    When,
    error_reply,
    load_script,
    text_reply,
    tool_reply,
)

FIXTURES = Path(__file__).parent / "fixtures"
AGENT_SCRIPT = FIXTURES / "fake_llm_agent.yaml"
FLAKY_SCRIPT = FIXTURES / "fake_llm_flaky.json"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather forecast for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
ASK_HUMAN_TOOL = {
    "type": "function",
    "function": {
        "name": "ask_human",
        "description": "Ask the user a question.",
        "parameters": {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
    },
}


Connect = Callable[..., openai.OpenAI]


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    # One transport for all clients: building a fresh one loads TLS certificates each time.
    with httpx.Client() as client:
        yield client


@pytest.fixture
def connect(http: httpx.Client) -> Connect:
    def client_for(server: FakeLLMServer, max_retries: int = 0) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=server.base_url, api_key="x", max_retries=max_retries, http_client=http
        )

    return client_for


def ask(client: openai.OpenAI, text: str, **extra: Any) -> Any:
    extra.setdefault("model", "fake-model")
    return client.chat.completions.create(messages=[{"role": "user", "content": text}], **extra)


@pytest.fixture
def agent_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(AGENT_SCRIPT) as server:
        yield server


# --- plain replies -----------------------------------------------------------------


def test_text_reply_is_a_full_chat_completion(connect: Connect) -> None:
    with FakeLLMServer(["Hello there, human."]) as server:
        response = ask(connect(server), "hi")
    assert response.object == "chat.completion"
    assert response.id.startswith("chatcmpl-")
    assert response.model == "fake-model"
    [choice] = response.choices
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello there, human."
    assert choice.message.tool_calls is None
    usage = response.usage
    assert usage is not None and usage.completion_tokens > 0 and usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_tool_call_arguments_round_trip(connect: Connect) -> None:
    arguments = {"city": "Zürich", "days": 3, "units": ["C"], "nested": {"a": None}}
    script = ["Checking.", tool_reply("get_weather", arguments)]
    with FakeLLMServer(script) as server:
        client = connect(server)
        ask(client, "skip the first reply")
        first, second = (ask(client, "weather?", tools=[WEATHER_TOOL]) for _ in range(2))
    for response in (first, second):
        choice = response.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content is None
        [call] = choice.message.tool_calls
        assert call.type == "function"
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == arguments
    # The last reply repeats, but every call gets its own id.
    assert first.choices[0].message.tool_calls[0].id != second.choices[0].message.tool_calls[0].id


def test_n_choices_come_from_successive_replies_or_alternatives(connect: Connect) -> None:
    script = ["Pass", "Fail", "Pass", Reply(choices=[text_reply("A"), tool_reply("t")])]
    with FakeLLMServer(script) as server:
        client = connect(server)
        votes = ask(client, "grade", n=3)
        alternatives = ask(client, "pick", n=2)
    assert [c.message.content for c in votes.choices] == ["Pass", "Fail", "Pass"]
    assert [c.index for c in votes.choices] == [0, 1, 2]
    first, second = alternatives.choices
    assert (first.message.content, first.finish_reason) == ("A", "stop")
    assert second.finish_reason == "tool_calls"


# --- rules ---------------------------------------------------------------------------


def test_rules_play_an_ask_then_act_conversation(
    agent_server: FakeLLMServer, connect: Connect
) -> None:
    client = connect(agent_server)
    awareness = ask(client, "Before acting: do you have the information you need?")
    assert awareness.choices[0].message.content.startswith("IDK")

    messages: list[Any] = [{"role": "user", "content": "What is the weather?"}]
    tools = [WEATHER_TOOL, ASK_HUMAN_TOOL]
    for tool_answer in ("Paris, please.", '{"sky": "sunny"}', None):
        response = client.chat.completions.create(
            model="fake-model", messages=messages, tools=tools
        )
        message = response.choices[0].message
        if tool_answer is None:
            assert message.content == "It is sunny in Paris."
            break
        [call] = message.tool_calls
        messages.append(message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_answer})
    called = [m["tool_calls"][0]["function"]["name"] for m in messages if m.get("tool_calls")]
    assert called == ["ask_human", "get_weather"]

    grade = ask(client, "Did the agent succeed?", model="fake-grader")
    assert grade.choices[0].message.content == "Pass"


def test_times_limits_a_rule_then_later_rules_take_over(connect: Connect) -> None:
    script = Script(
        rules=[
            Rule(when=When(has_tools=True), reply=error_reply(500), times=2),
            Rule(when=When(system_contains="careful"), reply=text_reply("Careful answer.")),
            Rule(reply=text_reply("Default answer.")),
        ]
    )
    messages = [{"role": "system", "content": "Be CAREFUL."}, {"role": "user", "content": "x"}]
    with FakeLLMServer(script) as server:
        client = connect(server)
        for _ in range(2):
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
        after = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
        plain = ask(client, "no system prompt")
    assert after.choices[0].message.content == "Careful answer."
    assert plain.choices[0].message.content == "Default answer."


def test_no_matching_rule_fails_at_once_with_a_clear_message(connect: Connect) -> None:
    script = Script(rules=[Rule(when=When(last_role="tool"), reply=text_reply("done"))])
    with FakeLLMServer(script) as server:
        with pytest.raises(openai.BadRequestError, match="no rule matched"):
            ask(connect(server, max_retries=2), "hello")
        assert len(server.requests) == 1


def test_rule_checks_read_content_parts_and_offered_tools(connect: Connect) -> None:
    script = {
        "rules": [
            {"when": {"tool_offered": "get_weather"}, "reply": "weather tool seen"},
            {"when": {"any_message_contains": "needle"}, "reply": "found"},
        ]
    }
    parts = [{"type": "text", "text": "hay"}, {"type": "text", "text": "a NEEDLE here"}]
    with FakeLLMServer(script) as server:
        client = connect(server)
        found = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": parts}]
        )
        offered = ask(client, "needle", tools=[ASK_HUMAN_TOOL, WEATHER_TOOL])
    assert found.choices[0].message.content == "found"
    assert offered.choices[0].message.content == "weather tool seen"


# --- errors, latency, models ---------------------------------------------------------


def test_scripted_errors_raise_the_matching_openai_exceptions(connect: Connect) -> None:
    with FakeLLMServer(FLAKY_SCRIPT) as server:
        client = connect(server)
        with pytest.raises(openai.InternalServerError, match="overloaded"):
            ask(client, "one")
        with pytest.raises(openai.RateLimitError, match="Rate limit"):
            ask(client, "two")
        assert ask(client, "three").choices[0].message.content == "Recovered after two failures."
        ask(client, "four")
        with pytest.raises(openai.BadRequestError, match="scripted replies were used"):
            ask(client, "five: the script is exhausted")


def test_client_retries_through_scripted_failures_quickly(connect: Connect) -> None:
    with FakeLLMServer(FLAKY_SCRIPT) as server:
        started = time.perf_counter()
        response = ask(connect(server, max_retries=2), "eventually")
        elapsed = time.perf_counter() - started
        assert len(server.requests) == 3
    assert response.choices[0].message.content == "Recovered after two failures."
    assert elapsed < 1.0  # retry-after-ms keeps the client from backing off for seconds


def test_latency_delays_every_answer(connect: Connect) -> None:
    with FakeLLMServer(["slow"], latency_ms=100) as server:
        started = time.perf_counter()
        ask(connect(server), "hi")
        assert time.perf_counter() - started >= 0.1


def test_unknown_model_is_not_found_when_the_script_lists_models(
    agent_server: FakeLLMServer,
    connect: Connect,
) -> None:
    client = connect(agent_server)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        ask(client, "hi", model="gpt-nonexistent")
    assert [m.id for m in client.models.list()] == ["fake-model", "fake-grader"]
    assert client.models.retrieve("fake-grader").id == "fake-grader"


def test_any_model_is_served_when_the_script_lists_none(connect: Connect) -> None:
    with FakeLLMServer(["ok"]) as server:
        client = connect(server)
        assert ask(client, "hi", model="whatever-7b").model == "whatever-7b"
        assert [m.id for m in client.models.list()] == ["fake-model"]


def test_unknown_paths_and_bad_bodies_get_openai_style_errors() -> None:
    with FakeLLMServer(["ok"]) as server:
        root = server.base_url
        for url, data, status in [
            (f"{root}/embeddings", b"{}", 404),
            (f"{root}/chat/completions", b"not json", 400),
            (f"{root}/chat/completions", b'{"model": "m", "messages": []}', 400),
        ]:
            request = urllib.request.Request(url, data=data, method="POST")
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=5)
            assert caught.value.code == status
            assert "message" in json.loads(caught.value.read())["error"]


# --- recording and concurrency -------------------------------------------------------


def test_requests_are_recorded_with_messages_and_tools(connect: Connect) -> None:
    with FakeLLMServer(["a"]) as server:
        ask(connect(server), "remember me", tools=[WEATHER_TOOL], temperature=0.2)
        [body] = server.requests
    assert body["messages"] == [{"role": "user", "content": "remember me"}]
    assert body["tools"] == [WEATHER_TOOL]
    assert body["temperature"] == 0.2


def test_concurrent_clients_each_get_a_distinct_reply(connect: Connect) -> None:
    replies = [f"reply {i}" for i in range(40)]
    received: list[str] = []
    lock = threading.Lock()

    def worker(client: openai.OpenAI) -> None:
        for _ in range(5):
            text = ask(client, "go").choices[0].message.content
            with lock:
                received.append(text)

    with FakeLLMServer({"replies": replies, "exhausted": "error"}) as server:
        threads = [threading.Thread(target=worker, args=(connect(server),)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert len(server.requests) == 40
    assert sorted(received) == sorted(replies)


# --- streaming and langchain ---------------------------------------------------------


def test_streaming_sends_chunks_that_add_up_to_the_reply(connect: Connect) -> None:
    with FakeLLMServer(["A streamed answer in several words."]) as server:
        stream = ask(connect(server), "hi", stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "A streamed answer in several words."
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_aahs_client_gets_tool_calls_and_final_text(agent_server: FakeLLMServer) -> None:
    config = ModelConfig(
        base_url=agent_server.base_url, model="fake-model", api_key=SecretStr("x"), retries=0
    )
    tools = [WEATHER_TOOL, ASK_HUMAN_TOOL]

    async def conversation() -> tuple[AIMessage, AIMessage, AIMessage]:
        client = ChatClient(config)
        try:
            history: list[Any] = [HumanMessage("What is the weather?")]
            first = await client.complete(history, tools)
            history += [first, ToolMessage("Paris", tool_call_id=first.tool_calls[0]["id"])]
            second = await client.complete(history, tools)
            history += [second, ToolMessage("sunny", tool_call_id=second.tool_calls[0]["id"])]
            return first, second, await client.complete(history, tools)
        finally:
            await client.aclose()

    first, second, final = asyncio.run(conversation())
    assert [c["name"] for c in first.tool_calls] == ["ask_human"]
    [call] = second.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris", "days": 1})
    assert final.content == "It is sunny in Paris."
    assert final.usage_metadata is not None and final.usage_metadata["total_tokens"] > 0


def test_streamed_tool_call_pieces_add_up_to_the_call(connect: Connect) -> None:
    script = [tool_reply("get_weather", {"city": "Paris", "days": 1})]
    with FakeLLMServer(script) as server:
        stream = ask(connect(server), "weather?", tools=[WEATHER_TOOL], stream=True)
        pieces = [
            d.function for c in stream if c.choices for d in c.choices[0].delta.tool_calls or []
        ]
    name = "".join(p.name or "" for p in pieces if p is not None)
    arguments = "".join(p.arguments or "" for p in pieces if p is not None)
    assert (name, json.loads(arguments)) == ("get_weather", {"city": "Paris", "days": 1})


# --- scripts -------------------------------------------------------------------------


def test_load_script_reads_json_and_yaml() -> None:
    agent = load_script(AGENT_SCRIPT)
    flaky = load_script(FLAKY_SCRIPT)
    assert agent.rules is not None and agent.rules[-1].times == 1
    assert flaky.replies is not None and flaky.replies[0].error is not None


def test_load_script_errors_are_one_line(tmp_path: Path) -> None:
    cases = {
        "missing.yaml": None,
        "bad.json": "{not json",
        "invalid.yaml": "rules:\n  - when: {sky_is: blue}\n    reply: hi\n",
        "both.yaml": "replies: [a]\nrules: [{reply: b}]\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(AahError) as caught:
            load_script(path)
        assert "\n" not in str(caught.value) and name in str(caught.value)


def test_a_reply_is_exactly_one_kind() -> None:
    with pytest.raises(ValidationError):
        Reply(text="hi", error={"status": 500})
    with pytest.raises(ValidationError):
        Reply()
    with pytest.raises(ValidationError):
        Reply(choices=[Reply(choices=[text_reply("nested")])])


def test_set_script_restarts_from_the_new_script(connect: Connect) -> None:
    with FakeLLMServer(["old"]) as server:
        client = connect(server)
        assert ask(client, "1").choices[0].message.content == "old"
        server.set_script(["new"])
        assert ask(client, "2").choices[0].message.content == "new"


# --- command line --------------------------------------------------------------------


def test_cli_rejects_an_invalid_script(tmp_path: Path) -> None:
    # Imported here so a broken sibling command cannot stop the server tests above.
    from aah.cli.fake_llm import fake_llm

    app = typer.Typer()
    app.command()(fake_llm)
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: 3\n")
    result = CliRunner().invoke(app, ["--script", str(bad), "--port", "0"])
    assert isinstance(result.exception, AahError)


def test_cli_reports_a_busy_port_in_one_line() -> None:
    from aah.cli.fake_llm import fake_llm

    app = typer.Typer()
    app.command()(fake_llm)
    with FakeLLMServer(["busy"]) as server:
        result = CliRunner().invoke(
            app, ["--script", str(FLAKY_SCRIPT), "--port", str(server.port)]
        )
    assert isinstance(result.exception, AahError)
    assert "pass another --port" in str(result.exception)


def test_cli_serves_until_interrupted() -> None:
    program = (
        "import typer; from aah.cli.fake_llm import fake_llm; "
        "app = typer.Typer(); app.command()(fake_llm); app()"
    )
    command = [sys.executable, "-c", program, "--script", str(AGENT_SCRIPT), "--port", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, preexec_fn=restore_ctrl_c
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        exports = process.stdout.readline()
        base_url = banner.split(" at ")[-1].strip()
        assert f"AAH_BASE_URL={base_url} AAH_MODEL=fake-model AAH_API_KEY=fake" in exports
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
            assert json.loads(response.read())["data"][0]["id"] == "fake-model"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
