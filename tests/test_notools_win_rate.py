"""No-tools records pass on ``win_rate`` alone (science.md §5), also in the real files.

The corpus covers every shape a No-tools record's scores take: a win rate
missing, null, unreadable, written as text, above 1, and a ``pass_rate``
that says the opposite. ``pass_rate`` of a No-tools record grades the
tool-using answer it was compared with, never the No-tools answer itself.

The last test imports the paper's own published No-tools outputs when the
shared data holds them (``fail-talms/outputs``, or the folder named by
$AAH_FAILTALMS_OUTPUTS), and checks the paper's No-tools pass rates.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.failtalms.imports import import_failtalms_outputs
from aah.benchmark.failtalms.paper import PAPER_TABLES, compare_with_paper, load_paper_tables
from aah.scoring.metrics import compute_metrics, load_outcomes
from aah.store.sessions import SessionStore

OUTPUTS_ENV = "AAH_FAILTALMS_OUTPUTS"

# (case, setting folder, record fields beyond query/answer, expected published verdict;
# None = no grade, as for a skipped task).
CASES: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("no win_rate, pass_rate 1", "No-tools", {"pass_rate": 1}, "fail"),
    ("win_rate null, pass_rate 1", "No-tools", {"pass_rate": 1, "win_rate": None}, "fail"),
    ("win_rate unreadable, pass_rate 1", "No-tools", {"pass_rate": 1, "win_rate": "n/a"}, "fail"),
    ("win_rate a list, pass_rate 1", "No-tools", {"pass_rate": 1, "win_rate": [1]}, "fail"),
    ("pass_rate '1' as text, no win_rate", "No-tools", {"pass_rate": "1"}, "fail"),
    ("neither score", "No-tools", {}, "fail"),
    ("win_rate 0, pass_rate 1", "No-tools", {"pass_rate": 1, "win_rate": 0}, "fail"),
    ("win_rate 0.5", "No-tools", {"pass_rate": 1, "win_rate": 0.5}, "fail"),
    ("win_rate 1, pass_rate 0", "No-tools", {"pass_rate": 0, "win_rate": 1}, "pass"),
    ("win_rate '1' as text", "No-tools", {"pass_rate": 0, "win_rate": "1"}, "pass"),
    # The paper's evaluation script counts win_rate >= 1; one published file holds a 2.
    ("win_rate 2", "No-tools", {"pass_rate": 1, "win_rate": 2}, "pass"),
    ("skipped with win_rate 1", "No-tools", {"skipped": True, "win_rate": 1}, None),
    # Outside No-tools, win_rate means nothing: pass_rate decides.
    ("Original: pass_rate 1, win_rate 0", "Original", {"pass_rate": 1, "win_rate": 0}, "pass"),
    ("Original: no pass_rate", "Original", {"win_rate": 1}, None),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "w.db") as opened:
        yield opened


@pytest.mark.parametrize(
    ("setting", "fields", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_no_tools_scores_corpus(
    tmp_path: Path, store: SessionStore, setting: str, fields: dict[str, Any], verdict: str | None
) -> None:
    record = {"query_id": 7, "query": "Who wrote Dubliners?", "model_answer": "James Joyce."}
    record.update(fields)
    folder = tmp_path / "outputs" / setting / "m"
    folder.mkdir(parents=True)
    (folder / "answers.json").write_text(json.dumps([record]), encoding="utf-8")
    import_failtalms_outputs(tmp_path / "outputs", store)
    (session,) = store.list_sessions(run="published:m")
    assert [g.verdict for g in store.grades(session.id)] == ([] if verdict is None else [verdict])
    (cell,) = compute_metrics(load_outcomes(store))
    assert cell.pass_rate is not None and cell.pass_rate.k == (verdict == "pass")
    # A No-tools record without a win rate is a fail, not a task left to grade.
    assert cell.ungraded == (verdict is None and not fields.get("skipped"))


def _published_outputs() -> Path | None:
    named = os.environ.get(OUTPUTS_ENV)
    here = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "fail-talms"
    for folder in [Path(named)] if named else [here / "outputs", here]:
        if (folder / "No-tools").is_dir() or (folder / "outputs" / "No-tools").is_dir():
            return folder / "outputs" if (folder / "outputs").is_dir() else folder
    return None


def test_the_papers_no_tools_pass_rates_from_its_published_files(
    tmp_path: Path, store: SessionStore
) -> None:
    outputs = _published_outputs()
    if outputs is None:
        pytest.skip(f"the paper's published outputs are absent (set ${OUTPUTS_ENV})")
    tables = load_paper_tables()
    # Only the paper's runs (the folders its aliases name), only No-tools: a link each.
    only = tmp_path / "outputs" / "No-tools"
    only.mkdir(parents=True)
    # The shipped table's aliases are the published folders of the paper's runs.
    folders = set(json.loads(PAPER_TABLES.read_text(encoding="utf-8"))["aliases"])
    linked = []
    for model_dir in sorted((outputs / "No-tools").iterdir()):
        base = model_dir.name.removesuffix("_qaq")
        if base in folders and (model_dir / "answers.json").is_file():
            (only / model_dir.name).symlink_to(model_dir, target_is_directory=True)
            linked.append(model_dir.name)
    assert linked, f"no folder of the paper's models under {outputs / 'No-tools'}"
    import_failtalms_outputs(tmp_path / "outputs", store)
    compared = compare_with_paper(compute_metrics(load_outcomes(store)), tables, {})
    pass_rates = {
        (c.model, c.aah): (c.computed.value, c.published)
        for c in compared
        if c.metric == "pass_rate" and c.setting == "notools"
    }
    # science.md §5: the five non-Qwen No-tools cells of Table 1 are reproduced exactly.
    expected = ["Claude-3.5-sonnet", "GPT-4o", "Llama 8B", "Llama 70B", "Llama 405B"]
    for model in expected:
        assert (model, False) in pass_rates, f"{model}: no No-tools run without Aah"
        computed, published = pass_rates[model, False]
        assert computed is not None and round(computed, 2) == pytest.approx(published), model
