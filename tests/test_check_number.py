"""Numbers a person types or a peer sends: one helper reads them all, its digits counted first.

``aah.bounds.check_number`` is what every face calls for a number (the
desk's form fields, the console, the terminal app and web page through the
desk, an approval's edit); ``parse_json`` counts the digits of every number
literal before the JSON parser converts it. The corpus
(``fixtures/hostile/numbers.jsonl``) runs through the helper, the desk's
field check, the console's prompt and the web page's approval form; the
generated tests send texts of digits of any length, floats, booleans and
nested values, and watch that no ``int()`` ever sees an over-long digit string.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from int_watch import WatchedInt

import aah.bounds
from aah.bounds import (
    MAX_NUMBER_DIGITS,
    NumberTooLong,
    OutOfBounds,
    check_number,
    check_numbers,
    parse_json,
)
from aah.desk import ContentInvalid, ElicitationField, ElicitationRequest, check_value
from aah.runtime.elicitations import console_elicitation

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "numbers.jsonl"


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def _given(case: dict[str, Any]) -> Any:
    """The value a corpus entry sends: typed text, or a number as a peer's JSON holds it."""
    if "text" in case:
        return case["text"]
    if "repeat" in case:
        repeat = case["repeat"]
        return repeat.get("before", "") + repeat["digit"] * repeat["count"]
    if "int_digits" in case:
        return 10 ** case["int_digits"] // 9 * 4  # 444...4, built without reading text
    if "float" in case:
        return float(case["float"])
    return case["value"]


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [case["why"][:50] for case in cases]


CASES = _cases()
TYPED = [case for case in CASES if isinstance(_given(case), str) and _given(case)]


def _check_outcome(case: dict[str, Any], read: Any) -> None:
    """``read()`` gives the entry's number, or raises the entry's one line."""
    if "said" in case:
        with pytest.raises((OutOfBounds, ContentInvalid)) as refused:
            read()
        line = str(refused.value)
        assert case["said"] in line and "\n" not in line and len(line) < 200, line
        return
    number = read()
    if "expect" in case:
        assert number == case["expect"] and type(number) is type(case["expect"])
    assert isinstance(number, int if case["integer"] else int | float)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_every_corpus_number_is_read_or_refused_in_one_line(case: dict[str, Any]) -> None:
    bounds = {"minimum": case.get("minimum"), "maximum": case.get("maximum")}
    _check_outcome(case, lambda: check_number(_given(case), "n", integer=case["integer"], **bounds))


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_the_desks_field_check_reads_every_corpus_number_the_same(case: dict[str, Any]) -> None:
    field = ElicitationField(
        name="n",
        kind="integer" if case["integer"] else "number",
        minimum=case.get("minimum"),
        maximum=case.get("maximum"),
    )
    _check_outcome(case, lambda: check_value(field, _given(case)))


@pytest.mark.parametrize("case", TYPED, ids=_ids(TYPED))
def test_the_console_asks_again_for_a_bad_number_and_never_cancels(case: dict[str, Any]) -> None:
    kind = "integer" if case["integer"] else "number"
    prop = {"type": kind} | {k: case[k] for k in ("minimum", "maximum") if k in case}
    request = ElicitationRequest.from_params(
        "hotel",
        {"message": "How many?", "requestedSchema": {"type": "object", "properties": {"n": prop},
                                                    "required": ["n"]}},
    )  # fmt: skip
    good = str(max(1, math.ceil(case.get("minimum", 1))))
    lines = iter(["y", _given(case), "", good])
    shown: list[str] = []

    def prompt(text: str) -> str:
        shown.append(text)
        return next(lines)

    result = console_elicitation(prompt, request)
    assert result.action == "accept" and result.content is not None
    if "said" in case:
        [refusal] = [line for line in shown if line.startswith("Not taken:")]
        assert case["said"] in refusal and "\n" not in refusal
        assert result.content == {"n": int(good)}
    else:
        assert not any(line.startswith("Not taken:") for line in shown)


def test_the_web_approval_form_reads_typed_numbers_with_the_same_helper(tmp_path: Path) -> None:
    pytest.importorskip("gradio", reason="the web app needs the ui extra")
    from aah.store import SessionStore
    from aah.tools import ParameterSpec
    from aah.ui.web.approval import read_decision

    parameters = [
        ParameterSpec(name="n", type="integer", required=True),
        ParameterSpec(name="x", type="number"),
    ]
    store = SessionStore(tmp_path / "s.db")
    session = store.open_session("Book.")
    call = {
        "tool": "local__book", "method": "POST", "url": "https://hotel.example/book",
        "arguments": {"n": 1}, "parameters": [p.model_dump(mode="json") for p in parameters],
    }  # fmt: skip
    record = store.humans.create_human_request(
        session.id, "Approve?", {"approval": call}, kind="approval"
    )
    for case in TYPED:
        if "minimum" in case or "maximum" in case or len(_given(case)) > 20_000:
            continue
        name = "n" if case["integer"] else "x"
        fields = {"n": "1", "x": ""} | {name: _given(case)}
        sent = json.dumps({"decision": "edit", "fields": fields})
        if "said" in case:
            with pytest.raises(ValueError) as refused:
                read_decision(record, sent)
            said = case["said"].removeprefix("n: ")
            assert said in str(refused.value) and str(refused.value).startswith(f"{name}: ")
        else:
            decision = read_decision(record, sent)
            assert decision.arguments is not None
            assert decision.arguments[name] == check_number(_given(case), name, integer=False)


# --- generated: texts of digits of any length, floats, booleans, nested values ----------

DIGIT_TEXTS = st.one_of(
    st.integers(0, 700).map(lambda n: "7" * n),
    st.integers(0, 7000).map(lambda n: "-" + "1" * n),
    st.tuples(st.integers(0, 500), st.integers(0, 500)).map(
        lambda p: "9" * p[0] + "." + "3" * p[1]
    ),
    st.integers(0, 500).map(lambda n: "1e" + "9" * n),
    st.sampled_from(["NaN", "-inf", "Infinity", "1_000", "٣", "１２", "0x10", "+", "-", ".", "1e"]),
)
VALUES = st.one_of(
    DIGIT_TEXTS,
    st.text(max_size=30),
    st.integers(),
    st.integers(0, 5000).map(lambda n: -(10**n)),
    st.floats(),
    st.booleans(),
    st.none(),
    st.recursive(
        st.integers() | st.floats(), lambda inner: st.lists(inner, max_size=3), max_leaves=5
    ),
)
BOUNDS = st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(-100, 100)


@pytest.fixture
def watched_int(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    WatchedInt.texts = []
    monkeypatch.setattr(aah.bounds, "int", WatchedInt, raising=False)
    yield WatchedInt.texts


@settings(
    max_examples=500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=VALUES, integer=st.booleans(), low=BOUNDS, high=BOUNDS)
def test_the_helper_reads_a_bounded_number_or_refuses_and_never_int_reads_a_long_text(
    watched_int: list[str], value: Any, integer: bool, low: Any, high: Any
) -> None:
    watched_int.clear()
    try:
        number = check_number(value, "n", integer=integer, minimum=low, maximum=high)
    except OutOfBounds as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200
    else:
        assert isinstance(number, int) if integer else isinstance(number, int | float)
        assert not isinstance(number, bool) and math.isfinite(number)
        assert (low is None or number >= low) and (high is None or number <= high)
        assert abs(number) < 10**MAX_NUMBER_DIGITS
    assert all(len(text.lstrip("+-")) <= MAX_NUMBER_DIGITS for text in watched_int)


JSON_NUMBERS = st.one_of(
    st.integers(1, 6000).map(lambda n: "8" * n),
    st.integers(1, 500).map(lambda n: "-0." + "5" * n),
    st.integers(1, 500).map(lambda n: "2e" + "1" * n),
    st.integers().map(str),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(JSON_NUMBERS | st.just('"' + "6" * 400 + '"'), max_size=4))
def test_a_json_parse_counts_every_numbers_digits_before_reading_it(literals: list[str]) -> None:
    text = '{"a": [' + ", ".join(literals) + "]}"
    try:
        value = parse_json(text, "the edit")
    except OutOfBounds as exc:
        assert isinstance(exc, NumberTooLong)
        assert str(exc).startswith("a number in the edit: at most 300 digits")
        return
    # Whatever was read has its digits within the bound (an exponent past a
    # float's range reads as Infinity, as JSON parsers do: not a digit count).
    numbers = [n for n in value["a"] if isinstance(n, int | float)]
    assert all(not math.isfinite(n) or abs(n) < 10**MAX_NUMBER_DIGITS for n in numbers)


def test_numbers_nested_in_data_are_checked_without_recursion() -> None:
    deep: Any = 10**400
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(OutOfBounds, match="a number in 'arguments': at most 300 digits"):
        check_numbers({"a": deep}, "'arguments'")
    assert check_numbers({"a": [1, 2.5, "9" * 5000, True]}, "x") == {
        "a": [1, 2.5, "9" * 5000, True]
    }


@pytest.mark.parametrize("seconds", [10**400, float("inf"), float("nan"), True, "30"])
def test_a_stored_deadline_past_the_bounds_reads_as_none_never_an_error(seconds: Any) -> None:
    from aah.desk import approval_context

    assert approval_context({"call": {"tool": "t", "deadline_seconds": seconds}}).call.tool == "t"
    assert approval_context({"call": {"deadline_seconds": seconds}}).call.deadline_seconds is None
    assert approval_context({"call": {"deadline_seconds": 90}}).call.deadline_seconds == 90.0
