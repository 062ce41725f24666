"""The report's table of MCP servers' questions: asked, answered, declined, waited."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.scoring import ReportTable, format_number

if TYPE_CHECKING:
    from aah.report.build import Report


def elicitation_tables(report: Report) -> list[ReportTable]:
    """Servers' questions per run × setting (none when no server asked)."""
    if not report.elicitation_cells:
        return []
    return [
        ReportTable(
            "Questions from MCP servers",
            [
                "run",
                "setting",
                "sessions",
                "asked",
                "accepted",
                "declined",
                "cancelled",
                "refused",
                "timed out",
                "unanswered",
                "wait median s",
                "wait p90 s",
            ],  # fmt: skip
            [
                [
                    cell.run or "",
                    cell.setting or "(no setting)",
                    str(cell.sessions),
                    str(cell.asked),
                    str(cell.accepted),
                    str(cell.declined),
                    str(cell.cancelled),
                    str(cell.refused),
                    str(cell.timed_out),
                    str(cell.unanswered),
                    format_number(cell.wait_seconds_median),
                    format_number(cell.wait_seconds_p90),
                ]
                for cell in report.elicitation_cells
            ],
            "Elicitations servers sent during tool calls; refused: not shown (not primitives-only "
            "or too big) and declined by aah; timed out: declined at the deadline; wait: seconds "
            "the server waited for its answer.",
        )
    ]
