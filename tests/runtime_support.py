"""Helpers for runtime tests: a model config on the fake server, a runtime, scripts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from aah.llm.config import ModelConfig
from aah.runtime.environment import open_runtime
from aah.runtime.humans import HumanChannel, ScriptedHuman
from aah.runtime.session import Runtime
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer


def fake_config(server: FakeLLMServer, retries: int = 0) -> ModelConfig:
    return ModelConfig(
        base_url=server.base_url,
        model="fake-model",
        api_key=SecretStr("sk-test-secret-key-123456"),
        timeout=10,
        retries=retries,
    )


@asynccontextmanager
async def runtime_on(
    server: FakeLLMServer, db: Path, human: HumanChannel | None = None, **kwargs: Any
) -> AsyncIterator[Runtime]:
    async with open_runtime(
        db=db, model=fake_config(server), human=human or ScriptedHuman([]), **kwargs
    ) as runtime:
        yield runtime


def awareness_rule(answer: str) -> dict[str, Any]:
    return {"when": {"has_tools": False}, "reply": answer}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def ask_then_call_script(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Awareness IDK; ask which city; call ``tool``; answer with its result."""
    return {
        "rules": [
            awareness_rule("IDK: the city is not given."),
            {"when": {"last_tool_name": tool}, "reply": "Done: the forecast is above."},
            {"when": {"last_tool_name": "ask_human"}, "reply": call(tool, **arguments)},
            {"when": {"has_tools": True}, "reply": call("ask_human", question="Which city?")},
        ]
    }


# A stateless agent for queue tests: every session asks "Which city?" once, then answers.
ASK_FIRST_SCRIPT: dict[str, Any] = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "IDK: I may need more details."},
        {"when": {"last_tool_name": "ask_human"}, "reply": "Done: here is what you asked for."},
        {"when": {"has_tools": True}, "reply": call("ask_human", question="Which city?")},
    ]
}


def waiting_request(store: SessionStore, **request: Any) -> str:
    """A waiting session with one pending "Which city?" request; the request's id."""
    session = store.open_session("Weather where I live?")
    store.set_status(session.id, "waiting")
    return store.humans.create_human_request(session.id, "Which city?", **request).id
