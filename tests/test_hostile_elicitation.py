"""Whatever schema an MCP server sends, a person gets a form that works, or the server a decline at once.

The corpus (``fixtures/hostile/elicitation.jsonl``, built by
``hostile_elicitation.py``) holds the shapes a hostile or careless server
sends: schemas nested 300, 600 and 100,000 levels, 10,000 fields, an enum of
100,000 items, a minimum over its maximum, NaN and 400-digit bounds, lengths
no text can have, defaults outside their own field, unprintable and markup
titles, links urlsplit cannot read. Each goes through the desk's entry (the
session's elicitor, which the MCP client calls): declined with one logged
line, or shown, and then every face (the web page, the console, the
simulated user, the oracle) renders the form and takes a value for every
field. Hypothesis generates more schemas and contents; the desk raises
nothing but its documented refusals.
"""

from __future__ import annotations

import asyncio
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hostile_elicitation import fitting_content, load_cases, params_of
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from int_watch import WatchedInt

import aah.bounds
from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.oracle_elicitation import oracle_elicitation
from aah.benchmark.failtalms.simulated_elicitation import describe_fields, read_elicitation_reply
from aah.bounds import MAX_NUMBER_DIGITS
from aah.desk import (
    ContentInvalid,
    ElicitationRefused,
    ElicitationRequest,
    ElicitationResult,
    check_content,
    check_value,
    read_stored_answer,
    shown_line,
    stored_answer,
    unreadable_elicitation,
)
from aah.events import ElicitationAnsweredEvent, ElicitationAskedEvent, Event
from aah.runtime.elicitations import SessionElicitor, console_elicitation
from aah.runtime.humans import ConsoleHuman, ScriptedHuman
from aah.store import SessionStore
from aah.terminal_text import printable

CASES = load_cases()
SHOWN = [case for case in CASES if case["outcome"] == "shown"]
BOOKING = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name"},
        "nights": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["name", "nights"],
}


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [case["why"][:60] for case in cases]


def _filling(seen: list[ElicitationRequest]) -> ScriptedHuman:
    """A channel that fills every form it is shown with values that fit."""

    def fill(request: ElicitationRequest) -> ElicitationResult:
        seen.append(request)
        content = fitting_content(request) if request.mode == "form" else None
        return ElicitationResult(action="accept", content=content)

    return ScriptedHuman([], elicitations=fill)


async def _answered(params: Any, channel: object) -> tuple[ElicitationResult, list[Event]]:
    events: list[Event] = []
    elicitor = SessionElicitor("s1", channel, events.append)
    result = await asyncio.wait_for(elicitor.answer("hotel", params), 20)
    return result, events


def _one_clean_line(text: str) -> bool:
    return text == shown_line(text, len(text))


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
async def test_every_request_is_shown_as_a_form_that_works_or_declined_with_one_line(
    case: dict[str, Any],
) -> None:
    seen: list[ElicitationRequest] = []
    result, events = await _answered(params_of(case), _filling(seen))
    [asked] = [e for e in events if isinstance(e, ElicitationAskedEvent)]
    [answered] = [e for e in events if isinstance(e, ElicitationAnsweredEvent)]
    if case["outcome"] == "declined":
        assert result.action == "decline" and result.answered_by == "aah" and seen == []
        assert case["said"] in asked.refused, asked.refused
        assert "\n" not in asked.refused and len(asked.refused) < 400
        assert answered.action == "decline" and answered.why == asked.refused
        assert len(asked.message) <= 4_000
        return
    assert not asked.refused and result.action == "accept" and answered.action == "accept"
    [request] = seen
    assert request.message == printable(request.message)
    for field in request.fields:
        assert all(_one_clean_line(t) for t in (field.label, field.description))
        assert all(_one_clean_line(t) and t for t in field.option_titles)
    if "label" in case:
        assert request.fields[0].label == case["label"]
    if request.mode == "form":
        assert result.content == check_content(request, fitting_content(request))


def _record(tmp_path: Path, request: ElicitationRequest) -> Any:
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session("Book a room.")
    record = store.humans.create_human_request(
        session.id, request.message, request.model_dump(mode="json"), kind="elicitation"
    )
    store.close()
    return record


def _as_page_sends(request: ElicitationRequest, content: dict[str, Any]) -> dict[str, Any]:
    """``content`` as page.js sends it: a box's text, a checkbox's state, a list's choices."""
    return {
        name: value if isinstance(value, bool | list) else str(value)
        for name, value in content.items()
    }


def _as_typed(request: ElicitationRequest, content: dict[str, Any]) -> list[str]:
    """``content`` as a person types it at the console, field by field."""
    typed = []
    for field in request.fields:
        value = content[field.name]
        if isinstance(value, bool):
            typed.append("y" if value else "n")
        elif isinstance(value, list):  # by number: an option may hold a comma
            typed.append(", ".join(str(field.options.index(v) + 1) for v in value))
        elif field.kind == "enum":
            typed.append(str(field.options.index(value) + 1))
        else:
            typed.append(str(value))
    return typed


class _Strict(HTMLParser):
    def error(self, message: str) -> None:  # pragma: no cover - older Pythons only
        raise AssertionError(message)


@pytest.mark.parametrize("case", SHOWN, ids=_ids(SHOWN))
def test_a_shown_request_works_on_every_face(case: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("gradio", reason="the web page needs the ui extra")
    from aah.ui.web.elicitation import elicitation_html, read_elicitation

    request = ElicitationRequest.from_params("hotel", params_of(case))
    content = fitting_content(request) if request.mode == "form" else {}
    # The web page: the form as escaped HTML, the page's values read back.
    record = _record(tmp_path, request)
    page = elicitation_html(record)
    _Strict().feed(page)
    assert "\x1b" not in page and "\u202e" not in page
    sent = {"action": "accept", "content": _as_page_sends(request, content)}
    taken = read_elicitation(record, json.dumps(sent))
    assert taken.action == "accept"
    # The console: every field typed once, taken at once.
    lines = iter(["y", *_as_typed(request, content)])
    result = console_elicitation(lambda _: next(lines), request)
    assert result.action == "accept" and (result.content or {}) == (taken.content or {})
    # The simulated user reads the fields and its reply is checked; the oracle reads facts.
    described = describe_fields(request)
    assert "\x1b" not in described and "\u202e" not in described
    if request.fields:
        reply = read_elicitation_reply(request, json.dumps(content))
        assert reply.action == "accept", reply.why
    facts = TaskFacts(query="Book.", hidden_facts=[f"{f.label} is 3" for f in request.fields])
    assert oracle_elicitation(request, facts).action in ("accept", "decline")


async def test_the_console_asks_again_for_a_400_digit_number_instead_of_cancelling() -> None:
    lines = iter(["y", "Ada", "4" * 400, "", "3"])
    shown: list[str] = []

    def prompt(text: str) -> str:
        shown.append(text)
        return next(lines)

    params = {"message": "Who stays?", "requestedSchema": BOOKING}
    result, _ = await _answered(params, ConsoleHuman(prompt))
    assert result.action == "accept" and result.content == {"name": "Ada", "nights": 3}
    assert "Not taken: nights: at most 300 digits, not 400. Press Enter to try again" in shown


def test_the_web_handler_refuses_a_400_digit_number_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("gradio", reason="the web page needs the ui extra")
    from aah.desk import DeskWorkflow
    from aah.ui.web.auth import Annotator
    from aah.ui.web.queue_page import QueueHandlers

    request = ElicitationRequest.from_params(
        "hotel", {"message": "Who?", "requestedSchema": BOOKING}
    )
    record = _record(tmp_path, request)
    store = SessionStore(tmp_path / "s.db")
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    assert opened is not None and opened.request_id == record.id
    for nights in ("4" * 400, "9" * 5000, 10**400):
        sent = {"action": "accept", "content": {"name": "Ada", "nights": nights}}
        status = str(handlers.decide(who, opened, json.dumps(sent), [])[0])
        assert status.startswith("Refused, not sent: ") and "at most 300 digits" in status
        assert "\n" not in status
    assert store.humans.get_human_request(record.id).status == "pending"  # type: ignore[union-attr]
    sent = {"action": "accept", "content": {"name": "Ada", "nights": "3"}}
    handlers.decide(who, opened, json.dumps(sent), [])
    answered = store.humans.get_human_request(record.id)
    assert answered is not None and answered.status == "answered"
    assert read_stored_answer(request, answered.answer, declined=False).content == {
        "name": "Ada",
        "nights": 3,
    }
    store.close()


async def test_a_channels_content_that_does_not_fit_goes_back_as_a_decline() -> None:
    wrong = ElicitationResult(action="accept", content={"name": "Ada", "nights": 10**400})
    params = {"message": "Who stays?", "requestedSchema": BOOKING}
    result, events = await _answered(params, ScriptedHuman([], elicitations=lambda r: wrong))
    assert result.action == "decline" and result.content is None
    assert result.why == "the content did not fit: nights: at most 300 digits, not about 401"
    [answered] = [e for e in events if isinstance(e, ElicitationAnsweredEvent)]
    assert answered.action == "decline" and answered.content is None


async def test_a_question_the_transport_could_not_read_is_logged_and_declined() -> None:
    why = "MCP server hotel sent a message nested past 150 levels: fix the server"
    result, events = await _answered(unreadable_elicitation(why), _filling([]))
    assert result.wire() == {"action": "decline"}
    [asked] = [e for e in events if isinstance(e, ElicitationAskedEvent)]
    assert asked.refused == f"hotel's elicitation could not be read: {why}"


# --- generated schemas and contents ------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\x1b[2J", "[/]", "[bold]x", "\u202eevil", "a\nb\r\nc", "\x00\x07", " "]),
    st.integers(0, 3).map(lambda n: "L" * (10 ** (n + 2))),
)
NUMBERS = st.one_of(
    st.integers(-50, 50),
    st.floats(),
    st.integers(0, 500).map(lambda n: 10**n),
    st.integers(0, 500).map(lambda n: -(10**n)),
    st.booleans(),
    HOSTILE_TEXT,
)
COUNTS = st.integers(-5, 50) | st.integers(0, 10**13) | st.floats() | st.booleans() | HOSTILE_TEXT
VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | HOSTILE_TEXT,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
CONTENT_VALUES = st.one_of(
    st.integers(0, 6000).map(lambda n: "7" * n),
    st.integers(0, 600).map(lambda n: "-" + "3" * n + ".5"),
    st.integers(0, 500).map(lambda n: 10**n),
    st.floats(),
    st.booleans(),
    VALUES,
)


def _mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` three times in four, ``bad`` otherwise: forms get shown, and attacked.

    Sampled, not ``one_of``: Hypothesis leans to a ``one_of``'s first branch.
    """
    return st.sampled_from([good, good, good, bad]).flatmap(lambda chosen: chosen)


WORDS = st.text(alphabet="abcdefghij XYZ-,", min_size=1, max_size=8)
OPTIONS = _mostly(
    st.lists(WORDS, min_size=1, max_size=5, unique=True),
    st.lists(HOSTILE_TEXT, max_size=6) | st.lists(VALUES, max_size=3),
)
TITLES = _mostly(st.text(max_size=20), HOSTILE_TEXT)
FORMATS = st.sampled_from(["email", "uri", "date", "date-time"])
FINITE = st.integers(-20, 20) | st.floats(-1e3, 1e3, allow_nan=False)
TITLED = st.fixed_dictionaries({"title": TITLES, "description": HOSTILE_TEXT})
GOOD_PROPERTIES = [
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "format": FORMATS,
            "minLength": st.integers(0, 30),
            "maxLength": st.integers(0, 30),
            "default": WORDS,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["number", "integer"])},
        optional={"minimum": FINITE, "maximum": FINITE, "default": FINITE},
    ),
    st.fixed_dictionaries({"type": st.just("boolean")}, optional={"default": st.booleans()}),
    st.fixed_dictionaries(
        {"type": st.just("string"), "enum": OPTIONS},
        optional={"enumNames": OPTIONS, "default": WORDS},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("string"),
            "oneOf": st.lists(
                st.fixed_dictionaries({"const": WORDS}, optional={"title": HOSTILE_TEXT}),
                min_size=1,
                max_size=4,
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("array"),
            "items": st.fixed_dictionaries({"enum": OPTIONS})
            | st.fixed_dictionaries(
                {"anyOf": st.lists(st.fixed_dictionaries({"const": WORDS, "title": HOSTILE_TEXT}))}
            ),
        },
        optional={"minItems": st.integers(0, 6), "maxItems": st.integers(0, 6)},
    ),
]
GOOD_PROPERTY = st.tuples(st.sampled_from(GOOD_PROPERTIES).flatmap(lambda k: k), TITLED).map(
    lambda p: p[0] | p[1]
)
KEYS = st.sampled_from(
    ["type", "title", "format", "minimum", "maximum", "minLength", "maxLength", "minItems"]
    + ["maxItems", "enum", "enumNames", "oneOf", "items", "default", "$ref"]
)
# A good property with one key set to something hostile.
POISONED = st.tuples(GOOD_PROPERTY, KEYS, NUMBERS | COUNTS | VALUES | CONTENT_VALUES).map(
    lambda p: p[0] | {p[1]: p[2]}
)
WILD = st.dictionaries(KEYS, VALUES | NUMBERS, max_size=6)
# Sampled, not one_of: Hypothesis leans to a one_of's first branch.
PROPERTY = st.sampled_from([GOOD_PROPERTY, GOOD_PROPERTY, POISONED, WILD]).flatmap(lambda k: k)
NAMES = _mostly(
    st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    st.text(max_size=8) | st.sampled_from(["__proto__", "a\x1b", "x" * 70]),
)
SCHEMAS = st.fixed_dictionaries(
    {
        "type": _mostly(st.just("object"), VALUES),
        "properties": st.dictionaries(NAMES, PROPERTY, min_size=1, max_size=4),
    },
    optional={"required": _mostly(st.lists(NAMES, max_size=3), VALUES)},
)
PARAMS = st.sampled_from(
    [
        st.fixed_dictionaries({"message": st.text(max_size=60), "requestedSchema": SCHEMAS}),
        st.fixed_dictionaries({"message": st.text(max_size=60), "requestedSchema": SCHEMAS}),
        st.fixed_dictionaries(
            {"message": HOSTILE_TEXT | VALUES, "requestedSchema": SCHEMAS | VALUES},
            optional={
                "mode": st.sampled_from(["form", "url", "sms"]) | VALUES,
                "url": st.sampled_from(["https://e.org/x", "https://[", "javascript:x"])
                | HOSTILE_TEXT,
                "elicitationId": VALUES,
                "_meta": VALUES,
            },
        ),
        VALUES,
    ]
).flatmap(lambda k: k)


SETTINGS = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(SETTINGS, max_examples=250)
@given(params=PARAMS, data=st.data())
def test_a_generated_request_is_a_working_form_or_one_refusal(params: Any, data: Any) -> None:
    _check_watched(params, data)


KIND_NAMES = ["string", "number", "boolean", "enum", "titled-enum", "multi-select"]


@pytest.mark.parametrize("kind", range(len(GOOD_PROPERTIES)), ids=KIND_NAMES)
@settings(SETTINGS, max_examples=50)
@given(data=st.data())
def test_a_generated_field_of_each_kind_is_fillable_or_refused(kind: int, data: Any) -> None:
    good = st.tuples(GOOD_PROPERTIES[kind], TITLED).map(lambda p: p[0] | p[1])
    poisoned = st.tuples(good, KEYS, NUMBERS | COUNTS | VALUES | CONTENT_VALUES).map(
        lambda p: p[0] | {p[1]: p[2]}
    )
    prop = data.draw(st.sampled_from([good, good, poisoned]).flatmap(lambda k: k), label="x")
    others = data.draw(st.dictionaries(NAMES, PROPERTY, max_size=2), label="others")
    names = ["x", *others]
    required = data.draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
    schema = {"type": "object", "properties": {"x": prop, **others}, "required": required}
    _check_watched({"message": "Details?", "requestedSchema": schema}, data)


def _check_watched(params: Any, data: Any) -> None:
    """:func:`_check_generated`, watching every text ``aah.bounds`` reads as an int."""
    WatchedInt.texts = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aah.bounds, "int", WatchedInt, raising=False)
        _check_generated(params, data)
    assert all(len(text.lstrip("+-")) <= MAX_NUMBER_DIGITS for text in WatchedInt.texts)


def _check_generated(params: Any, data: Any) -> None:
    try:
        request = ElicitationRequest.from_params("hotel", params)
    except ElicitationRefused as exc:
        assert str(exc).startswith("hotel") and "\n" not in str(exc) and len(str(exc)) < 400
        event(f"refused: {str(exc)[6:60]}")
        return
    event(f"shown: {len(request.fields)} fields")
    for field in request.fields:
        event(f"shown: a field of kind {field.kind}")
        assert all(_one_clean_line(t) for t in (field.label, field.description))
        if field.default is not None:
            assert check_value(field, field.default) == field.default
    if request.mode == "url":
        return
    fitting = fitting_content(request)
    assert check_content(request, fitting) == fitting
    lines = iter(["y", *_as_typed(request, fitting)])
    assert console_elicitation(lambda _: next(lines), request).content == fitting
    assert describe_fields(request)
    names = st.sampled_from([f.name for f in request.fields]) if request.fields else NAMES
    content = data.draw(st.dictionaries(names | NAMES, CONTENT_VALUES, max_size=5), label="content")
    # Whatever content comes (a person's, a peer's, a stored one), one refusal or checked values.
    for given_content in (content, fitting | content):
        try:
            checked = check_content(request, given_content)
        except ContentInvalid as exc:
            assert "\n" not in str(exc) and len(str(exc)) < 400
        else:
            assert check_content(request, checked) == checked
        stored = json.dumps({"action": "accept", "content": given_content}, default=str)
        read = read_stored_answer(request, stored, declined=False)
        assert read.action in ("accept", "decline")
    read = read_stored_answer(
        request, stored_answer(ElicitationResult(action="accept", content=fitting)), declined=False
    )
    assert read.content == fitting
