"""Build a corpus of BFCL multi-turn model runs and record the official checker's verdict on each.

Usage (the official checker lives in a throwaway venv, never in aah's)::

    python -m venv /tmp/bfcl-venv
    /tmp/bfcl-venv/bin/pip install --no-deps bfcl-eval==2026.3.23
    /tmp/bfcl-venv/bin/pip install mpmath
    /tmp/bfcl-venv/bin/python scripts/bfcl_multi_turn_corpus.py DATA_DIR OUT.jsonl

``DATA_DIR`` holds BFCL v4's files (``BFCL_v4_multi_turn_*.json`` and
``possible_answer/``). For ``--per-category`` entries of each multi-turn
category (chosen with ``--seed``), the script writes model runs made from the
ground truth: right (one step a turn, one call a step, parallel calls in
another order), a call left out, an extra harmless read, calls in reverse
order, a wrong argument value, a duplicated call, calls moved to an earlier
turn, a turn left empty, steps without calls, unknown, forbidden and
malformed calls, a guess on a miss_param turn the model cannot do, a
withheld function called on a miss_func turn and before it is offered, a run
stopped early, and others. Each run goes through the steps of BFCL's eval
runner (``force_terminated`` when turns are missing, steps without calls
dropped) and the official ``multi_turn_checker``. One JSON object a line:
``id``, ``kind``, ``turns`` (per turn, per step, ``[{name: arguments}]``),
``official`` (true/false) and ``error`` (BFCL's error type without its
``multi_turn:`` prefix, or null). Only ids and model calls are written: the
entries stay in the data directory.

The official checker keeps each run's API instances in a module's globals,
named by model and entry: every run gets a model name of its own, and its
instances are dropped after it. BFCL's long-context padding lends the
instances its module's own records, which a call can change: they are put
back before every run.
"""

# Each change below runs at once inside its loop (``edit`` applies it), so the
# loop variables its lambda reads are the current ones.
# ruff: noqa: B023

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_param",
    "multi_turn_miss_func",
    "multi_turn_long_context",
)
# A read per class that changes no state (its result is an ordinary string).
READS = {
    "GorillaFileSystem": ("pwd", {}),
    "MathAPI": ("mean", {"numbers": [1.0, 2.0]}),
    "MessageAPI": ("list_users", {}),
    "TwitterAPI": ("posting_get_login_status", {}),
    "TicketAPI": ("ticket_get_login_status", {}),
    "TradingBot": ("get_current_time", {}),
    "TravelAPI": ("list_all_airports", {}),
    "VehicleControlAPI": ("check_tire_pressure", {}),
}
Call = dict[str, dict[str, Any]]
Turns = list[list[list[Call]]]


def load(data: Path, category: str) -> list[tuple[dict[str, Any], list[list[str]]]]:
    """The entries of one category with their ground truth."""
    entries = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").open()]
    answers = {
        record["id"]: record["ground_truth"]
        for record in map(
            json.loads, (data / "possible_answer" / f"BFCL_v4_{category}.json").open()
        )
    }
    return [(entry, answers[entry["id"]]) for entry in entries]


def signatures() -> dict[str, list[str]]:
    """Each BFCL function's parameter names in order (to name positional arguments)."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    names: dict[str, list[str]] = {}
    for class_name in READS:
        module = __import__(CLASS_FILE_PATH_MAPPING[class_name], fromlist=[class_name])
        for name, function in inspect.getmembers(getattr(module, class_name), inspect.isfunction):
            if not name.startswith("_"):
                names[name] = list(inspect.signature(function).parameters)[1:]
    return names


def parse(text: str, params: dict[str, list[str]]) -> Call:
    """A ground-truth call as ``{name: arguments}`` (positional arguments named)."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    name = node.func.id
    arguments = {params[name][i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    arguments |= {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    return {name: arguments}


def as_text(call: Call) -> str:
    """A call as BFCL's function-calling handlers decode it (``name(key=repr(value))``)."""
    name, arguments = next(iter(call.items()))
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def changed(value: Any, rng: random.Random) -> Any:
    """Another value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + rng.choice([1, 7, 100])
    if isinstance(value, str):
        return value + rng.choice(["_x", "2", " copy"]) if value else "x"
    if isinstance(value, list):
        return value[1:] if value else ["x"]
    if isinstance(value, dict):
        return {}
    return "x"


def mutated(call: Call, rng: random.Random) -> Call | None:
    """The call with one argument changed, or None when it has none."""
    name, arguments = next(iter(call.items()))
    if not arguments:
        return None
    key = rng.choice(sorted(arguments))
    return {name: {**arguments, key: changed(arguments[key], rng)}}


def variants(
    entry: dict[str, Any], truth: list[list[Call]], rng: random.Random
) -> list[tuple[str, Turns]]:
    """Model runs of many kinds for one entry."""
    found: list[tuple[str, Turns]] = []
    one_step = [[list(turn)] if turn else [] for turn in truth]
    full = [i for i, turn in enumerate(truth) if turn]
    empty = [i for i, turn in enumerate(truth) if not turn]
    many = [i for i, turn in enumerate(truth) if len(turn) >= 2]

    def add(kind: str, turns: Turns) -> None:
        found.append((kind, turns))

    def edit(kind: str, change: Callable[[Turns], bool | None]) -> None:
        turns = copy.deepcopy(one_step)
        if change(turns) is not False:
            add(kind, turns)

    add("right_one_step", copy.deepcopy(one_step))
    add("right_one_call_a_step", [[[call] for call in turn] for turn in truth])
    add("right_with_empty_steps", [[[], list(turn), []] if turn else [[]] for turn in truth])
    if many:
        i = rng.choice(many)
        edit("parallel_reversed", lambda t: t[i][0].reverse())
        edit("parallel_shuffled", lambda t: rng.shuffle(t[i][0]))
        edit("split_reversed", lambda t: t.__setitem__(i, [[c] for c in reversed(t[i][0])]))
    if full:
        i = rng.choice(full)
        edit("call_missing", lambda t: t[i][0].pop(rng.randrange(len(t[i][0]))))
        edit("last_call_missing", lambda t: t[i][0].pop())
        edit("turn_without_calls", lambda t: t.__setitem__(i, []))
        edit("turn_with_empty_steps_only", lambda t: t.__setitem__(i, [[], []]))
        for class_name in entry["involved_classes"]:
            name, arguments = READS[class_name]
            edit(f"extra_read_{class_name}", lambda t: t[i].append([{name: dict(arguments)}]))
        edit(
            "extra_read_first",
            lambda t: t[i][0].insert(0, dict([READS[entry["involved_classes"][0]]])),
        )
        edit(
            "read_twice", lambda t: t[i].append([dict([READS[entry["involved_classes"][-1]]])] * 2)
        )
        edit("duplicated_call", lambda t: t[i][0].append(copy.deepcopy(rng.choice(t[i][0]))))
        edit("duplicated_first_call", lambda t: t[i][0].insert(0, copy.deepcopy(t[i][0][0])))
        edit("unknown_function", lambda t: t[i][0].append({"teleport": {"to": "moon"}}))
        edit("forbidden_function", lambda t: t[i][0].append({"kill": {}}))
        edit("dotted_name", lambda t: t[i][0].append({"os.remove": {"path": "x"}}))
        edit("bad_argument_name", lambda t: t[i][0].append({next(iter(t[i][0][0])): {"zz": 1}}))

        def wrong_value(t: Turns) -> bool:
            j = rng.randrange(len(t[i][0]))
            call = mutated(t[i][0][j], rng)
            if call is None:
                return False
            t[i][0][j] = call
            return True

        edit("wrong_argument_value", wrong_value)
        edit(
            "wrong_value_extra",
            lambda t: (c := mutated(t[i][0][-1], rng)) is not None and not t[i][0].append(c),
        )
        edit("all_calls_twice", lambda t: t[i].append(copy.deepcopy(t[i][0])))
    if len(full) >= 2:
        a, b = sorted(rng.sample(full, 2))
        edit(
            "turns_swapped",
            lambda t: t.__setitem__(slice(None), [*t[:a], t[b], *t[a + 1 : b], t[a], *t[b + 1 :]]),
        )
    for i in full:
        if i + 1 < len(truth) and truth[i + 1]:
            edit(
                "next_turn_moved_earlier",
                lambda t: (t[i][0].extend(t[i + 1][0]), t.__setitem__(i + 1, [])) and None,
            )
            edit("next_turn_done_twice", lambda t: t[i][0].extend(copy.deepcopy(t[i + 1][0])))
            edit("first_call_moved_earlier", lambda t: t[i][0].append(t[i + 1][0].pop(0)))
            break
    if len(many) and full:
        i = rng.choice(many)
        edit("reversed_then_right", lambda t: t[i].insert(0, list(reversed(t[i][0]))))
    edit(
        "everything_in_last_turn",
        lambda t: t.__setitem__(
            slice(None), [[] for _ in t[:-1]] + [[[c for turn in t for step in turn for c in step]]]
        ),
    )
    for stop in sorted({1, len(truth) - 1, rng.randrange(1, len(truth))}):
        if 0 < stop < len(truth):
            add(
                f"stopped_after_{'last' if stop == len(truth) - 1 else stop}",
                copy.deepcopy(one_step[:stop]),
            )
    add("no_turns", [])
    add("no_calls_at_all", [[] for _ in truth])
    add("extra_turn", copy.deepcopy(one_step) + [[[dict([READS[entry["involved_classes"][0]]])]]])
    for i in empty:
        later = next((j for j in range(i + 1, len(truth)) if truth[j]), None)
        read = dict([READS[entry["involved_classes"][0]]])
        edit("read_on_empty_turn", lambda t: t.__setitem__(i, [[read]]))
        edit(
            "unknown_call_on_empty_turn",
            lambda t: t.__setitem__(i, [[{"teleport": {"to": "moon"}}]]),
        )
        if later is not None:
            guess = [c for c in (mutated(call, rng) for call in truth[later]) if c is not None]
            if guess:
                edit("guess_on_empty_turn", lambda t: t.__setitem__(i, [guess]))
                edit(
                    "guess_on_empty_turn_only",
                    lambda t: (t.__setitem__(i, [guess]), t.__setitem__(later, [])) and None,
                )
            edit(
                "next_turn_on_empty_turn", lambda t: t.__setitem__(i, [copy.deepcopy(t[later][0])])
            )
            edit(
                "next_turn_only_on_empty_turn",
                lambda t: (t.__setitem__(i, [t[later][0]]), t.__setitem__(later, [])) and None,
            )
        withheld = [n for names in (entry.get("missed_function") or {}).values() for n in names]
        used = [c for turn in truth for c in turn if next(iter(c)) in withheld]
        if used:
            edit(
                "withheld_function_on_empty_turn",
                lambda t: t.__setitem__(i, [[copy.deepcopy(used[0])]]),
            )
            if i > 0:
                edit(
                    "withheld_function_before_offered",
                    lambda t: t[0].append([copy.deepcopy(used[0])]),
                )
        break
    return found


class Official:
    """The official checker, run as BFCL's eval runner runs it."""

    def __init__(self) -> None:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
        from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

        self.utils = multi_turn_utils
        self.check = multi_turn_checker
        self.long_context = long_context
        self.padding = {
            k: copy.deepcopy(v)
            for k, v in vars(long_context).items()
            if k.isupper() and isinstance(v, dict | list)
        }
        self.runs = 0

    def __call__(
        self, entry: dict[str, Any], truth: list[list[str]], turns: Turns
    ) -> tuple[bool, str | None]:
        """BFCL's verdict and error type for one run."""
        if len(turns) != len(truth):
            return False, "force_terminated"
        for key, value in self.padding.items():
            held = getattr(self.long_context, key)
            held.clear()
            held.extend(copy.deepcopy(value)) if isinstance(held, list) else held.update(
                copy.deepcopy(value)
            )
        self.runs += 1
        model = f"aah-corpus-{self.runs}"
        decoded = [[[as_text(c) for c in step] for step in turn if step] for turn in turns]
        category = entry["id"].rsplit("_", 1)[0]
        try:
            result = self.check(decoded, truth, copy.deepcopy(entry), category, model)
        finally:
            for name in [n for n in vars(self.utils) if n.startswith(model.replace("-", "_"))]:
                delattr(self.utils, name)
        error = result.get("error_type")
        return bool(result["valid"]), error.removeprefix("multi_turn:") if error else None


def main() -> None:
    """Write the corpus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-category", type=int, default=40)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    params = signatures()
    official = Official()
    rows = []
    for category in CATEGORIES:
        entries = load(args.data, category)
        for entry, truth_text in sorted(
            rng.sample(entries, min(args.per_category, len(entries))),
            key=lambda e: int(e[0]["id"].rsplit("_", 1)[1]),
        ):
            truth = [[parse(text, params) for text in turn] for turn in truth_text]
            for kind, turns in variants(entry, truth, rng):
                valid, error = official(entry, truth_text, turns)
                rows.append(
                    {
                        "id": entry["id"],
                        "kind": kind,
                        "turns": turns,
                        "official": valid,
                        "error": error,
                    }
                )
    with args.out.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    passed = sum(row["official"] for row in rows)
    print(f"{len(rows)} runs, {passed} pass officially, into {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
