"""What a BFCL multi-turn ``miss_param`` entry withheld (science.md §8): its blockers.

A ``miss_param`` turn leaves out a parameter its calls need, and the next
user turn gives it. Each parameter of the next turn's ground-truth calls
whose value is first given in that turn's text (no earlier turn holds it)
is a blocker, described as the function's documentation describes it.
Other categories withhold nothing to ask for.
"""

from __future__ import annotations

import ast
from typing import Any

from aah.benchmark.bfcl.multi_turn_tasks import MultiTurnTask
from aah.benchmark.bfcl.tasks import turn_text
from aah.scoring.asking import Blocker, parameter_blocker

SOURCE = "bfcl miss_param"
CATEGORY = "multi_turn_miss_param"


def entry_blockers(task: MultiTurnTask) -> list[Blocker]:
    """The blockers of one multi-turn entry ([] unless it is ``miss_param``)."""
    if task.category != CATEGORY:
        return []
    docs = {tool.original: tool for tool in task.functions}
    for added in task.added.values():
        docs.update({tool.original: tool for tool in added})
    blockers: dict[str, Blocker] = {}
    for turn in range(len(task.turns) - 1):
        if task.ground_truth[turn]:
            continue
        before = " ".join(turn_text(t) for t in task.turns[: turn + 1]).casefold()
        given = turn_text(task.turns[turn + 1]).casefold()
        for call in task.ground_truth[turn + 1]:
            for function, name, value in _arguments(call):
                text = _value_text(value)
                if not text or text in before or text not in given:
                    continue
                tool = docs.get(function)
                properties = tool.parameters.get("properties", {}) if tool else {}
                schema = properties.get(name) if isinstance(properties, dict) else None
                description = schema.get("description", "") if isinstance(schema, dict) else ""
                blocker = parameter_blocker(name, str(description), SOURCE)
                blockers.setdefault(blocker.key, blocker)
    return list(blockers.values())


def _arguments(call: str) -> list[tuple[str, str, Any]]:
    """``(function, parameter, value)`` of one ground-truth call's keyword arguments."""
    try:
        node = ast.parse(call, mode="eval").body
    except (SyntaxError, ValueError):
        return []
    if not isinstance(node, ast.Call):
        return []
    function = ast.unparse(node.func)
    found = []
    for keyword in node.keywords:
        if keyword.arg is None:
            continue
        try:
            value = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError):
            continue
        found.append((function, keyword.arg, value))
    return found


def _value_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip().casefold() if len(value.strip()) > 1 else ""
    return ""
