"""Agreement: the grader against people, annotators among themselves, people against sims.

Three checks of how far the report's numbers can be trusted:

- **Grader vs human labels.** A person's verdict on a session is stored as a
  grade whose ``grader_model`` starts with ``human:``. Every session that has
  one and an LLM grade (any other grader except ``published``, the paper's
  imported scores) gives a pair (latest human label, latest LLM grade).
  Reported as percent agreement and Cohen's kappa with N, beside the figure
  the Fail-TaLMs paper reports for its own grader (83.2% agreement).
- **Annotators.** A human request answered by two or more annotators (its
  ``human_answers``) is an overlapped item. Every pair of answers to one
  request is compared on the 0/1 rating of the question (pairs where both
  rated it) and on declining or not; then, for each pair of annotators,
  Cohen's kappa over the requests both answered.
- **Human vs simulated.** Two runs that differ only in who answered (run
  manifest ``human``: ``queue`` for people, ``simulated`` or ``oracle`` for a
  stand-in) are compared on the task ids both ran: pass rate and interaction
  ratio side by side.

With no selected runs, every session and request in the store is read,
interactive ones included: people label and answer those too. A check with
nothing to compare has N = 0; a kappa is None where it is undefined (no items,
or both raters always gave the one same label).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, NamedTuple

from aah.scoring.intervals import Proportion, wilson
from aah.scoring.metrics import TaskOutcome, passes
from aah.store import RunRecord, SessionStore

# The Fail-TaLMs paper's reported agreement between its human graders and its LLM grader.
PAPER_GRADER_HUMAN_AGREEMENT = 0.832
HUMAN_GRADER_PREFIX = "human:"
PUBLISHED_GRADER = "published"
HUMAN_KIND = "queue"
STAND_IN_KINDS = ("simulated", "oracle")
# Manifest fields that must match for two runs to differ only in who answered.
SAME_SETUP_FIELDS = ("model", "aah", "http", "unavailable", "step_limit", "registry_hash")


class PairAgreement(NamedTuple):
    """How often two raters agree over N items, and Cohen's kappa.

    Attributes:
        agreement: Items rated alike, out of N, with its Wilson interval.
        kappa: Cohen's kappa; None when N is 0 or chance agreement is 1.
    """

    agreement: Proportion
    kappa: float | None


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters' labels, one ``(first, second)`` pair per item.

    kappa = (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e
    the agreement expected from each rater's own label shares.
    """
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(first == second for first, second in pairs) / n
    firsts = Counter(first for first, _ in pairs)
    seconds = Counter(second for _, second in pairs)
    expected = sum(firsts[label] * seconds[label] for label in firsts) / (n * n)
    if expected >= 1.0:
        return None  # both always gave one label: agreement beyond chance is undefined
    return (observed - expected) / (1.0 - expected)


def pair_agreement(pairs: Sequence[tuple[Hashable, Hashable]]) -> PairAgreement:
    """Percent agreement (with interval) and Cohen's kappa of labelled pairs."""
    agreed = sum(first == second for first, second in pairs)
    return PairAgreement(wilson(agreed, len(pairs)), cohen_kappa(pairs))


# -- grader vs human labels -----------------------------------------------------


class GradeRow(NamedTuple):
    """One stored grade: which session, who graded it, the verdict."""

    session_id: str
    grader_model: str
    verdict: str


@dataclass(frozen=True)
class GraderHumanAgreement:
    """The LLM grader against people's labels on the same sessions.

    Attributes:
        result: Agreement and kappa over the sessions with both (N = pairs).
        paper_agreement: The paper's reported human–grader agreement.
    """

    result: PairAgreement
    paper_agreement: float = PAPER_GRADER_HUMAN_AGREEMENT


def grader_human_agreement(grades: Iterable[GradeRow]) -> GraderHumanAgreement:
    """Compare each session's latest human label with its latest LLM grade.

    Args:
        grades: Grades oldest first, so that a later one replaces an earlier.
    """
    human: dict[str, str] = {}
    machine: dict[str, str] = {}
    for grade in grades:
        if grade.grader_model.startswith(HUMAN_GRADER_PREFIX):
            human[grade.session_id] = grade.verdict
        elif grade.grader_model != PUBLISHED_GRADER:
            machine[grade.session_id] = grade.verdict
    pairs = [(human[sid], machine[sid]) for sid in sorted(human.keys() & machine.keys())]
    return GraderHumanAgreement(pair_agreement(pairs))


# -- annotators ---------------------------------------------------------------


class AnswerRow(NamedTuple):
    """One annotator's answer to a human request."""

    request_id: str
    annotator: str
    declined: bool
    rating: int | None


@dataclass(frozen=True)
class AnnotatorPair:
    """Two annotators compared over the requests both answered."""

    first: str
    second: str
    rating: PairAgreement
    declined: PairAgreement


@dataclass(frozen=True)
class AnnotatorAgreement:
    """Agreement among people who answered the same requests.

    Attributes:
        requests: Requests answered by two or more annotators.
        rating: Answer pairs that gave the same 0/1 rating (both rated).
        declined: Answer pairs that agreed on declining or answering.
        pairs: Per pair of annotators, agreement and kappa.
    """

    requests: int
    rating: Proportion
    declined: Proportion
    pairs: list[AnnotatorPair]


def annotator_agreement(answers: Iterable[AnswerRow]) -> AnnotatorAgreement:
    """Pairwise agreement over every request with at least two answers."""
    by_request: dict[str, dict[str, AnswerRow]] = {}
    for answer in answers:
        by_request.setdefault(answer.request_id, {})[answer.annotator] = answer
    overlapped = {rid: found for rid, found in by_request.items() if len(found) >= 2}
    rated = [
        (a.rating, b.rating)
        for found in overlapped.values()
        for a, b in combinations(found.values(), 2)
        if a.rating is not None and b.rating is not None
    ]
    declined = [
        (a.declined, b.declined)
        for found in overlapped.values()
        for a, b in combinations(found.values(), 2)
    ]
    return AnnotatorAgreement(
        requests=len(overlapped),
        rating=wilson(sum(a == b for a, b in rated), len(rated)),
        declined=wilson(sum(a == b for a, b in declined), len(declined)),
        pairs=_annotator_pairs(overlapped),
    )


def _annotator_pairs(overlapped: Mapping[str, Mapping[str, AnswerRow]]) -> list[AnnotatorPair]:
    names = sorted({name for found in overlapped.values() for name in found})
    pairs: list[AnnotatorPair] = []
    for first, second in combinations(names, 2):
        both = [(f[first], f[second]) for f in overlapped.values() if first in f and second in f]
        if not both:
            continue
        rated = [
            (a.rating, b.rating) for a, b in both if a.rating is not None and b.rating is not None
        ]
        declined = [(a.declined, b.declined) for a, b in both]
        pairs.append(AnnotatorPair(first, second, pair_agreement(rated), pair_agreement(declined)))
    return pairs


# -- people vs a stand-in -------------------------------------------------------


@dataclass(frozen=True)
class HumanVsSimulated:
    """A run answered by people beside one answered by a stand-in, on shared tasks.

    Attributes:
        human_run: The run whose questions people answered (``queue``).
        simulated_run: The run whose questions a stand-in answered.
        simulated_kind: ``simulated`` or ``oracle``.
        tasks: Task ids both runs have a session for.
        pass_rate: (people, stand-in) pass rates over the shared tasks.
        interaction: (people, stand-in) interaction ratios over those not skipped.
    """

    human_run: str
    simulated_run: str
    simulated_kind: str
    tasks: int
    pass_rate: tuple[Proportion, Proportion]
    interaction: tuple[Proportion, Proportion]


def human_vs_simulated(
    runs: Sequence[RunRecord], outcomes: Iterable[TaskOutcome], task_of: Mapping[str, str]
) -> list[HumanVsSimulated]:
    """Compare every people-answered run with each stand-in run of the same setup.

    Args:
        runs: The runs to consider, with their manifests.
        outcomes: Their sessions' outcomes.
        task_of: Each session's task id, by session id.
    """
    by_run: dict[str, dict[str, TaskOutcome]] = {}
    for outcome in outcomes:
        task_id = task_of.get(outcome.session_id)
        if outcome.run is not None and task_id is not None:
            by_run.setdefault(outcome.run, {})[task_id] = outcome
    people = [r for r in runs if r.manifest.get("human") == HUMAN_KIND]
    stand_ins = [r for r in runs if r.manifest.get("human") in STAND_IN_KINDS]
    found: list[HumanVsSimulated] = []
    for human_run in people:
        for other in stand_ins:
            if not _same_setup(human_run.manifest, other.manifest):
                continue
            mine, theirs = by_run.get(human_run.name, {}), by_run.get(other.name, {})
            shared = sorted(mine.keys() & theirs.keys())
            if not shared:
                continue
            ours = [mine[t] for t in shared]
            stand_in = [theirs[t] for t in shared]
            found.append(
                HumanVsSimulated(
                    human_run=human_run.name,
                    simulated_run=other.name,
                    simulated_kind=str(other.manifest["human"]),
                    tasks=len(shared),
                    pass_rate=(_pass_rate(ours), _pass_rate(stand_in)),
                    interaction=(_interaction(ours), _interaction(stand_in)),
                )
            )
    return found


def _same_setup(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    return all(first.get(key) == second.get(key) for key in SAME_SETUP_FIELDS)


def _pass_rate(tasks: Sequence[TaskOutcome]) -> Proportion:
    return wilson(sum(passes(task) for task in tasks), len(tasks))


def _interaction(tasks: Sequence[TaskOutcome]) -> Proportion:
    attempted = [task for task in tasks if not task.skipped]
    return wilson(sum(task.asked > 0 for task in attempted), len(attempted))


# -- all three from the store ---------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """The three agreement checks of a report."""

    grader_human: GraderHumanAgreement
    annotators: AnnotatorAgreement
    human_vs_simulated: list[HumanVsSimulated]


def load_agreement(
    store: SessionStore,
    runs: Sequence[RunRecord],
    outcomes: Sequence[TaskOutcome],
    task_of: Mapping[str, str],
    everything: bool = False,
) -> Agreement:
    """Read grades and answers from ``store`` and run the three checks.

    Args:
        store: The session store.
        runs: The runs reported on.
        outcomes: Their sessions' outcomes.
        task_of: Each session's task id, by session id.
        everything: Read every session's grades and answers, those outside
            any run included, instead of only those of ``runs``.
    """
    names = None if everything else [run.name for run in runs]
    with store.queries() as read:
        grades = [GradeRow(*grade) for grade in read.grade_verdicts(names, outside_runs=everything)]
        answers = [
            AnswerRow(*answer) for answer in read.annotator_answers(names, outside_runs=everything)
        ]
    return Agreement(
        grader_human=grader_human_agreement(grades),
        annotators=annotator_agreement(answers),
        human_vs_simulated=human_vs_simulated(runs, outcomes, task_of),
    )
