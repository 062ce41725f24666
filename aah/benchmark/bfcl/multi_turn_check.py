"""aah's multi-turn checker: the model's calls against the ground truth's, turn by turn.

The rules (science.md §6, following BFCL's documentation): the model's calls
run on one environment and the ground truth's on another, both built from
the entry's ``initial_config`` and both kept across turns. A turn whose
ground truth makes calls passes when the model made some call in it, every
involved instance's public attributes then equal the ground truth's (the
state check), and every result of the ground truth's calls of that turn is
among the results of the model's calls of all turns so far, counted with
repeats (the response check). A turn whose ground truth is empty (a missing
parameter or function: the model cannot do it) passes only when the model
made no call in it; its calls still run, so later turns see their effect.
An entry passes when every turn passes; a run that stopped before the last
turn (BFCL's ``force_terminated``) fails.

``passed_official`` is bfcl-eval 2026.3.23's own verdict, which differs in
two ways. It has no empty-turn rule: the eval runner imports
``multi_turn_irrelevance_checker`` but never calls it, so a call on an empty
turn passes. And in a long-context entry the model's and the ground truth's
instances share BFCL's padding records (bfcl-eval loads both from one
module): a charge to a padding credit card is in both states, so the state
check cannot see it. That reading runs on a pair of its own
(``BfclEnvironment.pairs_for_task``), which shares them with each other and
with no other entry (bfcl-eval's one process would carry a change on to the
entries after it); the strict reading's instances share nothing.

Every call, the ground truth's too, runs behind the entry's fence (a time
bound per call: see ``aah.benchmark.fence``); a call that ran out of time in
the session is answered so at once here, never run again.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aah.benchmark.bfcl.environments import BfclEnvironment, bfcl_fence, json_safe
from aah.benchmark.bfcl.wheel import api_classes
from aah.benchmark.fence import Fence
from aah.errors import AahError

MultiTurnError = Literal[
    "force_terminated",
    "empty_turn_model_response",
    "instance_state_mismatch",
    "execution_response_mismatch",
    "call_on_empty_turn",
]
# A value in the details is its JSON text cut to this many characters.
_BRIEF_CHARS = 200
_MAX_CALL_TEXT = 20_000
_ABSENT = object()


@dataclass(frozen=True)
class ModelCall:
    """One decoded call: the function's name and its arguments by name."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnCheck:
    """One turn's outcome, with what the log shows of it.

    Attributes:
        index: The turn, from 0.
        passed: Whether it passes (science.md: a call on an empty turn fails it).
        truth_empty: Whether the ground truth makes no call in this turn.
        calls: The model's decoded calls in this turn.
        error: Why it failed, or None.
        missing: Results of the ground truth's calls the model's results lack (JSON text, cut).
        differences: Where the state differs: class -> attribute -> ``model`` and
            ``ground_truth`` values (JSON text, cut).
    """

    index: int
    passed: bool
    truth_empty: bool
    calls: int
    error: MultiTurnError | None = None
    missing: tuple[str, ...] = ()
    differences: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class MultiTurnVerdict:
    """One entry's verdict.

    Attributes:
        passed: Every turn passes, by science.md's rules.
        passed_official: BFCL's verdict (bfcl-eval 2026.3.23's runner): calls on an
            empty-ground-truth turn do not fail it, and a long-context entry's
            model and ground truth share BFCL's padding records.
        failed_turn: The first turn that fails (science.md), or None; a run that
            stopped early fails at its first missing turn unless one fails before.
        error: Why ``failed_turn`` fails, or None.
        official_error: Why BFCL fails the entry, or None (``force_terminated``
            first, as BFCL checks it first).
        reason: One line for people.
        turns: Each turn the run reached.
    """

    passed: bool
    passed_official: bool
    failed_turn: int | None
    error: MultiTurnError | None
    official_error: MultiTurnError | None
    reason: str
    turns: tuple[TurnCheck, ...]


def parse_call_text(text: str, parameters: Mapping[str, Sequence[str]] | None = None) -> ModelCall:
    """A call written as Python (``cd(folder='document')``), read without running anything.

    Args:
        text: One call; its arguments must be literal values.
        parameters: Each function's parameter names in order, to name the
            positional arguments (``BfclEnvironment.parameter_names()``).

    Raises:
        AahError: not one call with literal arguments, or a positional argument
            whose parameter is unknown.
    """
    shown = text[:80]
    if len(text) > _MAX_CALL_TEXT:
        raise AahError(f"call text {shown!r}... is too long: fix the data file")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise AahError(f"call {shown!r} is not Python ({exc}): fix the data file") from None
    if not isinstance(node, ast.Call):
        raise AahError(f"{shown!r} is not a call: fix the data file")
    name = _dotted(node.func)
    if name is None:
        raise AahError(f"call {shown!r} does not name a function: fix the data file")
    names = tuple((parameters or {}).get(name, ()))
    if len(node.args) > len(names):
        raise AahError(
            f"call {shown!r} passes {len(node.args)} positional arguments, "
            f"and {name} has {len(names)} known parameters: name the arguments"
        )
    arguments: dict[str, Any] = {}
    pairs = [(names[i], value) for i, value in enumerate(node.args)]
    for keyword in node.keywords:
        if keyword.arg is None:
            raise AahError(f"call {shown!r} unpacks **arguments: name each argument")
        pairs.append((keyword.arg, keyword.value))
    for key, value in pairs:
        if key in arguments:
            raise AahError(f"call {shown!r} passes {key} twice: fix the data file")
        try:
            arguments[key] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            raise AahError(
                f"call {shown!r}: {key} is not a literal value: fix the data file"
            ) from None
    return ModelCall(name, arguments)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def check_multi_turn(
    task: Any,
    turns: Sequence[Sequence[Sequence[ModelCall]]],
    *,
    classes: Mapping[str, type] | None = None,
    fence: Fence | None = None,
) -> MultiTurnVerdict:
    """Check the model's calls of a ``MultiTurnTask``, turn by turn.

    Args:
        task: The entry (``involved_classes``, ``initial_config``,
            ``long_context``, ``ground_truth``).
        turns: The model's decoded calls: per turn, per step, the calls (a
            step without calls counts for nothing). Fewer turns than the
            entry has: the run stopped.
        classes: BFCL's API classes (``api_classes()`` when None).
        fence: The entry's fence (``bfcl_fence()`` when None).

    Raises:
        AahError: the wheel cannot be loaded, or a ground-truth call cannot be read.
    """
    checker = MultiTurnChecker(task, classes=classes, fence=fence)
    for steps in turns[: len(task.ground_truth)]:
        checker.add_turn(steps)
    return checker.verdict(reached=len(turns))


class MultiTurnChecker:
    """The check of one entry, a turn at a time: each call runs once, however many turns follow.

    The model's calls run on one environment and the ground truth's on
    another (and, for ``passed_official`` in a long-context entry whose two
    sides would share BFCL's padding records, again on a pair that does),
    kept across turns.
    """

    def __init__(
        self, task: Any, *, classes: Mapping[str, type] | None = None, fence: Fence | None = None
    ) -> None:
        """Fresh environments for ``task`` (see :func:`check_multi_turn` for the arguments).

        Raises:
            AahError: the wheel cannot be loaded, or a ground-truth call cannot be read.
        """
        found = classes if classes is not None else api_classes()
        fence = fence if fence is not None else bfcl_fence()
        self.task = task
        strict, official = BfclEnvironment.pairs_for_task(task, classes=found, fence=fence)
        self._strict = _Reading(*strict)
        self._official = _Reading(*official) if official is not None else None
        parameters = self._strict.truth.parameter_names()
        self._truth_calls = [
            [parse_call_text(text, parameters) for text in turn] for turn in task.ground_truth
        ]
        self.turns: list[list[list[ModelCall]]] = []

    def add_turn(self, steps: Sequence[Sequence[ModelCall]]) -> None:
        """Run the model's calls of the next turn, and the ground truth's, and check the turn.

        Raises:
            AahError: the entry has no more turns.
        """
        index = len(self.turns)
        if index >= len(self._truth_calls):
            raise AahError(f"entry {self.task.id} has {index} turns: no turn {index + 1} to check")
        self.turns.append([list(step) for step in steps])
        calls = [call for step in steps for call in step]
        for reading in (self._strict, self._official):
            if reading is not None:
                reading.add(index, self._truth_calls[index], calls)

    def verdict(self, *, turns: int | None = None, reached: int | None = None) -> MultiTurnVerdict:
        """The verdict on the turns added so far.

        Args:
            turns: How many of the entry's turns are judged (the conversation
                so far); all of them when None.
            reached: How many turns the run reached; the turns added when
                None. Fewer than ``turns``: the run stopped (``force_terminated``).
        """
        official = self._official if self._official is not None else self._strict
        return _verdict(
            self._strict.checks,
            official.checks,
            len(self._truth_calls) if turns is None else turns,
            len(self.turns) if reached is None else reached,
        )


class _Reading:
    """A model's and a ground truth's environments, and the turn checks on them so far."""

    def __init__(self, model: BfclEnvironment, truth: BfclEnvironment) -> None:
        self.model = model
        self.truth = truth
        self.model_results: list[str] = []
        self.checks: list[TurnCheck] = []

    def add(self, index: int, expected: Sequence[ModelCall], calls: Sequence[ModelCall]) -> None:
        self.model_results += [self.model.execute(call.name, call.arguments) for call in calls]
        truth_results = [self.truth.execute(call.name, call.arguments) for call in expected]
        self.checks.append(
            _turn(index, expected, calls, self.model, self.truth, truth_results, self.model_results)
        )


def _turn(
    index: int,
    expected: Sequence[ModelCall],
    calls: Sequence[ModelCall],
    model: BfclEnvironment,
    truth: BfclEnvironment,
    truth_results: Sequence[str],
    model_results: Sequence[str],
) -> TurnCheck:
    if not expected:
        error: MultiTurnError | None = "call_on_empty_turn" if calls else None
        return TurnCheck(index, error is None, True, len(calls), error)
    differences = {
        class_name: {key: _shown(*pair) for key, pair in attributes.items()}
        for class_name, attributes in model.differences(truth).items()
    }
    missing = _missing(truth_results, model_results)
    if not calls:
        error = "empty_turn_model_response"
    elif differences:
        error = "instance_state_mismatch"
    elif missing:
        error = "execution_response_mismatch"
    else:
        error = None
    brief_missing = tuple(_brief(result) for result in missing)
    return TurnCheck(index, error is None, False, len(calls), error, brief_missing, differences)


def _missing(wanted: Sequence[str], have: Sequence[str]) -> list[str]:
    """The items of ``wanted`` not in ``have``, counting repeats (a multiset difference)."""
    left = Counter(have)
    missing = []
    for item in wanted:
        if left[item] > 0:
            left[item] -= 1
        else:
            missing.append(item)
    return missing


def _verdict(
    checks: Sequence[TurnCheck],
    official_checks: Sequence[TurnCheck],
    expected_turns: int,
    model_turns: int,
) -> MultiTurnVerdict:
    stopped = model_turns != expected_turns
    failing = next((check for check in checks if not check.passed), None)
    official = next(
        (check for check in official_checks if not check.passed and not check.truth_empty), None
    )
    official_error: MultiTurnError | None = (
        "force_terminated" if stopped else official.error if official else None
    )
    if failing is not None:
        failed_turn: int | None = failing.index
        error = failing.error
        reason = _reason(failing)
    elif stopped:
        failed_turn, error = len(checks), "force_terminated"
        reason = f"the run stopped after {model_turns} of {expected_turns} turns"
    else:
        failed_turn, error = None, None
        reason = f"all {expected_turns} turns pass"
    return MultiTurnVerdict(
        passed=failed_turn is None,
        passed_official=official_error is None,
        failed_turn=failed_turn,
        error=error,
        official_error=official_error,
        reason=reason,
        turns=tuple(checks),
    )


def _reason(check: TurnCheck) -> str:
    where = f"turn {check.index + 1}"  # as people count turns (``index`` is from 0)
    if check.error == "call_on_empty_turn":
        return f"{where}: {check.calls} call(s) on a turn the model cannot do (empty ground truth)"
    if check.error == "empty_turn_model_response":
        return f"{where}: no call, where the ground truth makes some"
    if check.error == "instance_state_mismatch":
        places = [f"{c}.{a}" for c, attributes in check.differences.items() for a in attributes]
        return f"{where}: the state differs from the ground truth's in {', '.join(places)}"
    return (
        f"{where}: {len(check.missing)} result(s) of the ground truth's calls missing "
        f"from the model's, such as {check.missing[0][:80]}"
    )


def _shown(mine: Any, want: Any) -> dict[str, str]:
    """Two differing values, brief; of two mappings only the keys whose values differ."""
    if isinstance(mine, Mapping) and isinstance(want, Mapping):
        keys = [k for k in {**want, **mine} if mine.get(k, _ABSENT) != want.get(k, _ABSENT)]
        mine = {k: mine[k] for k in keys if k in mine}
        want = {k: want[k] for k in keys if k in want}
    return {"model": _brief(mine), "ground_truth": _brief(want)}


def _brief(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(json_safe(value), ensure_ascii=False)
    return text if len(text) <= _BRIEF_CHARS else f"{text[: _BRIEF_CHARS - 1]}…"
