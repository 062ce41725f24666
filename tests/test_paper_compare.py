"""aah report --compare paper: the published tables' format, loader, matching and comparison.

The values in tests/fixtures/paper_tables_fixture.json are invented for these
tests (in percent); the file shipped with aah holds the paper's Tables 1-2 as
printed (fractions), and the tests over it quote the values they expect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from test_cli import aah

from aah.benchmark.failtalms.imports import import_failtalms_outputs
from aah.benchmark.failtalms.paper import (
    PAPER_TABLES,
    PaperRow,
    load_paper_tables,
    model_key,
    parse_model_map,
)
from aah.errors import AahError
from aah.report import build_report, compare_report_with_paper, render_html, render_json
from aah.report.html import html_table
from aah.report.tables import report_tables
from aah.report.text import split_to_width
from aah.scoring.table import ReportTable
from aah.store.sessions import SessionStore

FIXTURES = Path(__file__).parent / "fixtures"
TABLE = FIXTURES / "paper_tables_fixture.json"
OUTPUTS = FIXTURES / "published_outputs"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "p.db") as opened:
        import_failtalms_outputs(OUTPUTS, opened)
        yield opened


def test_model_names_match_across_spellings() -> None:
    assert model_key("openai/GPT-4o") == model_key("gpt-4o") == "gpt4o"
    assert model_key("Llama-3.1-405B") != model_key("Llama-3.1-70B")


PAPER_MODELS = {
    "Claude-3.5-sonnet",
    "GPT-4o",
    "Qwen-72B-Instruct",
    "Llama 8B",
    "Llama 70B",
    "Llama 405B",
}
SETTINGS = ("perfect", "underspecified", "replaceable", "nonreplaceable", "notools")


def shipped_row(model: str, setting: str, with_aah: bool) -> PaperRow:
    (row,) = [
        r
        for r in load_paper_tables().rows
        if (model_key(r.model), r.setting, r.aah) == (model_key(model), setting, with_aah)
    ]
    return row


def test_the_shipped_tables_hold_every_model_setting_and_aah_once() -> None:
    tables = load_paper_tables()
    assert "2503.14227" in tables.url and "Tables 1-2" in tables.source
    keys = [(model_key(r.model), r.setting, r.aah) for r in tables.rows]
    assert len(keys) == len(set(keys)) == 60  # a repeated key would hide a row
    assert {r.model for r in tables.rows} == PAPER_MODELS
    for setting in SETTINGS:
        for with_aah in (False, True):
            models = {r.model for r in tables.rows if (r.setting, r.aah) == (setting, with_aah)}
            assert models == PAPER_MODELS, (setting, with_aah)
    assert {r.table for r in tables.rows if not r.aah} == {"1"}
    assert {r.table for r in tables.rows if r.aah} == {"2"}
    # Table 1 has Skip and no Inter; Table 2 has Inter and no Skip.
    assert all(r.values["interaction"] is None for r in tables.rows if not r.aah)
    assert all(r.values["skip"] is None for r in tables.rows if r.aah)


@pytest.mark.parametrize(
    ("model", "setting", "with_aah", "metric", "printed"),
    [
        ("GPT-4o", "perfect", False, "pass_rate", 0.68),
        ("Llama 8B", "perfect", False, "pass_rate", 0.28),
        ("Claude-3.5-sonnet", "underspecified", False, "awareness", 0.42),
        ("GPT-4o", "underspecified", False, "unexpected", 0.33),
        ("Llama 70B", "nonreplaceable", False, "skip", 0.38),
        ("Qwen-72B-Instruct", "replaceable", False, "pass_rate", 0.23),
        ("Llama 405B", "notools", False, "unexpected", 0.06),
        ("Claude-3.5-sonnet", "nonreplaceable", True, "awareness", 0.85),
        ("Claude-3.5-sonnet", "nonreplaceable", True, "interaction", 0.27),
        ("Llama 405B", "underspecified", True, "pass_rate", 0.53),
        ("GPT-4o", "replaceable", True, "pass_rate", 0.45),
        ("Qwen-72B-Instruct", "perfect", True, "awareness", 0.98),
        ("GPT-4o", "notools", True, "pass_rate", 0.029),
        # Printed empty or '-', or left out (see the file's status): never compared.
        ("Claude-3.5-sonnet", "notools", False, "awareness", None),
        ("GPT-4o", "replaceable", False, "skip", None),
        ("Llama 70B", "perfect", True, "interaction", None),
        ("Llama 70B", "nonreplaceable", False, "unexpected", None),
    ],
)
def test_the_shipped_tables_hold_the_printed_values(
    model: str, setting: str, with_aah: bool, metric: str, printed: float | None
) -> None:
    assert shipped_row(model, setting, with_aah).values[metric] == printed


def test_the_shipped_file_says_what_it_holds_and_keeps_the_combined_rows() -> None:
    data = json.loads(PAPER_TABLES.read_text(encoding="utf-8"))
    assert data["unit"] == "fraction"
    assert "60 rows" in data["status"] and "Llama 70B, non-replaceable, Unexp" in data["status"]
    combined = data["unavailable_tools_combined"]
    assert len(combined) == 12 and {r["setting"] for r in combined} == {"Unavailable tools"}
    claude = [r for r in combined if r["model"] == "Claude-3.5-sonnet"]
    assert [(r["aah"], r["awareness"]) for r in claude] == [(False, 0.7), (True, 0.68)]


BAD_ROW = {"model": "m", "setting": "Original", "aah": False}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is not JSON"),
        ("[]", "needs an object with a 'rows' list"),
        ('{"rows": {}}', "needs an object with a 'rows' list"),
        ('{"rows": []}', "holds none of the paper's values yet"),
        ('{"rows": [3]}', "row 1 is not an object"),
        (json.dumps({"rows": [{**BAD_ROW, "model": " "}]}), "needs a 'model' name"),
        (json.dumps({"rows": [{**BAD_ROW, "setting": "Mars"}]}), "unknown setting 'Mars'"),
        (json.dumps({"rows": [{**BAD_ROW, "aah": "yes"}]}), "needs 'aah': true or false"),
        (json.dumps({"rows": [{**BAD_ROW, "pass_rate": 101}]}), "pass_rate must be a percent"),
        (json.dumps({"rows": [{**BAD_ROW, "skip": True}]}), "skip must be a percent"),
        (json.dumps({"rows": [{**BAD_ROW, "awareness": "50"}]}), "awareness must be a percent"),
        (json.dumps({"unit": "permille", "rows": [BAD_ROW]}), "unknown unit 'permille'"),
        (
            json.dumps({"unit": "fraction", "rows": [{**BAD_ROW, "pass_rate": 67}]}),
            "pass_rate must be a fraction from 0 to 1",
        ),
        (json.dumps({"aliases": ["m"], "rows": [BAD_ROW]}), "'aliases' must map other"),
        (
            json.dumps({"aliases": {"m_eval": "n"}, "rows": [BAD_ROW]}),
            "alias 'm_eval' names no model of the rows",
        ),
    ],
)
def test_bad_tables_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AahError, match=message) as caught:
        load_paper_tables(path)
    assert "\n" not in str(caught.value)


def test_a_missing_table_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="cannot read the paper's tables"):
        load_paper_tables(tmp_path / "none.json")


def rows_of(data: dict[str, Any], run: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (row["setting"], row["metric"]): row
        for row in data["paper_comparison"]["rows"]
        if row["run"] == run
    }


def test_computed_beside_published_with_difference_and_interval(store: SessionStore) -> None:
    report = compare_report_with_paper(build_report(store), load_paper_tables(TABLE))
    data = json.loads(render_json(report))
    alpha = rows_of(data, "published:alpha")
    # perfect without Aah: PR 2/4 = 50.0 [15.0–85.0]; the paper row says 50.0.
    pr = alpha["perfect", "pass_rate"]
    assert (pr["computed"]["k"], pr["computed"]["n"]) == (2, 4)
    assert pr["published"] == 0.5 and pr["difference"] == pytest.approx(0.0) and pr["inside"]
    # Awareness 2/4 against 90.0: 40 points below, outside [15.0–85.0].
    aware = alpha["perfect", "awareness"]
    assert aware["difference"] == pytest.approx(-40.0) and aware["inside"] is False
    # Inter 0 of 3 is [0.0–56.1]: 56.1 printed is the bound, so inside.
    assert alpha["perfect", "interaction"]["inside"] is True
    # Skip is null in the paper row: not compared.
    assert ("perfect", "skip") not in alpha
    qaq = rows_of(data, "published:alpha_qaq")
    assert list(qaq) == [("underspecified", "pass_rate")]
    assert qaq["underspecified", "pass_rate"]["inside"] is True  # 2/5 → [11.8–76.9] holds 12.0
    notes = "\n".join(report.notes)
    assert "no published figure to compare for published:beta (beta)" in notes
    assert "compared with the paper: 4 of 5 published values lie inside" in notes
    # The note names the cell outside, with its difference, not only the count.
    assert "outside: run published:alpha (perfect Aware -40.0 points)" in notes
    assert data["paper_comparison"]["difference_unit"] == "percentage points"
    # One table per run: its rows named by setting and metric, the run in the title.
    tables = [t for t in report_tables(report) if t.title.startswith("Computed vs published")]
    assert [t.title.split(": run ")[1] for t in tables] == [
        "published:alpha, model Alpha, without Aah",
        "published:alpha_qaq, model alpha, with Aah",
    ]
    table = tables[0]
    assert table.columns == ["setting", "metric", "computed", "published", "diff", "inside"]
    assert table.keys == 2
    assert table.rows[1] == ["perfect", "Aware", "50.0 [15.0–85.0]", "90.0", "-40.0", "NO"]
    assert table.flagged == (1,) and table.flag == "outside"
    assert "NOT the paper's numbers" in table.caption


def test_html_marks_the_cells_outside_and_escapes_them(store: SessionStore) -> None:
    report = compare_report_with_paper(build_report(store), load_paper_tables(TABLE))
    page = render_html(report)
    (row,) = re.findall(r'<tr class="flagged outside">.*?</tr>', page)
    assert "<td>Aware</td>" in row and '<span class="marker">\u26a0 outside</span> NO' in row
    assert page.count('class="flagged') == 1  # the rows inside are not marked
    # A flag is escaped like every other text.
    hostile = ReportTable("t", ["a", "b"], [["x", "<b>"]], flagged=(0,), flag='x" onload="y')
    html = html_table(hostile)
    assert 'onload="y' not in html and "&lt;b&gt;" in html and "x&quot; onload=&quot;y" in html


def test_compare_paper_at_80_columns_names_every_row_in_every_part(tmp_path: Path) -> None:
    # The paper's folder names (long run names), as `aah import` names its runs.
    outputs = tmp_path / "outputs"
    for answers in OUTPUTS.glob("*/alpha*/answers.json"):
        folder = answers.parent.name.replace("alpha", "claude3.5_sonnet_auto_eval")
        target = outputs / answers.parent.parent.name / folder / "answers.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(answers.read_bytes())
    db = tmp_path / "p.db"
    with SessionStore(db) as store:
        import_failtalms_outputs(outputs, store)
    env = {"AAH_CACHE_DIR": str(tmp_path), "COLUMNS": "80"}
    shown = aah("report", "--db", str(db), "--compare", "paper", env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    # Every header row that shows a difference also says which setting and metric it is.
    headers = [line for line in lines if "┃" in line and "diff" in line]
    assert headers and all("setting" in h and "metric" in h for h in headers)
    # The title, wrapped to the width, names the run, the paper's model and Aah.
    titles = " ".join(" ".join(line.split()) for line in lines)
    assert "run published:claude3.5_sonnet_auto_eval, model Claude-3.5-sonnet, without" in titles


def test_every_part_of_every_split_table_repeats_the_row_names(store: SessionStore) -> None:
    report = compare_report_with_paper(build_report(store), load_paper_tables(TABLE))
    for item in report_tables(report):
        for width in (40, 60, 80):
            for part in split_to_width(item, width):
                assert part.columns[: item.keys] == item.columns[: item.keys], item.title
                assert part.flagged == item.flagged


def test_as_maps_a_run_to_the_papers_model(store: SessionStore) -> None:
    report = compare_report_with_paper(
        build_report(store), load_paper_tables(TABLE), ["published:beta_qaq=gpt-x"]
    )
    assert report.paper is not None
    beta = [row for row in report.paper.rows if row.run == "published:beta_qaq"]
    assert beta == []  # beta_qaq holds underspecified only; GPT-X's row is perfect
    everyone = compare_report_with_paper(build_report(store), load_paper_tables(TABLE), ["GPT-X"])
    assert everyone.paper is not None
    assert {row.run for row in everyone.paper.rows} == {"published:alpha_qaq"}
    (pr, aware) = [r for r in everyone.paper.rows if r.setting == "perfect"]
    assert (pr.metric, pr.model) == ("pass_rate", "openai/GPT-X")
    assert pr.published == pytest.approx(0.849) and aware.published == pytest.approx(0.5)


def test_computed_beside_the_shipped_published_values(store: SessionStore) -> None:
    report = compare_report_with_paper(
        build_report(store),
        load_paper_tables(),
        ["published:alpha=GPT-4o", "published:alpha_qaq=Claude-3.5-sonnet"],
    )
    data = json.loads(render_json(report))
    assert "2503.14227" in data["paper_comparison"]["url"]
    alpha = rows_of(data, "published:alpha")
    # GPT-4o, perfect, Table 1: PR 0.68 beside 2/4 = 50.0 [15.0–85.0].
    pr = alpha["perfect", "pass_rate"]
    assert (pr["computed"]["k"], pr["computed"]["n"], pr["table"]) == (2, 4, "1")
    assert pr["published"] == 0.68 and pr["difference"] == pytest.approx(-18.0) and pr["inside"]
    # Aware 1.00 is outside [15.0–85.0].
    assert alpha["perfect", "awareness"]["inside"] is False
    # No-tools: only PR is printed.
    assert [key for key in alpha if key[0] == "notools"] == [("notools", "pass_rate")]
    qaq = rows_of(data, "published:alpha_qaq")
    # Claude with Aah, non-replaceable, Table 2: Inter 0.27, Aware 0.85.
    inter = qaq["nonreplaceable", "interaction"]
    assert (inter["published"], inter["table"], inter["aah"]) == (0.27, "2", True)
    assert qaq["nonreplaceable", "awareness"]["published"] == 0.85
    assert ("nonreplaceable", "skip") not in qaq  # Table 2 prints no Skip
    table = next(t for t in report_tables(report) if t.title.startswith("Computed vs published"))
    assert table.title.endswith("run published:alpha, model GPT-4o, without Aah")
    assert table.rows[0] == ["perfect", "PR", "50.0 [15.0–85.0]", "68.0", "-18.0", "yes"]
    assert "Benchmarking Failures in Tool-Augmented Language Models" in table.caption


def test_the_published_outputs_folders_meet_the_paper_models_without_as(tmp_path: Path) -> None:
    # The fixture's "alpha" folders under the names the paper's repository uses.
    renamed = {"alpha": "gpt_4o_auto_eval", "alpha_qaq": "claude3.5_sonnet_auto_eval_qaq"}
    outputs = tmp_path / "outputs"
    for answers in OUTPUTS.glob("*/*/answers.json"):
        folder = renamed.get(answers.parent.name)
        if folder is not None:
            target = outputs / answers.parent.parent.name / folder / "answers.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(answers.read_bytes())
    with SessionStore(tmp_path / "p.db") as store:
        import_failtalms_outputs(outputs, store)
        report = compare_report_with_paper(build_report(store), load_paper_tables(), [])
    data = json.loads(render_json(report))
    gpt = rows_of(data, "published:gpt_4o_auto_eval")
    assert gpt["perfect", "pass_rate"]["published"] == 0.68  # GPT-4o, Table 1
    claude = rows_of(data, "published:claude3.5_sonnet_auto_eval_qaq")
    assert claude["nonreplaceable", "interaction"]["published"] == 0.27  # Claude, Table 2


@pytest.mark.parametrize(
    ("unit", "printed", "inside"),
    [
        # 2/4 has the interval [0.1500, 0.8500]; a fraction printed to two decimals may be
        # up to 0.005 off the paper's figure, a percent printed to one decimal 0.0005.
        ("fraction", 0.854, True),
        ("fraction", 0.856, False),
        ("percent", 85.04, True),
        ("percent", 85.4, False),
    ],
)
def test_inside_allows_the_rounding_of_the_printed_value(
    store: SessionStore, tmp_path: Path, unit: str, printed: float, inside: bool
) -> None:
    path = tmp_path / "t.json"
    row = {"model": "alpha", "setting": "Original", "aah": False, "pass_rate": printed}
    path.write_text(json.dumps({"unit": unit, "rows": [row]}), encoding="utf-8")
    report = compare_report_with_paper(build_report(store), load_paper_tables(path))
    assert report.paper is not None
    (pr,) = [r for r in report.paper.rows if r.run == "published:alpha"]
    assert pr.computed.high == pytest.approx(0.85, abs=1e-4) and pr.inside is inside


@pytest.mark.parametrize(
    ("entries", "message"),
    [(["nobody=gpt-4o"], "no run 'nobody' in this report"), (["r1= "], "name the paper's model")],
)
def test_bad_as_values_are_one_line_errors(entries: list[str], message: str) -> None:
    with pytest.raises(AahError, match=message):
        parse_model_map(entries, ["r1"])


def test_cli_compare_paper(store: SessionStore, tmp_path: Path) -> None:
    env = {"AAH_CACHE_DIR": str(tmp_path)}
    db = str(store.path)
    shown = aah(
        "report", "--db", db, "--compare", "paper", "--paper-table", str(TABLE),
        "--format", "json", env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)["paper_comparison"]["rows"]) == 5
    shipped = aah(
        "report", "--db", db, "--compare", "paper", "--as", "published:alpha=gpt-4o",
        "--format", "json", env=env,
    )  # fmt: skip
    assert shipped.returncode == 0, shipped.stderr
    compared = json.loads(shipped.stdout)["paper_comparison"]["rows"]
    assert {row["run"] for row in compared} == {"published:alpha"}
    assert {row["model"] for row in compared} == {"GPT-4o"}
    shown = aah("report", "--db", db, "--compare", "paper", "--as", "gpt-4o", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Computed vs published" in shown.stdout and "68.0" in shown.stdout
    for bad, message in (
        (["--compare", "blog"], "unknown --compare 'blog': use --compare paper"),
        (["--as", "gpt-4o"], "--paper-table and --as go with --compare paper"),
    ):
        result = aah("report", "--db", db, *bad, env=env)
        assert result.returncode == 2 and message in result.stderr
