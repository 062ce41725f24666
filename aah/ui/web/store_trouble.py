"""The store failing under the page (a database server restarting, a full disk): one line.

Every handler of the page reads or writes the store. When the store fails
for a while (PostgreSQL restarting, its network cut, the disk full), Gradio
would show a bare "Error" and print a traceback for each click and each
refresh. ``one_line_store_errors`` wraps every handler of an app so that
such a failure reaches the person as the store's own one-line message, with
what to do, and the server's log as one line at most every
``LOG_EVERY_SECONDS``. A handler that updates a page's status line (an
output whose ``elem_id`` ends in ``-status``) says it there, as every other
problem is said, and leaves its other outputs as they are; one without a
status line raises it as Gradio's error. Nothing else on the page changes:
an answer being typed stays in its box, to send again once the store is back.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from aah.store import StoreFileError
from aah.ui.web.guard import ClientErrorLog

LOG_EVERY_SECONDS = 10.0

_log = logging.getLogger(__name__)


class _Refusal:
    """What a handler gives instead of its result when the store fails."""

    def __init__(self, log: ClientErrorLog, outputs: int, status: int | None) -> None:
        self._log = log
        self._outputs = outputs
        self._status = status  # the status line's place among the outputs, if there is one

    def __call__(self, error: StoreFileError) -> Any:
        """The outputs with the one line in the status line; raises without one."""
        self._log.note("the page could not use the store", str(error))
        line = f"The session database is not available just now ({error}). Try again in a moment."
        if self._status is None:
            raise gr.Error(line, print_exception=False) from None
        if self._outputs == 1:
            return line
        return tuple(line if i == self._status else gr.skip() for i in range(self._outputs))


def _guarded(fn: Callable[..., Any], refuse: _Refusal) -> Callable[..., Any]:
    """``fn`` with a store failure turned into the page's one line (``refuse``); of the same kind.

    Gradio looks at a handler's kind (coroutine, generator) and signature
    (``gr.Request`` parameters): the wrapper keeps both.
    """
    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def async_gen(*args: Any, **kwargs: Any) -> Any:
            try:
                async for item in fn(*args, **kwargs):
                    yield item
            except StoreFileError as error:
                yield refuse(error)

        return async_gen
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except StoreFileError as error:
                yield refuse(error)

        return gen
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def coroutine(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except StoreFileError as error:
                return refuse(error)

        return coroutine

    @functools.wraps(fn)
    def plain(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StoreFileError as error:
            return refuse(error)

    return plain


def _status_place(outputs: list[Any]) -> int | None:
    """Where a page's status line is among a handler's outputs, if it is one of them."""
    for place, block in enumerate(outputs):
        if str(getattr(block, "elem_id", None) or "").endswith("-status"):
            return place
    return None


def one_line_store_errors(app: gr.Blocks) -> None:
    """Wrap every handler of ``app`` (once it is built): a store failure is one line."""
    log = ClientErrorLog(LOG_EVERY_SECONDS, logger=_log)
    for block_fn in app.fns.values():
        if block_fn.fn is not None and not getattr(block_fn.fn, "_aah_guarded", False):
            outputs = list(block_fn.outputs or [])
            refuse = _Refusal(log, len(outputs), _status_place(outputs))
            block_fn.fn = _guarded(block_fn.fn, refuse)
            block_fn.fn._aah_guarded = True  # type: ignore[attr-defined]
