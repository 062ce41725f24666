"""SessionStore: schema, idempotent sessions, typed events, concurrency, humans, secrets."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from postgres_cluster import stored_bytes

from aah.db_url import DatabaseURL
from aah.errors import AahError
from aah.events import (
    AwarenessEvent,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.store.schema import SCHEMA_VERSION
from aah.store.sessions import REDACTED, SessionStore, scrub

OPENAI_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "dir" / "aah.db"


@pytest.fixture
def store(store_location: Path) -> Iterator[SessionStore]:
    """A new store on each engine (``postgres_cluster.store_location``)."""
    with SessionStore(store_location) as opened:
        yield opened


def run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_of_each(session_id: str) -> list[Event]:
    return [
        AwarenessEvent(
            session_id=session_id, question="tool", answer="idk", reason="unsure", raw="IDK."
        ),
        AwarenessEvent(session_id=session_id, question="information", answer="yes", attempts=2),
        ModelCallEvent(
            session_id=session_id,
            model="m",
            prompt_tokens=10,
            completion_tokens=5,
            latency_ms=3.5,
            n_tool_calls=1,
            text="calling",
        ),
        ToolCallEvent(
            session_id=session_id,
            call_id="c1",
            tool="weather__current",
            arguments={"city": "Oslo", "days": 2, "max_tokens": 7},
            status_code=200,
            ok=True,
            latency_ms=12.0,
            result="x" * 5_000,
            http_mode="replay",
        ),
        ToolCallEvent(
            session_id=session_id,
            call_id="c2",
            tool="nope__x",
            ok=False,
            check="IFN",
            feedback="no tool nope__x; available: weather__current",
        ),
        HumanQuestionEvent(session_id=session_id, request_id="r1", question="Which city?"),
        HumanAnswerEvent(
            session_id=session_id, request_id="r1", answer="Oslo", answered_by="ann", seconds=4.0
        ),
        FinalAnswerEvent(session_id=session_id, text="Sunny.", step_limit_hit=False),
        ErrorEvent(session_id=session_id, message="boom", where="agent"),
    ]


def test_schema_is_created_once_and_reopens(db_path: Path) -> None:
    first = SessionStore(db_path)
    first.open_session("q", session_id="s1")
    second = SessionStore(db_path)  # while the first is still open
    assert second.get_session("s1") is not None
    first.close()
    second.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    wanted = {"runs", "sessions", "events", "human_requests", "human_answers", "grades"}
    assert wanted <= tables


# ``human_requests`` as version 6 made it: no decision columns, no elicitation kind.
V6_HUMAN_REQUESTS = """
CREATE TABLE IF NOT EXISTS human_requests (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    question TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'answered', 'declined', 'expired')),
    created TEXT NOT NULL,
    k INTEGER NOT NULL DEFAULT 1 CHECK (k >= 1),
    answer TEXT,
    answered_by TEXT,
    answered_at TEXT,
    -- When the asker stops waiting, and who answers then (idk, skip, a channel).
    deadline TEXT,
    fallback TEXT,
    -- 'question' (answer it) or 'approval' (approve, edit or reject a tool call).
    kind TEXT NOT NULL DEFAULT 'question' CHECK (kind IN ('question', 'approval'))
);
"""


def version_6_schema() -> str:
    """The schema as version 6 wrote it: decisions kept in ``answer``, two request kinds."""
    from aah.store.schema import DECISION_COLUMNS, HUMAN_REQUESTS_TABLE_SQL, SCHEMA_SQL

    v6 = SCHEMA_SQL.replace(
        HUMAN_REQUESTS_TABLE_SQL.replace("NAME", "human_requests", 1), V6_HUMAN_REQUESTS
    )
    decisions = ",\n".join(f"    {column}" for column in DECISION_COLUMNS)
    v6 = v6.replace(
        f"    -- An annotator's decision on an approval (DECISION_COLUMNS).\n{decisions},\n", ""
    )
    # Tables from schema 9 on (the team, the asking readings) came later: not in a version 6 file.
    v6 = v6[: v6.index("-- A team (schema 9)")]
    assert "decision" not in v6 and "elicitation" not in v6
    return v6


def _version_4_schema() -> str:
    """The schema as version 4 wrote it: no terminated status, request kinds or approved runs."""
    v4 = version_6_schema().replace(", 'terminated')", ")")
    v4 = v4.replace(
        ",\n    -- 'question' (answer it) or 'approval' (approve, edit or reject a tool call).\n"
        "    kind TEXT NOT NULL DEFAULT 'question' CHECK (kind IN ('question', 'approval'))",
        "",
    )
    start = v4.index("-- A tool call a person approved")
    v4 = v4[:start] + v4[v4.index("CREATE TABLE IF NOT EXISTS grades") :]
    assert "terminated" not in v4 and "approval" not in v4
    return v4


def _version_3_schema() -> str:
    """The schema as version 3 wrote it: no stopped statuses, no grade flag reason."""
    v3 = _version_4_schema().replace(",\n                          'step_limit', 'cut_off')", ")")
    v3 = v3.replace(
        ",\n    -- Why a flagged verdict is flagged: 'no_quorum' or 'tie' (NULL when not flagged).\n"
        "    flag TEXT",
        "",
    )
    assert "step_limit" not in v3 and "flag TEXT" not in v3
    return v3


def test_a_version_3_file_is_upgraded_in_place(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db_path) as conn:
        conn.executescript(_version_3_schema())
        conn.execute("PRAGMA user_version = 3")
        for sid, status in (("s1", "waiting"), ("s2", "finished"), ("s3", "finished")):
            conn.execute(
                "INSERT INTO sessions (id, query, aah, thread_id, started, status, recipe)"
                " VALUES (?, 'q', 1, ?, '2026-01-01T00:00:00+00:00', ?, '{\"step_limit\": 4}')",
                [sid, sid, status],
            )
        conn.execute(
            "INSERT INTO human_requests (id, session_id, question, created)"
            " VALUES ('r1', 's1', 'Which?', '2026-01-01T00:00:00+00:00')"
        )
        for sid, votes in (
            ("s2", [{"vote": None}, {"vote": None}, {"vote": None}]),
            ("s3", [{"vote": "pass"}, {"vote": "fail"}]),
        ):
            conn.execute(
                "INSERT INTO grades (session_id, grader_model, prompt_version, votes, verdict,"
                " flagged, created) VALUES (?, 'g', 'v', ?, 'fail', 1, '2026-01-02')",
                [sid, json.dumps(votes)],
            )
    with SessionStore(db_path) as store:
        assert store.session_recipe("s1") == {"step_limit": 4}  # columns kept
        assert [r.id for r in store.humans.pending_human_requests()] == ["r1"]
        store.end_session("s1", "step_limit", None)  # the new status, and the triggers hold
        assert store.humans.pending_human_requests() == []
        assert [g.flag for g in store.grades("s2")] == ["no_quorum"]
        assert [g.flag for g in store.grades("s3")] == ["tie"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_version_4_file_is_upgraded_in_place(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db_path) as conn:
        conn.executescript(_version_4_schema())
        conn.execute("PRAGMA user_version = 4")
        conn.execute(
            "INSERT INTO sessions (id, query, aah, thread_id, started, status)"
            " VALUES ('s1', 'q', 1, 's1', '2026-01-01T00:00:00+00:00', 'waiting')"
        )
        conn.execute(
            "INSERT INTO human_requests (id, session_id, question, created)"
            " VALUES ('r1', 's1', 'Which?', '2026-01-01T00:00:00+00:00')"
        )
    with SessionStore(db_path) as store:
        assert [r.kind for r in store.humans.pending_human_requests()] == ["question"]
        assert store.approved.start_approved_run("s1", "c1", {}) is None  # the new table
        store.end_session("s1", "terminated", None)  # the new status, and the triggers hold
        assert store.humans.pending_human_requests() == []
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


# A process that opens the store and its checkpointer at a given moment.
OPEN_AT = """
import sys, time
from aah.db_url import parse_location
from aah.runtime.checkpoints import EventOutbox, session_checkpointer
from aah.store import SessionStore

location = parse_location(sys.argv[1])
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
SessionStore(location)
with session_checkpointer(location, EventOutbox()):
    pass
"""


@pytest.mark.parametrize("attempt", range(3))
def test_processes_that_open_a_new_store_together_each_find_its_tables(
    store_location: Path, attempt: int
) -> None:
    # Runners started at once on a new store each make the store's and the
    # checkpointer's tables if missing. Side by side they used to fail:
    # SQLite's switch to WAL found the file locked; on PostgreSQL the
    # checkpointer's tables were made twice (a duplicate key in pg_type), and
    # a version read before another's setup committed and a table list read
    # after it looked like another program's database.
    at = str(time.time() + 3)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT, str(store_location), at],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    failed = [p.communicate(timeout=120)[1] for p in processes if p.wait(timeout=120) != 0]
    assert failed == [], failed[0][-1500:]
    assert SessionStore(store_location).runs() == []


def test_a_check_while_another_process_makes_the_store_sees_it_before_or_after(
    store_location: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store is made between the check's version read and its table list:
    # read as of one moment, the check sees a new store, not tables without a
    # version ("another program's database").
    from aah.store import check_database, schema

    if not isinstance(store_location, DatabaseURL):
        store_location.parent.mkdir(parents=True)
        with sqlite3.connect(store_location) as new:  # a new file, already in WAL
            new.execute("PRAGMA journal_mode = wal")
    listed = schema.table_names

    def made_meanwhile(conn: object) -> set[str]:
        monkeypatch.setattr(schema, "table_names", listed)
        SessionStore(store_location).close()
        return listed(conn)

    monkeypatch.setattr(schema, "table_names", made_meanwhile)
    found = check_database(store_location)
    assert found.problems == [] and found.schema_version == 0
    assert check_database(store_location).schema_version == schema.SCHEMA_VERSION


def test_a_new_file_held_by_another_program_is_one_line_after_the_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aah.store import StoreFileError, schema

    path = tmp_path / "held.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # readers go on; the switch to WAL cannot
    monkeypatch.setattr(schema, "BUSY_TIMEOUT_S", 0.3)
    try:
        with pytest.raises(StoreFileError, match="stayed locked by another process"):
            SessionStore(path)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert SessionStore(path).runs() == []


def test_newer_schema_is_refused(db_path: Path) -> None:
    SessionStore(db_path).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(AahError, match="upgrade aah"):
        SessionStore(db_path)


def test_default_path_comes_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAH_DB", str(tmp_path / "a" / "b" / "env.db"))
    with SessionStore() as store:
        assert store.path == tmp_path / "a" / "b" / "env.db"
    assert store.path.is_file()


def test_open_session_is_idempotent_per_run_and_task(store: SessionStore) -> None:
    store.create_run("r", {"seed": 1})
    first = store.open_session("q", run="r", task_id="t1", setting="perfect", model="m")
    again = store.open_session("another query", run="r", task_id="t1")
    other = store.open_session("q", run="r", task_id="t2")
    assert again.id == first.id and again.query == "q"
    assert other.id != first.id
    assert first.thread_id == first.id and first.status == "running" and first.aah
    # Sessions outside a run never collide with each other.
    assert store.open_session("q").id != store.open_session("q").id
    assert [s.task_id for s in store.list_sessions(run="r")] == ["t1", "t2"]
    with pytest.raises(KeyError, match="create_run"):
        store.open_session("q", run="missing", task_id="t1")


def test_create_run_keeps_the_first_manifest(store: SessionStore) -> None:
    store.create_run("r", {"seed": 1})
    assert store.create_run("r", {"seed": 2}).manifest == {"seed": 1}
    assert [run.name for run in store.runs()] == ["r"]


def test_events_round_trip_as_typed_models_in_order(store: SessionStore) -> None:
    session = store.open_session("q")
    written = [store.append_event(event) for event in one_of_each(session.id)]
    assert [event.seq for event in written] == list(range(1, 10))
    read = store.events(session.id)
    assert read == written
    assert [type(event) for event in read] == [type(e) for e in one_of_each(session.id)]
    assert store.events(session.id, after=7) == written[7:]
    tool = read[3]
    assert isinstance(tool, ToolCallEvent) and tool.result.endswith("chars]")
    assert len(tool.result) <= 2_000


def test_appending_events_keeps_session_counters(store: SessionStore) -> None:
    session = store.open_session("q")
    for event in one_of_each(session.id):
        store.append_event(event)
    store.set_status(session.id, "waiting")
    assert store.list_sessions(status="waiting")[0].id == session.id
    done = store.finish_session(session.id, "finished", "Sunny.")
    assert (done.status, done.final_answer) == ("finished", "Sunny.")
    assert done.ended is not None and done.ended >= done.started
    assert (done.info_awareness, done.tool_awareness) == ("yes", "idk")
    counters = (done.n_events, done.n_model_calls, done.n_tool_calls, done.n_tool_errors)
    assert counters == (9, 1, 2, 1)
    assert (done.n_human_questions, done.prompt_tokens, done.completion_tokens) == (1, 10, 5)


def test_a_question_and_its_answer_are_logged_once_per_request(store: SessionStore) -> None:
    session = store.open_session("q")
    asked = HumanQuestionEvent(session_id=session.id, request_id="r1", question="Which?")
    answered = HumanAnswerEvent(
        session_id=session.id, request_id="r1", answer="Oslo", answered_by="oracle"
    )
    other = HumanAnswerEvent(
        session_id=session.id, request_id="r2", answer="Bergen", answered_by="oracle"
    )
    assert [e.seq for e in store.append_events([asked, answered])] == [1, 2]
    # A replay after a crash logs the same question and answer again.
    assert store.append_events([asked, answered, other]) == [other.model_copy(update={"seq": 3})]
    assert store.append_event(answered).seq == 0
    kinds = [(e.kind, getattr(e, "request_id", None)) for e in store.events(session.id)]
    assert kinds == [("human_question", "r1"), ("human_answer", "r1"), ("human_answer", "r2")]
    assert store.get_session(session.id).n_human_questions == 1  # type: ignore[union-attr]


def test_a_question_moves_its_session_to_waiting_once_after_the_held_events(
    store: SessionStore,
) -> None:
    session = store.open_session("q")
    said = ModelCallEvent(session_id=session.id, model="m", text="Which city?")
    asked = HumanQuestionEvent(session_id=session.id, request_id="r1", question="Which?")
    known, stored = store.log_question(asked, [said])
    assert known == []
    assert [(e.kind, e.seq) for e in stored] == [("model_call", 1), ("human_question", 2)]
    assert store.get_session(session.id).status == "waiting"  # type: ignore[union-attr]
    # Asked again after a restart: the log so far comes back, the question
    # is not logged twice, and what the session held since is.
    store.set_status(session.id, "running")
    later = ModelCallEvent(session_id=session.id, model="m", text="still asking")
    known, stored = store.log_question(asked, [later])
    assert [e.seq for e in known] == [1, 2]
    assert [(e.kind, e.seq) for e in stored] == [("model_call", 3)]
    assert store.get_session(session.id).status == "waiting"  # type: ignore[union-attr]
    with pytest.raises(KeyError, match="'nope'"):
        store.log_question(asked.model_copy(update={"session_id": "nope"}))


def test_event_for_unknown_session_is_refused(store: SessionStore) -> None:
    with pytest.raises(KeyError):
        store.append_event(ErrorEvent(session_id="nope", message="x"))
    with pytest.raises(KeyError):
        store.finish_session("nope")


def test_seq_is_unique_and_gap_free_under_threads(store: SessionStore) -> None:
    session = store.open_session("q")

    def append(worker: int) -> None:
        for i in range(50):
            store.append_event(ErrorEvent(session_id=session.id, message=f"{worker}:{i}"))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(append, range(16)))
    events = store.events(session.id)
    assert [event.seq for event in events] == list(range(1, 801))
    assert len({event.message for event in events if isinstance(event, ErrorEvent)}) == 800


READER = """
import sys
from pathlib import Path
from aah.store.sessions import SessionStore
store = SessionStore(sys.argv[1])
stop, expected = Path(sys.argv[2]), int(sys.argv[3])
print("ready", flush=True)
partial = 0
while True:
    finished = stop.exists()  # checked first, so the last pass sees every write
    total = 0
    for session in store.list_sessions():
        seqs = [event.seq for event in store.events(session.id)]
        assert seqs == list(range(1, len(seqs) + 1)), seqs  # never a gap
        assert len(seqs) >= session.n_events, (len(seqs), session.n_events)
        total += len(seqs)
    store.humans.pending_human_requests()
    partial += 0 < total < expected
    if finished:
        break
print(partial, total)
"""


async def test_64_sessions_write_while_another_process_reads(
    store: SessionStore, tmp_path: Path
) -> None:
    sessions, per_session = 64, 25
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store.path), str(stop), str(sessions * per_session)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None
    assert await asyncio.to_thread(reader.stdout.readline) == "ready\n"
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=sessions))

    async def one_session(k: int) -> str:
        session = await asyncio.to_thread(store.open_session, f"q{k}", session_id=f"s{k:02}")
        for i in range(per_session):
            event = ModelCallEvent(session_id=session.id, model="m", text=f"{k}/{i}")
            await asyncio.to_thread(store.append_event, event)
        return session.id

    ids = await asyncio.gather(*(one_session(k) for k in range(sessions)))
    assert reader.poll() is None  # still reading while every write happened
    stop.touch()
    out, err = await asyncio.to_thread(reader.communicate, timeout=60)
    assert reader.returncode == 0, err
    assert "locked" not in err
    partial, total = map(int, out.split())
    assert partial > 0  # the reader did read while the writers wrote
    assert total == sessions * per_session
    for k, session_id in enumerate(ids):
        events = store.events(session_id)
        assert [event.seq for event in events] == list(range(1, per_session + 1))
        texts = [event.text for event in events if isinstance(event, ModelCallEvent)]
        assert texts == [f"{k}/{i}" for i in range(per_session)]


ANSWERER = """
import json, sys
from aah.store.sessions import SessionStore
store = SessionStore(sys.argv[1])
print(json.dumps([store.humans.answer_human_request(sys.argv[2], f"proc{i}", f"p{i}") for i in range(4)]))
"""


def test_human_request_settles_once_across_processes(store: SessionStore) -> None:
    session = store.open_session("q")
    request = store.humans.create_human_request(session.id, "Which city?", {"query": "q"}, k=3)
    assert store.humans.pending_human_requests() == [request]
    barrier = threading.Barrier(5)

    def answer_here(i: int) -> bool:
        barrier.wait()
        return store.humans.answer_human_request(request.id, f"thread{i}", f"t{i}", rating=1)

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(answer_here, i) for i in range(4)]
        barrier.wait()
        other = run_python(ANSWERER, str(store.path), request.id)
        settled_here = [future.result() for future in futures]
    assert other.returncode == 0, other.stderr
    settled = settled_here + json.loads(other.stdout)
    assert settled.count(True) == 1

    final = store.humans.get_human_request(request.id)
    assert final is not None and final.status == "answered"
    answers = store.humans.human_answers(request.id)
    assert len(answers) == 8
    assert answers[0].annotator == final.answered_by and answers[0].answer == final.answer
    assert store.humans.pending_human_requests() == []
    # The same annotator answering twice (a double submit) changes nothing.
    assert not store.humans.answer_human_request(request.id, "thread0", "again")
    assert len(store.humans.human_answers(request.id)) == 8


def test_declined_expired_and_overlap(store: SessionStore) -> None:
    session = store.open_session("q")
    declined = store.humans.create_human_request(session.id, "a?")
    assert store.humans.answer_human_request(declined.id, "ann", "", declined=True)
    assert store.humans.get_human_request(declined.id).status == "declined"  # type: ignore[union-attr]
    expired = store.humans.create_human_request(session.id, "b?")
    assert store.humans.expire_human_request(expired.id)
    assert not store.humans.expire_human_request(expired.id)
    assert not store.humans.answer_human_request(expired.id, "ann", "late")
    assert store.humans.get_human_request(expired.id).status == "expired"  # type: ignore[union-attr]
    overlap = store.humans.create_human_request(session.id, "c?", k=2)
    store.humans.answer_human_request(overlap.id, "ann", "yes")
    assert [r.id for r in store.humans.requests_for("other")] == [overlap.id]
    assert store.humans.requests_for("ann") == []
    with pytest.raises(KeyError):
        store.humans.answer_human_request("missing", "ann", "x")


def test_pending_requests_are_oldest_first(store: SessionStore) -> None:
    session = store.open_session("q")
    requests = [store.humans.create_human_request(session.id, f"q{i}?") for i in range(4)]
    store.humans.answer_human_request(requests[1].id, "ann", "a")
    assert [r.id for r in store.humans.pending_human_requests()] == [
        requests[0].id,
        requests[2].id,
        requests[3].id,
    ]


def test_the_full_listing_pages_whole_records_as_the_queue_orders_them(
    store: SessionStore,
) -> None:
    live, ended = store.open_session("q"), store.open_session("q2")
    deadline = datetime(2099, 1, 1, tzinfo=UTC)
    context = {"query": "q", "conversation": [{"role": "user", "text": "é"}], "n": 1.5}
    made = [
        store.humans.create_human_request(
            live.id, "q0?", context, k=2, deadline=deadline, fallback="idk"
        ),
        store.humans.create_human_request(ended.id, "gone?"),
        store.humans.create_human_request(live.id, "q2?", kind="approval"),
        store.humans.create_human_request(live.id, "q3?"),
    ]
    store.end_session(ended.id, "error", None)
    store.humans.expire_human_request(made[3].id)
    usable = [made[2], made[0]]  # an approval first: its agent is blocked on it
    assert store.humans.pending_human_requests() == usable  # whole records: context, deadline, kind
    assert [r.id for r in store.humans.queue_listing().entries] == [r.id for r in usable]
    assert store.humans.pending_human_requests(limit=1) == usable[:1]
    assert store.humans.pending_human_requests(limit=0) == []
    assert store.humans.pending_human_requests()[1].deadline == deadline


def test_grades_keep_every_vote(store: SessionStore) -> None:
    session = store.open_session("q")
    grade = store.add_grade(session.id, "g", "v1", ["Pass", "Fail", "Pass"], "pass")
    assert store.grades(session.id) == [grade]
    assert grade.votes == ["Pass", "Fail", "Pass"] and not grade.flagged


# Every write that names a session or request refuses a missing one, and writes nothing.
MISSING_TARGETS = [
    ("event", lambda store: store.append_event(ErrorEvent(session_id="nope", message="x"))),
    ("status", lambda store: store.set_status("nope", "waiting")),
    ("finish", lambda store: store.finish_session("nope")),
    ("end", lambda store: store.end_session("nope", "error", None)),
    ("grade", lambda store: store.add_grade("nope", "g", "v1", [], "pass")),
    ("request", lambda store: store.humans.create_human_request("nope", "Which city?")),
    ("answer", lambda store: store.humans.answer_human_request("nope", "ann", "x")),
]


@pytest.mark.parametrize(
    "write", [write for _, write in MISSING_TARGETS], ids=[name for name, _ in MISSING_TARGETS]
)
def test_writes_naming_a_missing_session_or_request_are_refused(
    store: SessionStore, write: Callable[[SessionStore], object]
) -> None:
    with pytest.raises(KeyError, match="'nope'"):
        write(store)
    with store.queries() as read:
        assert read.session_summaries(outside_runs=True) == []
        assert list(read.grade_verdicts(outside_runs=True)) == []
    assert store.humans.pending_human_requests() == []
    assert not store.humans.expire_human_request("nope")
    assert store.humans.get_human_request("nope") is None


def test_a_closed_store_reopens_its_connections(store: SessionStore) -> None:
    session = store.open_session("q")
    request = store.humans.create_human_request(session.id, "Which city?")
    store.close()
    assert store.humans.answer_human_request(request.id, "ann", "Oslo")
    assert store.get_session(session.id) is not None
    assert [a.annotator for a in store.humans.human_answers(request.id)] == ["ann"]


def test_scrub_replaces_secrets_at_any_depth() -> None:
    value = {
        "API_KEY": "abc",
        "nested": [{"Authorization": "Bearer xyz", "password": 3, "x-api-key": "k"}],
        "models": {"agent": {"api_key": None, "max_tokens": 100, "prompt_tokens": 3}},
        "note": f"use {OPENAI_KEY} here",
        "header": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
        "access_token": "t",
        "client_secret": "s",
        "query": {"key": "k", "appid": "a", "sort_key": "date", "page": 2},
        "path": Path("/x"),
    }
    assert scrub(value) == {
        "API_KEY": REDACTED,
        "nested": [{"Authorization": REDACTED, "password": REDACTED, "x-api-key": REDACTED}],
        "models": {"agent": {"api_key": None, "max_tokens": 100, "prompt_tokens": 3}},
        "note": f"use {REDACTED} here",
        "header": f"Authorization: Bearer {REDACTED}",
        "access_token": REDACTED,
        "client_secret": REDACTED,
        "query": {"key": REDACTED, "appid": REDACTED, "sort_key": "date", "page": 2},
        "path": "/x",
    }


def test_no_secret_reaches_the_file(store: SessionStore) -> None:
    secrets = [OPENAI_KEY, "hunter2-password", "tok-123456", "auth-header-value"]
    store.create_run(
        "r",
        {"settings": {"api_key": OPENAI_KEY, "grader": {"Api-Key": "tok-123456"}}, "seed": 3},
    )
    session = store.open_session(f"my key is {OPENAI_KEY}", run="r", task_id="t")
    store.append_event(
        ToolCallEvent(
            session_id=session.id,
            call_id="c",
            tool="t__e",
            arguments={
                "password": "hunter2-password",
                "headers": {"authorization": "auth-header-value"},
            },
            ok=True,
            result=f"echo {OPENAI_KEY}",
        )
    )
    request = store.humans.create_human_request(session.id, "q?", {"token": "tok-123456"})
    store.humans.answer_human_request(request.id, "ann", f"here: {OPENAI_KEY}")
    store.finish_session(session.id, "finished", f"done {OPENAI_KEY}")
    store.close()
    raw = stored_bytes(store.path)
    for secret in secrets:
        assert secret.encode() not in raw
    assert b"[redacted]" in raw
