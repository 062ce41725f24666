"""Write model runs that touch BFCL's long-context padding records, with the official verdicts.

Usage (in the throwaway venv of ``bfcl_multi_turn_corpus.py``)::

    /tmp/bfcl-venv/bin/python scripts/bfcl_padding_runs.py DATA_DIR OUT.jsonl

bfcl-eval loads a long-context entry's model and ground-truth instances from
one module, so they hold the same padding credit cards and bookings: a
charge to a padding card by the model's calls is in the ground truth's state
too, and the official state check cannot see it. The runs here play entries'
ground truth with such a charge added, a charge moved from the user's card
to a padding card, and a padding booking cancelled; the official checker
(run as the corpus script runs it, the padding records put back before
every run) gives each its verdict. Same format as the corpus, with a
``why``: ``tests/fixtures/bfcl_padding_runs.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bfcl_multi_turn_corpus import Official, Turns, load, parse, signatures  # noqa: E402

CATEGORY = "multi_turn_long_context"
# Two of the padding cards BFCL's long_context.py lends every TravelAPI instance.
PADDING_CARDS = ("1234567812345678", "2345678923456789")


def main() -> None:
    """Write the runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    params = signatures()
    entries = {entry["id"]: (entry, truth) for entry, truth in load(args.data, CATEGORY)}
    official = Official()
    rows: list[dict[str, Any]] = []

    def add(entry_id: str, kind: str, why: str, turns: Turns) -> None:
        entry, truth = entries[entry_id]
        valid, error = official(entry, truth, turns)
        rows.append(
            {
                "id": entry_id,
                "kind": kind,
                "why": why,
                "turns": turns,
                "official": valid,
                "error": error,
            }
        )

    def right(entry_id: str) -> Turns:
        return [[[parse(t, params) for t in turn]] if turn else [] for turn in entries[entry_id][1]]

    def on_card(call: dict[str, Any], card: str) -> dict[str, Any]:
        name, arguments = next(iter(call.items()))
        return {name: {**arguments, "card_id": card}}

    for entry_id in (
        "multi_turn_long_context_155",
        "multi_turn_long_context_179",
        "multi_turn_long_context_171",
    ):
        turns = right(entry_id)
        turn = 1
        insurance = next(c for c in turns[turn][0] if "purchase_insurance" in c)
        turns[turn].append([on_card(insurance, PADDING_CARDS[0])])
        add(
            entry_id,
            "extra_charge_to_padding_card",
            "a second insurance charged to a padding card: bfcl-eval's two instances share "
            "the card, so its state check passes",
            turns,
        )
    entry_id = "multi_turn_long_context_155"
    add(entry_id, "right", "the ground truth's own calls", right(entry_id))
    turns = right(entry_id)
    turns[1] = [[on_card(turns[1][0][0], PADDING_CARDS[1])]]
    add(
        entry_id,
        "padding_card_instead",
        "the insurance charged to a padding card instead of the user's: the user's card "
        "differs in both readings",
        turns,
    )
    turns = right(entry_id)
    turns[1].append(
        [{"cancel_booking": {"access_token": "abc123xyz", "booking_id": "booking_901"}}]
    )
    add(
        entry_id,
        "padding_booking_cancelled",
        "a padding booking cancelled: the booking list is the instance's own, so both "
        "readings see it",
        turns,
    )
    with args.out.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
