"""The behaviour rules on an invented, labelled corpus of replies, split so as not to fit it.

``fixtures/behavior_corpus.jsonl`` holds replies of every class in many
shapes: refusals followed by advice or a partial answer, apologies, "As an
AI...", statements of what the tools lack, questions mid-text, rhetorical
questions and closing pleasantries inside direct answers, multilingual
refusals and questions, markdown, ``<think>`` blocks, call-looking JSON in
prose. Its ``split`` says how it was used: ``dev`` replies shaped the rules,
``held`` ones were only measured until the rules were written, ``fresh`` ones
were written after that and measured once (see perf/behavior_f1.py for the
figures of each split).
"""

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from aah.scoring.behavior import BEHAVIOR_CLASSES, classify_reply, confusion

CORPUS = Path(__file__).parent / "fixtures" / "behavior_corpus.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()
]
SPLITS = ("dev", "held", "fresh")


def test_the_corpus_is_large_varied_and_split() -> None:
    counts = Counter((row["split"], row["label"]) for row in ROWS)
    assert len(ROWS) >= 300
    for split in SPLITS:
        assert all(counts[split, label] >= 15 for label in BEHAVIOR_CLASSES), split
    non_ascii = Counter(row["label"] for row in ROWS if not row["reply"].isascii())
    assert non_ascii["cannot_answer"] >= 12 and non_ascii["request_for_info"] >= 8
    assert sum("<think>" in row["reply"] for row in ROWS) >= 6


@pytest.mark.parametrize(
    "row", ROWS, ids=[f"{row['split']}-{row['label']}-{n}" for n, row in enumerate(ROWS)]
)
def test_each_corpus_reply_gets_its_class(row: dict[str, Any]) -> None:
    got = classify_reply(row["reply"], row["tools"], row.get("tool_calls", 0))
    assert got.label == row["label"], got.rule


@pytest.mark.parametrize("split", SPLITS)
def test_macro_f1_of_each_split_reaches_the_goal(split: str) -> None:
    rows = [row for row in ROWS if row["split"] == split]
    matrix = confusion(
        (row["label"], classify_reply(row["reply"], row["tools"]).label) for row in rows
    )
    assert matrix.macro_f1 is not None and matrix.macro_f1 >= 0.98
    assert all((matrix.scores(label).f1 or 0) >= 0.95 for label in BEHAVIOR_CLASSES)


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        # A question or a refusal in quotes is someone else's words.
        ("'¿Dónde está?' means 'Where is it?' in Spanish.", "direct"),
        ('The error reads "I cannot connect to the server", so check your network.', "direct"),
        # The same meaning, a wording no corpus reply uses.
        ("I'm sorry, but I'm presently not equipped to look up parcel tracking.", "cannot_answer"),
        ("The functions you gave me do not cover payroll, sorry.", "cannot_answer"),
        ("Es tut mir leid, darauf habe ich keinen Zugriff.", "cannot_answer"),
        ("Which of the two addresses should I ship to? Thanks!", "request_for_info"),
        ("Have you tried restarting the router? That fixes most drops.", "direct"),
    ],
)
def test_meanings_not_wordings(reply: str, label: str) -> None:
    assert classify_reply(reply).label == label
