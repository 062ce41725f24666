"""The one scrubber: known keys by value and encoding, key shapes, credential names."""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import uuid
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from aah.runtime.checkpoint_serde import scrub_state
from aah.secrets import (
    REDACTED,
    ScrubbingStream,
    encoded_forms,
    remember_secret,
    scrub,
    scrub_bytes,
    scrub_text,
    scrub_tree,
)

KEY = "Zq7/vK2+unit=4Lw9"

# (environment, text, what must be gone); every text must change.
SHAPES: list[tuple[dict[str, str], str, str]] = [
    ({"AAH_API_KEY": KEY}, f"bad key {KEY}", KEY),
    ({"AAH_HUMAN_API_KEY": KEY}, f"bad key {quote(KEY, safe='')}", quote(KEY, safe="")),
    ({"AAH_GRADER_API_KEY": KEY}, f"bad key {quote_plus(KEY)}", quote_plus(KEY)),
    ({"AAH_JUDGE_API_KEY": KEY}, f"b64 {base64.b64encode(KEY.encode()).decode()}", KEY[:4]),
    ({"OPENAI_API_KEY": KEY}, "Basic " + base64.b64encode(f"u:{KEY}".encode()).decode(), "dTp"),
    ({"AAH_WEB_TOKEN": KEY}, f"token {KEY}", KEY),
    ({"AAH_WEB_ADMIN_TOKEN": KEY}, f"admin {KEY}", KEY),
    ({"AAH_BASE_URL": "http://me:pa55word-x@h/v1"}, "password pa55word-x", "pa55word-x"),
    ({}, "key sk-proj-abcdefghijklmnop1234", "abcdefghijklmnop"),
    ({}, "key sk-abcdefghijklmnop1234", "abcdefghijklmnop"),
    ({}, "token hf_abcdefghijklmnopqrst", "abcdefghijklmnop"),
    ({}, "Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ({}, "https://h/x?q=Bearer+abcdefgh12345678&page=2", "abcdefgh12345678"),
    ({}, "https://h/x?q=Bearer%20abcdefgh12345678", "abcdefgh12345678"),
    ({}, "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    ({}, "https://h/x?api_key=abc123&page=2", "abc123"),
    ({}, "https://h/x?access_token=zz99zz&x=1", "zz99zz"),
    ({}, '{"error": {"api_key": "abc123", "msg": "no"}}', "abc123"),
    ({}, "Authorization: Token abcdefghijklmnop1234", "abcdefghijklmnop1234"),
]


@pytest.mark.parametrize(("env", "text", "gone"), SHAPES)
def test_each_secret_form_is_scrubbed(
    env: dict[str, str], text: str, gone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    scrubbed = scrub_text(text) or ""
    assert gone not in scrubbed
    assert REDACTED in scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=100 and page=2",
        "The weather in Oslo is 21 degrees.",
        '{"max_tokens": "100", "city": "Oslo"}',
        "sort_key=date",
        "Basic authentication is fine. Bearer authentication too.",
        "Token budget exhausted after the long conversation.",
    ],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert scrub_text(text) == text


def test_a_value_seen_under_a_credential_name_is_cut_everywhere_after() -> None:
    value = "Pv8-remembered-9Kx"
    assert scrub({"X-Acme-Auth": value}) == {"X-Acme-Auth": REDACTED}
    assert scrub_text(f"/echo/{quote(value, safe='')}/items") == f"/echo/{REDACTED}/items"
    assert scrub_text("short abc") == "short abc"  # too short to be matched by value
    remember_secret("abc")
    assert scrub_text("short abc") == "short abc"


def test_bytes_keep_their_length_and_trees_their_types(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_API_KEY", KEY)
    data = pickle.dumps({"said": f"key {KEY}"})
    masked = scrub_bytes(data)
    assert len(masked) == len(data) and KEY.encode() not in masked
    assert pickle.loads(masked)["said"].startswith("key *")
    tree = {"url": f"https://h/{KEY}", "body": f"k={KEY}".encode(), "n": 3, "t": (KEY,)}
    assert scrub_tree(tree) == {
        "url": f"https://h/{REDACTED}",
        "body": f"k={REDACTED}".encode(),
        "n": 3,
        "t": (REDACTED,),
    }


def test_the_console_stream_scrubs_what_it_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_WEB_TOKEN", KEY)
    sink = io.StringIO()
    stream = ScrubbingStream(sink)
    assert stream.write(f"token {KEY}\n") == len(f"token {KEY}\n")
    assert sink.getvalue() == f"token {REDACTED}\n"
    # Bytes go to the binary buffer beneath, as with any text stream, scrubbed too.
    with pytest.raises(TypeError):
        stream.write(b"")  # type: ignore[arg-type]
    binary = io.BytesIO()
    text_stream = io.TextIOWrapper(binary)
    ScrubbingStream(text_stream).buffer.write(f"raw {KEY}".encode())
    assert binary.getvalue() == f"raw {REDACTED}".encode()
    text_stream.detach()


def test_encoded_forms_cover_every_base64_alignment() -> None:
    forms = encoded_forms(KEY)
    for prefix in (b"", b"u:", b"us:", b"use:"):
        text = base64.b64encode(prefix + KEY.encode()).decode()
        assert any(form in text for form in forms), prefix


def test_every_face_describes_events_without_their_secrets() -> None:
    from aah.event_text import describe_event
    from aah.events import ToolCallEvent

    value = "Fc4-described-7Yq"
    event = ToolCallEvent(
        session_id="s",
        call_id="c",
        tool="t__e",
        arguments={"city": "Oslo", "api_key": value},
        ok=True,
        result=f"/echo/{quote(value, safe='')}/items",
    )
    description = describe_event(event)
    assert description is not None
    shown = repr(description)
    assert "Oslo" in shown and value not in shown and quote(value, safe="") not in shown
    assert event.arguments["api_key"] == value  # the live event is left as it was


@pytest.mark.parametrize(
    ("value", "remembered"),
    [
        ("temperature", False),  # a sort key, not a credential
        ("TEMPERATURE", False),
        ("12345678901", False),
        ("two words here", False),
        ("Ab3-x", False),  # too short
        ("Kz9-recalled-2Wm", True),
        ("mixedCaseLettersOnly", True),
    ],
)
def test_only_key_like_values_under_credential_names_are_remembered(
    value: str, remembered: bool
) -> None:
    scrub({"key": value})
    assert (scrub_text(f"text {value} text") != f"text {value} text") is remembered


def test_checkpoints_keep_no_known_key_in_exceptions_or_interrupts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph.types import Interrupt

    from aah.runtime.checkpoint_serde import ScrubbingSerializer

    monkeypatch.setenv("AAH_API_KEY", KEY)
    serde = ScrubbingSerializer()
    values = [
        ValueError(f"the server said: bad key {KEY}"),
        {"error": RuntimeError(f"see ?k={quote(KEY, safe='')}")},
        [Interrupt(value={"question": f"is {KEY} yours?"})],
    ]
    for value in values:
        kind, data = serde.dumps_typed(value)
        assert not [form for form in encoded_forms(KEY) if form.encode() in data], value
        serde.loads_typed((kind, data))


def test_known_secrets_are_not_rebuilt_on_every_scrub_when_none_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Scrubbing runs on every write: with no secret in the environment the
    # known values must still be read once, not once per call.
    from aah import secrets

    for name in [n for n in os.environ if secrets.is_secret_name(n)]:
        monkeypatch.delenv(name)
    known = secrets._KnownSecrets()
    rebuilds = 0
    rebuild = known._rebuild

    def counting() -> None:
        nonlocal rebuilds
        rebuilds += 1
        rebuild()

    monkeypatch.setattr(known, "_rebuild", counting)
    for _ in range(5):
        known.forms()
    assert rebuilds == 1
    monkeypatch.setenv("AAH_API_KEY", "sk-" + "x" * 30)
    assert any("x" * 30 in form for form in known.forms()[0])
    assert rebuilds == 2


def test_a_secret_set_as_another_variable_goes_is_still_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The environment keeps its size (one variable out, a key in): the key is still known."""
    monkeypatch.setenv("AAH_TEST_PLAIN_VARIABLE", "x")
    assert scrub_text("warm the cache") == "warm the cache"
    monkeypatch.delenv("AAH_TEST_PLAIN_VARIABLE")
    monkeypatch.setenv("AAH_API_KEY", KEY)
    assert KEY not in (scrub_text(f"bad key {KEY}") or "")


# Each text is scrubbed once per set of known secrets and looked up after
# that: a secret learned later (set in the environment, seen under a
# credential name, remembered) must still be cut from a text scrubbed before.
# (A remembered value stays known for the process: each case learns its own.)


def _by_environment(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("AAH_API_KEY", value)


def _by_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    scrub({"X-Acme-Token": value})


def _by_remembering(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    remember_secret(value)


@pytest.mark.parametrize("learn", [_by_environment, _by_name, _by_remembering])
@pytest.mark.parametrize(
    "write",
    [
        lambda text: scrub_text(text),
        lambda text: scrub({"said": text})["said"],
        lambda text: scrub_tree([text])[0],
        lambda text: scrub_state({"messages": [AIMessage(text)]})["messages"][0].content,
    ],
    ids=["text", "scrub", "tree", "checkpoint"],
)
def test_a_text_scrubbed_before_a_secret_was_known_is_scrubbed_again(
    monkeypatch: pytest.MonkeyPatch,
    learn: Callable[[pytest.MonkeyPatch, str], None],
    write: Callable[[str], str],
) -> None:
    value = f"Qm4-{uuid.uuid4().hex[:12]}-7Zp"
    text = f"the value is {value}."
    assert write(text) == text  # not key-shaped: kept while unknown
    learn(monkeypatch, value)
    assert write(text) == f"the value is {REDACTED}."


def test_a_value_under_a_credential_name_is_cut_from_the_rest_of_the_same_write() -> None:
    value = "Hn2-same-write-8Rt"
    first = scrub({"a_token": value, "url": f"https://h/{value}"})
    assert first == {"a_token": REDACTED, "url": f"https://h/{REDACTED}"}
    echoed = scrub_tree({"x_api_key": value.encode(), "body": f"echo {value}".encode()})
    assert echoed == {"x_api_key": REDACTED.encode(), "body": f"echo {REDACTED}".encode()}


def test_a_string_subclass_comes_back_as_itself() -> None:
    class Colour(StrEnum):
        RED = "red"

    assert scrub_text("red") == "red"
    assert type(scrub_text(Colour.RED)) is Colour
    assert type(scrub_text("red")) is str


# -- escaped text: scrubbing a JSON document leaves a JSON document ---------------

# Characters that make escapes, names scrubbed by name, and shapes scrubbed by shape.
_ESCAPY = st.sampled_from(
    ['"', "\\", "\n", "\t", "/", "é", "\u2028", "n", "u", "00e9", "=", "&", " ", "key=",
     "token=", "api_key=", "password=", "Bearer ", "Token ", "sk-", '": "', "1", "a"]
)  # fmt: skip
_ESCAPED_TEXT = st.lists(_ESCAPY, max_size=12).map("".join)
_SECRET = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\0"),
    min_size=6,
    max_size=14,
)


@settings(max_examples=300, deadline=None)
@given(
    secret=_SECRET,
    before=_ESCAPED_TEXT,
    after=_ESCAPED_TEXT,
    other=_ESCAPED_TEXT,
    ascii_only=st.booleans(),
)
def test_a_scrubbed_json_document_is_still_json_and_holds_no_known_secret(
    secret: str, before: str, after: str, other: str, ascii_only: bool
) -> None:
    """The console scrubs what aah prints, `aah report --format json` among it (seen in CI:
    a BFCL call's ``key=\\"...\\"`` lost its backslash and the report stopped being JSON)."""
    document = {"text": before + secret + after, "other": other, "call": f"f(key={other!r})"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AAH_API_KEY", secret)
        scrubbed = scrub_text(json.dumps(document, ensure_ascii=ascii_only))
    read = json.loads(scrubbed or "")
    assert secret not in read["text"]


def test_escaped_forms_of_a_known_secret_are_cut_and_an_escape_stays_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AAH_API_KEY", 'n123"45\\')
    assert scrub_text(json.dumps({"a": 'x n123"45\\ y'})) == '{"a": "x [redacted] y"}'
    monkeypatch.setenv("AAH_API_KEY", "n1234567")
    # A newline then 1234567 is not the secret, and its escape stays whole.
    assert scrub_text(json.dumps({"a": "x\n1234567"})) == '{"a": "x\\n[redacted]"}'
    assert scrub_text(r"C:\\n1234567") == r"C:\\[redacted]"
    assert scrub_text(json.dumps({"a": 'key="abc123"'})) == '{"a": "key=\\"abc123\\""}'


ESCAPED_TEXT_CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "hostile" / "escaped_text.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.strip()
]


@pytest.mark.parametrize("case", ESCAPED_TEXT_CORPUS, ids=lambda case: case["why"][:50])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_each_escaped_text_case_stays_json_without_its_secret(
    case: dict[str, Any], ascii_only: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case["secret"] is not None:
        monkeypatch.setenv("AAH_API_KEY", case["secret"])
    read = json.loads(scrub_text(json.dumps(case["value"], ensure_ascii=ascii_only)) or "")
    assert read.keys() == case["value"].keys()
    if case["secret"] is not None:
        assert case["secret"] not in json.dumps(read, ensure_ascii=False)
