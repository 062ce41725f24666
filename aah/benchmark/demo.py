"""The demo tasks: one behaviour each (ask, tool failure, skip, success)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from aah.errors import AahError
from aah.events import AwarenessMode

SCRIPTED_LABEL = "scripted demo model — set AAH_BASE_URL to use a real one"
DEMO_TASKS_FILE = Path(__file__).resolve().parent / "demo_tasks.yaml"


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
