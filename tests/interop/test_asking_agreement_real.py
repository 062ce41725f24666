"""The asking grader on the real llama.cpp server: a slice of the hand labels, both readings.

``scripts/asking_agreement.py`` reads every 13th hand-labelled question
(tests/fixtures/asking_labels.jsonl: 20 of them, from all four benchmarks,
11 labelled yes, 5 read as yes by the rules) as ``aah grade --asking`` does,
with the tiny model as the grader (3 votes). The test asserts the protocol,
not the quality: a clean exit, both readings stored as ``aah grade --asking``
stores them, and every agreement figure computed and printed (``-s`` shows
them; the script's docstring records the full measurement).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_real_server import assert_clean_exit

from aah.store import SessionStore

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).parents[2] / "scripts" / "asking_agreement.py"
LABELS = Path(__file__).parents[1] / "fixtures" / "asking_labels.jsonl"
SLICE = ("--every", "13", "--limit", "20", "--votes", "3")
TIMEOUT = 240
FIGURE = r"\d+/\d+ \(\d+\.\d%, 95% CI \d+\.\d%-\d+\.\d%\)"
KAPPA = r", Cohen's kappa (-?\d\.\d{3}|undefined)"


@pytest.mark.timeout(TIMEOUT + 60)
def test_a_slice_of_the_labels_read_by_the_tiny_grader(
    interop_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "asking.db"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *SLICE, "--db", str(db)],
        env=interop_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    print(
        f"\n[interop] asking agreement: exit {done.returncode} in {time.monotonic() - started:.0f} s"
    )
    assert_clean_exit(done)
    lines = done.stdout.splitlines()
    print("\n".join(f"[interop] {line}" for line in lines))
    assert lines[0].startswith("labels: n=20 ")
    for name in (
        "rules vs labels (cannot say = no)",
        "grader vs labels, every label",
        "grader vs labels, where the rules cannot say",
        "combined (rules, then grader) vs labels",
    ):
        assert any(re.fullmatch(re.escape(name) + ": " + FIGURE + KAPPA, line) for line in lines), (
            name,
            lines,
        )
    assert any(re.fullmatch(r"rules' yes vs labels: (" + FIGURE + "|no labels)", x) for x in lines)
    votes = re.search(r"grader votes: (\d+) cast, (\d+) unparsed", done.stdout)
    assert votes is not None and int(votes[1]) >= 3 * 20

    ids = [f"label-{i}" for i in range(1, 250)]
    with SessionStore(db) as store:
        stored = store.ask_readings.of_sessions(ids)
    assert len(stored) == 20
    undecided = [r for r in stored if r.rules is None]
    # The rules' yes stands alone; where they cannot say, the grader's reading and every vote.
    assert all(r.grader is None and r.grader_model is None for r in stored if r.rules)
    for reading in undecided:
        assert reading.grader_model == interop_env["AAH_MODEL"]
        assert reading.prompt_version == "asking/2"
        assert len(reading.votes) >= 3
        assert all(set(vote) == {"round", "raw", "vote"} for vote in reading.votes)
        assert (reading.grader is None) == (reading.flag == "no_quorum")
    shown = re.search(r"where the rules cannot say: \d+/(\d+)", done.stdout)
    assert shown is not None and int(shown[1]) == len(undecided)
