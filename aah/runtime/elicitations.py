"""An MCP server's question for the user, routed to the session's human channel.

While the agent's tool call runs, the server behind it may ask the user
for input (``elicitation/create``). The session that made the call answers
it with its own human channel, as it answers ``ask_human``: a channel with
an ``elicit`` method (:class:`ElicitingChannel`) answers; any other
declines. The session driver sets :data:`session_elicitor` around its
graph; the MCP executor reads it when it calls a tool, so the runtime knows
nothing of MCP and MCP nothing of sessions.

The queue channel puts the question in the store's queue as a request of
kind ``elicitation`` (its context the typed request) and waits for a person
or its deadline, whose fallback is a decline.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol, runtime_checkable

from aah.bounds import OutOfBounds, check_number
from aah.desk import (
    MAX_MESSAGE_CHARS,
    ContentInvalid,
    ElicitationField,
    ElicitationRefused,
    ElicitationRequest,
    ElicitationResult,
    check_content,
    check_value,
    link_words,
    offered_tools,
    read_stored_answer,
)
from aah.events import ElicitationAnsweredEvent, ElicitationAskedEvent, Event
from aah.runtime.work_clock import waiting_for_person
from aah.store import SessionStore

# Who answers when aah answers for the person (a refused request, no channel).
AAH_ANSWERS = "aah"
DEADLINE_FALLBACK = "deadline-fallback"


class ElicitationAsk(NamedTuple):
    """One elicitation for a channel: the typed request and where it belongs.

    Attributes:
        request_id: The human request's id (stable across a runner's restart).
        session_id: The session whose tool call the server is answering.
        request: What the server asks.
    """

    request_id: str
    session_id: str
    request: ElicitationRequest


@runtime_checkable
class ElicitingChannel(Protocol):
    """A human channel that can answer an MCP server's question."""

    async def elicit(self, ask: ElicitationAsk) -> ElicitationResult:
        """The person's result: accept with content, decline or cancel."""
        ...


class SessionElicitor:
    """Answers the elicitations of one session's tool calls with its human channel.

    Args:
        session_id: The session.
        channel: Its human channel (answers when it is an :class:`ElicitingChannel`).
        emit: Where the asked and answered events go (the session's log).
        tools: The names of the tools the agent is offered now, kept with
            each form so the person sees them (none when not given).
    """

    def __init__(
        self,
        session_id: str,
        channel: object,
        emit: Callable[[Event], None],
        tools: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.session_id = session_id
        self.channel = channel
        self.emit = emit
        self.tools = tools
        self._asked = 0

    async def answer(self, server: str, params: Any) -> ElicitationResult:
        """The result to send ``server`` for its ``elicitation/create`` ``params``.

        Never raises and never leaves the server without a result: a request
        aah does not show is declined at once, a one-line reason in the log
        (an :class:`ElicitationAskedEvent` with ``refused``); content a
        channel gives that does not fit the form goes back as a decline.
        """
        self._asked += 1
        request_id = f"{self.session_id}-elicit-{self._asked}"
        try:
            request = ElicitationRequest.from_params(server, params)
        except ElicitationRefused as exc:
            return self._refused(request_id, server, params, str(exc))
        except Exception as exc:  # whatever a peer sent, it gets a decline, never silence
            why = f"aah could not read {server}'s elicitation ({type(exc).__name__})"
            return self._refused(request_id, server, params, why)
        if self.tools is not None:
            request = request.model_copy(update={"tools": offered_tools(self.tools())})
        self.emit(
            ElicitationAskedEvent(
                session_id=self.session_id,
                request_id=request_id,
                server=server,
                message=request.message,
                mode=request.mode,
                fields=[f.name for f in request.fields] if request.mode == "form" else [],
            )
        )
        started = time.perf_counter()
        ask = ElicitationAsk(request_id, self.session_id, request)
        try:
            result = _fitted(request, await elicit_from(self.channel, ask))
        except Exception as exc:  # the store refused it, a channel broke: the server is told
            why = " ".join(str(exc).split())[:300] or type(exc).__name__
            result = ElicitationResult(
                action="cancel", answered_by=AAH_ANSWERS, why=f"no one could be asked: {why}"
            )
        if not result.seconds:
            result = result.model_copy(update={"seconds": time.perf_counter() - started})
        return self._answered(request_id, server, result)

    def _refused(self, request_id: str, server: str, params: Any, why: str) -> ElicitationResult:
        """Decline a request aah does not show, logging it as asked and refused."""
        found = params.get("message") if isinstance(params, Mapping) else None
        mode = params.get("mode") if isinstance(params, Mapping) else None
        self.emit(
            ElicitationAskedEvent(
                session_id=self.session_id, request_id=request_id, server=server,
                message=found[:MAX_MESSAGE_CHARS] if isinstance(found, str) else "",
                mode="url" if mode == "url" else "form", refused=why,
            )
        )  # fmt: skip
        return self._answered(
            request_id, server,
            ElicitationResult(action="decline", answered_by=AAH_ANSWERS, why=why),
        )  # fmt: skip

    def _answered(
        self, request_id: str, server: str, result: ElicitationResult
    ) -> ElicitationResult:
        self.emit(
            ElicitationAnsweredEvent(
                session_id=self.session_id,
                request_id=request_id,
                server=server,
                action=result.action,
                content=dict(result.content) if result.content is not None else None,
                answered_by=result.answered_by,
                seconds=round(result.seconds, 3),
                why=result.why,
            )
        )
        return result


def _fitted(request: ElicitationRequest, result: ElicitationResult) -> ElicitationResult:
    """``result``, or a decline saying why when its content does not fit ``request``'s form.

    Every channel's content passes the desk's one check before it reaches the
    server, whichever face or script gave it.
    """
    if result.action != "accept":
        return result
    if request.mode == "url":
        return result.model_copy(update={"content": None})
    try:
        content = check_content(request, result.content or {})
    except ContentInvalid as exc:
        return result.model_copy(
            update={"action": "decline", "content": None, "why": f"the content did not fit: {exc}"}
        )
    return result.model_copy(update={"content": content})


# The elicitor of the session whose graph runs in this context, if any.
session_elicitor: contextvars.ContextVar[SessionElicitor | None] = contextvars.ContextVar(
    "session_elicitor", default=None
)


async def elicit_from(channel: object, ask: ElicitationAsk) -> ElicitationResult:
    """``channel``'s result for ``ask``; a channel that cannot answer declines."""
    if isinstance(channel, ElicitingChannel):
        return await channel.elicit(ask)
    name = type(channel).__name__
    return ElicitationResult(
        action="decline", answered_by=AAH_ANSWERS, why=f"{name} does not answer servers' questions"
    )


def scripted_result(
    script: Callable[[ElicitationRequest], ElicitationResult] | None, ask: ElicitationAsk, name: str
) -> ElicitationResult:
    """A script's result for ``ask`` (a decline with no script), named as answered by ``name``."""
    if script is None:
        return ElicitationResult(action="decline", answered_by=name, why="no script for it")
    result = script(ask.request)
    return result.model_copy(update={"answered_by": result.answered_by or name})


async def elicit_in_queue(
    store: SessionStore,
    ask: ElicitationAsk,
    *,
    deadline_seconds: float | None,
    poll_seconds: float,
    clock: Callable[[], datetime] | None = None,
) -> ElicitationResult:
    """Put ``ask`` in the store's queue (once) and wait for a person or the deadline.

    A request already stored under the id (a restarted runner) is waited on,
    not asked again. At the deadline the request expires and the server gets
    a decline. The store is read on a thread: the session's loop keeps running.
    """
    now = clock or (lambda: datetime.now(UTC))
    with waiting_for_person():
        record = await asyncio.to_thread(store.humans.get_human_request, ask.request_id)
        if record is None:
            deadline = None
            if deadline_seconds is not None:
                deadline = now() + timedelta(seconds=deadline_seconds)
            record = await asyncio.to_thread(
                lambda: store.humans.create_human_request(
                    ask.session_id,
                    ask.request.message,
                    ask.request.model_dump(mode="json"),
                    request_id=ask.request_id,
                    deadline=deadline,
                    fallback="decline" if deadline is not None else None,
                    kind="elicitation",
                )
            )
        while record.status == "pending":
            if record.deadline is not None and now() >= record.deadline:
                await asyncio.to_thread(store.humans.expire_human_request, ask.request_id)
                return ElicitationResult(
                    action="decline", answered_by=DEADLINE_FALLBACK, why="no one answered in time"
                )
            await asyncio.sleep(poll_seconds)
            found = await asyncio.to_thread(store.humans.get_human_request, ask.request_id)
            assert found is not None
            record = found
    if record.status == "expired":
        return ElicitationResult(
            action="decline", answered_by=DEADLINE_FALLBACK, why="no one answered in time"
        )
    result = read_stored_answer(ask.request, record.answer, declined=record.status == "declined")
    seconds = 0.0
    if record.answered_at is not None:
        seconds = max(0.0, (record.answered_at - record.created).total_seconds())
    return result.model_copy(
        update={"answered_by": record.answered_by or "unknown", "seconds": seconds}
    )


def console_elicitation(
    prompt: Callable[[str], str], request: ElicitationRequest
) -> ElicitationResult:
    """Ask the person at this terminal, one line at a time, through ``prompt``.

    First whether to answer at all (y: yes, n: decline, an empty line:
    cancel); then, for a form, each field. A value that does not fit is
    refused with its one-line reason and asked again, however it is wrong
    (a word, a number of 400 digits): only the person ends the form, with an
    empty line (an optional field is left out, a required one cancels). A
    link is printed, never opened: y says the person is done with it.
    """
    what = link_words(request.url or "") if request.mode == "url" else "It wants a form."
    choice = prompt(
        f"MCP server {request.asker} asks: {request.message}\n"
        f"{what}\nAnswer? y yes / n decline / Enter cancel"
    )
    choice = choice.strip().lower()
    if choice in ("n", "no"):
        return ElicitationResult(action="decline", answered_by="console")
    if choice not in ("y", "yes"):
        return ElicitationResult(action="cancel", answered_by="console")
    if request.mode == "url":
        return ElicitationResult(action="accept", answered_by="console")
    content: dict[str, Any] = {}
    for field in request.fields:
        value = _console_value(prompt, field)
        if value is _LEFT_OUT and field.required:
            return ElicitationResult(
                action="cancel", answered_by="console", why=f"no value for {field.label}"
            )
        if value is not _LEFT_OUT:
            content[field.name] = value
    return ElicitationResult(action="accept", content=content, answered_by="console")


# An empty line for a field: left out (optional) or the form given up (required).
_LEFT_OUT = object()


def _console_value(prompt: Callable[[str], str], field: ElicitationField) -> Any:
    """The value the person types for ``field``, asked until it fits (or :data:`_LEFT_OUT`).

    An option is chosen by its value or by its number in the list shown, so
    one that holds a comma or spaces (which a typed line loses) can be chosen too.
    """
    hint = ""
    if field.kind == "enum":
        listed = "; ".join(f"{i}: {field.option_title(v)}" for i, v in enumerate(field.options, 1))
        hint = f" (one of {listed})"
        hint += " (several: their numbers or values, comma-separated)" if field.multiple else ""
    hint += " (y/n)" if field.kind == "boolean" else ""
    hint += " (Enter: cancel the form)" if field.required else " (Enter: leave it out)"
    while True:
        given = prompt(f"{field.label}{' *' if field.required else ''}{hint}").strip()
        if not given:
            return _LEFT_OUT
        typed: Any = given
        if field.kind == "enum" and field.multiple:
            typed = [_console_option(field, item.strip()) for item in given.split(",")]
        elif field.kind == "enum":
            typed = _console_option(field, given)
        try:
            return check_value(field, typed)
        except ContentInvalid as exc:
            prompt(f"Not taken: {exc}. Press Enter to try again")


def _console_option(field: ElicitationField, typed: str) -> str:
    """The option ``typed`` names: its value (spaces around it aside), else its number."""
    if typed in field.options:
        return typed
    spaced = [option for option in field.options if option.strip() == typed]
    if len(spaced) == 1:
        return spaced[0]
    try:
        number = check_number(typed, "an option's number", integer=True)
    except OutOfBounds:
        return typed
    return field.options[int(number) - 1] if 1 <= number <= len(field.options) else typed
