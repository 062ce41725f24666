"""A τ² run's figures per domain: pass^k over epochs, reward components, ends, questions, turns.

pass^k per task is C(c, k) / C(n, k) over its n epochs with c successes
(science.md §9), averaged over the domain's tasks, for k = 1..n (the fewest
epochs any task has, as τ²'s own metrics take it). The per-task values are
fractions, so every pass^k's interval is the percentile bootstrap over
tasks that repeated runs of every benchmark use (``aah.scoring.repeats``:
tasks resampled with replacement, 95%, a fixed seed). pass^1 is also a
proportion, the share of simulations that reached reward 1 (the same
figure when every task has the same epochs), and is reported with its
Wilson interval too. NL assertions are reported apart: how many
simulations wait for their verdicts, and the reward of those that have them.
Published leaderboard figures are shown beside, with their source and setup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aah.benchmark.batch import EPOCH_MARK
from aah.scoring import Estimate, Proportion, bootstrap_mean, pass_hat_k, wilson
from aah.store import SessionStore

LEADERBOARD = "τ²-bench leaderboard, https://taubench.com (standard setup, user simulator gpt-5.2)"
# pass^1 per domain on the leaderboard (percent), and retail's pass^4.
LEADERBOARD_PASS1: Mapping[str, Mapping[str, float]] = {
    "Claude Opus 4.5": {"airline": 84.0, "retail": 79.6, "telecom": 92.3},
    "GPT-5.2": {"airline": 83.0, "retail": 81.6, "telecom": 89.7},
}
LEADERBOARD_PASS4 = {"retail": 52.0}


@dataclass
class Tau2Scores:
    """One run's figures in one domain."""

    run: str
    domain: str
    aah: bool
    tasks: int
    sessions: int
    epochs: int
    # pass^k for k = 1..epochs: the mean over tasks with its bootstrap interval over tasks.
    pass_hat: list[Estimate] = field(default_factory=list)
    # Simulations that reached reward 1, of all: pass^1 read as a proportion (Wilson).
    pass_1: Proportion = field(default_factory=lambda: wilson(0, 0))
    components: dict[str, Proportion] = field(default_factory=dict)
    terminations: Counter[str] = field(default_factory=Counter)
    nl_pending: int = 0
    questions_per_task: float = 0.0
    turns_per_task: float = 0.0
    # Simulations whose NL assertions all hold, per aah's grader (of those judged).
    nl: Proportion | None = None


def tau2_run_scores(store: SessionStore, run: str, aah: bool | None) -> list[Tau2Scores]:
    """The run's figures per domain (only graded sessions count)."""
    from aah.benchmark.tau2.nl import NL_GRADER
    from aah.benchmark.tau2.runner import tau2_results

    rows = tau2_results(store, run)
    questions: Counter[str] = Counter()
    turns: Counter[str] = Counter()
    with store.queries() as queries:
        for mark in queries.turn_marks([run]):
            if mark.kind == "human_question":
                questions[mark.session_id] += 1
            elif mark.kind == "turn_ended":
                turns[mark.session_id] += 1
        nl_votes = dict(queries.grade_votes([run], NL_GRADER))
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_domain.setdefault(str(row.get("task_id") or "?").split("/", 1)[0], []).append(row)
    out = []
    for name, found in sorted(by_domain.items()):
        scores = _domain_scores(run, name, bool(aah), found, questions, turns)
        judged = [nl_votes[r["session_id"]] for r in found if r["session_id"] in nl_votes]
        if judged:
            held = sum(
                1 for verdicts in judged if all(v.get("verdict") == "pass" for v in verdicts)
            )
            scores.nl = wilson(held, len(judged))
        out.append(scores)
    return out


def _domain_scores(
    run: str,
    domain: str,
    aah: bool,
    rows: Sequence[dict[str, Any]],
    questions: Mapping[str, int],
    turns: Mapping[str, int],
) -> Tau2Scores:
    per_task: dict[str, list[bool]] = {}
    for row in rows:
        base = str(row["task_id"]).split(EPOCH_MARK, 1)[0]
        per_task.setdefault(base, []).append(bool(row.get("success")))
    epochs = min(len(outcomes) for outcomes in per_task.values())
    scores = Tau2Scores(run, domain, aah, len(per_task), len(rows), epochs)
    scores.pass_hat = pass_hat_estimates(per_task.values(), epochs)
    scores.pass_1 = wilson(sum(sum(o) for o in per_task.values()), len(rows))
    met: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for row in rows:
        for name, value in (row.get("components") or {}).items():
            seen[name] += 1
            met[name] += 1 if value == 1.0 else 0
        scores.terminations[str(row.get("termination"))] += 1
        scores.nl_pending += 1 if row.get("nl_pending") else 0
    scores.components = {name: wilson(met[name], seen[name]) for name in sorted(seen)}
    sessions = [str(row["session_id"]) for row in rows]
    scores.questions_per_task = sum(questions.get(s, 0) for s in sessions) / len(sessions)
    scores.turns_per_task = sum(turns.get(s, 0) for s in sessions) / len(sessions)
    return scores


def pass_hat_estimates(outcomes: Iterable[Sequence[bool]], most: int) -> list[Estimate]:
    """pass^k for k = 1..``most`` over tasks (each a sequence of its epochs' successes).

    Each is the mean over tasks of C(c, k) / C(n, k), with the seeded
    bootstrap interval over tasks of ``aah.scoring.repeats``; every task
    needs at least ``most`` epochs.
    """
    trials = [(len(o), sum(o)) for o in outcomes]
    return [bootstrap_mean([pass_hat_k(n, c, k) for n, c in trials]) for k in range(1, most + 1)]


def tau2_scores_to_json(scores: Tau2Scores) -> dict[str, Any]:
    """A domain's figures as JSON (the report's ``tau2`` list)."""

    def proportion(p: Proportion) -> dict[str, Any]:
        return {"k": p.k, "n": p.n, "value": p.value, "low": p.low, "high": p.high}

    return {
        "run": scores.run,
        "domain": scores.domain,
        "aah": scores.aah,
        "tasks": scores.tasks,
        "sessions": scores.sessions,
        "epochs": scores.epochs,
        # Each {"k", "value", "low", "high", "tasks"}: the bootstrap interval over tasks.
        "pass_k": [{"k": k, **e._asdict()} for k, e in enumerate(scores.pass_hat, 1)],
        "pass_1_simulations": proportion(scores.pass_1),
        "components": {name: proportion(p) for name, p in scores.components.items()},
        "terminations": dict(scores.terminations),
        "nl_pending": scores.nl_pending,
        "nl_assertions_hold": proportion(scores.nl) if scores.nl is not None else None,
        "questions_per_task": scores.questions_per_task,
        "turns_per_task": scores.turns_per_task,
        "published": {
            "source": LEADERBOARD,
            "pass_1": {
                model: figures.get(scores.domain) for model, figures in LEADERBOARD_PASS1.items()
            },
            "pass_4": LEADERBOARD_PASS4.get(scores.domain),
        },
    }
