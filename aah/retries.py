"""Retries with backoff: the one policy every network client of aah follows, on tenacity.

A client says which outcomes of a try are worth another one (an exception it
raised, or a result it returned such as an HTTP 503) and how long to pause
before it; the policy bounds the tries, and the pauses by a budget (their
total) and by a deadline (the time a call has left). A pause that does not
fit is not taken: the call ends at once with its last outcome, rather than
sleeping only to fail afterwards. The last outcome is what the caller sees:
the result returned, the exception raised, unless ``on_stop`` makes a better
one (a line naming the server's rate limit, say).

The sleep is a parameter, so a test records the pauses instead of waiting.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import tenacity

__all__ = ["Backoff", "Outcome", "RetryPolicy", "Stopped", "call_with_retries", "retry_async"]

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Pauses that double from ``first`` seconds up to ``cap``.

    Attributes:
        first: The pause before the second try.
        cap: The longest pause (``math.inf``: no cap).
        jitter: Up to this fraction of each pause is taken off at random, so
            many clients that failed together do not come back together.
    """

    first: float
    cap: float = math.inf
    jitter: float = 0.0

    def seconds(self, retry: int) -> float:
        """The pause before retry number ``retry + 1`` (0: before the second try)."""
        delay = min(self.first * 2.0**retry, self.cap)
        return delay * (1 - self.jitter * random.random()) if self.jitter else delay


class Outcome(NamedTuple, Generic[T]):
    """What one try ended with: its result, or the exception it raised."""

    result: T | None
    error: BaseException | None

    def unwrap(self) -> T:
        """The result, or the exception raised again."""
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # a try may return None


@dataclass(frozen=True)
class Stopped(Generic[T]):
    """A call that ended without a try worth keeping.

    Attributes:
        last: The last try's outcome.
        tries: How many tries were made.
        refused_pause: The pause that did not fit the budget or the deadline;
            None when the tries ran out.
    """

    last: Outcome[T]
    tries: int
    refused_pause: float | None


@dataclass(frozen=True)
class RetryPolicy(Generic[T]):
    """When a call is tried again, and after how long.

    Attributes:
        tries: Tries in all, the first included (fewer than 1 counts as 1).
        backoff: The pauses between tries.
        retry_error: Whether an exception a try raised is worth another try.
        retry_result: Whether a result a try returned is worth another try.
        pause: The pause before retry number ``retry + 1`` after ``outcome``
            (the server may ask for one); default: the backoff's.
        budget: The most seconds all pauses together may take; None: no bound.
        time_left: The seconds the call has left (its deadline); a pause
            longer than that is not taken. None: no deadline.
        before_pause: Called with the outcome a pause follows (to close a
            response that will not be read).
        on_stop: What the call ends with when no try succeeded; default: the
            last outcome as is (its result returned, its exception raised).
    """

    tries: int
    backoff: Backoff
    retry_error: Callable[[BaseException], bool] = lambda error: False
    retry_result: Callable[[T], bool] = lambda result: False
    pause: Callable[[int, Outcome[T]], float] | None = None
    budget: float | None = None
    time_left: Callable[[], float] | None = None
    before_pause: Callable[[Outcome[T]], None] | None = None
    on_stop: Callable[[Stopped[T]], T] | None = None

    def _options(self) -> dict[str, Any]:
        """The keyword arguments of a tenacity retrier that follows this policy."""
        return {
            "retry": tenacity.retry_if_exception(self._retry_error)
            | tenacity.retry_if_result(self.retry_result),
            # tenacity computes the pause before it asks whether to stop (8.3+),
            # so the stop condition can weigh the pause against the time left.
            "wait": self._wait,
            "stop": self._stop,
            "before_sleep": self._before_sleep if self.before_pause else None,
            "retry_error_callback": self._stopped,
        }

    def _retry_error(self, error: BaseException) -> bool:
        # A cancellation or Ctrl-C ends the call, whatever the client's predicate says.
        return isinstance(error, Exception) and self.retry_error(error)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        retry = state.attempt_number - 1
        if self.pause is None:
            return self.backoff.seconds(retry)
        return self.pause(retry, _outcome(state))

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        return state.attempt_number >= self.tries or not self._fits(state)

    def _fits(self, state: tenacity.RetryCallState) -> bool:
        pause = state.upcoming_sleep
        if self.budget is not None and state.idle_for + pause > self.budget:
            return False
        return self.time_left is None or pause <= self.time_left()

    def _before_sleep(self, state: tenacity.RetryCallState) -> None:
        if self.before_pause is not None:
            self.before_pause(_outcome(state))

    def _stopped(self, state: tenacity.RetryCallState) -> T:
        refused = None if state.attempt_number >= self.tries else state.upcoming_sleep
        stopped: Stopped[T] = Stopped(_outcome(state), state.attempt_number, refused)
        if self.on_stop is not None:
            return self.on_stop(stopped)
        return stopped.last.unwrap()


def call_with_retries(
    policy: RetryPolicy[T],
    attempt: Callable[[int], T],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``attempt(n)`` for tries n = 1, 2, ... as ``policy`` says; blocking.

    Returns:
        The first result not worth retrying, or what the policy stops with.
    """
    tries = itertools.count(1)
    retrier = tenacity.Retrying(sleep=sleep, **policy._options())
    result: T = retrier(lambda: attempt(next(tries)))
    return result


async def retry_async(
    policy: RetryPolicy[T],
    attempt: Callable[[int], Awaitable[T]],
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """:func:`call_with_retries` for a coroutine; the pauses do not block the loop.

    tenacity's own decisions drive the loop (``Retrying.iter``), as in its
    ``AsyncRetrying``, which also runs each decision as a coroutine of its
    own and so costs two thirds more CPU a call (the model client makes
    several calls per task).
    """
    retrier = tenacity.Retrying(**policy._options())
    retrier.begin()
    state = tenacity.RetryCallState(retrier, fn=None, args=(), kwargs={})
    tries = 0
    while True:
        action = retrier.iter(state)
        if isinstance(action, tenacity.DoAttempt):
            tries += 1
            try:
                result = await attempt(tries)
            except BaseException:  # tenacity decides; a cancellation is raised again at once
                state.set_exception(sys.exc_info())  # type: ignore[arg-type]
            else:
                state.set_result(result)
        elif isinstance(action, tenacity.DoSleep):
            state.prepare_for_next_attempt()
            await sleep(action)
        else:
            done: T = action
            return done


def _outcome(state: tenacity.RetryCallState) -> Outcome[Any]:
    future = state.outcome
    if future is None:  # tenacity sets it before it asks for a pause or a stop
        raise AssertionError("no try has ended yet")
    if future.failed:
        return Outcome(None, future.exception())
    return Outcome(future.result(), None)
