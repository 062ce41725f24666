"""Scoring: grader, metrics, behaviour classes, error patterns, reports (any benchmark).

Public names load lazily (PEP 562), so importing one light module of the
package does not load the heavy ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.scoring.agreement import HUMAN_GRADER_PREFIX
    from aah.scoring.approvals import (
        ApprovalCall,
        ApprovalCell,
        approval_calls,
        approval_cell_to_json,
        approval_metrics,
        load_approval_calls,
    )
    from aah.scoring.behavior import Classification, behavior_report, classify_reply
    from aah.scoring.errors import error_patterns
    from aah.scoring.grader import (
        GradeSummary,
        MajorityVoteGrader,
        grade_run,
        grade_session,
        majority_vote,
        parse_vote,
    )
    from aah.scoring.intervals import Proportion, wilson
    from aah.scoring.metrics import (
        CellMetrics,
        TaskOutcome,
        cell_to_json,
        compute_metrics,
        load_outcomes,
    )
    from aah.scoring.repeats import base_task_id, pass_at_k, pass_hat_k, repeat_scores
    from aah.scoring.report import build_report, render_html, render_json

__all__ = [
    "ApprovalCall",
    "ApprovalCell",
    "approval_calls",
    "approval_cell_to_json",
    "approval_metrics",
    "load_approval_calls",
    "HUMAN_GRADER_PREFIX",
    "CellMetrics",
    "Classification",
    "GradeSummary",
    "MajorityVoteGrader",
    "Proportion",
    "TaskOutcome",
    "base_task_id",
    "behavior_report",
    "build_report",
    "cell_to_json",
    "classify_reply",
    "compute_metrics",
    "error_patterns",
    "grade_run",
    "grade_session",
    "load_outcomes",
    "majority_vote",
    "parse_vote",
    "pass_at_k",
    "pass_hat_k",
    "render_html",
    "render_json",
    "repeat_scores",
    "wilson",
]

_WHERE = {
    "ApprovalCall": "aah.scoring.approvals",
    "ApprovalCell": "aah.scoring.approvals",
    "approval_calls": "aah.scoring.approvals",
    "approval_cell_to_json": "aah.scoring.approvals",
    "approval_metrics": "aah.scoring.approvals",
    "load_approval_calls": "aah.scoring.approvals",
    "HUMAN_GRADER_PREFIX": "aah.scoring.agreement",
    "CellMetrics": "aah.scoring.metrics",
    "Classification": "aah.scoring.behavior.classes",
    "GradeSummary": "aah.scoring.grader.vote",
    "MajorityVoteGrader": "aah.scoring.grader.vote",
    "Proportion": "aah.scoring.intervals",
    "TaskOutcome": "aah.scoring.metrics",
    "behavior_report": "aah.scoring.behavior.classes",
    "build_report": "aah.scoring.report.build",
    "cell_to_json": "aah.scoring.metrics",
    "classify_reply": "aah.scoring.behavior.classes",
    "compute_metrics": "aah.scoring.metrics",
    "error_patterns": "aah.scoring.errors",
    "grade_run": "aah.scoring.grader.vote",
    "grade_session": "aah.scoring.grader.vote",
    "load_outcomes": "aah.scoring.metrics",
    "majority_vote": "aah.scoring.grader.vote",
    "parse_vote": "aah.scoring.grader.vote",
    "base_task_id": "aah.scoring.repeats",
    "pass_at_k": "aah.scoring.repeats",
    "pass_hat_k": "aah.scoring.repeats",
    "render_html": "aah.scoring.report.html",
    "render_json": "aah.scoring.report.build",
    "repeat_scores": "aah.scoring.repeats",
    "wilson": "aah.scoring.intervals",
}


__getattr__ = lazy_getattr(__name__, _WHERE)
