"""When2Call runs: each question one session, its first turn the outcome measured.

The tools are not HTTP endpoints: a call is recorded and answered with a
neutral result (``NeutralExecutor``), and the session ends after the model's
first turn (``turns``), its calls answered, so the store holds what the
turn did. With Aah on, ``ask_human`` is offered and a person who knows
nothing more answers it ("I don't know."); a call to it is a follow-up
question. The awareness gate is off unless asked for.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aah.benchmark.batch import (
    ProgressHook,
    RunOptions,
    RunSummary,
    run_manifest,
    run_pinned,
)
from aah.benchmark.when2call.blockers import question_blockers
from aah.benchmark.when2call.tasks import WHEN2CALL_SETTING, When2CallTask
from aah.benchmark.when2call.tools import endpoint_spec
from aah.events import AwarenessMode
from aah.llm import ModelConfig
from aah.runtime import Activity, HumanChannel, Runtime, ScriptedHuman, SessionRequest
from aah.scoring import CONTEXT_KEY
from aah.tools import EndpointSpec
from aah.tools.http import ToolResult

WHEN2CALL_BENCHMARK = "when2call"
_PINNED_AWARENESS: dict[str, bool] = {"both": True, "none": False}
# What every When2Call tool call gets back: it neither helps nor misleads.
NEUTRAL_RESULT = '{"status": "ok"}'
DEFAULT_TURNS = 1


class NeutralExecutor:
    """Answers every tool call with the same neutral result, and calls nothing."""

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """The neutral result for any call."""
        started = time.perf_counter()
        return ToolResult(
            ok=True,
            status=200,
            text=f"HTTP 200 OK\n{NEUTRAL_RESULT}",
            data={"status": "ok"},
            latency_ms=(time.perf_counter() - started) * 1000,
            url=spec.url_template,
            mode="mock",
        )

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """The neutral result for any call (nothing to wait for)."""
        return self.call(spec, arguments)

    def close(self) -> None:
        """Nothing to release."""


class When2CallRunner:
    """Runs When2Call tasks as sessions of one named, resumable run."""

    def __init__(
        self,
        options: RunOptions,
        model: ModelConfig,
        *,
        turns: int = DEFAULT_TURNS,
        awareness: AwarenessMode = "none",
    ) -> None:
        """Prepare a run; nothing starts until :meth:`run`.

        Args:
            options: The run's name, Aah on or off, concurrency, seed, timeout.
            model: The agent's model.
            turns: Model turns per session (the first is the one scored).
            awareness: The awareness questions asked before acting (none by default).
        """
        self.options = options
        self.model = model
        self.turns = turns
        self.awareness = awareness
        self.executor = NeutralExecutor()

    def manifest(self, data_sha256: str | None = None) -> dict[str, Any]:
        """What the run is made of, stored with it (the pinned fields included)."""
        base = run_manifest(self.options, self.model, "", [WHEN2CALL_SETTING])
        return {
            **base,
            "benchmark": WHEN2CALL_BENCHMARK,
            # Pinned fields: a run resumed with other turns or tools is another run.
            "human": "idk" if self.options.aah else "none",
            "http": "neutral",
            "unavailable": None,
            "step_limit": self.turns,
            "registry_hash": None,
            "turns": self.turns,
            # True/False for both/none, as runs recorded it when it was a switch,
            # so those runs still resume; info and tool by name.
            "awareness": _PINNED_AWARENESS.get(self.awareness, self.awareness),
            "tool_result": NEUTRAL_RESULT,
            "data_sha256": data_sha256,
        }

    def request_for(self, task: When2CallTask, runtime: Runtime) -> SessionRequest:
        """The session of one question: its tools, Aah as chosen, turns limited."""
        return SessionRequest(
            query=task.query,
            specs=[endpoint_spec(tool) for tool in task.tools],
            aah=self.options.aah,
            awareness=self.awareness,
            step_limit=self.turns,
            answer_calls_at_limit=True,
            tool_mode=self.options.tool_mode,
            run=self.options.run,
            task_id=task.id,
            setting=WHEN2CALL_SETTING,
            context={
                "original_query": task.query,
                # What the question withheld, for the asking figures (science.md §8).
                CONTEXT_KEY: [b.to_json() for b in question_blockers(task)],
            },
            human=self._human(),
            executor=self.executor,
            retry_errors=True,
        )

    def _human(self) -> HumanChannel:
        # No script: every question gets the channel's "I don't know."
        return ScriptedHuman([], name="when2call")

    async def run(
        self,
        tasks: Sequence[When2CallTask],
        db: Path,
        on_done: ProgressHook | None = None,
        *,
        data_sha256: str | None = None,
        activity: Activity | None = None,
    ) -> RunSummary:
        """Run every question the run has not finished; return what happened.

        Raises:
            AahError: the run exists with another setup (a pinned field, or
                another benchmark, awareness choice, turn count or tool result).
        """
        manifest = self.manifest(data_sha256)
        return await run_pinned(self, tasks, db, manifest, WHEN2CALL_PINNED, on_done, activity)


# Besides the store's pinned fields, what makes a When2Call run another run.
WHEN2CALL_PINNED = ("benchmark", "awareness", "turns", "tool_result")
