"""The typed elicitation request and result: what aah takes of a server's form, and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from aah.benchmark.failtalms.fact_fit import TaskFacts
from aah.benchmark.failtalms.oracle_elicitation import oracle_elicitation
from aah.desk import (
    MAX_FIELDS,
    ContentInvalid,
    ElicitationRefused,
    ElicitationRequest,
    ElicitationResult,
    check_content,
    read_stored_answer,
    stored_answer,
)

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Guest name", "minLength": 1, "maxLength": 10},
        "email": {"type": "string", "format": "email"},
        "arrival": {"type": "string", "format": "date"},
        "nights": {"type": "integer", "minimum": 1, "maximum": 14},
        "budget": {"type": "number", "minimum": 0},
        "breakfast": {"type": "boolean", "default": False},
        "room": {"type": "string", "enum": ["single", "double"], "enumNames": ["One", "Two"]},
        "extras": {"type": "array", "items": {"enum": ["parking", "pets"]}, "maxItems": 1},
    },
    "required": ["name", "nights"],
}


def _form(schema: Any = FORM) -> ElicitationRequest:
    return ElicitationRequest.from_params(
        "hotel", {"message": "Details?", "requestedSchema": schema}
    )


def test_a_form_of_primitives_becomes_typed_fields() -> None:
    request = _form()
    kinds = {f.name: (f.kind, f.required) for f in request.fields}
    assert kinds == {
        "name": ("string", True), "email": ("string", False), "arrival": ("string", False),
        "nights": ("integer", True), "budget": ("number", False),
        "breakfast": ("boolean", False), "room": ("enum", False), "extras": ("enum", False),
    }  # fmt: skip
    room = request.field("room")
    extras = request.field("extras")
    assert room is not None and room.option_title("double") == "Two"
    assert extras is not None and extras.multiple and extras.max_items == 1
    assert request.asker == "hotel" and request.version == 1
    # The typed request round-trips through a queue row's context.
    assert ElicitationRequest.model_validate(request.model_dump(mode="json")) == request


def _prop(prop: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": prop}}


# Bad requested schemas: each is refused in one line, never shown.
BAD_SCHEMAS: list[tuple[Any, str]] = [
    ("not a schema", "not an object"),
    ({"type": "array"}, "not an object"),
    (_prop({"type": "object", "properties": {}}), "type 'object'"),
    (_prop({"type": "array", "items": {"type": "object"}}), "not a list of strings"),
    (_prop({"type": "null"}), "type 'null'"),
    (_prop({}), "has no type"),
    (_prop("string"), "is not a schema"),
    (_prop({"type": "string", "format": "ipv4"}), "format 'ipv4'"),
    (_prop({"type": "string", "enum": []}), "0 options"),
    (_prop({"type": "string", "enum": [1, 2]}), "not a list of strings"),
    (_prop({"type": "string", "enum": [str(i) for i in range(500)]}), "500 options"),
    (_prop({"type": "string", "oneOf": [{"title": "no const"}]}), "const, title"),
    (_prop({"type": "integer", "minimum": "1"}), "not a finite number"),
    (_prop({"type": "number", "maximum": float("inf")}), "not a finite number"),
    (_prop({"type": "string", "maxLength": -1}), "not a count"),
    (_prop({"type": "boolean", "default": "yes"}), "default is not of its type"),
    (_prop({"type": "integer", "default": True}), "default is not of its type"),
    (
        {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(99)}},
        "99 fields",
    ),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "'b'"),
    ({"type": "object", "properties": {"": {"type": "string"}}}, "not a usable name"),
    ({"type": "object", "properties": {"a\x1b[31m": {"type": "string"}}}, "not a usable name"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}, "not a list"),
    ({"type": "object", "properties": {"a": {"a": {"a": {"a": {"a": {"a": {}}}}}}}}, "nests"),
]


@pytest.mark.parametrize(("schema", "said"), BAD_SCHEMAS)
def test_a_schema_that_is_not_primitives_only_is_refused_in_one_line(
    schema: Any, said: str
) -> None:
    with pytest.raises(ElicitationRefused) as refused:
        _form(schema)
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith("hotel")


@pytest.mark.parametrize(
    "params",
    [
        {"mode": "url", "message": "Sign in", "url": "javascript:alert(1)"},
        {"mode": "url", "message": "Sign in", "url": "file:///etc/passwd"},
        {"mode": "url", "message": "Sign in", "url": "https://"},
        {"mode": "url", "message": "Sign in", "url": "https://e.org/" + "a" * 5000},
        {"mode": "url", "message": "Sign in", "url": "https://e.org/\x1b[2J"},
        {"mode": "url", "message": "Sign in"},
        {"mode": "sms", "message": "Code?"},
        {"mode": "form", "requestedSchema": FORM},
        {"mode": "form", "message": "x" * 5000, "requestedSchema": FORM},
    ],
)
def test_bad_links_modes_and_messages_are_refused(params: dict[str, Any]) -> None:
    with pytest.raises(ElicitationRefused):
        ElicitationRequest.from_params("hotel", params)


def test_a_link_is_kept_as_given_with_its_id() -> None:
    request = ElicitationRequest.from_params(
        "auth",
        {"mode": "url", "message": "Sign in", "url": "https://e.org/a?b=1", "elicitationId": "7"},
    )
    assert (request.mode, request.url, request.elicitation_id) == (
        "url",
        "https://e.org/a?b=1",
        "7",
    )


GOOD = {"name": "Ada", "nights": "3", "breakfast": "yes", "room": "double", "extras": ["pets"]}


def test_good_content_is_checked_and_typed() -> None:
    content = check_content(_form(), GOOD)
    assert content == {
        "name": "Ada", "nights": 3, "breakfast": True, "room": "double", "extras": ["pets"],
    }  # fmt: skip


# Bad content: each is refused with a line naming the field.
BAD_CONTENT: list[tuple[dict[str, Any], str]] = [
    ({"nights": 2}, "Guest name is required"),
    ({"name": "Ada"}, "nights is required"),
    ({"name": "", "nights": 2}, "Guest name needs at least 1"),
    ({"name": "A" * 11, "nights": 2}, "at most 10 characters"),
    ({"name": "Ada", "nights": 0}, "nights: at least 1, not 0"),
    ({"name": "Ada", "nights": 15}, "nights: at most 14, not 15"),
    ({"name": "Ada", "nights": 2.5}, "whole number"),
    ({"name": "Ada", "nights": "two"}, "nights: a whole number, e.g. 3, not “two”"),
    ({"name": "Ada", "nights": True}, "nights: a whole number"),
    ({"name": "Ada", "nights": float("nan")}, "nights: a whole number"),
    ({"name": "Ada", "nights": 2, "budget": -1}, "budget: at least 0, not -1"),
    ({"name": "Ada", "nights": 2, "email": "not-an-email"}, "email address"),
    ({"name": "Ada", "nights": 2, "arrival": "tomorrow"}, "a date"),
    ({"name": "Ada", "nights": 2, "breakfast": "maybe"}, "yes or no"),
    ({"name": "Ada", "nights": 2, "room": "suite"}, "room is one of: single, double"),
    ({"name": "Ada", "nights": 2, "extras": ["parking", "pets"]}, "at most 1"),
    ({"name": "Ada", "nights": 2, "extras": "pets"}, "one of the options"),
    ({"name": 7, "nights": 2}, "Guest name is text"),
    ({"name": "Ada", "nights": 2, "spy": "x"}, "no field 'spy'"),
]


@pytest.mark.parametrize(("content", "said"), BAD_CONTENT)
def test_content_that_does_not_fit_is_refused_naming_the_field(
    content: dict[str, Any], said: str
) -> None:
    with pytest.raises(ContentInvalid) as invalid:
        check_content(_form(), content)
    assert said in str(invalid.value) and "\n" not in str(invalid.value)


def test_a_stored_answer_reads_back_as_the_same_result_or_a_decline() -> None:
    request = _form()
    accepted = ElicitationResult(action="accept", content={"name": "Ada", "nights": 3})
    assert read_stored_answer(request, stored_answer(accepted), declined=False).content == {
        "name": "Ada",
        "nights": 3,
    }
    cancelled = stored_answer(ElicitationResult(action="cancel"))
    assert read_stored_answer(request, cancelled, declined=False).action == "cancel"
    assert read_stored_answer(request, "", declined=True).action == "decline"
    garbled = read_stored_answer(request, "{not json", declined=False)
    assert garbled.action == "decline" and "not a result" in garbled.why
    misfit = stored_answer(ElicitationResult(action="accept", content={"nights": 3}))
    assert read_stored_answer(request, misfit, declined=False).action == "decline"


def _facts(*facts: str) -> TaskFacts:
    return TaskFacts(query="Book a room.", hidden_facts=list(facts))


def test_the_oracle_fills_a_form_from_the_facts_that_name_its_fields() -> None:
    facts = _facts(
        "The guest name is Ada Byron.", "She stays 3 nights.", "She wants a double room.",
        "No breakfast for her.",
    )  # fmt: skip
    result = oracle_elicitation(_form(), facts)
    assert result.action == "accept" and result.answered_by == "oracle"
    assert result.content == {
        "name": "Ada Byron", "nights": 3, "breakfast": False, "room": "double",
    }  # fmt: skip


def test_the_oracle_declines_what_the_facts_do_not_give_and_every_link() -> None:
    missing = oracle_elicitation(_form(), _facts("The guest name is Ada."))
    assert missing.action == "decline" and "nights" in missing.why
    wrong = oracle_elicitation(_form(), _facts("The guest name is Ada.", "She stays 40 nights."))
    assert wrong.action == "decline"
    link = ElicitationRequest.from_params(
        "auth", {"mode": "url", "message": "Sign in", "url": "https://e.org/"}
    )
    assert oracle_elicitation(link, _facts("The guest name is Ada.")).action == "decline"


def test_the_fields_bound_is_the_one_refused() -> None:
    at_bound = {f"f{i}": {"type": "string"} for i in range(MAX_FIELDS)}
    assert len(_form({"type": "object", "properties": at_bound}).fields) == MAX_FIELDS
