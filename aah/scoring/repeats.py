"""Repeated runs of the same tasks (``aah bench run --epochs K``): pass@k, pass^k, agreement.

A run with epochs holds each task several times, one session per epoch, the
repeats' task ids carrying ``#epoch<e>`` (epoch 1 keeps the plain id; see
``aah.benchmark.batch.epoch_task_id``). Per run × setting, the sessions are
grouped by task; a task with ``n`` judged trials of which ``c`` passed gives,
as τ²-bench and Inspect define them (Chen et al. 2021's unbiased estimator):

- pass@k = 1 - C(n - c, k) / C(n, k): some of k trials drawn from the n passes;
- pass^k = C(c, k) / C(n, k): all k trials drawn from the n pass.

Each is averaged over the tasks with n ≥ k. A trial is judged when it has a
verdict: a session that ended in error or was skipped is a failed trial (as
in PR), an ungraded or unfinished one is left out of its task's n.

**Intervals.** The per-task values are fractions, not counts, so a Wilson
interval does not apply to them; the interval is a percentile bootstrap over
tasks (``BOOTSTRAP_RESAMPLES`` resamples of the tasks with replacement, 95%,
a fixed seed so that a report is reproducible). It reflects the spread
between tasks, the unit that was sampled; trials of one task are not
independent draws of the cell.

**Agreement across epochs.** ``unanimous``: the share of tasks (with two or
more judged trials) whose trials all passed or all failed, with its Wilson
interval; ``pairwise``: the mean, over those tasks, of the share of pairs of
its trials that agree.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any, NamedTuple

from aah.scoring.intervals import Proportion, wilson
from aah.scoring.metrics import TaskOutcome, passes
from aah.scoring.settings import SETTINGS

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 13
CONFIDENCE = 0.95
_EPOCH = re.compile(r"#epoch(\d+)$")


def base_task_id(task_id: str) -> str:
    """The task a repeat belongs to: ``perfect-12#epoch3`` -> ``perfect-12``."""
    return _EPOCH.sub("", task_id)


def epoch_of(task_id: str) -> int:
    """The epoch a task id names (1 for a plain id)."""
    found = _EPOCH.search(task_id)
    return int(found.group(1)) if found else 1


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that some of ``k`` of ``n`` trials (``c`` passed) pass: 1 - C(n-c,k)/C(n,k).

    Raises:
        ValueError: Not 0 ≤ c ≤ n and 1 ≤ k ≤ n.
    """
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all ``k`` of ``n`` trials (``c`` passed) pass: C(c,k)/C(n,k).

    Raises:
        ValueError: Not 0 ≤ c ≤ n and 1 ≤ k ≤ n.
    """
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


class Estimate(NamedTuple):
    """A mean over tasks with its bootstrap interval; value and bounds None without tasks."""

    value: float | None
    low: float | None
    high: float | None
    tasks: int


def bootstrap_mean(values: Sequence[float], seed: int = BOOTSTRAP_SEED) -> Estimate:
    """The mean of ``values`` with a 95% percentile bootstrap interval."""
    if not values:
        return Estimate(None, None, None, 0)
    mean = sum(values) / len(values)
    if len(set(values)) == 1:
        return Estimate(mean, mean, mean, len(values))
    rng = random.Random(seed)
    size = len(values)
    means = sorted(sum(rng.choices(values, k=size)) / size for _ in range(BOOTSTRAP_RESAMPLES))
    tail = (1 - CONFIDENCE) / 2
    low = means[int(tail * (BOOTSTRAP_RESAMPLES - 1))]
    high = means[int((1 - tail) * (BOOTSTRAP_RESAMPLES - 1) + 0.5)]
    return Estimate(mean, low, high, size)


@dataclass(frozen=True)
class RepeatScores:
    """pass@k, pass^k and agreement across epochs of one run × setting.

    Attributes:
        tasks: Tasks with at least one judged trial.
        epochs: The most trials any task has.
        least_trials: The fewest judged trials of a task (k up to this is over every task).
        pass_at: pass@k by k = 1..epochs.
        pass_hat: pass^k by k = 1..epochs.
        unanimous: Tasks whose trials all agree, over tasks with two or more.
        pairwise: Mean share of agreeing trial pairs per task; None without such tasks.
    """

    run: str | None
    setting: str | None
    tasks: int
    epochs: int
    least_trials: int
    pass_at: dict[int, Estimate]
    pass_hat: dict[int, Estimate]
    unanimous: Proportion
    pairwise: float | None


def task_trials(outcomes: Iterable[TaskOutcome]) -> dict[str, tuple[int, int]]:
    """``(n judged trials, c passed)`` per task id (repeats folded into their task)."""
    trials: dict[str, list[int]] = {}
    for outcome in outcomes:
        if outcome.passed is None:  # ungraded or unfinished: no trial to count yet
            continue
        key = base_task_id(outcome.task_id or outcome.session_id)
        counts = trials.setdefault(key, [0, 0])
        counts[0] += 1
        counts[1] += passes(outcome)
    return {task: (n, c) for task, (n, c) in trials.items()}


def repeat_scores(
    run: str | None, setting: str | None, outcomes: Sequence[TaskOutcome]
) -> RepeatScores:
    """The repeat scores of one cell's sessions."""
    trials = task_trials(outcomes)
    epochs = max((n for n, _ in trials.values()), default=0)
    pass_at: dict[int, Estimate] = {}
    pass_hat: dict[int, Estimate] = {}
    for k in range(1, epochs + 1):
        eligible = [(n, c) for n, c in trials.values() if n >= k]
        pass_at[k] = bootstrap_mean([pass_at_k(n, c, k) for n, c in eligible])
        pass_hat[k] = bootstrap_mean([pass_hat_k(n, c, k) for n, c in eligible])
    repeated = [(n, c) for n, c in trials.values() if n >= 2]
    pairs = [(comb(c, 2) + comb(n - c, 2)) / comb(n, 2) for n, c in repeated]
    return RepeatScores(
        run=run,
        setting=setting,
        tasks=len(trials),
        epochs=epochs,
        least_trials=min((n for n, _ in trials.values()), default=0),
        pass_at=pass_at,
        pass_hat=pass_hat,
        unanimous=wilson(sum(1 for n, c in repeated if c in (0, n)), len(repeated)),
        pairwise=sum(pairs) / len(pairs) if pairs else None,
    )


def cells_with_repeats(outcomes: Sequence[TaskOutcome]) -> list[RepeatScores]:
    """Repeat scores per run × setting, for the runs that hold repeats; run, then setting order."""
    repeated_runs = {o.run for o in outcomes if o.task_id and epoch_of(o.task_id) > 1}
    by_cell: dict[tuple[str | None, str | None], list[TaskOutcome]] = {}
    for outcome in outcomes:
        if outcome.run in repeated_runs:
            by_cell.setdefault((outcome.run, outcome.setting), []).append(outcome)

    def order(cell: tuple[str | None, str | None]) -> tuple[str, int, str]:
        run, setting = cell
        rank = SETTINGS.index(setting) if setting in SETTINGS else len(SETTINGS)
        return (run or "", rank, setting or "")

    return [
        repeat_scores(run, setting, by_cell[run, setting])
        for run, setting in sorted(by_cell, key=order)
    ]


def repeat_to_json(scores: RepeatScores) -> dict[str, Any]:
    """One cell's repeat scores as JSON (keys as ``RepeatScores``; k as text keys)."""
    return {
        "run": scores.run,
        "setting": scores.setting,
        "tasks": scores.tasks,
        "epochs": scores.epochs,
        "least_trials": scores.least_trials,
        "pass_at": {str(k): v._asdict() for k, v in scores.pass_at.items()},
        "pass_hat": {str(k): v._asdict() for k, v in scores.pass_hat.items()},
        "unanimous": scores.unanimous._asdict(),
        "pairwise": scores.pairwise,
    }
