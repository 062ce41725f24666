"""The web app through its HTTP API (gradio_client), served on 127.0.0.1."""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

import gradio as gr  # noqa: E402
import typer  # noqa: E402
from gradio_client import Client  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402
from typer.testing import CliRunner  # noqa: E402
from web_support import ORIGINAL_QUERY, seed_request, serve_app  # noqa: E402

from aah.errors import AahError  # noqa: E402
from aah.events import FinalAnswerEvent, ToolCallEvent  # noqa: E402
from aah.store.sessions import SessionStore  # noqa: E402
from aah.ui.web.auth import SignInLimiter, WebAuth  # noqa: E402
from aah.ui.web.format import plain  # noqa: E402

HOSTILE = "<img src=x onerror=alert(1)> [click](http://example.org) ![i](http://example.org/i.png)"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


@pytest.fixture
def served(db: Path) -> Iterator[str]:
    with serve_app(db) as url:
        yield url


def client(url: str) -> Client:
    return Client(url, verbose=False)


# What an API client gets back, by name (Gradio leaves out states and layout updates).
FORM = [
    "meta",
    "request",
    "briefing",
    "persona",
    "query",
    "conversation",
    "question",
    "answer",
    "rating",
]
FORM += ["approval"]  # the call's form (empty for a question)
FORM += ["user_tools", "request_id"]  # the person's own tools (empty when they hold none)
LISTS = ["summary", "table", "pick", "counter", "answered"]
SIGN_IN = ["signed_in", "timer", "saved", "status", *FORM, *LISTS]
ANSWER = ["status", "done", *FORM, "answered"]
OPEN = ["status", *FORM]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def cells(table: str) -> list[list[str]]:
    """The text of each body row of an HTML table the page shows."""
    parser = _Cells()
    parser.feed(table)
    return [row for row in parser.rows if row]


def named(names: list[str], values: tuple[Any, ...]) -> dict[str, Any]:
    assert len(names) == len(values), values
    return dict(zip(names, values, strict=True))


def signed_in(url: str, name: str, token: str = "") -> tuple[Client, dict[str, Any]]:
    api = client(url)
    return api, named(SIGN_IN, api.predict(name, token, api_name="/sign_in"))


def send(api: Client, answer: str, rating: int | None = None) -> dict[str, Any]:
    return named(ANSWER, api.predict(answer, rating, api_name="/send_answer"))


def test_sign_in_opens_the_oldest_question_and_send_opens_the_next(db: Path, served: str) -> None:
    first = seed_request(db, "Which city?")
    second = seed_request(db, "Which day?")
    api, shown = signed_in(served, "alice")
    assert "Signed in as **alice**" in shown["signed_in"]
    assert "2 questions wait" in shown["summary"] and "0** answered today" in shown["counter"]
    row = cells(shown["table"])[0]
    assert row[1:7] == ["-", "underspecified", "Weather?", "question", "Which city?", "open: yours"]
    label = "[no task · underspecified · “Weather?”] Which city?"
    assert shown["pick"]["choices"][0] == [label, first.id]
    assert shown["request_id"] == first.id and shown["question"] == "Which city?"
    assert shown["persona"]["value"] == ORIGINAL_QUERY  # "you are this user"

    after = send(api, "Porto", 1)
    assert "the agent goes on" in after["status"] and after["done"] == first.id
    assert after["request_id"] == second.id and after["answer"] == ""
    assert cells(after["answered"])[0][:3] == ["Which city?", "Porto", "answered"]
    # The counter (on the page: just after the answer) and the queue follow.
    lists = named(LISTS, api.predict(None, api_name="/refresh_queue"))
    assert "1** answered today" in lists["counter"] and "1** waiting" in lists["counter"]
    assert [row[5:7] for row in cells(lists["table"])] == [["Which day?", "open: yours"]]
    store = SessionStore(db)
    stored = store.humans.get_human_request(first.id)
    assert stored is not None and stored.status == "answered"
    assert stored.answered_by == "alice" and stored.answer == "Porto"
    (answer,) = store.humans.human_answers(first.id)
    assert answer.rating == 1 and not answer.declined and answer.seconds is not None

    # The rating is optional: a send without one stores NULL.
    last = send(api, "Tuesday")
    assert "the agent goes on" in last["status"] and "No free question" in last["status"]
    assert last["request_id"] == ""
    (unrated,) = store.humans.human_answers(second.id)
    assert unrated.rating is None and unrated.answer == "Tuesday"
    assert store.humans.requests_for("alice") == []


def test_decline_and_form_checks_are_status_lines(db: Path) -> None:
    request = seed_request(db)
    with serve_app(db, undo_seconds=0.3) as served:
        api, _ = signed_in(served, "bob")
        refused = send(api, "  ", 1)
        assert refused["status"] == "Type an answer, or press Decline (Esc) if you cannot answer."
        too_long = send(api, "x" * 4_001, 1)
        assert too_long["status"] == "Shorten the answer to at most 4,000 characters."
        declined = named(ANSWER, api.predict("", None, api_name="/decline_request"))
        assert declined["status"].startswith("Declined")
        store = SessionStore(db)
        deadline = time.monotonic() + 10  # the decline is sent once its undo time is over
        while not store.humans.human_answers(request.id) and time.monotonic() < deadline:
            time.sleep(0.05)
        (answer,) = store.humans.human_answers(request.id)
        assert answer.declined and answer.rating is None and answer.annotator == "bob"
        # Nothing open any more: a send says what to do instead of failing.
        assert send(api, "Porto")["status"].startswith("Nothing is open: press **n**")


def test_a_decline_and_a_skip_are_undone_over_the_api(db: Path, served: str) -> None:
    first = seed_request(db, "Which city?")
    second = seed_request(db, "Which day?")
    api, _ = signed_in(served, "bob")
    declined = named(ANSWER, api.predict("", None, api_name="/decline_request"))
    assert declined["request_id"] == second.id
    undone = named(["status", *FORM], api.predict(api_name="/undo"))
    assert undone["status"].startswith("Decline undone") and undone["request_id"] == first.id
    skipped = named(["status", *FORM], api.predict(api_name="/skip_request"))
    assert skipped["request_id"] == second.id
    undone = named(["status", *FORM], api.predict(api_name="/undo"))
    assert undone["status"].startswith("Skip undone") and undone["request_id"] == first.id
    # Nothing left to undo: one line, the open question stays.
    again = named(["status", *FORM], api.predict(api_name="/undo"))
    assert again["status"].startswith("Too late to undo")
    store = SessionStore(db)
    assert (
        store.humans.human_answers(first.id) == [] and store.humans.human_answers(second.id) == []
    )
    assert store.humans.queue_listing().entries[0].claimed_by == ("bob",)
    assert store.humans.queue_listing().entries[1].claimed_by == ()


def test_two_annotators_never_get_the_same_question(db: Path, served: str) -> None:
    first = seed_request(db, "Which city?")
    second = seed_request(db, "Which day?")
    alice, _ = signed_in(served, "alice")
    bob, shown = signed_in(served, "bob")
    assert shown["request_id"] == second.id  # the first is alice's
    rows = {row[5]: row[6] for row in cells(shown["table"])}
    assert rows == {"Which city?": "taken by alice", "Which day?": "open: yours"}
    assert [choice[1] for choice in shown["pick"]["choices"]] == [second.id]
    # Opening alice's question by hand (a stale picker) gives the next free one instead.
    opened = named(OPEN, bob.predict(first.id, api_name="/open_request"))
    assert opened["status"].startswith("Someone else has that question now")
    assert opened["request_id"] == second.id
    # A value the picker never offered is refused in one line, not by Gradio.
    opened = named(OPEN, bob.predict("no-such-id", api_name="/open_request"))
    assert opened["status"].startswith("Someone else has that question now")
    # Alice skips, but nothing else is free: her question comes back to her.
    skipped = named(["status", *FORM], alice.predict(api_name="/skip_request"))
    assert skipped["status"].endswith(
        "Only questions you skipped are left: here is the first of them again."
    )
    assert skipped["request_id"] == first.id
    after = send(bob, "Tuesday")
    assert after["request_id"] == "" and "No free question" in after["status"]


def test_a_skip_passes_over_the_question_and_comes_back_to_it_last(db: Path, served: str) -> None:
    first = seed_request(db, "Which city?")
    second = seed_request(db, "Which day?")
    api, shown = signed_in(served, "alice")
    assert shown["request_id"] == first.id
    skipped = named(["status", *FORM], api.predict(api_name="/skip_request"))
    assert skipped["request_id"] == second.id and skipped["status"].startswith("Skipped")
    again = named(["status", *FORM], api.predict(api_name="/skip_request"))
    assert again["request_id"] == first.id
    assert again["status"].endswith(
        "Only questions you skipped are left: here is the first of them again."
    )


def test_next_keeps_an_open_question_and_opens_one_when_none_is(db: Path, served: str) -> None:
    first = seed_request(db, "Which city?")
    api, shown = signed_in(served, "alice")
    assert shown["request_id"] == first.id
    # Next (the page presses it by itself when a question arrives) never lets go of one.
    kept = named(["status", *FORM], api.predict(api_name="/next_request"))
    assert kept["status"].startswith("A question is open")
    assert SessionStore(db).humans.queue_listing().entries[0].claimed_by == ("alice",)
    after = send(api, "Porto")
    assert after["request_id"] == "" and "No free question" in after["status"]
    second = seed_request(db, "Which day?")
    opened = named(["status", *FORM], api.predict(api_name="/next_request"))
    assert opened["request_id"] == second.id


def test_nothing_is_done_anonymously(db: Path, served: str) -> None:
    request = seed_request(db)
    api = client(served)
    opened = named(OPEN, api.predict(request.id, api_name="/open_request"))
    assert opened["status"] == "Sign in first (top of the page): answers are never anonymous."
    assert send(api, "Porto", 1)["status"].startswith("Sign in first")
    assert api.predict(None, api_name="/refresh_queue")[0].startswith("Sign in")
    for endpoint, args in [
        ("/next_to_label", [None]),
        ("/launch_run", ["r", "perfect", 1, "", True]),
    ]:
        with pytest.raises(AppError, match="sign in first"):
            api.predict(*args, api_name=endpoint)
    for name, message in [(" ", "Type your name"), ("oracle", "'oracle' is reserved")]:
        shown = named(SIGN_IN, api.predict(name, "", api_name="/sign_in"))
        assert shown["signed_in"].startswith(message)
    assert SessionStore(db).humans.human_answers(request.id) == []


def test_token_required_when_set(db: Path) -> None:
    auth = WebAuth(token="team-token", admin_token="admin-token")
    with serve_app(db, auth) as url:
        for wrong in ("guess", ""):
            _, shown = signed_in(url, "alice", wrong)
            assert shown["signed_in"] == (
                "Wrong access token: ask the admin for the current AAH_WEB_TOKEN."
            )
        api, shown = signed_in(url, "alice", "team-token")
        assert "admin" not in shown["signed_in"]
        with pytest.raises(AppError, match="only an admin"):
            api.predict("r", "perfect", 1, "", True, api_name="/launch_run")
        _, shown = signed_in(url, "carol", "admin-token")
        assert "admin" in shown["signed_in"]


def test_a_saved_sign_in_signs_in_again_and_a_bad_one_is_dropped(db: Path) -> None:
    auth = WebAuth(token="team-token")
    with serve_app(db, auth) as url:
        _, shown = signed_in(url, "alice", "team-token")
        saved = shown["saved"]
        again = named(SIGN_IN, client(url).predict(saved, api_name="/restore_sign_in"))
        assert again["signed_in"].startswith("Signed in as **alice**")
        forged = saved[:-2] + ("AA" if not saved.endswith("AA") else "BB")
        for bad in (forged, "x.y", "not a token"):
            refused = named(SIGN_IN, client(url).predict(bad, api_name="/restore_sign_in"))
            assert refused["signed_in"].startswith("Your saved sign-in has expired")
            assert refused["saved"] == ""
    # A new token in force signs every saved page out.
    with serve_app(db, WebAuth(token="new-token")) as url:
        refused = named(SIGN_IN, client(url).predict(saved, api_name="/restore_sign_in"))
        assert refused["signed_in"].startswith("Your saved sign-in has expired")


def test_token_rules() -> None:
    assert WebAuth().sign_in("a", "").admin  # a local app: everyone may launch
    assert not WebAuth(token="t").sign_in("a", "t").admin
    assert WebAuth(admin_token="x").sign_in("a", "x").admin
    assert not WebAuth(admin_token="x").sign_in("a", "").admin


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_wrong_tokens_are_limited_per_client() -> None:
    clock = _Clock()
    auth = WebAuth(token="team-token", limiter=SignInLimiter(clock=clock))
    for _ in range(5):
        with pytest.raises(gr.Error, match="wrong access token"):
            auth.sign_in("alice", "guess", "10.0.0.1")
    # The right token too must wait: the limit is on attempts, not on luck.
    with pytest.raises(gr.Error, match=r"try again in 60 s'?$"):
        auth.sign_in("alice", "team-token", "10.0.0.1")
    assert auth.sign_in("bob", "team-token", "10.0.0.2").name == "bob"  # another client
    clock.now += 30
    with pytest.raises(gr.Error, match=r"try again in 30 s'?$"):
        auth.sign_in("alice", "guess", "10.0.0.1")
    clock.now += 30
    assert auth.sign_in("alice", "team-token", "10.0.0.1").name == "alice"
    # A bad name is not a guess at the token and never counts.
    for _ in range(10):
        with pytest.raises(gr.Error, match="reserved"):
            auth.sign_in("oracle", "team-token", "10.0.0.3")
    assert auth.sign_in("carol", "team-token", "10.0.0.3").name == "carol"


def test_a_burst_of_wrong_tokens_over_the_api_is_throttled(db: Path) -> None:
    with serve_app(db, WebAuth(token="team-token")) as url:
        api = client(url)
        messages = []
        started = time.monotonic()
        for attempt in range(20):
            shown = api.predict("alice", f"guess-{attempt}", api_name="/sign_in")
            messages.append(named(SIGN_IN, shown)["signed_in"])
        assert time.monotonic() - started < 30
        assert all(m.startswith("Wrong access token") for m in messages[:5])
        assert all(m.startswith("Too many failed sign-ins") for m in messages[5:]), messages
        shown = named(SIGN_IN, api.predict("alice", "team-token", api_name="/sign_in"))
        assert "try again in" in shown["signed_in"]


def test_overlap_keeps_later_answers_for_agreement(db: Path, served: str) -> None:
    request = seed_request(db, k=2)
    alice, shown = signed_in(served, "alice")
    assert shown["request_id"] == request.id
    bob, shown = signed_in(served, "bob")
    assert shown["request_id"] == request.id  # k = 2: both may hold it
    assert "goes on" in send(alice, "Porto", 1)["status"]
    assert "kept for agreement" in send(bob, "Lisbon", 0)["status"]
    store = SessionStore(db)
    stored = store.humans.get_human_request(request.id)
    assert stored is not None and stored.answer == "Porto" and stored.answered_by == "alice"
    assert [a.annotator for a in store.humans.human_answers(request.id)] == ["alice", "bob"]
    _, shown = signed_in(served, "carol")
    assert shown["request_id"] == "" and shown["pick"]["choices"] == []  # k answers reached


def test_model_text_is_never_markup(db: Path, served: str) -> None:
    seed_request(db, HOSTILE, context={"setting": HOSTILE, "task_id": "<script>x"})
    api, shown = signed_in(served, "alice")
    assert "<img" not in shown["table"] and "<script" not in shown["table"]
    assert cells(shown["table"])[0][5].startswith("<img")  # a table cell: shown as text
    assert "<" not in shown["meta"] and "](" not in shown["meta"]
    note = send(api, "ok", 1)["status"]
    assert "<" not in note and "](" not in note and "![" not in note


def test_plain_makes_markdown_inert() -> None:
    assert plain("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert plain("[a](http://e.org)") == "\\[a\\]\\(http\\://e\\.org\\)"
    assert plain("line\n# heading") == "line \\# heading"


# Status lines go through plain() into gr.Markdown: each must read as written.
STATUS_TEXTS = [
    "it's Bob's run",
    'say "hi"',
    "a < b > c & d",
    "<img src=x onerror=alert(1)>",
    "[click](http://example.org)",
    "![i](http://example.org/i.png)",
    "# heading",
    "> quoted",
    "**bold** _it_ `code`",
    "&#x27; and &amp; as typed",
    "back\\slash \\' mixed",
    "1. list",
    "- item",
    "table | cell",
]


@pytest.mark.parametrize("text", STATUS_TEXTS)
def test_status_lines_show_text_as_written(text: str) -> None:
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").render(plain(text))
    assert rendered.startswith("<p>") and rendered.endswith("</p>\n")
    inner = rendered[3:-5]
    assert "<" not in inner  # no element of its own
    assert html.unescape(inner) == text


def _finished_session(db: Path) -> str:
    store = SessionStore(db)
    store.create_run("r1", {"human": "queue"})
    session = store.open_session("Weather in Porto?", run="r1", task_id="t1", setting="perfect")
    store.append_event(
        ToolCallEvent(
            session_id=session.id,
            call_id="c1",
            tool="weather__forecast",
            arguments={"city": "Porto"},
            status_code=200,
            ok=True,
            result='{"temp": 21}',
        )
    )
    store.append_event(FinalAnswerEvent(session_id=session.id, text="21 C in Porto."))
    store.finish_session(session.id, final_answer="21 C in Porto.")
    return session.id


def test_grading_stores_a_human_label(db: Path, served: str) -> None:
    session_id = _finished_session(db)
    api, _ = signed_in(served, "alice")
    assert api.predict(None, api_name="/grading_runs")["choices"][0][1] == "r1"
    shown = api.predict("r1", api_name="/next_to_label")
    assert shown[1] == "Weather in Porto?" and shown[2] == "21 C in Porto."
    assert "weather__forecast" in shown[3] and "HTTP 200" in shown[3]
    after = api.predict("r1", api_name="/label_pass")
    assert "Nothing left to label" in after[0]
    (grade,) = SessionStore(db).grades(session_id)
    assert grade.grader_model == "human:alice" and grade.verdict == "pass"
    assert grade.prompt_version == "human-label/1"
    assert grade.votes == [{"annotator": "alice", "vote": "pass"}]
    bob, _ = signed_in(served, "bob")
    bob.predict(None, api_name="/grading_runs")
    assert bob.predict("r1", api_name="/next_to_label")[2] == "21 C in Porto."


def test_results_show_the_report_in_a_sandboxed_frame(db: Path, served: str) -> None:
    session_id = _finished_session(db)
    store = SessionStore(db)
    store.finish_session(session_id, final_answer="<script>alert(1)</script>")
    store.add_grade(session_id, "grader-model", "grader/1", ["Fail"], "fail")  # shown as example
    api, _ = signed_in(served, "alice")
    frame = api.predict([], api_name="/show_report")
    assert frame.startswith('<iframe title="report" sandbox=""')
    document = html.unescape(frame.split('srcdoc="', 1)[1].split('"', 1)[0])
    assert "<h1>aah report</h1>" in document and "r1" in document
    assert "<script" not in document and "&lt;script&gt;" in document


def test_admin_launches_and_stops_a_queue_run(
    db: Path, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A data folder that does not exist: were the child to get far, it fails offline.
    monkeypatch.setenv("AAH_DATA_DIR", str(db.parent / "no-data"))
    api, _ = signed_in(served, "admin")
    note, table, pid, _ = api.predict("web-1", "perfect", 2, "", True, api_name="/launch_run")
    assert f"process {pid}" in note and table["data"][0][:2] == ["web-1", str(pid)]
    assert "Asked process" in api.predict(pid, api_name="/stop_run")[0]
    deadline = time.monotonic() + 10
    while table["data"][0][2] == "running" and time.monotonic() < deadline:
        table, _ = api.predict(pid, api_name="/run_log")
        time.sleep(0.1)
    assert table["data"][0][2].startswith("exited")
    assert Path(table["data"][0][4]).parent == db.parent / "web-runs"
    with pytest.raises(AppError, match="name the run"):
        api.predict("-rm", "perfect", 2, "", True, api_name="/launch_run")


def test_log_tail_keeps_the_last_redraw(tmp_path: Path) -> None:
    from aah.ui.web.launch import log_tail

    log = tmp_path / "run.log"
    log.write_bytes(b"run r: 3 tasks\r 1/3\r 2/3\r 3/3\nerror: boom\n")
    assert log_tail(log) == "3/3\nerror: boom"


def test_bench_command_asks_the_queue(tmp_path: Path) -> None:
    from aah.ui.web.launch import LaunchRequest, bench_command

    command = bench_command(tmp_path / "s.db", LaunchRequest("r", "perfect", 3, "m1", False))
    assert command[1:5] == ["-m", "aah", "bench", "run"]
    assert ["--human", "queue"] == command[command.index("--human") : command.index("--human") + 2]
    assert "--no-aah" in command and command[-4:] == ["--limit", "3", "--model", "m1"]


def test_cli_says_which_extra_is_missing(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    import sys

    from aah.cli.web import web

    for name in [m for m in sys.modules if m == "aah.ui.web.app" or m.startswith("aah.ui.web_")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "gradio", None)
    cli = typer.Typer()
    cli.command()(web)
    result = CliRunner().invoke(cli, ["--db", str(db)])
    assert isinstance(result.exception, AahError)
    assert str(result.exception) == "the web app needs the ui extra: pip install 'aah[ui]'"


def test_a_bad_lease_setting_stops_the_app_with_one_line(
    monkeypatch: pytest.MonkeyPatch, db: Path
) -> None:
    from aah.ui.web.app import build_app

    monkeypatch.setenv("AAH_WEB_LEASE_SECONDS", "ten minutes")
    with pytest.raises(
        AahError, match="^set AAH_WEB_LEASE_SECONDS to a positive number of seconds"
    ):
        build_app(db)


def test_a_page_slow_to_answer_is_waited_for_and_one_that_never_does_is_one_line() -> None:
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from aah.ui.web.app import _wait_until_serving

    class Slow(BaseHTTPRequestHandler):
        calls = 0

        def do_HEAD(self) -> None:  # noqa: N802 - the standard library's name
            Slow.calls += 1
            if Slow.calls == 1:
                time.sleep(6)  # longer than one try's 5 s: Gradio's own check gave up here
            self.send_response(404)  # any HTTP answer means the server is up
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Slow) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        _wait_until_serving(f"http://127.0.0.1:{server.server_address[1]}/", timeout=30)
        server.shutdown()
    assert Slow.calls >= 2
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # nothing listens on it
    with pytest.raises(AahError, match="did not answer within 1 s") as caught:
        _wait_until_serving(f"http://127.0.0.1:{closed}/", timeout=1)
    assert "\n" not in str(caught.value) and "start it again" in str(caught.value)
