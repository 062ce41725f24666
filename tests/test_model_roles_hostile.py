"""Every role meets bad model servers the same way: one readable line, nothing left running.

The agent (a whole session), the simulated human, the grader and the
behaviour judge each talk to a tiny server on 127.0.0.1 that answers with a
malformed reply, an HTTP 400 that explains itself, or a trickle of bytes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from model_servers import Planned, RawModelServer
from pydantic import SecretStr

from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.humans import SimulatedHuman
from aah.errors import AahError
from aah.events import FinalAnswerEvent
from aah.llm import ModelConfig
from aah.runtime.environment import open_runtime
from aah.runtime.humans import HumanRequest, ScriptedHuman
from aah.runtime.session import SessionRequest, run_session
from aah.scoring.behavior import classify_with_llm
from aah.scoring.grader import grade_session
from aah.store import SessionStore

OVERFLOW = "maximum context length is 2048 tokens, you requested 3000"
ANSWERS = [
    (
        "html page",
        Planned(b"<html>oops</html>", headers={"Content-Type": "text/html"}),
        "sent a body that is not JSON",
    ),
    (
        "choices [null]",
        Planned(json.dumps({"choices": [None]}).encode()),
        "choices[0] is null",
    ),
    (
        "context overflow",
        Planned(json.dumps({"error": {"message": OVERFLOW}}).encode(), status=400),
        f"rejected the request (HTTP 400): {OVERFLOW}",
    ),
    ("trickle", Planned(b'{"choices": []}' * 40, trickle=0.1), "did not answer within 1.5 s"),
]
Role = Callable[[ModelConfig, Path], Awaitable[str]]


def config(server: RawModelServer, role: str) -> ModelConfig:
    return ModelConfig(
        base_url=server.base_url,
        model="m",
        api_key=SecretStr("sk-role-test"),
        timeout=1.5,  # generous: a loaded machine must not turn an error reply into a timeout
        retries=1,
        role=role,  # type: ignore[arg-type]
    )


async def as_agent(cfg: ModelConfig, tmp: Path) -> str:
    async with open_runtime(db=tmp / "s.db", model=cfg, human=ScriptedHuman([])) as runtime:
        outcome = await run_session(SessionRequest("Weather in Oslo?"), runtime)
        record = runtime.store.get_session(outcome.session_id)
    assert outcome.status == "error" and record is not None and record.status == "error"
    return outcome.error or ""


async def as_human(cfg: ModelConfig, tmp: Path) -> str:
    facts = TaskFacts(query="Weather?", original_query="Weather in Oslo?", hidden_facts=["Oslo"])
    with pytest.raises(AahError) as caught:
        await SimulatedHuman(facts, cfg).ask(
            HumanRequest(request_id="r1", session_id="s1", question="Which city?")
        )
    return str(caught.value)


async def as_grader(cfg: ModelConfig, tmp: Path) -> str:
    with SessionStore(tmp / "g.db") as store:
        session = store.open_session("Weather in Oslo?")
        store.append_event(FinalAnswerEvent(session_id=session.id, text="Sunny."))
        store.finish_session(session.id, "finished", "Sunny.")
        with pytest.raises(AahError) as caught:
            await grade_session(store, session.id, cfg, votes=3)
    return str(caught.value)


async def as_judge(cfg: ModelConfig, tmp: Path) -> str:
    with pytest.raises(AahError) as caught:
        await classify_with_llm("Which city?", ["get_weather"], cfg)
    return str(caught.value)


ROLES: dict[str, tuple[str, Role]] = {
    "agent": ("agent", as_agent),
    "human": ("human", as_human),
    "grader": ("grader", as_grader),
    "judge": ("judge", as_judge),
}


@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize(("name", "planned", "words"), ANSWERS, ids=[a[0] for a in ANSWERS])
async def test_each_role_reports_a_bad_server_in_one_line(
    role: str, name: str, planned: Planned, words: str, tmp_path: Path
) -> None:
    role_name, act = ROLES[role]
    with RawModelServer([planned]) as server:
        message = await act(config(server, role_name), tmp_path)
    assert "\n" not in message and "Traceback" not in message
    assert words in message and server.base_url in message
    assert "sk-role-test" not in message
