"""The desk's workflow: claims, leases, heartbeats, skips, undos, on a fake clock (no face)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from web_support import seed_request

from aah.desk import HEARTBEAT_LEASE_S, DeskWorkflow, FakeClock, OpenedRequest
from aah.store import DEFAULT_LEASE_S, SessionStore
from aah.ui.web.lease import LEASE_ENV, lease_from_env


def _counting_claims(store: SessionStore) -> list[str]:
    """The claim writes ``store`` is asked for from now on (a real store, counted)."""
    claims: list[str] = []
    claim = store.humans.claim_request

    def counted(request_id: str, annotator: str, lease_seconds: float = 600) -> bool:
        claims.append(request_id)
        return claim(request_id, annotator, lease_seconds)

    store.humans.claim_request = counted  # type: ignore[method-assign]
    return claims


def test_the_heartbeat_renews_the_claim_at_most_once_per_interval(tmp_path: Path) -> None:
    request = seed_request(tmp_path / "s.db")
    store = SessionStore(tmp_path / "s.db")
    claims = _counting_claims(store)
    clock = FakeClock()
    desk = DeskWorkflow(store, lease_seconds=600, clock=clock)
    assert desk.renew_every == 30
    found = desk.next_for("alice")
    assert found.request is not None and found.request.id == request.id
    desk.opened("alice", found.request)
    for _ in range(90):  # the page's refresh, every second, whether she types or reads
        clock.advance(1)
        assert desk.beat("alice", request.id)
    # At the first beat (is it still mine?), then at 31 and 61 s: not 90 writes.
    assert len(claims) == 3


def test_without_a_heartbeat_the_claim_runs_out(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db)
    clock = FakeClock()
    store = SessionStore(db, clock=clock)
    desk = DeskWorkflow(store, lease_seconds=0.5)
    assert desk.renew_every == pytest.approx(0.5 / 3)
    assert desk.clock is clock  # the store's clock, unless told otherwise
    mine = desk.next_for("alice").request
    assert mine is not None
    desk.opened("alice", mine)
    assert desk.next_for("bob").request is None  # alice holds the only question
    assert store.humans.annotator_stats("bob").held_by_others == 1
    clock.advance(0.4)
    assert desk.next_for("bob").request is None  # within her lease
    clock.advance(0.2)  # her page went quiet for a whole lease
    taken = desk.next_for("bob").request
    assert taken is not None and taken.id == request.id
    # Alice's page beats again: the claim is lost, and the page is told.
    assert not desk.beat("alice", request.id)


def test_a_heartbeat_answered_after_the_page_left_its_question_changes_nothing(
    tmp_path: Path,
) -> None:
    # The page's timer sent a heartbeat for the question, then the person
    # sent an answer (or skipped) and the page moved on; the heartbeat is
    # handled last. It must not claim the question again, nor report the
    # hold lost over what the send said.
    db = tmp_path / "s.db"
    request = seed_request(db)
    clock = FakeClock()
    store = SessionStore(db, clock=clock)
    counted = _counting_claims(store)
    desk = DeskWorkflow(store, lease_seconds=60, undo_seconds=0)
    mine = desk.next_for("alice").request
    assert mine is not None
    opened = desk.opened("alice", mine)
    desk.skipped("alice", opened)  # lets the claim go
    claims = len(counted)
    clock.advance(100)
    assert desk.beat("alice", request.id)  # the late heartbeat of the page before the skip
    assert len(counted) == claims
    assert store.humans.annotator_stats("bob").held_by_others == 0  # free for anyone
    found = desk.next_for("bob").request
    assert found is not None and found.id == request.id
    # Opened again later (bob lets go; alice gets it back), its heartbeats count again.
    desk.leave("bob", request.id, release=True)
    again = desk.next_for("alice").request
    assert again is not None and again.id == request.id
    desk.opened("alice", again)
    clock.advance(61)  # her page went quiet for a whole lease
    store.humans.claim_request(request.id, "bob", 60)
    assert not desk.beat("alice", request.id)  # lost to bob, and the page is told


def test_web_claims_default_to_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LEASE_ENV, raising=False)
    assert lease_from_env() == HEARTBEAT_LEASE_S == 60.0
    assert DEFAULT_LEASE_S > HEARTBEAT_LEASE_S  # the store's own default stays for others


def test_a_decline_waits_out_its_undo_time_and_can_be_undone(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first, second = seed_request(db, "Question 0?"), seed_request(db, "Question 1?")
    clock = FakeClock()
    store = SessionStore(db, clock=clock)
    desk = DeskWorkflow(store, undo_seconds=5)
    opened = desk.opened("alice", desk.next_for("alice").request)  # type: ignore[arg-type]
    desk.decline("alice", opened, None)
    # Not sent yet, still hers, and never offered to her again meanwhile.
    assert store.humans.human_answers(first.id) == []
    assert desk.next_for("bob").request.id == second.id  # type: ignore[union-attr]
    desk.leave("bob", second.id, release=True)
    assert desk.next_for("alice").request.id == second.id  # type: ignore[union-attr]
    undone = desk.undo("alice")
    assert undone is not None and undone.kind == "declined"
    assert undone.opened.request_id == first.id
    clock.advance(60)
    desk.settle()
    assert store.humans.human_answers(first.id) == []  # undone: the agent never saw it
    # Declined again and left alone: sent once the undo time is over.
    desk.decline("alice", opened, 0)
    clock.advance(4.9)
    desk.settle()
    assert store.humans.human_answers(first.id) == []
    clock.advance(0.2)
    assert desk.undo("alice") is None
    desk.settle()
    (given,) = store.humans.human_answers(first.id)
    assert given.declined and given.rating == 0 and given.annotator == "alice"
    # From opening to declining (60 s), without the undo time after it.
    assert given.seconds == pytest.approx(60)


def test_a_decline_is_sent_by_itself_when_nobody_looks(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db)
    store = SessionStore(db)
    desk = DeskWorkflow(store, undo_seconds=0.2)
    opened = desk.opened("alice", desk.next_for("alice").request)  # type: ignore[arg-type]
    desk.decline("alice", opened, None)
    deadline = time.monotonic() + 10
    while not store.humans.human_answers(request.id) and time.monotonic() < deadline:
        time.sleep(0.05)
    (given,) = store.humans.human_answers(request.id)
    assert given.declined


def test_a_skip_can_be_undone_unless_someone_took_the_question(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first, _ = seed_request(db, "Question 0?"), seed_request(db, "Question 1?")
    clock = FakeClock()
    store = SessionStore(db, clock=clock)
    desk = DeskWorkflow(store, undo_seconds=5)
    opened = desk.opened("alice", desk.next_for("alice").request)  # type: ignore[arg-type]
    desk.skipped("alice", opened)
    assert desk.undoable("alice") is not None
    undone = desk.undo("alice")
    assert undone is not None and undone.kind == "skipped"
    assert store.humans.queue_listing().entries[0].claimed_by == ("alice",)
    desk.skipped("alice", opened)
    assert desk.open("bob", first.id)
    assert desk.undo("alice") is None  # bob has it now
    desk.skipped("alice", opened)
    clock.advance(5)
    assert desk.undoable("alice") is None and desk.undo("alice") is None


def test_next_passes_over_skipped_questions(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first, second, third = (seed_request(db, f"Question {n}?") for n in range(3))
    desk = DeskWorkflow(SessionStore(db))
    assert desk.next_for("alice").request.id == first.id  # type: ignore[union-attr]
    desk.leave("alice", first.id, release=True)
    assert desk.next_for("alice", [first.id]).request.id == second.id  # type: ignore[union-attr]
    desk.leave("alice", second.id, release=True)
    found = desk.next_for("alice", [first.id, second.id])
    assert found.request is not None and found.request.id == third.id and not found.note
    desk.leave("alice", third.id, release=True)
    found = desk.next_for("alice", [first.id, second.id, third.id])
    assert found.request is not None and found.request.id == first.id
    assert found.note.startswith("Only questions you skipped are left")


def test_opening_a_question_that_is_gone_or_taken_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db)
    desk = DeskWorkflow(SessionStore(db))
    assert desk.open("alice", request.id)
    assert not desk.open("bob", request.id)
    assert not desk.open("bob", "no-such-question")


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("", HEARTBEAT_LEASE_S), ("  ", HEARTBEAT_LEASE_S), ("5", 5.0), ("0.5", 0.5)],
)
def test_the_lease_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float
) -> None:
    monkeypatch.setenv(LEASE_ENV, raw)
    assert lease_from_env() == seconds


@pytest.mark.parametrize("raw", ["0", "-5", "ten", "nan", "inf", "1e999", "5s"])
def test_a_bad_lease_setting_says_what_to_set(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(LEASE_ENV, raw)
    with pytest.raises(ValueError, match=f"set {LEASE_ENV} to a positive number of seconds"):
        lease_from_env()


def test_a_question_whose_session_ended_says_why_its_claim_went(tmp_path: Path) -> None:
    # Cancelled while its question is open on a page: when the claim cannot be
    # renewed, the page says the session ended, not "your hold ran out".
    db = tmp_path / "s.db"
    request = seed_request(db)
    store = SessionStore(db)
    desk = DeskWorkflow(store, lease_seconds=600, undo_seconds=0)
    mine = desk.next_for("alice").request
    assert mine is not None
    opened = desk.opened("alice", mine)
    assert desk.closed("alice", request.id) is None  # still wanted
    store.cancel_session(request.session_id)
    assert not desk.beat("alice", request.id)  # the claim is not renewed
    assert desk.closed("alice", request.id) == "this question's session has ended (cancelled)"
    desk.skipped("alice", opened)
    assert desk.closed("alice", request.id) is None  # the page has left it


# -- answers and decisions, for every face -------------------------------------------


def test_an_answer_settles_once_and_says_what_came_of_it(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db, k=2)
    clock = FakeClock()
    workflow = DeskWorkflow(SessionStore(db, clock=clock))
    mine = workflow.next_for("alice").request
    assert mine is not None
    opened = workflow.opened("alice", mine)
    clock.advance(12)
    sent = workflow.answer("alice", opened, "  Porto ")
    assert sent.outcome == "settled" and sent.request.id == request.id
    (given,) = workflow.store.humans.human_answers(request.id)
    assert given.answer == "Porto" and given.seconds == pytest.approx(12)
    assert workflow.answer("alice", opened, "Lisbon").outcome == "repeat"
    theirs = workflow.opened("bob", mine)
    assert workflow.answer("bob", theirs, "Braga").outcome == "kept"  # for agreement


def test_an_answer_to_a_question_nobody_waits_for_is_not_used(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db)
    workflow = DeskWorkflow(SessionStore(db))
    opened = workflow.opened("alice", request)
    workflow.store.cancel_session(request.session_id)
    sent = workflow.answer("alice", opened, "Porto")
    assert sent.outcome == "closed"
    assert sent.closed == "this question's session has ended (cancelled)"
    assert workflow.store.humans.human_answers(request.id) == []


@pytest.mark.parametrize(
    ("text", "rating", "declined", "problem"),
    [
        ("", None, False, "type an answer"),
        ("   \n", None, False, "type an answer"),
        ("x" * 4_001, None, False, "shorten the answer to at most 4,000"),
        ("x" * 4_001, None, True, "shorten the answer"),
        ("Porto", 2, False, r"rate the question yes \(1\) or no \(2\)"),
        ("Porto", -1, False, "rate the question"),
    ],
)
def test_a_bad_answer_is_refused_in_one_line_and_not_stored(
    tmp_path: Path, text: str, rating: int | None, declined: bool, problem: str
) -> None:
    db = tmp_path / "s.db"
    request = seed_request(db)
    workflow = DeskWorkflow(SessionStore(db))
    opened = workflow.opened("alice", request)
    with pytest.raises(ValueError, match=problem) as refused:
        workflow.answer("alice", opened, text, rating=rating, declined=declined)
    assert "\n" not in str(refused.value)
    assert workflow.store.humans.human_answers(request.id) == []


def test_an_answer_to_a_question_that_is_gone_says_refresh(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    seed_request(db)
    workflow = DeskWorkflow(SessionStore(db))
    with pytest.raises(LookupError, match="that question is gone: refresh the queue"):
        workflow.answer("alice", OpenedRequest("no-such-question", 0.0), "Porto")
    with pytest.raises(LookupError, match="that call is gone"):
        workflow.decide("alice", OpenedRequest("no-such-question", 0.0), "approve")


def test_a_decision_goes_through_the_same_workflow(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    clock = FakeClock()
    store = SessionStore(db, clock=clock)
    session = store.open_session("Book a room")
    store.set_status(session.id, "waiting")
    call = {"tool": "local__book", "method": "POST", "arguments": {"rooms": 1}}
    request = store.humans.create_human_request(
        session.id, "Approve this call?", {"approval": call}, kind="approval"
    )
    workflow = DeskWorkflow(store)
    found = workflow.next_for("alice").request
    assert found is not None and found.id == request.id
    opened = workflow.opened("alice", found)
    clock.advance(3)
    sent = workflow.decide("alice", opened, "reject", reason="not today")
    assert sent.outcome == "settled"
    (given,) = store.humans.human_answers(request.id)
    assert given.seconds == pytest.approx(3)
    assert store.humans.queue_listing("alice").total == 0  # the claim ended with it
    assert workflow.decide("alice", opened, "approve").outcome == "repeat"
