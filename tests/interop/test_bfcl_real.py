"""BFCL against the real llama.cpp server: a slice of every category, both readings.

Three items per category through ``aah bench run --benchmark bfcl``
(native tool calls), and the irrelevance slice again with the tools in the
prompt; the tiny model's figures are printed for the record (``-s``), and
the test asserts protocol outcomes: a clean exit, every session ended,
every finished turn checked, and a report with the BFCL figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_real_server import aah, assert_clean_exit

from aah.store import SessionStore

pytestmark = pytest.mark.interop

# About 39 single-turn items (13 categories) on a CPU shared with the aah processes.
BFCL_TIMEOUT = 1800
SHOWN = ("ast", "irrelevance_standard", "irrelevance_intent", "irrelevance_gap")


@pytest.mark.parametrize(
    ("mode", "category"), [("native", "all-single-turn"), ("prompt", "irrelevance")]
)
def test_bfcl_slice(
    interop_env: dict[str, str], shared_data: Path, tmp_path: Path, mode: str, category: str
) -> None:
    db = tmp_path / "bfcl.db"
    run = f"bfcl-{mode}"
    done = aah(
        interop_env,
        "bench", "run", "--benchmark", "bfcl", "--run", run, "--category", category,
        "--limit", "3", "--tool-mode", mode, "--concurrency", "1", "--task-timeout", "300",
        "--data", str(shared_data / "bfcl"), "--db", str(db),
        timeout=BFCL_TIMEOUT,
    )  # fmt: skip
    # A run with failed tasks may exit 1 (a summary, not an error line).
    assert_clean_exit(done, allowed=(0, 1))
    with SessionStore(db) as store:
        sessions = store.list_sessions(run=run)
        graded = {
            s.id for s in sessions if any(g.grader_model == "bfcl:ast" for g in store.grades(s.id))
        }
    # A reply the tiny model lets run past its length limit twice is cut off.
    assert sessions and all(s.status in {"finished", "error", "cut_off"} for s in sessions)
    assert {s.id for s in sessions if s.status == "finished"} <= graded
    report = aah(interop_env, "report", "--run", run, "--format", "json", "--db", str(db))
    assert_clean_exit(report)
    (section,) = json.loads(report.stdout)["bfcl"]
    figures = section["figures"]
    assert figures["irrelevance_standard"]["n"] > 0
    shown = {name: figures[name]["value"] for name in SHOWN if name in figures}
    print(f"\n[interop] bfcl {mode}: {shown}, {len(section['disagreements'])} disagreements")
