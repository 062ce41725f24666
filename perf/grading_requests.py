"""Grading requests per verdict, with and without server support for ``n``.

Writes N finished sessions (a tool call and a final answer each) to a fresh
database, then grades them with V votes against three fake OpenAI-compatible
servers on loopback: one that honours ``n`` (expect 1 request per verdict),
one that ignores it and answers a single choice as Ollama does (expect V), and
one that refuses ``n > 1`` with HTTP 400 (expect V, plus one refused
request for the whole run). Run: ``.venv/bin/python perf/grading_requests.py [N] [V]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from aah.events import FinalAnswerEvent, ToolCallEvent
from aah.llm import ModelConfig
from aah.runtime.loop import run_async
from aah.scoring.grader.vote import grade_run
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.testing.fake_llm_script import Reply, ScriptedError
from aah.testing.fake_llm_wire import bad_request

RUN = "perf-grading"


class IgnoresNServer(FakeLLMServer):
    """Answers one choice whatever ``n`` asks for."""

    def _answer(self, body: dict[str, Any]) -> list[Reply] | ScriptedError:
        return super()._answer({**body, "n": 1})


class RefusesNServer(FakeLLMServer):
    """Answers HTTP 400 to every request with ``n > 1``."""

    def _answer(self, body: dict[str, Any]) -> list[Reply] | ScriptedError:
        if int(body.get("n") or 1) > 1:
            self._requests.append(body)
            return bad_request("only n=1 is supported")
        return super()._answer(body)


def fill(store: SessionStore, sessions: int) -> None:
    store.create_run(RUN, {"purpose": "perf"})
    for k in range(sessions):
        session = store.open_session(f"Weather in city {k}?", run=RUN, task_id=str(k))
        store.append_event(
            ToolCallEvent(
                session_id=session.id,
                call_id="c1",
                tool="weather__current",
                arguments={"city": f"city {k}"},
                status_code=200,
                ok=True,
                result='{"temperature": 21.5, "conditions": "clear"}',
            )
        )
        store.append_event(FinalAnswerEvent(session_id=session.id, text="It is 21.5 and clear."))
        store.finish_session(session.id, "finished", "It is 21.5 and clear.")


def config_for(server: FakeLLMServer) -> ModelConfig:
    return ModelConfig(
        base_url=server.base_url, model="fake-model", api_key=SecretStr("x"), retries=0
    )


def measure(label: str, server: FakeLLMServer, sessions: int, votes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, SessionStore(Path(tmp) / "perf.db") as store:
        fill(store, sessions)
        with server:
            start = time.perf_counter()
            summary = run_async(
                grade_run(store, RUN, config_for(server), votes=votes, progress=False)
            )
            wall = time.perf_counter() - start
            received = len(server.requests)
    verdicts = summary.graded
    print(
        f"{label:>24}: {verdicts} verdicts, {summary.requests} requests sent "
        f"({received} received) -> {summary.requests / verdicts:.2f} requests per verdict; "
        f"{wall * 1000 / verdicts:.1f} ms per verdict"
    )


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    votes = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    replies = ["Pass: grounded in the tool result.", "Fail: not asked.", "Pass", "**PASS**"]
    print(f"{sessions} sessions, V = {votes} votes")
    measure("server honours n", FakeLLMServer(replies), sessions, votes)
    measure("server ignores n", IgnoresNServer(replies), sessions, votes)
    measure("server refuses n (400)", RefusesNServer(replies), sessions, votes)


if __name__ == "__main__":
    main()
