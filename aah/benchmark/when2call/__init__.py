"""When2Call (NVIDIA, NAACL 2025) as a runnable benchmark: tasks, tool specs, runs, scoring."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.when2call.benchmark import choose_questions
    from aah.benchmark.when2call.runner import (
        NEUTRAL_RESULT,
        WHEN2CALL_BENCHMARK,
        NeutralExecutor,
        When2CallRunner,
    )
    from aah.benchmark.when2call.scoring import (
        PUBLISHED,
        When2CallScores,
        label_run_with_judge,
        label_run_with_rules,
        run_scores,
        scores_to_json,
    )
    from aah.benchmark.when2call.tasks import (
        GOLD_BEHAVIORS,
        WHEN2CALL_SETTING,
        GoldBehavior,
        When2CallTask,
        load_when2call,
        parse_question,
        questions_file,
    )
    from aah.benchmark.when2call.tools import (
        When2CallTool,
        endpoint_spec,
        function_tool,
        json_schema,
        original_tool_name,
        tool_name,
    )

__all__ = [
    "choose_questions",
    "WHEN2CALL_BENCHMARK",
    "PUBLISHED",
    "When2CallScores",
    "label_run_with_judge",
    "label_run_with_rules",
    "run_scores",
    "scores_to_json",
    "GOLD_BEHAVIORS",
    "GoldBehavior",
    "NEUTRAL_RESULT",
    "NeutralExecutor",
    "WHEN2CALL_SETTING",
    "When2CallRunner",
    "When2CallTask",
    "When2CallTool",
    "endpoint_spec",
    "function_tool",
    "json_schema",
    "load_when2call",
    "original_tool_name",
    "parse_question",
    "questions_file",
    "tool_name",
]

_WHERE = {
    "choose_questions": "aah.benchmark.when2call.benchmark",
    "PUBLISHED": "aah.benchmark.when2call.scoring",
    "When2CallScores": "aah.benchmark.when2call.scoring",
    "label_run_with_judge": "aah.benchmark.when2call.scoring",
    "label_run_with_rules": "aah.benchmark.when2call.scoring",
    "run_scores": "aah.benchmark.when2call.scoring",
    "scores_to_json": "aah.benchmark.when2call.scoring",
    "WHEN2CALL_BENCHMARK": "aah.benchmark.when2call.runner",
    "NEUTRAL_RESULT": "aah.benchmark.when2call.runner",
    "NeutralExecutor": "aah.benchmark.when2call.runner",
    "When2CallRunner": "aah.benchmark.when2call.runner",
    "GOLD_BEHAVIORS": "aah.benchmark.when2call.tasks",
    "GoldBehavior": "aah.benchmark.when2call.tasks",
    "WHEN2CALL_SETTING": "aah.benchmark.when2call.tasks",
    "When2CallTask": "aah.benchmark.when2call.tasks",
    "load_when2call": "aah.benchmark.when2call.tasks",
    "parse_question": "aah.benchmark.when2call.tasks",
    "questions_file": "aah.benchmark.when2call.tasks",
    "When2CallTool": "aah.benchmark.when2call.tools",
    "endpoint_spec": "aah.benchmark.when2call.tools",
    "function_tool": "aah.benchmark.when2call.tools",
    "json_schema": "aah.benchmark.when2call.tools",
    "original_tool_name": "aah.benchmark.when2call.tools",
    "tool_name": "aah.benchmark.when2call.tools",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
