"""Runs one session with a fault injected into a part the model does not control.

Usage: python faulty_session_process.py FAULT DB BASE_URL

FAULT is ``executor`` (the tool executor raises), ``human`` (the human
channel raises) or ``listener`` (an event listener raises). Prints
``status|error`` for the session; exits 0 unless the process itself crashed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from http_server import make_spec
from pydantic import SecretStr

from aah.events import Event, ToolCallEvent
from aah.llm.config import ModelConfig
from aah.runtime.environment import open_runtime
from aah.runtime.humans import HumanReply, HumanRequest, ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.tools.spec import EndpointSpec, ParameterSpec


class BrokenExecutor:
    """An executor whose every call fails the way a bug would."""

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> Any:
        raise KeyError("the executor lost its table")

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> Any:
        return self.call(spec, arguments)

    def close(self) -> None:
        return None


class BrokenHuman:
    """A human channel that breaks when asked."""

    async def ask(self, request: HumanRequest) -> HumanReply:
        raise ConnectionResetError("the answer form went away\nhalfway")


def broken_listener(event: Event) -> None:
    if isinstance(event, ToolCallEvent):
        raise UnicodeEncodeError("ascii", "\u2603", 0, 1, "the terminal cannot show it")


async def main(fault: str, db: Path, base_url: str) -> None:
    spec = make_spec(
        "https://api.example.org/forecast",
        name="forecast",
        params=[ParameterSpec(name="city", required=True)],
    )
    config = ModelConfig(base_url=base_url, model="fake-model", api_key=SecretStr("x"), retries=0)
    human: Any = BrokenHuman() if fault == "human" else ScriptedHuman(["Oslo"])
    listeners = [broken_listener] if fault == "listener" else []
    async with open_runtime(db=db, model=config, human=human, listeners=listeners) as runtime:
        if fault == "executor":
            runtime.executor = BrokenExecutor()
        outcome = await run_session(SessionRequest("Weather where I live?", [spec]), runtime)
    print(f"{outcome.status}|{outcome.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
