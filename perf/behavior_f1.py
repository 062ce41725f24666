"""The behaviour rules' macro-F1 and per-class F1 on labelled replies, one line per set.

Sets: the original labelled fixture (tests/fixtures/behavior_labelled.jsonl)
and the invented corpus (tests/fixtures/behavior_corpus.jsonl), whose
``split`` field keeps a ``dev`` part (rules developed against it) apart from
a ``held`` part (measured, then its misses studied) and a ``fresh`` part
written after the rules were done (only measured). With ``--misses``, every reply the rules
get wrong is printed with its gold and predicted class.

Run: PYTHONPATH=. .venv/bin/python perf/behavior_f1.py [--misses] [--split held]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aah.scoring.behavior import BEHAVIOR_CLASSES, classify_reply, confusion

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
SETS = {
    "labelled": (FIXTURES / "behavior_labelled.jsonl", None),
    "corpus-dev": (FIXTURES / "behavior_corpus.jsonl", "dev"),
    "corpus-held": (FIXTURES / "behavior_corpus.jsonl", "held"),
    "corpus-fresh": (FIXTURES / "behavior_corpus.jsonl", "fresh"),
}


def rows(path: Path, split: str | None) -> list[dict[str, Any]]:
    """The labelled rows of ``path`` in ``split`` (all of them when None)."""
    loaded = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [row for row in loaded if split is None or row.get("split") == split]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="print every misclassified reply")
    parser.add_argument("--set", choices=list(SETS), action="append", help="only these sets")
    args = parser.parse_args()
    for name in args.set or list(SETS):
        path, split = SETS[name]
        labelled = rows(path, split)
        pairs = []
        for row in labelled:
            got = classify_reply(row["reply"], row.get("tools", []), row.get("tool_calls", 0))
            pairs.append((row["label"], got.label))
            if args.misses and got.label != row["label"]:
                print(f"  MISS {row['label']} -> {got.label} ({got.rule}): {row['reply']!r:.150}")
        matrix = confusion(pairs)
        per_class = " ".join(f"{c} {matrix.scores(c).f1 or 0:.3f}" for c in BEHAVIOR_CLASSES)
        accuracy = matrix.accuracy
        print(
            f"{name}: n={matrix.total} accuracy {accuracy.k}/{accuracy.n} "
            f"macro-F1 {matrix.macro_f1 or 0:.3f} | {per_class}"
        )


if __name__ == "__main__":
    main()
