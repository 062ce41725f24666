"""Failures through the command line: grading and batch runs go on, then say so and exit non-zero."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_cli import aah

from aah.events import FinalAnswerEvent
from aah.report.tables import run_label
from aah.store import RunRecord
from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry.build import build_registry

RUN = "bench-1"
BROKEN = {"error": {"status": 500, "message": "grader overloaded", "retry_after_ms": None}}


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def _graded_run(db: Path, queries: list[str]) -> None:
    with SessionStore(db) as store:
        store.create_run(RUN, {"model": "agent-model"})
        for query in queries:
            session = store.open_session(query, run=RUN, task_id=query)
            store.append_event(FinalAnswerEvent(session_id=session.id, text="It is 21."))
            store.finish_session(session.id, "finished", "It is 21.")


def _env(server: FakeLLMServer, **extra: str) -> dict[str, str]:
    return {
        "AAH_BASE_URL": server.base_url,
        "AAH_MODEL": "fake-model",
        "AAH_LLM_RETRIES": "0",
        **extra,
    }


def test_one_grading_failure_never_cancels_the_others_and_a_rerun_continues(
    tmp_path: Path,
) -> None:
    db = tmp_path / "g.db"
    _graded_run(db, ["Weather in Oslo?", "BROKEN one", "Weather in Bergen?", "BROKEN two"])
    script = {
        "rules": [{"when": {"last_message_contains": "BROKEN"}, "reply": BROKEN}, {"reply": "Pass"}]
    }
    with FakeLLMServer(script) as llm:
        first = aah("grade", "--run", RUN, "--votes", "1", "--db", str(db), env=_env(llm))
    assert first.returncode == 2, first.stdout + first.stderr
    assert "Traceback" not in first.stderr
    errors = first.stderr.strip().splitlines()
    assert len(errors) == 2, errors  # one line for the kind of failure, one for the end
    assert errors[0].startswith("error: 2 session(s): the model server at ")
    assert "grader overloaded" in errors[0]
    assert errors[1].startswith("error: 2 of 4 session(s) could not be graded: ")
    assert "could not be graded (grader failed)" in first.stdout
    with SessionStore(db) as store:
        graded = [s for s in store.list_sessions(run=RUN) if store.grades(s.id)]
    assert sorted(s.query for s in graded) == ["Weather in Bergen?", "Weather in Oslo?"]
    # The server recovers: the rerun sends only the two that failed.
    with FakeLLMServer(["Fail"]) as llm:
        again = aah("grade", "--run", RUN, "--votes", "1", "--db", str(db), env=_env(llm))
        sent = len(llm.requests)
    assert again.returncode == 0, again.stderr
    assert sent == 2


def test_flagged_verdicts_are_named_when_some_could_not_be_made(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    _graded_run(db, ["Weather in Oslo?", "BROKEN one"])
    script = {
        "rules": [{"when": {"last_message_contains": "BROKEN"}, "reply": BROKEN}, {"reply": "Hmm."}]
    }
    with FakeLLMServer(script) as llm:
        result = aah("grade", "--run", RUN, "--votes", "1", "--db", str(db), env=_env(llm))
    assert result.returncode == 2
    assert "1 of 2 session(s) could not be graded; 1 verdict(s) flagged" in result.stderr


def test_a_batch_run_with_failed_tasks_exits_non_zero_with_the_errors_grouped(
    registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "b.db"
    refuse: dict[str, Any] = {"error": {"status": 400, "message": "no agents today"}}
    script = {
        "rules": [
            {"when": {"system_contains": "You are an assistant"}, "reply": refuse},
            {"reply": "Yes: all there."},
        ]
    }
    with FakeLLMServer(script) as llm:
        result = aah(
            "bench", "run", "--run", "r", "--setting", "perfect", "--limit", "2",
            "--tool-mode", "prompt", "--tool-result-tokens", "500", "--no-probe", "--db", str(db),
            env=_env(llm, AAH_REGISTRY=str(registry)),
        )  # fmt: skip
        requests = llm.requests
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: 2 of 2 task(s) failed (2 × the model server at ")
    assert "no agents today" in line and line.endswith("(finished tasks are kept)")
    assert "tools prompt" in result.stdout
    assert requests and all("tools" not in r for r in requests)
    with SessionStore(db) as store:
        run = store.get_run("r")
    assert run is not None
    assert run.manifest["tool_mode"] == "prompt" and run.manifest["tool_result_tokens"] == 500
    assert run_label(run) == "r (tools in the prompt)"


def test_bad_tool_modes_are_one_line_errors(tmp_path: Path) -> None:
    for command in (["run", "Hi"], ["bench", "run", "--run", "r"]):
        result = aah(*command, "--tool-mode", "texty", "--db", str(tmp_path / "a.db"))
        assert result.returncode == 2
        assert result.stderr.strip() == (
            "error: unknown tool mode 'texty': use native, prompt or auto"
        )


@pytest.mark.parametrize(
    ("manifest", "label"),
    [
        ({"tool_mode": "prompt"}, "a (tools in the prompt)"),
        ({"tool_mode": "native"}, "a"),
        ({}, "a"),  # a run from before tool modes
    ],
)
def test_the_report_names_runs_that_read_their_tools_in_the_prompt(
    manifest: dict[str, Any], label: str
) -> None:
    run = RunRecord(name="a", created=datetime.now(UTC), manifest=manifest)
    assert run_label(run) == label


def test_a_batch_run_probes_its_server_once_and_keeps_the_report_in_its_manifest(
    registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "p.db"
    script = {
        "rules": [
            {"when": {"has_tools": True}, "reply": {"tool_calls": [{"name": "get_weather"}]}},
            {"reply": "Yes: all there."},
        ]
    }
    with FakeLLMServer(script) as llm:
        env = _env(llm, AAH_REGISTRY=str(registry))
        base = ["bench", "run", "--setting", "perfect", "--limit", "1", "--db", str(db)]
        probed = aah(*base, "--run", "probed", env=env)
        skipped = aah(*base, "--run", "unprobed", "--no-probe", env=env)
    assert "Traceback" not in probed.stderr + skipped.stderr
    with SessionStore(db) as store:
        probed_run, unprobed_run = store.get_run("probed"), store.get_run("unprobed")
    assert probed_run is not None and unprobed_run is not None
    report = probed_run.manifest["probe"]
    assert report["reachable"] is True and report["tool_calls"] == "native"
    assert report["base_url"] == llm.base_url.rstrip("/")
    # System prompt, query and tool schemas of the largest first request, about.
    assert 200 < report["largest_prompt_tokens"] < 20_000
    assert unprobed_run.manifest["probe"] is None


@pytest.mark.parametrize(
    ("largest", "context", "reply", "warned"),
    [(5_000, 4_096, 256, True), (3_800, 4_096, 512, True), (3_000, 4_096, 512, False),
     (90_000, None, 512, False)],
)  # fmt: skip
def test_a_run_whose_largest_prompt_cannot_fit_is_warned_about(
    largest: int, context: int | None, reply: int, warned: bool
) -> None:
    from aah.benchmark.failtalms.benchmark import prompt_warning

    lines = prompt_warning(largest, context, reply)
    assert len(lines) == (1 if warned else 0)
    if warned:
        assert lines[0].startswith("the largest first request of this run is about")
        assert "\n" not in lines[0]
