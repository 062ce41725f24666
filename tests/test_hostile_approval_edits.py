"""Generated approval decisions: whatever a page, a terminal or an old store sends, one line or a decision.

A decision comes from the web page as JSON (``read_decision``), and from an
older store or a console as text (``decision_from_text``). Hypothesis sends
both every shape it can build: hostile field texts (numbers of any length,
exponents, NaN, unicode, nested JSON), decisions that are none, fields that
are no text. The page's reader gives a decision whose arguments pass the
tool's own check, or a ``ValueError`` of one line; the text reader always
gives a decision (a call runs only when a person approved it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from aah.desk.replies import decision_from_text  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.tools import ParameterSpec  # noqa: E402
from aah.ui.web.approval import ProposedCall, edit_problem, read_decision  # noqa: E402

PARAMETERS = [
    ParameterSpec(name="rooms", type="integer", required=True),
    ParameterSpec(name="price", type="number"),
    ParameterSpec(name="breakfast", type="boolean"),
    ParameterSpec(name="room_type", enum=["single", "double"]),
    ParameterSpec(name="floor", type="integer", enum=[1, 2]),
    ParameterSpec(name="guests", type="array", items_type="string"),
    ParameterSpec(name="card", type="object"),
    ParameterSpec(name="note"),
]
NAMES = [parameter.name for parameter in PARAMETERS]
CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "approval_edits.jsonl"


@pytest.fixture(scope="module")
def approval(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = SessionStore(tmp_path_factory.mktemp("edits") / "s.db")
    session = store.open_session("Book two rooms.")
    store.set_status(session.id, "waiting")
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "https://hotel.example/book",
        "arguments": {"rooms": 2, "room_type": "double"},
        "parameters": [p.model_dump(mode="json") for p in PARAMETERS],
        "rule": "method POST",
    }
    return store.humans.create_human_request(
        session.id, "Approve this call? POST local__book", {"approval": call}, kind="approval"
    )


NUMBER_TEXTS = st.one_of(
    st.integers().map(str),
    st.floats().map(repr),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.integers(1, 6000).map(lambda n: "-" + "1" * n),
    st.integers(1, 400).map(lambda n: "1e" + "9" * n),
    st.integers(1, 400).map(lambda n: "0." + "0" * n + "1"),
    st.sampled_from(
        ["NaN", "-inf", "Infinity", "1_000", "٣", "１２", "0x10", "+", "-", ".", "1e", " 7 "]
    ),
)
JSON_TEXTS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
).map(json.dumps) | st.integers(1, 3000).map(lambda n: "[" * n + "]" * n)
FIELD_TEXTS = NUMBER_TEXTS | JSON_TEXTS | st.text(max_size=60) | st.none() | st.integers()
DECISIONS = st.fixed_dictionaries(
    {
        "decision": st.sampled_from(
            ["edit", "edit", "edit", "approve", "reject", "respond", "terminate", "delete", 7]
        )
    },
    optional={
        "fields": st.dictionaries(
            st.sampled_from(NAMES) | st.text(max_size=5), FIELD_TEXTS, max_size=8
        )
        | JSON_TEXTS,
        "reason": st.text(max_size=30) | st.integers(),
        "response": st.text(max_size=30) | st.none(),
    },
)


def _check_page_decision(approval: Any, sent: str) -> None:
    try:
        decision = read_decision(approval, sent)
    except ValueError as exc:  # OutOfBounds is a ValueError too
        message = str(exc)
        assert message and "\n" not in message and len(message) < 300, message
        return
    if decision.decision == "edit":
        assert decision.arguments is not None
        call = ProposedCall.of(approval)
        assert edit_problem(call, decision.arguments) is None
        json.dumps(decision.arguments)  # storable as it is


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(DECISIONS.map(json.dumps) | st.text(max_size=50) | JSON_TEXTS)
def test_a_page_decision_is_a_checked_decision_or_one_line(approval: Any, sent: str) -> None:
    _check_page_decision(approval, sent)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.sampled_from(["", "a ", "edit ", "e ", "reject: ", "t ", "r "]).flatmap(
        lambda word: (JSON_TEXTS | NUMBER_TEXTS | st.text(max_size=40)).map(
            lambda rest: word + rest
        )
    ),
    st.booleans(),
)
def test_a_stored_text_decision_is_always_a_decision(text: str, declined: bool) -> None:
    decision = decision_from_text(text, declined, "someone")
    assert decision.decision in ("approve", "edit", "reject", "terminate")
    if declined:
        assert decision.decision == "reject"


def test_every_corpus_edit_is_a_checked_decision_or_one_line(approval: Any) -> None:
    cases = [
        json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    assert len(cases) >= 10
    for case in cases:
        sent = json.dumps({"decision": "edit", "fields": {"rooms": "2"} | case["fields"]})
        _check_page_decision(approval, sent)
