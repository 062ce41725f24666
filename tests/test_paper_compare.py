"""aah report --compare paper: the published tables' format, loader, matching and comparison.

The values in tests/fixtures/paper_tables_fixture.json are invented for these
tests; the file shipped with aah holds no transcribed values yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli import aah

from aah.errors import AahError
from aah.scoring.imports import import_failtalms_outputs
from aah.scoring.paper import (
    PAPER_TABLES,
    load_paper_tables,
    model_key,
    parse_model_map,
)
from aah.scoring.report import build_report, compare_report_with_paper, render_json
from aah.scoring.report.tables import report_tables
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


def test_the_shipped_table_says_its_values_are_missing() -> None:
    data = json.loads(PAPER_TABLES.read_text(encoding="utf-8"))
    assert data["rows"] == [] and "not transcribed" in data["status"]
    assert "2503.14227" in data["url"]
    with pytest.raises(AahError, match="holds none of the paper's values yet"):
        load_paper_tables()


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
    table = next(t for t in report_tables(report) if t.title.startswith("Computed vs published"))
    assert table.columns == [
        "run",
        "setting",
        "Aah",
        "metric",
        "computed",
        "published",
        "diff",
        "inside",
    ]
    assert ["published:alpha", "perfect", "without", "Aware"] == table.rows[1][:4]
    assert table.rows[1][4:] == ["50.0 [15.0–85.0]", "90.0", "-40.0", "NO"]
    assert "NOT the paper's numbers" in table.caption


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
    shipped = aah("report", "--db", db, "--compare", "paper", env=env)
    assert shipped.returncode == 2
    (line,) = shipped.stderr.strip().splitlines()
    assert "holds none of the paper's values yet" in line and "--paper-table" in line
    for bad, message in (
        (["--compare", "blog"], "unknown --compare 'blog': use --compare paper"),
        (["--as", "gpt-4o"], "--paper-table and --as go with --compare paper"),
    ):
        result = aah("report", "--db", db, *bad, env=env)
        assert result.returncode == 2 and message in result.stderr
