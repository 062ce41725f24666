"""The team in the report: each person's work, the reviews, and how far people agree.

The same figures as the web app's Results tab (``aah.desk.team``): items
done of those offered, median time from opening an item to sending it, the
share of their answers the reviewers accepted, and the reviewers' agreement
with each other (percent and Cohen's kappa), each reviewer blind to the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aah.desk import TeamFigures
from aah.scoring import (
    NO_DATA,
    NOT_REPORTED,
    RATE_NOTE,
    PairAgreement,
    ReportTable,
    format_number,
    format_rate,
    proportion_to_json,
)

if TYPE_CHECKING:
    from aah.report.build import Report


def _pair(found: PairAgreement) -> dict[str, Any]:
    return {"agreement": proportion_to_json(found.agreement), "kappa": found.kappa}


def team_to_json(team: TeamFigures | None) -> dict[str, Any]:
    """The team's figures under the report's ``agreement`` (empty: no team figures)."""
    if team is None:
        return {}
    return {
        "team": {
            "answered": team.answered,
            "reviewed": team.reviewed,
            "annotators": _pair(team.annotators),
            "reviewers": _pair(team.reviewers),
            "people": [
                {
                    "name": p.name,
                    "role": p.role,
                    "done": p.done,
                    "offered": p.offered,
                    "median_seconds": p.median_seconds,
                    "accepted": proportion_to_json(p.accepted),
                    "reviews_given": p.reviews_given,
                    "review_median_seconds": p.review_median_seconds,
                    "vs_people": {o: _pair(a) for o, a in p.vs_people.items()},
                    "vs_grader": _pair(p.vs_grader),
                    "vs_reviewers": {o: _pair(a) for o, a in p.vs_reviewers.items()},
                }
                for p in team.people
            ],
        }
    }


def team_tables(report: Report) -> list[ReportTable]:
    """One table a person, with the reviewers' agreement in its caption (none without a team)."""
    team = report.team
    if team is None or not team.people:
        return []
    rows = [
        [
            p.name,
            p.role,
            f"{p.done}/{p.offered}",
            format_number(p.median_seconds, 1),
            format_rate(p.accepted) if p.accepted.n else NOT_REPORTED,
            str(p.reviews_given),
            format_number(p.review_median_seconds, 1),
        ]
        for p in team.people
    ]
    reviewers = team.reviewers
    pooled = (
        f"reviewers agree {format_rate(reviewers.agreement)},"
        f" kappa {format_number(reviewers.kappa, 3)}"
        if reviewers.agreement.n
        else f"reviewers agree: {NO_DATA}"
    )
    return [
        ReportTable(
            f"The team ({team.reviewed} of {team.answered} answered items reviewed)",
            ["person", "role", "done/offered", "median s", "accepted by reviewers"]
            + ["reviews given", "median s a review"],
            rows,
            f"{RATE_NOTE}; {pooled}; time from opening an item to sending it.",
        )
    ]
