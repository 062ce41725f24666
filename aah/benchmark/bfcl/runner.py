"""BFCL runs: each item one session of one model turn, its calls answered neutrally.

The functions are not HTTP endpoints: a call is recorded (name and arguments
as the model gave them, whether or not they pass the call checks) and answered
with When2Call's neutral result, and the session ends after the first turn.
The store then holds what the turn did; ``aah.scoring`` reads it back (the
AST check, the standard and intent readings). Aah is off unless asked for,
as BFCL offers only the item's functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aah.benchmark.batch import (
    ProgressHook,
    RunOptions,
    RunSummary,
    check_run_setup,
    epoch_tasks,
    run_batch,
    run_manifest,
)
from aah.benchmark.bfcl.tasks import BFCL_SETTING, BfclTask
from aah.benchmark.when2call import NEUTRAL_RESULT, NeutralExecutor, endpoint_spec
from aah.llm import ModelConfig
from aah.runtime import Activity, Runtime, ScriptedHuman, SessionRequest
from aah.tools import EndpointSource, EndpointSpec

BFCL_BENCHMARK = "bfcl"
# Host of a BFCL function's URL: reserved (RFC 2606), so it is never called.
TOOL_HOST = "bfcl.invalid"
# Besides the store's pinned fields, what makes a BFCL run another run.
BFCL_PINNED = ("benchmark", "turns", "tool_result", "data_source")


def function_specs(task: BfclTask) -> list[EndpointSpec]:
    """The tool specs a session of ``task`` offers, one per function."""
    return [
        endpoint_spec(tool).model_copy(
            update={
                "category": "BFCL",
                "url_template": f"https://{TOOL_HOST}/{tool.name}",
                "source": EndpointSource(kind="builtin", file="bfcl", id=tool.original),
            }
        )
        for tool in task.functions
    ]


class BfclRunner:
    """Runs BFCL items as sessions of one named, resumable run."""

    def __init__(self, options: RunOptions, model: ModelConfig) -> None:
        """Prepare a run; nothing starts until :meth:`run`.

        Args:
            options: The run's name, Aah on or off, concurrency, seed, timeout,
                tool mode and epochs.
            model: The agent's model.
        """
        self.options = options
        self.model = model
        self.executor = NeutralExecutor()

    def manifest(
        self, categories: Sequence[str], data_source: str, data_sha256: str | None = None
    ) -> dict[str, Any]:
        """What the run is made of, stored with it (the pinned fields included)."""
        base = run_manifest(self.options, self.model, "", [BFCL_SETTING])
        return {
            **base,
            "benchmark": BFCL_BENCHMARK,
            "human": "idk" if self.options.aah else "none",
            "http": "neutral",
            "unavailable": None,
            "step_limit": 1,
            "registry_hash": None,
            "turns": 1,
            "awareness": False,
            "tool_result": NEUTRAL_RESULT,
            "categories": list(categories),
            "data_source": data_source,
            "data_sha256": data_sha256,
        }

    def request_for(self, task: BfclTask, runtime: Runtime) -> SessionRequest:
        """The session of one item: its functions, one model turn, no awareness question."""
        return SessionRequest(
            query=task.query,
            specs=function_specs(task),
            aah=self.options.aah,
            awareness="none",
            step_limit=1,
            answer_calls_at_limit=True,
            tool_mode=self.options.tool_mode,
            run=self.options.run,
            task_id=task.id,
            setting=BFCL_SETTING,
            context={"original_query": task.query, "category": task.category},
            human=ScriptedHuman([], name="bfcl"),
            executor=self.executor,
            retry_errors=True,
        )

    async def run(
        self,
        tasks: Sequence[BfclTask],
        db: Path,
        on_done: ProgressHook | None = None,
        *,
        categories: Sequence[str] = (),
        data_source: str = "",
        data_sha256: str | None = None,
        activity: Activity | None = None,
    ) -> RunSummary:
        """Run every item the run has not finished; return what happened.

        Raises:
            AahError: the run exists with another setup (a pinned field, or
                another benchmark or data source).
        """
        manifest = self.manifest(categories, data_source, data_sha256)
        check_run_setup(db, self.options.run, manifest, BFCL_PINNED)
        return await run_batch(
            epoch_tasks(tasks, self.options.epochs),
            db=db,
            model=self.model,
            options=self.options,
            manifest=manifest,
            request_for=self.request_for,
            on_done=on_done,
            activity=activity,
        )
