"""The agent as a LangGraph graph: awareness → agent ⇄ tools, ask_human as interrupt.

Nodes report what they do through ``SessionContext.emit``; the session driver
stores the events. ``ask_human`` pauses the graph with ``interrupt``: the
checkpointer keeps the paused state, so the answer may arrive hours later, in
another process. The interrupted node runs again on resume, which is why it
does nothing before ``interrupt()`` that must not happen twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolCall, ToolMessage
from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime as GraphRuntime
from langgraph.types import interrupt

from aah.desk import Answer
from aah.events import AwarenessEvent, DiscoveryEvent, ModelCallEvent, ToolCallEvent
from aah.events import CheckResult as CheckCode
from aah.llm import ModelStatusError
from aah.llm.text_calls import recover_text_tool_calls
from aah.runtime.approval_gate import (
    APPROVAL_NODE,
    after_approval,
    approval_node,
    decision_for,
    run_decided,
    undecided_calls,
)
from aah.runtime.awareness import (
    ask_awareness,
    awareness_questions,
    describe_tools,
    reasoning_of,
)
from aah.runtime.budget import ReplyCutOff, complete_within_context, cut_tool_result, was_cut_off
from aah.runtime.prompts import load_prompt
from aah.runtime.state import AgentState, SessionContext, SessionTools, steps_in_turn
from aah.runtime.tool_mode import prompted_conversation
from aah.runtime.turns import RAN
from aah.tools import ASK_HUMAN, BUILTIN_TOOLS, FIND_TOOLS, tool_prompt
from aah.tools.calls import CheckResult, canonical_call

Route = str  # a node name, or END
# Tool names an unknown-tool feedback lists at most.
_MAX_LISTED_TOOLS = 40


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[AgentState, SessionContext, AgentState, AgentState]:
    """The compiled graph; one serves every session of a process.

    Each session passes its own ``SessionContext`` as the run context, so the
    graph is compiled once rather than once per task.
    """
    graph = StateGraph(AgentState, context_schema=SessionContext)
    graph.add_node("awareness", _awareness)
    graph.add_node("agent", _agent)
    graph.add_node("tools", _tools)
    graph.add_node("ask_human", _ask_human)
    graph.add_node(APPROVAL_NODE, approval_node)
    route = _untraced
    graph.add_conditional_edges(START, route(_entry), ["awareness", "agent", END])
    graph.add_conditional_edges("awareness", route(_after_awareness), ["agent", END])
    graph.add_conditional_edges(
        "agent", route(_after_agent), ["tools", "ask_human", APPROVAL_NODE, END]
    )
    graph.add_conditional_edges(APPROVAL_NODE, route(after_approval), [APPROVAL_NODE, "tools", END])
    graph.add_conditional_edges("tools", route(_after_tools), ["ask_human", "agent", END])
    graph.add_conditional_edges("ask_human", route(_after_tools), ["ask_human", "agent", END])
    return graph.compile(checkpointer=checkpointer)


def _untraced(router: Callable[..., Awaitable[Route]]) -> RunnableCallable:
    """``router`` as LangGraph wraps a router, less the callbacks it runs around each call.

    LangGraph wraps a bare function with ``trace=True``: a callback manager
    and a chain start and end for every routing, which nothing of aah's
    reads (its traces are its own events); they cost more than the routing.
    """
    return RunnableCallable(None, router, name=router.__name__, trace=False)


async def _entry(state: AgentState, runtime: GraphRuntime[SessionContext]) -> Route:
    # A conversation's user may reach its limit before the agent says a word
    # (τ²: the phone calls before the first message).
    if await runtime.context.conversation_limit(state["messages"]) is not None:
        return END
    # With no awareness question to ask the node would do nothing: the
    # session starts at the agent, a superstep (and its checkpoint) fewer.
    ctx = runtime.context
    return "awareness" if ctx.awareness_apart and awareness_questions(ctx.awareness) else "agent"


# The routers are coroutines although they never wait: LangGraph runs a plain
# function given to an async graph on a worker thread, a hand-off each step
# that costs more than the routing (perf/batch_bench.py).
async def _after_awareness(state: AgentState) -> Route:
    return END if state.get("skipped") else "agent"


async def _after_tools(state: AgentState, runtime: GraphRuntime[SessionContext]) -> Route:
    # A conversation with limits of its own (τ²'s failed calls and steps) ends
    # as soon as a step reaches one, inside a turn too.
    if await runtime.context.conversation_limit(state["messages"]) is not None:
        return END
    if _pending_questions(state["messages"]):
        return "ask_human"
    # Reached at the limit only when the last turn's calls were still to be answered.
    return END if steps_in_turn(state) >= runtime.context.step_limit else "agent"


def _last_ai(messages: list[AnyMessage]) -> AIMessage:
    return next(m for m in reversed(messages) if isinstance(m, AIMessage))


def _answered_ids(messages: list[AnyMessage]) -> set[str]:
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def _pending_questions(messages: list[AnyMessage]) -> list[ToolCall]:
    """``ask_human`` calls of the last model turn that have no reply yet."""
    answered = _answered_ids(messages)
    return [
        call
        for call in _last_ai(messages).tool_calls
        if call["name"] == ASK_HUMAN and call["id"] not in answered
    ]


async def _awareness(state: AgentState, runtime: GraphRuntime[SessionContext]) -> dict[str, Any]:
    ctx = runtime.context
    tools_text = describe_tools(ctx.specs, ctx.aah, discover=ctx.discover)
    for question in awareness_questions(ctx.awareness):
        result = await ask_awareness(ctx.model, question, ctx.query, tools_text)
        ctx.emit(
            ModelCallEvent(
                session_id=ctx.session_id,
                model=ctx.model_name,
                latency_ms=result.latency_ms,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                text=result.raw,
                reasoning=result.reasoning,
                purpose="awareness",
            )
        )
        ctx.emit(
            AwarenessEvent(
                session_id=ctx.session_id,
                question=question,
                answer=result.answer,
                reason=result.reason,
                raw=result.raw,
                attempts=result.attempts,
                reasoning=result.reasoning,
            )
        )
        if result.answer == "no":
            reason = result.reason or f"the {question} I would need is missing."
            message = load_prompt("skip_message").render(reason=reason)
            return {"skipped": True, "messages": [AIMessage(message)]}
    return {"skipped": False}


async def _agent(state: AgentState, runtime: GraphRuntime[SessionContext]) -> dict[str, Any]:
    ctx = runtime.context
    aware: dict[str, Any] = {}
    if "skipped" not in state and not ctx.awareness_apart and awareness_questions(ctx.awareness):
        # Asked in the agent's first step (``SessionContext.awareness_apart``).
        aware = await _awareness(state, runtime)
        if aware["skipped"]:
            return aware
    started = time.perf_counter()
    # Bound per call: endpoints that find_tools added are offered from the next turn on.
    tools = ctx.tools_now(state)

    async def complete(messages: Sequence[BaseMessage], max_tokens: int | None) -> AIMessage:
        if ctx.tool_mode == "prompt":
            conversation = prompted_conversation(messages, tools.prompt_text)
            return await ctx.model.complete(conversation, max_tokens=max_tokens)
        return await ctx.model.complete(messages, tools.schemas, max_tokens=max_tokens)

    # Results compacted to fit the context replace theirs in the state (same ids).
    reply, compacted = await complete_within_context(
        lambda messages: complete(messages, None), state["messages"]
    )
    if was_cut_off(reply):
        reply, more, started = await _again_with_more_room(
            ctx, complete, state["messages"], reply, started
        )
        compacted = more or compacted
    sent = reply
    reply = recover_text_tool_calls(reply, tools.offered)
    reply = with_unique_call_ids(reply, state["messages"], state.get("steps", 0) + 1)
    _log_model_call(ctx, reply, started, raw=_raw_reply(sent, reply))
    return {**aware, "messages": [*compacted, reply], "steps": state.get("steps", 0) + 1}


async def _again_with_more_room(
    ctx: SessionContext,
    complete: Callable[[Sequence[BaseMessage], int | None], Awaitable[AIMessage]],
    messages: list[AnyMessage],
    cut: AIMessage,
    started: float,
) -> tuple[AIMessage, list[ToolMessage], float]:
    """Ask once more with twice the reply budget after a reply cut at its length limit.

    Returns the new reply, the results compacted to get it, and when it was asked.

    A cut reply is never an answer, and a half-written call is not the
    model's format error: when the second reply is cut too, or the server
    refuses the larger budget, the session stops (``ReplyCutOff``).
    """
    _log_model_call(ctx, cut, started, cut_off=True)
    budget = ctx.model.config.reply_tokens
    larger = 2 * budget
    setting = ctx.model.config.setting_name("MAX_TOKENS")
    retry_started = time.perf_counter()
    try:
        reply, compacted = await complete_within_context(
            lambda conversation: complete(conversation, larger), messages
        )
    except ModelStatusError as exc:
        if not 400 <= exc.status < 500:
            raise
        raise ReplyCutOff(
            f"the model's reply was cut by its length limit ({budget:,} tokens) and the server "
            f"refused a larger one ({exc.server_message.rstrip('.') or f'HTTP {exc.status}'}): "
            f"raise {setting} within what the server allows, or use a model "
            "that answers more briefly"
        ) from None
    if was_cut_off(reply):
        _log_model_call(ctx, reply, retry_started, cut_off=True)
        raise ReplyCutOff(
            f"the model's reply was cut by its length limit twice ({budget:,} tokens, then "
            f"{larger:,}): raise {setting}, or use a model that answers more "
            "briefly"
        )
    return reply, compacted, retry_started


def _raw_reply(sent: AIMessage, read: AIMessage) -> str | None:
    """The reply as sent, where reading its calls left less of it; None where nothing was lost.

    Calls read out of the text leave none of it, and a native call whose
    arguments are not JSON is kept only as an error: scorers that read intent
    (BFCL's intent-based refusal) need the reply as the model wrote it.
    """
    text = sent.text if isinstance(sent.text, str) else ""
    if read.content != sent.content:
        return text
    if not sent.invalid_tool_calls:
        return None
    broken = [
        json.dumps({"name": call.get("name"), "arguments": call.get("args")}, ensure_ascii=False)
        for call in sent.invalid_tool_calls
    ]
    return "\n".join([text, *broken] if text else broken)


def _log_model_call(
    ctx: SessionContext,
    reply: AIMessage,
    started: float,
    *,
    cut_off: bool = False,
    raw: str | None = None,
) -> None:
    usage = reply.usage_metadata
    ctx.emit(
        ModelCallEvent(
            session_id=ctx.session_id,
            model=ctx.model_name,
            latency_ms=(time.perf_counter() - started) * 1000,
            prompt_tokens=usage["input_tokens"] if usage else None,
            completion_tokens=usage["output_tokens"] if usage else None,
            n_tool_calls=0 if cut_off else len(reply.tool_calls) + len(reply.invalid_tool_calls),
            text=reply.text if isinstance(reply.text, str) else "",
            raw=raw,
            reasoning=reasoning_of(reply),
            purpose="agent",
            cut_off=cut_off,
        )
    )


def with_unique_call_ids(reply: AIMessage, history: Sequence[BaseMessage], step: int) -> AIMessage:
    """``reply`` with every call id new to the session, ``history`` being what came before.

    Servers number calls per turn (``call_0`` every turn) or repeat an id
    within one turn; the session pairs each result with its call, and each
    question with its request, by id. An id already used becomes
    ``<id>-<step>.<n>``; an id that is new is kept, so servers that send
    unique ids see their own ids back.
    """
    used = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
    for message in history:
        if isinstance(message, AIMessage):
            used.update(c["id"] or "" for c in [*message.tool_calls, *message.invalid_tool_calls])
    changed = False

    def unique(call_id: str | None, index: int) -> str:
        nonlocal changed
        fresh = call_id or "call"
        suffix = 0
        while not fresh or fresh in used:
            suffix += 1
            fresh = f"{call_id or 'call'}-{step}.{index}" + (f".{suffix}" if suffix > 1 else "")
        changed = changed or fresh != call_id
        used.add(fresh)
        return fresh

    calls = [{**c, "id": unique(c["id"], i)} for i, c in enumerate(reply.tool_calls)]
    offset = len(calls)
    invalid = [
        {**c, "id": unique(c["id"], offset + i)} for i, c in enumerate(reply.invalid_tool_calls)
    ]
    if not changed:
        return reply
    return reply.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})


async def _after_agent(state: AgentState, runtime: GraphRuntime[SessionContext]) -> Route:
    if state.get("skipped"):  # the awareness questions, asked in this step, said no
        return END
    reply = _last_ai(state["messages"])
    if not (reply.tool_calls or reply.invalid_tool_calls):
        return END
    at_limit = steps_in_turn(state) >= runtime.context.step_limit
    if at_limit and not runtime.context.answer_calls_at_limit:
        return END
    if _only_good_questions(reply, state, runtime.context):
        return "ask_human"
    # Calls a policy marks wait for a person's decision before any of the turn runs.
    return APPROVAL_NODE if undecided_calls(state, runtime.context) else "tools"


def _only_good_questions(reply: AIMessage, state: AgentState, ctx: SessionContext) -> bool:
    """Whether the turn only asks the person, with calls that pass every check and the caps.

    Such a turn goes straight to ``ask_human`` (one graph step fewer); the
    ``tools`` step is for turns with a tool to run or a call to reject.
    """
    if reply.invalid_tool_calls or any(c["name"] != ASK_HUMAN for c in reply.tool_calls):
        return False
    if len(reply.tool_calls) > _questions_left(state["messages"], ctx):
        return False
    checker = ctx.tools_now(state).checker(state.get("seen_calls", []), ctx.check_calls)
    return all(checker.check(c["name"], c["args"]).ok for c in reply.tool_calls)


def _questions_left(messages: Sequence[AnyMessage], ctx: SessionContext) -> int:
    """How many questions the last turn may still put to the person.

    A question asked earlier has a reply that is no error; the last turn's own
    replies are not in ``messages`` yet when this is asked.
    """
    asked = sum(
        1
        for m in messages
        if isinstance(m, ToolMessage) and m.name == ASK_HUMAN and m.status != "error"
    )
    return max(0, min(ctx.max_questions_per_reply, ctx.max_questions_per_session - asked))


async def _tools(state: AgentState, runtime: GraphRuntime[SessionContext]) -> dict[str, Any]:
    ctx = runtime.context
    reply = _last_ai(state["messages"])
    tools = ctx.tools_now(state)
    checker = tools.checker(state.get("seen_calls", []), ctx.check_calls)
    messages: list[ToolMessage] = []
    runs: list[Awaitable[ToolMessage]] = []
    seen = list(state.get("seen_calls", []))
    discovered = list(state.get("discovered") or [])
    known = set(tools.offered)
    questions_left = _questions_left(state["messages"], ctx)
    for bad in reply.invalid_tool_calls:
        error = bad.get("error") or "malformed call"
        unreadable = CheckResult("IFE", tool_prompt("unreadable_call").render(error=error))
        call_id, name = bad.get("id") or "invalid", bad.get("name") or ""
        messages.append(_rejected(ctx, call_id, name, {}, unreadable))
    for call in reply.tool_calls:
        verdict: CheckResult | _Refusal = checker.check(call["name"], call["args"])
        if verdict.ok and call["name"] == ASK_HUMAN:
            if questions_left == 0:
                verdict = _past_question_cap(ctx)
            else:
                questions_left -= 1
        if verdict.code == "IFN" and ctx.discover and call["name"] not in BUILTIN_TOOLS:
            verdict = _undiscovered(call["name"], tools)
        if not verdict.ok:
            messages.append(_rejected(ctx, call["id"] or "", call["name"], call["args"], verdict))
            continue
        seen.append(canonical_call(call["name"], call["args"]))
        if call["name"] == FIND_TOOLS:
            messages.append(_find_tools(ctx, call["id"] or "", call["args"], known, discovered))
            continue
        if call["name"] == ASK_HUMAN:
            continue
        decision = decision_for(state, ctx, call)
        if decision is not None:  # it needed approval: it runs as decided
            runs.append(run_decided(ctx, call, decision))
        else:
            runs.append(_run(ctx, tools, call["id"] or "", call["name"], call["args"]))
    messages += await asyncio.gather(*runs)
    update: dict[str, Any] = {"messages": messages, "seen_calls": seen}
    if len(discovered) != len(state.get("discovered") or []):
        update["discovered"] = discovered
    return update


def _undiscovered(name: str, tools: SessionTools) -> _Refusal:
    """IFN for a session that discovers tools: the feedback points to ``find_tools``.

    The same words whether or not the registry holds ``name``, so that the
    feedback never tells of an endpoint the session may not find.
    """
    names = sorted(tools.offered)
    listed = ", ".join(names[:_MAX_LISTED_TOOLS])
    more = f" and {len(names) - _MAX_LISTED_TOOLS} more" if len(names) > _MAX_LISTED_TOOLS else ""
    return _Refusal("IFN", tool_prompt("check_undiscovered").render(name=name, tools=listed + more))


def _find_tools(
    ctx: SessionContext,
    call_id: str,
    arguments: dict[str, Any],
    known: set[str],
    discovered: list[dict[str, Any]],
) -> ToolMessage:
    """Answer one ``find_tools`` call; the endpoints it found join ``known`` and ``discovered``."""
    assert ctx.finder is not None  # find_tools is offered only with a finder
    need = str(arguments.get("need", ""))
    found = ctx.finder.discover(need, known)
    for spec in found.hits:
        if spec.qualified_name in found.added:
            discovered.append(spec.model_dump(mode="json"))
            known.add(spec.qualified_name)
    ctx.emit(
        DiscoveryEvent(
            session_id=ctx.session_id,
            call_id=call_id,
            need=need,
            hits=[spec.qualified_name for spec in found.hits],
            added=found.added,
        )
    )
    return ToolMessage(found.feedback, tool_call_id=call_id, name=FIND_TOOLS)


class _Refusal(NamedTuple):
    """A call the runtime will not run, and what the model is told (a check's verdict or a cap)."""

    code: CheckCode
    feedback: str

    @property
    def ok(self) -> bool:
        """Never: a refused call does not run."""
        return False


def _past_question_cap(ctx: SessionContext) -> _Refusal:
    feedback = load_prompt("question_cap").render(
        per_reply=ctx.max_questions_per_reply, per_session=ctx.max_questions_per_session
    )
    return _Refusal("CAP", feedback)


def _rejected(
    ctx: SessionContext,
    call_id: str,
    name: str,
    arguments: dict[str, Any],
    verdict: CheckResult | _Refusal,
) -> ToolMessage:
    ctx.emit(
        ToolCallEvent(
            session_id=ctx.session_id,
            call_id=call_id,
            tool=name or "(unparsed)",
            arguments=arguments,
            ok=False,
            check=verdict.code,
            feedback=verdict.feedback,
            http_mode=ctx.http_mode,
        )
    )
    return ToolMessage(verdict.feedback, tool_call_id=call_id, name=name or None, status="error")


async def _run(
    ctx: SessionContext, tools: SessionTools, call_id: str, name: str, arguments: dict[str, Any]
) -> ToolMessage:
    spec = tools.specs[name]
    result = await ctx.executor.acall(spec, arguments)
    ctx.emit(
        ToolCallEvent(
            session_id=ctx.session_id,
            call_id=call_id,
            tool=name,
            arguments=arguments,
            status_code=result.status,
            ok=result.ok,
            latency_ms=result.latency_ms,
            result=result.text,
            http_mode=result.mode,
            protocol=spec.protocol,
        )
    )
    status = "success" if result.ok else "error"
    text = cut_tool_result(result.text, ctx.tool_result_tokens)
    return ToolMessage(text, tool_call_id=call_id, name=name, status=status, artifact=RAN)


async def _ask_human(state: AgentState, runtime: GraphRuntime[SessionContext]) -> dict[str, Any]:
    call = _pending_questions(state["messages"])[0]
    question = call["args"]["question"]
    answer_now = runtime.context.answer_now
    if answer_now is not None:
        # Answered within the step: no pause, no second run of the graph.
        reply = await answer_now(call["id"] or "", question)
    else:
        # Nothing before interrupt() may have effects: this node reruns on resume.
        reply = Answer.from_resumed(interrupt({"call_id": call["id"], "question": question}))
    answer = reply.answer
    if reply.declined or not answer.strip():
        answer = load_prompt("declined_answer").render()
    message = ToolMessage(answer, tool_call_id=call["id"], name=ASK_HUMAN)
    # A question that came straight from the agent is remembered here (the
    # tools step remembers those it passed on), so that a repeat is caught.
    seen = state.get("seen_calls", [])
    asked = canonical_call(ASK_HUMAN, call["args"])
    return {"messages": [message], "seen_calls": seen if asked in seen else [*seen, asked]}
