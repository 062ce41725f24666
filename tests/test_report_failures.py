"""Reports that show what failed: error, flag, awareness-none and ungraded counts, notes,
tables that fit 80 columns, CSV, and charts for print."""

from __future__ import annotations

import csv
import io
import json
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_cli import aah

from aah.cli.report import _print_whole
from aah.events import AwarenessEvent, ErrorEvent, FinalAnswerEvent
from aah.report import (
    build_report,
    render_csv,
    render_html,
    render_json,
    rich_tables,
    write_charts,
)
from aah.report.charts import chart_figures, has_aah_pairs
from aah.report.tables import report_tables
from aah.report.text import column_widths, split_to_width
from aah.scoring.table import ReportTable
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry

RUN = "troubled"
SERVER_ERROR = {"error": {"status": 500, "message": "upstream exploded", "retry_after_ms": None}}
INTERVAL = re.compile(r"\[\d+\.\d–\d+\.\d\]")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "r.db") as opened:
        yield opened


def add(
    store: SessionStore,
    task: str,
    *,
    status: str = "finished",
    verdict: str | None = "pass",
    flagged: bool = False,
    awareness: str = "yes",
    error: str | None = None,
    run: str = RUN,
    aah_on: bool = True,
) -> None:
    opened = store.open_session(
        f"Query {task}", run=run, task_id=task, setting="perfect", model="m", aah=aah_on
    )
    store.append_event(AwarenessEvent(session_id=opened.id, question="tool", answer=awareness))
    if error is not None:
        store.append_event(ErrorEvent(session_id=opened.id, message=error, where="agent"))
        store.finish_session(opened.id, "error", None)
        return
    store.append_event(FinalAnswerEvent(session_id=opened.id, text="Done."))
    store.finish_session(opened.id, status, "Done.")  # type: ignore[arg-type]
    if verdict is not None:
        store.add_grade(opened.id, "grader", "v1", [verdict], verdict, flagged)  # type: ignore[arg-type]


def troubled_store(store: SessionStore) -> SessionStore:
    """Seven sessions: 2 pass, 2 in error (one message twice... and another), 1 flagged,
    1 awareness none, 1 ungraded."""
    store.create_run(RUN, {"model": "m"})
    add(store, "t1")
    add(store, "t2")
    add(store, "t3", error="the model server answered HTTP 500: upstream exploded")
    add(store, "t4", error="the model server answered HTTP 500: upstream exploded")
    add(store, "t5", verdict="fail", flagged=True)
    add(store, "t6", awareness="none", verdict="fail")
    add(store, "t7", verdict=None)
    return store


# -- counts, headline and notes ---------------------------------------------------------


def test_every_kind_of_trouble_is_counted_per_cell(store: SessionStore) -> None:
    data = json.loads(render_json(build_report(troubled_store(store))))
    (cell,) = data["cells"]
    assert (cell["n"], cell["errors"], cell["flagged"], cell["awareness_none"]) == (7, 2, 1, 1)
    assert (cell["ungraded"], cell["unfinished"]) == (1, 0)
    # PR as the paper counts it stays in the JSON; PR graded leaves the ungraded one out.
    assert (cell["pass_rate"]["k"], cell["pass_rate"]["n"]) == (2, 7)
    assert (cell["pass_rate_graded"]["k"], cell["pass_rate_graded"]["n"]) == (2, 6)


def test_the_headline_marks_the_cell_hides_pr_and_the_notes_say_why(store: SessionStore) -> None:
    report = build_report(troubled_store(store))
    (paper, failures, *_) = report_tables(report)
    assert paper.columns[:5] == ["setting", "Aah", "N", "PR", "PR graded"]
    (row,) = paper.rows
    assert row[2] == "7*" and row[3] == "—"  # never 0.0 while a session has no verdict
    assert row[4].startswith("33.3 [") and row[4].endswith(" of 6")
    assert "* beside N" in paper.caption
    assert failures.title == "What failed underneath"
    assert failures.rows == [
        [RUN, "perfect", "7", "2", "1", "0", "0", "0", "0", "1", "1", "0", "0"]
    ]
    notes = "\n".join(report.notes)
    assert (
        f"run {RUN}, perfect: 2 of 7 sessions ended in error and count as not passed "
        "(2× the model server answered HTTP 500: upstream exploded)"
    ) in notes
    assert f"run {RUN}, perfect: 1 of 7 verdicts are flagged (1 tie(s))" in notes
    assert f"run {RUN}, perfect: 1 of 7 awareness replies were never parsed" in notes
    assert f"run {RUN}, perfect: PR not shown (1 ungraded, 0 unfinished of 7)" in notes


def test_html_and_csv_carry_the_same_counts(store: SessionStore) -> None:
    report = build_report(troubled_store(store))
    page = render_html(report)
    assert "What failed underneath" in page
    assert (
        f"<td>{RUN}</td><td>perfect</td><td>7</td><td>2</td><td>1</td><td>0</td><td>0</td><td>0</td><td>0</td><td>1</td><td>1</td>"
        in (page.replace("\n", ""))
    )
    assert "2 of 7 sessions ended in error" in page
    (row,) = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert (row["errors"], row["flagged"], row["awareness_none"], row["ungraded"]) == (
        "2",
        "1",
        "1",
        "1",
    )
    assert (row["pass_rate_k"], row["pass_rate_n"], row["pass_rate_graded_n"]) == ("2", "7", "6")


def test_a_clean_run_has_no_marker_and_no_trouble_notes(store: SessionStore) -> None:
    store.create_run(RUN, {"model": "m"})
    add(store, "t1")
    add(store, "t2", verdict="fail")
    report = build_report(store)
    (paper, failures, *_) = report_tables(report)
    assert paper.columns[3:5] == ["PR", "Aware"]  # no PR graded column
    assert paper.rows[0][2] == "2" and paper.rows[0][3].startswith("50.0 [")
    assert "* beside N" not in paper.caption
    assert failures.rows == [["every cell", "", "", *["0"] * 10]]
    assert not [note for note in report.notes if RUN in note]


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def test_a_run_whose_model_answers_http_500_reports_the_errors(
    registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "b.db"
    env_base = {"AAH_MODEL": "fake-model", "AAH_LLM_RETRIES": "0", "AAH_REGISTRY": str(registry)}
    with FakeLLMServer({"rules": [{"reply": SERVER_ERROR}]}) as llm:
        env = {"AAH_BASE_URL": llm.base_url, **env_base}
        ran = aah(
            "bench", "run", "--run", "r500", "--setting", "perfect", "--limit", "3",
            "--db", str(db), env=env,
        )  # fmt: skip
    assert ran.returncode != 0, ran.stdout + ran.stderr
    shown = aah("report", "--db", str(db), "--format", "json", env={"AAH_CACHE_DIR": str(tmp_path)})
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    (cell,) = data["cells"]
    assert (cell["n"], cell["errors"], cell["pass_rate"]["k"]) == (3, 3, 0)
    (note,) = [n for n in data["notes"] if "ended in error" in n]
    assert note.startswith("run r500, perfect: 3 of 3 sessions ended in error")
    assert "3× " in note and "upstream exploded" in note
    table = aah("report", "--db", str(db), env={"COLUMNS": "80", "AAH_CACHE_DIR": str(tmp_path)})
    assert table.returncode == 0, table.stderr
    assert "3*" in table.stdout and "3 of 3 sessions ended in error" in table.stdout


# -- 80 columns, --wide, CSV -------------------------------------------------------------


def terminal_text(report: Any, width: int | None, columns: int = 80) -> str:
    sink = io.StringIO()
    console = Console(file=sink, width=columns, color_system=None)
    for item in rich_tables(report, width):
        _print_whole(item, console)
    return sink.getvalue()


def wide_store(store: SessionStore) -> SessionStore:
    """Two paired runs with a long run name: a paper table wider than 80 columns."""
    for run, aah_on in (
        ("a-rather-long-run-name-without", False),
        ("a-rather-long-run-name", True),
    ):
        store.create_run(run, {"model": "m", "aah": aah_on})
        for number in range(12):
            add(
                store,
                f"t{number}",
                run=run,
                aah_on=aah_on,
                verdict="pass" if number % 3 else "fail",
            )
    return store


def test_tables_fit_80_columns_without_cutting_a_name_or_an_interval(store: SessionStore) -> None:
    report = build_report(wide_store(store))
    assert any(sum(column_widths(t)) + 1 > 80 for t in report_tables(report))
    text = terminal_text(report, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    wide = terminal_text(report, None, columns=300)
    assert max(len(line) for line in wide.splitlines()) > 80
    # Every interval and run name of the whole tables is still there, whole.
    for found in set(INTERVAL.findall(wide)):
        assert found in text
    assert "a-rather-long-run-name-without" in text


def test_a_split_repeats_the_key_columns_and_keeps_every_cell() -> None:
    item = ReportTable(
        "T",
        ["run", "setting", *(f"c{i}" for i in range(8))],
        [["r", "s", *["12.3 [4.5–67.8]"] * 8]],
    )
    item = item._replace(keys=2)
    parts = split_to_width(item, 50)
    assert len(parts) > 1
    assert all(part.columns[:2] == ["run", "setting"] for part in parts)
    assert [c for part in parts for c in part.columns[2:]] == item.columns[2:]
    assert all(sum(column_widths(part)) + 1 <= 50 for part in parts)
    assert parts[0].title == f"T (1 of {len(parts)})"
    assert split_to_width(item, 500) == [item]


def test_csv_has_one_row_per_cell_and_neutralises_formulas(store: SessionStore) -> None:
    store.create_run("=cmd|x", {"model": "m"})
    add(store, "t1", run="=cmd|x")
    text = render_csv(build_report(store))
    rows = list(csv.reader(io.StringIO(text)))
    header, (row,) = rows[0], rows[1:]
    assert header[:5] == ["run", "setting", "aah", "model", "n"]
    assert {"pass_rate", "pass_rate_low", "pass_rate_high", "pass_rate_k", "pass_rate_n"} <= set(
        header
    )
    data = dict(zip(header, row, strict=True))
    assert data["run"] == "'=cmd|x" and data["pass_rate"] == "1.0"


def test_cli_csv_and_wide(store: SessionStore, tmp_path: Path) -> None:
    wide_store(store)
    env = {"COLUMNS": "80", "AAH_CACHE_DIR": str(tmp_path)}
    as_csv = aah("report", "--db", str(store.path), "--format", "csv", env=env)
    assert as_csv.returncode == 0, as_csv.stderr
    assert len(list(csv.reader(io.StringIO(as_csv.stdout)))) == 3
    narrow = aah("report", "--db", str(store.path), env=env)
    wide = aah("report", "--db", str(store.path), "--wide", env=env)
    assert max(map(len, narrow.stdout.splitlines())) <= 80
    assert max(map(len, wide.stdout.splitlines())) > 80
    assert "(1 of 2)" in narrow.stdout and "(1 of 2)" not in wide.stdout


# -- charts ------------------------------------------------------------------------------


def png_dpi(data: bytes) -> float:
    """The resolution a PNG's pHYs chunk gives, in dots per inch."""
    at = data.index(b"pHYs")
    per_metre, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1
    return per_metre * 0.0254


def test_charts_are_written_as_png_300_dpi_svg_and_pdf(store: SessionStore, tmp_path: Path) -> None:
    written = write_charts(build_report(wide_store(store)), tmp_path / "charts")
    names = sorted(path.name for path in written)
    stems = ("awareness_interaction", "behaviour_confusion", "pass_rate")
    assert names == sorted(f"{stem}.{ext}" for stem in stems for ext in ("pdf", "png", "svg"))
    for path in written:
        data = path.read_bytes()
        if path.suffix == ".png":
            assert data.startswith(b"\x89PNG") and round(png_dpi(data)) == 300
        elif path.suffix == ".svg":
            assert b"<svg" in data[:400]
        else:
            assert data.startswith(b"%PDF")


def test_no_with_and_without_aah_chart_unless_both_exist(store: SessionStore) -> None:
    store.create_run(RUN, {"model": "m"})
    add(store, "t1")
    alone = build_report(store)
    assert not has_aah_pairs(alone)
    titles = [title for _, title, _ in chart_figures(alone)]
    assert not any("with and without Aah" in title for title in titles)
    assert "with and without Aah" not in render_html(alone)
    store.create_run("off", {"model": "m", "aah": False})
    add(store, "t1", run="off", aah_on=False)
    paired = build_report(store)
    assert has_aah_pairs(paired)
    assert "Pass rate with and without Aah, per setting" in render_html(paired)


def test_cli_writes_charts_and_a_bad_folder_is_one_line(
    store: SessionStore, tmp_path: Path
) -> None:
    wide_store(store)
    env = {"AAH_CACHE_DIR": str(tmp_path)}
    folder = tmp_path / "figs"
    made = aah(
        "report", "--db", str(store.path), "--format", "json", "--charts", str(folder), env=env
    )
    assert made.returncode == 0, made.stderr
    assert len(list(folder.iterdir())) == 9
    blocked = tmp_path / "file"
    blocked.write_text("x")
    bad = aah("report", "--db", str(store.path), "--charts", str(blocked / "sub"), env=env)
    assert bad.returncode != 0
    (line,) = bad.stderr.strip().splitlines()
    assert line.startswith("error: cannot write charts to ") and "--charts" in line


def test_the_store_answers_flags_and_errors_for_a_selection(store: SessionStore) -> None:
    troubled_store(store)
    store.create_run("other", {"model": "m"})
    add(store, "x1", run="other", error="elsewhere")
    with store.queries() as read:
        flags = read.grade_flags([RUN])
        errors = read.session_errors([RUN])
        everyone = read.session_errors()
    assert [flag.flagged for flag in flags].count(True) == 1 and len(flags) == 4
    assert (
        sorted(error.message for error in errors.values())
        == ["the model server answered HTTP 500: upstream exploded"] * 2
    )
    assert {error.where for error in errors.values()} == {"agent"}
    assert (
        sorted(e.message for e in everyone.values())[-1]
        == "the model server answered HTTP 500: upstream exploded"
    )
    assert "elsewhere" in {e.message for e in everyone.values()}


def test_cancelled_sessions_count_as_not_passed_and_are_noted(tmp_path: Path) -> None:
    from aah.report import build_report

    store = SessionStore(tmp_path / "c.db")
    store.create_run("rc", {"model": "m"})
    done = store.open_session("q1", run="rc", task_id="t1", setting="perfect")
    store.finish_session(done.id, "finished", "Done.")
    store.add_grade(done.id, "grader", "v1", ["pass"], "pass", False)
    gone = store.open_session("q2", run="rc", task_id="t2", setting="perfect")
    assert store.cancel_session(gone.id)
    report = build_report(store, ["rc"])
    (cell,) = report.cells
    assert (cell.n, cell.cancelled, cell.pass_rate.k) == (2, 1, 1)
    assert cell.troubles == 1
    assert any("1 of 2 sessions were cancelled" in note for note in report.notes)
