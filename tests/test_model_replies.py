"""A corpus of malformed model replies: each is one readable ModelReplyError, nothing else.

Every shape goes over real HTTP to the real client, through both the agent's
``complete`` and the text replies that the simulated human, the grader and
the judge read, so no role meets a shape the client let through.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from model_servers import Planned, RawModelServer, completion
from pydantic import SecretStr

from aah.llm import ChatClient, ModelConfig, ModelError, ModelReplyError


def shape(body: Any, *, status: int = 200, content_type: str = "application/json") -> Planned:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Planned(raw, status, {"Content-Type": content_type})


def with_message(message: Any) -> Planned:
    return Planned(completion(message))


def with_call(call: Any) -> Planned:
    return with_message({"role": "assistant", "content": None, "tool_calls": [call]})


def deep_array(depth: int) -> bytes:
    return b'{"choices": ' + b"[" * depth + b"]" * depth + b"}"


OK_MESSAGE = {"role": "assistant", "content": "fine"}

# (name, planned answer, words the one-line message must contain)
CORPUS: list[tuple[str, Planned, str]] = [
    ("choices null", shape({"choices": None}), "choices is null, expected a list"),
    ("choices object", shape({"choices": {"0": OK_MESSAGE}}), "choices is an object"),
    ("choices string", shape({"choices": "fine"}), "choices is a string"),
    ("choices empty", shape({"choices": []}), "a reply without choices"),
    ("choices missing", shape({"id": "x", "object": "chat.completion"}), "choices is missing"),
    ("choice null", shape({"choices": [None]}), "choices[0] is null, expected an object"),
    ("choice a string", shape({"choices": ["fine"]}), "choices[0] is a string"),
    ("message missing", shape({"choices": [{"index": 0}]}), "choices[0].message is missing"),
    ("message null", with_message(None), "choices[0].message is null"),
    ("message a string", with_message("fine"), "choices[0].message is a string"),
    ("message a list", with_message([OK_MESSAGE]), "choices[0].message is a list"),
    ("content an object", with_message({"content": {"text": "hi"}}), "content is an object"),
    ("content a number", with_message({"content": 42}), "content is a number"),
    ("content a list", with_message({"content": [{"type": "text"}]}), "content is a list"),
    ("tool_calls an object", with_message({"tool_calls": {"id": "c"}}), "tool_calls is an object"),
    (
        "tool_calls a string",
        with_message({"tool_calls": "get_weather()"}),
        "tool_calls is a string",
    ),
    ("tool call null", with_call(None), "tool_calls[0] is null"),
    ("tool call a string", with_call("get_weather"), "tool_calls[0] is a string"),
    ("function missing", with_call({"id": "c1", "type": "function"}), "function is missing"),
    ("function a string", with_call({"id": "c1", "function": "f"}), "function is a string"),
    ("integer name", with_call({"id": "c1", "function": {"name": 7}}), "name is a number"),
    ("integer id", with_call({"id": 1, "function": {"name": "f"}}), "id is a number"),
    (
        "arguments a number",
        with_call({"id": "c1", "function": {"name": "f", "arguments": 5}}),
        "arguments is a number",
    ),
    (
        "function_call a string",
        with_message({"content": None, "function_call": "f()"}),
        "function_call is a string",
    ),
    (
        "NaN in usage",
        shape(b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": NaN}}'),
        "not JSON",
    ),
    (
        "Infinity in content",
        shape(b'{"choices": [{"message": {"content": Infinity}}]}'),
        "not JSON",
    ),
    # A usage that is no count is ignored, not refused: test_model_numbers.py.
    (
        "finish_reason an object",
        shape({"choices": [{"message": OK_MESSAGE, "finish_reason": {"why": 1}}]}),
        "finish_reason is an object",
    ),
    (
        "html page with 200",
        shape(b"<html><body>Welcome to nginx!</body></html>", content_type="text/html"),
        "not JSON: '<html><body>Welcome to nginx!",
    ),
    ("plain text with 200", shape(b"hello there", content_type="text/plain"), "not JSON"),
    (
        "error object with 200",
        shape({"error": {"message": "model is loading", "code": 503}}),
        "an error with status 200: model is loading",
    ),
    ("error string with 200", shape({"error": "boom"}), "an error with status 200: boom"),
    ("empty body", shape(b""), "an empty reply (HTTP 200)"),
    ("whitespace body", shape(b"  \n "), "an empty body"),
    ("no content 204", Planned(b"", 204, {}), "an empty reply (HTTP 204)"),
    ("a JSON list", shape([{"message": OK_MESSAGE}]), "JSON that is a list, not an object"),
    ("a JSON string", shape("fine"), "JSON that is a string, not an object"),
    ("a JSON null", shape(b"null"), "JSON that is null, not an object"),
    ("truncated JSON", shape(b'{"choices": [{"message": {"content": "hal'), "not JSON"),
    ("not UTF-8", shape(b"\xff\xfe\x00{"), "not JSON"),
    ("200k-deep array", shape(deep_array(200_000)), "nested deeper than 100 levels"),
    ("101-deep array", shape(deep_array(101)), "nested deeper than 100 levels"),
    # Found by the generated answers (test_peer_read): naming its type overflowed a float.
    ("a 309-digit number", shape(b"7" * 309), "JSON that is a number, not an object"),
    ("a 5000-digit number", shape(b"7" * 5000), "not JSON"),
    ("model an object", shape({"choices": [{"message": OK_MESSAGE}], "model": {}}), "model is"),
]


def config(base_url: str) -> ModelConfig:
    return ModelConfig(base_url=base_url, model="m", api_key=SecretStr("sk-x"), retries=2)


async def ask_both_ways(client: ChatClient) -> list[BaseException]:
    """The error each reading path raised (the agent's message, then text replies)."""
    errors: list[BaseException] = []
    for ask in (
        lambda: client.complete([HumanMessage("hi")]),
        lambda: client.reply_texts([HumanMessage("hi")], n=3),
    ):
        try:
            await ask()
        except BaseException as exc:  # noqa: B036 - the test is that only one type comes out
            errors.append(exc)
    await client.aclose()
    return errors


def test_the_corpus_is_large_and_named_once() -> None:
    names = [name for name, _, _ in CORPUS]
    assert len(names) >= 25 and len(set(names)) == len(names)


@pytest.mark.parametrize(("name", "planned", "words"), CORPUS, ids=[c[0] for c in CORPUS])
def test_a_malformed_reply_is_one_readable_model_reply_error(
    name: str, planned: Planned, words: str
) -> None:
    with RawModelServer([planned]) as server:
        errors = asyncio.run(ask_both_ways(ChatClient(config(server.base_url))))
        sent = len(server.requests)
    assert len(errors) == 2, f"{name}: a path accepted the reply"
    for error in errors:
        assert type(error) is ModelReplyError, f"{name}: {type(error).__name__}: {error}"
        message = str(error)
        assert "\n" not in message and len(message) < 400
        assert message.startswith(f"the model server at {server.base_url} sent ")
        assert words in message
    assert sent == 2  # a malformed reply is not a reason to send the request again


@pytest.mark.parametrize(
    "planned",
    [
        Planned(b'{"choices": []}', headers={"Content-Encoding": "gzip"}),
        Planned(b'{"choices": [', length=500, headers={"Connection": "close"}),
    ],
    ids=["gzip lie", "cut short"],
)
def test_a_broken_transfer_is_a_model_error_too(planned: Planned) -> None:
    with RawModelServer([planned]) as server:
        cfg = config(server.base_url).model_copy(update={"retries": 0, "timeout": 2.0})
        errors = asyncio.run(ask_both_ways(ChatClient(cfg)))
    assert len(errors) == 2
    for error in errors:
        assert isinstance(error, ModelError), f"{type(error).__name__}: {error}"
        assert "\n" not in str(error) and server.base_url in str(error)
