"""Scoring: metrics, intervals, repeats, error patterns, agreement (any benchmark).

The grader, behaviour classes and reports export their own names from
``aah.scoring.grader``, ``aah.scoring.behavior`` and ``aah.report``.

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
    from aah.scoring.errors import error_patterns
    from aah.scoring.external import (
        EXTERNAL_MODEL_PREFIX,
        ExternalAgentAsking,
        external_to_json,
        is_external,
        load_external_agents,
    )
    from aah.scoring.intervals import Proportion, wilson
    from aah.scoring.metrics import (
        CellMetrics,
        TaskOutcome,
        cell_to_json,
        compute_metrics,
        load_outcomes,
    )
    from aah.scoring.repeats import (
        Estimate,
        base_task_id,
        bootstrap_mean,
        pass_at_k,
        pass_hat_k,
        repeat_scores,
    )

__all__ = [
    "ApprovalCall",
    "ApprovalCell",
    "approval_calls",
    "approval_cell_to_json",
    "approval_metrics",
    "load_approval_calls",
    "HUMAN_GRADER_PREFIX",
    "EXTERNAL_MODEL_PREFIX",
    "ExternalAgentAsking",
    "external_to_json",
    "is_external",
    "load_external_agents",
    "CellMetrics",
    "Proportion",
    "TaskOutcome",
    "Estimate",
    "base_task_id",
    "bootstrap_mean",
    "cell_to_json",
    "compute_metrics",
    "error_patterns",
    "load_outcomes",
    "pass_at_k",
    "pass_hat_k",
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
    "EXTERNAL_MODEL_PREFIX": "aah.scoring.external",
    "ExternalAgentAsking": "aah.scoring.external",
    "external_to_json": "aah.scoring.external",
    "is_external": "aah.scoring.external",
    "load_external_agents": "aah.scoring.external",
    "CellMetrics": "aah.scoring.metrics",
    "Proportion": "aah.scoring.intervals",
    "TaskOutcome": "aah.scoring.metrics",
    "cell_to_json": "aah.scoring.metrics",
    "compute_metrics": "aah.scoring.metrics",
    "error_patterns": "aah.scoring.errors",
    "load_outcomes": "aah.scoring.metrics",
    "Estimate": "aah.scoring.repeats",
    "base_task_id": "aah.scoring.repeats",
    "bootstrap_mean": "aah.scoring.repeats",
    "pass_at_k": "aah.scoring.repeats",
    "pass_hat_k": "aah.scoring.repeats",
    "repeat_scores": "aah.scoring.repeats",
    "wilson": "aah.scoring.intervals",
}


__getattr__ = lazy_getattr(__name__, _WHERE)
