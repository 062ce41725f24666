"""Every role meets a corpus of hostile model replies through the command line, and nothing crashes.

The agent, the awareness question and the simulated user (one
``aah bench run`` each, one shape per task), the grader (``aah grade``) and
the behaviour judge (``aah classify --judge llm``) each meet the whole
corpus from one small hostile server (``hostile_model_server``); ``aah run``
meets one shape of each kind, one subprocess each. For every run: no
traceback on stdout or stderr, no session left ``running`` or ``waiting``,
every error line one readable line naming the server, never raw Python
exception text, and no redirect followed.

Run as a script (``python tests/test_hostile_replies_cli.py``) it also puts
every shape through its own ``aah run`` and prints how many shapes crashed
something, per role: the counts quoted in the issue.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hostile_model_server import BENIGN, HostileServer, all_shapes
from model_servers import completion

from aah.events import ErrorEvent, FinalAnswerEvent
from aah.store.sessions import SessionStore

# What a message must never be: Python's own words for a bug.
RAW_PYTHON = re.compile(
    r"Traceback|\b(?:Attribute|Type|Key|Index|Value|Recursion|Unicode\w*|Assertion|Name)Error\b"
    r"|failed unexpectedly"
)
PARALLEL = 4


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env.update(
        {
            "NO_COLOR": "1",
            "TERM": "dumb",
            "COLUMNS": "250",
            "AAH_MODEL": "m",
            "AAH_API_KEY": "sk-hostile-test",
            "AAH_LLM_TIMEOUT": "2",
            "AAH_LLM_RETRIES": "1",
            **extra,
        }
    )
    return env


def aah(args: list[str], env: dict[str, str], stdin: str = "", timeout: float = 120) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        input=stdin,
        text=True,
        capture_output=True,
        env=env,
        timeout=timeout,
        errors="replace",
    )


def problems_of(child: Any, db: Path | None, address: str) -> list[str]:
    """What went wrong in one command's run: tracebacks, unreadable lines, sessions left open."""
    found: list[str] = []
    printed = child.stdout + child.stderr
    if "Traceback" in printed:
        found.append("traceback: " + printed[printed.index("Traceback") :][-300:])
    for line in child.stderr.splitlines():
        if line.startswith("error:") and RAW_PYTHON.search(line):
            found.append(f"raw line: {line[:300]}")
    if child.returncode not in (0, 2):
        found.append(f"exit status {child.returncode}")
    if db is not None and db.exists():
        with SessionStore(db) as store:
            for session in store.list_sessions():
                if session.status in ("running", "waiting"):
                    found.append(f"session left {session.status}: {session.query[:60]}")
                if session.status != "error":
                    continue
                errors = [e for e in store.events(session.id) if isinstance(e, ErrorEvent)]
                message = errors[-1].message if errors else ""
                if "\n" in message or address not in message or RAW_PYTHON.search(message):
                    found.append(f"unreadable session error: {message[:300]}")
    return found


@contextmanager
def hostile(
    hold: bool = False, untooled: bytes | None = None
) -> Iterator[tuple[HostileServer, HostileServer]]:
    """The hostile server, and the other host its redirects point to.

    ``hold`` keeps every answer until each shape has been asked for;
    ``untooled`` answers the awareness question (see ``HostileServer``).
    """
    with HostileServer() as elsewhere:
        shapes = all_shapes(elsewhere.base_url + "/chat/completions")
        held = len(shapes) if hold else 0
        with HostileServer(shapes, hold_until=held, untooled=untooled) as server:
            yield server, elsewhere


def agent_runs(tmp: Path, only: frozenset[str] | None = None) -> dict[str, list[str]]:
    """Each shape (or those named ``only``) through ``aah run``, one subprocess each.

    Returns the problems found, by shape.
    """
    awareness = "none"
    with hostile() as (server, elsewhere):
        env = base_env(AAH_BASE_URL=server.base_url)

        def one(index: int) -> list[str]:
            db = tmp / f"agent-{awareness}-{index}.db"
            args = ["run", f"Weather in Oslo? SHAPE-{index}", "--awareness", awareness]
            args += ["--human", "console", "--db", str(db), "--step-limit", "4"]
            child = aah(args, env, stdin="Oslo\n" * 10)
            found = problems_of(child, db, server.address)
            name = server.shapes[index][0]
            if any(path.endswith(f"from={name.split()[1]}") for path, _ in elsewhere.requests):
                found.append("a redirect was followed to another host")
            last = child.stderr.splitlines()[-1] if child.stderr else ""
            # A session that stopped at its step limit is an outcome, not the server's fault.
            stopped = last.startswith("error: stopped after 4 steps without a final answer")
            if child.returncode == 2 and server.address not in last and not stopped:
                found.append(f"last line does not name the server: {child.stderr[-300:]}")
            return found

        chosen = [i for i, (name, _) in enumerate(server.shapes) if only is None or name in only]
        with ThreadPoolExecutor(PARALLEL) as pool:
            results = list(pool.map(one, chosen))
        return {server.shapes[i][0]: found for i, found in zip(chosen, results, strict=True)}


def bench_run(tmp: Path, registry: Path, role: str) -> tuple[list[str], int, int]:
    """One ``aah bench run`` whose agent, awareness or simulated user meets a shape per task.

    Returns the problems, the shapes served and the shapes in the corpus.
    """
    from aah.testing.fake_llm import FakeLLMServer

    agent_script = {
        "rules": [
            {"when": {"has_tools": False}, "reply": "Yes, all there."},
            {"when": {"last_tool_name": "ask_human"}, "reply": "Done."},
            {
                "when": {"has_tools": True},
                "reply": {"tool_calls": [{"name": "ask_human", "arguments": {"question": "Q?"}}]},
            },
        ]
    }
    db = tmp / f"bench-{role}.db"
    ready = completion({"role": "assistant", "content": "Yes, all there."})
    untooled = ready if role == "agent" else None
    with hostile(untooled=untooled) as (server, elsewhere), FakeLLMServer(agent_script) as agent:
        limit = str(len(server.shapes) + 8)
        args = ["bench", "run", "--run", role, "--setting", "perfect", "--limit", limit]
        args += ["--db", str(db), "--concurrency", "8", "--task-timeout", "60"]
        if role in ("agent", "awareness"):
            env = base_env(AAH_BASE_URL=server.base_url, AAH_REGISTRY=str(registry))
        else:
            args += ["--human", "simulated"]
            env = base_env(
                AAH_BASE_URL=agent.base_url,
                AAH_HUMAN_BASE_URL=server.base_url,
                AAH_HUMAN_MODEL="m",
                AAH_REGISTRY=str(registry),
            )
        child = aah(args, env, timeout=300)
        found = problems_of(child, db, server.address) + followed(elsewhere)
        return found, len(server.served), len(server.shapes)


def grade_run(tmp: Path) -> tuple[list[str], int, int]:
    """``aah grade`` over one finished session per shape."""
    db = tmp / "grade.db"
    with hostile() as (server, elsewhere):
        with SessionStore(db) as store:
            store.create_run("g", {"model": "agent-model"})
            for index in range(len(server.shapes)):
                session = store.open_session(f"Weather in Oslo? SHAPE-{index}", run="g")
                store.append_event(FinalAnswerEvent(session_id=session.id, text="Sunny."))
                store.finish_session(session.id, "finished", "Sunny.")
        args = ["grade", "--run", "g", "--votes", "3", "--db", str(db)]
        child = aah(args, base_env(AAH_BASE_URL=server.base_url), timeout=300)
        found = problems_of(child, None, server.address) + followed(elsewhere)
        lines = [line for line in child.stderr.splitlines() if line.startswith("error:")]
        for line in lines[:-1]:  # one per kind of failure; the last one sums up
            if server.address not in line:
                found.append(f"a failure line without the server: {line[:300]}")
        return found, len(server.served), len(server.shapes)


def judge_run(tmp: Path) -> tuple[list[str], int, int]:
    """``aah classify --judge llm`` over one reply per shape."""
    replies = tmp / "replies.jsonl"
    with hostile(hold=True) as (server, elsewhere):
        rows = [{"reply": f"I cannot do that. SHAPE-{i}"} for i in range(len(server.shapes))]
        replies.write_text("".join(json.dumps(row) + "\n" for row in rows))
        # Every reply at once, held by the server until all are in, so that
        # each shape is met; a failed request leaves the rules' class.
        args = ["classify", str(replies), "--judge", "llm", "--out", str(tmp / "out.jsonl")]
        args += ["--concurrency", str(len(rows))]
        child = aah(args, base_env(AAH_BASE_URL=server.base_url), timeout=300)
        found = problems_of(child, None, server.address) + followed(elsewhere)
        if child.returncode == 2 and server.address not in child.stderr:
            found.append(f"the error does not name the server: {child.stderr[-300:]}")
        return found, len(server.served), len(server.shapes)


def followed(elsewhere: HostileServer) -> list[str]:
    return (
        [f"{len(elsewhere.requests)} request(s) followed a redirect"] if elsewhere.requests else []
    )


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aah.tools.registry.build import build_registry

    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def test_the_corpus_holds_forty_named_shapes() -> None:
    names = [name for name, _ in all_shapes("http://127.0.0.1:9/v1")]
    assert len(names) >= 40 and len(set(names)) == len(names)
    assert BENIGN <= set(names)


# One shape of each kind, each through its own `aah run` (a subprocess costs
# seconds; the script form of this module runs all of them).
AAH_RUN_SHAPES = frozenset(
    {
        "choices null",
        "message a string",
        "tool_calls an object",
        "integer id",
        "NaN in usage",
        "html page with 200",
        "error object with 200",
        "no content 204",
        "200k-deep array",
        "gzip lie",
        "chunked then reset",
        "10 MB reply",
        "redirect 307 to another host",
        "trickle past the deadline",
        "call id reused every turn",
    }
)


def test_aah_run_meets_one_shape_of_each_kind_without_a_crash(tmp_path: Path) -> None:
    runs = agent_runs(tmp_path, AAH_RUN_SHAPES)
    assert set(runs) == AAH_RUN_SHAPES
    crashed = {name: found for name, found in runs.items() if found}
    assert not crashed, json.dumps(crashed, indent=1)[:4000]


@pytest.mark.parametrize("role", ["agent", "awareness", "human"])
def test_agent_awareness_and_simulated_user_meet_every_shape(
    role: str, registry: Path, tmp_path: Path
) -> None:
    found, served, corpus = bench_run(tmp_path, registry, role)
    assert not found, found[:10]
    assert served == corpus


def test_the_grader_meets_every_shape(tmp_path: Path) -> None:
    found, served, corpus = grade_run(tmp_path)
    assert not found, found
    assert served == corpus


def test_the_judge_meets_every_shape(tmp_path: Path) -> None:
    found, served, corpus = judge_run(tmp_path)
    assert not found, found
    assert served == corpus


@pytest.mark.parametrize("name", ["10 MB reply", "10 MB chunked reply"])
def test_a_ten_megabyte_reply_is_refused_not_stored_or_printed(name: str, tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    with HostileServer() as elsewhere:
        shapes = dict(all_shapes(elsewhere.base_url))
        with HostileServer([(name, shapes[name])]) as server:
            env = base_env(AAH_BASE_URL=server.base_url)
            args = ["run", "Weather?", "--awareness", "none", "--db", str(db)]
            started = time.monotonic()
            child = aah(args, env)
            seconds = time.monotonic() - started
    assert child.returncode == 2 and not problems_of(child, db, server.address)
    assert "sent a reply of more than 1,000,000 bytes" in child.stderr
    assert len(child.stdout) + len(child.stderr) < 5_000
    stored = sum(f.stat().st_size for f in tmp_path.iterdir() if f.name.startswith("big.db"))
    assert stored < 2_000_000, stored
    assert seconds < 60


def main() -> None:
    """Print, per role, how many shapes crashed something (tracebacks, raw text, open sessions)."""
    import tempfile

    from aah.tools.registry.build import build_registry

    data = Path(os.environ.get("AAH_SHARED_DATA", "/work/shared/datasets"))
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        build_registry(data, tmp / "registry.db")
        runs = agent_runs(tmp)
        crashed = {name: found for name, found in runs.items() if found}
        print(f"agent (aah run): {len(crashed)} of {len(runs)} shapes crashed")
        for name, found in crashed.items():
            print(f"  {name}: {found[0][:160]}")
        for role in ("agent", "awareness", "human"):
            found, served, corpus = bench_run(tmp, tmp / "registry.db", role)
            print(f"{role} (bench run): {len(found)} problems, {served} of {corpus} shapes served")
            for line in found[:8]:
                print(f"  {line[:160]}")
        for label, check in (("grader", grade_run), ("judge", judge_run)):
            found, served, corpus = check(tmp)
            print(f"{label}: {len(found)} problems, {served} of {corpus} shapes served")
            for line in found[:8]:
                print(f"  {line[:160]}")


if __name__ == "__main__":
    main()
