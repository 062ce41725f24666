"""BFCL's API classes behind the fence: calls that failed sessions, ran away or leaked precision.

Before the fence, ``power(base=10, exponent=5000)`` raised out of
``BfclEnvironment.execute`` (the conversion of its result sat outside the
call's error handling) and failed the session as a bug in aah;
``logarithm(..., precision=150000)`` ran for seconds on the event loop; and
a precision a call set stayed set for the whole process.
"""

from __future__ import annotations

import asyncio
import decimal
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mpmath
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from test_bfcl_multi_turn import calls_reply, events_of, run

from aah.benchmark.bfcl.environments import BfclEnvironment, bfcl_fence
from aah.benchmark.bfcl.multi_turn_check import check_multi_turn
from aah.benchmark.bfcl.multi_turn_run import BfclTurnExecutor
from aah.benchmark.bfcl.multi_turn_tasks import MultiTurnTask, load_multi_turn
from aah.benchmark.bfcl.runner import tool_specs
from aah.benchmark.bfcl.wheel import api_classes
from aah.benchmark.fence import SETTING
from aah.events import ToolCallEvent, TurnEndedEvent
from aah.testing.fake_llm import FakeLLMServer

UNPRINTABLE = (
    "Error during execution: Exceeds the limit (4300 digits) for integer string conversion; "
    "use sys.set_int_max_str_digits() to increase the limit"
)


@pytest.fixture(scope="module")
def classes(bfcl_wheel: Path) -> Any:
    return api_classes(bfcl_wheel)


@pytest.fixture(scope="module")
def entry(shared_data: Path) -> MultiTurnTask:
    # Two turns over GorillaFileSystem and MathAPI.
    (task,) = [
        t
        for t in load_multi_turn(shared_data / "bfcl", ["multi_turn_base"])
        if t.id == "multi_turn_base_31"
    ]
    return task


def math(classes: Any) -> BfclEnvironment:
    return BfclEnvironment(["MathAPI"], {}, classes=classes)


def test_a_result_python_cannot_print_is_bfcls_error_text(classes: Any) -> None:
    env = math(classes)
    # Computed: the product has 4,401 digits, and BFCL's str() of it fails.
    assert env.execute("multiply", {"a": 10**2200, "b": 10**2200}) == UNPRINTABLE
    # Answered without computing 10**5000 (or 10**10**9), with the same text.
    assert env.execute("power", {"base": 10, "exponent": 5000}) == UNPRINTABLE
    started = time.monotonic()
    assert env.execute("power", {"base": -7, "exponent": 10**9}) == UNPRINTABLE
    assert env.execute("round_number", {"number": 5, "decimal_places": -(10**9)}) == (
        '{"result": 0}'
    )
    assert time.monotonic() - started < 1
    # Ordinary calls are BFCL's.
    assert env.execute("power", {"base": 2, "exponent": 10}) == '{"result": 1024}'
    assert env.execute("power", {"base": 10, "exponent": 4000}).startswith('{"result": 1000')
    assert env.execute("round_number", {"number": 1234, "decimal_places": -2}) == (
        '{"result": 1200}'
    )
    assert env.stopped is None


def test_a_precision_past_the_bound_is_refused_at_once(classes: Any) -> None:
    env = math(classes)
    started = time.monotonic()
    for name, arguments in [
        ("logarithm", {"value": 2, "base": 3, "precision": 150_000}),
        ("logarithm", {"value": 2, "base": 3, "precision": "150000"}),
        ("logarithm", {"value": 2, "base": 3, "precision": 1e9}),
        ("square_root", {"number": 2, "precision": 1_000_000}),
    ]:
        text = env.execute(name, arguments)
        assert text.startswith("Error during execution: precision ") and "10,000 digits" in text
    assert time.monotonic() - started < 1
    assert env.execute("logarithm", {"value": 2, "base": 3, "precision": 12}).startswith(
        "{'result': mpf('0.6309297535714"
    )
    assert env.execute("square_root", {"number": -4, "precision": 10**6}) == (
        '{"error": "Cannot calculate square root of a negative number"}'
    )


def test_a_precision_a_call_sets_stays_in_its_entry(bfcl_wheel: Path) -> None:
    first_classes, second_classes = api_classes(bfcl_wheel), api_classes(bfcl_wheel)
    first = math(first_classes)
    process_digits, process_precision = mpmath.mp.dps, decimal.getcontext().prec
    assert "0.6309297535714574370995271143427608542995" in first.execute(
        "logarithm", {"value": 2, "base": 3, "precision": 40}
    )
    assert first.execute("square_root", {"number": 2, "precision": 50}).startswith(
        "{'result': Decimal('1.4142135623730950488016887242096980785696718753769"
    )
    # The process's mpmath and decimal are as they were...
    assert (mpmath.mp.dps, decimal.getcontext().prec) == (process_digits, process_precision)
    # ...and the next entry's modules start from mpmath's default.
    assert _module_mpmath(first_classes).mp.dps == 40
    assert _module_mpmath(second_classes).mp.dps == 15
    assert first._enclosure.decimal_context.prec == 50
    assert math(second_classes)._enclosure.decimal_context.prec == 28


def _module_mpmath(classes: Any) -> Any:
    return classes["MathAPI"].logarithm.__globals__["mpmath"]


def test_a_runaway_call_is_stopped_off_the_event_loop(
    classes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A logarithm to 10,000 digits takes about 0.1 s of mpmath's pure Python.
    monkeypatch.setenv(SETTING, "0.01")
    env = math(classes)

    async def main() -> tuple[list[str], float]:
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = time.monotonic()
            while not done.is_set():
                await asyncio.sleep(0.002)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()

        ticking = asyncio.create_task(ticker())
        texts = [
            await env.aexecute("logarithm", {"value": 2, "base": 3, "precision": 10_000}),
            await env.aexecute("mean", {"numbers": [1, 2]}),
        ]
        done.set()
        await ticking
        return texts, max(gaps)

    (slow, after), worst_gap = asyncio.run(main())
    assert slow == (
        "Error during execution: logarithm took longer than 0.01 s and was stopped "
        f"({SETTING}); this environment's state is not known past it"
    )
    assert after == env.stopped and after.startswith("Error during execution: not run")
    assert worst_gap < 0.25


class Slow:
    """An API whose ``spin`` never returns by itself."""

    def _load_scenario(self, scenario: dict[str, Any], long_context: bool = False) -> None:
        self.calls = 0

    def spin(self) -> None:
        while True:
            self.calls += 1

    def ping(self) -> str:
        return "pong"


def test_the_ground_truths_replay_runs_behind_the_fence() -> None:
    task = SimpleNamespace(
        id="slow_0",
        involved_classes=("Slow",),
        initial_config={},
        long_context=False,
        ground_truth=(("ping()", "spin()"),),
    )
    started = time.monotonic()
    verdict = check_multi_turn(task, [[[]]], classes={"Slow": Slow}, fence=bfcl_fence(0.05))
    assert time.monotonic() - started < 2
    assert not verdict.passed and not verdict.passed_official


def test_the_check_answers_a_call_that_ran_out_of_time_without_running_it(
    entry: MultiTurnTask, bfcl_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class SlowMath(api_classes(bfcl_wheel)["MathAPI"]):  # type: ignore[misc]
        runs = 0

        def power(self, base: float, exponent: float) -> Any:
            SlowMath.runs += 1
            while True:
                pass

    monkeypatch.setenv(SETTING, "0.2")
    classes = {**api_classes(bfcl_wheel), "MathAPI": SlowMath}
    executor = BfclTurnExecutor(entry, classes)
    (spec,) = [s for s in tool_specs(entry.functions) if s.name == "power"]
    first = asyncio.run(executor.acall(spec, {"base": 2, "exponent": 3}))
    assert not first.ok and "power took longer than 0.2 s" in first.text
    messages = [
        HumanMessage("first turn"),
        AIMessage(
            "", tool_calls=[{"id": "1", "name": "power", "args": {"base": 2, "exponent": 3}}]
        ),
        ToolMessage(first.text, tool_call_id="1"),
        AIMessage("Done."),
    ]
    started = time.monotonic()
    report = executor.turn_ended(0, messages)
    assert time.monotonic() - started < 0.2  # not run again: answered as it was
    assert SlowMath.runs == 1
    assert report.check is not None and report.check["stopped"] == executor.environment.stopped
    assert report.check["passed"] is False


def test_a_session_whose_calls_cannot_be_printed_or_run_long_ends_well(
    entry: MultiTurnTask, tmp_path: Path, bfcl_wheel: Path
) -> None:
    calls = [
        "power(base=10, exponent=5000)",
        "logarithm(value=2, base=3, precision=150000)",
        "square_root(number=2, precision=1000000)",
    ]
    script = {"replies": [calls_reply(calls), "Done.", "Done."], "exhausted": "error"}
    db = tmp_path / "mt.db"
    with FakeLLMServer(script) as llm:
        summary = run(entry, db, llm)
    assert summary.finished == 1 and summary.errors == 0
    events = events_of(db)
    results = {e.tool: e.result for e in events if isinstance(e, ToolCallEvent)}
    assert results["power"] == UNPRINTABLE
    assert "precision 150,000 is over" in str(results["logarithm"])
    assert "precision 1,000,000 is over" in str(results["square_root"])
    ended = [e for e in events if isinstance(e, TurnEndedEvent)]
    assert len(ended) == 2 and all(e.check and e.check["stopped"] is None for e in ended)
    json.dumps([e.check for e in ended])
