"""Runs one queued session in its own process, for the restart test.

Usage: python session_process.py DB BASE_URL RUN TASK
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from http_server import make_spec
from pydantic import SecretStr

from aah.llm.config import ModelConfig
from aah.runtime.environment import open_runtime
from aah.runtime.humans import QueueHuman
from aah.runtime.session import SessionRequest, run_session
from aah.store.sessions import SessionStore
from aah.tools.spec import ParameterSpec


async def main(db: Path, base_url: str, run: str, task: str) -> None:
    spec = make_spec(
        "https://api.example.org/forecast",
        name="forecast",
        params=[ParameterSpec(name="city", required=True)],
    )
    config = ModelConfig(base_url=base_url, model="fake-model", api_key=SecretStr("x"), retries=0)
    human = QueueHuman(SessionStore(db), poll_seconds=0.05)
    async with open_runtime(db=db, model=config, human=human) as runtime:
        request = SessionRequest("Weather where I live?", [spec], run=run, task_id=task)
        outcome = await run_session(request, runtime)
    print(f"{outcome.status}|{outcome.final_answer}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]))
