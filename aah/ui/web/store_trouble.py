"""The store failing under the page (a database server restarting, a full disk): one line.

Every handler of the page reads or writes the store. When the store fails
for a while (PostgreSQL restarting, its network cut, the disk full), Gradio
would show a bare "Error" and print a traceback for each click and each
refresh. ``one_line_store_errors`` wraps every handler of an app so that
such a failure reaches the person as the store's own one-line message, with
what to do, and the server's log as one line at most every
``LOG_EVERY_SECONDS``. Nothing on the page changes: an answer being typed
stays in its box, to send again once the store is back.
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


def _refusal(error: StoreFileError, log: ClientErrorLog) -> gr.Error:
    log.note("the page could not use the store", str(error))
    message = f"The session database is not available just now ({error}). Try again in a moment."
    return gr.Error(message, print_exception=False)


def _guarded(fn: Callable[..., Any], log: ClientErrorLog) -> Callable[..., Any]:
    """``fn`` with a store failure turned into the page's one-line error; of the same kind.

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
                raise _refusal(error, log) from None

        return async_gen
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except StoreFileError as error:
                raise _refusal(error, log) from None

        return gen
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def coroutine(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except StoreFileError as error:
                raise _refusal(error, log) from None

        return coroutine

    @functools.wraps(fn)
    def plain(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StoreFileError as error:
            raise _refusal(error, log) from None

    return plain


def one_line_store_errors(app: gr.Blocks) -> None:
    """Wrap every handler of ``app`` (once it is built): a store failure is one line."""
    log = ClientErrorLog(LOG_EVERY_SECONDS, logger=_log)
    for block_fn in app.fns.values():
        if block_fn.fn is not None and not getattr(block_fn.fn, "_aah_guarded", False):
            block_fn.fn = _guarded(block_fn.fn, log)
            block_fn.fn._aah_guarded = True  # type: ignore[attr-defined]
