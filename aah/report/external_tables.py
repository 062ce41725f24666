"""The report's table of external agents: MCP clients asking aah's people (``aah mcp serve``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.scoring import ReportTable, external_to_json, format_number

if TYPE_CHECKING:
    from aah.report.build import Report


def external_tables(report: Report) -> list[ReportTable]:
    """Each external agent's asking and approval metrics (none without external agents)."""
    if not report.external:
        return []
    rows = [
        [
            agent.agent,
            str(agent.sessions),
            str(agent.questions),
            format_number(agent.questions_per_session),
            str(agent.answered),
            str(agent.fallbacks),
            str(agent.declined),
            str(agent.waiting),
            format_number(agent.answer_seconds_median),
            format_number(agent.answer_seconds_p90),
            ", ".join(f"{who} {n}" for who, n in agent.answered_by.items()),
            str(agent.approval_calls),
            ", ".join(f"{name.replace('_', ' ')} {n}" for name, n in agent.approvals.items() if n),
            format_number(agent.decide_seconds_median),
            format_number(agent.decide_seconds_p90),
        ]
        for agent in report.external
    ]
    columns = [
        "agent",
        "sessions",
        "questions",
        "per session",
        "answered",
        "fallbacks",
        "declined",
        "waiting",
        "answer median s",
        "answer p90 s",
        "answered by",
        "approval calls",
        "decisions",
        "decide median s",
        "decide p90 s",
    ]
    return [
        ReportTable(
            "External agents (MCP clients of aah mcp serve)",
            columns,
            rows,
            "Questions by ask_human, each counted once however often re-asked; time to answer "
            "from the question entering the queue to a person's answer; fallbacks: the deadline "
            "passed unanswered. Calls by request_approval, ended as science.md §7 counts them.",
        )
    ]


def external_csv_rows(report: Report) -> list[list[object]]:
    """The external agents as CSV rows, header first; dictionaries as ``name=count`` lists."""
    if not report.external:
        return []
    objects = [external_to_json(agent) for agent in report.external]
    names = list(objects[0])
    rows: list[list[object]] = [["external_agents", *names]]
    for data in objects:
        row: list[object] = ["external_agents"]
        for name in names:
            value = data[name]
            if isinstance(value, dict):
                value = " ".join(f"{key}={count}" for key, count in value.items())
            row.append(value)
        rows.append(row)
    return rows
