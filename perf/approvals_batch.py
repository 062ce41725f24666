"""A batch of 200 Fail-TaLMs tasks where every tool call needs the oracle's approval.

Each task's agent (the fake model, in this process) calls one offered
endpoint with valid arguments; the policy ``all: true`` sends every call to
the oracle approver, which approves unless a hidden fact forbids it. Prints
the run's time, the decisions, and the time from each decision to its call
having run (the ``ApprovalDecided`` event to the ``ToolCall`` event).

Run: .venv/bin/python perf/approvals_batch.py [--tasks-per-setting 40] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from aah.benchmark import RunOptions
from aah.benchmark.failtalms import BatchRunner, choose_tasks
from aah.benchmark.failtalms.dataset import Task, load_tasks
from aah.data.locate import find_data_dir
from aah.events import ApprovalDecidedEvent, ToolCallEvent
from aah.llm.config import ModelConfig
from aah.runtime import ApprovalPolicy, ApprovalRule
from aah.runtime.loop import run_async
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools import EndpointSpec
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

_SAMPLES: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "number": 1.0,
    "boolean": True,
    "array": [],
    "object": {},
}


def valid_arguments(spec: EndpointSpec) -> dict[str, Any]:
    """Arguments that pass the call checks: every required parameter, of its type."""
    return {
        p.name: p.enum[0] if p.enum else _SAMPLES[p.type] for p in spec.parameters if p.required
    }


def agent_script(tasks: list[Task], registry: Registry) -> dict[str, Any]:
    """Awareness yes; call the task's first offered endpoint; answer after any tool result."""
    rules: list[dict[str, Any]] = [
        {"when": {"has_tools": False}, "reply": "Yes, all there."},
        {"when": {"last_role": "tool"}, "reply": "Done."},
    ]
    seen: set[str] = set()
    for task in tasks:
        offered = [name for name in task.offered if name in registry]
        if not offered or offered[0] in seen:
            continue
        seen.add(offered[0])
        spec = registry.get(offered[0])
        call = {"name": spec.qualified_name, "arguments": valid_arguments(spec)}
        rules.append({"when": {"tool_offered": offered[0]}, "reply": {"tool_calls": [call]}})
    # A task with no endpoint to call (no-tools) answers at once.
    return {"rules": [*rules, {"reply": "Done."}]}


def main() -> None:
    """Run the batch and print its figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks-per-setting", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    data = find_data_dir(None, need_benchmark=True)
    folder = Path(tempfile.mkdtemp(prefix="aah-approvals-"))
    registry_path = folder / "registry.db"
    build_registry(data, registry_path)
    registry = Registry(registry_path)
    tasks = choose_tasks(load_tasks(data), args.tasks_per_setting, [])
    db = folder / "aah.db"
    options = RunOptions(
        run="approvals",
        human="oracle",
        http="mock",
        concurrency=args.concurrency,
        approvals=ApprovalPolicy(rules=(ApprovalRule(all=True),)),
    )
    with FakeLLMServer(agent_script(tasks, registry)) as llm:
        config = ModelConfig(
            base_url=llm.base_url, model="fake-model", api_key=SecretStr("x"), retries=0
        )
        started = time.perf_counter()
        summary = run_async(BatchRunner(options, registry, config).run(tasks, db))
        seconds = time.perf_counter() - started
    store = SessionStore(db)
    outcomes: Counter[str] = Counter()
    lags: list[float] = []
    for session in store.list_sessions(run="approvals"):
        events = store.events(session.id)
        ran = {e.call_id: e for e in events if isinstance(e, ToolCallEvent)}
        for decided in (e for e in events if isinstance(e, ApprovalDecidedEvent)):
            outcomes[decided.outcome] += 1
            if decided.call_id in ran:
                lags.append((ran[decided.call_id].ts - decided.ts).total_seconds() * 1000)
    store.close()
    rate = len(tasks) / seconds
    print(
        f"tasks: {len(tasks)}; finished {summary.finished}, skipped {summary.skipped}, "
        f"errors {summary.errors}; {seconds:.1f} s ({rate:.1f} tasks/s)"
    )
    print(f"decisions: {dict(outcomes)}")
    if lags:
        lags.sort()
        p90 = lags[int(0.9 * (len(lags) - 1))]
        print(
            f"decision to call run (ms, {len(lags)} calls): median "
            f"{statistics.median(lags):.1f}, p90 {p90:.1f}, max {lags[-1]:.1f}"
        )


if __name__ == "__main__":
    main()
