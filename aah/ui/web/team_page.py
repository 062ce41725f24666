"""The team's figures on the Results tab: each person's progress, time and agreement.

One table a person (items done of those offered, median time from opening an
item to sending it, agreement with each other person, with the LLM grader,
and with the reviewers), the pooled agreements, and the items several people
answered or reviewed. Every name and figure is escaped.
"""

from __future__ import annotations

import html

from aah.desk import ItemFigures, PersonFigures, TeamFigures
from aah.scoring import PairAgreement, Proportion

# How many items several people saw are listed, the least agreed first.
ITEMS_SHOWN = 20


def share(found: Proportion) -> str:
    """``3/4 (75%)``, or ``-`` with nothing to count."""
    if found.n == 0 or found.value is None:
        return "-"
    return f"{found.k}/{found.n} ({found.value:.0%})"


def agreement(found: PairAgreement) -> str:
    """Percent agreement with Cohen's kappa: ``3/4 (75%) κ 0.69``."""
    if found.agreement.n == 0:
        return "-"
    kappa = "" if found.kappa is None else f" κ {found.kappa:.2f}"
    return share(found.agreement) + kappa


def seconds(value: float | None) -> str:
    """A median time as people read it: ``12.3 s``, ``2m 05s``; ``-`` when none."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes}m {rest:02d}s"


def _versus(found: dict[str, PairAgreement]) -> str:
    if not found:
        return "-"
    return "<br>".join(f"{html.escape(other)}: {agreement(a)}" for other, a in found.items())


def _person_row(person: PersonFigures) -> str:
    cells = [
        f"<b>{html.escape(person.name)}</b>",
        html.escape(person.role),
        f"{person.done}/{person.offered}",
        seconds(person.median_seconds),
        _versus(person.vs_people),
        agreement(person.vs_grader),
        share(person.accepted),
        f"{person.reviews_given} ({seconds(person.review_median_seconds)})"
        if person.reviews_given
        else "-",
        _versus(person.vs_reviewers),
    ]
    label = ("person", "role", "done", "median", "people", "grader", "accepted", "reviews", "rev")
    return (
        "<tr>"
        + "".join(
            f'<td data-label="{name}">{cell}</td>' for name, cell in zip(label, cells, strict=True)
        )
        + "</tr>"
    )


def _item_row(item: ItemFigures) -> str:
    return (
        f"<tr><td><code>{html.escape(item.request_id[:8])}</code></td>"
        f"<td>{item.answers}</td><td>{share(item.answer_agreement)}</td>"
        f"<td>{item.reviews}</td><td>{share(item.review_agreement)}</td></tr>"
    )


def team_html(figures: TeamFigures) -> str:
    """The team's figures as an HTML block for the Results tab."""
    if not figures.people:
        return '<div id="aah-team"><p>No answers yet: the team\'s figures show here.</p></div>'
    summary = (
        f"<p><b>{figures.reviewed}</b> of <b>{figures.answered}</b> answered items reviewed"
        f" · annotators agree {agreement(figures.annotators)}"
        f" · reviewers agree {agreement(figures.reviewers)}</p>"
    )
    head = (
        "<tr><th>Person</th><th>Role</th><th>Done / offered</th><th>Median time</th>"
        "<th>Agreement with each person</th><th>With the grader (their labels)</th>"
        "<th>Accepted by reviewers</th><th>Reviews given (median)</th>"
        "<th>Agreement with each reviewer</th></tr>"
    )
    rows = "".join(_person_row(person) for person in figures.people)
    parts = [
        '<div id="aah-team"><h3>The team</h3>',
        summary,
        f'<div class="aah-team-scroll"><table class="aah-team-table">{head}{rows}</table></div>',
    ]
    if figures.items:
        least = sorted(
            figures.items,
            key=lambda i: (i.review_agreement.value or 0) + (i.answer_agreement.value or 0),
        )[:ITEMS_SHOWN]
        parts.append(
            "<details><summary>Items several people answered or reviewed "
            f"({len(figures.items)}, the least agreed first)</summary>"
            '<div class="aah-team-scroll"><table class="aah-team-items"><tr><th>Item</th>'
            "<th>Answers</th><th>Answers agree</th><th>Reviews</th><th>Reviews agree</th></tr>"
            + "".join(_item_row(item) for item in least)
            + "</table></div></details>"
        )
    return "\n".join(parts) + "</div>"


# The team's tables, the item under review and a run's guidelines: added to the app's CSS.
TEAM_CSS = """
.aah-team-scroll { overflow-x: auto; max-width: 100%; }
table.aah-team-table, table.aah-team-items { border-collapse: collapse; font-size: 0.9em; }
table.aah-team-table th, table.aah-team-table td, table.aah-team-items th, table.aah-team-items td {
  padding: 0.25em 0.5em; border-bottom: 1px solid #ddd; vertical-align: top; text-align: left;
}
.aah-review-text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.2em 0; font: inherit;
  background: #f7f7f7; color: #222; padding: 0.3em 0.5em; border-radius: 4px; }
.aah-guidelines { border: 1px solid #ccc; border-radius: 6px; padding: 0.3em 0.6em;
  margin: 0.4em 0; overflow-wrap: anywhere; max-height: 40vh; overflow-y: auto; }
.aah-guidelines h1, .aah-guidelines h2, .aah-guidelines h3 { font-size: 1.05em; margin: 0.3em 0; }
#review-buttons { flex-wrap: wrap; gap: 0.4em; }
#review-buttons button { min-height: 2.75em; }
@media (max-width: 640px) {
  table.aah-team-table tr:first-child { display: none; }
  table.aah-team-table tr { display: block; border-bottom: 1px solid #ccc; padding: 0.35em 0; }
  table.aah-team-table td { display: block; border: 0; padding: 0.05em 0.25em; }
  table.aah-team-table td::before { content: attr(data-label) ": "; font-weight: 600; }
  .aah-guidelines { max-height: none; }
}
"""
