"""BFCL multi-turn entries as sessions: BFCL's own APIs as the tools, checked at every turn's end.

One entry is one session of several user turns (``FollowUp``). Its tools are
BFCL's stateful API classes (``environments``), fresh for the entry: a call
runs on them as BFCL runs it, and the result text is what BFCL returns. The
session checks only that a called function exists; its arguments are the
API's to judge, and a repeated call runs again, as in BFCL.

Every call runs behind the entry's fence (``aah.benchmark.fence``): the
session's calls in a thread of their own (the event loop goes on; the calls
of one reply still run one after another, in their order), each within
``AAH_BENCH_CALL_TIMEOUT``; whatever the APIs raise or return is the call's
result text, never the session's failure.

At each turn's end the executor checks the conversation so far with aah's
multi-turn checker (``multi_turn_check``): the model's calls and the ground
truth's run again on instances of their own, as BFCL's checker runs them, so
the verdict does not depend on what the session did with its instances. The
checker keeps its instances from turn to turn (each call runs once in it),
and answers a call that ran out of time in the session as it was answered,
without running it again. The verdict and the instances' state go into the
turn's ``TurnEndedEvent``, written with the turn's checkpoint: the checks see
the arguments as the model gave them, before the log's secret scrubbing
(BFCL's APIs take passwords, which the log redacts by name).

With Aah on, the entry's person (``turn_oracle``) answers a question on a
``miss_param`` turn with the next user turn's text (the information the
benchmark gives anyway) and says the information is not available otherwise.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from aah.benchmark.bfcl.environments import BfclEnvironment, bfcl_fence
from aah.benchmark.bfcl.multi_turn_check import ModelCall, MultiTurnChecker
from aah.benchmark.bfcl.multi_turn_tasks import TURN_STEP_LIMIT, MultiTurnTask
from aah.benchmark.bfcl.tasks import turn_text
from aah.benchmark.bfcl.wheel import api_classes
from aah.runtime import HumanRequest, RanCall, ScriptedHuman, TurnReport
from aah.tools import BUILTIN_TOOLS, EndpointSpec
from aah.tools.http import ToolResult

# A BFCL API's answer to a call it could not carry out starts so (BFCL's words).
EXECUTION_ERROR = "Error during execution"
# A turn's steps: BFCL ends the entry when a turn takes more than 20 model
# replies with calls; the session's limit counts the reply that would be the 21st.
MULTI_TURN_STEP_LIMIT = TURN_STEP_LIMIT + 1
NOT_AVAILABLE = "Sorry, I do not have that information."
# The instances' state as the log keeps it: long texts cut, long lists and
# objects shortened (long_context entries pad their APIs with thousands of
# entries), and at most this much JSON in all.
_STATE_TEXT_CHARS = 300
_STATE_ITEMS = 60
_STATE_JSON_CHARS = 30_000


class BfclTurnExecutor:
    """One entry's tools: BFCL's API instances, and the check at every turn's end."""

    def __init__(self, task: MultiTurnTask, classes: Mapping[str, type] | None = None) -> None:
        """Fresh instances of the entry's API classes, in its starting state.

        Args:
            task: The entry.
            classes: BFCL's API classes (``api_classes()`` when None: modules
                of the entry's own).

        Raises:
            AahError: BFCL's API classes cannot be loaded (the pinned wheel is missing).
        """
        self.task = task
        self.classes = classes
        self.fence = bfcl_fence()
        self.environment = self._fresh()
        self.turn = 0
        self.restored = False
        self._names = {tool.name: tool.original for tool in _all_functions(task)}
        # Each ended turn's calls as the model gave them, kept from the turn's
        # own run of the graph: a later turn's state comes back from the
        # checkpoint, where arguments named like secrets are redacted.
        self._calls: list[list[list[ModelCall]]] | None = None
        self._checker: MultiTurnChecker | None = None
        # The calls of one reply start together (asyncio.gather): they run in turn.
        self._turns_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def _fresh(self) -> BfclEnvironment:
        return BfclEnvironment(
            self.task.involved_classes,
            self.task.initial_config,
            long_context=self.task.long_context,
            classes=self.classes,
            fence=self.fence,
        )

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one call on the entry's instances here; BFCL's result text, errors included."""
        started = time.perf_counter()
        name = self._names.get(spec.qualified_name, spec.qualified_name)
        return _result(name, self.environment.execute(name, dict(arguments)), started)

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """:meth:`call` in a thread of the fence's, after the calls before it have run."""
        async with self._one_at_a_time():
            started = time.perf_counter()
            name = self._names.get(spec.qualified_name, spec.qualified_name)
            text = await self.environment.aexecute(name, dict(arguments))
            return _result(name, text, started)

    def _one_at_a_time(self) -> asyncio.Lock:
        """The lock the calls take in turn (one per event loop: a lock serves one loop)."""
        loop = asyncio.get_running_loop()
        if self._turns_lock is None or self._turns_lock[0] is not loop:
            self._turns_lock = (loop, asyncio.Lock())
        return self._turns_lock[1]

    def close(self) -> None:
        """Nothing to release."""

    def turn_ended(self, turn: int, messages: Sequence[AnyMessage]) -> TurnReport:
        """The entry's state after ``turn``, and the check of every turn up to it."""
        self.turn = turn + 1
        read = model_turns(messages, self._names)
        made = read[turn] if turn < len(read) else []
        earlier = self._calls if self._calls is not None else read
        turns = [*(earlier[:turn] + [[] for _ in range(turn - len(earlier))]), made]
        self._calls = turns
        verdict = self._checked(turns).verdict(turns=turn + 1)
        mine = verdict.turns[turn] if turn < len(verdict.turns) else None
        offered = {tool.original for tool in self.task.functions_at(turn)}
        known = _given_text(messages)
        calls = [
            {
                "name": call.name,
                "offered": call.name in offered,
                "guessed": guessed_values(call.arguments, known),
            }
            for step in made
            for call in step
        ]
        check = {
            "passed": verdict.passed,
            "passed_official": verdict.passed_official,
            "turn_passed": bool(mine.passed) if mine is not None else False,
            "ground_truth_empty": not self.task.ground_truth[turn],
            "error_type": verdict.error,
            "failed_turn": verdict.failed_turn,
            "reason": verdict.reason,
            "calls": calls,
            "guessed": any(call["guessed"] for call in calls),
            "restored": self.restored,
            "stopped": self.environment.stopped,
        }
        return TurnReport(state=bounded_state(self.environment.state()), check=check)

    def _checked(self, turns: list[list[list[ModelCall]]]) -> MultiTurnChecker:
        """The checker with ``turns`` added: the one so far if they extend its turns, else anew."""
        checker = self._checker
        if checker is None or checker.turns != turns[: len(checker.turns)]:
            classes = self.classes if self.classes is not None else api_classes()
            checker = MultiTurnChecker(self.task, classes=classes, fence=self.fence)
        for steps in turns[len(checker.turns) : len(self.task.ground_truth)]:
            checker.add_turn(steps)
        self._checker = checker
        return checker

    def restore(self, calls: Sequence[RanCall]) -> None:
        """Fresh instances with ``calls`` run again on them (a session resumed from a checkpoint).

        The arguments are the checkpoint's, where names like ``password`` are
        redacted: the turn checks after a restore say ``restored``.
        """
        self.environment = self._fresh()
        for call in calls:
            self.environment.execute(self._names.get(call.name, call.name), dict(call.arguments))
        self.restored = bool(calls)
        self._calls = None  # the ended turns' calls are read from the checkpoint
        self._checker = None


def turn_oracle(task: MultiTurnTask, executor: BfclTurnExecutor) -> ScriptedHuman:
    """The person of a multi-turn entry with Aah on (who answers ``ask_human``).

    On a ``miss_param`` turn whose ground truth is empty (a parameter is
    missing), the answer is the next user turn's text: what the benchmark
    gives anyway. Any other question is answered "not available".
    ``executor`` knows which turn is under way.
    """

    def answer(request: HumanRequest) -> str:
        turn = executor.turn
        missing = (
            task.category == "multi_turn_miss_param"
            and turn + 1 < len(task.turns)
            and not task.ground_truth[turn]
        )
        return turn_text(task.turns[turn + 1]) if missing else NOT_AVAILABLE

    return ScriptedHuman(answer, name="bfcl-oracle")


def model_turns(
    messages: Sequence[AnyMessage], names: Mapping[str, str] | None = None
) -> list[list[list[ModelCall]]]:
    """The model's calls in ``messages``: by user turn, by reply, as BFCL decodes them.

    A turn begins at each user message. A reply's calls are the calls it
    made to BFCL's functions (``ask_human`` and ``find_tools`` are aah's,
    not the benchmark's); a reply without such a call is no step. ``names``
    maps an offered tool name back to BFCL's name.
    """
    turns: list[list[list[ModelCall]]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append([])
        elif isinstance(message, AIMessage) and turns:
            calls = [
                ModelCall((names or {}).get(c["name"], c["name"]), dict(c["args"]))
                for c in message.tool_calls
                if c["name"] not in BUILTIN_TOOLS
            ]
            if calls:
                turns[-1].append(calls)
    return turns


def guessed_values(arguments: Mapping[str, Any], given: str) -> list[str]:
    """The argument values (as text) that ``given``, the conversation so far, never holds.

    Parameter hallucination (science.md §3, §6): a call on a turn that lacks
    a parameter, with a value nobody gave. Texts are compared without case;
    a number is given when its digits are; booleans and empty texts are no guess.
    """
    known = given.casefold()
    missing = []
    for value in _leaves(arguments):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            forms = {str(value)}
            if isinstance(value, float) and value.is_integer():
                forms.add(str(int(value)))
            if not any(form in known for form in forms):
                missing.append(str(value))
            continue
        text = str(value).strip()
        if text and text.casefold() not in known:
            missing.append(text)
    return missing


def bounded_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` in the size the log keeps (see the module's bounds); whole when it fits."""
    bounded = {name: _bounded(value, 0) for name, value in state.items()}
    text = json.dumps(bounded, ensure_ascii=False, default=str)
    if len(text) <= _STATE_JSON_CHARS:
        return bounded
    return {"note": f"state of {len(text):,} characters, not kept whole", "classes": sorted(state)}


def _bounded(value: Any, depth: int) -> Any:
    if depth > 20:
        return "…"
    if isinstance(value, str):
        return value if len(value) <= _STATE_TEXT_CHARS else value[:_STATE_TEXT_CHARS] + "…"
    if isinstance(value, Mapping):
        items = list(value.items())
        kept = {str(k): _bounded(v, depth + 1) for k, v in items[:_STATE_ITEMS]}
        if len(items) > _STATE_ITEMS:
            kept["…"] = f"{len(items) - _STATE_ITEMS} more"
        return kept
    if isinstance(value, list | tuple | set):
        items = list(value)
        kept_list = [_bounded(v, depth + 1) for v in items[:_STATE_ITEMS]]
        if len(items) > _STATE_ITEMS:
            kept_list.append(f"… {len(items) - _STATE_ITEMS} more")
        return kept_list
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _given_text(messages: Sequence[AnyMessage]) -> str:
    """What the user, the person asked and the tools said in ``messages``."""
    parts = [
        m.content
        for m in messages
        if isinstance(m, HumanMessage | ToolMessage) and isinstance(m.content, str)
    ]
    return "\n".join(parts)


def _failed(text: str) -> bool:
    if text.startswith(EXECUTION_ERROR):
        return True
    if not text.startswith("{"):
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "error" in parsed


def _result(name: str, text: str, started: float) -> ToolResult:
    return ToolResult(
        ok=not _failed(text),
        text=text,
        latency_ms=(time.perf_counter() - started) * 1000,
        url=f"bfcl:{name}",
        mode="bfcl",
    )


def _all_functions(task: MultiTurnTask) -> list[Any]:
    return [*task.functions, *(tool for tools in task.added.values() for tool in tools)]
