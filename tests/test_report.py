"""``aah report``: figures, formats, escaping, agreement and the no-data paths."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from aah.benchmark.failtalms.imports import import_failtalms_outputs
from aah.cli.report import report
from aah.errors import AahError
from aah.events import (
    AwarenessEvent,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    ModelCallEvent,
    ToolCallEvent,
)
from aah.report.build import build_report, render_json, report_to_json
from aah.report.html import render_html
from aah.report.tables import RunPair, pair_runs
from aah.report.text import escape_markdown, render_markdown, rich_tables
from aah.scoring.agreement import (
    PAPER_GRADER_HUMAN_AGREEMENT,
    AnswerRow,
    annotator_agreement,
    cohen_kappa,
    pair_agreement,
)
from aah.scoring.behavior.classes import behavior_report
from aah.scoring.errors import error_patterns
from aah.scoring.metrics import cell_to_json, compute_metrics, load_outcomes
from aah.store.sessions import RunRecord, SessionStore

FIXTURES = Path(__file__).parent / "fixtures" / "published_outputs"
PNG_IMAGE = '<img src="data:image/png;base64,'
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "r.db") as opened:
        yield opened


@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No benchmark data can be found: no env dir, an empty cache (and no search roots)."""
    monkeypatch.delenv("AAH_DATA_DIR", raising=False)
    monkeypatch.setenv("AAH_CACHE_DIR", str(tmp_path / "empty-cache"))


def session(
    store: SessionStore,
    run: str,
    task_id: str | None,
    events: Sequence[Any],
    *,
    setting: str = "perfect",
    status: str = "finished",
    verdict: str | None = None,
    final: str = "Done.",
    query: str = "What is the weather?",
) -> str:
    """A session of ``run`` with ``events`` (built from its id), closed and graded."""
    opened = store.open_session(query, run=run, task_id=task_id, setting=setting, model="m")
    for make in events:
        store.append_event(make(opened.id))
    store.append_event(FinalAnswerEvent(session_id=opened.id, text=final))
    store.finish_session(opened.id, status, final)  # type: ignore[arg-type]
    if verdict is not None:
        store.add_grade(opened.id, "grader-model", "v1", [verdict], verdict)  # type: ignore[arg-type]
    return opened.id


def turn(calls: int, text: str = "") -> Any:
    return lambda sid: ModelCallEvent(session_id=sid, model="m", n_tool_calls=calls, text=text)


def tool(name: str, check: str = "ok", status: int | None = 200) -> Any:
    return lambda sid: ToolCallEvent(
        session_id=sid, call_id="c", tool=name, ok=check == "ok", check=check, status_code=status
    )


def asked(question: str = "Which city?") -> list[Any]:
    rid = question  # unique enough within one session
    return [
        lambda sid: HumanQuestionEvent(
            session_id=sid, request_id=f"{sid}-{rid}", question=question
        ),
        lambda sid: HumanAnswerEvent(
            session_id=sid, request_id=f"{sid}-{rid}", answer="Oslo", answered_by="oracle"
        ),
    ]


def aware(answer: str) -> Any:
    return lambda sid: AwarenessEvent(session_id=sid, question="tool", answer=answer)


def cell(data: dict[str, Any], run: str, setting: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        c for c in data["cells"] if c["run"] == run and c["setting"] == setting
    ]
    assert len(found) == 1
    return found[0]


def counts(proportion: dict[str, Any] | None) -> tuple[int, int] | None:
    return None if proportion is None else (proportion["k"], proportion["n"])


# -- the published fixtures -----------------------------------------------------


def test_json_of_the_published_fixtures_gives_the_hand_computed_figures(
    store: SessionStore,
) -> None:
    import_failtalms_outputs(FIXTURES, store)
    data = json.loads(render_json(build_report(store)))
    assert list(data) == sorted(data)  # keys sorted
    assert set(data) == {
        "agreement",
        "behavior",
        "bfcl",
        "cells",
        "error_patterns",
        "examples",
        "notes",
        "runs",
        "when2call",
        "repeats",
        "paper_comparison",
    }
    assert data["when2call"] == []  # no When2Call run among them
    assert data["repeats"] == []  # no run with epochs among them
    assert [r["name"] for r in data["runs"]] == [
        "published:alpha",
        "published:alpha_qaq",
        "published:beta",
        "published:beta_qaq",
    ]
    alpha = cell(data, "published:alpha", "perfect")
    assert counts(alpha["pass_rate"]) == (2, 4)
    assert alpha["pass_rate"]["low"] == pytest.approx(0.1500, abs=1e-4)
    assert alpha["pass_rate"]["high"] == pytest.approx(0.8500, abs=1e-4)
    assert counts(alpha["awareness"]) == (2, 4) and counts(alpha["unexpected"]) == (1, 4)
    assert counts(alpha["skip"]) == (1, 4) and counts(alpha["interaction"]) == (0, 3)
    qaq = cell(data, "published:alpha_qaq", "underspecified")
    assert counts(qaq["interaction"]) == (3, 4) and counts(qaq["awareness"]) == (3, 5)
    assert counts(qaq["unexpected"]) == (1, 5)
    assert counts(cell(data, "published:alpha_qaq", "nonreplaceable")["pass_rate"]) == (0, 3)
    assert counts(cell(data, "published:alpha_qaq", "replaceable")["interaction"]) == (3, 3)
    notools = cell(data, "published:alpha_qaq", "notools")
    # No-tools passes on win_rate alone: only query 1 has win_rate 1 (science.md §5).
    assert counts(notools["pass_rate"]) == (1, 4) and notools["awareness"] is None
    assert notools["ungraded"] == 0
    # The cells are exactly the metrics module's JSON objects.
    expected = [cell_to_json(c) for c in compute_metrics(load_outcomes(store))]
    assert data["cells"] == json.loads(json.dumps(expected))
    # Its no-tools record without a score is a fail: nothing is left to `aah grade`.
    assert not any("aah grade --run published:alpha_qaq" in note for note in data["notes"])
    # Imports hold no agent turns or calls: behaviour and error patterns have no data.
    assert all(b["turns"] == 0 and b["accuracy"]["n"] == 0 for b in data["behavior"])
    assert all(e["calls"] == 0 and e["tasks"] == 0 for e in data["error_patterns"])
    agreement = data["agreement"]
    assert agreement["grader_human"]["agreement"]["n"] == 0
    assert agreement["grader_human"]["paper_agreement"] == PAPER_GRADER_HUMAN_AGREEMENT
    # Published interaction scores are one answer each: nothing overlaps.
    assert agreement["annotators"]["requests"] == 0 and agreement["human_vs_simulated"] == []


def test_paper_tables_pair_runs_and_show_intervals(store: SessionStore) -> None:
    import_failtalms_outputs(FIXTURES, store)
    markdown = render_markdown(build_report(store))
    assert "published:alpha (without Aah) vs published:alpha\\_qaq (with Aah)" in markdown
    # perfect, without Aah: PR 2/4, interaction 0 of the 3 tasks not skipped.
    assert "| perfect | without | 4 | 50.0 \\[15.0–85.0\\] |" in markdown
    assert "0.0 \\[0.0–56.1\\] of 3" in markdown
    assert "share of no or idk" in markdown
    # No-tools shows only PR.
    # A no-tools record without win_rate is a fail, not ungraded: PR is shown.
    assert "| notools | with | 4 | 25.0 \\[4.6–69.9\\] | — | — | — | — | — |" in markdown
    assert "| notools | without | 4 | 50.0 \\[15.0–85.0\\] | — |" in markdown
    assert "83.2" in markdown and "paper" in markdown


def test_runs_pair_by_model_and_setup() -> None:
    def run(name: str, **manifest: Any) -> RunRecord:
        return RunRecord(name=name, created=datetime.now(UTC), manifest=manifest)

    runs = [
        run("a", model="m1", aah=False, http="mock"),
        run("b", model="m1", aah=True, http="mock"),
        run("c", model="m1", aah=True, http="live"),  # another setup: stands alone
        run("d", model="m2", aah=True, http="mock"),
        run("x", model="m3"),  # Aah unknown
    ]
    assert pair_runs(runs, []) == [
        RunPair("m1", "a", "b"),
        RunPair("m1", None, "c"),
        RunPair("m2", None, "d"),
        RunPair("m3", None, None, "x"),
    ]


def test_table_format_renders_every_section(store: SessionStore) -> None:
    import_failtalms_outputs(FIXTURES, store)
    store.create_run("[bold]y[/bold]", {})  # shown as written, never read as rich markup
    out = io.StringIO()
    printer = Console(file=out, width=200, color_system=None)
    for item in rich_tables(build_report(store)):
        printer.print(item)
    text = out.getvalue()
    for heading in ("Paper metrics", "Behaviour classes", "error patterns", "Annotator", "Notes"):
        assert heading in text
    assert "50.0 [15.0–85.0]" in text and "no data" in text
    assert "[bold]y[/bold]" in text


# -- escaping -------------------------------------------------------------------


def hostile_store(store: SessionStore) -> SessionStore:
    store.create_run("<b>x</b>", {"model": "<script>alert(2)</script>", "aah": True})
    session(store, "<b>x</b>", None, [turn(0, SCRIPT)], verdict="fail", final=SCRIPT, query=SCRIPT)
    return store


def test_html_escapes_model_text_and_run_names(store: SessionStore) -> None:
    page = render_html(build_report(hostile_store(store)))
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower()
    assert page.count(PNG_IMAGE) == 3
    assert "Content-Security-Policy" in page


def test_markdown_escapes_model_text_and_run_names(store: SessionStore) -> None:
    markdown = render_markdown(build_report(hostile_store(store)))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    assert "<script" not in markdown and "<b>" not in markdown
    assert escape_markdown("a|b `c` [l](javascript:x) <i>") == (
        "a\\|b \\`c\\` \\[l\\](javascript:x) &lt;i&gt;"
    )
    assert escape_markdown("two\nlines") == "two lines"


def test_html_of_the_fixtures_has_three_charts(store: SessionStore) -> None:
    import_failtalms_outputs(FIXTURES, store)
    page = render_html(build_report(store))
    assert page.count(PNG_IMAGE) == 3
    assert "published:alpha_qaq" in page and "83.2" in page


# -- runs made here: behaviour, error patterns, IAC -------------------------------


def own_run(store: SessionStore) -> None:
    store.create_run("own", {"model": "m", "aah": True, "human": "oracle"})
    session(
        store,
        "own",
        "perfect-1",
        [
            aware("yes"),
            turn(2),
            tool("coinlore__get_all_exchanges"),
            tool("coinmap__get_atm_operators"),
            turn(0, "Here is the answer."),
        ],
        verdict="pass",
    )
    session(
        store,
        "own",
        "perfect-2",
        [
            turn(1),
            tool("nope__nothing", "IFN", None),
            turn(1),
            tool("other__endpoint", status=422),
            turn(0, "I cannot do this with the tools I have."),
        ],
        verdict="fail",
    )
    session(
        store,
        "own",
        "underspecified-1",
        [aware("idk"), turn(1), *asked(), turn(0, "Done.")],
        setting="underspecified",
        verdict="pass",
    )
    session(
        store,
        "own",
        "notools-1",
        [turn(1), tool("weather__now", "IFN", None)],
        setting="notools",
        verdict="fail",
    )


def test_bulk_scores_equal_the_scoring_modules(store: SessionStore, shared_data: Path) -> None:
    from aah.benchmark.failtalms.dataset import load_tasks

    own_run(store)
    built = build_report(store, ["own"], shared_data)
    needed_by_task = {
        t.id: t.needed for t in load_tasks(shared_data, ["perfect", "underspecified", "notools"])
    }
    needed = {s.id: needed_by_task[s.task_id or ""] for s in store.list_sessions(run="own")}
    reference = error_patterns(store, "own", needed)
    (mine,) = built.error_patterns
    assert (mine.calls, mine.tasks, mine.hits, mine.free) == (
        reference.calls,
        reference.tasks,
        reference.hits,
        reference.free,
    )
    assert mine.calls == 6 and mine.hits["IFN"] == 2 and mine.hits["IAV"] == 1
    assert mine.tasks == 4 and mine.hits["IAC"] == 3  # only perfect-1 called all it needed
    behavior = behavior_report(store, "own")
    (turns,) = built.behavior
    assert turns.rates == behavior.rates and turns.matrix == behavior.matrix
    assert turns.turns == 8 and turns.classes["tool_call"].k == 4
    assert turns.rates.tool.k == 1 and turns.matrix.accuracy.k == 1  # notools called a tool
    examples = {e.task_id for e in built.examples}
    assert examples == {"perfect-2", "notools-1"}


def test_without_data_iac_is_skipped_with_a_note(store: SessionStore, no_data: None) -> None:
    own_run(store)
    built = build_report(store, search_roots=[])
    (patterns,) = built.error_patterns
    assert patterns.tasks == 0 and patterns.free["IAC"].n == 0 and patterns.calls == 6
    assert any("IAC" in note and "aah data fetch" in note for note in built.notes)
    assert "no data" in render_markdown(built)


def test_a_named_data_folder_without_data_is_an_error(store: SessionStore, tmp_path: Path) -> None:
    own_run(store)
    with pytest.raises(AahError, match="not a data directory"):
        build_report(store, data_dir=tmp_path / "empty")


def test_a_run_without_sessions_says_no_data(store: SessionStore, no_data: None) -> None:
    store.create_run("empty", {})
    built = build_report(store, search_roots=[])
    assert built.cells == [] and built.notes == ["run empty has no sessions yet"]
    data = report_to_json(built)
    assert data["behavior"][0]["turns"] == 0 and data["error_patterns"][0]["calls"] == 0
    assert "no data" in render_markdown(built)
    assert render_html(built).count(PNG_IMAGE) == 3


# -- agreement ------------------------------------------------------------------


def test_cohen_kappa_of_a_known_two_by_two_table() -> None:
    # Both yes 20, yes/no 5, no/yes 10, both no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    pairs = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    result = pair_agreement(pairs)
    assert (result.agreement.k, result.agreement.n) == (35, 50)
    assert cohen_kappa([(1, 1), (0, 0)]) == pytest.approx(1.0)
    assert cohen_kappa([(1, 1), (1, 1)]) is None  # one label only: undefined
    assert cohen_kappa([]) is None


def test_annotator_agreement_from_human_answers(store: SessionStore) -> None:
    store.create_run("people", {"human": "queue"})
    # People answer while the session runs: an ended session's questions take no answers.
    sid = store.open_session("What is the weather?", run="people", task_id="t1", model="m").id
    answers = {
        "r1": [("ann1", 1, False), ("ann2", 1, False)],
        "r2": [("ann1", 0, False), ("ann2", 1, False)],
        "r3": [("ann1", 0, True), ("ann2", 0, False)],
        "r4": [("ann1", 1, False)],  # one answer: not overlapped
    }
    for rid, given in answers.items():
        store.humans.create_human_request(sid, "Which city?", k=2, request_id=rid)
        for annotator, rating, declined in given:
            store.humans.answer_human_request(
                rid, annotator, "Oslo", declined=declined, rating=rating
            )
    people = build_report(store, ["people"]).agreement.annotators
    assert people.requests == 3
    assert (people.rating.k, people.rating.n) == (2, 3)
    assert (people.declined.k, people.declined.n) == (2, 3)
    (pair,) = people.pairs
    assert (pair.first, pair.second) == ("ann1", "ann2")
    # Ratings (1,1), (0,1), (0,0): p_o = 2/3, p_e = 4/9, kappa = 0.4.
    assert pair.rating.kappa == pytest.approx(0.4)
    # Declined (no,no), (no,no), (yes,no): p_o = 2/3 = p_e, kappa = 0.
    assert pair.declined.kappa == pytest.approx(0.0)


def test_annotator_pairs_skip_missing_ratings() -> None:
    rows = [
        AnswerRow("r1", "a", False, None),
        AnswerRow("r1", "b", False, 1),
        AnswerRow("r1", "c", True, 1),
    ]
    people = annotator_agreement(rows)
    assert (people.rating.k, people.rating.n) == (1, 1)  # only b & c both rated
    assert (people.declined.k, people.declined.n) == (1, 3)
    assert [(p.first, p.second) for p in people.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]


def test_grader_against_human_labels(store: SessionStore) -> None:
    store.create_run("graded", {})
    labels = [("pass", "pass"), ("fail", "fail"), ("pass", "fail"), ("fail", "fail")]
    for index, (human, grader) in enumerate(labels):
        sid = session(store, "graded", f"t{index}", [], verdict=grader)
        store.add_grade(sid, "human:ann1", "label", [human], human)  # type: ignore[arg-type]
    only_published = session(store, "graded", "t9", [])
    store.add_grade(only_published, "published", "v", [1], "pass")
    store.add_grade(only_published, "human:ann1", "label", ["fail"], "fail")
    result = build_report(store).agreement.grader_human.result
    assert (result.agreement.k, result.agreement.n) == (3, 4)
    # Human pass 2/4, grader pass 1/4: p_e = 0.5, p_o = 0.75, kappa = 0.5.
    assert result.kappa == pytest.approx(0.5)


def test_people_against_a_simulated_human_on_shared_tasks(store: SessionStore) -> None:
    setup = {"model": "m", "aah": True, "http": "mock"}
    store.create_run("people", {**setup, "human": "queue"})
    store.create_run("sim", {**setup, "human": "simulated"})
    store.create_run("other-model", {**setup, "model": "n", "human": "simulated"})
    session(store, "people", "t1", asked(), verdict="pass")
    session(store, "people", "t2", asked(), verdict="fail")
    session(store, "people", "t3", [], status="skipped")
    session(store, "sim", "t1", asked(), verdict="pass")
    session(store, "sim", "t2", [], verdict="pass")
    session(store, "sim", "t3", [], verdict="fail")
    session(store, "sim", "t4", [], verdict="pass")  # people never ran it
    session(store, "other-model", "t1", [], verdict="pass")
    (compared,) = build_report(store).agreement.human_vs_simulated
    assert (compared.human_run, compared.simulated_run, compared.tasks) == ("people", "sim", 3)
    assert [(p.k, p.n) for p in compared.pass_rate] == [(1, 3), (2, 3)]
    assert [(p.k, p.n) for p in compared.interaction] == [(2, 2), (1, 3)]


# -- the command ----------------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command("report")(report)

    @app.callback()
    def root() -> None:
        """Keep ``report`` a subcommand."""

    return app


def test_cli_json_html_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_data: None
) -> None:
    db = tmp_path / "cli.db"
    with SessionStore(db) as opened:
        import_failtalms_outputs(FIXTURES, opened)
    runner = CliRunner()
    result = runner.invoke(
        cli(), ["report", "--db", str(db), "--format", "json", "--run", "published:beta"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["name"] for r in data["runs"]] == ["published:beta"]
    assert counts(cell(data, "published:beta", "perfect")["pass_rate"]) == (2, 3)

    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli(), ["report", "--db", str(db), "--format", "html"])
    assert result.exit_code == 0, result.output
    page = tmp_path / "report.html"
    assert page.read_text(encoding="utf-8").count(PNG_IMAGE) == 3
    assert str(page.resolve()) in result.output

    out = tmp_path / "r.md"
    result = runner.invoke(cli(), ["report", "--db", str(db), "--format", "md", "--out", str(out)])
    assert result.exit_code == 0 and out.read_text(encoding="utf-8").startswith("# aah report")
    result = runner.invoke(cli(), ["report", "--db", str(db)])
    assert result.exit_code == 0 and "Paper metrics" in result.stdout

    result = runner.invoke(cli(), ["report", "--db", str(db), "--run", "nope"])
    assert isinstance(result.exception, AahError)
    assert "no run named 'nope'" in str(result.exception)
    assert "published:alpha, published:alpha_qaq" in str(result.exception)
    result = runner.invoke(cli(), ["report", "--db", str(db), "--format", "pdf"])
    assert isinstance(result.exception, AahError) and "table, md, html, json" in str(
        result.exception
    )


def test_cli_on_an_empty_database_says_what_to_run(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    SessionStore(db).close()
    result = CliRunner().invoke(cli(), ["report", "--db", str(db)])
    assert isinstance(result.exception, AahError)
    message = str(result.exception)
    assert "aah bench run" in message and "aah import" in message and "\n" not in message
