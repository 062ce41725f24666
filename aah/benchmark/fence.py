"""A fence around someone else's environment code (BFCL's API classes, τ²-bench's domains).

A benchmark that runs another project's code on the model's arguments runs
each call through an :class:`Enclosure` (one per environment: one entry's
instances) of a :class:`Fence` (one per entry), which

- bounds each call's time (``AAH_BENCH_CALL_TIMEOUT``, 10 s by default): at
  the deadline :class:`CallOutOfTime` is raised inside the running code (a
  ``BaseException``, so code that catches ``Exception`` does not swallow it),
  again every tenth of a second until the call stops; the call's result is
  then a line saying it took too long (even if it swallowed the stop and
  ended), and the enclosure is *stopped*: its state is whatever the call
  left half done, so every later call of that environment answers so
  without running;
- runs a call from a coroutine (:meth:`Enclosure.arun`) in a thread of the
  fence's, so a long call never holds the event loop (a pure-Python loop
  gives the loop the interpreter every few milliseconds), and answers at
  most a second past the bound whatever the call does (one that swallows
  every stop keeps its thread); a call from synchronous code
  (:meth:`Enclosure.run`, a checker's replay) runs in the caller's thread
  under the same deadline, for a few microseconds a call, not a thread's
  hand-over;
- turns whatever the call raises, and a result that cannot become text (an
  ``int`` past Python's 4,300 digits, an object whose ``str`` raises), into
  the call's result text, never the caller's exception (``KeyboardInterrupt``
  aside: that is the user's);
- gives each environment its own :mod:`decimal` context (set in the thread a
  call runs in, so ``getcontext().prec = 10**6`` stays inside it) and puts
  back the recursion limit and the integer digit limit if a call changed
  them; :func:`private_mpmath` is an ``mpmath`` with a context of its own,
  for code whose modules are loaded once per entry;
- says which arguments a caller should refuse before any code sees them
  (:func:`argument_refusal`: over 100 levels of nesting, an integer of more
  than 4,300 digits, measured by its bits);
- remembers, for the whole entry, the calls that ran out of time: the same
  call again (a checker's replay of the model's calls) stops at once with
  the same answer instead of holding its caller for the time bound again.

What a thread cannot do: a single step of C code (one multiplication of two
huge integers, ``decimal`` at a million digits) holds the interpreter until
it ends, and the exception lands after it. A benchmark refuses the arguments
that would start such a step before the call (BFCL: ``call_guards``).
"""

from __future__ import annotations

import asyncio
import ctypes
import decimal
import math
import os
import queue
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from aah.bounds import MAX_NESTING, check_seconds, nesting

# The setting that bounds a call, named in the line a stopped call answers.
SETTING = "AAH_BENCH_CALL_TIMEOUT"
# Python's own limit on an integer's decimal digits (sys.get_int_max_str_digits):
# an integer argument longer than this could not even be printed.
MAX_INT_DIGITS = 4_300
# How long a coroutine waits past the deadline for a stopped call's thread to
# hand back (it is inside C code that holds no interpreter, such as a sleep).
_GRACE_SECONDS = 1.0
# How often the stop is raised again inside a call that caught it.
_REFIRE_SECONDS = 0.1
# Threads a process keeps for fenced calls: past this many calls that will
# not stop (code that catches every exception in a loop), no more run.
_MAX_THREADS = 64
_LOG2_10 = math.log2(10)


class CallOutOfTime(BaseException):  # noqa: N818 - raised inside foreign code: not an "Error" it may catch
    """Raised inside a fenced call at its deadline."""


class _Outcome(NamedTuple):
    """The result of one guarded attempt: its text, or that it ran out of time."""

    text: str
    timed_out: bool = False


_TIMED_OUT = _Outcome("", timed_out=True)


class Fence:
    """The time bound for one entry's calls, and the calls of the entry that ran out of it.

    Args:
        seconds: The time one call may run; ``AAH_BENCH_CALL_TIMEOUT`` when None.
        error_prefix: What every result text of a failure starts with (BFCL's
            ``"Error during execution: "``), so the caller reads it as one.

    Raises:
        OutOfBounds: ``seconds`` is not a number of seconds above 0 (at most 30 days).
    """

    def __init__(self, seconds: float | None = None, *, error_prefix: str = "") -> None:
        """Bound the entry's calls (see the class)."""
        if seconds is None:
            from aah.config import get_settings

            seconds = get_settings().bench_call_timeout
        self.seconds = check_seconds(seconds, SETTING)
        self.error_prefix = error_prefix
        self._slow: dict[str, str] = {}

    def enclosure(self) -> Enclosure:
        """A new environment's enclosure: its own decimal context, not stopped."""
        return Enclosure(self)

    @property
    def remembers_any(self) -> bool:
        """Whether some call of this entry ran out of time."""
        return bool(self._slow)

    def remembered(self, key: str) -> str | None:
        """The answer of a call with ``key`` that ran out of time in this entry, else None."""
        return self._slow.get(key)

    def remember(self, key: str, text: str) -> None:
        """Keep ``text`` as the answer of the call with ``key`` (it ran out of time)."""
        self._slow[key] = text


class Enclosure:
    """One environment's calls behind its fence (see the module)."""

    def __init__(self, fence: Fence) -> None:
        """An enclosure of ``fence``; use :meth:`Fence.enclosure`."""
        self.fence = fence
        self.decimal_context = decimal.Context()
        self._stopped: str | None = None

    @property
    def stopped(self) -> str | None:
        """Why the environment stopped (a call ran out of time), or None while it runs."""
        return self._stopped

    def run(
        self,
        work: Callable[[], object],
        *,
        label: str = "the call",
        key: Callable[[], str] | None = None,
    ) -> str:
        """``work()``'s text, run in this thread within the time bound; never raises.

        For synchronous callers (a checker's replay): no thread to hand over
        to, so a few microseconds a call. Code that catches the stop every
        time it is raised, forever, would hold this thread; :meth:`arun`
        gives up on such a call a second past the bound.

        Args:
            work: The call (its result as text; anything else is made text).
            label: The call as the line about a stopped call names it.
            key: The call's identity (name and arguments) for the entry's
                memory of calls that ran out of time; None: not remembered.
        """
        early = self._early(key)
        if early is not None:
            return early
        return self._settle(_guarded(work, self), label, key)

    async def arun(
        self,
        work: Callable[[], object],
        *,
        label: str = "the call",
        key: Callable[[], str] | None = None,
    ) -> str:
        """:meth:`run` in one of the fence's threads: the event loop goes on while it runs.

        The answer comes at most a second past the bound, whatever the call
        does: one that will not stop keeps its thread, never the caller.
        """
        early = self._early(key)
        if early is not None:
            return early
        loop = asyncio.get_running_loop()
        done: asyncio.Future[_Outcome] = loop.create_future()

        def hand_back(outcome: _Outcome) -> None:
            if not done.done():
                done.set_result(outcome)

        job = _Job(work, self, lambda outcome: loop.call_soon_threadsafe(hand_back, outcome))
        if not _POOL.start(job):
            return self._busy()
        try:
            outcome = await asyncio.wait_for(
                asyncio.shield(done), self.fence.seconds + _GRACE_SECONDS
            )
        except TimeoutError:
            job.given_up = True
            outcome = _TIMED_OUT
        return self._settle(outcome, label, key)

    def _busy(self) -> str:
        return (
            f"{self.fence.error_prefix}not run: {_MAX_THREADS} earlier calls are still running "
            f"past their time bound ({SETTING}); this process cannot run more"
        )

    def _early(self, key: Callable[[], str] | None) -> str | None:
        """The answer without running: the environment stopped, or the call ran out of time once."""
        if self._stopped is not None:
            return self._stopped
        if key is not None and self.fence.remembers_any:
            text = self.fence.remembered(key())
            if text is not None:
                self._stop(text.removeprefix(self.fence.error_prefix).split(";")[0])
                return text
        return None

    def _settle(self, outcome: _Outcome, label: str, key: Callable[[], str] | None) -> str:
        if not outcome.timed_out:
            return outcome.text
        took = f"{label} took longer than {self.fence.seconds:g} s and was stopped ({SETTING})"
        text = f"{self.fence.error_prefix}{took}; this environment's state is not known past it"
        if key is not None:
            self.fence.remember(key(), text)
        self._stop(took)
        return text

    def _stop(self, took: str) -> None:
        self._stopped = (
            f"{self.fence.error_prefix}not run: before this call, {took}, so this "
            "environment's state is not known"
        )


def argument_refusal(arguments: Any, *, max_digits: int = MAX_INT_DIGITS) -> str | None:
    """Why ``arguments`` may not reach foreign code, or None: too deep, or an integer too long.

    The integers are measured by their bits, never printed.
    """
    if nesting(arguments) > MAX_NESTING:
        return f"the arguments nest deeper than {MAX_NESTING} levels"
    stack = [arguments]
    most_bits = max_digits * _LOG2_10
    while stack:
        value = stack.pop()
        if isinstance(value, int) and value.bit_length() > most_bits:
            digits = int(value.bit_length() / _LOG2_10)
            return f"an integer argument of about {digits:,} digits is over {max_digits:,} digits"
        if isinstance(value, dict):
            stack.extend(value.values())
            stack.extend(value)
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(value)
    return None


def text_of(value: object) -> str:
    """``value`` as text, or a line saying it cannot be shown (``str`` raised); never raises."""
    if type(value) is str:
        return value
    try:
        return str(value)
    except (CallOutOfTime, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - foreign objects may raise anything
        return f"the result ({type(value).__name__}) cannot be shown as text: {_message(exc)}"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except (CallOutOfTime, KeyboardInterrupt):
        raise
    except BaseException:  # noqa: BLE001 - an exception whose message raises
        return f"{type(exc).__name__}, whose message cannot be shown"


def _attempt(work: Callable[[], object], prefix: str) -> str:
    try:
        return text_of(work())
    except (CallOutOfTime, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever foreign code raises is its result
        return f"{prefix}{_message(exc)}"


def _guarded(work: Callable[[], object], enclosure: Enclosure) -> _Outcome:
    """Run ``work`` in this thread with the enclosure's decimal context, stopped at the deadline."""
    saved_context = decimal.getcontext()
    saved_limits = (sys.getrecursionlimit(), sys.get_int_max_str_digits())
    outcome = _TIMED_OUT
    alarm = _WATCHDOG.arm(enclosure.fence.seconds)
    try:
        try:
            try:
                decimal.setcontext(enclosure.decimal_context)
                outcome = _Outcome(_attempt(work, enclosure.fence.error_prefix))
            finally:
                _WATCHDOG.disarm(alarm)
        except CallOutOfTime:  # raised on the way out of the call, before the alarm was off
            _WATCHDOG.disarm(alarm)
    finally:  # the alarm is off: nothing more is raised here
        decimal.setcontext(saved_context)
        if (sys.getrecursionlimit(), sys.get_int_max_str_digits()) != saved_limits:
            sys.setrecursionlimit(saved_limits[0])
            sys.set_int_max_str_digits(saved_limits[1])
    # Past the deadline, even if the call swallowed the stop and ended.
    return _TIMED_OUT if alarm.fired else outcome


class _Job:
    """One call handed to a fence thread, and how its outcome goes back to the caller."""

    def __init__(
        self,
        work: Callable[[], object],
        enclosure: Enclosure,
        notify: Callable[[_Outcome], object],
    ) -> None:
        self.work = work
        self.enclosure = enclosure
        self.notify = notify
        # Set by a caller that stopped waiting: a call not yet started never starts.
        self.given_up = False

    def finish(self, outcome: _Outcome) -> None:
        try:
            self.notify(outcome)
        except RuntimeError:  # the caller's event loop closed meanwhile
            pass


class _Pool:
    """The threads fenced calls run in: an idle one is reused, a new one started when none is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Job]] = []
        self._busy = 0

    def start(self, job: _Job) -> bool:
        """Hand ``job`` to a thread; False when :data:`_MAX_THREADS` are all still busy."""
        with self._lock:
            if self._idle:
                inbox = self._idle.pop()
            elif self._busy >= _MAX_THREADS:
                return False
            else:
                inbox = queue.SimpleQueue()
                threading.Thread(
                    target=self._serve, args=(inbox,), name="aah-fenced-call", daemon=True
                ).start()
            self._busy += 1
        inbox.put(job)
        return True

    def _serve(self, inbox: queue.SimpleQueue[_Job]) -> None:
        while True:
            job = inbox.get()
            job.finish(_TIMED_OUT if job.given_up else _guarded(job.work, job.enclosure))
            with self._lock:
                self._busy -= 1
                self._idle.append(inbox)


@dataclass
class _Alarm:
    thread_id: int
    deadline: float
    active: bool = True
    fired: bool = False


class _Watchdog:
    """One thread that raises :class:`CallOutOfTime` in threads whose calls ran past their deadline.

    An alarm is switched off under the same lock the watchdog fires under, and
    switching it off clears a stop that was raised but not yet delivered: once
    :meth:`disarm` returns, nothing more is raised in that thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._alarms: dict[int, _Alarm] = {}
        self._planned: float | None = None
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float) -> _Alarm:
        alarm = _Alarm(threading.get_ident(), time.monotonic() + seconds)
        with self._wake:
            self._alarms[id(alarm)] = alarm
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="aah-fence-watchdog", daemon=True
                )
                self._thread.start()
            if self._planned is None or alarm.deadline < self._planned:
                self._wake.notify()
        return alarm

    def disarm(self, alarm: _Alarm) -> None:
        """Switch ``alarm`` off (in its own thread); a stop raised but not delivered lands here.

        A pending stop is never cleared with ``PyThreadState_SetAsyncExc(id, NULL)``:
        on Python 3.11 that leaves the interpreter's eval breaker set with no
        exception for any thread to take, and the next thread to meet it spins
        for ever. It is delivered instead, inside this method, and caught.
        """
        while alarm.active:
            try:
                with self._lock:
                    if alarm.active:
                        alarm.active = False
                        self._alarms.pop(id(alarm), None)
            except CallOutOfTime:
                continue
        if alarm.fired:
            _deliver_pending_stop()

    def _watch(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                for alarm in list(self._alarms.values()):
                    if alarm.deadline <= now:
                        alarm.fired = True
                        alarm.deadline = now + _REFIRE_SECONDS
                        _raise_in(alarm.thread_id, CallOutOfTime)
                deadlines = [alarm.deadline for alarm in self._alarms.values()]
                self._planned = min(deadlines) if deadlines else None
                self._wake.wait(None if self._planned is None else self._planned - now)


_WATCHDOG = _Watchdog()
_POOL = _Pool()


def _after_fork() -> None:
    # A forked child has none of the parent's threads (nor its calls in flight).
    global _WATCHDOG, _POOL
    _WATCHDOG = _Watchdog()
    _POOL = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

# int PyThreadState_SetAsyncExc(unsigned long id, PyObject *exc): exc NULL clears
# a pending one. A function object of its own, so no one else's argtypes apply.
_SET_ASYNC_EXC = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


def _deliver_pending_stop() -> None:
    """Let a stop already raised in this thread land here, where it is caught.

    A pending asynchronous exception is raised at the thread's next check of
    the eval breaker, which every backward jump of a loop makes.
    """
    for _ in range(3):
        try:
            for _ in range(64):
                pass
        except CallOutOfTime:
            continue
        return


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    # The class stays alive (a module global); CPython takes its own reference.
    _SET_ASYNC_EXC(thread_id, None if exc is None else id(exc))


class _PrivateMpmath(types.ModuleType):
    """``mpmath`` as one entry's code sees it: ``mp`` and its functions on a context of its own."""

    def __init__(self) -> None:
        super().__init__("mpmath", "mpmath, with a context of its own (aah.benchmark.fence)")
        self._context: Any = None

    def __getattr__(self, name: str) -> Any:
        import mpmath  # type: ignore[import-untyped]

        if name.startswith("__"):
            return getattr(mpmath, name)
        if self._context is None:
            self._context = mpmath.MPContext()
        if name == "mp":
            return self._context
        if hasattr(self._context, name):
            return getattr(self._context, name)
        return getattr(mpmath, name)


def private_mpmath() -> types.ModuleType:
    """An ``mpmath`` whose precision (``mp.dps``) belongs to the code that imports it.

    For foreign modules run once per entry: their ``import mpmath`` gets this,
    so ``mpmath.mp.dps = 150000`` changes that entry's context, never the
    process's ``mpmath.mp``. The context is made at its first use.
    """
    return _PrivateMpmath()
