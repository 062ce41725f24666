"""The queue's order, filters and counts by kind, in the store, on both engines (issue 46 §6).

The order serves the blocked agent: approvals and MCP forms first (an agent
waits on each), then the nearest deadline, then the oldest. Every listing,
``claim_next`` and the desk's next item follow it; filters (kind, run,
setting, age) and counts by kind hold on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_cluster import raw_rows

from aah.clock import FakeClock
from aah.desk import DeskWorkflow
from aah.store import QueueFilter, SessionStore
from aah.store.listings import KINDS
from aah.store.schema import RequestKind
from aah.ui.web.queue import queue_filter

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "queue_filters.jsonl"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(store_location: Path, clock: FakeClock) -> Iterator[SessionStore]:
    with SessionStore(store_location, clock=clock) as opened:
        yield opened


def asked(
    store: SessionStore,
    kind: RequestKind = "question",
    *,
    due_in: float | None = None,
    run: str | None = None,
    setting: str | None = "perfect",
) -> str:
    """One item of ``kind`` from a fresh waiting session; its id."""
    if run is not None and store.get_run(run) is None:
        store.create_run(run, {})
    session = store.open_session("q", setting=setting, run=run)
    store.set_status(session.id, "waiting")
    deadline = None if due_in is None else store.clock.now() + timedelta(seconds=due_in)
    context: dict[str, Any] = {"query": "q"}
    if kind == "elicitation":
        context = {"asker": "hotel", "message": "m", "mode": "url", "url": "https://e.org/"}
        context |= {"kind": "elicitation", "version": 1}
    return store.humans.create_human_request(
        session.id, f"{kind}?", context, kind=kind, deadline=deadline
    ).id


def test_blocking_kinds_then_the_nearest_deadline_then_the_oldest(
    store: SessionStore, clock: FakeClock
) -> None:
    oldest = asked(store)
    clock.advance(1)
    far = asked(store, due_in=3600)
    clock.advance(1)
    near = asked(store, due_in=600)
    clock.advance(1)
    approval = asked(store, "approval")
    clock.advance(1)
    form = asked(store, "elicitation")
    clock.advance(1)
    urgent_approval = asked(store, "approval", due_in=60)
    expected = [urgent_approval, approval, form, near, far, oldest]

    assert [e.id for e in store.humans.queue_listing().entries] == expected
    assert [e.id for e in store.humans.queue_listing("ana").entries] == expected
    assert [e.id for e in store.humans.queue_listing("ana", limit=2).entries] == expected[:2]
    assert [r.id for r in store.humans.pending_human_requests()] == expected
    assert [r.id for r in store.humans.requests_for("ana")] == expected
    assert store.humans.queue_listing().entries[2].asker == "hotel"  # who asks a form
    # Claims, and the desk's next item, take them in the same order.
    workflow = DeskWorkflow(store, clock=clock, undo_seconds=0)
    opened = []
    for _ in expected:
        found = workflow.next_for("ana").request
        assert found is not None
        opened.append(found.id)
        store.humans.release_claim(found.id, "ana")
        store.humans.expire_human_request(found.id)
    assert opened == expected


def test_filters_and_counts_by_kind(store: SessionStore, clock: FakeClock) -> None:
    old_question = asked(store, run="r1")
    clock.advance(3600)
    approval = asked(store, "approval", run="r1")
    form = asked(store, "elicitation", setting="replaceable")
    question = asked(store, setting="replaceable")
    bob_holds = asked(store)
    assert store.humans.claim_request(bob_holds, "bob")

    whole = store.humans.queue_listing()
    assert whole.by_kind == {"approval": 1, "elicitation": 1, "question": 3}
    assert whole.total == 5
    ana = store.humans.queue_listing("ana")
    assert ana.by_kind == {"approval": 1, "elicitation": 1, "question": 2}
    stats = store.humans.annotator_stats("ana")
    assert stats.waiting_by_kind == ana.by_kind and stats.waiting_now == ana.total == 4

    def ids(only: QueueFilter) -> list[str]:
        listing = store.humans.queue_listing("ana", only=only)
        assert listing.total == sum(listing.by_kind.values()) == len(listing.entries)
        return [entry.id for entry in listing.entries]

    blocking = QueueFilter(kinds=frozenset({"approval", "elicitation"}))
    assert ids(blocking) == [approval, form]
    assert ids(QueueFilter(kinds=frozenset({"question"}))) == [old_question, question]
    assert ids(QueueFilter(run="r1")) == [approval, old_question]
    assert ids(QueueFilter(setting="replaceable")) == [form, question]
    assert ids(QueueFilter(older_than=1800)) == [old_question]
    assert ids(QueueFilter(newer_than=1800)) == [approval, form, question]
    assert ids(QueueFilter(run="r1", kinds=frozenset({"question"}))) == [old_question]
    assert ids(QueueFilter(run="nope")) == []
    # The next item honours the filter, and so does a claim already held.
    only_questions = QueueFilter(kinds=frozenset({"question"}))
    first = store.humans.claim_next("ana", only=only_questions)
    assert first is not None and first.id == old_question
    again = store.humans.claim_next("ana", only=blocking)
    assert again is not None and again.id == approval
    again = store.humans.claim_next("ana", only=only_questions)
    assert again is not None and again.id == old_question  # their own claim comes back


def test_a_filter_refuses_what_it_cannot_mean() -> None:
    with pytest.raises(ValueError, match="unknown kind 'questions'"):
        QueueFilter(kinds=frozenset({"questions"}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="older_than must be 0 s or more"):
        QueueFilter(older_than=float("nan"))
    with pytest.raises(ValueError, match="newer_than must be 0 s or more"):
        QueueFilter(newer_than=-1)


CASES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_hostile_filters_from_the_corpus(case: dict[str, Any], store_location: Path) -> None:
    run = case["run"] * case.get("repeat", 1) if case["run"] is not None else None
    only = queue_filter(case["kind"], run, case["setting"], case["age"])
    expect = case["expect"]
    if "run_chars" in expect:
        assert only.run is not None and len(only.run) == expect["run_chars"]
    else:
        assert only == QueueFilter(run=expect.get("run"))
    with SessionStore(store_location) as store:
        asked(store, run="r1")
        asked(store, "approval")
        listing = store.humans.queue_listing("ana", only=only)
        assert listing.total == case.get("matches", 2) == len(listing.entries)
    assert raw_rows(store_location, "SELECT count(*) FROM human_requests") == [(2,)]


# -- the order as a property ---------------------------------------------------------

ITEM = st.tuples(
    st.sampled_from(KINDS),
    st.one_of(st.none(), st.integers(min_value=1, max_value=5)),  # deadline, in minutes
    st.integers(min_value=0, max_value=2),  # seconds since the item before
)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(items=st.lists(ITEM, min_size=1, max_size=12))
def test_the_order_is_total_and_follows_the_rule(
    items: list[tuple[RequestKind, int | None, int]],
) -> None:
    """Every listing is the rule's sort of the items; ties (same instant) by the order asked."""
    clock = FakeClock()
    with (
        tempfile.TemporaryDirectory() as folder,
        SessionStore(Path(folder) / "s.db", clock=clock) as store,
    ):
        keys: dict[str, tuple[object, ...]] = {}
        for index, (kind, due, gap) in enumerate(items):
            clock.advance(gap)
            item = asked(store, kind, due_in=None if due is None else due * 60)
            now = clock.now()
            deadline = None if due is None else now + timedelta(minutes=due)
            keys[item] = (kind == "question", deadline is None, deadline or now, now, index)
        listed = [entry.id for entry in store.humans.queue_listing().entries]
        assert listed == sorted(keys, key=keys.__getitem__)
        # A total order: no two items share a place, so every face lists them alike.
        places = [keys[item] for item in listed]
        assert all(a < b for a, b in zip(places, places[1:], strict=False))
        assert [r.id for r in store.humans.requests_for("ana")] == listed
        nxt = store.humans.claim_next("ana")
        assert nxt is not None and nxt.id == listed[0]


def test_a_notification_still_counts_from_the_oldest_and_by_kind(
    store: SessionStore, clock: FakeClock
) -> None:
    """A fresh approval (first in the order) hides neither the overdue question nor its kind."""
    from aah.ui.web.notify import NotifySettings, QueueNotifier

    settings = NotifySettings(urls=(), queue_url="http://q/", after_seconds=60)
    notifier = QueueNotifier(store, settings, sender=object())
    asked(store)
    clock.advance(120)
    asked(store, "approval")
    assert store.humans.oldest_waiting() == clock.now() - timedelta(seconds=120)
    found = notifier.message(now=clock.now())
    assert found is not None
    title, body = found
    assert title == "aah: 1 approval, 1 question wait for an answer"
    assert body.startswith("1 approval, 1 question wait for a person; 1 for more than 60 s")
    assert "(the oldest 2 min)" in body
