"""Store writes that wait together, committed together: group commit on a server.

On PostgreSQL every write waits a round trip, and a runner's sessions tend
to write at the same moment (64 sessions whose model answers come back
together). Run one after another on the store's thread, the last of such a
burst waits for all the others' round trips. A write that the store can
describe in ``Steps`` (send its statements; once their replies are in,
maybe send more; after the commit, read what it returns) joins the others
that wait with it in one transaction: every step of theirs goes out before
the replies are awaited, so the burst costs a round trip per step, not per
write.

The group changes nothing a write can see. It holds the store's write lock
if any of its writes needs it; a write whose step fails (a missing session,
a constraint) rolls the whole group back, and each write then runs alone,
as it would have without the group. What a write returns is read only
after the commit, as when it runs alone; a server that goes away fails
every write of the group, each of which would have failed alone.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from aah.store.connection import StoreConnection
from aah.store.file_errors import StoreFileError
from aah.store.sqlite_db import Database

_T = TypeVar("_T")
# The most writes one group commits: a burst larger than this is split.
GROUP_LIMIT = 64


@dataclass(frozen=True)
class Then:
    """A write's next step, once the replies to what it sent so far are in."""

    step: Callable[[Database], Then | Callable[[], Any]]


Step = Callable[[Database], "Then | Callable[[], Any]"]


class Steps(Generic[_T]):
    """One write as steps: ``first(db)`` sends statements and returns what comes next.

    What comes next is a ``Then`` (a step that reads the replies so far and
    may send more) or the finish: a function that reads the replies once
    the transaction has committed and returns the write's result. Called,
    the write runs alone in its own transaction.

    Args:
        connection: The store's connection.
        first: The first step.
        exclusive: Whether the write needs the store's write lock (see
            ``write_transaction``).
    """

    def __init__(self, connection: StoreConnection, first: Step, *, exclusive: bool) -> None:
        self.connection = connection
        self.first = first
        self.exclusive = exclusive

    def __call__(self) -> _T:
        """Run the write alone: its steps in one transaction, then its finish."""
        with self.connection.write(exclusive=self.exclusive) as db:
            finish = _last_step(self.first(db), db)
        result: _T = finish()
        return result


def _last_step(got: Then | Callable[[], Any], db: Database) -> Callable[[], Any]:
    while isinstance(got, Then):
        got = got.step(db)
    return got


@dataclass(eq=False)
class _Call:
    future: Future[Any]
    work: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class GroupingThread(Executor):
    """The store's thread for async callers: calls in the order they come, ``Steps`` in groups.

    A call that is a ``Steps`` and finds others waiting with it commits with
    them in one transaction (at most ``GROUP_LIMIT``); any other call runs
    alone, in turn. A lone ``Steps`` runs alone too.
    """

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._shut = False
        self._guard = threading.Lock()
        self._thread.start()

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        """Queue ``fn(*args, **kwargs)``; its future holds what it returns or raises."""
        with self._guard:
            if self._shut:
                raise RuntimeError("the store's thread is shut down")
            future: Future[_T] = Future()
            self._calls.put(_Call(future, fn, args, kwargs))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Run what is queued, then stop the thread (waiting for it with ``wait``)."""
        with self._guard:
            if not self._shut:
                self._shut = True
                self._calls.put(None)
        if wait:
            self._thread.join()

    def _work(self) -> None:
        while True:
            first = self._calls.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < GROUP_LIMIT:
                try:
                    more = self._calls.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._calls.put(None)  # stop once this batch is done
                    break
                batch.append(more)
            live = [call for call in batch if call.future.set_running_or_notify_cancel()]
            grouped = [call for call in live if isinstance(call.work, Steps) and not call.args]
            if len(grouped) < 2:
                grouped = []
            for call in live:
                if not any(call is member for member in grouped):
                    _run_alone(call)
            if grouped:
                _run_group(grouped)


def _run_alone(call: _Call) -> None:
    try:
        result = call.work(*call.args, **call.kwargs)
    except BaseException as exc:
        call.future.set_exception(exc)
    else:
        call.future.set_result(result)


def _run_group(calls: list[_Call]) -> None:
    writes: list[Steps[Any]] = [cast(Steps[Any], call.work) for call in calls]
    connection = writes[0].connection
    try:
        with connection.write(exclusive=any(write.exclusive for write in writes)) as db:
            got: list[Then | Callable[[], Any]] = [write.first(db) for write in writes]
            while any(isinstance(step, Then) for step in got):
                # A step's first read waits for the replies of every write's
                # statements sent so far: one round trip for the whole round.
                got = [step.step(db) if isinstance(step, Then) else step for step in got]
    except StoreFileError as exc:  # the server went away, or the store is unusable
        for call in calls:
            call.future.set_exception(exc)
        return
    except Exception:
        # Nothing was committed: each write runs alone, and meets its own error.
        for call in calls:
            _run_alone(call)
        return
    for call, finish in zip(calls, got, strict=True):
        _run_alone(_Call(call.future, cast(Callable[[], Any], finish), (), {}))
