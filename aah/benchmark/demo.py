"""The demo tasks: one behaviour each (ask, tool failure, skip, success)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, Field

from aah.errors import AahError
from aah.events import AwarenessMode

if TYPE_CHECKING:
    from aah.tools import EndpointSpec

SCRIPTED_LABEL = "scripted demo model — set AAH_BASE_URL to use a real one"
DEMO_TASKS_FILE = Path(__file__).resolve().parent / "demo_tasks.yaml"
# ``{{ daily.temperature_2m_max[1] }}`` in a reply: a value of the last tool's answer.
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
_PATH_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


class DemoTask(BaseModel):
    """A hand-written task that shows one behaviour of the agent."""

    id: str
    title: str
    shows: str
    query: str
    tools: list[str]
    awareness: AwarenessMode = "both"
    fault: list[str] = Field(default_factory=list)
    human_answers: list[str] = Field(default_factory=list)
    script: dict[str, Any]


@cache
def load_demo_tasks() -> tuple[DemoTask, ...]:
    """All demo tasks, in the order the demo runs them."""
    raw = yaml.safe_load(DEMO_TASKS_FILE.read_text(encoding="utf-8"))
    return tuple(DemoTask.model_validate(item) for item in raw)


def demo_task(task_id: str) -> DemoTask:
    """The demo task called ``task_id``.

    Raises:
        AahError: there is no such task.
    """
    for task in load_demo_tasks():
        if task.id == task_id:
            return task
    names = ", ".join(task.id for task in load_demo_tasks())
    raise AahError(f"no demo task {task_id!r}: choose one of {names}")


def demo_script(task: DemoTask, specs: Sequence[EndpointSpec]) -> dict[str, Any]:
    """``task``'s script, its replies quoting what the mock tools answer its calls.

    A reply that follows a tool's result (``when: {last_tool_name: ...}``) may
    name values of that result, as ``{{ daily.temperature_2m_max[1] }}``. The
    mock answers a call the same way every time, so the scripted agent's final
    answer quotes the numbers the timeline shows instead of pointing at them.

    Raises:
        AahError: a placeholder names no value of the answer, or a tool with
            placeholders is never called by the script.
    """
    from aah.tools.http import make_executor

    script = copy.deepcopy(task.script)
    rules = script.get("rules") or []
    calls = {
        call["name"]: call.get("arguments") or {}
        for rule in rules
        if isinstance(rule.get("reply"), dict)
        for call in rule["reply"].get("tool_calls") or []
    }
    by_name = {spec.qualified_name: spec for spec in specs}
    mock = make_executor("mock")
    try:
        for rule in rules:
            tool = (rule.get("when") or {}).get("last_tool_name")
            reply = rule.get("reply")
            if not isinstance(reply, str) or not _PLACEHOLDER.search(reply):
                continue
            if tool not in calls or tool not in by_name:
                raise AahError(f"demo task {task.id!r}: {tool!r} is quoted but never called")
            data = mock.call(by_name[tool], calls[tool]).data
            rule["reply"] = _PLACEHOLDER.sub(partial(_quote, data, task_id=task.id), reply)
    finally:
        mock.close()
    return script


def _quote(data: Any, match: re.Match[str], task_id: str) -> str:
    path = match.group(1)
    value = data
    for index, key in _PATH_PART.findall(path):
        try:
            value = value[int(index)] if index else value[key]
        except (KeyError, IndexError, TypeError):
            raise AahError(f"demo task {task_id!r}: the mock answer has no {path!r}") from None
    return str(value)
