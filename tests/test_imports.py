"""Importing the paper's published outputs, then the metrics computed by hand for them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from aah.benchmark.failtalms.imports import import_failtalms_outputs, model_of, run_name
from aah.cli import importing
from aah.errors import AahError
from aah.events import AwarenessEvent, FinalAnswerEvent, HumanAnswerEvent, HumanQuestionEvent
from aah.scoring.metrics import CellMetrics, compute_metrics, load_outcomes
from aah.store.sessions import SessionStore

FIXTURES = Path(__file__).parent / "fixtures" / "published_outputs"
RUNS = ["published:alpha", "published:alpha_qaq", "published:beta", "published:beta_qaq"]

# Computed by hand from the fixture files: per run and setting, (k, n) of
# pass rate, awareness, unexpected, skip, interaction, no-or-idk, graceful
# failure, redundant questions; then mean questions and ungraded. None is a
# metric the setting does not report (only PR in No-tools).
EXPECTED = {
    ("published:alpha", "perfect"): [
        (2, 4),
        (2, 4),
        (1, 4),
        (1, 4),
        (0, 3),
        (2, 4),
        (1, 4),
        (0, 0),
        0.0,
        0,
    ],
    ("published:alpha", "underspecified"): [
        (2, 5),
        (3, 5),
        (1, 5),
        (1, 5),
        (0, 4),
        (3, 5),
        (2, 5),
        (0, 0),
        0.0,
        0,
    ],
    ("published:alpha", "replaceable"): [
        (2, 4),
        (2, 4),
        (1, 4),
        (1, 4),
        (0, 3),
        (3, 4),
        (1, 4),
        (0, 0),
        0.0,
        0,
    ],
    ("published:alpha", "nonreplaceable"): [
        (1, 3),
        (2, 3),
        (1, 3),
        (1, 3),
        (0, 2),
        (2, 3),
        (2, 3),
        (0, 0),
        0.0,
        0,
    ],
    ("published:alpha", "notools"): [
        (2, 4),
        None,
        None,
        None,
        None,
        (0, 4),
        (1, 4),
        (0, 0),
        0.0,
        0,
    ],
    ("published:alpha_qaq", "perfect"): [
        (2, 4),
        (2, 4),
        (1, 4),
        (1, 4),
        (2, 3),
        (2, 4),
        (2, 4),
        (0, 3),
        0.75,
        0,
    ],
    ("published:alpha_qaq", "underspecified"): [
        (2, 5),
        (3, 5),
        (1, 5),
        (1, 5),
        (3, 4),
        (3, 5),
        (2, 5),
        (1, 3),
        0.6,
        0,
    ],
    ("published:alpha_qaq", "replaceable"): [
        (2, 4),
        (2, 4),
        (1, 4),
        (1, 4),
        (3, 3),
        (3, 4),
        (2, 4),
        (0, 3),
        0.75,
        0,
    ],
    ("published:alpha_qaq", "nonreplaceable"): [
        (0, 3),
        (2, 3),
        (0, 3),
        (1, 3),
        (1, 2),
        (2, 3),
        (2, 3),
        (0, 1),
        0.3333,
        0,
    ],
    ("published:alpha_qaq", "notools"): [
        (1, 4),
        None,
        None,
        None,
        None,
        (0, 4),
        (0, 4),
        (0, 1),
        0.25,
        0,
    ],
    ("published:beta", "perfect"): [
        (2, 3),
        (3, 3),
        (0, 3),
        (0, 3),
        (0, 3),
        (0, 3),
        (0, 3),
        (0, 0),
        0.0,
        0,
    ],
    ("published:beta_qaq", "underspecified"): [
        (3, 3),
        (3, 3),
        (0, 3),
        (0, 3),
        (3, 3),
        (3, 3),
        (0, 3),
        (0, 3),
        1.0,
        0,
    ],
}
PROPORTIONS = [
    "pass_rate",
    "awareness",
    "unexpected",
    "skip",
    "interaction",
    "no_or_idk",
    "graceful_failure",
    "redundant_questions",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "p.db") as opened:
        yield opened


def figures(cell: CellMetrics) -> list[object]:
    counts: list[object] = []
    for name in PROPORTIONS:
        value = getattr(cell, name)
        counts.append(None if value is None else (value.k, value.n))
    mean = None if cell.mean_questions is None else round(cell.mean_questions, 4)
    return [*counts, mean, cell.ungraded]


def test_metrics_of_the_fixtures_match_the_hand_computed_figures(store: SessionStore) -> None:
    summary = import_failtalms_outputs(FIXTURES, store)
    assert summary.files == 12 and summary.sessions_added == 46 and summary.sessions_present == 0
    assert sorted(summary.runs) == RUNS and sorted(summary.runs_added) == RUNS
    cells = compute_metrics(load_outcomes(store))
    got = {(c.run, c.setting): figures(c) for c in cells}
    assert got.keys() == EXPECTED.keys()
    for key, expected in EXPECTED.items():
        assert got[key] == expected, key
    by_key = {(c.run, c.setting): c for c in cells}
    alpha = by_key["published:alpha", "perfect"]
    assert alpha.aah is False and alpha.model == "alpha"
    assert (alpha.pass_rate.low, alpha.pass_rate.high) == pytest.approx((0.1500, 0.8500), abs=1e-4)
    assert by_key["published:alpha_qaq", "underspecified"].aah is True


def test_warnings_name_skipped_folders_and_lenient_values(store: SessionStore) -> None:
    summary = import_failtalms_outputs(FIXTURES, store)
    assert any("No-tool" in w and "not a setting folder" in w for w in summary.warnings)
    assert any("Imaged_results" in w for w in summary.warnings)
    assert any("query 2" in w and "information" in w for w in summary.warnings)
    assert len(summary.warnings) == 3


def test_records_of_one_imported_answer(store: SessionStore) -> None:
    import_failtalms_outputs(FIXTURES, store)
    run = store.get_run("published:alpha_qaq")
    assert run is not None and run.manifest["imported"] == "failtalms-outputs"
    assert run.manifest["source"] == str(FIXTURES.resolve()) and run.manifest["aah"] is True
    assert "Original/alpha_qaq/answers.json" in run.manifest["files"]
    sessions = {s.task_id: s for s in store.list_sessions(run="published:alpha_qaq")}
    session = sessions["perfect-2"]
    assert session.setting == "perfect" and session.aah and session.model == "alpha"
    assert (session.tool_awareness, session.info_awareness) == ("yes", "yes")
    events = store.events(session.id)
    kinds = [e.kind for e in events]
    assert kinds == ["awareness", "awareness"] + ["human_question", "human_answer"] * 2 + [
        "final_answer"
    ]
    question, answer = events[2], events[3]
    assert isinstance(question, HumanQuestionEvent) and isinstance(answer, HumanAnswerEvent)
    assert question.question == "Do you need regional holidays too?"
    assert answer.answer == "No, national ones." and answer.answered_by == "published"
    ratings = [store.humans.human_answers(e.request_id)[0].rating for e in events[2:6:2]]  # type: ignore[union-attr]
    assert ratings == [1, 0]
    assert isinstance(events[-1], FinalAnswerEvent)
    (grade,) = store.grades(session.id)
    assert (grade.grader_model, grade.verdict, grade.votes) == ("published", "fail", [0])
    skipped = sessions["perfect-4"]
    assert skipped.status == "skipped" and store.grades(skipped.id) == []
    # No-tools: win_rate alone decides; without it a record is a fail, whatever its pass_rate.
    verdicts = {
        s.task_id: [g.verdict for g in store.grades(s.id)]
        for s in store.list_sessions(run="published:alpha_qaq")
        if s.setting == "notools"
    }
    assert verdicts == {
        "notools-1": ["pass"],
        "notools-2": ["fail"],
        "notools-3": ["fail"],
        "notools-4": ["fail"],
    }
    beta = {s.task_id: s for s in store.list_sessions(run="published:beta")}
    reason_only = store.events(beta["perfect-3"].id)[0]
    assert isinstance(reason_only, AwarenessEvent) and reason_only.answer == "yes"
    assert beta["perfect-2"].info_awareness == "none"


def test_importing_twice_adds_nothing(store: SessionStore) -> None:
    import_failtalms_outputs(FIXTURES, store)
    before = _counts(store)
    again = import_failtalms_outputs(FIXTURES, store)
    assert again.sessions_added == 0 and again.sessions_present == 46 and again.runs_added == []
    assert _counts(store) == before


def test_an_import_cut_short_resumes_without_duplicates(store: SessionStore) -> None:
    import_failtalms_outputs(FIXTURES, store)
    complete = _counts(store)
    (session,) = [
        s for s in store.list_sessions(run="published:alpha_qaq") if s.task_id == "perfect-2"
    ]
    # Leave the session as a crash would: open, its first three events in, no grade.
    with store._write() as db:  # the test reaches in to fake the crash
        db.execute("DELETE FROM events WHERE session_id = ? AND seq > 3", [session.id])
        db.execute("DELETE FROM grades WHERE session_id = ?", [session.id])
        sql = "UPDATE sessions SET status = 'running', n_events = 3 WHERE id = ?"
        db.execute(sql, [session.id])
    summary = import_failtalms_outputs(FIXTURES, store)
    assert summary.sessions_added == 1 and summary.sessions_present == 45
    assert _counts(store) == complete
    kinds = [e.kind for e in store.events(session.id)]
    assert kinds == ["awareness", "awareness", "human_question", "human_answer"] * 1 + [
        "human_question",
        "human_answer",
        "final_answer",
    ]
    assert [g.verdict for g in store.grades(session.id)] == ["fail"]
    assert store.get_session(session.id).status == "finished"  # type: ignore[union-attr]


def _counts(store: SessionStore) -> dict[str, int]:
    with store._write() as db:
        tables = ["runs", "sessions", "events", "human_requests", "human_answers", "grades"]
        return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def test_a_malformed_file_is_named_and_the_others_import(
    tmp_path: Path, store: SessionStore
) -> None:
    broken = tmp_path / "outputs" / "Original" / "m"
    broken.mkdir(parents=True)
    shutil.copytree(FIXTURES / "Original" / "alpha", tmp_path / "outputs" / "Original" / "alpha")
    (broken / "answers.json").write_text("{not json", encoding="utf-8")
    summary = import_failtalms_outputs(tmp_path / "outputs", store)
    ((path, reason),) = summary.unreadable
    assert path == broken / "answers.json" and str(path) in reason and "\n" not in reason
    assert summary.runs == ["published:alpha"] and summary.sessions_added == 4

    (broken / "answers.json").write_text(json.dumps({"query_id": 1}), encoding="utf-8")
    summary = import_failtalms_outputs(tmp_path / "outputs", store)
    assert "not a list of answers" in summary.unreadable[0].reason

    # A record without its query is imported all the same, and counted as odd.
    entries = [{"query_id": 1, "query": "ok"}, {"query_id": 2, "skipped": False}]
    (broken / "answers.json").write_text(json.dumps(entries), encoding="utf-8")
    summary = import_failtalms_outputs(tmp_path, store)  # the repository root is accepted too
    assert summary.unreadable == [] and summary.sessions_added == 2
    assert summary.counts["published:m"].anomalies == {"answer_missing": 2, "query_missing": 1}


def test_a_folder_without_answers_is_an_error(tmp_path: Path, store: SessionStore) -> None:
    with pytest.raises(AahError, match="no folder"):
        import_failtalms_outputs(tmp_path / "missing", store)
    (tmp_path / "Original").mkdir()
    with pytest.raises(AahError, match="pass the Fail-TaLMs outputs folder"):
        import_failtalms_outputs(tmp_path, store)


def test_run_naming() -> None:
    assert run_name("gpt_4o_auto_eval_qaq") == "published:gpt_4o_auto_eval_qaq"
    assert model_of("gpt_4o_auto_eval_qaq") == ("gpt_4o_auto_eval", True)
    assert model_of("llama_8B_auto_eval") == ("llama_8B_auto_eval", False)


def _cli() -> typer.Typer:
    root = typer.Typer()
    root.add_typer(importing.app, name="import")
    return root


def test_cli_imports_and_reports(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    runner = CliRunner()
    result = runner.invoke(_cli(), ["import", "failtalms-outputs", str(FIXTURES), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert (
        "46 sessions imported, 0 already present, from 12 files into 4 runs (4 new)"
        in result.output
    )
    assert "published:beta_qaq" in result.output
    again = runner.invoke(
        _cli(), ["import", "failtalms-outputs", str(FIXTURES), "--db", str(db), "--json"]
    )
    data = json.loads(again.stdout)
    assert data["sessions_added"] == 0 and data["sessions_present"] == 46


def test_cli_names_an_unreadable_file_and_exits_with_an_error(tmp_path: Path) -> None:
    copy = tmp_path / "outputs"
    shutil.copytree(FIXTURES / "Original", copy / "Original")
    (copy / "Original" / "alpha" / "answers.json").write_text("[1]", encoding="utf-8")
    result = CliRunner().invoke(
        _cli(), ["import", "failtalms-outputs", str(copy), "--db", str(tmp_path / "e.db")]
    )
    assert isinstance(result.exception, AahError)
    assert "1 of 3 answer files could not be read" in str(result.exception)
    assert "Original/alpha/answers.json: record 0 is a JSON number" in result.stderr
    assert "7 sessions imported" in result.stdout  # the other files still import
    assert "published:beta: 3 records, all counted; repeated query_id 0, odd 1" in result.stdout
