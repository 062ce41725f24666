"""The web page's approval form: the call as fields, an edit checked before it is sent.

No browser here (``test_web_approvals_browser.py`` drives one): the form's
HTML, the decision the page sends, and the Queue tab's handler, on a real
store. Every invalid edit is refused with one line and never stored.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from aah.desk import DeskWorkflow  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.tools import ParameterSpec  # noqa: E402
from aah.ui.web.approval import call_html, read_decision  # noqa: E402
from aah.ui.web.auth import Annotator  # noqa: E402
from aah.ui.web.format import plain  # noqa: E402
from aah.ui.web.queue import entry_label, queue_rows  # noqa: E402
from aah.ui.web.queue_page import QueueHandlers  # noqa: E402

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
PROPOSED = {"rooms": 2, "room_type": "double", "note": "late arrival", "price": None}
# The page sends every field's text as typed: these are the fields of the proposed call.
FIELDS = {"rooms": "2", "price": "", "breakfast": "", "room_type": '"double"', "floor": ""}
FIELDS |= {"guests": "", "card": "", "note": "late arrival"}


def _approval(store: SessionStore, parameters: list[ParameterSpec] | None = None) -> Any:
    session = store.open_session("Book two rooms.")
    store.set_status(session.id, "waiting")
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "https://hotel.example/book",
        "arguments": PROPOSED,
        "parameters": [p.model_dump(mode="json") for p in parameters or PARAMETERS],
        "rule": "method POST",
    }
    return store.humans.create_human_request(
        session.id, "Approve this call? POST local__book", {"approval": call}, kind="approval"
    )


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "s.db")


def _edit(**changed: Any) -> str:
    return json.dumps({"decision": "edit", "fields": FIELDS | changed})


# Each class of bad input the page can send: text no value of its type, a
# value outside an enum, a required field emptied, a field that is no text,
# a decision that is none, a reason or a field too long.
INVALID = [
    pytest.param(_edit(rooms="two"), "rooms: a whole number, e.g. 3, not “two”", id="int-word"),
    pytest.param(_edit(rooms="2.5"), "rooms: a whole number", id="int-fraction"),
    pytest.param(_edit(rooms="1e3"), "rooms: a whole number", id="int-exponent"),
    pytest.param(_edit(rooms="0x10"), "rooms: a whole number", id="int-hex"),
    pytest.param(_edit(rooms="2 rooms"), "rooms: a whole number", id="int-unit"),
    pytest.param(_edit(rooms=""), "rooms", id="required-emptied"),
    pytest.param(_edit(rooms="   "), "rooms", id="required-blank"),
    pytest.param(_edit(price="NaN"), "price: a number", id="number-nan"),
    pytest.param(_edit(price="inf"), "price: a number", id="number-inf"),
    pytest.param(_edit(price="1,5"), "price: a number", id="number-comma"),
    pytest.param(_edit(breakfast="yes"), "breakfast: true or false", id="bool-word"),
    pytest.param(_edit(room_type='"triple"'), "room_type: choose one of", id="enum-outside"),
    pytest.param(_edit(room_type="Double"), "room_type: choose one of", id="enum-case"),
    pytest.param(_edit(floor="3"), "floor: choose one of", id="enum-int-outside"),
    pytest.param(_edit(floor='"1"'), "floor: choose one of", id="enum-int-as-text"),
    pytest.param(_edit(guests="ann, bob"), "guests: JSON array", id="array-words"),
    pytest.param(_edit(guests='{"a": 1}'), "guests: JSON array", id="array-object"),
    pytest.param(_edit(guests="[1, 2]"), "guests", id="array-item-type"),
    pytest.param(_edit(card="[1]"), "card: JSON object", id="object-array"),
    pytest.param(_edit(card="{bad"), "card: JSON object", id="object-broken"),
    pytest.param(_edit(rooms=3), "rooms: the page sent no text", id="field-not-text"),
    pytest.param(_edit(note="x" * 20_001), "note: at most", id="field-too-long"),
    pytest.param(json.dumps({"decision": "edit"}), "came without its fields", id="no-fields"),
    pytest.param(json.dumps({"decision": "edit", "fields": []}), "without", id="fields-list"),
    pytest.param(json.dumps({"decision": "maybe"}), "press a (approve)", id="unknown-decision"),
    pytest.param("approve", "press a (approve)", id="not-json"),
    pytest.param("[]", "press a (approve)", id="json-list"),
    pytest.param("", "press a (approve)", id="empty"),
    pytest.param(
        json.dumps({"decision": "reject", "reason": "x" * 4_001}), "shorten", id="long-reason"
    ),
    pytest.param(json.dumps({"decision": "respond"}), "type the result", id="respond-no-text"),
    pytest.param(
        json.dumps({"decision": "respond", "response": " \n "}),
        "type the result",
        id="respond-blank",
    ),
    pytest.param(
        json.dumps({"decision": "respond", "response": 12}),
        "type the result",
        id="respond-not-text",
    ),
    pytest.param(
        json.dumps({"decision": "respond", "response": "x" * 4_001}),
        "shorten the result",
        id="respond-too-long",
    ),
]


@pytest.mark.parametrize(("sent", "says"), INVALID)
def test_an_invalid_decision_is_refused_in_one_line_and_never_stored(
    store: SessionStore, sent: str, says: str
) -> None:
    request = _approval(store)
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    assert opened is not None and opened.request_id == request.id
    shown = handlers.decide(who, opened, sent, [])
    status = str(shown[0])
    assert status.startswith("Refused, not sent: ") and "\n" not in status
    with pytest.raises(ValueError) as refused:
        read_decision(request, sent)
    assert says in str(refused.value) and "\n" not in str(refused.value)
    assert store.humans.human_answers(request.id) == []
    assert store.humans.get_human_request(request.id).status == "pending"  # type: ignore[union-attr]


VALID = [
    pytest.param({}, {**PROPOSED}, id="unchanged"),
    pytest.param({"rooms": " 3 "}, {**PROPOSED, "rooms": 3}, id="int-spaces"),
    pytest.param({"rooms": "-1"}, {**PROPOSED, "rooms": -1}, id="int-negative"),
    pytest.param({"price": "120"}, {**PROPOSED, "price": 120}, id="number-whole"),
    pytest.param({"price": "99.5"}, {**PROPOSED, "price": 99.5}, id="number-fraction"),
    pytest.param({"breakfast": "true"}, {**PROPOSED, "breakfast": True}, id="bool"),
    pytest.param({"room_type": '"single"'}, {**PROPOSED, "room_type": "single"}, id="enum"),
    pytest.param(
        {"room_type": ""},
        {k: v for k, v in PROPOSED.items() if k != "room_type"},
        id="optional-emptied",
    ),  # fmt: skip
    pytest.param({"floor": "2"}, {**PROPOSED, "floor": 2}, id="enum-int"),
    pytest.param({"guests": '["Ann", "Bob"]'}, {**PROPOSED, "guests": ["Ann", "Bob"]}, id="array"),
    pytest.param(
        {"card": '{"last4": "4242"}'}, {**PROPOSED, "card": {"last4": "4242"}}, id="object"
    ),  # fmt: skip
    pytest.param(
        {"note": "  keeps its spaces "},
        {**PROPOSED, "note": "  keeps its spaces "},
        id="string-as-typed",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("changed", "arguments"), VALID)
def test_a_valid_edit_is_stored_with_typed_arguments(
    store: SessionStore, changed: dict[str, str], arguments: dict[str, Any]
) -> None:
    request = _approval(store)
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    shown = handlers.decide(who, opened, _edit(**changed), [])
    stored = store.humans.get_human_request(request.id)
    assert stored is not None and stored.status == "answered" and stored.answered_by == "kim"
    if arguments == PROPOSED:
        # An edit that changes nothing runs as proposed: stored, counted and said as approved.
        assert str(shown[0]).startswith("Approved **local\\_\\_book**")
        assert (stored.decision, stored.edited_arguments) == ("approve", None)
        return
    # The confirmation shows the arguments stored, not the ones proposed.
    assert str(shown[0]).startswith("Edited **local\\_\\_book**: it runs with")
    assert (stored.decision, stored.edited_arguments, stored.reason) == ("edit", arguments, "")
    assert plain(json.dumps(stored.edited_arguments, ensure_ascii=False))[:60] in str(shown[0])


@pytest.mark.parametrize("decision", ["approve", "reject", "terminate"])
def test_the_other_decisions_are_stored_with_their_reason(
    store: SessionStore, decision: str
) -> None:
    request = _approval(store)
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    sent = {"decision": decision, "fields": FIELDS | {"rooms": "ignored"}, "reason": " Too dear "}
    handlers.decide(who, opened, json.dumps(sent), [])
    stored = store.humans.get_human_request(request.id)
    assert stored is not None
    reason = "" if decision == "approve" else "Too dear"
    assert (stored.decision, stored.edited_arguments, stored.reason) == (decision, None, reason)


def test_a_response_is_stored_as_the_result_the_agent_reads(store: SessionStore) -> None:
    request = _approval(store)
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    sent = {"decision": "respond", "fields": None, "reason": "", "response": " Booked: 12 "}
    shown = handlers.decide(who, opened, json.dumps(sent), [])
    assert str(shown[0]).startswith("Responded in place of")
    assert plain("Booked: 12") in str(shown[0])
    stored = store.humans.get_human_request(request.id)
    assert stored is not None and (stored.decision, stored.answer) == ("respond", "Booked: 12")


def test_a_question_is_never_decided_as_a_call(store: SessionStore) -> None:
    session = store.open_session("Weather?")
    store.set_status(session.id, "waiting")
    question = store.humans.create_human_request(session.id, "Which city?")
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    assert opened.request_id == question.id
    shown = handlers.decide(who, opened, json.dumps({"decision": "approve"}), [])
    assert str(shown[0]).startswith("This is a question")
    assert store.humans.human_answers(question.id) == []


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


def test_the_form_shows_hostile_text_as_text(store: SessionStore) -> None:
    session = store.open_session("Book")
    store.set_status(session.id, "waiting")
    params = [
        ParameterSpec(name=f"a{HOSTILE}", description=HOSTILE),
        ParameterSpec(name="kind", enum=[HOSTILE, "</option><script>x</script>"]),
    ]
    call = {
        "tool": f"t__{HOSTILE}",
        "method": HOSTILE,
        "url": HOSTILE,
        "arguments": {f"a{HOSTILE}": HOSTILE, "kind": HOSTILE, "extra": HOSTILE},
        "parameters": [p.model_dump(mode="json") for p in params],
        "rule": HOSTILE,
    }
    request = store.humans.create_human_request(
        session.id, "Approve?", {"approval": call}, kind="approval"
    )
    parser = _Tags()
    parser.feed(call_html(request))
    tags = [tag for tag, _ in parser.tags]
    assert "script" not in tags and "img" not in tags
    assert all(not name.startswith("on") for _, attrs in parser.tags for name in attrs)
    fields = [attrs for tag, attrs in parser.tags if tag in ("input", "select")]
    assert [attrs["data-arg"] for attrs in fields] == [f"a{HOSTILE}", "kind"]
    assert fields[0]["value"] == HOSTILE  # the proposed value, whole, as the field's text
    assert all("disabled" in attrs for attrs in fields)  # nothing editable before e


def test_the_form_fills_the_proposed_values_and_marks_required_and_enums(
    store: SessionStore,
) -> None:
    request = _approval(store)
    parser = _Tags()
    page = call_html(request)
    parser.feed(page)
    values = {attrs["data-arg"]: attrs.get("value") for tag, attrs in parser.tags if tag == "input"}
    assert values == {"rooms": "2", "price": "", "note": "late arrival"}
    selected = [attrs.get("value") for tag, attrs in parser.tags if tag == "option" and
                "selected" in attrs]  # fmt: skip
    assert selected == ['"double"']
    assert page.count('class="aah-required"') == 1 and "one of 2" in page


def test_the_queue_marks_each_request_with_its_kind(store: SessionStore) -> None:
    _approval(store)
    session = store.open_session("Weather?")
    store.set_status(session.id, "waiting")
    store.humans.create_human_request(session.id, "Which city?")
    entries = store.humans.queue_listing("kim").entries
    rows = queue_rows(entries, "kim")
    assert [row[4] for row in rows] == ["approval", "question"]
    assert rows[0][5] == "POST local__book"  # the call, without "Approve this call?"
    assert "] approval: POST local__book" in entry_label(entries[0])
    assert "approval" not in entry_label(entries[1])
