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


# 3 entries of each multi-turn category: every turn, up to 21 replies a turn. The
# tiny model tends to repeat one call to the step limit: ~75 s an entry on one thread.
MULTI_TURN_TIMEOUT = 2400


@pytest.mark.timeout(MULTI_TURN_TIMEOUT + 60)
def test_bfcl_multi_turn_slice(
    interop_env: dict[str, str], shared_data: Path, tmp_path: Path, bfcl_wheel: Path
) -> None:
    """Every entry ends with a clear outcome whatever the tiny model does, and is scored."""
    db = tmp_path / "bfcl-mt.db"
    run = "bfcl-mt"
    env = {**interop_env, "AAH_BFCL_WHEEL": str(bfcl_wheel)}
    done = aah(
        env,
        "bench", "run", "--benchmark", "bfcl", "--run", run, "--category", "all-multi-turn",
        "--limit", "3", "--tool-mode", "native", "--concurrency", "1", "--task-timeout", "600",
        "--data", str(shared_data / "bfcl"), "--db", str(db),
        timeout=MULTI_TURN_TIMEOUT,
    )  # fmt: skip
    assert_clean_exit(done, allowed=(0, 1))
    with SessionStore(db) as store:
        sessions = store.list_sessions(run=run)
        graded = {
            s.id
            for s in sessions
            if any(g.grader_model == "bfcl:multi_turn" for g in store.grades(s.id))
        }
    assert len(sessions) == 12
    assert all(s.status in {"finished", "step_limit", "error", "cut_off"} for s in sessions)
    assert {s.id for s in sessions if s.status != "error"} <= graded
    report = aah(env, "report", "--run", run, "--format", "json", "--db", str(db))
    assert_clean_exit(report)
    (section,) = json.loads(report.stdout)["bfcl"]
    figures = section["figures"]
    assert figures["mt_accuracy"]["n"] == len(graded)
    shown = {
        name: (figures[name]["k"], figures[name]["n"])
        for name in ("mt_accuracy", "miss_param_asked", "miss_param_guessed", "miss_func_noticed")
        if name in figures
    }
    print(f"\n[interop] bfcl multi-turn native: {shown}")
