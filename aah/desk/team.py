"""A team at the desk: the reviewer's pass, and each person's figures.

A reviewer takes the oldest answer they did not give and have not
reviewed, sees it alone (never another reviewer's verdict: each is blind
to the others until the figures compare them), and accepts it or corrects
it with a note; the correction is a row of its own, and the person's
original stays as it was. Only people with the reviewer role, or an admin,
review.

The figures compare people as ``aah.scoring.agreement`` compares raters:
percent agreement with its Wilson interval, and Cohen's kappa.
"""

from __future__ import annotations

import statistics
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from aah.annotators import annotator_key, check_annotator_name
from aah.clock import Clock
from aah.errors import AahError
from aah.peer_read import NotARegularFile, PeerBound, PeerOutOfBounds, read_file
from aah.scoring import (
    GradeRow,
    PairAgreement,
    Proportion,
    grader_human_agreement,
    pair_agreement,
    wilson,
)
from aah.store import (
    AnswerFigure,
    Person,
    ReviewItem,
    ReviewRecord,
    ReviewVerdict,
    SessionStore,
    TeamRows,
    team_rows,
)

HUMAN_LABEL_PREFIX = "human:"


def answer_label(answer: AnswerFigure) -> str:
    """What two people's answers are compared on: a decline, a decision, or the words.

    Words compare without case or extra spaces, so ``Porto`` and `` porto``
    agree.
    """
    if answer.declined:
        return "(declined)"
    if answer.decision is not None:
        return f"({answer.decision})"
    return " ".join(answer.answer.casefold().split())


@dataclass(frozen=True)
class PersonFigures:
    """One person's figures over the runs shown.

    Attributes:
        name: Their name.
        role: ``annotator`` or ``reviewer``.
        done: Items they answered.
        offered: Items offered to them (assigned to them, their group, or nobody).
        median_seconds: Median time from opening an item to sending it.
        vs_people: Agreement with each other person over the items both answered.
        vs_grader: Their Pass/Fail labels against the LLM grader's verdicts.
        accepted: Reviews of their answers that accepted them, out of all.
        reviews_given: Items they reviewed.
        review_median_seconds: Their median time per review.
        vs_reviewers: Agreement with each other reviewer over the items both reviewed.
    """

    name: str
    role: str
    done: int
    offered: int
    median_seconds: float | None
    vs_people: dict[str, PairAgreement]
    vs_grader: PairAgreement
    accepted: Proportion
    reviews_given: int
    review_median_seconds: float | None
    vs_reviewers: dict[str, PairAgreement]


@dataclass(frozen=True)
class ItemFigures:
    """One item answered or reviewed by several people, and how far they agreed.

    Attributes:
        request_id: The item.
        answers: How many people answered it.
        answer_agreement: Pairs of those answers that agree.
        reviews: How many reviewed it.
        review_agreement: Pairs of reviewers whose verdicts agree.
    """

    request_id: str
    answers: int
    answer_agreement: Proportion
    reviews: int
    review_agreement: Proportion


@dataclass(frozen=True)
class TeamFigures:
    """Everyone's figures, the items several people saw, and the pooled agreements."""

    people: list[PersonFigures]
    items: list[ItemFigures]
    annotators: PairAgreement
    reviewers: PairAgreement
    reviewed: int
    answered: int


def team_figures(store: SessionStore, runs: Sequence[str] | None = None) -> TeamFigures:
    """Each person's progress, time and agreement over ``runs`` (None: every run)."""
    return figures_from_rows(
        team_rows(store.team, runs), {p.name: p.role for p in store.team.people()}
    )


def figures_from_rows(rows: TeamRows, roles: dict[str, str]) -> TeamFigures:
    """``team_figures`` from rows already read (``aah.store.team.team_rows``)."""
    by_request: dict[str, dict[str, str]] = defaultdict(dict)
    for answer in rows.answers:
        by_request[answer.request_id].setdefault(answer.annotator, answer_label(answer))
    verdicts: dict[str, dict[str, str]] = defaultdict(dict)
    for review in rows.reviews:
        verdicts[review.request_id].setdefault(review.reviewer, review.verdict)
    answered_by = {rid: next(iter(found)) for rid, found in by_request.items()}
    names = sorted(set(rows.offered) | {a.annotator for a in rows.answers})
    people = [
        _person(name, roles.get(name, "annotator"), rows, by_request, verdicts, answered_by)
        for name in names
    ]
    items = [
        ItemFigures(
            rid,
            len(by_request.get(rid, {})),
            _pairs_agreeing(by_request.get(rid, {})),
            len(verdicts.get(rid, {})),
            _pairs_agreeing(verdicts.get(rid, {})),
        )
        for rid in sorted(set(by_request) | set(verdicts))
        if len(by_request.get(rid, {})) > 1 or len(verdicts.get(rid, {})) > 1
    ]
    return TeamFigures(
        people,
        items,
        pair_agreement(_all_pairs(by_request.values())),
        pair_agreement(_all_pairs(verdicts.values())),
        reviewed=len(verdicts),
        answered=len(by_request),
    )


def _person(
    name: str,
    role: str,
    rows: TeamRows,
    by_request: dict[str, dict[str, str]],
    verdicts: dict[str, dict[str, str]],
    answered_by: dict[str, str],
) -> PersonFigures:
    mine = [a for a in rows.answers if a.annotator == name]
    reviews = [v for v in rows.reviews if v.reviewer == name]
    of_mine = [v for v in rows.reviews if answered_by.get(v.request_id) == name]
    labels = [GradeRow(g.session_id, g.grader_model, g.verdict) for g in rows.grades]
    own_labels = [
        g
        for g in labels
        if not g.grader_model.startswith(HUMAN_LABEL_PREFIX)
        or annotator_key(g.grader_model[len(HUMAN_LABEL_PREFIX) :]) == name
    ]
    return PersonFigures(
        name=name,
        role=role,
        done=len({a.request_id for a in mine}),
        offered=rows.offered.get(name, 0),
        median_seconds=_median(a.seconds for a in mine),
        vs_people=_versus(name, by_request),
        vs_grader=grader_human_agreement(own_labels).result,
        accepted=wilson(sum(v.verdict == "accept" for v in of_mine), len(of_mine)),
        reviews_given=len(reviews),
        review_median_seconds=_median(v.seconds for v in reviews),
        vs_reviewers=_versus(name, verdicts),
    )


def _versus(name: str, labelled: dict[str, dict[str, str]]) -> dict[str, PairAgreement]:
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for found in labelled.values():
        if name in found:
            for other, label in found.items():
                if other != name:
                    pairs[other].append((found[name], label))
    return {other: pair_agreement(pairs[other]) for other in sorted(pairs)}


def _all_pairs(labelled: Iterable[dict[str, str]]) -> list[tuple[str, str]]:
    return [(found[a], found[b]) for found in labelled for a, b in combinations(sorted(found), 2)]


def _pairs_agreeing(found: dict[str, str]) -> Proportion:
    pairs = _all_pairs([found])
    return wilson(sum(a == b for a, b in pairs), len(pairs))


def _median(values: Iterable[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


# -- the reviewer's pass ---------------------------------------------------------------


class ReviewDesk:
    """The reviewer's pass for every reviewer of one face: next item, accept, correct.

    Args:
        store: The session store.
        clock: Where the time is read (the store's by default): the seconds
            from opening an item to sending its review.
    """

    def __init__(self, store: SessionStore, clock: Clock | None = None) -> None:
        self.store = store
        self.clock = clock or store.clock
        self._opened: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def may_review(self, reviewer: str, admin: bool = False) -> bool:
        """Whether ``reviewer`` reviews: the reviewer role, or an admin."""
        return admin or self.store.team.person(reviewer).role == "reviewer"

    def _check(self, reviewer: str, admin: bool) -> None:
        if not self.may_review(reviewer, admin):
            raise AahError(
                "only reviewers review: ask your admin to run aah web --reviewer YOUR_NAME"
            )

    def next_for(
        self, reviewer: str, *, admin: bool = False, skipped: Sequence[str] = ()
    ) -> ReviewItem | None:
        """The next item ``reviewer`` may review, opened for them (its time starts), or None."""
        self._check(reviewer, admin)
        item = self.store.team.next_review(reviewer, skipped)
        if item is not None:
            with self._lock:
                self._opened[(annotator_key(reviewer), item.request_id)] = self.clock.monotonic()
        return item

    def review(
        self,
        reviewer: str,
        request_id: str,
        verdict: ReviewVerdict,
        *,
        correction: str | None = None,
        note: str | None = None,
        admin: bool = False,
    ) -> ReviewRecord:
        """Store ``reviewer``'s verdict on ``request_id``'s answer, with the time it took."""
        self._check(reviewer, admin)
        key = (annotator_key(reviewer), request_id)
        with self._lock:
            opened = self._opened.get(key)
        seconds = None if opened is None else max(0.0, self.clock.monotonic() - opened)
        record = self.store.team.add_review(
            reviewer, request_id, verdict, correction=correction, note=note, seconds=seconds
        )
        with self._lock:
            self._opened.pop(key, None)
        return record


# -- a run's team settings ------------------------------------------------------------

# A run's guidelines are read for people, not machines: a few pages at most.
MAX_GUIDELINES_BYTES = 64 * 1024


def read_guidelines(path: Path) -> str:
    """The Markdown of ``--guidelines FILE``, at most ``MAX_GUIDELINES_BYTES``, as UTF-8 text.

    Raises:
        AahError: no such file, not a regular file, too large, or not UTF-8 (one line).
    """
    where = f"--guidelines {path}"
    try:
        data = read_file(path, PeerBound(f"{where}: the file", MAX_GUIDELINES_BYTES, verb="holds"))
        return data.decode("utf-8")
    except PeerOutOfBounds:
        raise AahError(
            f"{where}: the file is more than {MAX_GUIDELINES_BYTES:,} bytes: "
            "keep the guidelines to a few pages"
        ) from None
    except NotARegularFile:
        raise AahError(f"{where}: is not a regular file: give a Markdown file") from None
    except FileNotFoundError:
        raise AahError(f"{where}: no such file: check the path") from None
    except IsADirectoryError:
        raise AahError(f"{where}: is a folder: give a Markdown file") from None
    except UnicodeDecodeError:
        raise AahError(f"{where}: the file is not UTF-8 text: save it as UTF-8") from None
    except OSError as exc:
        raise AahError(f"{where}: cannot be read ({exc.strerror}): check its permissions") from None


def set_up_run_team(
    store: SessionStore,
    run: str,
    *,
    reviewers: int | None = None,
    guidelines: Path | None = None,
    assign: Sequence[str] = (),
) -> None:
    """Store what ``aah bench run --reviewers/--guidelines/--assign`` asked of ``run``'s team.

    What is not given keeps its value from an earlier start of the run.
    """
    text = read_guidelines(guidelines) if guidelines is not None else None
    if reviewers is not None or text is not None:
        before = store.team.run_team(run)
        store.team.set_run_team(
            run,
            before.reviewers if reviewers is None else reviewers,
            before.guidelines if text is None else text,
        )
    names = [name for given in assign for name in given.split(",") if name.strip()]
    if names:
        store.team.assign(names, run=run)


def set_groups(store: SessionStore, given: Sequence[str]) -> list[Person]:
    """Put each ``NAME:GROUP`` of ``aah web --group`` in that group, keeping their role.

    Raises:
        AahError: no group given, or a name or group that ``check_annotator_name`` refuses.
    """
    people = []
    for spec in given:
        name, _, group = spec.partition(":")
        try:
            checked = check_annotator_name(name)
            team = check_annotator_name(group) if group.strip() else ""
        except ValueError as exc:
            raise AahError(f"--group {spec}: {exc}") from None
        if not team:
            raise AahError(f"--group {spec}: give NAME:GROUP, e.g. --group ann:nl")
        people.append(store.team.set_person(checked, store.team.person(checked).role, team))
    return people


def set_reviewers(store: SessionStore, given: Sequence[str]) -> list[Person]:
    """Give each ``NAME`` or ``NAME:GROUP`` of ``aah web --reviewer`` the reviewer role.

    A colon never appears in a name (``check_annotator_name``), so it parts them.

    Raises:
        AahError: a name that ``check_annotator_name`` refuses (one line).
    """
    people = []
    for spec in given:
        name, _, group = spec.partition(":")
        try:
            checked = check_annotator_name(name)
        except ValueError as exc:
            raise AahError(f"--reviewer {spec}: {exc}") from None
        before = store.team.person(checked)
        people.append(store.team.set_person(checked, "reviewer", group.strip() or before.team))
    return people
