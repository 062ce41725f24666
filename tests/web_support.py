"""Helpers for the web app tests: serve the app on a free port, seed questions, a runner process.

Run as a script (``python web_support.py DB BASE_URL``), it is the runner: one
session whose agent asks a question through the queue and then finishes,
printing ``<status>|<final answer>``.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aah.store.sessions import HumanRequestRecord, SessionStore

if TYPE_CHECKING:
    from aah.ui.web.auth import WebAuth

ORIGINAL_QUERY = "What is the weather in Porto today? I live in Porto."
AGENT_QUESTION = "Which <b>city</b> do you mean?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_app(
    db: Path,
    auth: WebAuth | None = None,
    trusted_proxies: Sequence[str] = (),
    **options: Any,
) -> Iterator[str]:
    """The web app on ``db``, served on 127.0.0.1 at a free port; yields its URL.

    ``options`` go to ``build_app`` (``lease_seconds``, ``undo_seconds``...).
    """
    # Imported here: the runner script needs no Gradio.
    from aah.ui.web.app import build_app, launch_app
    from aah.ui.web.auth import WebAuth

    app = build_app(db, auth=auth or WebAuth(), **options)
    url = launch_app(app, port=free_port(), block=False, trusted_proxies=trusted_proxies)
    try:
        yield url
    finally:
        app.close()


def seed_request(
    db: Path,
    question: str = "Which city?",
    *,
    k: int = 1,
    context: dict[str, Any] | None = None,
    query: str = "Weather?",
) -> HumanRequestRecord:
    """A waiting session with one pending question, as a queued runner leaves it."""
    store = SessionStore(db)
    session = store.open_session(query, setting="underspecified")
    store.set_status(session.id, "waiting")
    base = {"query": query, "original_query": ORIGINAL_QUERY, "setting": "underspecified"}
    return store.humans.create_human_request(session.id, question, base | (context or {}), k=k)


def weather_script() -> dict[str, Any]:
    """Awareness IDK; ask which city; call the forecast; answer."""
    ask = {"tool_calls": [{"name": "ask_human", "arguments": {"question": AGENT_QUESTION}}]}
    forecast = {"tool_calls": [{"name": "local__forecast", "arguments": {"city": "Porto"}}]}
    return {
        "rules": [
            {"when": {"has_tools": False}, "reply": "IDK: the city is not given."},
            {"when": {"last_tool_name": "local__forecast"}, "reply": "Porto: sunny, 21 C."},
            {"when": {"last_tool_name": "ask_human"}, "reply": forecast},
            {"when": {"has_tools": True}, "reply": ask},
        ]
    }


def start_runner(db: Path, base_url: str) -> subprocess.Popen[str]:
    """This file as a script: a runner process with one queued session."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), str(db), base_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _run_one(db: Path, base_url: str) -> str:
    from http_server import make_spec
    from pydantic import SecretStr

    from aah.llm.config import ModelConfig
    from aah.runtime.environment import open_runtime
    from aah.runtime.humans import QueueHuman
    from aah.runtime.session import SessionRequest, run_session
    from aah.tools.spec import ParameterSpec

    spec = make_spec(
        "https://api.example.org/forecast",
        name="forecast",
        params=[ParameterSpec(name="city", required=True)],
    )
    config = ModelConfig(base_url=base_url, model="fake-model", api_key=SecretStr("x"), retries=0)
    human = QueueHuman(SessionStore(db), poll_seconds=0.1)
    async with open_runtime(db=db, model=config, human=human) as runtime:
        request = SessionRequest(
            "What is the weather today?",
            [spec],
            setting="underspecified",
            context={"original_query": ORIGINAL_QUERY},
        )
        outcome = await run_session(request, runtime)
    return f"{outcome.status}|{outcome.final_answer}"


if __name__ == "__main__":
    print(asyncio.run(_run_one(Path(sys.argv[1]), sys.argv[2])), flush=True)
