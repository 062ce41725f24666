"""τ² simulations per hour at concurrency 64: the fake model at 300 ms for the agent and the user.

Every task of the chosen domains is played as the gold play (``--user gold``
and its fake-model script), each agent reply and each user reply taking
300 ms. Prints the simulations per hour against the ideal (concurrency ×
3600 s / the mean simulation's model time, as if aah cost nothing) and
against τ²'s published 272.7 simulations per hour in one process, and the
CPU time per simulation (this process: sessions, τ²'s environments and its
evaluator).

Run: .venv/bin/python perf/tau2_bench.py [--domain airline,retail] [--concurrency 64]
     [--latency-ms 300] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from aah.benchmark import RunOptions
from aah.benchmark.tau2 import Tau2Message, load_tau2_domain, load_tau2_tasks, parse_domains
from aah.benchmark.tau2.runner import Tau2Runner, run_tasks, score_tau2_run, tau2_results
from aah.benchmark.tau2.scripted import ScriptedTau2User, gold_agent_script, gold_plan
from aah.benchmark.tau2.simulation import RunCall
from aah.data import find_data_dir
from aah.llm.config import ModelConfig
from aah.store import SessionStore
from aah.testing.fake_llm import FakeLLMServer

# τ²-bench's README: 272.7 simulations per hour in one process (its own figure).
PUBLISHED_PER_HOUR = 272.7


class _SlowUser(ScriptedTau2User):
    """The gold user, each reply taking ``seconds`` (a user model's latency)."""

    seconds: float = 0.3

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> str:
        await asyncio.sleep(self.seconds)
        return await super().respond(turn, agent_text, run, history)


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--domain", default="airline,retail")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    data = find_data_dir(None)
    domains = {name: load_tau2_domain(name, data) for name in parse_domains(args.domain)}
    tasks = [t for d in domains.values() for t in load_tau2_tasks(d)][: args.limit]
    script: dict[str, Any] = gold_agent_script(tasks)
    for rule in script["rules"]:
        reply = rule["reply"]
        rule["reply"] = {**({"text": reply} if isinstance(reply, str) else reply),
                         "delay_ms": args.latency_ms}  # fmt: skip
    seconds = args.latency_ms / 1000

    def user(_domain: Any, task: Any) -> _SlowUser:
        slow = _SlowUser(gold_plan(task))
        slow.seconds = seconds
        return slow

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(script) as llm:
        config = ModelConfig(base_url=llm.base_url, model="fake-model", api_key=SecretStr("k"))
        options = RunOptions(run="perf", aah=False, concurrency=args.concurrency)
        runner = Tau2Runner(options, config, domains, tasks, user)
        db = Path(tmp) / "perf.db"
        cpu, wall = time.process_time(), time.perf_counter()
        summary = asyncio.run(runner.run(run_tasks(tasks), db))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        agent_calls = len(llm.requests)
        with SessionStore(db) as store:
            score_tau2_run(store, "perf")
            rewards = [row["tau2_reward"] for row in tau2_results(store, "perf")]
    n = len(tasks)
    user_replies = sum(len(gold_plan(t)) + 1 for t in tasks)
    model_seconds = (agent_calls + user_replies) * seconds / n
    ideal = min(args.concurrency, n) * 3600 / model_seconds
    per_hour = n * 3600 / wall
    print(f"{n} simulations ({', '.join(domains)}), concurrency {args.concurrency}, "
          f"{args.latency_ms} ms per agent and user reply; errors {summary.errors}")  # fmt: skip
    print(f"reward 1: {sum(r == 1.0 for r in rewards)} of {len(rewards)}")
    print(f"wall {wall:.1f} s; {per_hour:.0f} simulations/hour")
    print(f"ideal (model time only, {model_seconds:.1f} s a simulation): {ideal:.0f}/hour "
          f"({100 * per_hour / ideal:.0f}% of it)")  # fmt: skip
    print(f"τ² published, one process: {PUBLISHED_PER_HOUR}/hour "
          f"(aah here: {per_hour / PUBLISHED_PER_HOUR:.1f}×)")  # fmt: skip
    print(f"CPU {cpu:.1f} s in this process: {1000 * cpu / n:.0f} ms per simulation")


if __name__ == "__main__":
    main()
