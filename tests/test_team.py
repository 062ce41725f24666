"""A team at the desk (issue 46): assignment, blind reviews, corrections kept, each person's figures."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_cluster import raw_rows
from test_desk_schema_7 import _execute
from typer.testing import CliRunner

from aah.cli import app
from aah.clock import FakeClock
from aah.db_url import DatabaseURL
from aah.desk.team import (
    MAX_GUIDELINES_BYTES,
    ReviewDesk,
    read_guidelines,
    set_groups,
    set_reviewers,
    team_figures,
)
from aah.errors import AahError
from aah.store import SessionStore, copy_database
from aah.store.schema import SCHEMA_SQL, SCHEMA_VERSION
from aah.store.team import Person


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(store_location: Path, clock: FakeClock) -> Iterator[SessionStore]:
    """A new store on each engine, on ``clock``."""
    with SessionStore(store_location, clock=clock) as opened:
        yield opened


def waiting(store: SessionStore, question: str, *, run: str | None = "r", k: int = 1) -> str:
    if run is not None and store.get_run(run) is None:
        store.create_run(run, {})
    session = store.open_session("q", setting="perfect", run=run)
    store.set_status(session.id, "waiting")
    return store.humans.create_human_request(session.id, question, {"query": "q"}, k=k).id


def test_an_assigned_item_is_offered_only_to_its_assignees(store: SessionStore) -> None:
    mine = waiting(store, "For alice?")
    anyone = waiting(store, "For anyone?")
    store.team.set_person("Bob", "annotator", "nl")
    assert store.team.assign(["ALICE "], request_id=mine) == ["alice"]

    assert [e.id for e in store.humans.queue_listing("bob").entries] == [anyone]
    assert store.humans.queue_listing("bob").total == 1
    assert store.humans.queue_listing("alice").total == 2
    assert store.humans.claim_request(mine, "bob") is False
    # Assigning an item someone else holds frees it for its assignee.
    assert store.humans.claim_request(anyone, "carol") is True
    store.team.assign(["alice"], request_id=anyone)
    assert store.humans.claim_request(anyone, "alice") is True
    store.team.assign([], request_id=anyone)
    store.humans.release_claim(anyone, "alice")
    assert store.team.offered_to(mine, "bob") is False and store.team.assignees(mine) == ["alice"]

    # A group: bob's, through his team; the run's assignment covers its other items.
    store.team.assign(["@nl"], run="r")
    assert store.team.assignees(anyone) == ["@nl"]
    assert store.humans.queue_listing("carol").total == 0
    assert store.humans.queue_listing("alice").total == 1  # her own item beats the run's
    claimed = store.humans.claim_next("bob")
    assert claimed is not None and claimed.id == anyone

    # Assigned to nobody again: everyone's.
    store.team.assign([], run="r")
    store.team.assign([], request_id=mine)
    assert [e.id for e in store.humans.queue_listing("carol").entries] == [mine]  # bob holds one
    with pytest.raises(AahError, match="no item 'nope'"):
        store.team.assign(["x"], request_id="nope")


def test_a_reviewer_is_blind_to_the_others_and_never_reviews_their_own(
    store: SessionStore, clock: FakeClock
) -> None:
    store.create_run("r", {})
    store.team.set_run_team("r", reviewers=2)
    first = waiting(store, "Which city?")
    store.humans.answer_human_request(first, "ann", "Porto")
    for name in ("rita", "ray", "ann"):
        store.team.set_person(name, "reviewer")
    desk = ReviewDesk(store)

    assert desk.next_for("ann") is None  # her own answer
    item = desk.next_for("rita")
    assert item is not None and (item.request_id, item.annotator, item.answer) == (
        first,
        "ann",
        "Porto",
    )
    assert not hasattr(item, "verdict")  # nothing of any other review
    clock.advance(12)
    record = desk.review("rita", first, "accept")
    assert record.seconds == pytest.approx(12)
    # Two reviewers wanted: ray still gets it, rita no more.
    assert desk.next_for("rita") is None
    seen = desk.next_for("ray")
    assert seen == item
    desk.review("ray", first, "correct", correction="Porto, Portugal", note="the country too")
    assert desk.next_for("zed", admin=True) is None  # both reviews given

    with pytest.raises(AahError, match="you answered this item"):
        store.team.add_review("ann", first, "accept")
    with pytest.raises(AahError, match="only reviewers review"):
        desk.next_for("bob")


def test_a_correction_is_a_row_of_its_own_and_the_original_stays(
    store: SessionStore, store_location: Path
) -> None:
    request = waiting(store, "Which day?")
    store.humans.answer_human_request(request, "ann", "Tuesday")
    with pytest.raises(AahError, match="type the corrected answer"):
        store.team.add_review("rita", request, "correct", note="wrong day")
    store.team.add_review("rita", request, "correct", correction="Wednesday", note="said Wed")
    with pytest.raises(AahError, match="reviewed this item already"):
        store.team.add_review("rita", request, "accept")

    (original,) = store.humans.human_answers(request)
    assert original.answer == "Tuesday" and original.annotator == "ann"
    stored = store.humans.get_human_request(request)
    assert stored is not None and stored.answer == "Tuesday"
    (review,) = store.team.reviews(request)
    assert (review.verdict, review.correction, review.note) == ("correct", "Wednesday", "said Wed")
    rows = raw_rows(store_location, "SELECT reviewer, verdict, correction FROM reviews")
    assert rows == [("rita", "correct", "Wednesday")]


def test_figures_match_agreement_computed_by_hand(store: SessionStore) -> None:
    """Two annotators on four items (3 agree), two reviewers on four (2 agree): by hand.

    Annotators: labels (porto, porto), (monday, monday), (declined, declined),
    (red, blue). p_o = 3/4; each labels porto, monday, declined once and one
    colour, so p_e = (1+1+1+0+0)/16 = 3/16; kappa = (3/4 - 3/16) / (13/16) = 9/13.
    Reviewers: (accept, accept), (accept, correct), (correct, correct),
    (accept, correct): p_o = 2/4; rita 3 accept 1 correct, ray 1 accept 3
    correct: p_e = (3*1 + 1*3)/16 = 6/16; kappa = (1/2 - 3/8) / (5/8) = 1/5.
    """
    store.create_run("r", {})
    store.team.set_run_team("r", reviewers=2)
    replies = [("Porto", " porto"), ("Monday", "monday"), (None, None), ("red", "blue")]
    requests = []
    for n, (first, second) in enumerate(replies):
        request = waiting(store, f"Q{n}?", k=2)
        requests.append(request)
        for name, reply in (("ann", first), ("bo", second)):
            if reply is None:
                store.humans.answer_human_request(request, name, "", declined=True, seconds=4.0)
            else:
                store.humans.answer_human_request(request, name, reply, seconds=float(2 + n))
    verdicts = [("accept", "accept"), ("accept", "correct"), ("correct", "correct")]
    verdicts.append(("accept", "correct"))
    for request, (rita, ray) in zip(requests, verdicts, strict=True):
        for name, verdict in (("rita", rita), ("ray", ray)):
            store.team.add_review(name, request, verdict, correction="x", seconds=3.0)  # type: ignore[arg-type]

    figures = team_figures(store, ["r"])
    assert figures.annotators.agreement.k == 3 and figures.annotators.agreement.n == 4
    assert figures.annotators.kappa == pytest.approx(9 / 13)
    assert figures.reviewers.agreement.k == 2 and figures.reviewers.kappa == pytest.approx(1 / 5)
    people = {p.name: p for p in figures.people}
    ann = people["ann"]
    assert (ann.done, ann.offered) == (4, 4)
    assert ann.median_seconds == pytest.approx(3.5)  # 2, 3, 4, 5
    assert ann.vs_people["bo"].kappa == pytest.approx(9 / 13)
    # ann's answers came first, so every review judged hers: 4 accepts of 8.
    assert (ann.accepted.k, ann.accepted.n) == (4, 8)
    assert people["rita"].reviews_given == 4 and people["rita"].vs_reviewers["ray"].kappa == (
        pytest.approx(1 / 5)
    )
    by_item = {i.request_id: (i.answer_agreement.k, i.review_agreement.k) for i in figures.items}
    assert [by_item[request] for request in requests] == [(1, 1), (1, 0), (1, 1), (0, 0)]


def test_a_runs_guidelines_reviewers_and_assignees_are_stored_before_it_starts(
    tmp_path: Path,
) -> None:
    """``aah bench run --guidelines/--reviewers/--assign``: stored, or refused in one line."""
    db = tmp_path / "s.db"
    guide = tmp_path / "guide.md"
    guide.write_text("# Be brief\nAnswer as the user would.", encoding="utf-8")
    base = ["bench", "run", "--benchmark", "tau2", "--run", "shift", "--db", str(db)]
    # The team's flags are stored first; the run then stops on its own unknown --user.
    done = CliRunner().invoke(
        app,
        [*base, "--guidelines", str(guide), "--reviewers", "2", "--assign", "ann, @nl",
         "--user", "nobody"],
    )  # fmt: skip
    assert "unknown --user" in str(done.exception)
    with SessionStore(db) as store:
        team = store.team.run_team("shift")
        assert team.reviewers == 2 and team.guidelines is not None
        assert team.guidelines.startswith("# Be brief")
        store.create_run("shift", {})
        session = store.open_session("q", run="shift")
        store.set_status(session.id, "waiting")
        request = store.humans.create_human_request(session.id, "Q?", {"query": "q"})
        assert store.team.assignees(request.id) == ["ann", "@nl"]
        assert store.team.guidelines_for(request.id) == team.guidelines

    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (MAX_GUIDELINES_BYTES + 1))
    bad = tmp_path / "latin1.md"
    bad.write_bytes(b"caf\xe9")
    done = CliRunner().invoke(app, [*base, "--guidelines", str(tmp_path / "none.md")])
    assert isinstance(done.exception, AahError), done.output
    assert (
        str(done.exception) == f"--guidelines {tmp_path / 'none.md'}: no such file: check the path"
    )
    for path, said in [
        (tmp_path, "is a folder"),
        (big, "more than 65,536 bytes"),
        (bad, "not UTF-8"),
    ]:
        with pytest.raises(AahError) as refused:
            read_guidelines(path)
        text = str(refused.value)
        assert said in text and "\n" not in text and text.startswith("--guidelines")


def test_reviewers_are_named_when_the_web_app_starts(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        set_reviewers(store, ["Rita", "ray:nl"])
        assert store.team.people() == [
            Person("ray", "reviewer", "nl"),
            Person("rita", "reviewer", None),
        ]
        with pytest.raises(AahError, match="--reviewer :nl: type your name"):
            set_reviewers(store, [":nl"])


TEAM_TABLES = ("people", "assignments", "run_team", "reviews")


def test_a_version_8_store_gets_the_team_tables_and_its_queue_reads_as_before(
    store_location: Path,
) -> None:
    """Schema 9 only adds tables: a store of 8 (either engine) gains them when opened."""
    if isinstance(store_location, DatabaseURL):
        SessionStore(store_location).close()
        drops = [(f"DROP TABLE {table}", ()) for table in TEAM_TABLES]
        _execute(store_location, [*drops, ("UPDATE aah_schema SET version = 8", ())])
    else:
        store_location.parent.mkdir(parents=True, exist_ok=True)
        v8 = SCHEMA_SQL.split("-- A team (schema 9)")[0]
        with contextlib.closing(sqlite3.connect(store_location)) as conn:
            conn.executescript(v8)
            conn.execute("PRAGMA user_version = 8")
    asked = "2026-01-01T00:00:00+00:00"
    _execute(
        store_location,
        [
            (
                "INSERT INTO sessions (id, query, aah, thread_id, started, status)"
                " VALUES ('s1', 'q', 1, 's1', ?, 'waiting')",
                (asked,),
            ),
            (
                "INSERT INTO human_requests (id, session_id, question, created)"
                " VALUES ('old', 's1', 'Before', ?)",
                (asked,),
            ),
        ],
    )
    with SessionStore(store_location) as store:
        assert [entry.id for entry in store.humans.queue_listing("ann").entries] == ["old"]
        store.humans.answer_human_request("old", "ann", "Words")
        store.team.add_review("rita", "old", "accept")
        assert [r.verdict for r in store.team.reviews("old")] == ["accept"]
    found = raw_rows(store_location, "SELECT count(*) FROM reviews")
    assert found == [(1,)] and SCHEMA_VERSION >= 9


def test_a_decision_is_reviewed_with_its_arguments_and_compared_by_decision(
    store: SessionStore,
) -> None:
    store.create_run("r", {})
    session = store.open_session("q", run="r")
    store.set_status(session.id, "waiting")
    request = store.humans.create_human_request(
        session.id, "Approve this call? book(city)", {}, kind="approval", k=2
    )
    store.humans.decide_approval(request.id, "ann", "edit", arguments={"city": "<Porto>"})
    store.humans.decide_approval(request.id, "bo", "reject", reason="wrong day")
    item = store.team.next_review("rita")
    assert item is not None and (item.kind, item.decision) == ("approval", "edit")
    pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
    from aah.ui.web.review_page import item_html

    shown = item_html(store, item)
    assert "<b>edit</b>" in shown and "&lt;Porto&gt;" in shown and "<Porto>" not in shown
    figures = team_figures(store, ["r"])
    assert figures.annotators.agreement.k == 0 and figures.annotators.agreement.n == 1


def test_a_copy_of_the_store_keeps_its_team(tmp_path: Path, store_location: Path) -> None:
    """``aah db copy`` (to SQLite or PostgreSQL) carries roles, assignments, settings, reviews."""
    source = tmp_path / "source.db"
    with SessionStore(source) as store:
        request = waiting(store, "Which city?")
        store.team.set_person("rita", "reviewer", "nl")
        store.team.set_run_team("r", reviewers=2, guidelines="# Be brief")
        store.team.assign(["@nl"], run="r")
        store.team.assign(["ann"], request_id=request)
        store.humans.answer_human_request(request, "ann", "Porto")
        store.team.add_review("rita", request, "correct", correction="Lisbon", note="n")
    summary = copy_database(source, store_location)
    assert summary.problems == []
    with SessionStore(store_location) as copied:
        assert copied.team.people() == [Person("rita", "reviewer", "nl")]
        assert copied.team.run_team("r").guidelines == "# Be brief"
        assert copied.team.assignees(request) == ["ann"]
        (review,) = copied.team.reviews(request)
        assert (review.annotator, review.reviewer, review.correction) == ("ann", "rita", "Lisbon")
        copied.team.assign(["bo"], run="r")  # a new assignment gets a fresh id there


def test_two_reviewers_on_the_last_place_the_first_to_send_has_it(store: SessionStore) -> None:
    request = waiting(store, "Which city?")  # run r: one reviewer an item (the default)
    store.humans.answer_human_request(request, "ann", "Porto")
    for name in ("rita", "ray"):
        store.team.set_person(name, "reviewer")
    desk = ReviewDesk(store)
    assert desk.next_for("rita") == desk.next_for("ray")  # both opened it, blind
    desk.review("ray", request, "accept")
    with pytest.raises(AahError, match="has all the reviews its run asks for"):
        desk.review("rita", request, "correct", correction="Lisbon")
    assert [r.reviewer for r in store.team.reviews(request)] == ["ray"]


def test_the_admins_assign_items_by_their_ids_first_characters(store: SessionStore) -> None:
    pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")
    from aah.ui.web.assign_page import assign

    first, second = waiting(store, "A?"), waiting(store, "B?")
    said = assign(store, "item", f"{first[:8]}, {second[:6]}", "Ann, @nl")
    assert said == (f"Items **{first[:8]}, {second[:8]}**: offered only to ann, @nl.")
    assert store.team.assignees(second) == ["ann", "@nl"]
    assert assign(store, "run", "r", "") == "Run **r**'s items: everyone's again."
    for given, message in [("zzzz", "no item's id starts with 'zzzz'"), ("", "type an item's id")]:
        with pytest.raises(AahError, match=message):
            assign(store, "item", given, "ann")
    with pytest.raises(AahError, match="no run 'nope'"):
        assign(store, "run", "nope", "ann")


def test_team_inputs_are_bounded_and_refused_in_one_line(store: SessionStore) -> None:
    request = waiting(store, "Which city?")
    store.humans.answer_human_request(request, "ann", "Porto")
    for names, said in [
        (["x" * 41], "at most 40 characters"),
        (["@"], "type your name"),
        (["аlice"], "one script"),
        ([f"p{n}" for n in range(101)], "at most 100 people or groups"),
    ]:
        with pytest.raises(AahError, match=said) as refused:
            store.team.assign(names, request_id=request)
        assert "\n" not in str(refused.value)
    assert store.team.assignees(request) == []
    for field in ("correction", "note"):
        with pytest.raises(AahError, match=f"a {field} holds at most 4,000 characters"):
            store.team.add_review(
                "rita", request, "correct", **{"correction": "x", field: "y" * 4001}
            )
    assert store.team.reviews(request) == []
    set_groups(store, ["ann:nl"])
    assert store.team.person("ann") == Person("ann", "annotator", "nl")
    with pytest.raises(AahError, match="give NAME:GROUP"):
        set_groups(store, ["ann"])


def test_the_report_carries_the_teams_figures(store: SessionStore) -> None:
    from aah.report import build_report
    from aah.report.build import report_to_json
    from aah.report.team_tables import team_tables

    request = waiting(store, "Which city?")
    store.humans.answer_human_request(request, "ann", "Porto", seconds=8.0)
    store.team.add_review("rita", request, "accept", seconds=2.0)
    report = build_report(store, ["r"])
    team = report_to_json(report)["agreement"]["team"]
    assert (team["answered"], team["reviewed"]) == (1, 1)
    ann = next(p for p in team["people"] if p["name"] == "ann")
    assert (ann["done"], ann["median_seconds"], ann["accepted"]["k"]) == (1, 8.0, 1)
    (table,) = team_tables(report)
    assert table.title == "The team (1 of 1 answered items reviewed)"
    assert ["rita", "annotator", "0/1", "no data", "—", "1", "2.0"] in table.rows
