"""The session driver: one task end to end, the one path every face uses.

Open (or reopen) the session in the store, run the graph, hand each
``ask_human`` interrupt to the human channel, resume with the reply, log every
event, close. A session found half done (a crash, a restart while a person
was answering) continues from its checkpoint; a finished one is left alone.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from aah.config import get_settings
from aah.desk import QuestionContext, question_context
from aah.errors import AahError
from aah.event_text import conversation_lines
from aah.events import (
    AwarenessMode,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
    StoppedEvent,
    StopReason,
    TurnEndedEvent,
    UserTurnEvent,
)
from aah.llm import ChatClient, ModelConfig, ModelError
from aah.loop_turns import take_turn
from aah.runtime.activity import Activity
from aah.runtime.approval_gate import decide_call
from aah.runtime.approval_policy import ApprovalPolicy
from aah.runtime.approvals import Approver
from aah.runtime.awareness import reasoning_of
from aah.runtime.budget import CHARS_PER_TOKEN, DEFAULT_TOOL_RESULT_TOKENS, ReplyCutOff
from aah.runtime.checkpoints import EventOutbox
from aah.runtime.discovery import ToolFinder
from aah.runtime.elicitations import SessionElicitor, session_elicitor
from aah.runtime.graph import build_graph
from aah.runtime.humans import (
    HumanChannel,
    HumanReply,
    HumanRequest,
    Parked,
    QueueHuman,
    SessionEnded,
    SkipTask,
)
from aah.runtime.prompts import load_prompt
from aah.runtime.state import (
    DEFAULT_STEP_LIMIT,
    AgentState,
    CallChecks,
    SessionContext,
    offered_schemas,
)
from aah.runtime.tool_mode import ToolMode
from aah.runtime.turns import (
    USER_CALLS,
    ConversationExecutor,
    ConversationUser,
    FollowUp,
    StatefulExecutor,
    TurnReport,
    UserReply,
    ran_calls,
)
from aah.storable import storable_text
from aah.store import (
    STOPPED_STATUSES,
    SessionRecord,
    SessionStatus,
    SessionStore,
    StoreFileError,
)
from aah.tools import EndpointSpec
from aah.tools.http import Executor

_log = logging.getLogger(__name__)
EventListener = Callable[[Event], None]
# When the graph saves a checkpoint: after every step (live views see each
# step as it ends), or only when a session pauses for a person or ends
# (batch runs: far fewer writes; a crash re-runs the steps since the pause).
Durability = Literal["step", "exit"]
_GRAPH_DURABILITY = {"step": "sync", "exit": "exit"}
_DONE = ("finished", "skipped", "error", "cancelled", *STOPPED_STATUSES)


@dataclass
class SessionRequest:
    """What to run: the query, the offered tools and how the agent may act.

    ``human`` and ``executor`` replace the runtime's for this session only (a
    batch run gives each task its own oracle and its own broken tools).
    ``retry_errors`` runs a session that ended in error again, from its
    checkpoint; finished and skipped sessions are never run twice.
    ``session_id`` reopens that stored session (``aah sessions resume``).
    ``finder`` turns discovery on: the agent gets ``find_tools``, and the
    endpoints it finds join ``specs`` for the rest of the session.
    ``follow_ups`` are the later user turns of a conversation (the step limit
    then holds per turn); ``check_calls="names"`` leaves the offered tools to
    judge their own arguments (see ``SessionContext.check_calls``).
    """

    query: str
    specs: Sequence[EndpointSpec] = ()
    aah: bool = True
    awareness: AwarenessMode = "both"
    step_limit: int = DEFAULT_STEP_LIMIT
    answer_calls_at_limit: bool = False
    tool_result_tokens: int = DEFAULT_TOOL_RESULT_TOKENS
    tool_mode: ToolMode = "native"
    run: str | None = None
    task_id: str | None = None
    setting: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    human: HumanChannel | None = None
    executor: Executor | None = None
    retry_errors: bool = False
    session_id: str | None = None
    finder: ToolFinder | None = None
    # Which calls wait for a person's approval (None: none), and who decides
    # (None: the approver that goes with ``human``, see ``approver_for``).
    approvals: ApprovalPolicy | None = None
    approver: Approver | None = None
    follow_ups: Sequence[FollowUp] = ()
    check_calls: CallChecks = "all"
    # A conversation whose next user turns come as it goes (τ²): asked at each
    # turn's end instead of ``follow_ups``.
    conversation: ConversationUser | None = None
    # Text added to the agent's system prompt (a benchmark's domain policy).
    instructions: str | None = None
    # The whole system prompt, in place of aah's (a benchmark that scores its
    # own prompt's reply, ACEBench's upstream reading); ``instructions`` still add.
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        # A query from a command line may hold bytes that are not UTF-8.
        self.query = storable_text(self.query)


@dataclass
class Runtime:
    """What sessions share in one process: store, model, tools, humans."""

    store: SessionStore
    model: ChatClient
    model_config: ModelConfig
    executor: Executor
    human: HumanChannel
    checkpointer: BaseCheckpointSaver[Any] | None = None
    http_mode: str = "mock"
    listeners: list[EventListener] = field(default_factory=list)
    outbox: EventOutbox | None = None
    durability: Durability = "step"
    # How long run_session waits for a session another process holds before
    # leaving it to that process: a batch waits for a killed worker's holds.
    wait_for_held: float = 0.0
    activity: Activity = field(default_factory=Activity)
    _graph: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.activity.requests_out = lambda: self.model.requests_in_flight

    def publish(self, events: Sequence[Event]) -> None:
        """Tell the listeners of events that are now stored."""
        for event in events:
            for listener in list(self.listeners):
                try:
                    listener(event)
                except Exception as exc:
                    # The event is stored; a face that cannot show it (a
                    # terminal that cannot encode it, a closed window) must
                    # not end the session. It is shown no more events.
                    self.listeners.remove(listener)
                    _log.warning("not showing the session's steps any more: %s", _one_line(exc))

    def take_held_events(self, record: SessionRecord) -> list[Event]:
        """The events the session's graph still holds for a checkpoint; they leave the outbox."""
        return self.outbox.take(record.thread_id) if self.outbox is not None else []

    async def record(
        self, record: SessionRecord, events: Sequence[Event], status: SessionStatus
    ) -> None:
        """Store a status change and the events that come with it, after any held ones."""
        events = [*self.take_held_events(record), *events]
        self.publish(await self.store.call(self.store.set_status, record.id, status, events))

    async def go_on_once(self, record: SessionRecord, events: Sequence[Event]) -> None:
        """Move a waiting session back to running with ``events``, unless another process did.

        Raises:
            SessionEnded: It no longer waits (resumed elsewhere, cancelled, ended).
        """
        stored = await self.store.call(self.store.resume_waiting, record.id, events)
        if stored is None:
            current = await self.store.call(self.store.get_session, record.id)
            status = current.status if current is not None else "gone"
            raise SessionEnded(f"the session went on elsewhere while it waited ({status})")
        self.publish(stored)

    def graph(self) -> Any:
        """The compiled graph, built on first use and shared by all sessions."""
        if self._graph is None:
            self._graph = build_graph(self.checkpointer)
        return self._graph


@dataclass
class SessionOutcome:
    """How a session ended."""

    session_id: str
    status: str
    final_answer: str
    step_limit_hit: bool = False
    error: str | None = None
    # Parked (status "waiting"): the request it waits on, and when its fallback answers.
    waiting_on: str | None = None
    deadline: datetime | None = None


async def run_session(request: SessionRequest, runtime: Runtime) -> SessionOutcome:
    """Run (or resume) one session to its end and record everything in the store.

    Only one process runs a session at a time: one that another process (or
    another call here) runs now is left to it, and the outcome says so.
    """
    await take_turn()  # sessions started together begin over several turns of the loop
    store = runtime.store
    opening = _session_to_open(request, runtime)
    record = await store.call(store.open_session, **opening)
    if not await _take(runtime, record.id):
        now = await store.call(store.get_session, record.id)
        status = now.status if now is not None else record.status
        return SessionOutcome(
            record.id,
            status,
            (now.final_answer if now is not None else None) or "",
            error=(
                f"the session went on elsewhere: another process runs it now ({status} there);"
                " resume it once that process ends"
            ),
        )
    try:
        new = _made_now(request, record, opening)
        if not new:  # read again, as it is now that no one else runs it
            again = await store.call(store.get_session, record.id)
            record = again if again is not None else record
        return await _run_held(request, runtime, record, new)
    finally:
        await store.call(store.let_go_session, record.id)  # a crash's hold ends with the process


async def _take(runtime: Runtime, session_id: str) -> bool:
    """Hold the session, waiting up to ``runtime.wait_for_held`` for another's hold to end."""
    store = runtime.store
    deadline = time.monotonic() + runtime.wait_for_held
    pause = 0.05
    while not await store.call(store.take_session, session_id):
        if time.monotonic() + pause > deadline:
            return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.5)
    return True


async def _run_held(
    request: SessionRequest, runtime: Runtime, record: SessionRecord, new: bool
) -> SessionOutcome:
    """``run_session`` once the session is this process's to run."""
    store = runtime.store
    if record.status in _DONE and not (request.retry_errors and record.status == "error"):
        # A parked session woken because it was cancelled elsewhere says so.
        why = "the session was cancelled while it waited" if record.status == "cancelled" else None
        return SessionOutcome(record.id, record.status, record.final_answer or "", error=why)

    outbox = runtime.outbox if runtime.checkpointer is not None else None

    def emit(event: Event) -> None:
        runtime.activity.stepped()
        # Held for the checkpoint that saves the step (see checkpoints.py).
        if outbox is not None:
            outbox.add(record.thread_id, event)
        else:
            runtime.publish([store.append_event(event)])

    ctx = SessionContext(
        session_id=record.id,
        query=request.query,
        specs=request.specs,
        model=runtime.model,
        model_name=runtime.model_config.model,
        executor=request.executor or runtime.executor,
        emit=emit,
        aah=request.aah,
        awareness=request.awareness,
        step_limit=request.step_limit,
        http_mode=runtime.http_mode,
        answer_calls_at_limit=request.answer_calls_at_limit,
        tool_result_tokens=request.tool_result_tokens,
        tool_mode=request.tool_mode,
        max_questions_per_reply=get_settings().max_questions_per_reply,
        max_questions_per_session=get_settings().max_questions_per_session,
        finder=request.finder,
        approvals=request.approvals,
        store=store,
        follow_ups=request.follow_ups,
        check_calls=request.check_calls,
        conversation=request.conversation,
        awareness_apart=runtime.durability == "step",
    )
    human = request.human or runtime.human
    if getattr(human, "answers_at_once", False):
        ctx.answer_now = functools.partial(_ask_at_once, ctx, runtime, request, record, human)
    runtime.activity.session_started()
    store_failed = False
    try:
        return await _drive(ctx, record, request, runtime, new=new)
    except Parked as exc:
        # Its question waits in the store; the session holds nothing until it is run again.
        return SessionOutcome(
            record.id, "waiting", "", waiting_on=exc.request_id, deadline=exc.deadline
        )
    except _NoCheckpoint as exc:
        return SessionOutcome(record.id, record.status, "", error=str(exc))  # left as it is
    except SessionEnded as exc:
        # Ended elsewhere (``aah sessions cancel``): its stored status stands.
        ended = await store.call(store.get_session, record.id)
        status = ended.status if ended is not None else "cancelled"
        return SessionOutcome(record.id, status, "", error=str(exc))
    except SkipTask as exc:
        return await _close(ctx, runtime, record, "skipped", f"Skipped: {exc}.")
    except ReplyCutOff as exc:
        return await _stop(runtime, record, "cut_off", str(exc))
    except ModelError as exc:
        return await _fail(runtime, record, str(exc), "model")
    except StoreFileError:
        # The store's file failed (a full disk, damage): recording the
        # failure there would fail too, or blame the session for it. The
        # session stays as its last checkpoint left it, for a rerun to resume.
        store_failed = True
        raise
    except AahError as exc:
        return await _fail(runtime, record, str(exc), "runtime")
    except Exception as exc:  # whatever broke, the session must not stay "running"
        _log.debug("session %s failed", record.id, exc_info=True)
        return await _fail(runtime, record, unexpected_failure(exc), "runtime")
    finally:
        runtime.activity.session_ended()
        # A session cancelled mid-step (a task timeout) or failed outside the
        # handlers above has events no checkpoint saved: they are stored now,
        # since the calls they record did happen (an API was called, a person
        # asked). A rerun from the last checkpoint logs its own steps after them.
        # Not when the store's file failed: the rerun runs those steps again
        # from the last checkpoint and logs them itself, so writing them now
        # (a small write may fit where the checkpoint did not) logs them twice.
        held = runtime.take_held_events(record)
        if held and not store_failed:
            runtime.publish(runtime.store.append_events(held))


class _NoCheckpoint(Exception):  # noqa: N818 - a signal, not an error
    """A session cannot go on: its checkpoint is not in this store. Nothing is written."""


def unexpected_failure(exc: BaseException) -> str:
    """One line for a failure no handler expected: what it was, and what to do."""
    return f"the session failed unexpectedly ({_one_line(exc)}): please report it as a bug in aah"


def _one_line(exc: BaseException) -> str:
    what = " ".join(str(exc).split())
    what = what if len(what) <= 300 else what[:299] + "…"
    return f"{type(exc).__name__}: {what}" if what else type(exc).__name__


def record_failure(
    request: SessionRequest, runtime: Runtime, message: str, where: str
) -> SessionOutcome:
    """End ``request``'s session in error when it failed outside the driver.

    For failures :func:`run_session` cannot catch itself (a timeout that
    cancelled it, a crash in the code that called it), so that every failed
    session is recorded the same way: an ``ErrorEvent`` and the ``error`` status.
    Called off the event loop (it waits for the store).
    """
    record = runtime.store.open_session(**_session_to_open(request, runtime))
    error = ErrorEvent(session_id=record.id, message=message, where=where)
    events = _last(runtime, record, error)
    runtime.publish(runtime.store.end_session(record.id, "error", None, events))
    return SessionOutcome(record.id, "error", "", error=message)


def _session_to_open(request: SessionRequest, runtime: Runtime) -> dict[str, Any]:
    """``open_session``'s arguments for the request's session."""
    return {
        "query": request.query,
        "run": request.run,
        "task_id": request.task_id,
        "setting": request.setting,
        "aah": request.aah,
        "model": runtime.model_config.model,
        # An id of its own making: a row that comes back with it is the one
        # just made, not one a task's earlier run left (nor one a caller named).
        "session_id": request.session_id or uuid.uuid4().hex,
        "recipe": session_recipe(request, runtime),
    }


def _made_now(request: SessionRequest, record: SessionRecord, opening: dict[str, Any]) -> bool:
    """Whether opening the session made it (then nothing is saved for it yet)."""
    made = opening["session_id"]
    return request.session_id is None and record.id == record.thread_id == made


def session_recipe(request: SessionRequest, runtime: Runtime) -> dict[str, Any]:
    """What another process needs to resume ``request``'s session (``aah sessions resume``).

    The tools go in whole, so that resuming needs no registry; the human
    channel goes in by kind, with a queue's deadline and fallback, since only
    people answer through something another process can reopen.
    """
    human = request.human or runtime.human
    who: dict[str, Any] = {"kind": type(human).__name__}
    if isinstance(human, QueueHuman):
        who = {
            "kind": "queue",
            "deadline_seconds": human.deadline_seconds,
            "fallback": human.fallback if isinstance(human.fallback, str) else "idk",
            "annotators": human.annotators,
        }
    return {
        "tools": [spec.model_dump(mode="json") for spec in request.specs],
        "awareness": request.awareness,
        "step_limit": request.step_limit,
        "answer_calls_at_limit": request.answer_calls_at_limit,
        "tool_result_tokens": request.tool_result_tokens,
        "tool_mode": request.tool_mode,
        "context": request.context,
        "http_mode": runtime.http_mode,
        "human": who,
        # Discovery needs the registry again on resume; the removed endpoints stay unfindable.
        "discover": (
            {"k": request.finder.k, "removed": sorted(request.finder.removed)}
            if request.finder is not None
            else None
        ),
        "approvals": request.approvals.model_dump(mode="json") if request.approvals else None,
        "follow_ups": [
            {"text": f.text, "tools": [spec.model_dump(mode="json") for spec in f.specs]}
            for f in request.follow_ups
        ],
        "check_calls": request.check_calls,
    }


async def _drive(
    ctx: SessionContext,
    record: SessionRecord,
    request: SessionRequest,
    runtime: Runtime,
    *,
    new: bool = False,
) -> SessionOutcome:
    graph = runtime.graph()
    config: RunnableConfig = {
        "configurable": {"thread_id": record.thread_id},
        # Per run of the graph, which is one turn of a conversation.
        "recursion_limit": 4 * ctx.step_limit + 20,
    }
    # A session made just now has no checkpoint: one read fewer (on a
    # server, a round trip fewer before the session's first step).
    snapshot = await graph.aget_state(config) if runtime.checkpointer and not new else None
    if record.status == "waiting" and runtime.checkpointer and not (snapshot and snapshot.values):
        # Its question's checkpoint stayed in the store it was copied or merged
        # from: run from the start, it would log its steps and ask again.
        raise _NoCheckpoint(
            f"session {record.id} waits for a person, but this store holds no checkpoint "
            "of it (copied or merged from another store): it cannot go on here; resume "
            "it in the store it ran in, or run its task again in a new run"
        )
    payload: Any = _initial_state(request) if not (snapshot and snapshot.values) else None
    if payload is not None and request.conversation is not None:
        payload = await _opening(ctx, request.conversation, payload)
    if snapshot and snapshot.values and isinstance(ctx.executor, ConversationExecutor):
        # A new process: the tools' state is rebuilt from the whole conversation.
        ctx.executor.restore_conversation(snapshot.values.get("messages", []))
    elif snapshot and snapshot.values and isinstance(ctx.executor, StatefulExecutor):
        # A new process: the tools' state is rebuilt from the calls that ran before.
        ctx.executor.restore(ran_calls(snapshot.values.get("messages", [])))
    if record.status == "error":  # retried (finished and skipped ones never are)
        await runtime.store.call(runtime.store.set_status, ctx.session_id, "running")
    if snapshot and snapshot.interrupts:
        # Remembered as the session's current tools: the person asked sees them.
        ctx.tools_now(cast(AgentState, snapshot.values))
        payload = Command(
            resume=await _answer(ctx, runtime, request, record, snapshot.interrupts[0].value)
        )
    durability = _GRAPH_DURABILITY[runtime.durability]
    # An MCP server's question during one of this session's tool calls goes to its channel.
    elicitor = SessionElicitor(
        ctx.session_id,
        request.human or runtime.human,
        ctx.emit,
        tools=lambda: ctx.current_tools.specs.keys(),
    )
    token = session_elicitor.set(elicitor)
    try:
        while True:
            output = await graph.ainvoke(payload, config, context=ctx, durability=durability)
            # An interrupted run returns its pending questions under "__interrupt__".
            pending = output.pop("__interrupt__", ()) if runtime.checkpointer else ()
            if pending:
                # Remembered as the session's current tools: the person asked sees them.
                ctx.tools_now(cast(AgentState, output))
                answer = await _answer(ctx, runtime, request, record, pending[0].value)
                payload = Command(resume=answer)
                continue
            if request.conversation is not None:
                payload = await _next_reply(ctx, request.conversation, cast(AgentState, output))
            else:
                payload = _next_turn(ctx, cast(AgentState, output))
            if payload is None:
                break
    finally:
        session_elicitor.reset(token)
    return await _finish(ctx, runtime, record, cast(AgentState, output))


def _next_turn(ctx: SessionContext, state: AgentState) -> dict[str, Any] | None:
    """The input that starts the conversation's next turn, or None when the session ends here.

    A turn ends when the agent replies without a call; the log then gets the
    tools' state and verdict (a stateful executor's), and the next user
    message. A turn stopped at its step limit ends the conversation.
    """
    executor = ctx.executor
    stateful = isinstance(executor, StatefulExecutor)
    # A stateful executor hears of every turn's end, a conversation's only turn's too.
    if not (ctx.follow_ups or stateful) or state.get("skipped") or state.get("terminated"):
        return None
    messages = state.get("messages", [])
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last is None or last.tool_calls or last.invalid_tool_calls:
        return None
    turn = state.get("turn", 0)
    report = (
        executor.turn_ended(turn, messages)
        if isinstance(executor, StatefulExecutor)
        else TurnReport()
    )
    ctx.emit(
        TurnEndedEvent(session_id=ctx.session_id, turn=turn, state=report.state, check=report.check)
    )
    if turn >= len(ctx.follow_ups):
        return None
    follow_up = ctx.follow_ups[turn]
    ctx.emit(
        UserTurnEvent(
            session_id=ctx.session_id,
            turn=turn + 1,
            text=follow_up.text,
            added_tools=[spec.qualified_name for spec in follow_up.specs],
        )
    )
    return {
        "messages": [HumanMessage(follow_up.text)],
        "turn": turn + 1,
        "turn_started": state.get("steps", 0),
    }


async def _next_reply(
    ctx: SessionContext, user: ConversationUser, state: AgentState
) -> dict[str, Any] | None:
    """The user's answer that starts the next turn, or None when the conversation ends.

    Like :func:`_next_turn`, but the user is asked first (their answer may
    end the conversation), so the turn's report sees what they did. A turn
    that ended inside, at a limit of the conversation's own (τ²'s), is its
    end too: the user is asked for it (and answers None).
    """
    if state.get("skipped") or state.get("terminated"):
        return None
    messages = state.get("messages", [])
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    mid_turn = last is None or bool(last.tool_calls or last.invalid_tool_calls)
    if mid_turn and await ctx.conversation_limit(messages) is None:
        return None
    turn = state.get("turn", 0)
    _bind(user, ctx.session_id)
    reply = await user.reply(turn, messages)
    executor = ctx.executor
    report = (
        executor.turn_ended(turn, messages)
        if isinstance(executor, StatefulExecutor)
        else TurnReport()
    )
    ctx.emit(
        TurnEndedEvent(session_id=ctx.session_id, turn=turn, state=report.state, check=report.check)
    )
    if reply is None:
        return None
    ctx.emit(UserTurnEvent(session_id=ctx.session_id, turn=turn + 1, text=reply.text))
    extra = {USER_CALLS: [dict(call) for call in reply.calls]} if reply.calls else {}
    return {
        "messages": [HumanMessage(reply.text, additional_kwargs=extra)],
        "turn": turn + 1,
        "turn_started": state.get("steps", 0),
    }


def _bind(user: ConversationUser, session_id: str) -> None:
    """Tell a conversation's user which session it answers in (``bind_session``, if it has one)."""
    bind = getattr(user, "bind_session", None)
    if bind is not None:
        bind(session_id)


async def _opening(ctx: SessionContext, user: ConversationUser, state: AgentState) -> AgentState:
    """The conversation's first user message from its user (``opening``), when it has one."""
    _bind(user, ctx.session_id)
    opening = getattr(user, "opening", None)
    if opening is None:
        return state
    # Kept in the checkpoint's messages (the session's stored query is the request's),
    # and logged as turn 0 as later replies are: held for the checkpoint that
    # saves the message, so a resumed session neither asks again nor logs it twice.
    first: UserReply = await opening()
    ctx.emit(UserTurnEvent(session_id=ctx.session_id, turn=0, text=first.text))
    extra = {USER_CALLS: [dict(call) for call in first.calls]} if first.calls else {}
    messages = [*state["messages"][:-1], HumanMessage(first.text, additional_kwargs=extra)]
    return {**state, "messages": messages}


def _initial_state(request: SessionRequest) -> AgentState:
    system = (
        request.system_prompt
        if request.system_prompt is not None
        else _system_prompt(request.aah, request.finder is not None)
    )
    if request.instructions:
        system = f"{system}\n\n{request.instructions}"
    return {
        "messages": [
            SystemMessage(system),
            HumanMessage(request.query),
        ],
        "steps": 0,
        "seen_calls": [],
        "discovered": [],
    }


def _system_prompt(aah: bool, discover: bool = False) -> str:
    rules = [load_prompt("agent_find_tools").render()] if discover else []
    rules += [load_prompt("agent_ask_human").render()] if aah else []
    return load_prompt("agent_system").render(ask_human_rules="\n".join(rules))


def first_prompt_tokens(
    query: str, specs: Sequence[EndpointSpec], aah: bool, discover: bool = False
) -> int:
    """About how many tokens the agent's first request holds: prompts, query, tool schemas.

    The same estimate as the tool-result budget (characters / 4), for checking
    a run against a server's context length before it starts.
    """
    schemas = json.dumps(offered_schemas(specs, aah, discover), ensure_ascii=False)
    chars = len(_system_prompt(aah, discover)) + len(query) + len(schemas)
    return chars // CHARS_PER_TOKEN


async def _answer(
    ctx: SessionContext,
    runtime: Runtime,
    request: SessionRequest,
    record: SessionRecord,
    value: dict[str, Any],
) -> dict[str, Any]:
    """The reply to one interrupt: a question's answer, or the decision on a call to approve."""
    if value.get("kind") != "approval":
        return await _ask(ctx, runtime, request, record, value)
    context = _person_context(ctx, request, record, await _steps_so_far(runtime, record))
    return await decide_call(ctx, runtime, request, record, value, context)


async def _ask(
    ctx: SessionContext,
    runtime: Runtime,
    request: SessionRequest,
    record: SessionRecord,
    value: dict[str, Any],
) -> dict[str, Any]:
    """Put one interrupt's question to the human channel; log question and answer."""
    request_id = f"{ctx.session_id}-{value['call_id']}"
    question = str(value["question"])
    store = runtime.store
    asked = HumanQuestionEvent(session_id=ctx.session_id, request_id=request_id, question=question)
    if record.status == "waiting":
        # A parked session woken: asked before the restart, the question is
        # not asked again (the person may be answering it now).
        known = await store.call(store.events, ctx.session_id)
        if not any(isinstance(e, HumanQuestionEvent) and e.request_id == request_id for e in known):
            await runtime.record(record, [asked], "waiting")
    else:
        held = runtime.take_held_events(record)
        known, waiting = await store.call(store.log_question, asked, held)
        runtime.publish(waiting)
        known = [*known, *held]  # the person sees the steps since the last checkpoint too
    context = _person_context(ctx, request, record, known)
    logged = next(
        (e for e in known if isinstance(e, HumanAnswerEvent) and e.request_id == request_id), None
    )
    if logged is not None:
        if record.status == "waiting":
            # Read as waiting, yet its answer is in the log: another process
            # resumed it between the two reads; only one of them goes on.
            await runtime.go_on_once(record, [])
        else:
            # Answered before a crash that came ahead of the next checkpoint: the
            # agent resumes with that answer; the person is not asked again.
            await runtime.record(record, [], "running")
        return _reply_of(logged).resumed()
    human = request.human or runtime.human
    reply = await human.ask(
        HumanRequest(
            request_id=request_id,
            session_id=ctx.session_id,
            question=question,
            context=context,
        )
    )
    reply = capped_answer(reply, get_settings().max_answer_chars)
    answer = _answer_event(ctx, request_id, reply)
    held = runtime.take_held_events(record)
    await runtime.go_on_once(record, [*held, answer])
    return reply.resumed()


async def _ask_at_once(
    ctx: SessionContext,
    runtime: Runtime,
    request: SessionRequest,
    record: SessionRecord,
    human: HumanChannel,
    call_id: str,
    question: str,
) -> HumanReply:
    """Put a question to a channel that answers at once, within the asking step.

    The question and its answer are held with the step's other events and
    stored with its checkpoint: a crash before it asks again, logging once.
    """
    request_id = f"{ctx.session_id}-{call_id}"
    context = _person_context(ctx, request, record, await _steps_so_far(runtime, record))
    ctx.emit(
        HumanQuestionEvent(session_id=ctx.session_id, request_id=request_id, question=question)
    )
    reply = await human.ask(
        HumanRequest(
            request_id=request_id, session_id=ctx.session_id, question=question, context=context
        )
    )
    reply = capped_answer(reply, get_settings().max_answer_chars)
    ctx.emit(_answer_event(ctx, request_id, reply))
    return reply


def _answer_event(ctx: SessionContext, request_id: str, reply: HumanReply) -> HumanAnswerEvent:
    """The log's record of ``reply`` to the request ``request_id``."""
    return HumanAnswerEvent(
        session_id=ctx.session_id,
        request_id=request_id,
        answer=reply.answer,
        answered_by=reply.answered_by,
        seconds=reply.seconds,
        declined=reply.declined,
        flags=reply.flags,
    )


async def _steps_so_far(runtime: Runtime, record: SessionRecord) -> list[Event]:
    """The session's events: those stored, then those its graph holds for the next checkpoint."""
    known = await runtime.store.call(runtime.store.events, record.id)
    if runtime.outbox is not None and runtime.checkpointer is not None:
        known += runtime.outbox.held(record.thread_id)
    return known


def _person_context(
    ctx: SessionContext, request: SessionRequest, record: SessionRecord, known: Sequence[Event]
) -> QuestionContext:
    """What a person sees beside the agent's question or call: task, tools, steps so far.

    An approval carries the same as a question: the person deciding on a
    call sees what the agent was given (those found with find_tools too).
    """
    return question_context(
        {
            **request.context,
            "query": record.query,
            "setting": record.setting,
            "task_id": record.task_id,
            "run": record.run,
            "conversation": conversation_so_far(known),
            "tools": [_tool_line(spec) for spec in ctx.current_tools.specs.values()],
        }
    )


def _tool_line(spec: EndpointSpec) -> str:
    summary = " ".join(spec.description.split())
    summary = summary if len(summary) <= 100 else summary[:99] + "…"
    return f"{spec.qualified_name}: {summary}" if summary else spec.qualified_name


def capped_answer(reply: HumanReply, limit: int) -> HumanReply:
    """``reply`` with its text cut to ``limit`` characters and a marker saying how much went.

    A person may paste a whole file, and a simulated user's model may never
    stop: the agent's context and the log take a bounded answer.
    """
    if len(reply.answer) <= limit:
        return reply
    cut = len(reply.answer) - limit
    answer = f"{reply.answer[:limit]} … [answer cut: {cut:,} more characters]"
    return reply.model_copy(update={"answer": answer})


def _reply_of(answer: HumanAnswerEvent) -> HumanReply:
    return HumanReply(
        answer=answer.answer,
        answered_by=answer.answered_by,
        seconds=answer.seconds,
        declined=answer.declined,
        flags=list(answer.flags),
    )


def conversation_so_far(events: Sequence[Event]) -> list[dict[str, str | int]]:
    """The session's steps as short lines a person can read before answering.

    Stored with the human request as ``{"role", "text"}`` objects, which the
    web and terminal apps show (see ``aah.event_text``); a reply that came
    with reasoning adds its length as ``reasoning_chars``.
    """
    return [
        {"role": line.role, "text": line.text}
        | ({"reasoning_chars": line.reasoning_chars} if line.reasoning_chars else {})
        for line in conversation_lines(events)
    ]


async def _finish(
    ctx: SessionContext, runtime: Runtime, record: SessionRecord, state: AgentState
) -> SessionOutcome:
    messages = state.get("messages", [])
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    text = last.text if last is not None and isinstance(last.text, str) else ""
    if state.get("skipped"):
        return await _close(ctx, runtime, record, "skipped", text)
    if state.get("terminated"):
        return await _stop(runtime, record, "terminated", _terminated_message(state))
    limit_hit = bool(last is not None and (last.tool_calls or last.invalid_tool_calls))
    own_limit = await ctx.conversation_limit(messages) if limit_hit or last is None else None
    if own_limit is not None:
        # Ended inside a turn at a limit of the conversation's own (τ²'s), which
        # its benchmark grades: finished, though the agent may have said nothing.
        return await _close(ctx, runtime, record, "finished", text or f"({own_limit})")
    turns_left = len(ctx.follow_ups) - state.get("turn", 0)
    if limit_hit and turns_left > 0:
        # A conversation ends at a turn's step limit, its later turns never sent (BFCL).
        message = (
            f"stopped after {ctx.step_limit} steps in turn {state.get('turn', 0) + 1} of "
            f"{len(ctx.follow_ups) + 1} (the agent was still calling tools); "
            f"{turns_left} later turn(s) were not sent (a conversation ends at a turn's limit)"
        )
        return await _stop(runtime, record, "step_limit", message)
    if limit_hit and not ctx.answer_calls_at_limit:
        # Still calling tools at its last step: no final answer (science.md §2).
        message = (
            f"stopped after {ctx.step_limit} steps without a final answer (the agent was still "
            "calling tools): raise --step-limit to give it more"
        )
        return await _stop(runtime, record, "step_limit", message)
    if limit_hit and not text:
        # A one-turn protocol (When2Call) ends at its limit by design: the
        # turn's calls are what it scores, and they are recorded.
        text = f"(stopped after {ctx.step_limit} steps without a final answer)"
    reasoning = reasoning_of(last) if last is not None and not limit_hit else None
    return await _close(ctx, runtime, record, "finished", text, limit_hit, reasoning)


def _terminated_message(state: AgentState) -> str:
    ended = [d for d in state.get("approvals", {}).values() if d.get("decision") == "terminate"]
    reason = str(ended[-1].get("reason") or "").strip() if ended else ""
    said = f": {reason}" if reason else ""
    return f"a person terminated the session when asked to approve a tool call{said}"


async def _stop(
    runtime: Runtime, record: SessionRecord, reason: StopReason, message: str
) -> SessionOutcome:
    """End the session at a limit, with no final answer: its own status, never a pass."""
    stopped = StoppedEvent(session_id=record.id, reason=reason, message=message)
    await _end(runtime, record, reason, None, stopped)
    return SessionOutcome(
        record.id, reason, "", step_limit_hit=reason == "step_limit", error=message
    )


async def _close(
    ctx: SessionContext,
    runtime: Runtime,
    record: SessionRecord,
    status: SessionStatus,
    text: str,
    limit_hit: bool = False,
    reasoning: str | None = None,
) -> SessionOutcome:
    final = FinalAnswerEvent(
        session_id=ctx.session_id, text=text, step_limit_hit=limit_hit, reasoning=reasoning
    )
    await _end(runtime, record, status, text, final)
    return SessionOutcome(ctx.session_id, status, text, limit_hit)


async def _fail(
    runtime: Runtime, record: SessionRecord, message: str, where: str
) -> SessionOutcome:
    error = ErrorEvent(session_id=record.id, message=message, where=where)
    await _end(runtime, record, "error", None, error)
    return SessionOutcome(record.id, "error", "", error=message)


async def _end(
    runtime: Runtime, record: SessionRecord, status: SessionStatus, text: str | None, last: Event
) -> None:
    """The session's last event and its end, in one transaction."""
    store, events = runtime.store, _last(runtime, record, last)
    runtime.publish(await store.call(store.end_session, record.id, status, text, events))


def _last(runtime: Runtime, record: SessionRecord, last: Event) -> list[Event]:
    """The session's last events: those its graph still holds, then ``last``."""
    return [*runtime.take_held_events(record), last]
