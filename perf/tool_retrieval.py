"""Tool retrieval quality and speed: BM25 alone and hybrid (BM25 + dense), side by side.

For each Fail-TaLMs setting: recall@1/5/10 and MRR of ``Registry.search`` on the
setting's queries. Gold = the task's endpoints (``Task.needed``); an unavailable
endpoint (replaceable, non-replaceable) is left out of the ranking, as it would be
from a registry that lacks it, so it counts as not findable (a miss at every k;
the "cap" column is the best recall possible). Recall is the share of a query's
gold endpoints in its top k, averaged over queries; MRR uses the first gold hit.

The natural requests (perf/data/natural_tool_requests.json) are written by hand,
in words a person uses, with hand-checked gold endpoints; they are reported apart
because the benchmark's queries name their tools' words more often than people do.

Also: latency per query (registry warm, k=10) and the time to compute all vectors.

Run: PYTHONPATH=$PWD .venv/bin/python perf/tool_retrieval.py [--data DIR] [--settings perfect,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aah.benchmark.failtalms import load_tasks
from aah.benchmark.failtalms.settings import SETTINGS, Setting
from aah.config import project_root
from aah.data import find_data_dir
from aah.tools.registry import Registry, build_registry, dense_available

NATURAL = Path(__file__).parent / "data" / "natural_tool_requests.json"
KS = (1, 5, 10)
DEPTH = 12  # enough hits to fill the top 10 after leaving out unavailable ones
TARGETS = {5: 0.95, 10: 0.98}  # perfect setting, hybrid
LATENCY_TARGET_MS = 20.0
BUILD_TARGET_S = 60.0


@dataclass(frozen=True)
class Query:
    """A request and its gold: each group is one needed endpoint, any member found counts."""

    text: str
    gold: tuple[frozenset[str], ...]
    hidden: frozenset[str] = frozenset()


@dataclass
class Scores:
    recall: dict[int, float]
    mrr: float
    cap: float
    n: int
    latencies_ms: list[float]


def natural_queries() -> list[Query]:
    items = json.loads(NATURAL.read_text())
    return [
        Query(
            item["request"],
            tuple(frozenset([g] if isinstance(g, str) else g) for g in item["gold"]),
        )
        for item in items
    ]


def setting_queries(data: Path, setting: Setting) -> list[Query]:
    return [
        Query(
            task.query,
            tuple(frozenset([name]) for name in dict.fromkeys(task.needed)),
            frozenset(task.unavailable),
        )
        for task in load_tasks(data, [setting])
        if task.needed
    ]


def evaluate(registry: Registry, queries: Sequence[Query]) -> Scores:
    sums = dict.fromkeys(KS, 0.0)
    rr = cap = 0.0
    latencies = []
    for query in queries:
        started = time.perf_counter()
        hits = registry.search(query.text, DEPTH)
        latencies.append((time.perf_counter() - started) * 1000)
        names = [h.spec.qualified_name for h in hits if h.spec.qualified_name not in query.hidden]
        for k in KS:
            found = sum(1 for group in query.gold if group.intersection(names[:k]))
            sums[k] += found / len(query.gold)
        every = frozenset().union(*query.gold)
        rank = next((i for i, name in enumerate(names, 1) if name in every), None)
        rr += 1 / rank if rank else 0.0
        cap += sum(1 for group in query.gold if group - query.hidden) / len(query.gold)
    n = len(queries)
    return Scores({k: v / n for k, v in sums.items()}, rr / n, cap / n, n, latencies)


def row(label: str, mode: str, scores: Scores) -> str:
    recalls = "  ".join(f"{scores.recall[k]:.3f}" for k in KS)
    return f"{label:<15} {mode:<7} {scores.n:>4}  {recalls}  {scores.mrr:.3f}  {scores.cap:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    args = parser.parse_args()
    data = find_data_dir(args.data)
    settings: list[Setting] = [s for s in SETTINGS if s in args.settings.split(",")]
    fixes = project_root() / "tool_registry" / "fixes.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "registry.db"
        # An empty vector cache, so the build embeds every endpoint.
        os.environ["AAH_CACHE_DIR"] = str(Path(tmp) / "cache")
        report = build_registry(data, path, fixes)
        print(
            f"registry: {report.endpoints} endpoints, built in {report.seconds:.1f} s "
            f"(vectors: {report.vector_seconds:.1f} s, model {report.embedding_model or 'none'})"
        )
        modes = {"bm25": Registry(path, dense=False)}
        if dense_available():
            modes["hybrid"] = Registry(path)
        else:
            print("hybrid: skipped (the [retrieval] extra is not installed)")
        for registry in modes.values():
            registry.search("warm up the registry", DEPTH)
        print(f"\n{'queries':<15} {'mode':<7} {'n':>4}  r@1    r@5    r@10   MRR    cap")
        results: dict[tuple[str, str], Scores] = {}
        sets: list[tuple[str, list[Query]]] = [(s, setting_queries(data, s)) for s in settings]
        sets.append(("natural", natural_queries()))
        for label, queries in sets:
            for mode, registry in modes.items():
                results[label, mode] = scores = evaluate(registry, queries)
                print(row(label, mode, scores))
        # Latency is wall time on a shared machine: the load says how shared.
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"\nlatency per query (ms, k=12, registry warm, load average {load}):")
        for mode in modes:
            every = [ms for (_, m), s in results.items() if m == mode for ms in s.latencies_ms]
            print(
                f"  {mode:<7} min {min(every):.2f}  median {statistics.median(every):.2f}  "
                f"max {max(every):.2f}  ({len(every)} queries)"
            )
        best = "hybrid" if "hybrid" in modes else "bm25"
        print(f"\ntargets ({best}):")
        if ("perfect", best) in results:
            perfect = results["perfect", best]
            for k, target in TARGETS.items():
                met = "met" if perfect.recall[k] >= target else "NOT met"
                print(f"  perfect recall@{k} {perfect.recall[k]:.3f} >= {target}: {met}")
        every = [ms for (_, m), s in results.items() if m == best for ms in s.latencies_ms]
        median = statistics.median(every)
        met = "met" if median < LATENCY_TARGET_MS else "NOT met"
        print(f"  median latency {median:.2f} ms < {LATENCY_TARGET_MS:.0f} ms: {met}")
        met = "met" if report.vector_seconds < BUILD_TARGET_S else "NOT met"
        print(f"  vector build {report.vector_seconds:.1f} s < {BUILD_TARGET_S:.0f} s: {met}")


if __name__ == "__main__":
    main()
