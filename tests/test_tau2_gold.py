"""The scripted gold player: every task of every domain scores 1 under τ²'s evaluator, NL aside.

τ²'s own evaluator from the pinned wheel gives a gold play reward 1 on
airline 50/50, retail 114/114 and telecom base 114/114 (NL assertions left
out), and 8/10 in mock: the two it cannot reach are ``GOLD_UNREACHABLE``,
each with its reason. The plays run in two forked processes (the domains
read once, before the fork): about 30 s on 2 cores.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tau2_data import domain

from aah.benchmark.tau2 import (
    GOLD_UNREACHABLE,
    grade_simulation,
    load_tau2_tasks,
    new_fence,
    play_gold,
)
from aah.errors import AahError

SETS = [("airline", "base", 50), ("retail", "base", 114), ("telecom", "base", 114),
        ("telecom", "small", 20), ("mock", "base", 10)]  # fmt: skip
# Chunks of about the same work for the two processes (an airline grade takes ~0.6 s).
CHUNK = {"airline": 13, "retail": 29, "telecom": 134, "mock": 10}

Outcome = tuple[str, str, str, float, tuple[str, ...]]


def _play(wheel: Path, name: str, split: str, ids: list[str]) -> list[Outcome]:
    loaded = domain(name, wheel)
    outcomes: list[Outcome] = []
    for task in load_tau2_tasks(loaded, split=split, ids=ids):
        # Generous bounds: a loaded CI machine must not turn a gold call into a stop.
        try:
            play = play_gold(loaded, task, fence=new_fence(120))
        except AahError as exc:
            outcomes.append((name, split, task.id, 0.0, (str(exc),)))
            continue
        grade = grade_simulation(
            loaded, task, play.messages, play.termination, fence=new_fence(600)
        )
        outcomes.append((name, split, task.id, grade.tau2_reward, grade.failures))
    return outcomes


def test_every_gold_play_scores_1_but_the_known_two(tau2_wheel: Path) -> None:
    jobs = []
    for name, split, count in SETS:
        ids = [task.id for task in load_tau2_tasks(domain(name, tau2_wheel), split=split)]
        assert len(ids) == count
        jobs += [(name, split, ids[i : i + CHUNK[name]]) for i in range(0, count, CHUNK[name])]
    started = time.monotonic()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_play, tau2_wheel, *job) for job in jobs]
        outcomes = [outcome for future in futures for outcome in future.result()]
    elapsed = time.monotonic() - started
    assert len(outcomes) == sum(count for _, _, count in SETS) == 308
    failed = {
        (name, task_id): failures
        for name, _, task_id, reward, failures in outcomes
        if reward != 1.0
    }
    assert set(failed) == set(GOLD_UNREACHABLE), failed
    assert "ENV_ASSERTION" in failed["mock", "update_task_with_history_and_env_assertions"][0]
    assert "add_notification" in failed["mock", "update_task_with_user_tools"][0]
    print(f"308 gold plays graded in {elapsed:.1f} s")
