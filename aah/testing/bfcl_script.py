"""A fake-model script that plays BFCL multi-turn entries' ground truth.

For runs offline (the full multi-turn set against the fake server, the
performance script): on each user turn the fake model makes that turn's
ground-truth calls in one reply, and after their results says "Done."; on
a turn whose ground truth is empty it asks for the missing detail. Rules
match an entry by its first turn's text and the turn by its own, so one
server serves every entry at any concurrency. Entries whose texts repeat
(long_context repeats base's questions) share rules, which is right where
their ground truths agree.

Run: ``python -m aah.testing.bfcl_script DATA_DIR OUT.json [--category all-multi-turn]``,
then ``aah fake-llm --script OUT.json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ASK = "Which one do you mean? Please tell me the missing detail."
DONE = "Done."
# Substrings the rules match on: enough to tell turns apart, short enough to stay cheap.
_MATCH_CHARS = 120


def ground_truth_script(tasks: Sequence[Any]) -> dict[str, Any]:
    """The rules that play ``tasks``' (``MultiTurnTask``) ground truth, as a script dict."""
    from aah.benchmark.bfcl import BfclEnvironment, parse_call_text

    rules: list[dict[str, Any]] = [{"when": {"last_role": "tool"}, "reply": DONE}]
    for task in tasks:
        # Some ground-truth calls pass arguments by position (``mean([37])``).
        parameters = BfclEnvironment.for_task(task).parameter_names()
        first = task.turns[0][-1].content[:_MATCH_CHARS]
        for messages, truth in zip(task.turns, task.ground_truth, strict=True):
            when = {
                "last_role": "user",
                "any_message_contains": first,
                "last_message_contains": messages[-1].content[:_MATCH_CHARS],
            }
            if not truth:
                rules.append({"when": when, "reply": ASK})
                continue
            calls = [parse_call_text(text, parameters) for text in truth]
            made = [{"name": c.name, "arguments": dict(c.arguments)} for c in calls]
            rules.append({"when": when, "reply": {"tool_calls": made}})
    rules.append({"reply": ASK})
    return {"rules": rules}


def main() -> None:
    """Write the script for a data directory's multi-turn entries."""
    from aah.benchmark.bfcl import bfcl_source, load_multi_turn, parse_categories

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a data directory or a BFCL folder")
    parser.add_argument("out", type=Path)
    parser.add_argument("--category", default="all-multi-turn")
    args = parser.parse_args()
    tasks = load_multi_turn(bfcl_source(args.data), parse_categories(args.category))
    args.out.write_text(json.dumps(ground_truth_script(tasks)), encoding="utf-8")
    print(f"{len(tasks)} entries: {args.out}")


if __name__ == "__main__":
    main()
