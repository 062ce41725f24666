"""What a BFCL multi-turn ``miss_param`` entry withheld (science.md §8): its blockers.

A ``miss_param`` turn leaves out a parameter its calls need, and the next
user turn gives it. Each parameter of the next turn's ground-truth calls
whose value is first given in that turn's text (no earlier turn holds it)
is a blocker, described as the function's documentation describes it;
where the next turn gives no value word for word ("the file I mentioned"),
each parameter of its calls that no earlier turn gave, and where there is
none, the next turn's words as one span. Other categories withhold nothing
to ask for.
"""

from __future__ import annotations

import ast
from typing import Any

from aah.benchmark.bfcl.multi_turn_tasks import MultiTurnTask
from aah.benchmark.bfcl.tasks import turn_text
from aah.scoring import Blocker, parameter_blocker

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
        named = [
            (function, name, texts)
            for call in task.ground_truth[turn + 1]
            for function, name, value in _arguments(call)
            if (texts := [text for text in _value_texts(value) if text in given])
        ]
        # First given in the next turn; where the turn repeats a value said before
        # (the file it means was named already), the values it gives.
        first = [item for item in named if not any(text in before for text in item[2])]
        # A turn that gives the value in other words ("the alphabetically first
        # file"): each parameter of its calls that no earlier turn gave.
        unsaid = [
            (function, name, texts)
            for call in task.ground_truth[turn + 1]
            for function, name, value in _arguments(call)
            if (texts := _value_texts(value)) and not any(text in before for text in texts)
        ]
        for function, name, _texts in first or named or unsaid:
            blocker = parameter_blocker(name, _description(docs.get(function), name), SOURCE)
            blockers.setdefault(blocker.key, blocker)
        if not (first or named or unsaid):
            # Nothing to name: the next turn's words are what the agent lacked.
            text = " ".join(turn_text(task.turns[turn + 1]).split())
            blockers.setdefault(f"span:{turn}", Blocker(f"span:{turn}", "span", "", text, SOURCE))
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


def _value_texts(value: Any) -> list[str]:
    """A value as the texts a user would say (a list's items, a tag without its ``#``)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, str):
        text = value.strip().lstrip("@#").casefold()
        return [text] if len(text) > 1 else []
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _value_texts(item)]
    return []


def _description(tool: Any, name: str) -> str:
    properties = tool.parameters.get("properties", {}) if tool is not None else {}
    schema = properties.get(name) if isinstance(properties, dict) else None
    return str(schema.get("description", "")) if isinstance(schema, dict) else ""
