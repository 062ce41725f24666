"""The behaviour rules' macro-F1 and per-class F1 on labelled replies, one line per set.

Sets: the original labelled fixture (tests/fixtures/behavior_labelled.jsonl)
and the invented corpus (tests/fixtures/behavior_corpus.jsonl), whose
``split`` field keeps a ``dev`` part (rules developed against it) apart from
a ``held`` part (measured, then its misses studied) and a ``fresh`` part
written after the rules were done (only measured). With ``--misses``, every reply the rules
get wrong is printed with its gold and predicted class.

With ``--file PATH`` a JSONL of ``text``/``label`` rows (the blind corpus's
shape, where ``follow_up`` means ``request_for_info``) is scored instead; its
replies are classified without tool names, as stored turns are (an offered
tool's name must not be needed to see a call attempt).

Run: PYTHONPATH=. .venv/bin/python perf/behavior_f1.py [--misses] [--set corpus-held]
     [--file PATH]
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


_BLIND_LABELS = {"follow_up": "request_for_info"}


def rows(path: Path, split: str | None) -> list[dict[str, Any]]:
    """The labelled rows of ``path`` in ``split`` (all of them when None).

    Rows in the blind corpus's shape (``text``, ``label``) are read as
    ``reply``/``label`` rows without tools.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    loaded = [json.loads(line) for line in lines if line.strip()]
    for row in loaded:
        if "reply" not in row:
            row["reply"] = row["text"]
            row["label"] = _BLIND_LABELS.get(row["label"], row["label"])
    return [row for row in loaded if split is None or row.get("split") == split]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="print every misclassified reply")
    parser.add_argument("--set", choices=list(SETS), action="append", help="only these sets")
    parser.add_argument("--file", type=Path, action="append", help="score this JSONL instead")
    args = parser.parse_args()
    chosen = {str(path): (path, None) for path in args.file or ()}
    chosen.update({name: SETS[name] for name in args.set or ([] if chosen else SETS)})
    for name, (path, split) in chosen.items():
        labelled = rows(path, split)
        pairs = []
        for row in labelled:
            got = classify_reply(row["reply"], row.get("tools", []), row.get("tool_calls", 0))
            pairs.append((row["label"], got.label))
            if args.misses and got.label != row["label"]:
                print(f"  MISS {row['label']} -> {got.label} ({got.rule}): {row['reply']!r:.300}")
        matrix = confusion(pairs)
        per_class = " ".join(f"{c} {matrix.scores(c).f1 or 0:.3f}" for c in BEHAVIOR_CLASSES)
        accuracy = matrix.accuracy
        print(
            f"{name}: n={matrix.total} accuracy {accuracy.k}/{accuracy.n} "
            f"macro-F1 {matrix.macro_f1 or 0:.3f} | {per_class}"
        )


if __name__ == "__main__":
    main()
