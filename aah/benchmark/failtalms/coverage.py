"""How well the benchmark's derivation went: matches, facts and hard cases per setting."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from aah.benchmark.failtalms.dataset import Task
from aah.benchmark.failtalms.derive import LOW_SIMILARITY, MatchKind
from aah.benchmark.failtalms.settings import SETTINGS, Setting

_SHORT = 90  # characters of a query shown in a hard case


class SettingCoverage(BaseModel):
    """How well one setting's derivation went."""

    setting: Setting
    total: int
    self_matched: int
    exact: int
    fuzzy: int
    ambiguous: int
    unmatched: int
    low_similarity: int
    facts_nonempty: int | None = None
    same_as_original: int | None = None
    nothing_unavailable: int | None = None
    missing_endpoints: list[str] = Field(default_factory=list)


class HardCase(BaseModel):
    """A task whose derivation deserves a look, with the reasons."""

    id: str
    reasons: list[str]
    similarity: float
    query: str
    original: str | None


class CoverageReport(BaseModel):
    """Coverage per setting, in ``SETTINGS`` order, and the hard cases."""

    settings: list[SettingCoverage]
    hard_cases: list[HardCase]


def measure_coverage(tasks: Sequence[Task]) -> CoverageReport:
    """Count how each setting's tasks were derived and list the hard cases.

    A hard case has a similarity below ``LOW_SIMILARITY``, an ambiguous or
    missing original, no hidden facts (under-specified), no unavailable
    endpoint (replaceable / non-replaceable) or endpoints the registry lacks.
    """
    by_setting: dict[Setting, list[Task]] = defaultdict(list)
    for task in tasks:
        by_setting[task.setting].append(task)
    rows = [_setting_coverage(s, by_setting[s]) for s in SETTINGS if s in by_setting]
    hard = [case for task in tasks if (case := _hard_case(task)) is not None]
    return CoverageReport(settings=rows, hard_cases=hard)


def _setting_coverage(setting: Setting, tasks: list[Task]) -> SettingCoverage:
    def count(kind: MatchKind) -> int:
        return sum(task.match == kind for task in tasks)

    missing = dict.fromkeys(name for task in tasks for name in task.missing_endpoints)
    with_unavailable = setting in ("replaceable", "nonreplaceable")
    return SettingCoverage(
        setting=setting,
        total=len(tasks),
        self_matched=count("self"),
        exact=count("exact"),
        fuzzy=count("fuzzy"),
        ambiguous=count("ambiguous"),
        unmatched=count("unmatched"),
        low_similarity=sum(_low(task) for task in tasks),
        facts_nonempty=sum(bool(t.hidden_facts) for t in tasks)
        if setting == "underspecified"
        else None,
        same_as_original=sum(t.query == t.original_query for t in tasks)
        if setting == "underspecified"
        else None,
        nothing_unavailable=sum(not t.unavailable for t in tasks) if with_unavailable else None,
        missing_endpoints=sorted(missing),
    )


def _low(task: Task) -> bool:
    return task.original_query is not None and task.similarity < LOW_SIMILARITY


def _hard_case(task: Task) -> HardCase | None:
    reasons = []
    if _low(task):
        reasons.append(f"similarity {task.similarity:.2f}")
    if task.match in ("ambiguous", "unmatched"):
        reasons.append(task.match)
    if task.setting == "underspecified":
        if not task.hidden_facts:
            # Word for word its original: nothing was removed, so nothing is hidden.
            same = task.query == task.original_query
            reasons.append(
                "no hidden facts: " + ("same text as its original" if same else "no words removed")
            )
        if task.match == "fuzzy":  # the original found lists other endpoints
            reasons.append("endpoints differ from the original's")
    if task.setting in ("replaceable", "nonreplaceable") and not task.unavailable:
        reasons.append("nothing unavailable")
    if task.missing_endpoints:
        reasons.append(f"missing {', '.join(task.missing_endpoints)}")
    if not reasons:
        return None
    return HardCase(
        id=task.id,
        reasons=reasons,
        similarity=task.similarity,
        query=_shorten(task.query),
        original=_shorten(task.original_query) if task.original_query else None,
    )


def _shorten(text: str) -> str:
    return text if len(text) <= _SHORT else text[: _SHORT - 1].rstrip() + "…"
