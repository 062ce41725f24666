"""A real MCP server sends every hostile question of the corpus: each gets an answer, at once.

The server (``mcp_elicit_raw_server.py``) is raw JSON-RPC over stdio, so it
can write what the SDK's server would not (a schema nested 600 levels, a
mode nested 50,000). aah's client (``McpConnections``) hands each question
to a session's elicitor, as a tool call of a session does; the tool's
result is what the server received. A question aah cannot show is declined
(a decline the server reads, or a JSON-RPC error), never left unanswered;
one aah shows is filled by the channel and accepted. Where the SDK changes
a question on its way (``mcp_outcome`` in the corpus, ``mcp_why`` says how),
the server still gets its answer at once.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_elicitation import fitting_content, load_cases

from aah.desk import ElicitationRequest, ElicitationResult
from aah.events import ElicitationAskedEvent, Event
from aah.runtime.elicitations import SessionElicitor
from aah.runtime.humans import ScriptedHuman

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import McpConnections, parse_server  # noqa: E402 - after the skip

SERVER = Path(__file__).resolve().parent / "mcp_elicit_raw_server.py"
TARGET = f"hotel={shlex.quote(sys.executable)} {shlex.quote(str(SERVER))}"
CASES = load_cases()


@pytest.fixture(scope="module")
def pool() -> Iterator[McpConnections]:
    connections = McpConnections(start_timeout=60, call_timeout=30)
    try:
        yield connections
    finally:
        connections.close()


def _filling(request: ElicitationRequest) -> ElicitationResult:
    content = fitting_content(request) if request.mode == "form" else None
    return ElicitationResult(action="accept", content=content)


async def _ask(pool: McpConnections, index: int) -> tuple[dict[str, Any], list[Event]]:
    """What the server received for case ``index``, and the session's events."""
    events: list[Event] = []
    elicitor = SessionElicitor("s1", ScriptedHuman([], elicitations=_filling), events.append)

    async def answer(server: str, params: dict[str, Any]) -> dict[str, Any]:
        return (await elicitor.answer(server, params)).wire()

    reply = await pool.acall(parse_server(TARGET), "ask", {"case": index}, answer)
    [block] = reply.content
    return json.loads(block["text"]), events


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case["why"][:60] for case in CASES])
async def test_every_hostile_question_gets_an_answer_the_server_reads(
    pool: McpConnections, index: int
) -> None:
    case = CASES[index]
    received, events = await _ask(pool, index)
    asked = [e for e in events if isinstance(e, ElicitationAskedEvent)]
    if case["outcome"] == "shown" and "mcp_outcome" not in case:
        assert received["result"]["action"] == "accept"
        [shown] = asked
        assert not shown.refused
        return
    # Refused by the desk (logged in the session), by the transport's bounds, or by
    # the SDK's own reading of the params (mcp_why): answered at once, never silence.
    answer = received.get("result") or received["error"]
    if case.get("mcp_outcome") != "shown":
        assert answer == {"action": "decline"} or answer["message"]
    for refused in asked:
        assert refused.refused and "\n" not in refused.refused


PAST_BOUNDS = [i for i, case in enumerate(CASES) if "nest" in case.get("build", {})]


@pytest.mark.parametrize("index", PAST_BOUNDS, ids=[CASES[i]["why"][:40] for i in PAST_BOUNDS])
async def test_a_question_past_the_transports_bounds_is_logged_in_the_session(
    pool: McpConnections, index: int
) -> None:
    received, events = await _ask(pool, index)
    assert received["result"] == {"action": "decline"}
    [asked] = [e for e in events if isinstance(e, ElicitationAskedEvent)]
    assert asked.refused.startswith("hotel's elicitation could not be read: MCP server hotel")
