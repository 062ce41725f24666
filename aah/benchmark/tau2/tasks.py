"""τ²'s tasks as typed values: a domain's task set, one split of it, or chosen ids.

Tasks are read from the data directory (never from the wheel: its bundled
tasks are the old, unfixed ones) and validated by τ²'s own ``Task`` model.
A task set is a domain's ``tasks.json`` (telecom: ``tasks_base.json``, the
114 tasks of the ``base`` split; ``tasks_small.json`` for ``small``), and a
split is a list of ids in its ``split_tasks.json`` (``base``, ``train``,
``test``; telecom also ``small``). Each gold action must name a tool of the
side that acts (the agent's, or in telecom the user's), so a damaged task
fails when it is read, not in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.files import REFETCH, read_json, validation_problem, wrong_shape
from aah.errors import AahError

DEFAULT_SPLIT = "base"
SPLIT_FILE = "split_tasks.json"
# The task file of each split that is not read from the domain's own task set.
_SPLIT_TASK_FILES = {("telecom", "small"): "tasks_small.json"}
_DOMAIN_TASK_FILES = {"telecom": "tasks_base.json"}
_TASK_FILE = "tasks.json"
# Tools upstream's fixed tasks name in gold actions that the pinned wheel lacks.
# Upstream's retail added a read-only lookup (get_item_details); in the wheel's
# environment a gold replay of it answers "Tool not found" and changes nothing,
# and retail's reward basis (DB, NL) does not count actions.
UPSTREAM_ONLY_TOOLS = frozenset({("retail", "get_item_details")})
# Splits named in the split file whose tasks aah's data does not hold.
_ABSENT_SPLITS = {("telecom", "full"): "the full telecom set (2,285 generated tasks)"}


@dataclass(frozen=True)
class Tau2Task:
    """One τ² task of one domain.

    Attributes:
        domain: The domain it belongs to.
        id: Its id.
        task: τ²'s own ``Task`` (user scenario, initial state, evaluation criteria).
    """

    domain: str
    id: str
    task: Any

    @property
    def reward_basis(self) -> tuple[str, ...]:
        """The components whose product is the reward (``DB``, ``COMMUNICATE``...)."""
        criteria = self.task.evaluation_criteria
        return () if criteria is None else tuple(str(kind.value) for kind in criteria.reward_basis)

    @property
    def nl_assertions(self) -> tuple[str, ...]:
        """The natural-language assertions, for aah's grader (τ²'s LLM judge never runs)."""
        criteria = self.task.evaluation_criteria
        return tuple(criteria.nl_assertions or ()) if criteria is not None else ()

    @property
    def user_scenario(self) -> str:
        """What the user simulator is told (persona and instructions), as τ² writes it."""
        return str(self.task.user_scenario)

    @property
    def gold_actions(self) -> tuple[Any, ...]:
        """τ²'s gold ``Action`` list (empty when the task has none)."""
        criteria = self.task.evaluation_criteria
        return tuple(criteria.actions or ()) if criteria is not None else ()


def split_names(domain: Tau2Domain) -> list[str]:
    """The splits of ``domain`` that aah's data holds (from its split file).

    Raises:
        AahError: the split file is missing or damaged.
    """
    return [name for name in _splits(domain) if (domain.name, name) not in _ABSENT_SPLITS]


def load_tau2_tasks(
    domain: Tau2Domain, *, split: str = DEFAULT_SPLIT, ids: Sequence[str] | None = None
) -> list[Tau2Task]:
    """The tasks of one split of ``domain``, in the task file's order; only ``ids`` if given.

    Raises:
        AahError: an unknown split or id, or a missing or damaged file (one line
            naming the file, the task and what is wrong).
    """
    splits = _splits(domain)
    if (domain.name, split) in _ABSENT_SPLITS:
        raise AahError(
            f"{_ABSENT_SPLITS[domain.name, split]} is not in aah's data: use split "
            f"{', '.join(split_names(domain))}"
        )
    if split not in splits:
        raise AahError(
            f"unknown split {split!r} of τ²'s {domain.name}: use {', '.join(split_names(domain))}"
        )
    file = _SPLIT_TASK_FILES.get(
        (domain.name, split), _DOMAIN_TASK_FILES.get(domain.name, _TASK_FILE)
    )
    tasks = _read_tasks(domain, file)
    chosen = set(splits[split])
    in_split = [task for task in tasks if task.id in chosen]
    if ids is None:
        return in_split
    by_id = {task.id: task for task in in_split}
    missing = [task_id for task_id in ids if task_id not in by_id]
    if missing:
        raise AahError(
            f"no task {missing[0]!r} in τ²'s {domain.name} ({split}): check --ids "
            f"({len(missing)} of {len(ids)} unknown)"
        )
    return [by_id[task_id] for task_id in dict.fromkeys(ids)]


def _splits(domain: Tau2Domain) -> dict[str, list[str]]:
    path = domain.folder / SPLIT_FILE
    value = read_json(path)
    if not isinstance(value, dict) or not all(
        isinstance(ids, list) and all(isinstance(task_id, str) for task_id in ids)
        for ids in value.values()
    ):
        raise wrong_shape(path, "a split file (split name -> list of task ids)")
    return value


def _read_tasks(domain: Tau2Domain, file: str) -> list[Tau2Task]:
    path = domain.folder / file
    value = read_json(path)
    if not isinstance(value, list):
        raise wrong_shape(path, "a task list (a JSON array of tasks)")
    task_model = domain.code.attribute("tau2.data_model.tasks", "Task")
    tasks: list[Tau2Task] = []
    seen: set[str] = set()
    for index, raw in enumerate(value):
        label = f"task {index}" + (
            f" ({raw['id']})" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else ""
        )
        try:
            task = task_model.model_validate(raw)
        except ValidationError as exc:
            raise AahError(f"{path}: {label}: {validation_problem(exc)}: {REFETCH}") from None
        if task.id in seen:
            raise AahError(f"{path}: {label}: the id is used twice: {REFETCH}")
        seen.add(task.id)
        _check_actions(domain, task, f"{path}: {label}")
        tasks.append(Tau2Task(domain.name, task.id, task))
    return tasks


def _check_actions(domain: Tau2Domain, task: Any, where: str) -> None:
    criteria = task.evaluation_criteria
    for action in (criteria.actions or []) if criteria is not None else []:
        tools = domain.user_tool_names if action.requestor == "user" else domain.agent_tool_names
        if action.name not in tools and (domain.name, action.name) not in UPSTREAM_ONLY_TOOLS:
            side = "user's" if action.requestor == "user" else "agent's"
            raise AahError(
                f"{where}: gold action {action.action_id!r} calls {action.name!r}, not one of "
                f"the {domain.name} {side} tools: {REFETCH}"
            )
