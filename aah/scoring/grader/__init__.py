"""The pass verdict: a majority vote of LLM graders over a session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.scoring.grader.case import load_case, render_prompt
    from aah.scoring.grader.vote import (
        DEFAULT_TEMPERATURE,
        DEFAULT_VOTE_RETRIES,
        DEFAULT_VOTES,
        RAW_VOTE_CHARS,
        GradeSummary,
        MajorityVoteGrader,
        check_vote_settings,
        grade_run,
        grade_session,
        majority_vote,
        parse_vote,
        quorum,
    )

__all__ = [
    "DEFAULT_TEMPERATURE",
    "DEFAULT_VOTES",
    "DEFAULT_VOTE_RETRIES",
    "RAW_VOTE_CHARS",
    "GradeSummary",
    "MajorityVoteGrader",
    "check_vote_settings",
    "grade_run",
    "grade_session",
    "load_case",
    "majority_vote",
    "parse_vote",
    "quorum",
    "render_prompt",
]

_WHERE = {
    "DEFAULT_TEMPERATURE": "aah.scoring.grader.vote",
    "DEFAULT_VOTES": "aah.scoring.grader.vote",
    "DEFAULT_VOTE_RETRIES": "aah.scoring.grader.vote",
    "RAW_VOTE_CHARS": "aah.scoring.grader.vote",
    "GradeSummary": "aah.scoring.grader.vote",
    "MajorityVoteGrader": "aah.scoring.grader.vote",
    "check_vote_settings": "aah.scoring.grader.vote",
    "grade_run": "aah.scoring.grader.vote",
    "grade_session": "aah.scoring.grader.vote",
    "load_case": "aah.scoring.grader.case",
    "majority_vote": "aah.scoring.grader.vote",
    "parse_vote": "aah.scoring.grader.vote",
    "quorum": "aah.scoring.grader.vote",
    "render_prompt": "aah.scoring.grader.case",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
