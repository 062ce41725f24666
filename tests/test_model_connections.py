"""AAH_MAX_CONNECTIONS: requests in flight per endpoint, and no resent timeouts at 1."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from pydantic import SecretStr

from aah.config import Settings
from aah.llm import ChatClient, ModelConfig, ModelTimeoutError, model_config
from aah.testing.fake_llm import FakeLLMServer
from aah.testing.fake_llm_script import Reply, ScriptedError


class CountingServer(FakeLLMServer):
    """The fake server, counting the most requests it was working on at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = self.most_in_flight = 0
        self._count_lock = threading.Lock()

    def _answer(self, body: dict[str, Any]) -> list[Reply] | ScriptedError:
        with self._count_lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return super()._answer(body)
        finally:
            with self._count_lock:
                self.in_flight -= 1


def config(server: FakeLLMServer, **fields: Any) -> ModelConfig:
    base = {"base_url": server.base_url, "model": "fake-model", "api_key": SecretStr("k")}
    return ModelConfig(**{**base, "timeout": 5, "retries": 0, **fields})


async def _ask_four(cfg: ModelConfig) -> None:
    # Two clients (say, the agent and the simulated user) on one endpoint share its slots.
    first, second = ChatClient(cfg), ChatClient(cfg)
    try:
        await asyncio.gather(
            *(c.complete([HumanMessage("hi")]) for c in (first, second, first, second))
        )
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize(("cap", "most"), [(1, 1), (2, 2), (None, 4)])
async def test_requests_in_flight_per_endpoint_are_capped(cap: int | None, most: int) -> None:
    with CountingServer([{"text": "ok", "delay_ms": 300}]) as server:
        await _ask_four(config(server, max_connections=cap))
        assert server.most_in_flight == most
        assert len(server.requests) == 4


async def test_a_timeout_is_not_resent_to_a_single_slot_server() -> None:
    with FakeLLMServer([{"text": "late", "delay_ms": 1500}]) as server:
        client = ChatClient(config(server, max_connections=1, retries=3, timeout=0.3))
        with pytest.raises(ModelTimeoutError, match="not sent again: AAH_MAX_CONNECTIONS=1"):
            await client.complete([HumanMessage("hi")])
        await client.aclose()
        assert len(server.requests) == 1


async def test_a_timeout_is_resent_when_the_server_takes_concurrent_requests() -> None:
    with FakeLLMServer([{"text": "late", "delay_ms": 1500}]) as server:
        client = ChatClient(config(server, retries=1, timeout=0.3))
        with pytest.raises(ModelTimeoutError, match="after 2 attempts"):
            await client.complete([HumanMessage("hi")])
        await client.aclose()
        assert len(server.requests) == 2


def test_the_cap_is_read_from_the_environment_and_described(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AAH_MAX_CONNECTIONS", "1")
    monkeypatch.setenv("AAH_MODEL", "m")
    cfg = model_config("grader", Settings())
    assert cfg.max_connections == 1 and cfg.describe()["max_connections"] == 1
    monkeypatch.setenv("AAH_MAX_CONNECTIONS", "0")
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings()
