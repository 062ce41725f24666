"""Tools a person holds (a τ² user's phone) at the desk: forms from their schemas, calls checked.

The data path every face shares: a question's context carries the tools (typed, stored and
read back), a face's press is checked by ``DeskWorkflow.called`` and stored in its own column,
the queue channel hands the asker an ``Answer`` carrying the call, and the follow-up question
is opened for the person who made it. The border (what a schema may hold, what a person or a
page may send) is the corpus ``fixtures/hostile/user_tools.jsonl`` and generated cases.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aah.clock import FakeClock
from aah.desk import (
    MAX_ANSWER_CHARS,
    MAX_DRAFT_CHARS,
    ContentInvalid,
    DeskWorkflow,
    QuestionContext,
    UserToolCall,
    UserToolResult,
    UserToolsContext,
    check_user_call,
    desk_user_tools,
    fitting_value,
    question_context,
    recheck_user_call,
    turn_request_id,
)
from aah.runtime import HumanRequest, QueueHuman
from aah.store import SessionStore

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "user_tools.jsonl"
MODES = ["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]
# τ²'s telecom user tools as its wheel writes their specs (a few of them).
PHONE: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "toggle_data", "description": "Toggles data.",
                                      "parameters": {"properties": {}, "type": "object"}}},
    {"type": "function", "function": {
        "name": "set_network_mode_preference", "description": "Changes the network mode.",
        "parameters": {
            "$defs": {"NetworkModePreference": {"enum": MODES, "title": "NetworkModePreference",
                                                "type": "string"}},
            "properties": {"mode": {"anyOf": [{"$ref": "#/$defs/NetworkModePreference"},
                                              {"type": "string"}], "title": "Mode"}},
            "required": ["mode"], "title": "parameters", "type": "object"}}},
    {"type": "function", "function": {
        "name": "set_apn_settings", "description": "Sets the APN settings for the phone.",
        "parameters": {
            "$defs": {
                "APNNames": {"enum": ["internet", "broken"], "title": "APNNames", "type": "string"},
                "APNSettings": {"additionalProperties": False, "type": "object", "properties": {
                    "apn_name": {"$ref": "#/$defs/APNNames", "default": "internet"},
                    "reset_at_reboot": {"default": False, "title": "Reset At Reboot",
                                        "type": "boolean"},
                    "mms_port": {"anyOf": [{"type": "integer"}, {"type": "null"}],
                                 "default": None, "title": "Mms Port"}}}},
            "properties": {"apn_settings": {"anyOf": [
                {"$ref": "#/$defs/APNSettings"},
                {"additionalProperties": True, "type": "object"}], "title": "Apn Settings"}},
            "required": ["apn_settings"], "type": "object"}}},
    {"type": "function", "function": {
        "name": "grant_app_permission", "description": "Grants an app a permission.",
        "parameters": {"properties": {"app_name": {"title": "App Name", "type": "string"},
                                      "permission": {"title": "Permission", "type": "string"}},
                       "required": ["app_name", "permission"], "type": "object"}}},
]  # fmt: skip


def _phone(calls_left: int = 20) -> UserToolsContext:
    tools, unusable = desk_user_tools(PHONE)
    assert unusable == []
    return UserToolsContext(turn="tau2-s-3-1", tools=tools, calls_left=calls_left)


def _cases(kind: str) -> list[dict[str, Any]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [case for case in map(json.loads, lines) if case["kind"] == kind]


def _spec(case: dict[str, Any]) -> dict[str, Any]:
    parameters: Any = case.get("parameters")
    if "nest" in case:
        parameters = {"type": "object", "properties": {}}
        for _ in range(case["nest"]):
            parameters = {"type": "object", "properties": {"x": parameters}}
    if "fields" in case and isinstance(case["fields"], int):
        names = [f"f{i}" for i in range(case["fields"])]
        parameters = {"type": "object", "properties": {n: {"type": "string"} for n in names}}
    return {"type": "function", "function": {"name": "tool", "parameters": parameters}}


@pytest.mark.parametrize("case", _cases("schema"), ids=lambda case: case["why"][:50])
def test_every_schema_in_the_corpus_is_a_form_or_left_off_in_one_line(case: dict[str, Any]) -> None:
    tools, unusable = desk_user_tools([_spec(case)])
    if case["outcome"] == "usable":
        assert unusable == [] and [f.name for f in tools[0].fields] == case["fields"]
        return
    (line,) = unusable
    assert tools == [] and case["said"] in line and "\n" not in line, line


@pytest.mark.parametrize("case", _cases("call"), ids=lambda case: case["why"][:50])
def test_every_call_in_the_corpus_is_made_as_given_or_refused_in_one_line(
    case: dict[str, Any],
) -> None:
    phone = _phone(case.get("calls_left", 20))
    values = case["values"]
    # A long value is written in the corpus once and repeated here: "4" x 400, "m" x 4,001.
    for key, times in (("apn_settings.mms_port", "repeat_number"), ("app_name", "repeat_text")):
        if times in case:
            values = {**values, key: values[key] * case[times]}
    draft = case.get("draft", "x" * case.get("draft_chars", 0))
    if case["outcome"] == "refused":
        with pytest.raises(ContentInvalid) as refused:
            check_user_call(phone, case["tool"], values, draft)
        said = str(refused.value)
        assert case["said"] in said and "\n" not in said and "\x1b" not in said, said
        return
    call = check_user_call(phone, case["tool"], values, draft)
    assert call.arguments == case["arguments"]
    assert call.draft == case.get("kept_draft", draft)
    assert recheck_user_call(phone, call) == call


def test_the_phones_forms_come_from_taus_schemas() -> None:
    phone = _phone()
    forms = {tool.name: [(f.name, f.kind, f.label, f.required) for f in tool.fields]
             for tool in phone.tools}  # fmt: skip
    assert forms["toggle_data"] == []  # a button
    assert forms["set_network_mode_preference"] == [("mode", "enum", "Mode", True)]
    mode = phone.tools[1].fields[0]
    assert mode.options == MODES
    assert forms["set_apn_settings"] == [
        ("apn_settings.apn_name", "enum", "Apn Settings · apn_name", False),
        ("apn_settings.reset_at_reboot", "boolean", "Apn Settings · Reset At Reboot", False),
        ("apn_settings.mms_port", "integer", "Apn Settings · Mms Port", False),
    ]
    assert phone.tools[2].objects == ["apn_settings"]
    assert MAX_DRAFT_CHARS == MAX_ANSWER_CHARS  # the message kept is one an answer may be


def test_the_context_keeps_the_tools_typed_and_a_damaged_one_still_shows_the_question() -> None:
    phone = _phone().model_copy(
        update={"results": [UserToolResult(tool="toggle_data", text="Data on")], "draft": "I"}
    )
    context = QuestionContext(query="You are this user.", user_tools=phone)
    read = question_context(json.loads(json.dumps(context.stored())))
    assert read.user_tools == phone
    assert read.user_tools.next_request_id() == "tau2-s-3-1.call2"
    assert turn_request_id("t", 0) == "t"
    damaged = question_context({"query": "Q", "user_tools": {"tools": [{"name": 3}]}})
    assert damaged.query == "Q" and damaged.user_tools is None


def _asked(store: SessionStore, context: QuestionContext, request_id: str = "r1") -> Any:
    session = store.open_session("My phone has no data.", setting="tau2")
    store.set_status(session.id, "waiting")
    return store.humans.create_human_request(
        session.id, "What does the status bar show?", context.stored(), request_id=request_id
    )


def test_a_press_is_checked_stored_in_its_column_and_reaches_the_asker_typed(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    with SessionStore(tmp_path / "s.db", clock=clock) as store:
        workflow = DeskWorkflow(store, clock=clock)
        request = _asked(store, QuestionContext(user_tools=_phone()))
        opened = workflow.opened("ann", request)
        with pytest.raises(ContentInvalid, match="Mode is required"):
            workflow.called("ann", opened, "set_network_mode_preference", {}, "typed")
        assert store.humans.get_human_request(request.id).status == "pending"
        sent = workflow.called(
            "ann", opened, "set_network_mode_preference", {"mode": "4g_only"}, "I set it"
        )
        assert sent.outcome == "settled"
        assert workflow.called("ann", opened, "toggle_data", {}, "").outcome == "repeat"
        record = store.humans.get_human_request(request.id)
        assert record.answer == "" and record.user_call == {
            "tool": "set_network_mode_preference",
            "arguments": {"mode": "4g_only"},
            "draft": "I set it",
        }
        # The asker's channel hands the call over as the desk's typed call.
        asked = HumanRequest(request_id=request.id, session_id=request.session_id, question="?")
        reply = asyncio.run(QueueHuman(store).ask(asked))
        assert reply.call == UserToolCall(
            tool="set_network_mode_preference", arguments={"mode": "4g_only"}, draft="I set it"
        )
        # The follow-up is not asked yet: looked for on the workflow's clock, then left.
        assert workflow.follow_up("ann", wait_seconds=2, sleep=clock.advance) is None
        other = _asked(store, QuestionContext(query="another"), "other")
        follow = _asked(store, QuestionContext(user_tools=_phone()), _phone().next_request_id())
        # Offered before older questions: the conversation the person is in goes on.
        found = workflow.next_for("ann")
        assert found.request is not None and found.request.id == follow.id
        assert "result of your call" in found.note
        assert workflow.next_for("bob").request.id == other.id


def test_a_question_without_tools_takes_no_call(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        workflow = DeskWorkflow(store)
        request = _asked(store, QuestionContext(query="Which city?"))
        with pytest.raises(ContentInvalid, match="offers no tools of yours"):
            workflow.called("ann", workflow.opened("ann", request), "toggle_data", {})


# -- generated cases -------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip
_NAMES = st.sampled_from(["a", "b", "mode", "c.d", ""]) | st.text(max_size=6)
_TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "null", "array"])
_LEAF = st.fixed_dictionaries(
    {"type": _TYPES},
    optional={
        "enum": st.lists(st.text(max_size=5) | _SCALARS, max_size=4),
        "minimum": _SCALARS,
        "maximum": _SCALARS,
        "default": _SCALARS,
        "title": st.text(max_size=10),
        "format": st.sampled_from(["email", "date", "weird"]),
        "items": st.fixed_dictionaries({"type": _TYPES}),
    },
) | st.fixed_dictionaries({"$ref": st.sampled_from(["#/$defs/a", "#/$defs/b", "#/x", "#/$defs/"])})
_PROPS = st.recursive(
    _LEAF,
    lambda inner: (
        st.fixed_dictionaries({"anyOf": st.lists(inner, max_size=4)})
        | st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(_NAMES, inner, max_size=3)},
            optional={"required": st.lists(_NAMES, max_size=2)},
        )
    ),
    max_leaves=12,
)
_SCHEMAS = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(_NAMES, _PROPS, max_size=4)},
    optional={"required": st.lists(_NAMES | _SCALARS, max_size=3),
              "$defs": st.dictionaries(st.sampled_from(["a", "b"]), _PROPS, max_size=2)},
) | _JSON  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(parameters=_SCHEMAS)
def test_any_schema_is_a_form_that_takes_a_value_or_a_tool_left_off(parameters: Any) -> None:
    tools, unusable = desk_user_tools([{"function": {"name": "t", "parameters": parameters}}])
    assert len(tools) + len(unusable) == 1
    if unusable:
        assert "\n" not in unusable[0]
        return
    context = UserToolsContext(turn="t", tools=tools, calls_left=1)
    values = {f.name: fitting_value(f) for f in tools[0].fields if f.required}
    call = check_user_call(context, "t", values)
    assert recheck_user_call(context, call) == call


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    tool=st.sampled_from([spec["function"]["name"] for spec in PHONE]) | _SCALARS,
    values=st.dictionaries(
        st.sampled_from(["mode", "app_name", "permission", "apn_settings.mms_port",
                         "apn_settings.apn_name", "apn_settings.reset_at_reboot", "x"]),
        _JSON, max_size=4,
    ) | _JSON,
    draft=st.text(max_size=20) | _SCALARS,
)  # fmt: skip
def test_whatever_a_page_sends_is_a_checked_call_or_one_line(
    tool: Any, values: Any, draft: Any
) -> None:
    phone = _phone()
    try:
        call = check_user_call(phone, tool, values, draft)
    except ContentInvalid as refused:
        said = str(refused)
        assert said and "\n" not in said and len(said) < 400, said
        return
    assert recheck_user_call(phone, call) == call
    assert UserToolCall.from_stored(json.loads(json.dumps(call.stored()))) == call


@settings(max_examples=200, deadline=None, derandomize=True)
@given(stored=_JSON)
def test_whatever_a_column_or_context_holds_reads_without_an_error(stored: Any) -> None:
    call = UserToolCall.from_stored(stored)
    context = question_context({"query": "Q", "user_tools": stored})
    assert isinstance(call.tool, str) and context.query == "Q"
    if context.user_tools is not None:
        with pytest.raises(ContentInvalid):
            check_user_call(context.user_tools, call.tool + "\x00", {})


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ("not json", "Not called: the page sent no call"),
        ('{"request": "r1", "tool": "toggle_data", "draft": "' + "x" * 100_001 + '"}', "Not called: the call is 100,054 characters"),
        ('{"request": "elsewhere", "tool": "toggle_data"}', "Not called: that tool belongs to a question no longer open"),
        ('{"request": "r1", "tool": "set_network_mode_preference", "values": {"mode": "5g"}}', "Not called: Mode is one of"),
        ('{"request": "r1", "tool": "toggle_data", "values": [1]}', "Not called: the form&#x27;s values are not an object"),
    ],
)  # fmt: skip
def test_the_web_handler_refuses_a_press_in_one_line_and_keeps_the_form(
    tmp_path: Path, sent: str, said: str
) -> None:
    pytest.importorskip("gradio", reason="the web app needs the ui extra")
    from aah.ui.web.auth import Annotator
    from aah.ui.web.queue_page import QueueHandlers

    with SessionStore(tmp_path / "s.db") as store:
        request = _asked(store, QuestionContext(user_tools=_phone()))
        handlers = QueueHandlers(store, DeskWorkflow(store))
        who = Annotator("kim", admin=False)
        opened = handlers.start(who)[2 + 16]
        assert opened.request_id == request.id
        shown = handlers.call(who, opened, sent, [])
        status = str(shown[0])
        assert status.startswith(said) and "\n" not in status, status
        # Nothing else changes: the form, the typed words and the question stay as they were.
        assert all(type(value).__name__ == "dict" and value.get("__type__") == "update"
                   for value in shown[1:])  # fmt: skip
        assert store.humans.get_human_request(request.id).status == "pending"
