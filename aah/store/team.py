"""The team half of the session store: roles, assignments, a run's review settings, reviews.

A person not listed in ``people`` is an annotator of no group. An item
(a request) assigned to people or groups is offered only to them
(``OFFERED``, part of the queue's rule); assigned to nobody, it is
everyone's. A review is a row of its own beside the answer it judges: the
person's original is never changed, and a correction is kept with its note.
Names enter as ``annotator_key`` spells them, as in ``HumanRequests``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, NamedTuple

from aah.annotators import MAX_NAME_CHARS, annotator_key, check_annotator_name
from aah.clock import SYSTEM_CLOCK, Clock
from aah.errors import AahError
from aah.store.connection import StoreConnection

Role = Literal["annotator", "reviewer"]
ReviewVerdict = Literal["accept", "correct"]
ROLES: tuple[Role, ...] = ("annotator", "reviewer")
# How many reviewers an item of a run without ``--reviewers`` wants.
DEFAULT_REVIEWERS = 1
# A group is assigned as its name after this mark, so it never reads as a person.
GROUP_MARK = "@"
# A correction or a note holds at most what an answer holds (``aah.desk.MAX_ANSWER_CHARS``).
MAX_REVIEW_CHARS = 4_000
# The most people and groups one item or run is assigned to.
MAX_ASSIGNEES = 100

# Whether an assignment row names :annotator, or a group they are in.
_NAMES_ME = (
    "CASE WHEN g.assignee = :annotator OR g.assignee ="
    f" (SELECT '{GROUP_MARK}' || p.team FROM people AS p WHERE p.name = :annotator)"
    " THEN 1 ELSE 0 END"
)
# Whether request ``r`` is offered to :annotator: its own assignments decide
# when it has any, else its run's, else it is everyone's (max over no rows is NULL).
OFFERED = (
    "COALESCE("
    f"(SELECT max({_NAMES_ME}) FROM assignments AS g WHERE g.request_id = r.id),"
    f" (SELECT max({_NAMES_ME}) FROM assignments AS g WHERE g.run ="
    " (SELECT s2.run FROM sessions AS s2 WHERE s2.id = r.session_id)),"
    " 1) = 1"
)

# The first answer of every request someone answered (the one that reached
# the agent), that :reviewer did not give, has not reviewed, and whose run
# wants more reviews: oldest answer first. Others' reviews are never read.
_TO_REVIEW_SQL = f"""
SELECT r.id AS request_id, a.id AS answer_id
FROM human_answers AS a
JOIN human_requests AS r ON r.id = a.request_id
JOIN sessions AS s ON s.id = r.session_id
LEFT JOIN run_team AS t ON t.run = s.run
WHERE a.id = (SELECT min(first.id) FROM human_answers AS first WHERE first.request_id = r.id)
  AND NOT EXISTS (SELECT 1 FROM human_answers AS mine
                  WHERE mine.request_id = r.id AND mine.annotator = :reviewer)
  AND NOT EXISTS (SELECT 1 FROM reviews AS v WHERE v.request_id = r.id AND v.reviewer = :reviewer)
  AND (SELECT count(*) FROM reviews AS v WHERE v.request_id = r.id)
      < COALESCE(t.reviewers, {DEFAULT_REVIEWERS})
ORDER BY a.created, a.id
"""


class Person(NamedTuple):
    """A member of the team: their name, role and group (None: none)."""

    name: str
    role: Role
    team: str | None


class RunTeam(NamedTuple):
    """What a run asks of its team: reviewers per item, and its guidelines (Markdown)."""

    reviewers: int = DEFAULT_REVIEWERS
    guidelines: str | None = None


class ReviewItem(NamedTuple):
    """An answer (or decision) up for review, as a reviewer sees it: no other reviewer's verdict.

    Attributes:
        request_id: The item.
        answer_id: The answer under review (the first, which reached the agent).
        question: What the agent asked (or the call it wanted approved).
        kind: ``question``, ``approval`` or ``elicitation``.
        annotator: Who answered.
        answer: Their answer's text (a decision's response, a form's JSON).
        declined: Whether they declined.
        decision: Their decision on an approval, if one.
        reason: The reason they gave with a decision.
        run: The item's run, if any.
        edited_arguments: An edit's arguments, as the JSON text stored.
    """

    request_id: str
    answer_id: int
    question: str
    kind: str
    annotator: str
    answer: str
    declined: bool
    decision: str | None
    reason: str | None
    run: str | None
    edited_arguments: str | None = None


class ReviewRecord(NamedTuple):
    """One reviewer's verdict on an item's answer (``annotator``'s, the first), as stored."""

    request_id: str
    annotator: str
    reviewer: str
    verdict: ReviewVerdict
    correction: str | None
    note: str | None
    seconds: float | None
    created: datetime


class Team:
    """Roles, assignments, a run's review settings and reviews in one session database.

    Args:
        connection: The store's connection.
        clock: Where the time of a review is read.
    """

    def __init__(self, connection: StoreConnection, clock: Clock = SYSTEM_CLOCK) -> None:
        self._connection = connection
        self.clock = clock

    # -- people ---------------------------------------------------------------

    def set_person(self, name: str, role: Role = "annotator", team: str | None = None) -> Person:
        """Give ``name`` a role and a group (None: no group), replacing what they had."""
        if role not in ROLES:
            raise AahError(f"a role is one of {', '.join(ROLES)}, not {role!r}")
        person = Person(annotator_key(name), role, team.strip() or None if team else None)
        with self._connection.write() as db:
            db.execute(
                "INSERT INTO people (name, role, team) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET role = excluded.role, team = excluded.team",
                list(person),
            )
        return person

    def person(self, name: str) -> Person:
        """``name``'s role and group; a name not listed is an annotator of no group."""
        key = annotator_key(name)
        rows = self._connection.rows("SELECT role, team FROM people WHERE name = ?", [key])
        if not rows:
            return Person(key, "annotator", None)
        return Person(key, rows[0]["role"], rows[0]["team"])

    def people(self) -> list[Person]:
        """Everyone listed, by name."""
        rows = self._connection.rows("SELECT name, role, team FROM people ORDER BY name")
        return [Person(row["name"], row["role"], row["team"]) for row in rows]

    # -- assignments ------------------------------------------------------------

    def assign(
        self, assignees: Sequence[str], *, request_id: str | None = None, run: str | None = None
    ) -> list[str]:
        """Offer one request (or every request of a run) only to ``assignees``.

        Args:
            assignees: People's names, or groups as ``@group``; replaces the
                request's (or run's) earlier ones. Empty: everyone's again.
            request_id: The request; or
            run: the run.

        Returns:
            The assignees as stored (names in ``annotator_key``'s spelling).
        """
        if (request_id is None) == (run is None):
            raise ValueError("assign one request or one run")
        given = [name for name in assignees if name.strip()]
        if len(given) > MAX_ASSIGNEES:
            raise AahError(
                f"assign to at most {MAX_ASSIGNEES} people or groups, not {len(given)}:"
                " put them in a group (aah web --group NAME:GROUP) and assign @GROUP"
            )
        names = list(dict.fromkeys(_assignee(name) for name in given))
        column, key = ("request_id", request_id) if request_id is not None else ("run", run)
        with self._connection.write() as db:
            # A run may be assigned before it is made (``aah bench run --assign``).
            if (
                request_id is not None
                and db.execute("SELECT 1 FROM human_requests WHERE id = ?", [key]).fetchone()
                is None
            ):
                raise AahError(f"no item {key!r} in this database: pick one the queue lists")
            db.execute(f"DELETE FROM assignments WHERE {column} = ?", [key])
            for name in names:
                db.execute(
                    f"INSERT INTO assignments ({column}, assignee) VALUES (?, ?)", [key, name]
                )
        self._free_from_others(column, key)
        return names

    def _free_from_others(self, column: str, key: str | None) -> None:
        """Drop the claims of people an item is no longer offered to: free it for its assignees."""
        where = "r.id = ?" if column == "request_id" else "s.run = ?"
        held = self._connection.rows(
            "SELECT c.request_id, c.annotator FROM claims AS c"
            " JOIN human_requests AS r ON r.id = c.request_id"
            f" JOIN sessions AS s ON s.id = r.session_id WHERE {where}",
            [key],
        )
        away = [row for row in held if not self.offered_to(row["request_id"], row["annotator"])]
        if away:
            with self._connection.write() as db:
                for row in away:
                    db.execute(
                        "DELETE FROM claims WHERE request_id = ? AND annotator = ?",
                        [row["request_id"], row["annotator"]],
                    )

    def assignees(self, request_id: str) -> list[str]:
        """Who a request is for: its own assignees, else its run's; empty: everyone."""
        own = self._connection.rows(
            "SELECT assignee FROM assignments WHERE request_id = ? ORDER BY id", [request_id]
        )
        if own:
            return [row["assignee"] for row in own]
        rows = self._connection.rows(
            "SELECT g.assignee FROM assignments AS g JOIN sessions AS s ON s.run = g.run"
            " JOIN human_requests AS r ON r.session_id = s.id WHERE r.id = ? ORDER BY g.id",
            [request_id],
        )
        return [row["assignee"] for row in rows]

    def items_starting(self, prefix: str, limit: int = 2) -> list[str]:
        """The ids of up to ``limit`` requests whose id starts with ``prefix``."""
        rows = self._connection.rows(
            "SELECT id FROM human_requests WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            [prefix, prefix + "\U0010ffff", limit],
        )
        return [row["id"] for row in rows]

    def offered_to(self, request_id: str, annotator: str) -> bool:
        """Whether ``request_id`` is offered to ``annotator`` (``OFFERED``)."""
        params = {"id": request_id, "annotator": annotator_key(annotator)}
        rows = self._connection.rows(
            f"SELECT 1 AS yes FROM human_requests AS r WHERE r.id = :id AND {OFFERED}", params
        )
        return bool(rows)

    # -- a run's team settings ----------------------------------------------------

    def set_run_team(
        self, run: str, reviewers: int = DEFAULT_REVIEWERS, guidelines: str | None = None
    ) -> RunTeam:
        """Set how many reviewers each item of ``run`` wants and its guidelines."""
        if reviewers < 0:
            raise AahError(f"--reviewers is a count of people (0 or more), not {reviewers}")
        with self._connection.write() as db:
            db.execute(
                "INSERT INTO run_team (run, reviewers, guidelines) VALUES (?, ?, ?)"
                " ON CONFLICT (run) DO UPDATE SET reviewers = excluded.reviewers,"
                " guidelines = excluded.guidelines",
                [run, reviewers, guidelines],
            )
        return RunTeam(reviewers, guidelines)

    def run_team(self, run: str | None) -> RunTeam:
        """``run``'s team settings; the defaults for a run without any (or no run)."""
        if run is None:
            return RunTeam()
        rows = self._connection.rows(
            "SELECT reviewers, guidelines FROM run_team WHERE run = ?", [run]
        )
        return RunTeam(rows[0]["reviewers"], rows[0]["guidelines"]) if rows else RunTeam()

    def guidelines_for(self, request_id: str) -> str | None:
        """The guidelines of the run a request belongs to, if it has any."""
        rows = self._connection.rows(
            "SELECT t.guidelines FROM human_requests AS r JOIN sessions AS s ON s.id = r.session_id"
            " JOIN run_team AS t ON t.run = s.run WHERE r.id = ?",
            [request_id],
        )
        return rows[0]["guidelines"] if rows else None

    # -- reviews -------------------------------------------------------------------

    def next_review(self, reviewer: str, skipped: Sequence[str] = ()) -> ReviewItem | None:
        """The oldest answer ``reviewer`` may review now, or None.

        Never one of their own items (they answered it), never one they
        reviewed, never one with all the reviews its run asks for; skipped
        items come only when nothing else is left.
        """
        params = {"reviewer": annotator_key(reviewer)}
        rows = self._connection.rows(_TO_REVIEW_SQL, params)
        picked = [row for row in rows if row["request_id"] not in skipped] or rows
        if not picked:
            return None
        return self.review_item(picked[0]["request_id"])

    def review_item(self, request_id: str) -> ReviewItem | None:
        """A request's first answer as a reviewer sees it, or None when nobody answered it."""
        rows = self._connection.rows(
            "SELECT a.id AS answer_id, r.question, r.kind, a.annotator, a.answer, a.declined,"
            " a.decision, a.reason, s.run, a.edited_arguments FROM human_answers AS a"
            " JOIN human_requests AS r ON r.id = a.request_id"
            " JOIN sessions AS s ON s.id = r.session_id"
            " WHERE a.request_id = ? ORDER BY a.id LIMIT 1",
            [request_id],
        )
        if not rows:
            return None
        row = rows[0]
        return ReviewItem(
            request_id,
            int(row["answer_id"]),
            row["question"],
            row["kind"],
            row["annotator"],
            row["answer"],
            bool(row["declined"]),
            row["decision"],
            row["reason"],
            row["run"],
            row["edited_arguments"],
        )

    def add_review(
        self,
        reviewer: str,
        request_id: str,
        verdict: ReviewVerdict,
        *,
        correction: str | None = None,
        note: str | None = None,
        seconds: float | None = None,
    ) -> ReviewRecord:
        """Store ``reviewer``'s verdict on a request's first answer, as a row of its own.

        Raises:
            AahError: Nothing to review there, their own item, a second review
                of it by them, or a correction without its corrected answer.
        """
        key = annotator_key(reviewer)
        if verdict not in ("accept", "correct"):
            raise AahError(f"a review accepts or corrects, not {verdict!r}")
        correction = (correction or "").strip() or None
        note = (note or "").strip() or None
        for text, what in ((correction, "correction"), (note, "note")):
            if text is not None and len(text) > MAX_REVIEW_CHARS:
                raise AahError(
                    f"a {what} holds at most {MAX_REVIEW_CHARS:,} characters, not {len(text):,}:"
                    " shorten it"
                )
        if verdict == "correct" and correction is None:
            raise AahError("type the corrected answer, then send the correction")
        item = self.review_item(request_id)
        if item is None:
            raise AahError("nobody has answered this item yet: open the next one to review")
        created = self.clock.now().isoformat()
        with self._connection.write() as db:
            mine = db.execute(
                "SELECT 1 FROM human_answers WHERE request_id = ? AND annotator = ?",
                [request_id, key],
            ).fetchone()
            if mine is not None:
                raise AahError("you answered this item: someone else reviews it")
            done = db.execute(
                "SELECT 1 FROM reviews WHERE request_id = ? AND reviewer = ?", [request_id, key]
            ).fetchone()
            if done is not None:
                raise AahError("you have reviewed this item already: your first review stands")
            # Two reviewers on the last place at once: the first to send has it.
            given, wanted = db.execute(
                "SELECT (SELECT count(*) FROM reviews WHERE request_id = :id),"
                f" COALESCE((SELECT t.reviewers FROM run_team AS t WHERE t.run = :run),"
                f" {DEFAULT_REVIEWERS})",
                {"id": request_id, "run": item.run},
            ).fetchone()
            if given >= wanted:
                raise AahError("this item has all the reviews its run asks for: open the next one")
            db.execute(
                "INSERT INTO reviews (request_id, annotator, reviewer, verdict, correction,"
                " note, seconds, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [request_id, item.annotator, key, verdict, correction, note, seconds, created],
            )
        return ReviewRecord(
            request_id,
            item.annotator,
            key,
            verdict,
            correction,
            note,
            seconds,
            datetime.fromisoformat(created),
        )

    def reviews(self, request_id: str | None = None) -> list[ReviewRecord]:
        """Every review of one request (None: of every request), oldest first."""
        where, params = ("WHERE request_id = ?", [request_id]) if request_id else ("", [])
        rows = self._connection.rows(f"SELECT * FROM reviews {where} ORDER BY id", params)
        return [_review(row) for row in rows]


def _assignee(name: str) -> str:
    """A person's name as ``check_annotator_name`` keeps it, or ``@group`` with a group name."""
    name = name.strip()
    group = name.startswith(GROUP_MARK)
    try:
        key = check_annotator_name(name[len(GROUP_MARK) :] if group else name)
    except ValueError as exc:
        raise AahError(f"cannot assign to {name[: MAX_NAME_CHARS + 1]!r}: {exc}") from None
    return GROUP_MARK + key if group else key


def _review(row: dict[str, Any]) -> ReviewRecord:
    created = row["created"]
    return ReviewRecord(
        row["request_id"],
        row["annotator"],
        row["reviewer"],
        row["verdict"],
        row["correction"],
        row["note"],
        row["seconds"],
        created if isinstance(created, datetime) else datetime.fromisoformat(created),
    )


class AnswerFigure(NamedTuple):
    """One person's answer as the team's figures read it."""

    request_id: str
    session_id: str
    annotator: str
    answer: str
    declined: bool
    decision: str | None
    seconds: float | None


class GradeFigure(NamedTuple):
    """One stored verdict on a session: who gave it (a model, or ``human:<name>``) and what."""

    session_id: str
    grader_model: str
    verdict: str


class TeamRows(NamedTuple):
    """What the team's figures are computed from, for some runs."""

    answers: list[AnswerFigure]
    reviews: list[ReviewRecord]
    grades: list[GradeFigure]
    # How many items each person was offered (assigned to them, their group or nobody).
    offered: dict[str, int]


def _in_runs(runs: Sequence[str] | None, column: str = "s.run") -> tuple[str, list[Any]]:
    if runs is None:
        return "1 = 1", []
    if not runs:
        return "1 = 0", []
    return f"{column} IN ({', '.join('?' for _ in runs)})", list(runs)


def team_rows(team: Team, runs: Sequence[str] | None) -> TeamRows:
    """The answers, reviews, grades and offered counts of ``runs`` (None: every run)."""
    rows = team._connection.rows
    where, params = _in_runs(runs)
    answers = [
        AnswerFigure(
            row["request_id"],
            row["session_id"],
            row["annotator"],
            row["answer"],
            bool(row["declined"]),
            row["decision"],
            row["seconds"],
        )
        for row in rows(
            "SELECT a.request_id, r.session_id, a.annotator, a.answer, a.declined, a.decision,"
            " a.seconds FROM human_answers AS a JOIN human_requests AS r ON r.id = a.request_id"
            f" JOIN sessions AS s ON s.id = r.session_id WHERE {where} ORDER BY a.id",
            params,
        )
    ]
    reviews = [
        _review(row)
        for row in rows(
            "SELECT v.* FROM reviews AS v JOIN human_requests AS r ON r.id = v.request_id"
            f" JOIN sessions AS s ON s.id = r.session_id WHERE {where} ORDER BY v.id",
            params,
        )
    ]
    grades = [
        GradeFigure(row["session_id"], row["grader_model"], row["verdict"])
        for row in rows(
            "SELECT g.session_id, g.grader_model, g.verdict FROM grades AS g"
            f" JOIN sessions AS s ON s.id = g.session_id WHERE {where} ORDER BY g.created, g.id",
            params,
        )
    ]
    names = sorted(
        {a.annotator for a in answers}
        | {v.reviewer for v in reviews}
        | {person.name for person in team.people()}
    )
    offered: dict[str, int] = {}
    for name in names:
        counted = rows(
            "SELECT count(*) AS n FROM human_requests AS r JOIN sessions AS s"
            f" ON s.id = r.session_id WHERE {_named(where)} AND {OFFERED}",
            {"annotator": name, **{f"run{i}": run for i, run in enumerate(params)}},
        )
        offered[name] = int(counted[0]["n"])
    return TeamRows(answers, reviews, grades, offered)


def _named(where: str) -> str:
    """``where`` with its ``?`` placeholders as ``:run0``, ``:run1``... (OFFERED names its own)."""
    parts = where.split("?")
    return "".join(
        part + (f":run{i}" if i < len(parts) - 1 else "") for i, part in enumerate(parts)
    )
