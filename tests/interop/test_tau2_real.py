"""τ²-bench against the real llama.cpp server: the agent and the simulated user on the tiny model.

Mock tasks (tools native and in the prompt) and a retail task (both ways),
each a conversation between the agent and τ²'s simulated user, both played
by the packaged SmolLM2-135M on the suite's server (a 4,096-token context).
The tiny model neither follows τ²'s policy nor says a stop token on cue, so
the tests assert what must hold whatever it says: a clean exit, every
simulation stored and ended with one of τ²'s terminations or with an error
recorded on the session, within its time; a grade stored for each; the
report's τ² section; and an export that τ²'s own ``Results`` model reads,
every simulation in it (a failed one as τ²'s failed sample).

Retail's policy and 15 tools are about 4,900 tokens in the agent's first
request (5,300 with the tools in the prompt): more than the context holds.
Such a simulation must end at once with the server's reason, never run into
its time limit. What happened (terminations, rewards, turns, prompt tokens,
seconds) is printed for the record (``-s``).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from test_real_server import aah, assert_clean_exit

from aah.benchmark.tau2 import load_tau2_domain
from aah.store import SessionRecord, SessionStore

pytestmark = pytest.mark.interop

# The command that runs τ² simulations.
BENCH = ("bench", "run", "--benchmark", "tau2")
GRADER = "tau2:evaluator"
# τ²'s own ends of a simulation, and the one aah grades a failed session with.
TERMINATIONS = {"user_stop", "agent_stop", "max_steps", "too_many_errors"}
FAILED = "agent_error"
ENDED = {"finished", "step_limit", "cut_off", "error"}
# Seconds of work per mock simulation: the tiny model reaches no end of τ²'s
# soon (it loops on calls or chats on), so this bounds the file (about 3 minutes).
TASK_TIMEOUT = 50
# A retail simulation ends at the agent's first request; the user's opening
# before it must not be cut short by a busy CPU.
OVERFLOW_TIMEOUT = 240
# A session's clock also holds the store's writes and the cancelled call's end.
CLOCK_SLACK = 60
COMMAND_TIMEOUT = 420
OVERFLOW = "no longer fits the model's context"


class Slice(NamedTuple):
    """One run: a domain's tasks, the tool mode, and whether its first request overflows."""

    domain: str
    ids: tuple[str, ...]
    mode: str
    overflows: bool

    @property
    def task_timeout(self) -> int:
        """The run's --task-timeout."""
        return OVERFLOW_TIMEOUT if self.overflows else TASK_TIMEOUT


SLICES = [
    Slice("mock", ("create_task_1", "update_task_1"), "native", overflows=False),
    Slice("mock", ("create_task_1",), "prompt", overflows=False),
    Slice("retail", ("0",), "native", overflows=True),
    Slice("retail", ("0",), "prompt", overflows=True),
]


def _bench(
    env: dict[str, str], db: Path, data: Path, run: str, piece: Slice
) -> subprocess.CompletedProcess[str]:
    ids = [arg for task in piece.ids for arg in ("--ids", f"{piece.domain}/{task}")]
    return aah(
        env,
        *BENCH, "--run", run, "--domain", piece.domain, "--split", "base", *ids,
        "--user", "simulated", "--epochs", "1", "--concurrency", "1",
        "--task-timeout", str(piece.task_timeout), "--tool-mode", piece.mode, "--no-probe",
        "--data", str(data), "--db", str(db),
        timeout=COMMAND_TIMEOUT,
    )  # fmt: skip


@pytest.mark.parametrize("piece", SLICES, ids=[f"{s.domain}-{s.mode}" for s in SLICES])
def test_tau2_slice(
    interop_env: dict[str, str],
    shared_data: Path,
    tau2_wheel: Path,
    tmp_path: Path,
    piece: Slice,
) -> None:
    """Each simulation ends (τ²'s end or a recorded error), is graded, reported and exported."""
    env = {**interop_env, "AAH_TAU2_WHEEL": str(tau2_wheel)}
    db = tmp_path / "tau2.db"
    run = f"tau2-{piece.domain}-{piece.mode}"
    started = time.monotonic()
    done = _bench(env, db, shared_data, run, piece)
    took = time.monotonic() - started
    # 1: some simulations failed; 2: all did (one `error:` line after the summary).
    assert_clean_exit(done, allowed=(0, 1))

    with SessionStore(db) as store:
        sessions = store.list_sessions(run=run)
        assert sorted(s.task_id or "" for s in sessions) == sorted(
            f"{piece.domain}/{task}" for task in piece.ids
        ), done.stdout + done.stderr
        rows = [_outcome(store, session) for session in sessions]
    for row in rows:
        print(f"\n[interop] tau2 {piece.domain} {piece.mode}: {row}")
        assert row["status"] in ENDED, row
        assert 0.0 <= row["reward"] <= 1.0, row
        assert row["seconds"] is not None and row["seconds"] <= piece.task_timeout + CLOCK_SLACK, (
            row
        )
        if row["status"] == "error":
            # A failed simulation says why, and is graded 0 as τ²'s agent_error.
            assert row["error"] and row["termination"] == FAILED, row
        else:
            assert row["termination"] in TERMINATIONS | {FAILED}, row
        if piece.overflows:
            # The policy and tools alone overflow: the first agent request ends it, at once.
            assert row["status"] == "error" and OVERFLOW in row["error"], row
            assert row["model_calls"] == 0, row
    print(f"\n[interop] tau2 {piece.domain} {piece.mode}: {len(rows)} simulations, {took:.0f} s")
    if piece.overflows:
        assert done.returncode == 2 and OVERFLOW in done.stderr

    report = aah(env, "report", "--run", run, "--format", "json", "--db", str(db))
    assert_clean_exit(report)
    sections = json.loads(report.stdout)["tau2"]
    assert [(s["domain"], s["sessions"]) for s in sections] == [(piece.domain, len(rows))]
    assert sum(sections[0]["terminations"].values()) == len(rows)

    _check_export(env, tmp_path, run, db, piece, shared_data, tau2_wheel, rows)


def _check_export(
    env: dict[str, str],
    tmp_path: Path,
    run: str,
    db: Path,
    piece: Slice,
    data: Path,
    wheel: Path,
    rows: list[dict[str, Any]],
) -> None:
    """τ²'s results file holds every simulation, a failed one as τ²'s failed sample, as τ² reads it."""
    out = tmp_path / "results.json"
    export = aah(env, "sessions", "export", "--tau2", str(out), "--run", run, "--db", str(db))
    assert_clean_exit(export)
    assert export.returncode == 0, export.stderr
    code = load_tau2_domain(piece.domain, data, wheel=wheel).code
    results = code.attribute("tau2.data_model.simulation", "Results").model_validate_json(
        out.read_text(encoding="utf-8")
    )
    exported = sorted(
        (s.termination_reason.value, s.reward_info.reward, s.skipped) for s in results.simulations
    )
    expected = sorted((row["termination"], row["tau2_reward"], not row["tau2_end"]) for row in rows)
    assert exported == expected
    assert all(not s.messages for s in results.simulations if s.skipped)


def _outcome(store: SessionStore, session: SessionRecord) -> dict[str, Any]:
    """What one simulation did: status, τ²'s grade, turns, tokens, seconds, error."""
    (grade,) = [g for g in store.grades(session.id) if g.grader_model == GRADER]
    (vote,) = grade.votes
    events = store.events(session.id)
    errors = [str(getattr(e, "message", "")) for e in events if e.kind == "error"]
    ends = [e for e in events if e.kind == "turn_ended" and "tau2_messages" in (e.state or {})]
    seconds = (session.ended - session.started).total_seconds() if session.ended else None
    return {
        "task": session.task_id,
        "status": session.status,
        "termination": vote.get("termination"),
        "reward": vote.get("reward"),
        "tau2_reward": vote.get("tau2_reward"),
        "user_turns": sum(1 for e in events if e.kind == "user_turn"),
        "model_calls": session.n_model_calls,
        "tool_calls": session.n_tool_calls,
        "tool_errors": session.n_tool_errors,
        "prompt_tokens": session.prompt_tokens,
        "seconds": round(seconds, 1) if seconds is not None else None,
        "error": errors[-1][:240] if errors else None,
        "tau2_end": bool(ends),
    }
