"""Links that decide one item: the page they open, over real HTTP, and the hostile cases.

Each test serves the web app on 127.0.0.1 and signs links with the key the
app derives from its kept secret, as ``aah web``'s notifier does; every
refusal is checked on the store too (nothing decided, nothing claimed).
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.annotators import check_annotator_name  # noqa: E402
from aah.config import get_settings  # noqa: E402
from aah.errors import AahError  # noqa: E402
from aah.secrets import scrub_text  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.ui.web.auth import Annotator, WebAuth  # noqa: E402
from aah.ui.web.decision_link import (  # noqa: E402
    DECIDE_PATH,
    EXPIRED,
    MAX_REQUEST_ID_CHARS,
    MAX_TOKEN_CHARS,
    NOT_A_LINK,
    USED,
    DecisionLinks,
    read_link,
)
from aah.ui.web.signin_token import SignInTokens, app_secret  # noqa: E402

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "decision_links.jsonl"
AUTH = WebAuth()


class Reply(NamedTuple):
    status: int
    body: str
    headers: dict[str, str]


class Site:
    """The served app, a link signer on its key, and raw HTTP to it (paths sent as given)."""

    def __init__(self, url: str, db: Path) -> None:
        self.url = url.rstrip("/")
        self.db = db
        self.store = SessionStore(db)
        self.links = links_for(db)
        parsed = urllib.parse.urlsplit(self.url)
        self.host, self.port = parsed.hostname or "", parsed.port or 80

    def token(self, request_id: str, **options: Any) -> str:
        return self.links.issue(request_id, **options)

    def get(self, path: str, host: str | None = None) -> Reply:
        return self._send("GET", path, None, {"Host": host or f"{self.host}:{self.port}"})

    def post(self, path: str, fields: dict[str, str], content_type: str = "") -> Reply:
        headers = {"Content-Type": content_type or "application/x-www-form-urlencoded"}
        return self._send("POST", path, urllib.parse.urlencode(fields).encode(), headers)

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=20)
        try:
            connection.putrequest(method, path, skip_host="Host" in headers)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body or b"")))
            connection.endheaders(body)
            answer = connection.getresponse()
            text = answer.read().decode("utf-8", errors="replace")
            return Reply(answer.status, text, {k.lower(): v for k, v in answer.getheaders()})
        finally:
            connection.close()


def links_for(db: Path, clock: Any = time.time) -> DecisionLinks:
    """The signer ``aah web`` on ``db`` would use (the app's kept secret, its own label)."""
    from aah.ui.web.decision_link import link_key

    key = link_key(db.parent, AUTH)
    assert key is not None
    return DecisionLinks(key, SessionStore(db), clock=clock)


def answer(text: str, name: str = "") -> dict[str, str]:
    fields = {"payload": json.dumps({"action": "answer", "text": text})}
    return fields | ({"name": name} if name else {})


def line(reply: Reply) -> str:
    """The one line a refusal or a confirmation says."""
    start = reply.body.index('<p id="decide-line">') + len('<p id="decide-line">')
    return reply.body[start : reply.body.index("</p>", start)].replace("&#x27;", "'")


def untouched(site: Site, request_id: str) -> None:
    record = site.store.humans.get_human_request(request_id)
    assert record is not None and record.status == "pending"
    assert site.store.humans.human_answers(request_id) == []
    entry = next(e for e in site.store.humans.queue_listing().entries if e.id == request_id)
    assert entry.claimed_by == ()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """One app for the module: each test seeds items of its own."""
    db = tmp_path_factory.mktemp("links") / "s.db"
    SessionStore(db).close()
    with serve_app(db, auth=AUTH) as url:
        yield Site(url, db)


def approval(db: Path) -> str:
    store = SessionStore(db)
    session = store.open_session("Book two rooms.", setting="perfect")
    store.set_status(session.id, "waiting")
    call = {
        "tool": "local__book",
        "method": "POST",
        "url": "http://127.0.0.1:9/book",
        "arguments": {"rooms": 2},
        "parameters": [{"name": "rooms", "type": "integer", "required": True}],
        "rule": "method POST",
    }
    context = {"query": "Book two rooms.", "approval": call}
    record = store.humans.create_human_request(
        session.id, "Approve this call?", context, kind="approval"
    )
    return record.id


# -- what a link does ------------------------------------------------------------


def test_a_group_link_opens_its_question_alone_and_answers_it_once_under_the_typed_name(
    site: Site,
) -> None:
    asked = seed_request(site.db, "Which <b>city</b>?").id
    other = seed_request(site.db, "Which day?").id
    path = DECIDE_PATH + site.token(asked)
    shown = site.get(path)
    assert shown.status == 200
    assert "Which &lt;b&gt;city&lt;/b&gt;?" in shown.body and "Which day?" not in shown.body
    assert 'id="decide-name"' in shown.body  # a group's link asks who decides
    assert "href=" not in shown.body  # nothing to go to from here: no queue, no other item
    assert shown.headers["referrer-policy"] == "same-origin"
    assert shown.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in shown.headers["content-security-policy"]
    untouched(site, asked)  # opening it (a chat's preview) decides and claims nothing

    sent = site.post(path, answer("Porto", name="Carol") | {"request_id": other})
    assert sent.status == 200, sent.body
    assert "Answer sent" in line(sent) and "carol" in line(sent)
    record = site.store.humans.get_human_request(asked)
    assert record is not None and record.status == "answered"
    assert (record.answer, record.answered_by) == ("Porto", "carol")
    untouched(site, other)  # a field naming another item is not read

    again = site.post(path, answer("Lisbon", name="dave"))
    assert (again.status, line(again)) == (410, USED)
    assert (site.get(path).status, line(site.get(path))) == (410, USED)
    assert [a.annotator for a in site.store.humans.human_answers(asked)] == ["carol"]


def test_a_persons_link_decides_a_call_as_that_person_whatever_name_is_sent(site: Site) -> None:
    call = approval(site.db)
    path = DECIDE_PATH + site.token(call, to="Dora")
    shown = site.get(path)
    assert shown.status == 200 and "local__book" in shown.body
    assert 'id="decide-name"' not in shown.body and "Sent to dora" in shown.body
    payload = json.dumps({"decision": "reject", "reason": "two is too many", "fields": {}})
    sent = site.post(path, {"payload": payload, "name": "mallory"})
    assert sent.status == 200 and line(sent).startswith("Rejected: POST local__book")
    record = site.store.humans.get_human_request(call)
    assert record is not None
    assert (record.decision, record.reason, record.answered_by) == (
        "reject",
        "two is too many",
        "dora",
    )


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ({"decision": "edit", "fields": {"rooms": "3"}}, ("edit", {"rooms": 3}, "")),
        (
            {"decision": "respond", "response": "booked already"},
            ("respond", None, "booked already"),
        ),
        ({"decision": "terminate"}, ("terminate", None, "")),
    ],
)
def test_every_decision_on_a_call_goes_through_a_link(
    site: Site, sent: dict[str, Any], stored: tuple[Any, ...]
) -> None:
    call = approval(site.db)
    reply = site.post(DECIDE_PATH + site.token(call, to="ivy"), {"payload": json.dumps(sent)})
    assert reply.status == 200 and "Stored as ivy's decision" in line(reply)
    record = site.store.humans.get_human_request(call)
    assert record is not None
    assert (record.decision, record.edited_arguments, record.answer) == stored


def test_a_refused_reply_keeps_the_link_and_says_why_on_the_page(site: Site) -> None:
    asked = seed_request(site.db).id
    path = DECIDE_PATH + site.token(asked)
    nameless = site.post(path, answer("Porto"))
    assert nameless.status == 400 and 'id="decide-problem" role="alert">Type your name' in (
        nameless.body
    )
    assert "&quot;text&quot;: &quot;Porto&quot;" in nameless.body  # the page puts it back
    empty = site.post(path, answer("  ", name="carol"))
    assert empty.status == 400 and "Type an answer" in empty.body
    untouched(site, asked)
    assert site.post(path, answer("Porto", name="carol")).status == 200


def test_a_link_for_an_item_someone_else_decided_says_so_and_stores_nothing(site: Site) -> None:
    asked = seed_request(site.db).id
    path = DECIDE_PATH + site.token(asked)
    assert site.store.humans.answer_human_request(asked, "erin", "Porto")
    for reply in (site.get(path), site.post(path, answer("Lisbon", name="carol"))):
        assert (reply.status, line(reply)) == (
            410,
            "This item was already decided by erin: nothing is left to do.",
        )
    assert [a.annotator for a in site.store.humans.human_answers(asked)] == ["erin"]


def test_an_item_someone_holds_on_the_desk_is_not_taken_from_them(site: Site) -> None:
    asked = seed_request(site.db).id
    assert site.store.humans.claim_request(asked, "frank", 60)
    reply = site.post(DECIDE_PATH + site.token(asked), answer("Porto", name="carol"))
    assert reply.status == 400 and "someone else has this item open" in reply.body.lower()
    assert site.store.humans.human_answers(asked) == []


def test_an_expired_link_says_so_in_one_line(site: Site) -> None:
    asked = seed_request(site.db).id
    old = links_for(site.db, clock=lambda: time.time() - 3601).issue(asked, minutes=60)
    for reply in (site.get(DECIDE_PATH + old), site.post(DECIDE_PATH + old, answer("x", "c"))):
        assert (reply.status, line(reply)) == (410, EXPIRED)
    untouched(site, asked)


def test_tokens_of_one_kind_are_no_tokens_of_the_other(site: Site) -> None:
    asked = seed_request(site.db).id
    sign_ins = SignInTokens(app_secret(site.db.parent, AUTH))
    sign_in = sign_ins.issue(Annotator("alice", admin=True))
    assert line(site.get(DECIDE_PATH + sign_in)) == NOT_A_LINK
    assert sign_ins.check(site.token(asked)) is None
    untouched(site, asked)


def test_only_the_app_s_own_host_name_reaches_the_page(site: Site) -> None:
    asked = seed_request(site.db).id
    reply = site.get(DECIDE_PATH + site.token(asked), host="evil.example")
    assert reply.status == 421 and 'id="decide-item"' not in reply.body


def test_a_token_issued_is_redacted_wherever_a_line_quotes_it(site: Site) -> None:
    token = site.token(seed_request(site.db).id)
    scrubbed = scrub_text(f"sending failed: {site.url}{DECIDE_PATH}{token} (HTTP 500)")
    assert scrubbed is not None and token not in scrubbed and token[-43:] not in scrubbed


# -- the hostile corpus ----------------------------------------------------------


def _corpus() -> list[dict[str, Any]]:
    return [json.loads(row) for row in CORPUS.read_text().splitlines() if row.strip()]


def _hostile_path(case: dict[str, Any], site: Site, asked: str, other: str) -> str:
    good, beside = site.token(asked), site.token(other)
    body, _, signature = good.partition(".")
    made = {
        "flip_signature": f"{body}.{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}",
        "flip_body": f"{body[:5]}{'x' if body[5] != 'x' else 'y'}{body[6:]}.{signature}",
        "other_item_body": f"{beside.partition('.')[0]}.{signature}",
        "truncated": good[:-3],
        "no_dot": body + signature,
        "two_dots": f"{good}.{signature}",
        "overlong": "a" * (MAX_TOKEN_CHARS + 1),
        "trailing_segment": f"{good}/../../gradio_api/info",
        "traversal_before": f"../../gradio_api/info/{good}",
        "encoded_slash": f"{good}%2F..%2F..%2Fgradio_api",
    }
    if "token" in case:
        return DECIDE_PATH + made[case["token"]]
    return str(case["path"]).replace("{token}", good)


@pytest.mark.parametrize("case", _corpus(), ids=lambda case: case["name"])
def test_every_hostile_link_in_the_corpus_is_refused(case: dict[str, Any], site: Site) -> None:
    asked, other = seed_request(site.db).id, seed_request(site.db, "Which day?").id
    path = _hostile_path(case, site, asked, other)
    shown = site.get(path)
    sent = site.post(path, answer("Porto", name="carol"))
    for reply in (shown, sent):
        assert reply.status in case["status"], (case["why"], reply.status, reply.body[:200])
        assert 'id="decide-item"' not in reply.body and "Stored as" not in reply.body
    untouched(site, asked)
    untouched(site, other)


# -- the token parser, generated -------------------------------------------------

_KEY = b"k" * 32
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."


class _NoneUsed:
    def sign_out_token(self, token_id: str, until: Any, *, now: Any) -> None:
        raise AssertionError("not used here")

    def is_signed_out(self, token_id: str) -> bool:
        return False


@settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    request_id=st.text(min_size=1, max_size=MAX_REQUEST_ID_CHARS),
    to=st.none() | st.from_regex(r"[a-z][a-z0-9 ._@-]{0,30}", fullmatch=True),
    spot=st.integers(min_value=0),
    char=st.sampled_from(_ALPHABET),
    noise=st.text(max_size=MAX_TOKEN_CHARS + 40) | st.text(alphabet=_ALPHABET, max_size=700),
)
def test_the_parser_reads_what_it_signed_and_nothing_else(
    request_id: str, to: str | None, spot: int, char: str, noise: str
) -> None:
    links = DecisionLinks(_KEY, _NoneUsed(), clock=lambda: 1_000_000.0)
    try:
        person = check_annotator_name(to) if to else None
    except ValueError:  # a reserved name, say: a group's link then
        person = None
    token = links.issue(request_id, to=person)
    claims = read_link(token, _KEY)
    assert claims is not None and (claims.request_id, claims.to) == (request_id, person)
    assert len(token) <= MAX_TOKEN_CHARS
    place = spot % len(token)
    if token[place] != char:
        changed = token[:place] + char + token[place + 1 :]
        assert read_link(changed, _KEY) is None
    assert read_link(token, b"x" * 32) is None
    assert read_link(noise, _KEY) is None  # never raises, never reads what it did not sign


# -- the settings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [("AAH_NOTIFY_LINKS", "6"), ("AAH_NOTIFY_LINKS", "-1"), ("AAH_NOTIFY_LINKS", "1e18")]
    + [("AAH_NOTIFY_LINK_MINUTES", value) for value in ("0", "1441", "nan", "inf", "-5")],
)
def test_a_link_setting_past_its_bounds_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(AahError) as refused:
        get_settings()
    assert str(refused.value).startswith(name) and "\n" not in str(refused.value)


def test_aah_web_signs_links_only_when_asked_and_for_a_name_a_person_may_use(
    tmp_path: Path,
) -> None:
    from aah.cli.web import _decision_links
    from aah.ui.web.notify import NotifySettings

    db = tmp_path / "s.db"
    store = SessionStore(db)
    off = NotifySettings(urls=("json://127.0.0.1:9/",), queue_url="http://q/")
    assert _decision_links(db, store, off) is None
    with pytest.raises(AahError) as refused:
        _decision_links(db, store, replace(off, links=2, link_to="a/b"))
    assert str(refused.value).startswith("AAH_NOTIFY_LINK_TO: use only letters")
    links = _decision_links(db, store, replace(off, links=2, link_to="Alice"))
    assert links is not None
    assert links_for(db).check(links.issue("r1", to="alice")).claims is not None
