"""The agent as a LangGraph graph: awareness → agent ⇄ tools, ask_human as interrupt.

Nodes report what they do through ``SessionContext.emit``; the session driver
stores the events. ``ask_human`` pauses the graph with ``interrupt``: the
checkpointer keeps the paused state, so the answer may arrive hours later, in
another process. The interrupted node runs again on resume, which is why it
does nothing before ``interrupt()`` that must not happen twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolCall, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime as GraphRuntime
from langgraph.types import interrupt

from aah.events import AwarenessEvent, ModelCallEvent, ToolCallEvent
from aah.llm import recover_text_tool_calls
from aah.runtime.awareness import (
    ask_awareness,
    awareness_questions,
    describe_tools,
    reasoning_of,
)
from aah.runtime.budget import complete_within_context, cut_tool_result
from aah.runtime.prompts import load_prompt
from aah.runtime.state import AgentState, SessionContext
from aah.runtime.tool_mode import prompted_conversation
from aah.tools import ASK_HUMAN, tool_prompt
from aah.tools.calls import CheckResult, canonical_call

Route = str  # a node name, or END


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
    graph.add_edge(START, "awareness")
    graph.add_conditional_edges("awareness", _after_awareness, ["agent", END])
    graph.add_conditional_edges("agent", _after_agent, ["tools", "ask_human", END])
    graph.add_conditional_edges("tools", _after_tools, ["ask_human", "agent", END])
    graph.add_conditional_edges("ask_human", _after_tools, ["ask_human", "agent", END])
    return graph.compile(checkpointer=checkpointer)


def _after_awareness(state: AgentState) -> Route:
    return END if state.get("skipped") else "agent"


def _after_tools(state: AgentState, runtime: GraphRuntime[SessionContext]) -> Route:
    if _pending_questions(state["messages"]):
        return "ask_human"
    # Reached at the limit only when the last turn's calls were still to be answered.
    return END if state.get("steps", 0) >= runtime.context.step_limit else "agent"


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
    tools_text = describe_tools(ctx.specs, ctx.aah)
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
    started = time.perf_counter()

    async def complete(messages: Sequence[BaseMessage]) -> AIMessage:
        if ctx.tool_mode == "prompt":
            return await ctx.model.complete(prompted_conversation(messages, ctx.tools.prompt_text))
        return await ctx.model.complete(messages, ctx.tools.schemas)

    # Results compacted to fit the context replace theirs in the state (same ids).
    reply, compacted = await complete_within_context(complete, state["messages"])
    reply = recover_text_tool_calls(reply, ctx.tools.offered)
    reply = with_unique_call_ids(reply, state["messages"], state.get("steps", 0) + 1)
    usage = reply.usage_metadata
    ctx.emit(
        ModelCallEvent(
            session_id=ctx.session_id,
            model=ctx.model_name,
            latency_ms=(time.perf_counter() - started) * 1000,
            prompt_tokens=usage["input_tokens"] if usage else None,
            completion_tokens=usage["output_tokens"] if usage else None,
            n_tool_calls=len(reply.tool_calls) + len(reply.invalid_tool_calls),
            text=reply.text if isinstance(reply.text, str) else "",
            reasoning=reasoning_of(reply),
            purpose="agent",
        )
    )
    return {"messages": [*compacted, reply], "steps": state.get("steps", 0) + 1}


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


def _after_agent(state: AgentState, runtime: GraphRuntime[SessionContext]) -> Route:
    reply = _last_ai(state["messages"])
    if not (reply.tool_calls or reply.invalid_tool_calls):
        return END
    at_limit = state.get("steps", 0) >= runtime.context.step_limit
    if at_limit and not runtime.context.answer_calls_at_limit:
        return END
    return "ask_human" if _only_good_questions(reply, state, runtime.context) else "tools"


def _only_good_questions(reply: AIMessage, state: AgentState, ctx: SessionContext) -> bool:
    """Whether the turn only asks the person, with calls that pass every check.

    Such a turn goes straight to ``ask_human`` (one graph step fewer); the
    ``tools`` step is for turns with a tool to run or a call to reject.
    """
    if reply.invalid_tool_calls or any(c["name"] != ASK_HUMAN for c in reply.tool_calls):
        return False
    checker = ctx.tools.checker(state.get("seen_calls", []))
    return all(checker.check(c["name"], c["args"]).ok for c in reply.tool_calls)


async def _tools(state: AgentState, runtime: GraphRuntime[SessionContext]) -> dict[str, Any]:
    ctx = runtime.context
    reply = _last_ai(state["messages"])
    checker = ctx.tools.checker(state.get("seen_calls", []))
    messages: list[ToolMessage] = []
    runs: list[tuple[str, str, dict[str, Any]]] = []
    seen = list(state.get("seen_calls", []))
    for bad in reply.invalid_tool_calls:
        error = bad.get("error") or "malformed call"
        verdict = CheckResult("IFE", tool_prompt("unreadable_call").render(error=error))
        call_id, name = bad.get("id") or "invalid", bad.get("name") or ""
        messages.append(_rejected(ctx, call_id, name, {}, verdict))
    for call in reply.tool_calls:
        verdict = checker.check(call["name"], call["args"])
        if not verdict.ok:
            messages.append(_rejected(ctx, call["id"] or "", call["name"], call["args"], verdict))
            continue
        seen.append(canonical_call(call["name"], call["args"]))
        if call["name"] != ASK_HUMAN:
            runs.append((call["id"] or "", call["name"], call["args"]))
    messages += await asyncio.gather(*(_run(ctx, *run) for run in runs))
    return {"messages": messages, "seen_calls": seen}


def _rejected(
    ctx: SessionContext, call_id: str, name: str, arguments: dict[str, Any], verdict: CheckResult
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
    ctx: SessionContext, call_id: str, name: str, arguments: dict[str, Any]
) -> ToolMessage:
    result = await ctx.executor.acall(ctx.tools.specs[name], arguments)
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
        )
    )
    status = "success" if result.ok else "error"
    text = cut_tool_result(result.text, ctx.tool_result_tokens)
    return ToolMessage(text, tool_call_id=call_id, name=name, status=status)


async def _ask_human(state: AgentState) -> dict[str, Any]:
    call = _pending_questions(state["messages"])[0]
    # Nothing before interrupt() may have effects: this node reruns on resume.
    reply = interrupt({"call_id": call["id"], "question": call["args"]["question"]})
    text = str(reply.get("text", "")) if isinstance(reply, dict) else str(reply)
    declined = bool(reply.get("declined")) if isinstance(reply, dict) else False
    if declined or not text.strip():
        text = load_prompt("declined_answer").render()
    answer = ToolMessage(text, tool_call_id=call["id"], name=ASK_HUMAN)
    # A question that came straight from the agent is remembered here (the
    # tools step remembers those it passed on), so that a repeat is caught.
    seen = state.get("seen_calls", [])
    asked = canonical_call(ASK_HUMAN, call["args"])
    return {"messages": [answer], "seen_calls": seen if asked in seen else [*seen, asked]}
