"""ACEBench Special runs: each item one session of one model turn, under one reading.

- ``acebench`` reading: upstream's special system prompt (its ``{time}`` and
  ``{function}`` filled as upstream fills them: the item's time sentence and
  its function list as Python writes it) in place of aah's, upstream's user
  prompt around the question, no tools and no ``ask_human``: the reply is
  text, scored by upstream's string rules afterwards.
- ``aah`` reading: aah's own prompt, the item's functions offered as native
  tools and, with Aah on, ``ask_human``, which a person who knows nothing
  more answers ("I don't know."); the time sentence, when the item has one,
  is added to the system prompt. Every tool call gets the same neutral
  result; the first turn is read by the behaviour classes afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aah.benchmark.acebench.blockers import item_blockers
from aah.benchmark.acebench.scoring import Reading
from aah.benchmark.acebench.tasks import ACEBENCH_SETTING, AceTask, Language, Prompts
from aah.benchmark.acebench.tools import offered_specs
from aah.benchmark.batch import (
    ProgressHook,
    RunOptions,
    RunSummary,
    run_manifest,
    run_pinned,
)
from aah.benchmark.when2call import NEUTRAL_RESULT, NeutralExecutor
from aah.llm import ModelConfig
from aah.runtime import Activity, Runtime, ScriptedHuman, SessionRequest
from aah.scoring import CONTEXT_KEY

ACEBENCH_BENCHMARK = "acebench"
# Besides the store's pinned fields, what makes an ACEBench run another run.
ACEBENCH_PINNED = ("benchmark", "reading", "lang", "tool_result", "prompts_sha256")


def system_prompt(template: str, task: AceTask) -> str:
    """Upstream's special system prompt for ``task``, filled as upstream fills it.

    Upstream calls ``template.format(time=..., function=functions)`` with the
    function list itself, so the list appears as Python writes it
    (``[{'name': ...}]``); ``load_prompts`` checked that the template formats.
    """
    return template.format(time=task.time, function=[dict(f) for f in task.functions])


def user_prompt(template: str, task: AceTask) -> str:
    """Upstream's user prompt for ``task``: ``template.format(question=...)``."""
    return template.format(question=task.question)


class AceRunner:
    """Runs ACEBench Special tasks as sessions of one named, resumable run."""

    def __init__(
        self,
        options: RunOptions,
        model: ModelConfig,
        *,
        reading: Reading,
        lang: str,
        prompts: Mapping[Language, Prompts],
        prompts_sha256: str,
    ) -> None:
        """Prepare a run; nothing starts until :meth:`run`.

        Args:
            options: The run's name, Aah on or off, concurrency, seed, timeout.
            model: The agent's model.
            reading: ``acebench`` (upstream's prompt and rules) or ``aah``.
            lang: ``en``, ``zh`` or ``both`` (pinned: another language is another run).
            prompts: Upstream's prompt texts per language (the acebench reading's).
            prompts_sha256: Their digest, pinned with the run.
        """
        self.options = options
        self.model = model
        self.reading = reading
        self.lang = lang
        self.prompts = prompts
        self.prompts_sha256 = prompts_sha256
        self.executor = NeutralExecutor()

    @property
    def offers_ask_human(self) -> bool:
        """Whether ``ask_human`` is offered: the aah reading with Aah on."""
        return self.reading == "aah" and self.options.aah

    def manifest(self, data_sha256: str | None = None) -> dict[str, Any]:
        """What the run is made of, stored with it (the pinned fields included)."""
        base = run_manifest(self.options, self.model, "", [ACEBENCH_SETTING])
        return {
            **base,
            "benchmark": ACEBENCH_BENCHMARK,
            "aah": self.offers_ask_human,
            "human": "idk" if self.offers_ask_human else "none",
            "http": "neutral",
            "unavailable": None,
            "step_limit": 1,
            "registry_hash": None,
            "reading": self.reading,
            "lang": self.lang,
            "tool_result": NEUTRAL_RESULT,
            "data_sha256": data_sha256,
            "prompts_sha256": self.prompts_sha256,
        }

    def request_for(self, task: AceTask, runtime: Runtime) -> SessionRequest:
        """The session of one item under the run's reading."""
        common: dict[str, Any] = {
            "awareness": "none",
            "step_limit": 1,
            "answer_calls_at_limit": True,
            "tool_mode": self.options.tool_mode,
            "run": self.options.run,
            "task_id": task.id,
            "setting": ACEBENCH_SETTING,
            "human": ScriptedHuman([], name="acebench"),
            "executor": self.executor,
            "retry_errors": True,
        }
        if self.reading == "acebench":
            prompts = self.prompts[task.lang]
            query = user_prompt(prompts.user, task)
            return SessionRequest(
                query=query,
                specs=(),
                aah=False,
                system_prompt=system_prompt(prompts.system, task),
                context={"original_query": task.question, **_asking(task)},
                **common,
            )
        return SessionRequest(
            query=task.user_text,
            specs=offered_specs(task),
            aah=self.options.aah,
            instructions=task.time or None,
            context={"original_query": task.user_text, **_asking(task)},
            **common,
        )

    async def run(
        self,
        tasks: Sequence[AceTask],
        db: Path,
        on_done: ProgressHook | None = None,
        *,
        data_sha256: str | None = None,
        activity: Activity | None = None,
    ) -> RunSummary:
        """Run every item the run has not finished; return what happened.

        Raises:
            AahError: the run exists with another setup (reading, language, prompts...).
        """
        manifest = self.manifest(data_sha256)
        return await run_pinned(self, tasks, db, manifest, ACEBENCH_PINNED, on_done, activity)


def _asking(task: AceTask) -> dict[str, Any]:
    """What the asking figures read from a session's context: its category and blockers (§8)."""
    return {"category": task.category, CONTEXT_KEY: [b.to_json() for b in item_blockers(task)]}
