"""The fence around foreign environment code: time bounds, result texts, per-environment state."""

from __future__ import annotations

import asyncio
import decimal
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import mpmath
import pytest

from aah.benchmark.fence import (
    MAX_INT_DIGITS,
    SETTING,
    Fence,
    argument_refusal,
    private_mpmath,
    text_of,
)
from aah.bounds import OutOfBounds
from aah.config import get_settings
from aah.errors import AahError

BOUND = 0.2


def spin() -> str:
    """A pure-Python loop that never ends by itself."""
    while True:
        pass


def test_a_runaway_call_is_stopped_and_its_environment_says_so_after() -> None:
    fence = Fence(BOUND, error_prefix="E: ")
    stuck, other = fence.enclosure(), fence.enclosure()
    started = time.monotonic()
    text = stuck.run(spin, label="spin", key=lambda: "spin()")
    assert time.monotonic() - started < BOUND + 1
    assert text == (
        f"E: spin took longer than {BOUND:g} s and was stopped ({SETTING}); "
        "this environment's state is not known past it"
    )
    assert stuck.stopped is not None and stuck.stopped.startswith("E: not run: before this call")
    # Every later call of that environment answers so, without running.
    ran: list[bool] = []
    assert stuck.run(lambda: ran.append(True) or "x") == stuck.stopped
    assert ran == []
    # Another environment of the entry runs, but the same call is answered from memory.
    assert other.run(lambda: "fine") == "fine"
    started = time.monotonic()
    assert other.run(spin, label="spin", key=lambda: "spin()") == text
    assert time.monotonic() - started < BOUND / 2
    assert other.stopped is not None
    # A new entry (fence) has no such memory.
    assert Fence(BOUND).enclosure().run(lambda: "fresh", key=lambda: "spin()") == "fresh"


def test_a_call_that_catches_the_stop_is_stopped_again_and_still_ran_out_of_time() -> None:
    caught = []

    def stubborn() -> str:
        for _ in range(3):
            try:
                spin()
            except BaseException:  # noqa: BLE001 - foreign code that swallows everything
                caught.append(True)
        return "ended, past its deadline"

    started = time.monotonic()
    enclosure = Fence(BOUND).enclosure()
    text = enclosure.run(stubborn)
    assert len(caught) == 3  # stopped again a tenth of a second after each
    assert time.monotonic() - started < BOUND + 0.1 * 3 + 1
    assert "took longer than" in text and enclosure.stopped is not None


def test_a_runaway_call_does_not_stall_the_event_loop() -> None:
    release = threading.Event()

    def never_stops() -> str:
        # Catches every stop: only the coroutine's own deadline ends the wait.
        while not release.is_set():
            try:
                while not release.is_set():
                    pass
            except BaseException:  # noqa: BLE001, S110 - the worst foreign code
                pass
        return "released"

    async def main() -> tuple[list[str], float, float]:
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = time.monotonic()
            while not done.is_set():
                await asyncio.sleep(0.005)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticking = asyncio.create_task(ticker())
        fence = Fence(BOUND, error_prefix="E: ")
        started = time.monotonic()
        texts = await asyncio.gather(
            fence.enclosure().arun(spin, label="spin"),
            fence.enclosure().arun(never_stops, label="never_stops"),
        )
        took = time.monotonic() - started
        done.set()
        await ticking
        return texts, took, max(gaps)

    try:
        texts, took, worst_gap = asyncio.run(main())
    finally:
        release.set()
    assert all("took longer than" in text for text in texts), texts
    # The stubborn one is given up on a second past the bound.
    assert took < BOUND + 1.5
    # The loop kept ticking (a thread gets the interpreter back every few ms).
    assert worst_gap < 0.25


def test_what_a_call_raises_or_returns_becomes_its_text() -> None:
    enclosure = Fence(BOUND, error_prefix="E: ").enclosure()

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text for you")

    class Mute(Exception):
        def __str__(self) -> str:
            raise ValueError("nor for me")

    def raises(exc: BaseException) -> Callable[[], Any]:
        def call() -> Any:
            raise exc

        return call

    assert enclosure.run(lambda: {"a": 1}) == "{'a': 1}"
    assert enclosure.run(raises(ValueError("bad"))) == "E: bad"
    assert enclosure.run(raises(SystemExit(3))) == "E: 3"
    assert enclosure.run(raises(GeneratorExit("gone"))) == "E: gone"
    assert enclosure.run(raises(Mute())) == "E: Mute, whose message cannot be shown"
    assert enclosure.run(lambda: 10**5000).startswith(
        "the result (int) cannot be shown as text: Exceeds the limit (4300 digits)"
    )
    assert enclosure.run(Unprintable) == (
        "the result (Unprintable) cannot be shown as text: no text for you"
    )
    assert enclosure.run(lambda: sys.setrecursionlimit(50) or "changed") == "changed"
    assert sys.getrecursionlimit() > 50
    assert enclosure.stopped is None
    # The user's Ctrl-C is the user's.
    with pytest.raises(KeyboardInterrupt):
        enclosure.run(raises(KeyboardInterrupt()))
    assert decimal.getcontext() is not enclosure.decimal_context  # put back all the same
    assert text_of(Unprintable()).startswith("the result (Unprintable)")


def test_each_environment_has_its_own_decimal_context() -> None:
    fence = Fence(BOUND)
    first, second = fence.enclosure(), fence.enclosure()

    def set_precision() -> str:
        decimal.getcontext().prec = 99
        return "set"

    def precision() -> str:
        return str(decimal.getcontext().prec)

    before = decimal.getcontext().prec
    first.run(set_precision)
    assert first.run(precision) == "99"  # kept for the environment's later calls
    assert second.run(precision) == str(decimal.DefaultContext.prec)
    assert decimal.getcontext().prec == before


def test_a_private_mpmath_keeps_its_precision_to_itself() -> None:
    before = mpmath.mp.dps
    own, other = private_mpmath(), private_mpmath()
    own.mp.dps = 60
    assert len(str(own.log(2))) > 55
    assert (mpmath.mp.dps, other.mp.dps) == (before, 15)
    assert own.pi == own.mp.pi and own.mpf is own.mp.mpf


def test_arguments_past_the_bounds_are_refused_unread() -> None:
    assert argument_refusal({"a": [1, 2.5, float("nan"), "x" * 1000, {"b": 10**4000}]}) is None
    huge = argument_refusal({"n": [{"deep": 1 << 20000}]})
    assert huge == f"an integer argument of about 6,020 digits is over {MAX_INT_DIGITS:,} digits"
    assert argument_refusal({10**5000: 1}) is not None  # a key is an argument too
    nested: Any = 1
    for _ in range(150):
        nested = [nested]
    assert argument_refusal({"x": nested}) == "the arguments nest deeper than 100 levels"


def test_the_time_bound_is_a_number_of_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in (0, -1, float("nan"), float("inf"), "soon", 1e18):
        with pytest.raises(OutOfBounds, match=SETTING):
            Fence(bad)  # type: ignore[arg-type]
    monkeypatch.setenv(SETTING, "2.5")
    assert Fence().seconds == 2.5
    for bad_text in ("0", "nan", "1e18", "soon"):
        monkeypatch.setenv(SETTING, bad_text)
        with pytest.raises(AahError, match=SETTING) as error:
            get_settings()
        assert "\n" not in str(error.value)
    monkeypatch.delenv(SETTING)
    assert Fence().seconds == 10.0


def test_a_forked_child_has_a_fence_of_its_own() -> None:
    # Worker processes fork: the parent's watchdog thread is not in the child.
    assert Fence(BOUND).enclosure().run(lambda: "the parent's watchdog runs") != ""
    child_says, parent_hears = multiprocessing.get_context("fork").Pipe()
    child = multiprocessing.get_context("fork").Process(
        target=lambda: child_says.send(Fence(BOUND).enclosure().run(spin, label="spin"))
    )
    child.start()
    try:
        assert parent_hears.poll(BOUND + 10)
        assert parent_hears.recv().startswith("spin took longer than")
    finally:
        child.kill()
        child.join(5)
