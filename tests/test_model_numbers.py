"""Numbers a model server sends that are not sane are ignored with a warning, never stored.

A corpus of token counts (huge, negative, fractional, boolean, textual,
non-finite, thousands of digits) goes over real HTTP to the real client:
the reply's message is kept, the count is dropped (0, as when a server
reports no usage), and one warning names the server and the field. An
integer too long for Python's JSON reader is an unreadable reply, one line.
``aah run`` against a server reporting ``1e308`` tokens ends ``finished``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from model_servers import Planned, RawModelServer
from pydantic import SecretStr

from aah.events import ModelCallEvent
from aah.llm import ChatClient, ModelConfig, ModelReplyError
from aah.store import SessionStore


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test warns afresh: its server is new, but its port may be an earlier server's.

    The client warns once per server address and field for the process's
    life, so a port the system hands out again would hide this test's warning.
    """
    from aah.llm import reply

    monkeypatch.setattr(reply, "_WARNED", set())


MESSAGE = '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}]'


def with_usage(usage: str) -> Planned:
    return Planned((MESSAGE + ', "usage": ' + usage + "}").encode())


# (name, the usage JSON as sent)
INSANE: list[tuple[str, str]] = [
    ("1e308 prompt tokens", '{"prompt_tokens": 1e308, "completion_tokens": 3}'),
    ("1e400 (infinite once read)", '{"prompt_tokens": 1e400, "completion_tokens": 3}'),
    ("4,000-digit integer", '{"prompt_tokens": ' + "9" * 4000 + ', "completion_tokens": 3}'),
    ("negative billion", '{"prompt_tokens": -1000000000, "completion_tokens": 3}'),
    ("minus one", '{"prompt_tokens": -1, "completion_tokens": 3}'),
    ("just past a billion", '{"prompt_tokens": 1000000001, "completion_tokens": 3}'),
    ("a fraction", '{"prompt_tokens": 12.5, "completion_tokens": 3}'),
    ("a boolean", '{"prompt_tokens": true, "completion_tokens": 3}'),
    ("a numeric string", '{"prompt_tokens": "12", "completion_tokens": 3}'),
    ("a word", '{"prompt_tokens": "many", "completion_tokens": 3}'),
    ("a list", '{"prompt_tokens": [12], "completion_tokens": 3}'),
    ("an object", '{"prompt_tokens": {"n": 12}, "completion_tokens": 3}'),
    ("NaN-like string", '{"prompt_tokens": "NaN", "completion_tokens": 3}'),
]
# Whole usage values that are no object at all: both counts are dropped.
NO_OBJECT: list[tuple[str, str]] = [
    ("usage a string", '"lots"'),
    ("usage a number", "12"),
    ("usage a list", "[1, 2]"),
    ("usage true", "true"),
]


def config(base_url: str) -> ModelConfig:
    return ModelConfig(base_url=base_url, model="m", api_key=SecretStr("sk-x"), retries=0)


async def counts_both_ways(client: ChatClient) -> list[tuple[int, int, str]]:
    message = await client.complete([HumanMessage("hi")])
    texts = await client.reply_texts([HumanMessage("hi")])
    await client.aclose()
    usage = message.usage_metadata
    assert usage is not None
    return [
        (usage["input_tokens"], usage["output_tokens"], message.text),
        (texts.prompt_tokens, texts.completion_tokens, texts.texts[0]),
    ]


@pytest.mark.parametrize(("name", "usage"), INSANE, ids=[c[0] for c in INSANE])
def test_an_insane_token_count_is_ignored_with_one_warning(
    name: str, usage: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "aah.llm")
    with RawModelServer([with_usage(usage)]) as server:
        got = asyncio.run(counts_both_ways(ChatClient(config(server.base_url))))
    assert got == [(0, 3, "fine"), (0, 3, "fine")]
    warned = [r.getMessage() for r in caplog.records if "usage.prompt_tokens" in r.getMessage()]
    assert len(warned) == 1 and server.base_url in warned[0] and "ignored" in warned[0]
    assert len(warned[0]) < 300


@pytest.mark.parametrize(("name", "usage"), NO_OBJECT, ids=[c[0] for c in NO_OBJECT])
def test_a_usage_that_is_no_object_is_ignored(name: str, usage: str) -> None:
    with RawModelServer([with_usage(usage)]) as server:
        got = asyncio.run(counts_both_ways(ChatClient(config(server.base_url))))
    assert got == [(0, 0, "fine"), (0, 0, "fine")]


@pytest.mark.parametrize(
    ("usage", "expected"),
    [("0", 0), ("1000000000", 1_000_000_000), ("17.0", 17), ("42", 42), ("-0.0", 0)],
)
def test_sane_counts_are_kept(usage: str, expected: int) -> None:
    planned = with_usage(f'{{"prompt_tokens": {usage}, "completion_tokens": {usage}}}')
    with RawModelServer([planned]) as server:
        got = asyncio.run(counts_both_ways(ChatClient(config(server.base_url))))
    assert got == [(expected, expected, "fine")] * 2


def test_an_integer_too_long_to_read_is_an_unreadable_reply() -> None:
    planned = with_usage('{"prompt_tokens": ' + "9" * 5000 + "}")
    with RawModelServer([planned]) as server:
        client = ChatClient(config(server.base_url))
        with pytest.raises(ModelReplyError) as caught:
            asyncio.run(client.complete([HumanMessage("hi")]))
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400 and "not JSON" in message


def test_more_choices_than_asked_for_are_not_counted() -> None:
    choice = '{"message": {"role": "assistant", "content": "Pass"}}'
    body = '{"choices": [' + ", ".join([choice] * 500) + "]}"
    with RawModelServer([Planned(body.encode())]) as server:
        client = ChatClient(config(server.base_url))
        three = asyncio.run(client.reply_texts([HumanMessage("grade")], n=3))
        one = asyncio.run(client.reply_texts([HumanMessage("grade")]))
    assert len(three.texts) == 3 and len(one.texts) == 1


@pytest.mark.parametrize(
    "usage",
    ['{"prompt_tokens": 1e308}', '{"prompt_tokens": -1000000000, "completion_tokens": 10}'],
    ids=["1e308", "negative billion"],
)
def test_aah_run_ends_finished_and_stores_no_insane_count(usage: str, tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    with RawModelServer([with_usage(usage)]) as server:
        env.update(AAH_MODEL="m", AAH_API_KEY="sk-x", AAH_BASE_URL=server.base_url)
        env.update(AAH_LLM_RETRIES="0", NO_COLOR="1")
        args = ["run", "Weather?", "--awareness", "none", "--db", str(db)]
        child = subprocess.run(
            [sys.executable, "-m", "aah", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert "Traceback" not in child.stdout + child.stderr, child.stderr[-2000:]
    assert child.returncode == 0, child.stderr[-600:]
    with SessionStore(db) as store:
        [session] = store.list_sessions()
        calls = [e for e in store.events(session.id) if isinstance(e, ModelCallEvent)]
    assert session.status == "finished"
    for event in calls:
        for count in (event.prompt_tokens, event.completion_tokens):
            assert count is None or 0 <= count <= 1_000_000_000
    assert "-999" not in child.stdout
