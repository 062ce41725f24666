"""scripts/asking_agreement.py: both readings against hand labels, over HTTP to a fake grader.

The fake grader answers by the question in its prompt, so every figure the
script prints is worked out by hand below; the rows it stores are the ones
``aah grade --asking`` stores and reuses (asked again, it sends nothing).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from runtime_support import fake_config

from aah.scoring import grade_asking, stored_blockers
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

SCRIPT = Path(__file__).parents[1] / "scripts" / "asking_agreement.py"
DATE = {"kind": "parameter", "name": "date", "text": "The day of the visit."}
CHAIN = {"kind": "span", "name": "", "text": "the Binance Smart Chain"}
# id, blocker, question, label; what the rules and the fake grader say is in the comments.
LABELS = [
    (1, DATE, "Which date works for you?", True),  # rules: yes (the name); grader: yes
    (2, DATE, "Could you tell me more?", True),  # rules cannot say; grader: yes
    (3, DATE, "Anything else first?", False),  # rules cannot say; grader: no
    (4, DATE, "Shall I go ahead now?", False),  # grader: never Yes or No, no quorum
    (5, CHAIN, "Which network do you mean?", True),  # rules cannot say; grader: no
]
GRADER = {
    "rules": [
        {"when": {"last_message_contains": "Which date works"}, "reply": "Yes."},
        {"when": {"last_message_contains": "tell me more"}, "reply": "Yes, it would say the day."},
        {"when": {"last_message_contains": "Anything else"}, "reply": "No: it asks nothing."},
        {"when": {"last_message_contains": "go ahead"}, "reply": "The user's request: go"},
        {"when": {"last_message_contains": "Which network"}, "reply": "No."},
    ]
}


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("asking_agreement", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    path = tmp_path / "labels.jsonl"
    rows = [
        {"id": i, "source": "test", "blocker": b, "question": q, "label": y}
        for i, b, q, y in LABELS
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_figures_and_the_stored_readings_are_those_worked_out_by_hand(
    labels: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script()
    db = tmp_path / "readings.db"
    with FakeLLMServer(GRADER) as grader:
        args = ["--labels", str(labels), "--votes", "3", "--db", str(db)]
        args += ["--model", "fake-model", "--base-url", grader.base_url]
        assert script.main(args) == 0
        printed = capsys.readouterr().out.splitlines()
        with SessionStore(db) as store:
            stored = {r.session_id: r for r in store.ask_readings.of_sessions(
                [f"label-{i}" for i, *_ in LABELS]
            )}  # fmt: skip
            # aah grade --asking on the same run reuses every reading: nothing is sent.
            asked = len(grader.requests)
            blockers = stored_blockers(store, script.RUN)
            done = asyncio.run(
                grade_asking(store, script.RUN, blockers, fake_config(grader), votes=3)
            )
            assert done == (5, 4)
            assert len(grader.requests) == asked
    assert printed == [
        "labels: n=5 (3 yes, 2 no)",
        "rules vs labels (cannot say = no): 3/5 (60.0%, 95% CI 23.1%-88.2%), Cohen's kappa 0.286",
        "rules' yes vs labels: 1/1 (100.0%, 95% CI 20.7%-100.0%)",
        "grader vs labels, every label: 4/5 (80.0%, 95% CI 37.6%-96.4%), Cohen's kappa 0.615",
        "grader vs labels, where the rules cannot say: 3/4 (75.0%, 95% CI 30.1%-95.4%), "
        "Cohen's kappa 0.500",
        "combined (rules, then grader) vs labels: 4/5 (80.0%, 95% CI 37.6%-96.4%), "
        "Cohen's kappa 0.615",
        "grader votes: 21 cast, 9 unparsed (3 asked per reading, quorum 2); "
        "readings: 1 without quorum, 0 tied",
    ]
    # Both readings as aah grade --asking stores them: the rules' yes alone, else the grader's.
    seen = {
        sid: (r.rules, r.grader, r.grader_model, r.prompt_version, r.flag, len(r.votes))
        for sid, r in stored.items()
    }
    assert seen == {
        "label-1": (True, None, None, None, None, 0),
        "label-2": (None, True, "fake-model", "asking/2", None, 3),
        "label-3": (None, False, "fake-model", "asking/2", None, 3),
        "label-4": (None, None, "fake-model", "asking/2", "no_quorum", 9),
        "label-5": (None, False, "fake-model", "asking/2", None, 3),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--base-url", "http://127.0.0.1:{port}/v1"], "error: cannot reach the model endpoint"),
        (["--labels", "{tmp}/none.jsonl"], "error: cannot read the labels"),
        (["--labels", "{tmp}/bad.jsonl"], "line 1 is no label"),
        (["--votes", "4"], "error: "),
    ],
)
def test_each_failure_is_one_line_and_status_1(
    flags: list[str],
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = load_script()
    monkeypatch.setenv("AAH_LLM_RETRIES", "0")
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "question": "Which date?"}\n')
    filled = [f.format(port=free_port(), tmp=tmp_path) for f in flags]
    assert script.main(["--model", "fake-model", *filled]) == 1
    err = capsys.readouterr().err
    error_lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and says in error_lines[0], err
    assert "Traceback" not in err


def test_every_kth_label_is_read_from_the_first(labels: Path) -> None:
    script = load_script()
    read: Any = script.load_labels(labels)
    assert [label.id for label in script.select(read, 2, None)] == [1, 3, 5]
    assert [label.id for label in script.select(read, 2, 2)] == [1, 3]
