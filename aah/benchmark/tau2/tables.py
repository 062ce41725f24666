"""τ²'s part of the report: per run and domain, pass^k, reward components, ends, questions, turns.

Plain and Aah runs side by side (the manifest's ``aah`` says which); the
published leaderboard figures are a table of their own, with their source
and setup (``aah.benchmark.tau2.scores``).
"""

from __future__ import annotations

from collections.abc import Sequence

from aah.benchmark.tau2.scores import (
    LEADERBOARD,
    LEADERBOARD_PASS1,
    LEADERBOARD_PASS4,
    Tau2Scores,
)
from aah.scoring import RATE_NOTE, ReportTable, format_estimate, format_rate


def tau2_tables(runs: Sequence[Tau2Scores]) -> list[ReportTable]:
    """The τ² tables; none without τ² runs."""
    if not runs:
        return []
    most = max(scores.epochs for scores in runs)
    components = sorted({name for scores in runs for name in scores.components})
    rows = []
    for scores in runs:
        passes = [format_estimate(p) for p in scores.pass_hat]
        passes += ["—"] * (most - len(passes))
        ends = ", ".join(f"{n} {end}" for end, n in scores.terminations.most_common())
        rows.append(
            [
                scores.run,
                scores.domain,
                "aah" if scores.aah else "plain",
                str(scores.tasks),
                format_rate(scores.pass_1),
                *passes,
                *(format_rate(scores.components[c]) if c in scores.components else "—"
                  for c in components),
                ends,
                f"{scores.questions_per_task:.2f}",
                f"{scores.turns_per_task:.1f}",
                str(scores.nl_pending),
                format_rate(scores.nl) if scores.nl is not None else "not judged",
            ]
        )  # fmt: skip
    columns = [
        "run", "domain", "agent", "tasks", "sims reward 1",
        *(f"pass^{k}" for k in range(1, most + 1)),
        *components, "ended", "questions/task", "turns/task", "NL pending", "NL hold (aah grader)",
    ]  # fmt: skip
    published = [
        [model, *(f"{figures.get(d, 0):.1f}" for d in ("airline", "retail", "telecom"))]
        for model, figures in LEADERBOARD_PASS1.items()
    ]
    published.append(["pass^4 retail", "", f"~{LEADERBOARD_PASS4['retail']:.0f}", ""])
    return [
        ReportTable(
            "τ²-bench: pass^k per domain (τ²'s evaluator)",
            columns,
            rows,
            "sims reward 1: share of simulations with reward 1, "
            f"{RATE_NOTE}; pass^k: C(c,k)/C(n,k) per task over its epochs, averaged, with a "
            "seeded bootstrap interval over tasks. Components: share of simulations meeting "
            "each; NL assertions (aah's grader) reported apart.",
            keys=3,
        ),
        ReportTable(
            "τ²-bench: published pass^1 (percent)",
            ["model", "airline", "retail", "telecom"],
            published,
            f"Source: {LEADERBOARD}; not aah's runs.",
            keys=1,
        ),
    ]
