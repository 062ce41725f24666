"""What an ACEBench Special item withheld (science.md §8): its blockers.

An ``incomplete`` item's ground truth names, per API, the parameters the
request leaves out: each is a blocker, described as the API's schema
describes it. ``error_param`` and ``irrelevant`` items withhold nothing to ask
for (a wrong value is named back, an impossible request declined).
"""

from __future__ import annotations

from typing import Any

from aah.benchmark.acebench.tasks import AceTask
from aah.scoring import Blocker, parameter_blocker

SOURCE = "acebench incomplete"


def item_blockers(task: AceTask) -> list[Blocker]:
    """The blockers of one item ([] unless it is ``incomplete``)."""
    if task.category != "incomplete" or isinstance(task.ground_truth, str):
        return []
    found: dict[str, Blocker] = {}
    for api, params in task.ground_truth.items():
        schema = _properties(task, api)
        for name in params:
            described = schema.get(name)
            text = described.get("description", "") if isinstance(described, dict) else ""
            blocker = parameter_blocker(name, str(text), SOURCE)
            found.setdefault(blocker.key, blocker)
    return list(found.values())


def _properties(task: AceTask, api: str) -> dict[str, Any]:
    for function in task.functions:
        if function.get("name") == api:
            parameters = function.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            return properties if isinstance(properties, dict) else {}
    return {}
