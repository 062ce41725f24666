"""BFCL runs: a single-turn item is one model turn, a multi-turn entry a whole conversation.

The functions are not HTTP endpoints. A single-turn item's call is recorded
(name and arguments as the model gave them, whether or not they pass the
call checks) and answered with When2Call's neutral result, and the session
ends after the first turn; the store then holds what the turn did, and
``score_bfcl_run`` reads it back (the AST check, the standard and intent
readings). A multi-turn entry's calls run on BFCL's own stateful APIs and
each turn is checked as it ends (``multi_turn_run``). Aah is off unless
asked for, as BFCL offers only the item's functions.
"""

from __future__ import annotations

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
from aah.benchmark.bfcl.blockers import entry_blockers
from aah.benchmark.bfcl.multi_turn_run import MULTI_TURN_STEP_LIMIT, BfclTurnExecutor, turn_oracle
from aah.benchmark.bfcl.multi_turn_tasks import MultiTurnTask, is_multi_turn
from aah.benchmark.bfcl.tasks import BFCL_SETTING, BfclTask
from aah.benchmark.when2call import (
    NEUTRAL_RESULT,
    NeutralExecutor,
    When2CallTool,
    endpoint_spec,
)
from aah.llm import ModelConfig
from aah.runtime import Activity, FollowUp, Runtime, ScriptedHuman, SessionRequest
from aah.scoring import CONTEXT_KEY
from aah.tools import EndpointSource, EndpointSpec

BFCL_BENCHMARK = "bfcl"
# Host of a BFCL function's URL: reserved (RFC 2606), so it is never called.
TOOL_HOST = "bfcl.invalid"
# Besides the store's pinned fields, what makes a BFCL run another run.
BFCL_PINNED = ("benchmark", "turns", "tool_result", "data_source")


def function_specs(task: BfclTask) -> list[EndpointSpec]:
    """The tool specs a session of ``task`` offers, one per function."""
    return tool_specs(task.functions)


def tool_specs(functions: Sequence[When2CallTool]) -> list[EndpointSpec]:
    """The tool specs of BFCL ``functions``, one each."""
    return [
        endpoint_spec(tool).model_copy(
            update={
                "category": "BFCL",
                "url_template": f"https://{TOOL_HOST}/{tool.name}",
                "source": EndpointSource(kind="builtin", file="bfcl", id=tool.original),
            }
        )
        for tool in functions
    ]


class BfclRunner:
    """Runs BFCL items as sessions of one named, resumable run."""

    def __init__(
        self,
        options: RunOptions,
        model: ModelConfig,
        api_classes: Mapping[str, type] | None = None,
    ) -> None:
        """Prepare a run; nothing starts until :meth:`run`.

        Args:
            options: The run's name, Aah on or off, concurrency, seed, timeout,
                tool mode and epochs.
            model: The agent's model.
            api_classes: BFCL's API classes for multi-turn entries (found from
                the settings when None).
        """
        self.options = options
        self.model = model
        self.api_classes = api_classes
        self.executor = NeutralExecutor()

    def manifest(
        self, categories: Sequence[str], data_source: str, data_sha256: str | None = None
    ) -> dict[str, Any]:
        """What the run is made of, stored with it (the pinned fields included)."""
        base = run_manifest(self.options, self.model, "", [BFCL_SETTING])
        multi = any(is_multi_turn(category) for category in categories)
        return {
            **base,
            "benchmark": BFCL_BENCHMARK,
            "human": "idk" if self.options.aah else "none",
            "http": "neutral",
            "unavailable": None,
            # Per turn: 1 for a single-turn item; a multi-turn turn ends as BFCL's does.
            "step_limit": MULTI_TURN_STEP_LIMIT if multi else 1,
            "registry_hash": None,
            "turns": "multi" if multi else 1,
            "awareness": False,
            "tool_result": NEUTRAL_RESULT,
            "categories": list(categories),
            "data_source": data_source,
            "data_sha256": data_sha256,
        }

    def request_for(self, task: BfclTask | MultiTurnTask, runtime: Runtime) -> SessionRequest:
        """The session of one item: its functions, one model turn, no awareness question.

        A multi-turn entry's session has every turn, its functions joining at
        their turn, BFCL's APIs as the tools and a per-turn step limit.
        """
        if isinstance(task, MultiTurnTask):
            return self.multi_turn_request(task)
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

    def multi_turn_request(self, task: MultiTurnTask) -> SessionRequest:
        """The session of one multi-turn entry (see ``multi_turn_run``)."""
        executor = BfclTurnExecutor(task, self.api_classes)
        follow_ups = [
            FollowUp(text, tuple(tool_specs(task.added.get(index, ()))))
            for index, text in enumerate(task.follow_ups(), start=1)
        ]
        return SessionRequest(
            query=task.query,
            specs=tool_specs(task.functions),
            aah=self.options.aah,
            awareness="none",
            step_limit=MULTI_TURN_STEP_LIMIT,
            answer_calls_at_limit=True,
            tool_mode=self.options.tool_mode,
            run=self.options.run,
            task_id=task.id,
            setting=BFCL_SETTING,
            context={
                "original_query": task.query,
                "category": task.category,
                # What the entry withheld, for the asking figures (science.md §8).
                CONTEXT_KEY: [b.to_json() for b in entry_blockers(task)],
            },
            human=turn_oracle(task, executor),
            executor=executor,
            retry_errors=True,
            follow_ups=follow_ups,
            check_calls="names",
        )

    async def run(
        self,
        tasks: Sequence[BfclTask | MultiTurnTask],
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
        return await run_pinned(self, tasks, db, manifest, BFCL_PINNED, on_done, activity)
