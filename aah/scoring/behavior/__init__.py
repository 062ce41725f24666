"""When2Call behaviour classes of agent turns: rules, the LLM judge, rates and scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.scoring.behavior.classes import (
        BEHAVIOR_CLASSES,
        BehaviorClass,
        Classification,
        ConfusionMatrix,
        HallucinationRates,
        JudgeVotes,
        SessionTurns,
        TurnClass,
        behavior_report,
        classify_with_llm,
        confusion,
        gold_pairs,
        hallucination_rates,
        load_judge_prompt,
        tally_votes,
        turn_class,
    )
    from aah.scoring.behavior.rules import CLASS_NAMES, classify_reply

__all__ = [
    "BEHAVIOR_CLASSES",
    "CLASS_NAMES",
    "BehaviorClass",
    "Classification",
    "ConfusionMatrix",
    "HallucinationRates",
    "JudgeVotes",
    "SessionTurns",
    "TurnClass",
    "behavior_report",
    "classify_reply",
    "classify_with_llm",
    "confusion",
    "gold_pairs",
    "hallucination_rates",
    "load_judge_prompt",
    "tally_votes",
    "turn_class",
]

_WHERE = {
    "BEHAVIOR_CLASSES": "aah.scoring.behavior.classes",
    "CLASS_NAMES": "aah.scoring.behavior.rules",
    "BehaviorClass": "aah.scoring.behavior.classes",
    "Classification": "aah.scoring.behavior.classes",
    "ConfusionMatrix": "aah.scoring.behavior.classes",
    "HallucinationRates": "aah.scoring.behavior.classes",
    "SessionTurns": "aah.scoring.behavior.classes",
    "TurnClass": "aah.scoring.behavior.classes",
    "behavior_report": "aah.scoring.behavior.classes",
    "classify_reply": "aah.scoring.behavior.rules",
    "classify_with_llm": "aah.scoring.behavior.classes",
    "confusion": "aah.scoring.behavior.classes",
    "gold_pairs": "aah.scoring.behavior.classes",
    "hallucination_rates": "aah.scoring.behavior.classes",
    "load_judge_prompt": "aah.scoring.behavior.classes",
    "tally_votes": "aah.scoring.behavior.classes",
    "JudgeVotes": "aah.scoring.behavior.classes",
    "turn_class": "aah.scoring.behavior.classes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
