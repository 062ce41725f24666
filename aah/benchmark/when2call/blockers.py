"""What a When2Call question withheld (science.md §8): its blockers.

A ``request_for_info`` question lacks information its target tool needs:
each required parameter of that tool that the question does not give is a
blocker. The question gives a parameter when one of its enum values is in
the question's words, or, for a number, when the question holds a number;
a parameter the question cannot be read as giving is a blocker (and when
the question seems to give each, every required one is, since the gold says
one is missing). The other
questions (``tool_call``, ``cannot_answer``) withhold nothing to ask for.
"""

from __future__ import annotations

import re
from typing import Any

from aah.benchmark.when2call.tasks import When2CallTask
from aah.scoring import Blocker, parameter_blocker

SOURCE = "when2call request_for_info"
_NUMBER = re.compile(r"\d")


def question_blockers(task: When2CallTask) -> list[Blocker]:
    """The blockers of one When2Call question ([] unless it is ``request_for_info``)."""
    if task.gold != "request_for_info" or task.target_tool_name is None:
        return []
    tool = next((t for t in task.tools if t.name == task.target_tool_name), None)
    if tool is None:
        return []
    properties = tool.parameters.get("properties")
    required = tool.parameters.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return []
    words = {w.casefold() for w in re.findall(r"[^\W_]+", task.query)}
    query = task.query.casefold()
    described = [
        (name, schema)
        for name in required
        if isinstance(name, str) and isinstance(schema := properties.get(name), dict)
    ]
    missing = [(name, schema) for name, schema in described if not _given(schema, words, query)]
    # The gold says something is missing: when each seems given, any may be it.
    return [
        parameter_blocker(name, str(schema.get("description", "")), SOURCE)
        for name, schema in missing or described
    ]


def _given(schema: dict[str, Any], words: set[str], query: str) -> bool:
    enum = schema.get("enum")
    if isinstance(enum, list):
        return any(isinstance(v, str) and _holds(v, words, query) for v in enum)
    if schema.get("type") in ("integer", "number", "float"):
        return bool(_NUMBER.search(query))
    return False


def _holds(value: str, words: set[str], query: str) -> bool:
    """Whether the question holds ``value``: as a word, or a phrase of its text."""
    value = value.casefold()
    return len(value) > 1 and (value in words or (" " in value and value in query))
