"""The simulated user answers an MCP server's form as the user it plays, or declines.

The user's model is the fake OpenAI-compatible server, driven over HTTP. A
reply that is not content fitting the form (not JSON, wrong kinds, extra
fields, too long, too deep) ends in a decline saying why, never a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_support import fake_config

from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.humans import SimulatedHuman, benchmark_prompt_versions
from aah.desk import ElicitationRequest
from aah.events import ModelCallEvent
from aah.runtime import ElicitationAsk
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

FACTS = TaskFacts(
    query="Book me a room in Lyon.",
    original_query="Book a double room in Lyon for Ada, 3 nights, with breakfast.",
    hidden_facts=["Ada", "3 nights", "double room", "breakfast"],
    setting="underspecified",
)
BOOKING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name", "minLength": 1, "maxLength": 60},
        "nights": {"type": "integer", "minimum": 1, "maximum": 14},
        "breakfast": {"type": "boolean"},
        "room": {
            "type": "string",
            "oneOf": [
                {"const": "single", "title": "Single room"},
                {"const": "double", "title": "Double room"},
            ],
        },
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "nights"],
}
FORM = ElicitationRequest.from_params(
    "hotel", {"message": "Booking a room in Lyon: who stays?", "requestedSchema": BOOKING_SCHEMA}
)
LINK = ElicitationRequest.from_params(
    "mail",
    {
        "mode": "url",
        "message": "Sign in",
        "url": "https://auth.example.org/x",
        "elicitationId": "1",
    },
)
GOOD = {"name": "Ada", "nights": 3, "breakfast": True, "room": "double"}


async def _elicit(reply: str, request: ElicitationRequest = FORM) -> tuple[Any, list[Any]]:
    with FakeLLMServer([reply]) as llm:
        human = SimulatedHuman(FACTS, fake_config(llm))
        result = await human.elicit(ElicitationAsk("r1", "s1", request))
        sent = llm.requests
    return result, sent


async def test_the_user_fills_the_form_from_what_it_knows(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session(FACTS.query)
    with FakeLLMServer([json.dumps(GOOD)]) as llm:
        human = SimulatedHuman(FACTS, fake_config(llm), store=store)
        result = await human.elicit(ElicitationAsk("r1", session.id, FORM))
        sent = llm.requests
    assert result.action == "accept" and result.content == GOOD
    assert result.answered_by == "simulated" and result.seconds > 0
    system, asked = (m["content"] for m in sent[0]["messages"])
    assert FACTS.original in system
    assert "hotel" in asked and "Booking a room in Lyon: who stays?" in asked
    assert "- name (Guest name): string; at least 1 characters; at most 60" in asked
    assert "- nights: integer; at least 1; at most 14; required" in asked
    assert '- room: one of "single" (Single room), "double" (Double room); optional' in asked
    assert "- email: string (email); optional" in asked
    assert "DECLINE" in asked
    logged = [e for e in store.events(session.id) if isinstance(e, ModelCallEvent)]
    assert [e.purpose for e in logged] == ["human"] and logged[0].text == json.dumps(GOOD)
    store.close()


def test_the_elicitation_prompt_is_versioned() -> None:
    assert benchmark_prompt_versions()["simulated_elicitation"] == "simulated-elicitation/1"


async def test_reasoning_and_a_code_fence_are_not_the_content() -> None:
    reply = (
        "<think>She said Ada, 3 nights; a {guess}.</think>\n```json\n" + json.dumps(GOOD) + "\n```"
    )
    result, _ = await _elicit(reply)
    assert result.action == "accept" and result.content == GOOD


async def test_text_for_a_number_or_yes_is_read_as_the_desk_reads_it() -> None:
    result, _ = await _elicit('{"name": "Ada", "nights": "3", "breakfast": "yes"}')
    assert result.content == {"name": "Ada", "nights": 3, "breakfast": True}


async def test_decline_is_a_decline() -> None:
    result, _ = await _elicit("DECLINE")
    assert result.action == "decline" and result.why == "the simulated user declined"
    assert result.content is None and result.wire() == {"action": "decline"}


async def test_a_link_is_declined_without_asking_the_model() -> None:
    result, sent = await _elicit(json.dumps(GOOD), LINK)
    assert result.action == "decline" and result.why == "the simulated user opens no links"
    assert sent == []


DEEP = "[" * 1000 + "]" * 1000
DEEP_IN_FIELD = '{"name": ' + "[" * 1000 + "]" * 1000 + ', "nights": 2}'
HOSTILE = [
    ("Sure! Ada, for 3 nights.", "is not JSON"),
    ("", "is not JSON"),
    ("[1, 2]", "is not a JSON object"),
    ('"Ada"', "is not a JSON object"),
    ("null", "is not a JSON object"),
    ('{"name": "Ada", "nights": "three"}', "does not fit the form: nights: a whole number, e.g. 3"),
    ('{"name": "Ada", "nights": 99}', "nights: at most 14, not 99"),
    ('{"name": "Ada", "nights": 2.5}', "nights: a whole number, e.g. 3, not 2.5"),
    ('{"name": "Ada", "nights": NaN}', "nights: a whole number, e.g. 3, not nan"),
    ('{"name": "Ada", "nights": 1e999}', "nights: a whole number, e.g. 3, not inf"),
    # A number of 400 digits in an integer field: refused before any conversion.
    ('{"name": "Ada", "nights": ' + "4" * 400 + "}", "reply: at most 300 digits, not 400"),
    ('{"name": "Ada", "nights": "' + "4" * 400 + '"}', "nights: at most 300 digits, not 400"),
    ('{"name": "Ada", "nights": ' + "4" * 5000 + "}", "at most 300 digits, not 5,000"),
    ('{"name": 7, "nights": 2}', "Guest name is text"),
    ('{"name": ["Ada"], "nights": 2}', "Guest name is text"),
    ('{"name": {"first": "Ada"}, "nights": 2}', "Guest name is text"),
    ('{"name": "Ada", "nights": 2, "card": "4111"}', "the form has no field 'card'"),
    ('{"name": "Ada", "nights": 2, "room": "suite"}', "room is one of: single, double"),
    ('{"name": "Ada", "nights": 2, "breakfast": "maybe"}', "breakfast is yes or no"),
    ('{"name": "Ada", "nights": 2, "email": "ada"}', "email is an email address"),
    ('{"nights": 2}', "Guest name is required"),
    ('{"name": "' + "A" * 61 + '", "nights": 2}', "Guest name takes at most 60 characters"),
    ('{"name": "' + "A" * 100_000 + '", "nights": 2}', "over the cap of 20,000"),
    ("{}", "Guest name is required"),
    (DEEP, "nests deeper than"),
    (DEEP_IN_FIELD, "nests deeper than"),
    ('{"name": "Ada", "nights": 2', "is not JSON"),
    ("DECLINE, but here: " + json.dumps(GOOD), "is not JSON"),
]


@pytest.mark.parametrize(("reply", "why"), HOSTILE, ids=range(len(HOSTILE)))
async def test_a_hostile_reply_is_a_decline_saying_why(reply: str, why: str) -> None:
    result, _ = await _elicit(reply)
    assert result.action == "decline" and result.content is None
    assert result.answered_by == "simulated" and why in result.why
    assert "\n" not in result.why and len(result.why) < 400


async def test_an_optional_form_left_empty_is_a_decline() -> None:
    optional = ElicitationRequest.from_params(
        "hotel",
        {"message": "Any wishes?", "requestedSchema": {"properties": {"note": {"type": "string"}}}},
    )
    result, _ = await _elicit("{}", optional)
    assert (
        result.action == "decline"
        and result.why == "the simulated user filled no field of the form"
    )
