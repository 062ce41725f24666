"""The tools an agent was offered go with an MCP form, bounded, and the faces show them (issue 46).

A form a server sends mid-call used to show only the tools the agent had
used ("(no tools but ask_human)" before any call); the request now keeps the
names of those it was offered: at most ``MAX_OFFERED_TOOLS``, each cut to
``MAX_TOOL_NAME_CHARS``, printable. A row stored before reads as none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aah.desk import ElicitationRequest
from aah.desk.elicitation import MAX_OFFERED_TOOLS, MAX_TOOL_NAME_CHARS, offered_tools
from aah.store import SessionStore

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "offered_tools.jsonl"
FORM = {"message": "Who stays?", "requestedSchema": {"type": "object"}}


def _stored(case: dict[str, Any]) -> Any:
    stored = case["stored"]
    if "repeat_chars" in case:
        return [stored[0] * case["repeat_chars"]]
    if "repeat_names" in case:
        return [f"{stored[0]}{n}" for n in range(case["repeat_names"])]
    return stored


def _bounded(names: list[str]) -> None:
    assert len(names) <= MAX_OFFERED_TOOLS
    for name in names:
        assert 0 < len(name) <= MAX_TOOL_NAME_CHARS and name == name.strip()
        assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in name)


CASES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[c["why"][:40] for c in CASES])
def test_every_hostile_stored_list_reads_bounded(case: dict[str, Any]) -> None:
    context = ElicitationRequest.from_params("hotel", FORM).model_dump(mode="json")
    if case["stored"] is None:
        context.pop("tools", None)
    else:
        context["tools"] = _stored(case)
    names = ElicitationRequest.model_validate(context).tools
    assert len(names) == case["count"]
    _bounded(names)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.text(max_size=300), st.integers(), st.none()), max_size=400))
def test_any_list_of_names_is_kept_bounded(names: list[Any]) -> None:
    _bounded(offered_tools(names))


def test_a_form_on_the_web_page_names_the_tools_offered_not_only_those_used(
    tmp_path: Path,
) -> None:
    pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
    from aah.ui.web.queue import request_view

    store = SessionStore(tmp_path / "s.db")
    session = store.open_session("Book a room in Lyon", task_id="lyon-3")
    request = ElicitationRequest.from_params("hotel", FORM).model_copy(
        update={"tools": ["hotel__book", "hotel__sign_in", "<b>odd</b>"]}
    )
    record = store.humans.create_human_request(
        session.id, request.message, request.model_dump(mode="json"), kind="elicitation"
    )
    briefing = request_view(store, record).briefing
    assert "The agent was given" in briefing and "hotel__sign_in" in briefing
    assert "&lt;b&gt;odd&lt;/b&gt;" in briefing and "<b>odd</b>" not in briefing
    assert "called none yet" not in briefing and "those it has used" not in briefing
    # A form kept before the offered tools were (no "tools"): the tools used, as before.
    old = request.model_dump(mode="json")
    del old["tools"]
    record = store.humans.create_human_request(session.id, request.message, old, kind="elicitation")
    assert "called none yet" in request_view(store, record).briefing
