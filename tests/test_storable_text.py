"""Text UTF-8 or SQLite cannot hold (lone surrogates, bytes that are not UTF-8, NUL) never breaks aah.

A corpus of such text in every field of a model reply goes over real HTTP
to the real client: what comes back encodes as UTF-8, with U+FFFD where the
bad character was, and a valid astral character survives unchanged. The
store takes the same texts in every column, and ``aah run`` (a query of
bytes that are not UTF-8, a reply of lone surrogates) and ``aah grade`` (a
vote of lone surrogates) end their sessions ``finished``, never ``running``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from model_servers import Planned, RawModelServer
from pydantic import SecretStr

from aah.events import FinalAnswerEvent, ModelCallEvent
from aah.llm import ChatClient, ModelConfig
from aah.storable import REPLACEMENT, storable, storable_text
from aah.store import SessionStore

ASTRAL = "\U0001f600"

# (name, text as Python holds it, what storable_text makes of it)
TEXTS: list[tuple[str, str, str]] = [
    ("lone high surrogate", "a\ud800b", f"a{REPLACEMENT}b"),
    ("lone low surrogate", "a\udc00b", f"a{REPLACEMENT}b"),
    ("reversed pair", "\udc00\ud800", REPLACEMENT * 2),
    ("high at the end", "end\udbff", f"end{REPLACEMENT}"),
    ("argv byte (surrogateescape)", "caf\udce9", f"caf{REPLACEMENT}"),
    ("NUL", "a\x00b", f"a{REPLACEMENT}b"),
    ("NUL beside non-ASCII", "é\x00", f"é{REPLACEMENT}"),
    ("split pair joins", "\ud83d\ude00", ASTRAL),
    ("astral survives", f"x{ASTRAL}y", f"x{ASTRAL}y"),
    ("plain text survives", "Weather in Oslo?", "Weather in Oslo?"),
    ("BOM survives", "\ufeffhi", "\ufeffhi"),
]


@pytest.mark.parametrize(("name", "text", "expected"), TEXTS, ids=[t[0] for t in TEXTS])
def test_storable_text_replaces_only_what_cannot_be_stored(
    name: str, text: str, expected: str
) -> None:
    assert storable_text(text) == expected
    storable_text(text).encode("utf-8")
    assert storable({text: [text]}) == {expected: [expected]}


def reply(raw_message: str, *, top: str = "") -> Planned:
    """A completion whose message is the JSON text ``raw_message`` (escapes kept as written)."""
    body = '{"id": "c1", "choices": [{"index": 0, "message": ' + raw_message
    body += ', "finish_reason": "stop"}]' + top + "}"
    return Planned(body.encode("utf-8", "surrogatepass"))


def call(name: str = '"f"', arguments: str = '"{}"', call_id: str = '"c1"') -> str:
    function = '{"name": ' + name + ', "arguments": ' + arguments + "}"
    return (
        '{"role": "assistant", "content": null, "tool_calls": [{"id": '
        + call_id
        + (', "type": "function", "function": ' + function + "}]}")
    )


S = "\\ud800"  # a lone high surrogate, as a JSON escape
# (name, reply): each holds text a UTF-8 encoder refuses, in another field.
REPLIES: list[tuple[str, Planned]] = [
    ("content", reply('{"content": "hi ' + S + ' there"}')),
    ("content low", reply('{"content": "\\udc00"}')),
    ("content reversed pair", reply('{"content": "\\udc00\\ud800"}')),
    ("content NUL", reply('{"content": "a\\u0000b"}')),
    ("tool-call name", reply(call(name=f'"get{S}"'))),
    ("call id", reply(call(call_id=f'"id{S}"'))),
    ("arguments string", reply(call(arguments='"{\\"q\\": \\"' + S + '\\"}"'))),
    ("arguments key", reply(call(arguments='"{\\"' + S + '\\": 1}"'))),
    ("arguments object", reply(call(arguments='{"q": "' + S + '"}'))),
    ("arguments object key", reply(call(arguments='{"' + S + '": "x"}'))),
    ("arguments not JSON", reply(call(arguments='"{' + S + '"'))),
    ("reasoning_content", reply('{"content": "ok", "reasoning_content": "' + S + '"}')),
    ("think block", reply('{"content": "<think>' + S + '</think>ok"}')),
    ("model", reply('{"content": "ok"}', top=f', "model": "m{S}"')),
    ("usage key", reply('{"content": "ok"}', top=f', "usage": {{"{S}": 1}}')),
    ("legacy function_call", reply('{"content": null, "function_call": {"name": "' + S + '"}}')),
    ("invalid UTF-8 bytes", Planned(b'{"choices": [{"message": {"content": "caf\xe9 \xff"}}]}')),
    ("overlong encoding", Planned(b'{"choices": [{"message": {"content": "\xc0\xaf"}}]}')),
    ("UTF-8 BOM", Planned(b'\xef\xbb\xbf{"choices": [{"message": {"content": "ok"}}]}')),
]


def config(base_url: str) -> ModelConfig:
    return ModelConfig(base_url=base_url, model="m", api_key=SecretStr("sk-x"), retries=0)


def strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings_of(k) + strings_of(v)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in strings_of(item)]
    return []


async def both_ways(client: ChatClient) -> tuple[AIMessage, list[str]]:
    message = await client.complete([HumanMessage("hi")], [])
    texts = await client.reply_texts([HumanMessage("hi")])
    await client.aclose()
    return message, [c.answer + c.reasoning for c in texts.choices]


@pytest.mark.parametrize(("name", "planned"), REPLIES, ids=[r[0] for r in REPLIES])
def test_every_reply_field_comes_out_storable(name: str, planned: Planned) -> None:
    with RawModelServer([planned]) as server:
        message, texts = asyncio.run(both_ways(ChatClient(config(server.base_url))))
    dumped = message.model_dump()
    found = strings_of(dumped) + texts
    for text in found:
        text.encode("utf-8")  # raises on a lone surrogate
        assert "\x00" not in text
    if name == "UTF-8 BOM":
        assert message.text == "ok"
    elif name != "usage key":  # usage keys are read, never kept
        assert any(REPLACEMENT in text for text in found), f"{name}: the replacement is not visible"


def test_a_valid_astral_character_survives_the_reply_decoder() -> None:
    planned = reply('{"content": "ok \\ud83d\\ude00 ' + ASTRAL + '"}')
    with RawModelServer([planned]) as server:
        message, texts = asyncio.run(both_ways(ChatClient(config(server.base_url))))
    assert message.text == f"ok {ASTRAL} {ASTRAL}" and texts == [message.text]


@pytest.mark.parametrize(("name", "text", "expected"), TEXTS, ids=[t[0] for t in TEXTS])
def test_the_store_takes_every_text_and_keeps_the_replacement(
    name: str, text: str, expected: str, tmp_path: Path
) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session = store.open_session(text)
        store.append_event(
            ModelCallEvent(session_id=session.id, model=text, text=text, reasoning=text)
        )
        store.append_event(FinalAnswerEvent(session_id=session.id, text=text))
        request = store.humans.create_human_request(session.id, text, {text: text})
        store.humans.answer_human_request(request.id, "someone", text)
        store.finish_session(session.id, "finished", text)
        store.create_run("r", {text: text})
        store.add_grade(session.id, "g", "v1", [{text: text}], "pass")
        stored = store.get_session(session.id)
        events = store.events(session.id)
        asked = store.humans.get_human_request(request.id)
        [grade] = store.grades(session.id)
    assert stored is not None and stored.query == expected and stored.final_answer == expected
    assert asked is not None and (asked.question, asked.answer) == (expected, expected)
    assert grade.votes == [{expected: expected}]
    assert [getattr(e, "text", None) for e in events if isinstance(e, FinalAnswerEvent)] == [
        expected
    ]


def aah(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    # The query may hold bytes that are not UTF-8: argv is given as bytes.
    argv = [os.fsencode(sys.executable), b"-m", b"aah", *(os.fsencode(a) for a in args)]
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, timeout=120, errors="replace"
    )


def base_env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update(
        NO_COLOR="1", AAH_MODEL="m", AAH_API_KEY="sk-x", AAH_BASE_URL=base_url, AAH_LLM_TIMEOUT="5"
    )
    env["AAH_LLM_RETRIES"] = "0"
    return env


def sessions(db: Path) -> list[tuple[str, str, str | None]]:
    with SessionStore(db) as store:
        return [(s.status, s.query, s.final_answer) for s in store.list_sessions()]


# (name, query as argv holds it, the reply's message)
RUNS = [
    ("query of bytes that are not UTF-8", "caf\udce9 \udcff?", '{"content": "Sunny."}'),
    ("query with NUL-free control bytes", "tab\there", '{"content": "Sunny."}'),
    ("final answer of lone surrogates", "Weather?", '{"content": "hi \\ud800 \\udc00"}'),
]


@pytest.mark.parametrize(("name", "query", "message"), RUNS, ids=[r[0] for r in RUNS])
def test_aah_run_ends_its_session_whatever_the_text(
    name: str, query: str, message: str, tmp_path: Path
) -> None:
    db = tmp_path / "run.db"
    with RawModelServer([reply(message)]) as server:
        child = aah(
            ["run", query, "--awareness", "none", "--db", str(db)], base_env(server.base_url)
        )
    assert "Traceback" not in child.stderr + child.stdout, child.stderr[-2000:]
    assert child.returncode == 0, child.stderr[-600:]
    [(status, stored_query, answer)] = sessions(db)
    assert status == "finished"
    assert stored_query == storable_text(query)
    assert answer is not None
    (stored_query + answer).encode("utf-8")


def test_aah_grade_stores_a_vote_of_lone_surrogates(tmp_path: Path) -> None:
    db = tmp_path / "grade.db"
    with SessionStore(db) as store:
        store.create_run("g", {"model": "agent-model"})
        session = store.open_session("Weather in Oslo?", run="g")
        store.append_event(FinalAnswerEvent(session_id=session.id, text="Sunny."))
        store.finish_session(session.id, "finished", "Sunny.")
    vote = '{"content": "Pass \\ud800 because \\udc00 it answered"}'
    with RawModelServer([reply(vote)]) as server:
        child = aah(
            ["grade", "--run", "g", "--votes", "1", "--db", str(db)], base_env(server.base_url)
        )
    assert "Traceback" not in child.stderr + child.stdout, child.stderr[-2000:]
    assert child.returncode == 0, child.stderr[-600:]
    with SessionStore(db) as store:
        [grade] = store.grades(session.id)
    assert grade.verdict == "pass"
    assert REPLACEMENT in json.dumps(grade.votes, ensure_ascii=False)
