"""BFCL (Berkeley Function-Calling Leaderboard) as a runnable benchmark, single- and multi-turn.

Single-turn: loader (BFCL v4 files and Multilingual-BFCL JSONL), tasks, the
AST checker (Java and JavaScript values read from their source text), the
standard and intent readings of a turn, the run's scores and MBFCL's
published figures. Multi-turn: the entries, BFCL's own stateful API classes
served from the pinned wheel (``wheel``, ``environments``) behind the fence
(``aah.benchmark.fence``; ``call_guards`` for calls no thread could stop),
the sessions that run them (``multi_turn_run``), the multi-turn checker and
the run's scores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.bfcl.benchmark import choose_items
    from aah.benchmark.bfcl.checker import AstCheckResult, Call, check_call, check_calls, normalise
    from aah.benchmark.bfcl.environments import BfclEnvironment, EnvironmentPair, bfcl_fence
    from aah.benchmark.bfcl.multi_turn_check import (
        ModelCall,
        MultiTurnChecker,
        MultiTurnVerdict,
        check_multi_turn,
        parse_call_text,
    )
    from aah.benchmark.bfcl.multi_turn_run import MULTI_TURN_STEP_LIMIT, BfclTurnExecutor
    from aah.benchmark.bfcl.multi_turn_scoring import (
        MULTI_TURN_FIGURES,
        EmptyTurnReply,
        MultiTurnCounts,
        multi_turn_figures,
        score_multi_turn_run,
    )
    from aah.benchmark.bfcl.multi_turn_tasks import (
        MultiTurnTask,
        is_multi_turn,
        load_multi_turn,
        multi_turn_files,
        multi_turn_source,
    )
    from aah.benchmark.bfcl.published import (
        MBFCL_PUBLISHED,
        MBFCL_SOURCE,
        PublishedBfcl,
        published_for,
    )
    from aah.benchmark.bfcl.reading import Turn, called_intent, called_standard, read_turn
    from aah.benchmark.bfcl.runner import BFCL_BENCHMARK, BfclRunner, function_specs
    from aah.benchmark.bfcl.scoring import (
        FIGURES,
        BfclScores,
        Disagreement,
        bfcl_run_scores,
        bfcl_scores_to_json,
        score_bfcl_run,
    )
    from aah.benchmark.bfcl.source_values import LANGUAGE_TYPES, read_value
    from aah.benchmark.bfcl.tasks import (
        ALL_MULTI_TURN,
        ALL_SINGLE_TURN,
        AST_CATEGORIES,
        BFCL_SETTING,
        CATEGORIES,
        MULTI_TURN_CATEGORIES,
        REFUSAL_CATEGORIES,
        RELEVANCE_CATEGORIES,
        SOURCE_LANGUAGES,
        BfclMessage,
        BfclTask,
        bfcl_source,
        data_files,
        load_bfcl,
        parse_categories,
    )
    from aah.benchmark.bfcl.wheel import api_classes, find_bfcl_wheel

__all__ = [
    "choose_items",
    "ALL_MULTI_TURN",
    "MULTI_TURN_CATEGORIES",
    "MULTI_TURN_STEP_LIMIT",
    "BfclEnvironment",
    "BfclTurnExecutor",
    "EnvironmentPair",
    "ModelCall",
    "MultiTurnChecker",
    "MultiTurnTask",
    "MultiTurnVerdict",
    "api_classes",
    "bfcl_fence",
    "check_multi_turn",
    "find_bfcl_wheel",
    "is_multi_turn",
    "load_multi_turn",
    "multi_turn_files",
    "multi_turn_source",
    "parse_call_text",
    "score_multi_turn_run",
    "MULTI_TURN_FIGURES",
    "EmptyTurnReply",
    "MultiTurnCounts",
    "multi_turn_figures",
    "ALL_SINGLE_TURN",
    "AST_CATEGORIES",
    "BFCL_BENCHMARK",
    "BFCL_SETTING",
    "CATEGORIES",
    "Call",
    "LANGUAGE_TYPES",
    "MBFCL_PUBLISHED",
    "MBFCL_SOURCE",
    "PublishedBfcl",
    "REFUSAL_CATEGORIES",
    "RELEVANCE_CATEGORIES",
    "SOURCE_LANGUAGES",
    "BfclMessage",
    "BfclScores",
    "Disagreement",
    "FIGURES",
    "BfclRunner",
    "BfclTask",
    "Turn",
    "AstCheckResult",
    "bfcl_run_scores",
    "bfcl_scores_to_json",
    "bfcl_source",
    "called_intent",
    "called_standard",
    "check_call",
    "check_calls",
    "data_files",
    "function_specs",
    "load_bfcl",
    "normalise",
    "parse_categories",
    "published_for",
    "read_turn",
    "read_value",
    "score_bfcl_run",
]

_WHERE = {
    "choose_items": "aah.benchmark.bfcl.benchmark",
    "ALL_MULTI_TURN": "aah.benchmark.bfcl.tasks",
    "MULTI_TURN_CATEGORIES": "aah.benchmark.bfcl.tasks",
    "BfclEnvironment": "aah.benchmark.bfcl.environments",
    "EnvironmentPair": "aah.benchmark.bfcl.environments",
    "api_classes": "aah.benchmark.bfcl.wheel",
    "bfcl_fence": "aah.benchmark.bfcl.environments",
    "find_bfcl_wheel": "aah.benchmark.bfcl.wheel",
    "ModelCall": "aah.benchmark.bfcl.multi_turn_check",
    "MultiTurnChecker": "aah.benchmark.bfcl.multi_turn_check",
    "MultiTurnVerdict": "aah.benchmark.bfcl.multi_turn_check",
    "check_multi_turn": "aah.benchmark.bfcl.multi_turn_check",
    "parse_call_text": "aah.benchmark.bfcl.multi_turn_check",
    "BfclTurnExecutor": "aah.benchmark.bfcl.multi_turn_run",
    "score_multi_turn_run": "aah.benchmark.bfcl.multi_turn_scoring",
    "MULTI_TURN_FIGURES": "aah.benchmark.bfcl.multi_turn_scoring",
    "EmptyTurnReply": "aah.benchmark.bfcl.multi_turn_scoring",
    "MultiTurnCounts": "aah.benchmark.bfcl.multi_turn_scoring",
    "multi_turn_figures": "aah.benchmark.bfcl.multi_turn_scoring",
    "MULTI_TURN_STEP_LIMIT": "aah.benchmark.bfcl.multi_turn_run",
    "MultiTurnTask": "aah.benchmark.bfcl.multi_turn_tasks",
    "is_multi_turn": "aah.benchmark.bfcl.multi_turn_tasks",
    "load_multi_turn": "aah.benchmark.bfcl.multi_turn_tasks",
    "multi_turn_files": "aah.benchmark.bfcl.multi_turn_tasks",
    "multi_turn_source": "aah.benchmark.bfcl.multi_turn_tasks",
    "Call": "aah.benchmark.bfcl.checker",
    "AstCheckResult": "aah.benchmark.bfcl.checker",
    "check_call": "aah.benchmark.bfcl.checker",
    "check_calls": "aah.benchmark.bfcl.checker",
    "normalise": "aah.benchmark.bfcl.checker",
    "MBFCL_PUBLISHED": "aah.benchmark.bfcl.published",
    "MBFCL_SOURCE": "aah.benchmark.bfcl.published",
    "PublishedBfcl": "aah.benchmark.bfcl.published",
    "published_for": "aah.benchmark.bfcl.published",
    "Turn": "aah.benchmark.bfcl.reading",
    "called_intent": "aah.benchmark.bfcl.reading",
    "called_standard": "aah.benchmark.bfcl.reading",
    "read_turn": "aah.benchmark.bfcl.reading",
    "BFCL_BENCHMARK": "aah.benchmark.bfcl.runner",
    "BfclRunner": "aah.benchmark.bfcl.runner",
    "function_specs": "aah.benchmark.bfcl.runner",
    "FIGURES": "aah.benchmark.bfcl.scoring",
    "BfclScores": "aah.benchmark.bfcl.scoring",
    "Disagreement": "aah.benchmark.bfcl.scoring",
    "bfcl_run_scores": "aah.benchmark.bfcl.scoring",
    "bfcl_scores_to_json": "aah.benchmark.bfcl.scoring",
    "score_bfcl_run": "aah.benchmark.bfcl.scoring",
    "LANGUAGE_TYPES": "aah.benchmark.bfcl.source_values",
    "read_value": "aah.benchmark.bfcl.source_values",
    "ALL_SINGLE_TURN": "aah.benchmark.bfcl.tasks",
    "AST_CATEGORIES": "aah.benchmark.bfcl.tasks",
    "BFCL_SETTING": "aah.benchmark.bfcl.tasks",
    "CATEGORIES": "aah.benchmark.bfcl.tasks",
    "REFUSAL_CATEGORIES": "aah.benchmark.bfcl.tasks",
    "RELEVANCE_CATEGORIES": "aah.benchmark.bfcl.tasks",
    "SOURCE_LANGUAGES": "aah.benchmark.bfcl.tasks",
    "BfclMessage": "aah.benchmark.bfcl.tasks",
    "BfclTask": "aah.benchmark.bfcl.tasks",
    "bfcl_source": "aah.benchmark.bfcl.tasks",
    "data_files": "aah.benchmark.bfcl.tasks",
    "load_bfcl": "aah.benchmark.bfcl.tasks",
    "parse_categories": "aah.benchmark.bfcl.tasks",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
