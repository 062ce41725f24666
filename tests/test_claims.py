"""Claims and leases on human requests, and the light views of the queue (issue 12 §2, §4)."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from postgres_cluster import raw_rows

from aah.clock import FakeClock
from aah.store import (
    DEFAULT_LEASE_S,
    AnnotatorStats,
    AnsweredEntry,
    QueueEntry,
    SessionStore,
    merge_databases,
)
from aah.store.schema import SCHEMA_VERSION

SHORT_LEASE_S = 0.3


@pytest.fixture
def clock() -> FakeClock:
    """The store's clock: a test moves it past a lease instead of sleeping."""
    return FakeClock()


@pytest.fixture
def store(store_location: Path, clock: FakeClock) -> Iterator[SessionStore]:
    """A new store on each engine (``postgres_cluster.store_location``), on ``clock``."""
    with SessionStore(store_location, clock=clock) as opened:
        yield opened


def waiting(
    store: SessionStore,
    question: str = "Which city?",
    *,
    k: int = 1,
    setting: str | None = "perfect",
    task_id: str | None = None,
    run: str | None = None,
    deadline: datetime | None = None,
    fallback: str | None = None,
) -> str:
    """A question from a fresh session that waits for it; returns the request's id."""
    if run is not None:
        store.create_run(run, {})
    session = store.open_session("q", setting=setting, task_id=task_id, run=run)
    store.set_status(session.id, "waiting")
    request = store.humans.create_human_request(
        session.id, question, {"query": "big " * 500}, k=k, deadline=deadline, fallback=fallback
    )
    return request.id


def session_of(store: SessionStore, request_id: str) -> str:
    request = store.humans.get_human_request(request_id)
    assert request is not None
    return request.session_id


def holders(store: SessionStore, request_id: str) -> tuple[str, ...]:
    entry = next((e for e in store.humans.queue_listing().entries if e.id == request_id), None)
    return entry.claimed_by if entry is not None else ()


# -- one request, two annotators ------------------------------------------------


def test_a_live_claim_keeps_others_out_until_its_lease_runs_out(
    store: SessionStore, clock: FakeClock
) -> None:
    request_id = waiting(store)
    assert store.humans.claim_request(request_id, "ana", lease_seconds=SHORT_LEASE_S)
    assert not store.humans.claim_request(request_id, "bob")
    assert store.humans.requests_for("bob") == []
    assert store.humans.queue_listing("bob").total == 0
    assert store.humans.claim_next("bob") is None
    assert [r.id for r in store.humans.requests_for("ana")] == [request_id]
    assert holders(store, request_id) == ("ana",)

    clock.advance(SHORT_LEASE_S - 0.01)
    assert holders(store, request_id) == ("ana",)  # a moment before its end it still holds
    clock.advance(0.02)
    assert holders(store, request_id) == ()  # an expired claim counts for nothing
    assert [r.id for r in store.humans.requests_for("bob")] == [request_id]
    assert store.humans.claim_request(request_id, "bob")
    assert not store.humans.claim_request(
        request_id, "ana"
    )  # ana's lease ran out; bob holds it now
    assert holders(store, request_id) == ("bob",)


def test_renewing_a_claim_moves_its_lease_forward(store: SessionStore, clock: FakeClock) -> None:
    request_id = waiting(store)
    assert store.humans.claim_request(request_id, "ana", lease_seconds=SHORT_LEASE_S)
    clock.advance(SHORT_LEASE_S / 2)
    assert store.humans.claim_request(request_id, "ana", lease_seconds=SHORT_LEASE_S)
    clock.advance(SHORT_LEASE_S * 0.75)  # past the first lease, within the renewed one
    assert not store.humans.claim_request(request_id, "bob")
    assert holders(store, request_id) == ("ana",)
    clock.advance(SHORT_LEASE_S / 2)  # past the renewed one too
    assert store.humans.claim_request(request_id, "bob")


def test_releasing_a_claim_frees_the_place_at_once(store: SessionStore) -> None:
    request_id = waiting(store)
    assert store.humans.claim_request(request_id, "ana")
    store.humans.release_claim(request_id, "ana")
    store.humans.release_claim(request_id, "ana")  # twice is harmless
    assert store.humans.claim_request(request_id, "bob")


def test_overlap_k_lets_k_annotators_hold_a_request_and_no_more(store: SessionStore) -> None:
    request_id = waiting(store, k=2)
    assert store.humans.claim_request(request_id, "ana")
    assert store.humans.claim_request(request_id, "bob")
    assert not store.humans.claim_request(request_id, "cy")
    assert holders(store, request_id) == ("ana", "bob")

    assert store.humans.answer_human_request(request_id, "ana", "Lisbon")
    assert not store.humans.claim_request(request_id, "cy")  # one answer + bob's claim fill k=2
    assert store.humans.queue_listing("cy").total == 0
    store.humans.release_claim(request_id, "bob")
    assert store.humans.claim_request(request_id, "cy")  # settled, but it wants a second answer
    assert store.humans.queue_listing("cy").entries[0].status == "answered"
    assert not store.humans.claim_request(request_id, "ana")  # ana has answered it


def test_answering_ends_the_annotators_claim(store: SessionStore) -> None:
    request_id = waiting(store, k=2)
    assert store.humans.claim_request(request_id, "ana")
    assert store.humans.claim_request(request_id, "bob")
    assert store.humans.answer_human_request(request_id, "ana", "Lisbon")
    assert store.humans.queue_listing("cy").total == 0
    entry = store.humans.queue_listing("bob").entries[0]
    assert (entry.claimed_by, entry.answers) == (("bob",), 1)
    store.humans.answer_human_request(request_id, "bob", "Porto")
    assert raw_rows(store.path, "SELECT count(*) FROM claims") == [(0,)]


# Every way a request stops wanting an annotator's answer: their claim is then worthless.
CLOSINGS: list[tuple[str, Callable[[SessionStore, str], object]]] = [
    ("session finished", lambda s, r: s.end_session(session_of(s, r), "finished", "done")),
    ("session errored", lambda s, r: s.end_session(session_of(s, r), "error", None)),
    ("session skipped", lambda s, r: s.end_session(session_of(s, r), "skipped", None)),
    ("session cancelled", lambda s, r: s.cancel_session(session_of(s, r))),
    ("request expired", lambda s, r: s.humans.expire_human_request(r)),
    ("answered by someone else", lambda s, r: s.humans.answer_human_request(r, "bob", "Porto")),
    ("declined by someone else", lambda s, r: s.humans.answer_human_request(r, "bob", "", True)),
    ("answered by them", lambda s, r: s.humans.answer_human_request(r, "ana", "Lisbon")),
]


@pytest.mark.parametrize(("label", "close"), CLOSINGS, ids=[label for label, _ in CLOSINGS])
def test_a_claim_on_a_request_nobody_can_use_is_worthless(
    store: SessionStore, label: str, close: Callable[[SessionStore, str], object]
) -> None:
    request_id = waiting(store)
    other = waiting(store, "Which day?")
    assert store.humans.claim_request(request_id, "ana")
    close(store, request_id)
    assert not store.humans.claim_request(request_id, "ana"), label
    assert not store.humans.claim_request(request_id, "cy"), label
    assert [r.id for r in store.humans.requests_for("ana")] == [other]
    assert [e.id for e in store.humans.queue_listing().entries] == [other]
    assert store.humans.queue_listing("ana").total == 1
    next_one = store.humans.claim_next("ana")
    assert next_one is not None and next_one.id == other


def test_a_deadline_passes_on_the_stores_clock(store: SessionStore, clock: FakeClock) -> None:
    request_id = waiting(store, deadline=clock.now() + timedelta(seconds=60), fallback="idk")
    assert store.humans.claim_request(request_id, "ana")
    assert store.humans.closed_reason(request_id) is None
    clock.advance(61)
    assert not store.humans.claim_request(request_id, "ana")
    assert store.humans.queue_listing().total == 0
    assert "deadline passed" in (store.humans.closed_reason(request_id) or "")


def test_a_question_past_its_deadline_cannot_be_claimed(store: SessionStore) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    request_id = waiting(store, deadline=past, fallback="idk")
    assert not store.humans.claim_request(request_id, "ana")
    assert store.humans.claim_next("ana") is None


BAD_CLAIMS: list[tuple[str, Callable[[SessionStore], object], type[Exception]]] = [
    ("no such request", lambda s: s.humans.claim_request("nope", "ana"), KeyError),
    (
        "zero lease",
        lambda s: s.humans.claim_request(waiting(s), "ana", lease_seconds=0),
        ValueError,
    ),
    ("negative lease", lambda s: s.humans.claim_next("ana", lease_seconds=-5), ValueError),
    ("NaN lease", lambda s: s.humans.claim_next("ana", lease_seconds=math.nan), ValueError),
]


@pytest.mark.parametrize(
    ("label", "call", "error"), BAD_CLAIMS, ids=[label for label, _, _ in BAD_CLAIMS]
)
def test_bad_claims_are_refused(
    store: SessionStore, label: str, call: Callable[[SessionStore], object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        call(store)


# -- the next question -----------------------------------------------------------


def test_claim_next_takes_the_oldest_free_request_and_a_reload_gets_it_back(
    store: SessionStore,
) -> None:
    first, second, third = (waiting(store, f"Question {n}?") for n in range(3))
    assert DEFAULT_LEASE_S == 600.0
    mine = store.humans.claim_next("ana")
    assert mine is not None and mine.id == first
    assert mine.context["query"].startswith("big")  # the whole request, to answer it
    again = store.humans.claim_next("ana")  # the page reloads
    assert again is not None and again.id == first
    theirs = store.humans.claim_next("bob")
    assert theirs is not None and theirs.id == second

    store.humans.answer_human_request(first, "ana", "Lisbon")
    after = store.humans.claim_next("ana")
    assert after is not None and after.id == third
    assert store.humans.claim_next("cy") is None
    store.humans.release_claim(second, "bob")
    later = store.humans.claim_next("cy")
    assert later is not None and later.id == second


def test_claim_next_renews_the_claim_it_returns(store: SessionStore, clock: FakeClock) -> None:
    request_id = waiting(store)
    assert store.humans.claim_next("ana", lease_seconds=SHORT_LEASE_S) is not None
    clock.advance(SHORT_LEASE_S / 2)
    assert store.humans.claim_next("ana", lease_seconds=SHORT_LEASE_S) is not None
    clock.advance(SHORT_LEASE_S * 0.75)
    assert not store.humans.claim_request(request_id, "bob")


def test_claim_next_passes_over_a_held_request_that_no_longer_wants_them(
    store: SessionStore,
) -> None:
    held = waiting(store)
    other = waiting(store, "Which day?")
    assert store.humans.claim_request(held, "ana")
    store.end_session(session_of(store, held), "error", None)
    found = store.humans.claim_next("ana")
    assert found is not None and found.id == other


def test_claims_from_many_threads_never_exceed_k(store_location: Path) -> None:
    path = store_location
    with SessionStore(path) as setup:
        places = {
            waiting(setup, "One?"): 1,
            waiting(setup, "Two?"): 1,
            waiting(setup, "Three?", k=2): 2,
        }
    start = threading.Barrier(8)
    got: dict[str, str | None] = {}

    def annotate(name: str) -> None:
        with SessionStore(path) as own:
            start.wait()
            found = own.humans.claim_next(name)
            got[name] = found.id if found is not None else None

    threads = [threading.Thread(target=annotate, args=(f"a{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    held = Counter(request_id for request_id in got.values() if request_id is not None)
    assert len(got) == 8
    assert held == Counter(places)  # every place taken, none twice
    assert list(got.values()).count(None) == 8 - sum(places.values())
    with SessionStore(path) as check:
        for request_id, k in places.items():
            assert len(holders(check, request_id)) == k


# -- light listings --------------------------------------------------------------


def test_the_queue_listing_holds_exactly_what_a_list_shows(store: SessionStore) -> None:
    ahead = datetime.now(UTC) + timedelta(minutes=5)
    plain = waiting(store, "Which city?", task_id="t1", run="r1")
    timed = waiting(store, "Which day?", setting="under-specified", deadline=ahead, fallback="idk")
    overlap = waiting(store, "Which size?", k=2, setting=None)
    gone = waiting(store, "Which colour?")
    store.end_session(session_of(store, gone), "finished", "done")
    assert store.humans.claim_request(timed, "bob")
    assert store.humans.answer_human_request(overlap, "cy", "Large")

    listing = store.humans.queue_listing()
    assert listing.total == 2
    # The nearest deadline comes before the oldest (the queue's order).
    second, first = listing.entries
    created = store.humans.get_human_request(plain).created  # type: ignore[union-attr]
    assert first == QueueEntry(
        id=plain,
        session_id=session_of(store, plain),
        question="Which city?",
        created=created,
        status="pending",
        k=1,
        deadline=None,
        fallback=None,
        setting="perfect",
        task_id="t1",
        run="r1",
        claimed_by=(),
        answers=0,
        request="q",
    )
    assert (second.id, second.setting, second.task_id, second.run) == (
        timed,
        "under-specified",
        None,
        None,
    )
    assert (second.deadline, second.fallback, second.claimed_by) == (ahead, "idk", ("bob",))
    assert isinstance(second.created, datetime) and second.created.tzinfo is not None

    ana = store.humans.queue_listing("ana")  # bob's claim fills `timed`; `overlap` wants one more
    assert ana.total == 2
    assert [(e.id, e.status, e.answers, e.k) for e in ana.entries] == [
        (plain, "pending", 0, 1),
        (overlap, "answered", 1, 2),
    ]
    assert [e.id for e in store.humans.queue_listing("bob").entries] == [timed, plain, overlap]
    assert [e.id for e in store.humans.queue_listing("cy").entries] == [plain]


def test_one_entry_and_the_count_since_agree_with_the_whole_listing(store: SessionStore) -> None:
    """What a face asks about one request, or how many waited, never lists the queue."""
    ahead = datetime.now(UTC) + timedelta(minutes=5)
    past = datetime.now(UTC) - timedelta(seconds=1)
    plain = waiting(store, "Which city?", task_id="t1", run="r1")
    held = waiting(store, "Which day?", deadline=ahead, fallback="idk")
    settled = waiting(store, "Which size?", k=2)
    gone = waiting(store, "Which colour?")
    late = waiting(store, "Which hour?", deadline=past)
    store.end_session(session_of(store, gone), "finished", "done")
    assert store.humans.claim_request(held, "bob")
    assert store.humans.answer_human_request(settled, "cy", "Large")

    listing = store.humans.queue_listing()
    for request_id in (plain, held, settled, gone, late, "no-such-request"):
        expected = next((e for e in listing.entries if e.id == request_id), None)
        assert store.humans.queue_entry(request_id) == expected, request_id
    assert store.humans.queue_entry(held).claimed_by == ("bob",)  # type: ignore[union-attr]

    for entry in [*listing.entries, None]:
        since = entry.created if entry is not None else datetime.now(UTC)
        counted = sum(e.created <= since for e in listing.entries)
        assert store.humans.queue_waited(since) == counted
    assert store.humans.queue_waited(datetime.now(UTC) - timedelta(days=1)) == 0


def test_expiring_a_sessions_requests_takes_them_all_out_of_the_queue(store: SessionStore) -> None:
    first = waiting(store, "Which city?")
    session = session_of(store, first)
    second = store.humans.create_human_request(session, "Which day?", {}).id
    other = waiting(store, "Which size?")
    assert store.humans.answer_human_request(first, "ana", "Paris")

    assert store.humans.expire_session_requests(session) == 1  # the answered one stays answered
    assert [e.id for e in store.humans.queue_listing().entries] == [other]
    assert store.humans.get_human_request(second).status == "expired"  # type: ignore[union-attr]
    assert store.humans.get_human_request(first).status == "answered"  # type: ignore[union-attr]
    assert store.humans.expire_session_requests(session) == 0


@pytest.mark.parametrize(("annotator", "limit"), [(None, 2), (None, 0), ("ana", 3), ("ana", None)])
def test_a_limited_listing_counts_the_whole_queue(
    store: SessionStore, annotator: str | None, limit: int | None
) -> None:
    ids = [waiting(store, f"Question {n}?") for n in range(5)]
    listing = store.humans.queue_listing(annotator, limit=limit)
    assert listing.total == 5
    assert [e.id for e in listing.entries] == ids[:limit]


def test_the_listing_matches_the_full_records(store: SessionStore) -> None:
    for n in range(6):
        waiting(store, f"Question {n}?", k=1 + n % 2)
    store.humans.answer_human_request(store.humans.pending_human_requests()[1].id, "ana", "x")
    store.humans.claim_next("bob")
    assert [e.id for e in store.humans.queue_listing().entries] == [
        r.id for r in store.humans.pending_human_requests()
    ]
    for annotator in ("ana", "bob", "cy"):
        listing = store.humans.queue_listing(annotator)
        wanted = [r.id for r in store.humans.requests_for(annotator)]
        assert [e.id for e in listing.entries] == wanted
        assert listing.total == len(wanted)


# Every way a pending request's session moves between usable and not: the
# count (from the index and the closed requests) must agree with the rows.
LIFECYCLE: list[tuple[str, Callable[[SessionStore, str], object], int]] = [
    ("nothing", lambda s, r: None, 1),
    ("finished", lambda s, r: s.end_session(session_of(s, r), "finished", "done"), 0),
    ("cancelled", lambda s, r: s.cancel_session(session_of(s, r)), 0),
    (
        "errored then resumed",
        lambda s, r: (
            s.end_session(session_of(s, r), "error", None),
            s.set_status(session_of(s, r), "waiting"),
        ),
        1,
    ),
    (
        "errored, resumed, cancelled",
        lambda s, r: (
            s.end_session(session_of(s, r), "error", None),
            s.set_status(session_of(s, r), "running"),
            s.cancel_session(session_of(s, r)),
        ),
        0,
    ),
    (
        "errored, then answered after a resume",
        lambda s, r: (
            s.end_session(session_of(s, r), "error", None),
            s.set_status(session_of(s, r), "waiting"),
            s.humans.answer_human_request(r, "ana", "Lisbon"),
        ),
        0,
    ),
    ("expired", lambda s, r: s.humans.expire_human_request(r), 0),
    ("asked by an ended session", lambda s, r: _ask_after_the_end(s, r, resume=False), 0),
    ("asked by an ended session, resumed", lambda s, r: _ask_after_the_end(s, r, resume=True), 2),
]


def _ask_after_the_end(store: SessionStore, request_id: str, *, resume: bool) -> None:
    session_id = session_of(store, request_id)
    store.end_session(session_id, "finished", "done")
    store.humans.create_human_request(session_id, "Too late?")  # asked by a session that ended
    if resume:
        store.set_status(session_id, "waiting")  # both of its questions come back


@pytest.mark.parametrize(
    ("label", "change", "left"), LIFECYCLE, ids=[label for label, _, _ in LIFECYCLE]
)
def test_the_queue_count_follows_every_session_change(
    store: SessionStore, label: str, change: Callable[[SessionStore, str], object], left: int
) -> None:
    request_id = waiting(store)
    waiting(store, "Unrelated?")
    change(store, request_id)
    expected = left + 1  # and the unrelated question
    for annotator in (None, "bob"):
        listing = store.humans.queue_listing(annotator)
        assert listing.total == len(listing.entries) == expected, label
    assert len(store.humans.pending_human_requests()) == expected


def test_merged_files_count_their_queue_right(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "a.db") as shard:
        waiting(shard, "Live?")
        ended = waiting(shard, "Ended?")
        shard.end_session(session_of(shard, ended), "error", None)
    merge_databases([tmp_path / "a.db"], tmp_path / "all.db")
    with SessionStore(tmp_path / "all.db") as merged:
        listing = merged.humans.queue_listing()
        assert (listing.total, [e.question for e in listing.entries]) == (1, ["Live?"])


# -- an annotator's history and counter -----------------------------------------------


def test_answers_by_lists_the_latest_answers_newest_first(store: SessionStore) -> None:
    asked = [waiting(store, f"Question {n}?") for n in range(4)]
    store.humans.answer_human_request(asked[0], "ana", "Lisbon", rating=1, seconds=2.0)
    store.humans.answer_human_request(asked[1], "ana", "", declined=True)
    store.humans.answer_human_request(asked[2], "bob", "Porto")
    store.humans.answer_human_request(asked[3], "ana", "Faro", rating=0)
    store.end_session(session_of(store, asked[3]), "finished", "done")

    latest = store.humans.answers_by("ana", limit=2)
    assert [(a.request_id, a.answer, a.declined, a.rating) for a in latest] == [
        (asked[3], "Faro", False, 0),
        (asked[1], "", True, None),
    ]
    assert latest[0] == AnsweredEntry(
        request_id=asked[3],
        session_id=session_of(store, asked[3]),
        question="Question 3?",
        answer="Faro",
        declined=False,
        rating=0,
        answered_at=latest[0].answered_at,
        request_status="answered",
        session_status="finished",
    )
    assert (latest[1].request_status, latest[1].session_status) == ("declined", "waiting")
    assert [a.request_id for a in store.humans.answers_by("ana")] == [asked[3], asked[1], asked[0]]
    assert store.humans.answers_by("nobody") == []
    assert store.humans.answers_by("ana", limit=0) == []


def test_annotator_stats_count_today_and_now(store: SessionStore) -> None:
    asked = [waiting(store, f"Question {n}?") for n in range(5)]
    for request_id, seconds in zip(asked[:3], (3.0, 10.0, 5.0), strict=True):
        store.humans.answer_human_request(request_id, "ana", "x", seconds=seconds)
    store.humans.answer_human_request(asked[3], "ana", "", declined=True)  # no time recorded
    store.humans.claim_request(asked[4], "bob")

    # Bob's question waits too, but not for them: it is counted apart.
    assert store.humans.annotator_stats("ana") == AnnotatorStats(
        answered_today=4, waiting_now=0, median_seconds=5.0, held_by_others=1
    )
    assert store.humans.annotator_stats("cy") == AnnotatorStats(0, 0, None, 1)
    assert store.humans.annotator_stats("bob") == AnnotatorStats(0, 1, None, 0, {"question": 1})
    store.humans.release_claim(asked[4], "bob")
    assert store.humans.annotator_stats("cy") == AnnotatorStats(0, 1, None, 0, {"question": 1})
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert store.humans.annotator_stats("ana", now=tomorrow).answered_today == 0
    assert store.humans.annotator_stats("ana", now=tomorrow).median_seconds is None


def _plans(store: SessionStore, call: Callable[[], object]) -> list[str]:
    """Every step of the query plans of the statements ``call`` runs on this thread."""
    seen: list[str] = []
    conn = store._connection.db().conn
    conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    steps: list[str] = []
    for sql in seen:
        if sql.lstrip().upper().startswith("SELECT"):
            steps += [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, _PLAN_PARAMS)]
    return steps


_PLAN_PARAMS = {"annotator": "ana", "now": "2026-01-01T00:00:00+00:00"}


# What may be read whole: live claims (as few as the annotators at work),
# the settled requests that want more answers (a partial index), and a
# subquery's own rows.
_SMALL_SCANS = (
    "SCAN claims",
    "SCAN held",
    "SCAN r USING INDEX human_requests_overlap",
    "SCAN (",
    "SCAN wanting",
    # The queue's own rows, counted by kind (``listings.kind_counts``).
    "SCAN queued",
)
SHORT_VIEWS: list[tuple[str, Callable[[SessionStore], object], bool]] = [
    # A page sorts the queue's own rows on the queue's order (blocking kinds,
    # deadline, age), never the settled requests of the file.
    ("listing page", lambda s: s.humans.queue_listing(limit=50), False),
    ("annotator's page", lambda s: s.humans.queue_listing("ana", limit=50), False),
    ("answers by", lambda s: s.humans.answers_by("ana"), True),
    ("stats", lambda s: s.humans.annotator_stats("ana"), True),
    # It sorts the few claims its annotator holds.
    ("claim next", lambda s: s.humans.claim_next("ana"), False),
]


@pytest.mark.parametrize(
    ("label", "call", "unsorted"), SHORT_VIEWS, ids=[label for label, _, _ in SHORT_VIEWS]
)
def test_short_views_walk_indexes_not_tables(
    tmp_path: Path, label: str, call: Callable[[SessionStore], object], unsorted: bool
) -> None:
    """A view that scans a table or sorts its rows costs what the whole file holds (SQLite's plans)."""
    store = SessionStore(tmp_path / "plans.db")
    for n in range(3):
        request_id = waiting(store, f"Question {n}?", k=2)
        store.humans.answer_human_request(request_id, "bob", "x")
    store.humans.claim_request(request_id, "cy")
    steps = _plans(store, lambda: call(store))
    assert steps, label
    assert [s for s in steps if s.startswith("SCAN") and not s.startswith(_SMALL_SCANS)] == []
    if unsorted:
        assert [s for s in steps if "TEMP B-TREE" in s] == []


# -- schema 2 files ----------------------------------------------------------------


def test_a_version_2_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(V2_SCHEMA)
        conn.execute("PRAGMA user_version = 2")
        for session_id, status in (("s1", "waiting"), ("s2", "error"), ("s3", "finished")):
            conn.execute(
                "INSERT INTO sessions (id, query, aah, thread_id, started, status, setting)"
                " VALUES (?, 'q', 1, ?, '2026-01-01T00:00:00+00:00', ?, 'perfect')",
                [session_id, session_id, status],
            )
            conn.execute(
                "INSERT INTO human_requests (id, session_id, question, created)"
                " VALUES (?, ?, 'Which?', ?)",
                [f"r{session_id[1]}", session_id, f"2026-01-0{session_id[1]}T00:00:00+00:00"],
            )
    with SessionStore(path) as store:
        listing = store.humans.queue_listing()
        assert (listing.total, [e.id for e in listing.entries]) == (1, ["r1"])
        assert store.humans.claim_request("r1", "ana")
        assert not store.humans.claim_request("r1", "bob")
        store.set_status("s2", "waiting")  # the errored session resumes
        assert store.humans.queue_listing("bob").total == 1
        assert [e.id for e in store.humans.queue_listing().entries] == ["r1", "r2"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("SELECT request_id, annotator FROM claims").fetchall() == [
            ("r1", "ana")
        ]


V2_SCHEMA = """
CREATE TABLE runs (name TEXT PRIMARY KEY, created TEXT NOT NULL, manifest TEXT NOT NULL DEFAULT '{}');
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, run TEXT REFERENCES runs(name), task_id TEXT, setting TEXT,
    query TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'waiting', 'finished', 'skipped', 'error', 'cancelled')),
    aah INTEGER NOT NULL CHECK (aah IN (0, 1)), model TEXT, thread_id TEXT NOT NULL,
    started TEXT NOT NULL, ended TEXT, final_answer TEXT, info_awareness TEXT,
    tool_awareness TEXT, n_events INTEGER NOT NULL DEFAULT 0,
    n_model_calls INTEGER NOT NULL DEFAULT 0, n_tool_calls INTEGER NOT NULL DEFAULT 0,
    n_tool_errors INTEGER NOT NULL DEFAULT 0, n_human_questions INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    recipe TEXT NOT NULL DEFAULT '{}',
    UNIQUE (run, task_id)
);
CREATE INDEX sessions_by_status ON sessions (status, started);
CREATE TABLE events (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, payload TEXT NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE TABLE human_requests (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    question TEXT NOT NULL, context TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'answered', 'declined', 'expired')),
    created TEXT NOT NULL, k INTEGER NOT NULL DEFAULT 1 CHECK (k >= 1),
    answer TEXT, answered_by TEXT, answered_at TEXT, deadline TEXT, fallback TEXT
);
CREATE INDEX human_requests_by_status ON human_requests (status, created);
CREATE INDEX human_requests_by_session ON human_requests (session_id);
CREATE TABLE human_answers (
    id INTEGER PRIMARY KEY, request_id TEXT NOT NULL REFERENCES human_requests(id),
    annotator TEXT NOT NULL, answer TEXT NOT NULL,
    declined INTEGER NOT NULL DEFAULT 0 CHECK (declined IN (0, 1)),
    rating INTEGER CHECK (rating IN (0, 1)), seconds REAL, created TEXT NOT NULL,
    UNIQUE (request_id, annotator)
);
CREATE TABLE grades (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    grader_model TEXT NOT NULL, prompt_version TEXT NOT NULL, votes TEXT NOT NULL DEFAULT '[]',
    verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),
    flagged INTEGER NOT NULL DEFAULT 0 CHECK (flagged IN (0, 1)), created TEXT NOT NULL
);
CREATE INDEX grades_by_session ON grades (session_id, created);
"""
