"""What a person types on the web page is bounded: JSON by depth, numbers by range.

A deep JSON edit, decision or beacon is refused with one line (the page's
status line), never a RecursionError; the numbers of the Launch tab and the
lease setting are finite and in range, refused in one line otherwise. The
decisions go through the Queue tab's handler on a real store; the Launch
tab's numbers over the served app's API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

import gradio as gr  # noqa: E402
import httpx  # noqa: E402
from gradio_client import Client  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.bounds import MAX_NESTING  # noqa: E402
from aah.desk import DeskWorkflow  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.tools import ParameterSpec  # noqa: E402
from aah.ui.web.approval import MAX_FIELD_CHARS, read_decision  # noqa: E402
from aah.ui.web.auth import Annotator, WebAuth  # noqa: E402
from aah.ui.web.beacon import beacon_fields  # noqa: E402
from aah.ui.web.launch_page import MAX_PID, MAX_TASKS, whole_number  # noqa: E402
from aah.ui.web.lease import LEASE_ENV, lease_from_env  # noqa: E402
from aah.ui.web.queue_page import QueueHandlers  # noqa: E402

PARAMETERS = [
    ParameterSpec(name="rooms", type="integer", required=True),
    ParameterSpec(name="price", type="number"),
    ParameterSpec(name="room_type", enum=["single", "double"]),
    ParameterSpec(name="guests", type="array", items_type="string"),
    ParameterSpec(name="card", type="object"),
]
FIELDS = {"rooms": "2", "price": "", "room_type": '"double"', "guests": "", "card": ""}


def _approval(store: SessionStore) -> Any:
    session = store.open_session("Book two rooms.")
    store.set_status(session.id, "waiting")
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "https://hotel.example/book",
        "arguments": {"rooms": 2, "room_type": "double"},
        "parameters": [p.model_dump(mode="json") for p in PARAMETERS],
    }
    return store.humans.create_human_request(
        session.id, "Approve?", {"approval": call}, kind="approval"
    )


def _deep(levels: int, inner: str = "1", opening: str = "[", closing: str = "]") -> str:
    return opening * levels + inner + closing * levels


def _deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def _edit(**changed: str) -> str:
    return json.dumps({"decision": "edit", "fields": FIELDS | changed})


# JSON a person may type (or a page send) nested past the bound, each within the field's
# 20,000-character cap: every one is a one-line refusal that names the bound.
DEEP = [
    pytest.param(_edit(card=_deep_object(1_000)), "card nests deeper", id="object-1000"),
    pytest.param(_edit(card=_deep_object(MAX_NESTING + 1)), "card nests deeper", id="object-101"),
    pytest.param(_edit(guests=_deep(1_000)), "guests nests deeper", id="array-1000"),
    pytest.param(_edit(guests=_deep(9_999)), "guests nests deeper", id="array-9999"),
    pytest.param(_edit(guests=_deep(MAX_NESTING + 1)), "guests nests deeper", id="array-101"),
    pytest.param(
        _edit(guests="[" + _deep_object(5_000)[:-5_000] + "1" + "}" * 4_999 + "]"),
        "guests",
        id="array-of-deep-object",
    ),
    pytest.param(_edit(room_type=_deep(5_000)), "room_type nests deeper", id="enum-5000"),
    pytest.param(
        json.dumps({"decision": "edit", "fields": FIELDS})[:-1] + ', "x": ' + _deep(5_000) + "}",
        "the decision nests deeper",
        id="decision-itself",
    ),
    pytest.param(
        '{"decision": "reject", "reason": ' + _deep(50_000) + "}",
        "the decision nests deeper",
        id="decision-50000",
    ),
    pytest.param(_edit(rooms="9" * 5_000), "rooms: at most 300 digits", id="int-5000-digits"),
    pytest.param(_edit(price="9" * 5_000), "price: at most 300 digits", id="number-5000-digits"),
    pytest.param(
        _edit(price="1" * 400 + ".5"), "price: at most 300 digits", id="number-400-digits"
    ),
]


@pytest.mark.parametrize(("sent", "says"), DEEP)
def test_deep_json_from_the_page_is_one_line_in_the_status(
    tmp_path: Path, sent: str, says: str
) -> None:
    store = SessionStore(tmp_path / "s.db")
    request = _approval(store)
    handlers = QueueHandlers(store, DeskWorkflow(store))
    who = Annotator("kim", admin=False)
    opened = handlers.start(who)[2 + 16]
    assert opened is not None and opened.request_id == request.id
    with pytest.raises(ValueError) as refused:
        read_decision(request, sent)
    assert says in str(refused.value) and "\n" not in str(refused.value)
    shown = handlers.decide(who, opened, sent, [])
    status = str(shown[0])
    assert status.startswith("Refused, not sent: ") and "\n" not in status
    # The form is left as typed: every other output is "no change".
    assert all(isinstance(value, dict) and value.get("__type__") == "update" for value in shown[1:])
    assert shown[1:] == tuple(gr.skip() for _ in shown[1:])
    assert store.humans.human_answers(request.id) == []


def test_json_within_the_bound_is_read(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    request = _approval(store)
    nested = _deep_object(MAX_NESTING - 1)
    decision = read_decision(request, _edit(card=nested))
    assert decision.arguments is not None and decision.arguments["card"] == json.loads(nested)
    assert len(_edit(card=_deep_object(1_000))) < MAX_FIELD_CHARS + 1_000  # within the cap


@pytest.mark.parametrize(
    "body",
    [
        b'{"token": "t", "request_id": "r", "x": ' + _deep(2_000).encode() + b"}",
        _deep(2_040).encode(),
        b'{"token": ' + _deep(1_500).encode() + b', "request_id": "r"}',
    ],
    ids=["deep-extra", "deep-list", "deep-token"],
)
def test_a_deep_beacon_is_refused_as_malformed(body: bytes) -> None:
    assert beacon_fields(body) is None


def test_a_deep_beacon_is_answered_400_not_500(tmp_path: Path) -> None:
    with serve_app(tmp_path / "s.db", WebAuth()) as url:
        body = b'{"token": "t", "request_id": "r", "x": ' + _deep(2_000).encode() + b"}"
        reply = httpx.post(f"{url}aah/release", content=body)
        assert reply.status_code == 400 and reply.text.count("\n") == 1


# -- numbers ------------------------------------------------------------------

BAD_NUMBERS: list[Any] = [
    float("inf"),
    float("-inf"),
    float("nan"),
    1e300,
    10**400,
    0,
    -1,
    2.5,
    True,
    "abc",
    "1e999",
    "inf",
    "nan",
    [1],
    {"a": 1},
]


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=[repr(v)[:20] for v in BAD_NUMBERS])
def test_a_bad_number_in_a_box_is_one_line(value: Any) -> None:
    with pytest.raises(gr.Error) as refused:
        whole_number(value, MAX_TASKS, "set the tasks per setting to a whole number")
    assert "\n" not in str(refused.value.message)


@pytest.mark.parametrize(
    ("value", "number"), [(None, None), ("", None), (5, 5), (5.0, 5), ("7", 7), (MAX_PID, MAX_PID)]
)
def test_a_whole_number_in_a_box_is_read(value: Any, number: int | None) -> None:
    assert whole_number(value, MAX_PID, "no") == number


@pytest.fixture
def launch_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Client]]:
    monkeypatch.setenv("AAH_DATA_DIR", str(tmp_path / "no-data"))
    with serve_app(tmp_path / "s.db", WebAuth()) as url:
        api = Client(url, verbose=False)
        api.predict("admin", "", api_name="/sign_in")
        yield url, api


def _called(url: str, api: Client, name: str, data: str) -> str:
    """What the page's ``name`` event answers to ``data``, JSON as a client may spell it."""
    body = f'{{"data": {data}, "session_hash": "{api.session_hash}"}}'
    started = httpx.post(
        f"{url}gradio_api/call/{name}", content=body, headers={"content-type": "application/json"}
    )
    assert started.status_code == 200, started.text
    event = started.json()["event_id"]
    return httpx.get(f"{url}gradio_api/call/{name}/{event}", timeout=30).text


# Numbers a client may send for a box: JSON's extensions (which Python reads), huge, negative,
# fractional, text.
OVER_THE_API = ["Infinity", "-Infinity", "NaN", "1e300", "-3", "0", "2.5", '"lots"', "100001"]


@pytest.mark.parametrize("value", OVER_THE_API)
def test_the_launch_tabs_numbers_are_checked_over_the_api(
    launch_api: tuple[str, Client], tmp_path: Path, value: str
) -> None:
    url, api = launch_api
    calls = [
        ("launch_run", f'["web-1", "perfect", {value}, "", true]', "set the tasks per setting"),
        ("run_log", f"[{value}]", "type the process id of a run"),
        ("stop_run", f"[{value}]", "type the process id of a running run"),
    ]
    for name, data, says in calls:
        answer = _called(url, api, name, data)
        assert answer.startswith("event: error") and says in answer, answer[:300]
    assert not (tmp_path / "web-runs").exists()  # nothing was launched


@pytest.mark.parametrize("raw", ["1e300", "2592001", "1e9", "nan", "inf", "-1", "0", "5s"])
def test_a_lease_past_the_bound_says_what_to_set(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(LEASE_ENV, raw)
    with pytest.raises(ValueError, match=f"set {LEASE_ENV} to a positive number of seconds") as e:
        lease_from_env()
    assert "30 days" in str(e.value) and "\n" not in str(e.value)


def test_a_lease_within_the_bound_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEASE_ENV, "2592000")
    assert lease_from_env() == 2_592_000.0
