"""The approval gate: calls a policy marks wait for a person's decision before they run.

In the graph, a turn whose calls need approval goes from ``agent`` to the
``approval`` node, which interrupts once per call (after the tool-call
checks: a malformed call never reaches a person), then to ``tools``, which
runs each call as decided. The session driver answers each interrupt with
:func:`decide_call`, which asks the approver, waits (parked, like a question)
and records the one decision. An approved call is recorded as it starts
(``SessionStore.approved.start_approved_run``), so a runner killed and restarted never
sends it twice.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime as GraphRuntime
from langgraph.types import interrupt

from aah.desk import QuestionContext
from aah.errors import AahError
from aah.events import ApprovalDecidedEvent, ApprovalRequestedEvent, ToolCallEvent
from aah.runtime.approval_policy import ApprovalRule
from aah.runtime.approvals import ApprovalReply, ApprovalRequest, approver_for
from aah.runtime.budget import cut_tool_result
from aah.runtime.prompts import load_prompt
from aah.runtime.state import AgentState, SessionContext
from aah.runtime.turns import RAN
from aah.tools import ASK_HUMAN
from aah.tools.calls import enum_problem

if TYPE_CHECKING:
    from aah.runtime.session import Runtime, SessionRequest
    from aah.store import SessionRecord

APPROVAL_NODE = "approval"


def undecided_calls(state: AgentState, ctx: SessionContext) -> list[tuple[ToolCall, ApprovalRule]]:
    """The last turn's calls that pass their checks, need approval and have no decision yet."""
    if ctx.approvals is None:
        return []
    reply = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
    tools = ctx.tools_now(state)  # endpoints found with find_tools need approval too
    checker = tools.checker(state.get("seen_calls", []), ctx.check_calls)
    decided = state.get("approvals", {})
    waiting = []
    for call in reply.tool_calls:
        spec = tools.specs.get(call["name"])
        if spec is None or call["name"] == ASK_HUMAN or (call["id"] or "") in decided:
            continue
        if not checker.check(call["name"], call["args"]).ok:
            continue  # a malformed call gets its feedback in ``tools``, never a person
        rule = ctx.approvals.rule_for(spec, call["args"])
        if rule is not None:
            waiting.append((call, rule))
    return waiting


async def approval_node(state: AgentState, runtime: GraphRuntime[SessionContext]) -> dict[str, Any]:
    """Wait for the decision on the next call that needs one (a graph node).

    Nothing before ``interrupt()`` has effects: the node runs again on resume.
    """
    call, rule = undecided_calls(state, runtime.context)[0]
    spec = runtime.context.tools_now(state).specs[call["name"]]
    value = interrupt(
        {
            "kind": "approval",
            "call_id": call["id"],
            "tool": call["name"],
            "method": spec.method,
            "arguments": call["args"],
            "rule": rule.describe(),
        }
    )
    decided = {**state.get("approvals", {}), call["id"] or "": dict(value)}
    update: dict[str, Any] = {"approvals": decided}
    if value.get("decision") == "terminate":
        update["terminated"] = True
    return update


async def after_approval(state: AgentState, runtime: GraphRuntime[SessionContext]) -> str:
    """Where the graph goes after a decision: the next call to decide, the tools, or the end."""
    if state.get("terminated"):
        return END
    return APPROVAL_NODE if undecided_calls(state, runtime.context) else "tools"


def decision_for(state: AgentState, ctx: SessionContext, call: ToolCall) -> dict[str, Any] | None:
    """The decision on ``call`` when it needed approval (it passed its checks), else None."""
    if ctx.approvals is None:
        return None
    spec = ctx.tools_now(state).specs.get(call["name"])
    if spec is None or ctx.approvals.rule_for(spec, call["args"]) is None:
        return None
    # A call the gate let through always has a decision; none would mean the
    # policy changed under a resumed session: the call is then not run.
    missing = {"decision": "reject", "reason": "no decision was recorded for it"}
    return state.get("approvals", {}).get(call["id"] or "", missing)


async def run_decided(ctx: SessionContext, call: ToolCall, decision: dict[str, Any]) -> ToolMessage:
    """What the agent reads for a call that needed approval: its result, or why it did not run."""
    call_id, name = call["id"] or "", call["name"]
    kind = decision.get("decision")
    if kind == "approve" or kind == "edit":
        arguments = decision.get("arguments") if kind == "edit" else None
        executed = arguments if isinstance(arguments, dict) else call["args"]
        message = await _run_once(ctx, call_id, name, executed)
        if executed == call["args"]:
            return message.model_copy(update={"artifact": RAN})
        edited_ran = {RAN: executed}
        note = load_prompt("approval_edited").render(
            proposed=json.dumps(call["args"], ensure_ascii=False),
            executed=json.dumps(executed, ensure_ascii=False),
            result=message.content,
        )
        return message.model_copy(update={"content": note, "artifact": edited_ran})
    if kind == "respond":
        # A person did the tool's job: their text is the result, the call never ran.
        response = str(decision.get("response") or "")
        return ToolMessage(
            load_prompt("approval_responded").render(response=response),
            tool_call_id=call_id,
            name=name,
        )
    if decision.get("timed_out"):
        text = load_prompt("approval_timed_out").render()
    else:
        reason = str(decision.get("reason") or "").strip()
        text = load_prompt("approval_rejected").render(
            reason=f" Their reason: {reason}" if reason else ""
        )
    return ToolMessage(text, tool_call_id=call_id, name=name, status="error")


async def _run_once(
    ctx: SessionContext, call_id: str, name: str, arguments: dict[str, Any]
) -> ToolMessage:
    """Run an approved call unless it started before (a runner restarted): at most once."""
    earlier = (
        ctx.store.approved.start_approved_run(ctx.session_id, call_id, arguments)
        if ctx.store is not None
        else None
    )
    if earlier is None:
        result = await ctx.executor.acall(ctx.current_tools.specs[name], arguments)
        if ctx.store is not None:
            ctx.store.approved.finish_approved_run(
                ctx.session_id,
                call_id,
                status_code=result.status,
                ok=result.ok,
                result=result.text,
                latency_ms=result.latency_ms,
                http_mode=result.mode,
            )
        status_code, ok, text = result.status, result.ok, result.text
        latency_ms, mode = result.latency_ms, result.mode
    elif earlier.finished:
        status_code, ok, text = earlier.status_code, earlier.ok, earlier.result
        latency_ms, mode = earlier.latency_ms, earlier.http_mode
    else:
        status_code, ok, text = None, False, load_prompt("approval_unknown").render()
        latency_ms, mode = 0.0, ctx.http_mode
    ctx.emit(
        ToolCallEvent(
            session_id=ctx.session_id,
            call_id=call_id,
            tool=name,
            arguments=arguments,
            status_code=status_code,
            ok=ok,
            latency_ms=latency_ms,
            result=text,
            http_mode=mode,
            protocol=ctx.current_tools.specs[name].protocol,
        )
    )
    status = "success" if ok else "error"
    cut = cut_tool_result(text, ctx.tool_result_tokens)
    return ToolMessage(cut, tool_call_id=call_id, name=name, status=status)


# -- the session driver's half: ask, wait, record the decision ----------------


async def decide_call(
    ctx: SessionContext,
    runtime: Runtime,
    request: SessionRequest,
    record: SessionRecord,
    value: dict[str, Any],
    context: QuestionContext,
) -> dict[str, Any]:
    """Put one approval interrupt's call to the approver; log the request and the one decision.

    A decision logged before a restart is used again, never asked twice; a
    pending request is found again by its id. A deadline with nobody
    deciding applies the policy's next ``on_timeout`` step.

    Raises:
        AahError: The session's human channel cannot decide on calls.
        SessionEnded: The session went on elsewhere while it waited.
    """
    policy = request.approvals
    call_id, tool = str(value["call_id"]), str(value["tool"])
    known = await runtime.store.call(runtime.store.events, ctx.session_id)
    logged = next(
        (e for e in known if isinstance(e, ApprovalDecidedEvent) and e.call_id == call_id), None
    )
    if logged is not None:
        if record.status == "waiting":
            # Read as waiting, yet decided in the log: another process resumed
            # it between the two reads; only one of them goes on.
            await runtime.go_on_once(record, [])
        else:
            # Decided before a crash that came ahead of the next checkpoint.
            await runtime.record(record, [], "running")
        return _resume_value(logged)
    channel = request.approver or request.human or runtime.human
    approver = approver_for(channel)
    if approver is None or policy is None:
        raise AahError(
            f"{type(channel).__name__} cannot decide on tool calls: use --human console, "
            "queue, oracle or simulated with an approval policy"
        )
    spec = ctx.current_tools.specs[tool]
    ask, timed_out = 1, False
    while True:
        request_id = f"{ctx.session_id}-{call_id}-approval" + (f"-{ask}" if ask > 1 else "")
        requested = ApprovalRequestedEvent(
            session_id=ctx.session_id,
            request_id=request_id,
            call_id=call_id,
            tool=tool,
            method=spec.method,
            arguments=dict(value["arguments"]),
            rule=str(value.get("rule", "")),
            ask=ask,
        )
        before = any(
            isinstance(e, ApprovalRequestedEvent) and e.request_id == request_id for e in known
        )
        if not (before and record.status == "waiting"):
            await runtime.record(record, [] if before else [requested], "waiting")
        reply = await approver.decide(
            ApprovalRequest(
                request_id=request_id,
                session_id=ctx.session_id,
                call_id=call_id,
                tool=tool,
                method=spec.method,
                url=spec.url_template,
                arguments=dict(value["arguments"]),
                parameters=[p.model_dump(mode="json") for p in spec.parameters],
                rule=requested.rule,
                ask=ask,
                deadline_seconds=policy.deadline or _queue_deadline(channel),
                fallback=policy.fallback(ask),
                context=context,
            ),
            lambda arguments: edit_problem(ctx, tool, arguments),
        )
        if reply is not None:
            break
        step = policy.fallback(ask)
        if step != "ask_again":
            reply = ApprovalReply(decision=step, decided_by="deadline-fallback")
            timed_out = True
            break
        ask += 1
    proposed = dict(value["arguments"])
    decided = _decided_event(ctx, request_id, call_id, tool, proposed, reply, timed_out)
    await runtime.go_on_once(record, [*runtime.take_held_events(record), decided])
    return _resume_value(decided)


def edit_problem(ctx: SessionContext, tool: str, arguments: dict[str, Any]) -> str | None:
    """Why edited ``arguments`` cannot run as ``tool``'s call (checks, enums), or None."""
    verdict = ctx.current_tools.checker([], ctx.check_calls).check(tool, arguments)
    if not verdict.ok:
        return " ".join(verdict.feedback.split()).rstrip(".")
    return enum_problem(ctx.current_tools.offered.get(tool, ()), arguments)


def _queue_deadline(channel: object) -> float | None:
    return getattr(channel, "deadline_seconds", None)


def _decided_event(
    ctx: SessionContext,
    request_id: str,
    call_id: str,
    tool: str,
    proposed: dict[str, Any],
    reply: ApprovalReply,
    timed_out: bool,
) -> ApprovalDecidedEvent:
    """The decision as recorded: an invalid edit refused, an edit that changed nothing approved."""
    decision, arguments, reason = reply.decision, reply.arguments, reply.reason
    response = reply.response if decision == "respond" else ""
    if decision == "edit":
        problem = (
            edit_problem(ctx, tool, arguments or {}) if arguments is not None else "none given"
        )
        if problem is not None:
            # Refused, never sent (science.md §7): the call does not run.
            decision, arguments = "reject", None
            reason = load_prompt("approval_invalid_edit").render(error=problem)
        elif arguments == proposed:
            decision, arguments = "approve", None  # an edit that changed nothing
    else:
        arguments = None
    return ApprovalDecidedEvent(
        session_id=ctx.session_id,
        request_id=request_id,
        call_id=call_id,
        tool=tool,
        decision=decision,
        arguments=arguments,
        reason=reason,
        response=response,
        decided_by=reply.decided_by,
        timed_out=timed_out,
    )


def _resume_value(event: ApprovalDecidedEvent) -> dict[str, Any]:
    return {
        "decision": event.decision,
        "arguments": event.arguments,
        "reason": event.reason,
        "response": event.response,
        "timed_out": event.timed_out,
    }
