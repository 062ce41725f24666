"""The report's approval tables: rates per run and setting, and each decision per session."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from aah.scoring import ReportTable, approval_cell_to_json, format_number, format_rate

if TYPE_CHECKING:
    from aah.report.build import Report

# Arguments in the per-session table are cut to this many characters.
_ARGUMENT_CHARS = 80


def approval_tables(report: Report) -> list[ReportTable]:
    """The approval rates per run × setting and each decision (none without approvals)."""
    if not report.approval_cells:
        return []
    rates = ReportTable(
        "Approvals (science.md §7)",
        [
            "run",
            "setting",
            "sessions",
            "calls",
            "approved",
            "edited",
            "rejected",
            "responded",
            "timed out",
            "terminated",
            "undecided",
            "decide median s",
            "decide p90 s",
            "PR with edits",
            "PR without edits",
        ],  # fmt: skip
        [
            [
                cell.run or "",
                cell.setting or "(no setting)",
                str(cell.sessions),
                str(cell.calls),
                format_rate(cell.approved),
                format_rate(cell.edited),
                format_rate(cell.rejected),
                format_rate(cell.responded),
                format_rate(cell.timed_out),
                format_rate(cell.terminated),
                str(cell.undecided),
                format_number(cell.decide_seconds_median),
                format_number(cell.decide_seconds_p90),
                format_rate(cell.pass_rate_with_edits),
                format_rate(cell.pass_rate_without_edits),
            ]
            for cell in report.approval_cells
        ],
        "Rates per call needing approval, with 95% Wilson intervals; time to decide from the "
        "call's first request to its decision; PR over sessions with / without an edited call.",
        keys=2,
    )
    decisions = ReportTable(
        "Approval decisions per session",
        ["run", "session", "tool", "outcome", "by", "seconds", "proposed", "ran with", "reason"],
        [
            [
                call.run or "",
                call.session_id[:12],
                call.tool,
                (call.outcome or "waiting").replace("_", " "),
                call.decided_by,
                format_number(call.decide_seconds),
                _arguments(call.proposed),
                _arguments(call.executed) if call.executed is not None else "",
                call.reason,
            ]
            for call in report.approval_calls
        ],
        "Each call that needed approval and its one decision; 'ran with' shows an edit's "
        "arguments.",
        keys=2,
    )
    return [rates, decisions]


def _arguments(arguments: dict[str, object]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _ARGUMENT_CHARS else text[: _ARGUMENT_CHARS - 1] + "…"


def approval_csv_rows(report: Report) -> list[list[object]]:
    """The approval cells as CSV rows, header first; a proportion spreads over five columns."""
    objects = [approval_cell_to_json(cell) for cell in report.approval_cells]
    if not objects:
        return []
    names = list(objects[0])
    spread = [name for name in names if isinstance(objects[0][name], dict)]
    parts = ("value", "low", "high", "k", "n")
    header: list[object] = ["approvals"]
    header += [
        f"{name}_{part}" if name in spread else name
        for name in names
        for part in (parts if name in spread else ("",))
    ]
    rows: list[list[object]] = [header]
    for data in objects:
        row: list[object] = ["approvals"]
        for name in names:
            if name in spread:
                row += [data[name][part] for part in parts]
            else:
                row.append(data[name])
        rows.append(row)
    return rows
