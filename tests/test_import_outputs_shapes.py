"""Importing folders shaped like the paper's published outputs, odd records and all.

The folders are generated here, in tmp_path, with every shape the published
files have: 76-100 records a file, answers absent, null or a JSON structure,
query ids repeated with other outcomes, ``_qaq`` folders, No-tools with
``win_rate``, and files that cannot be read at all.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from aah.benchmark.failtalms.imports import import_failtalms_outputs, import_notes
from aah.benchmark.failtalms.published import read_answers
from aah.cli import importing
from aah.errors import AahError
from aah.events import FinalAnswerEvent
from aah.report.build import build_report
from aah.scoring.metrics import compute_metrics, load_outcomes
from aah.store.sessions import SessionStore

STRUCTURED_ANSWER = {"city": "Oslo", "temperature": 21}


@dataclass
class GeneratedFile:
    """One answers file written by the test, with what it must import as."""

    setting: str
    folder: str
    records: list[dict[str, Any]]
    passes: int
    duplicates: int
    anomalies: dict[str, int]


def _records(
    rng: random.Random,
    size: int,
    *,
    notools: bool = False,
    qaq: bool = False,
) -> list[dict[str, Any]]:
    records = []
    for query_id in range(1, size + 1):
        skipped = rng.random() < 0.1
        record: dict[str, Any] = {
            "query_id": query_id,
            "query": f"Task number {query_id}: find the weather somewhere.",
            "skipped": skipped,
            "pass_rate": rng.choice([0, 1]),
            "tool_annotation": rng.choice(["yes", "idk", "no"]),
            "tool_awareness": "Because the tools say so.",
        }
        if not skipped:
            record["model_answer"] = f"Answer {query_id}."
        if notools:
            record["win_rate"] = rng.choice([0, 1])
        if qaq:
            record["interaction_scores"] = [
                {"question": "Which city?", "user_response": "Oslo.", "score": "1"}
            ]
        records.append(record)
    return records


def _expected_passes(setting: str, records: list[dict[str, Any]]) -> int:
    total = 0
    for record in records:
        score = record.get("pass_rate")
        if setting == "No-tools":  # win_rate alone; a record without one is no pass
            score = record.get("win_rate", 0)
        total += (not record.get("skipped")) and score is not None and score >= 1
    return total


def write_outputs(root: Path) -> list[GeneratedFile]:
    """A published-shaped ``outputs`` folder: readable files, and three that are not."""
    rng = random.Random(13)
    generated: list[GeneratedFile] = []

    original = _records(rng, 98)
    # Answers a model did not give, or gave as a structure (not skipped, so odd).
    for index in (3, 17, 40):
        original[index]["skipped"] = False
        original[index]["model_answer"] = None
    for index in (5, 60):
        original[index]["skipped"] = False
        original[index].pop("model_answer", None)
    original[8]["skipped"] = False
    original[8]["model_answer"] = STRUCTURED_ANSWER
    original[9]["skipped"] = False
    original[9]["model_answer"] = ["Oslo", 21]
    # A task run and appended again, with the other outcome each time.
    for index in (0, 1):
        again = dict(original[index], skipped=False, model_answer="Run again.")
        again["pass_rate"] = 1 - (original[index]["pass_rate"] or 0)
        original.append(again)
    generated.append(
        GeneratedFile(
            "Original",
            "gamma",
            original,
            _expected_passes("Original", original),
            duplicates=2,
            anomalies={"answer_missing": 5, "answer_not_text": 2},
        )
    )

    with_aah = _records(rng, 76, qaq=True)
    with_aah[10]["query_id"] = with_aah[11]["query_id"]  # a repeat with another query
    generated.append(
        GeneratedFile(
            "Original",
            "gamma_qaq",
            with_aah,
            _expected_passes("Original", with_aah),
            duplicates=1,
            anomalies={},
        )
    )

    notools = _records(rng, 90, notools=True)
    for record in notools[:5]:
        del record["win_rate"]  # a fail then, whatever pass_rate says
    generated.append(
        GeneratedFile(
            "No-tools",
            "gamma",
            notools,
            _expected_passes("No-tools", notools),
            duplicates=0,
            anomalies={},
        )
    )

    for file in generated:
        path = root / file.setting / file.folder / "answers.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(file.records, indent=1), encoding="utf-8")

    unreadable = {
        "Underspecified": "[{'query_id': 1,",  # not JSON
        "Replaceable": json.dumps({"answers": _records(rng, 80)}),  # an object, not a list
        "Non-replaceable": json.dumps(_records(rng, 3) + ["a stray line"]),  # not an object
    }
    for setting, text in unreadable.items():
        path = root / setting / "gamma" / "answers.json"
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    return generated


@pytest.fixture
def outputs(tmp_path: Path) -> tuple[Path, list[GeneratedFile]]:
    root = tmp_path / "outputs"
    return root, write_outputs(root)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "shapes.db") as opened:
        yield opened


def test_every_record_of_every_readable_file_is_a_session_and_counts(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, generated = outputs
    summary = import_failtalms_outputs(root, store)
    total = sum(len(file.records) for file in generated)
    assert summary.files == 3 and summary.sessions_added == total == 100 + 76 + 90
    cells = {(c.run, c.setting): c for c in compute_metrics(load_outcomes(store))}
    for file in generated:
        setting = {"Original": "perfect", "No-tools": "notools"}[file.setting]
        cell = cells[f"published:{file.folder}", setting]
        # The paper's denominator: every record of the file, repeats included.
        assert cell.n == cell.pass_rate.n == len(file.records), file.folder
        assert cell.pass_rate.k == file.passes, file.folder
        assert cell.aah is file.folder.endswith("_qaq")


def test_counts_of_repeats_and_odd_records_per_run(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, generated = outputs
    summary = import_failtalms_outputs(root, store)
    gamma = summary.counts["published:gamma"]
    assert (gamma.records, gamma.duplicates, gamma.anomalous) == (100 + 90, 2, 7)
    assert gamma.anomalies == {"answer_missing": 5, "answer_not_text": 2}
    with_aah = summary.counts["published:gamma_qaq"]
    assert (with_aah.records, with_aah.duplicates, with_aah.anomalous) == (76, 1, 0)
    run = store.get_run("published:gamma")
    assert run is not None and run.manifest["import_counts"] == gamma.to_json()
    warnings = "\n".join(summary.warnings)
    assert "2 records repeat a query_id of the file (query 1 x2, query 2 x2)" in warnings
    assert "5 records with model_answer absent or null" in warnings
    assert "(query 4, query 6, query 18, query 41, query 61)" in warnings
    assert "2 records with model_answer not a string: kept as its JSON text" in warnings
    assert "1 record repeats a query_id of the file (query 12 x2)" in warnings


def test_a_repeated_query_id_is_its_own_session_with_its_own_outcome(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, generated = outputs
    import_failtalms_outputs(root, store)
    sessions = {s.task_id: s for s in store.list_sessions(run="published:gamma")}
    first, again = sessions["perfect-1"], sessions["perfect-1@98"]
    assert again.final_answer == "Run again."
    verdicts = [[g.verdict for g in store.grades(s.id)] for s in (first, again)]
    original = generated[0].records
    if not original[0]["skipped"]:
        assert sorted(verdicts[0] + verdicts[1]) == ["fail", "pass"]
    assert verdicts[1] == ["pass" if original[98]["pass_rate"] else "fail"]
    assert "perfect-2@99" in sessions and len(sessions) == 100 + 90


def test_odd_answers_are_kept_as_text(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, _ = outputs
    import_failtalms_outputs(root, store)
    sessions = {s.task_id: s for s in store.list_sessions(run="published:gamma")}
    structured = sessions["perfect-9"]
    assert json.loads(structured.final_answer or "") == STRUCTURED_ANSWER
    final = store.events(structured.id)[-1]
    assert isinstance(final, FinalAnswerEvent) and json.loads(final.text) == STRUCTURED_ANSWER
    assert json.loads(sessions["perfect-10"].final_answer or "") == ["Oslo", 21]
    missing = sessions["perfect-4"]
    assert missing.status == "finished" and missing.final_answer == ""
    assert len(store.grades(missing.id)) == 1  # graded on its published score all the same


def test_unreadable_files_are_named_with_their_reason_and_the_rest_imports(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, _ = outputs
    summary = import_failtalms_outputs(root, store)
    reasons = {file.path.parent.parent.name: file.reason for file in summary.unreadable}
    assert set(reasons) == {"Underspecified", "Replaceable", "Non-replaceable"}
    assert "is not JSON" in reasons["Underspecified"]
    assert "holds a JSON object, not a list of answers" in reasons["Replaceable"]
    assert "record 3 is a JSON string, not an object" in reasons["Non-replaceable"]
    for setting, reason in reasons.items():
        assert str(root / setting / "gamma" / "answers.json") in reason and "\n" not in reason
    assert {s.setting for s in store.list_sessions()} == {"perfect", "notools"}
    run = store.get_run("published:gamma")
    assert run is not None
    assert run.manifest["files"] == ["No-tools/gamma/answers.json", "Original/gamma/answers.json"]


def test_importing_again_adds_nothing_and_a_fixed_file_then_imports(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, generated = outputs
    first = import_failtalms_outputs(root, store)
    sessions = len(store.list_sessions())
    again = import_failtalms_outputs(root, store)
    assert again.sessions_added == 0 and again.sessions_present == first.sessions_added
    assert len(store.list_sessions()) == sessions and again.runs_added == []
    fixed = _records(random.Random(5), 80)
    (root / "Replaceable" / "gamma" / "answers.json").write_text(json.dumps(fixed))
    third = import_failtalms_outputs(root, store)
    assert third.sessions_added == 80 and third.sessions_present == sessions
    assert len(third.unreadable) == 2


@pytest.mark.parametrize(
    ("record", "anomalies", "final"),
    [
        ({"query_id": 1, "query": "q", "model_answer": "a"}, (), "a"),
        ({"query_id": 1, "query": "q"}, ("answer_missing",), ""),
        ({"query_id": 1, "query": "q", "model_answer": None}, ("answer_missing",), ""),
        ({"query_id": 1, "query": "q", "skipped": True}, (), ""),
        ({"query_id": 1, "query": "q", "model_answer": {"a": 1}}, ("answer_not_text",), '{"a": 1}'),
        ({"query_id": 1, "query": "q", "model_answer": [1, "é"]}, ("answer_not_text",), '[1, "é"]'),
        ({"query_id": 1, "query": "q", "model_answer": 42}, ("answer_not_text",), "42"),
        ({"query_id": 1, "model_answer": "a"}, ("query_missing",), "a"),
        ({"query_id": 1, "query": ["q"], "model_answer": "a"}, ("query_not_text",), "a"),
        ({"query": "q", "model_answer": "a"}, ("query_id_missing",), "a"),
        ({"query_id": [1], "query": "q", "model_answer": "a"}, ("field_unreadable",), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "skipped": "maybe"}, ("field_unreadable",), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "pass_rate": "high"}, ("field_unreadable",), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "pass_rate": "1"}, (), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "tool_annotation": 3}, ("field_unreadable",), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "info_annotation": "perhaps"}, ("info_annotation_unparsed",), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "interaction_scores": "none"}, ("field_unreadable",), "a"),
        ({"query_id": 1, "query": "q", "model_answer": "a", "interaction_scores": [{"score": 1}]}, ("field_unreadable",), "a"),
    ],
)  # fmt: skip
def test_odd_records_corpus(
    tmp_path: Path, record: dict[str, Any], anomalies: tuple[str, ...], final: str
) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    (answer,) = read_answers(path)
    assert answer.anomalies == anomalies and answer.model_answer == final


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "is not JSON"),
        ("", "is not JSON"),
        ('{"query_id": 1}', "holds a JSON object, not a list"),
        ('"answers"', "holds a JSON string, not a list"),
        ("null", "holds a JSON null, not a list"),
        ('[{"query_id": 1}, 2]', "record 1 is a JSON number, not an object"),
        ('[[{"query_id": 1}]]', "record 0 is a JSON list, not an object"),
    ],
)
def test_unreadable_file_corpus(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "answers.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AahError, match=reason) as error:
        read_answers(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_report_notes_give_each_runs_repeats_and_odd_records(
    outputs: tuple[Path, list[GeneratedFile]], store: SessionStore
) -> None:
    root, _ = outputs
    import_failtalms_outputs(root, store)
    notes = build_report(store).notes
    assert (
        "run published:gamma was imported from 190 records, each counted; 2 repeat a query_id "
        "of their file and are sessions of their own; 7 are odd records (answer_missing 5, "
        "answer_not_text 2); see `aah import` warnings"
    ) in notes
    assert any(note.startswith("run published:gamma_qaq was imported from 76") for note in notes)
    assert import_notes("x", {"import_counts": {"records": 5, "duplicates": 0}}) == []
    assert import_notes("x", {}) == []


def _cli() -> typer.Typer:
    root = typer.Typer()
    root.add_typer(importing.app, name="import")
    return root


def test_cli_prints_counts_names_unreadable_files_and_fails(
    outputs: tuple[Path, list[GeneratedFile]], tmp_path: Path
) -> None:
    root, _ = outputs
    db = tmp_path / "cli.db"
    result = CliRunner().invoke(_cli(), ["import", "failtalms-outputs", str(root), "--db", str(db)])
    assert isinstance(result.exception, AahError)
    assert "3 of 6 answer files could not be read" in str(result.exception)
    assert "266 sessions imported, 0 already present, from 3 files into 2 runs" in result.stdout
    assert "published:gamma: 190 records, all counted; repeated query_id 2, odd 7" in result.stdout
    assert (
        "published:gamma_qaq: 76 records, all counted; repeated query_id 1, odd 0" in result.stdout
    )
    assert "error:" in result.stderr and "Replaceable/gamma/answers.json" in result.stderr
    again = CliRunner().invoke(
        _cli(), ["import", "failtalms-outputs", str(root), "--db", str(db), "--json"]
    )
    data = json.loads(again.stdout)
    assert data["sessions_added"] == 0 and data["sessions_present"] == 266
    assert data["counts"]["published:gamma"]["duplicates"] == 2
    assert len(data["unreadable"]) == 3 and isinstance(again.exception, AahError)
