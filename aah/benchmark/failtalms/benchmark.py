"""Fail-TaLMs as a ``Benchmark``: its flags, its run.

A run answers each task of the chosen settings as one session: the agent
with the task's endpoints (or finding them with ``find_tools``), a batch
human (the oracle or a simulated user) behind ``ask_human``, approvals when
asked for. Its figures are the report's common ones (science.md's metrics
per run and setting, behaviour, error patterns, the paper beside them), so
it adds no part of its own to the report.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from aah.benchmark.protocol import BenchOption, PreparedRun, RunFlags
from aah.errors import AahError
from aah.scoring import SETTINGS

SPAN_SOURCE = "fail-talms under-specified"

if TYPE_CHECKING:
    from aah.benchmark.batch import (
        ProgressHook,
        RunOptions,
        RunSummary,
        ToolSource,
        UnavailableMode,
    )
    from aah.benchmark.failtalms.dataset import Task
    from aah.llm import ModelConfig, ProbeReport
    from aah.runtime import Activity
    from aah.scoring import Blocker, Setting
    from aah.store import RunRecord, SessionStore


def parse_settings(value: str) -> list[Setting]:
    """``all`` or a comma-separated list of setting names.

    Raises:
        AahError: a name that is no setting.
    """
    if value == "all":
        return list(SETTINGS)
    chosen = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [name for name in chosen if name not in SETTINGS]
    if unknown or not chosen:
        raise AahError(
            f"unknown setting {', '.join(unknown) or value!r}: use {', '.join(SETTINGS)} or all"
        )
    return cast("list[Setting]", chosen)


def choose_tasks(tasks: Sequence[Task], limit: int | None, ids: Sequence[str]) -> list[Task]:
    """Tasks named by ``--ids``, else at most ``limit`` per setting, in data order.

    Raises:
        AahError: an id names no task.
    """
    from aah.benchmark.batch import pick_tasks

    return pick_tasks(
        tasks,
        limit,
        ids,
        lambda task: task.setting,
        "underspecified-17 (see `aah bench data --show`)",
    )


def prompt_warning(largest: int, context: int | None, reply_tokens: int | None) -> list[str]:
    """A line when the run's largest first request (plus a reply) may not fit the context."""
    if context is None:
        return []
    needed = largest + (reply_tokens or 0)
    if needed <= context:
        return []
    return [
        f"the largest first request of this run is about {largest:,} tokens (plus "
        f"{reply_tokens or 0:,} for the reply), but the server's context is {context:,}: "
        "those tasks will fail; use a model with a larger context"
    ]


class FailTalms:
    """Fail-TaLMs (NAACL 2025): five settings of real API tasks, some impossible as given."""

    name = "fail-talms"
    title = "Fail-TaLMs"
    group = "setting"
    options: Sequence[BenchOption] = (
        BenchOption("setting", "--setting", str, "all", "A setting, a comma list, or all."),
        BenchOption(
            "tools",
            "--tools",
            str,
            "given",
            "Fail-TaLMs: given (the task's endpoints are handed to the agent) or registry "
            "(none are: it finds them with find_tools over the whole registry, minus what the "
            "setting removes).",
        ),
        BenchOption(
            "discover",
            "--discover",
            bool,
            False,
            "Fail-TaLMs: also give the agent find_tools beside its endpoints.",
        ),
    )
    reads = frozenset(
        {
            "human",
            "http",
            "unavailable",
            "step_limit",
            "human_deadline",
            "tool_result_tokens",
            "discover_k",
            "approve",
            "approve_methods",
            "approve_tools",
        }
    )
    defaults: Mapping[str, Any] = MappingProxyType({"aah": True, "task_timeout": 600.0})
    report = None
    export = None
    published: Sequence[str] = (
        "Treviño et al., Benchmarking Failures in Tool-Augmented Language Models "
        "(Fail-TaLMs), NAACL 2025, Tables 1-2, https://arxiv.org/abs/2503.14227 "
        "(aah report --compare paper)",
    )

    def blockers(self, store: SessionStore, run: RunRecord) -> Mapping[str, Sequence[Blocker]]:
        """Each session's blockers: an under-specified task's spans its query lacks (§8).

        The spans are the words of the user's full request that the agent's
        request lacks (what the desk's page marks); tasks of the other
        settings withhold no information (a missing tool is no blocker).
        """
        from aah.scoring import span_blockers

        found: dict[str, list[Blocker]] = {}
        for session in store.list_sessions(run=run.name):
            if session.setting != "underspecified":
                found[session.id] = []
                continue
            context = store.session_recipe(session.id).get("context") or {}
            full = context.get("original_query") if isinstance(context, dict) else None
            found[session.id] = (
                span_blockers(full, session.query, SPAN_SOURCE) if isinstance(full, str) else []
            )
        return found

    def prepare(self, flags: RunFlags) -> PreparedRun:
        """Check the flags, load the settings' tasks, pick and shard them.

        Raises:
            AahError: a bad flag value, no benchmark data, or an id that names no task.
        """
        from aah.benchmark.batch import parse_shard, shard_tasks
        from aah.benchmark.failtalms.dataset import load_tasks
        from aah.config import get_settings
        from aah.data import find_data_dir
        from aah.extensions import BASE_HTTP_MODE_NAMES, BATCH_HUMAN_NAMES, known_name
        from aah.runtime import policy_from_options
        from aah.tools.registry import open_registry

        tools: str = flags["tools"]
        if tools not in ("given", "registry"):
            raise AahError(f"unknown --tools {tools!r}: use given or registry")
        unavailable: str = flags["unavailable"]
        if unavailable not in ("hidden", "broken"):
            raise AahError(f"unknown --unavailable {unavailable!r}: use hidden or broken")
        human = known_name(BATCH_HUMAN_NAMES, flags["human"], "--human")
        http = known_name(BASE_HTTP_MODE_NAMES, flags["http"], "--http")
        approvals = policy_from_options(
            flags["approve"], flags["approve_methods"], flags["approve_tools"] or []
        )
        settings = parse_settings(flags["setting"])
        data_dir = find_data_dir(flags.data, need_benchmark=True)
        registry = open_registry(
            flags.data,
            build_if_missing=True,
            on_build=lambda: flags.say("building the tool registry (once)…"),
        )
        every = load_tasks(data_dir, settings)
        tasks = shard_tasks(choose_tasks(every, flags.limit, flags.ids), parse_shard(flags.shard))
        discover: bool = flags["discover"]
        options = {
            "human": human,
            "http": http,
            "unavailable": cast("UnavailableMode", unavailable),
            "step_limit": flags["step_limit"],
            "human_deadline": flags["human_deadline"],
            "tool_result_tokens": flags["tool_result_tokens"] or get_settings().tool_result_tokens,
            "tools": cast("ToolSource", tools),
            "discover": discover,
            "discover_k": flags["discover_k"] or get_settings().discover_k,
            "approvals": approvals,
        }

        def warnings(
            options: RunOptions, model: ModelConfig, probe: ProbeReport | None
        ) -> list[str]:
            from aah.benchmark.failtalms.runner import BatchRunner

            if probe is None or options.probe is None:
                return []
            largest = BatchRunner(options, registry, model).largest_prompt_tokens(tasks)
            options.probe["largest_prompt_tokens"] = largest
            return prompt_warning(largest, probe.context_length, model.max_tokens)

        def start(
            options: RunOptions,
            model: ModelConfig,
            db: Path,
            on_done: ProgressHook,
            on_waiting: Callable[[int], None],
            activity: Activity,
        ) -> Coroutine[Any, Any, RunSummary]:
            from aah.benchmark.failtalms.runner import BatchRunner

            runner = BatchRunner(options, registry, model)
            return runner.run(tasks, db, on_done, on_waiting, activity=activity)

        header = f", human {human}, http {http}"
        header += ", tools found with find_tools" if tools == "registry" else ""
        header += ", find_tools on" if discover and tools == "given" else ""
        return PreparedRun(
            tasks,
            "tasks",
            start,
            options=options,
            header=header,
            warnings=warnings,
            next_step=f"aah grade --run {flags.run}` then `aah report --run {flags.run}",
        )


BENCHMARK = FailTalms()
