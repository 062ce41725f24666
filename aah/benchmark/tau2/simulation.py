"""One τ² simulation as an aah session: the agent talks with a user until one of τ²'s ends.

A :class:`Tau2Simulation` is both the session's executor (the agent's calls
run on the task's fenced :class:`Tau2Environment`) and its conversation's
user side (``aah.runtime.ConversationUser``): each time the agent replies
without a call, its text goes to the user (:class:`Tau2User`, a human
channel as well, so ``ask_human`` reaches the same user) and the user's
answer is the next turn. The user's own calls (telecom's phone) run on the
same environment, one at a time, and are kept with their message, so a
session resumed in a new process rebuilds the environment by replaying the
agent's and the user's calls in their order (``restore_conversation``).

The simulation ends as τ²'s orchestrator ends one: the user says a stop
token (``user_stop``), the agent says ``###STOP###`` (``agent_stop``),
the conversation reaches :data:`MAX_STEPS` steps (``max_steps``) or
:data:`MAX_ERRORS` calls have failed (``too_many_errors``). The limits are
checked as τ²'s run loop checks them (:func:`tau2_limit`): after every step
that is not a call on its way to the environment, so inside a turn too,
after each batch of the agent's calls (``limit_reached``, which the
session asks) and after each of the user's phone calls (their answer is
then never sent). Its end is graded then by τ²'s evaluator
(``agrade_simulation``), and the grade goes into the last turn's report
(the ``turn_ended`` event's check), stored with the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.environment import Tau2Environment, new_fence
from aah.benchmark.tau2.grading import Tau2Grade, agrade_simulation, replayable
from aah.benchmark.tau2.messages import (
    Tau2AgentMessage,
    Tau2Message,
    Tau2ToolCall,
    Tau2ToolResult,
    Tau2UserMessage,
    to_tau2_messages,
)
from aah.benchmark.tau2.tasks import Tau2Task
from aah.runtime import (
    RAN,
    USER_CALLS,
    HumanReply,
    HumanRequest,
    RanCall,
    TurnReport,
    UserReply,
)
from aah.storable import storable_text
from aah.tools import EndpointSpec
from aah.tools.http import ToolResult

# τ²'s orchestrator's limits (its defaults): steps, and calls whose result is an error.
MAX_STEPS = 200
MAX_ERRORS = 10
# What ends a simulation when the user says it, and when the agent does (τ²'s tokens).
USER_STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
AGENT_STOP_TOKEN = "###STOP###"
# τ²'s agent's first message, before the user's first.
GREETING = "Hi! How can I help you today?"
ASK_HUMAN = "ask_human"
# Each limit's end in words (a session that ends inside a turn says it as its answer).
LIMITS = {
    "max_steps": f"τ²'s step limit: {MAX_STEPS} steps (max_steps)",
    "too_many_errors": f"τ²'s error limit: {MAX_ERRORS} calls failed (too_many_errors)",
}

# The most of one user message the conversation keeps (a simulated user's
# reply is a few sentences; a runaway one is cut, with a note, never stored whole).
MAX_USER_CHARS = 20_000

RunCall = Callable[[str, Mapping[str, Any]], Awaitable[Tau2ToolResult]]


class Tau2User(Protocol):
    """The user of a τ² simulation: simulated, scripted, or a person."""

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> str:
        """The user's answer to ``agent_text``; ``run`` makes a call on their own tools first.

        ``turn`` counts the user's messages before this one (0: the first,
        answering τ²'s greeting; -1: a question the agent asked with
        ``ask_human``). ``history`` is the conversation so far as τ² records
        it, the agent's last message included. ``run`` raises
        :class:`LimitReached` once a call brings the simulation to one of
        τ²'s limits: let it through (the simulation ends there).
        """
        ...


class LimitReached(Exception):  # noqa: N818 - a signal, not an error
    """A user's call brought the simulation to one of τ²'s limits (``termination`` names it)."""

    def __init__(self, termination: str) -> None:
        super().__init__(termination)
        self.termination = termination


@dataclass
class _Ran:
    """A call that ran on the environment and its result, in the order it ran."""

    call: Tau2ToolCall
    result: Tau2ToolResult


class Tau2Simulation:
    """One simulation's executor and user side (see the module)."""

    def __init__(
        self,
        domain: Tau2Domain,
        task: Tau2Task,
        user: Tau2User,
        *,
        call_seconds: float | None = None,
        session_label: str = "",
    ) -> None:
        """Prepare the simulation; its environment is built on first use (off the event loop)."""
        self.domain = domain
        self.task = task
        self.user = user
        self.label = session_label or f"{domain.name}/{task.id}"
        self._call_seconds = call_seconds
        self._env: Tau2Environment | None = None
        self._replay: list[AnyMessage] | None = None
        self._ran: list[_Ran] = []
        self._user_calls: list[dict[str, Any]] = []
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.termination: str | None = None
        self.grade: Tau2Grade | None = None
        self.messages: list[Tau2Message] = []
        self._seen: list[Tau2Message] = []
        self._refused: dict[str, Tau2ToolResult] = {}

    # -- the environment ---------------------------------------------------

    async def _environment(self) -> Tau2Environment:
        if self._env is None:
            fence = new_fence(self._call_seconds)
            self._env = await Tau2Environment.acreate(self.domain, self.task, fence=fence)
            replay, self._replay = self._replay, None
            for call in _calls_of(replay or []):
                self._ran.append(_Ran(call, await self._env.aexecute(call)))
        return self._env

    def _one_at_a_time(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def _run(self, call: Tau2ToolCall) -> Tau2ToolResult:
        async with self._one_at_a_time():
            env = await self._environment()
            result = await env.aexecute(call)
            self._ran.append(_Ran(call, result))
            return result

    # -- the executor ------------------------------------------------------

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Calls run only through :meth:`acall` (the environment is built there)."""
        return ToolResult(
            ok=False,
            text="τ² calls run asynchronously",
            latency_ms=0.0,
            url=f"tau2:{spec.name}",
            mode="tau2",
        )

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one of the agent's calls on the environment; τ²'s result text, errors included."""
        call = Tau2ToolCall(spec.name, dict(arguments), f"a{len(self._ran)}", "assistant")
        result = await self._run(call)
        return ToolResult(
            ok=not result.error, text=result.text, latency_ms=0.0, url=f"tau2:{spec.name}",
            mode="tau2",
        )  # fmt: skip

    def close(self) -> None:
        """Nothing to release (the fence's threads are shared)."""

    def restore(self, calls: Sequence[RanCall]) -> None:
        """Unused: :meth:`restore_conversation` rebuilds from the whole conversation."""

    def restore_conversation(self, messages: Sequence[AnyMessage]) -> None:
        """A resumed session: its calls (agent's and user's) run again, lazily, in their order."""
        self._env = None
        self._ran = []
        self._replay = list(messages)

    def turn_ended(self, turn: int, messages: Sequence[AnyMessage]) -> TurnReport:
        """The simulation's end, when it ended, with τ²'s grade; else how far it is."""
        check: dict[str, Any] = {"tau2": True, "messages": len(self.messages) or None}
        if self.termination is not None:
            check["termination"] = self.termination
        if self.grade is None:
            return TurnReport(check=check)
        check.update(grade_record(self.grade))
        # The whole simulation as τ² records it, for `aah sessions export --tau2`.
        code = self.domain.code
        recorded = to_tau2_messages(code, replayable(self.messages))
        state = {
            "tau2_messages": [m.model_dump(mode="json") for m in recorded],
            "reward_info": self.grade.details,
        }
        return TurnReport(state=state, check=check)

    # -- the user side -----------------------------------------------------

    async def reply(self, turn: int, messages: Sequence[AnyMessage]) -> UserReply | None:
        """The user's answer to the agent's last message, or None when the simulation ends."""
        await self._answer_refused(messages)
        first = next((m for m in messages if isinstance(m, HumanMessage)), None)
        if first is not None and turn == 0 and _stops(first.content):
            # The user's first message already ended it: the agent's reply is not τ²'s.
            await self._end(self.trajectory(messages[: messages.index(first) + 1]), "user_stop")
            return None
        trajectory = self.trajectory(messages)
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        text = last.text if last is not None and isinstance(last.text, str) else ""
        # Inside a turn, this is only asked once a limit ended it (limit_reached).
        ended = self._termination(trajectory, "agent_stop" if AGENT_STOP_TOKEN in text else None)
        if ended is not None:
            await self._end(trajectory, ended)
            return None
        self._user_calls = []
        self._seen = trajectory
        try:
            said = await self.user.respond(turn + 1, text, self._user_run, trajectory)
        except LimitReached as reached:
            # Their phone calls reached a limit: the message they were writing is never sent.
            await self._end(trajectory + self._user_messages(self._user_calls), reached.termination)
            return None
        answer = user_text(said)
        calls = tuple(self._user_calls)
        trajectory += self._user_messages(calls, answer)
        ended = self._termination(trajectory, "user_stop" if _stops(answer) else None)
        if ended is not None:
            await self._end(trajectory, ended)
            return None
        self.messages = trajectory
        return UserReply(answer, calls)

    async def limit_reached(self, messages: Sequence[AnyMessage]) -> str | None:
        """τ²'s limit the simulation reached at ``messages`` (a step's end), in words; or None.

        The session asks before each of the agent's steps, so a turn of many
        calls ends as soon as τ²'s loop would end it.
        """
        await self._answer_refused(messages)
        ended = self._termination(self.trajectory(messages), None)
        return None if ended is None else LIMITS[ended]

    async def _answer_refused(self, messages: Sequence[AnyMessage]) -> None:
        """τ²'s own answer to each call aah refused (a tool the agent lacks), for the record.

        The agent read aah's refusal; τ²'s evaluator replays the call and
        expects τ²'s text ("not found"), which changes nothing in the
        environment.
        """
        env = await self._environment()
        proposed = {
            call["id"] or "": call
            for message in messages
            if isinstance(message, AIMessage)
            for call in message.tool_calls
        }
        for message in messages:
            if not isinstance(message, ToolMessage) or _ran(message):
                continue
            call_id = message.tool_call_id
            call = proposed.get(call_id)
            if call is None or call["name"] == ASK_HUMAN or call_id in self._refused:
                continue
            made = Tau2ToolCall(call["name"], dict(call["args"]), call_id)
            self._refused[call_id] = await env.aexecute(made)

    async def opening(self) -> UserReply:
        """The user's first message (answering τ²'s greeting), and the calls made before it.

        Calls that reach one of τ²'s limits end the simulation before the
        agent's first step (``limit_reached``); the user's message is empty then.
        """
        env = await self._environment()
        self._user_calls = []
        self._seen = [*env.history, Tau2AgentMessage(text=GREETING)]
        try:
            said = await self.user.respond(0, GREETING, self._user_run, self._seen)
        except LimitReached:
            said = ""
        return UserReply(user_text(said), tuple(self._user_calls))

    async def _user_run(self, name: str, arguments: Mapping[str, Any]) -> Tau2ToolResult:
        """One of the user's calls (:meth:`_user_call`), then τ²'s limits, as its loop checks.

        Raises:
            LimitReached: the call's result brought the simulation to a limit.
        """
        result = await self._user_call(name, arguments)
        ended = self._termination(self._seen + self._user_messages(self._user_calls), None)
        if ended is not None:
            raise LimitReached(ended)
        return result

    async def _user_call(self, name: str, arguments: Mapping[str, Any]) -> Tau2ToolResult:
        """One of the user's calls, on the environment as τ² runs it.

        A tool the user lacks (the agent's included) is τ²'s to refuse: it
        answers with its own error and changes nothing.
        """
        call_id = f"u{len(self._ran)}"
        call = Tau2ToolCall(name, dict(arguments), call_id, "user")
        self._user_calls.append({"name": name, "arguments": dict(arguments), "id": call_id})
        return await self._run(call)

    def _user_messages(
        self, calls: Sequence[Mapping[str, Any]], text: str | None = None
    ) -> list[Tau2Message]:
        out: list[Tau2Message] = []
        results = {ran.call.id: ran.result for ran in self._ran if ran.call.requestor == "user"}
        for call in calls:
            made = Tau2ToolCall(str(call["name"]), dict(call["arguments"]), str(call["id"]), "user")
            out.append(Tau2UserMessage(calls=(made,)))
            result = results.get(made.id)
            out.append(
                result
                if result is not None
                else Tau2ToolResult(made.id, "Error: no such tool", "user", error=True)
            )
        if text is not None:
            out.append(Tau2UserMessage(text=text))
        return out

    def _termination(self, trajectory: Sequence[Tau2Message], stopped: str | None) -> str | None:
        """How the simulation ends after ``trajectory``'s last step: τ²'s limits, else ``stopped``.

        τ²'s loop checks its limits after the step that stopped it, so a limit
        reached by that step names the end. The task's history and the
        greeting are no steps of τ²'s (its count starts after them).
        """
        start = (len(self._env.history) if self._env is not None else 0) + 1
        return tau2_limit(trajectory[start:]) or stopped

    async def _end(self, trajectory: list[Tau2Message], termination: str) -> None:
        self.messages = trajectory
        self.termination = termination
        self.grade = await agrade_simulation(self.domain, self.task, trajectory, termination)

    def bind_session(self, session_id: str) -> None:
        """The session this simulation runs in (a person's questions are filed under it)."""
        bind = getattr(self.user, "bind_session", None)
        if bind is not None:
            bind(session_id)

    async def ask(self, request: HumanRequest) -> HumanReply:
        """The agent's question (``ask_human``) goes to the same user."""
        self._user_calls = []
        answer = user_text(
            await self.user.respond(-1, request.question, self._user_call, self._seen)
        )
        return HumanReply(answer=answer, answered_by="tau2-user")

    # -- the conversation as τ²'s messages ---------------------------------

    def trajectory(self, messages: Sequence[AnyMessage]) -> list[Tau2Message]:
        """The conversation so far as τ²'s orchestrator records it (the task's history first)."""
        env = self._env
        out: list[Tau2Message] = list(env.history) if env is not None else []
        out.append(Tau2AgentMessage(text=GREETING))
        agent = [ran for ran in self._ran if ran.call.requestor == "assistant"]
        user = {ran.call.id: ran.result for ran in self._ran if ran.call.requestor == "user"}
        next_agent = 0
        asked: dict[str, str] = {}
        names: dict[str, str] = {}
        seen_human = False
        for message in messages:
            if isinstance(message, HumanMessage):
                calls = message.additional_kwargs.get(USER_CALLS) or []
                for call in calls if isinstance(calls, list) else []:
                    made = _user_call(call)
                    out.append(Tau2UserMessage(calls=(made,)))
                    result = user.get(made.id)
                    out.append(
                        result
                        if result is not None
                        else Tau2ToolResult(made.id, "Error: no such tool", "user", error=True)
                    )
                text = message.content if isinstance(message.content, str) else ""
                out.append(Tau2UserMessage(text=text))
                seen_human = True
            elif isinstance(message, AIMessage) and seen_human:
                calls_made: list[Tau2ToolCall] = []
                for call in message.tool_calls:
                    call_id = call["id"] or ""
                    names[call_id] = call["name"]
                    if call["name"] == ASK_HUMAN:
                        asked[call_id] = str(call["args"].get("question", ""))
                        continue
                    calls_made.append(Tau2ToolCall(call["name"], dict(call["args"]), call_id))
                text = message.text if isinstance(message.text, str) else ""
                if calls_made or text:
                    out.append(Tau2AgentMessage(text=text or None, calls=tuple(calls_made)))
            elif isinstance(message, ToolMessage):
                call_id = message.tool_call_id
                if call_id in asked:
                    out.append(Tau2AgentMessage(text=asked[call_id]))
                    out.append(Tau2UserMessage(text=str(message.content)))
                    continue
                if _ran(message) and next_agent < len(agent):
                    ran = agent[next_agent]
                    next_agent += 1
                    out.append(
                        Tau2ToolResult(call_id, ran.result.content, "assistant", ran.result.error)
                    )
                elif call_id in self._refused:
                    answer = self._refused[call_id]
                    out.append(Tau2ToolResult(call_id, answer.content, "assistant", answer.error))
                else:
                    text = message.content if isinstance(message.content, str) else ""
                    out.append(Tau2ToolResult(call_id, text, "assistant", error=True))
        return out


def tau2_limit(steps: Sequence[Tau2Message]) -> str | None:
    """The limit of τ²'s orchestrator a simulation has reached after ``steps``; None if none.

    ``steps`` is the simulation as τ² records it after the greeting (or the
    task's history). As τ²'s orchestrator counts, a step is one message of
    the agent or the user, or the results of one message's calls together;
    an error is a result marked so. Its run loop checks, after each step not
    on its way to the environment, ``steps >= MAX_STEPS`` (``max_steps``),
    then ``errors >= MAX_ERRORS`` (``too_many_errors``, named when both hold).
    """
    count = errors = 0
    results = False
    for message in steps:
        if isinstance(message, Tau2ToolResult):
            errors += 1 if message.error else 0
            count += 0 if results else 1
            results = True
        else:
            count += 1
            results = False
    ended = "max_steps" if count >= MAX_STEPS else None
    return "too_many_errors" if errors >= MAX_ERRORS else ended


def user_text(text: object) -> str:
    """A user's message as the conversation keeps it.

    Text SQLite can store, at most :data:`MAX_USER_CHARS` characters: a
    longer one is cut with a note, which repeats any stop token the cut
    part held (the user did say it).
    """
    said = storable_text(text if isinstance(text, str) else str(text or ""))
    if len(said) > MAX_USER_CHARS:
        rest = said[MAX_USER_CHARS - 20 :]
        kept = [token for token in USER_STOP_TOKENS if token in rest]
        note = f"[… {len(said) - MAX_USER_CHARS} more characters cut by aah]"
        said = "\n".join([said[:MAX_USER_CHARS], note, *kept])
    return said


def grade_record(grade: Tau2Grade) -> dict[str, Any]:
    """A grade as the session's log keeps it (JSON)."""
    return {
        "termination": grade.termination,
        "tau2_reward": grade.tau2_reward,
        "reward": grade.reward,
        "reward_basis": list(grade.reward_basis),
        "components": dict(grade.components),
        "failures": list(grade.failures),
        "nl_assertions": list(grade.nl_assertions),
        "nl_pending": grade.nl_pending,
        "success": grade.success,
    }


def _stops(text: object) -> bool:
    """Whether a user's message holds one of τ²'s stop tokens."""
    return isinstance(text, str) and any(token in text for token in USER_STOP_TOKENS)


def _ran(message: ToolMessage) -> bool:
    artifact = message.artifact
    return artifact == RAN or (isinstance(artifact, dict) and isinstance(artifact.get(RAN), dict))


def _user_call(call: Any) -> Tau2ToolCall:
    data = call if isinstance(call, dict) else {}
    arguments = data.get("arguments")
    return Tau2ToolCall(
        str(data.get("name", "")),
        dict(arguments) if isinstance(arguments, dict) else {},
        str(data.get("id", "")),
        "user",
    )


def _calls_of(messages: Sequence[AnyMessage]) -> list[Tau2ToolCall]:
    """The calls that ran in ``messages``, agent's and user's, in their order."""
    proposed: dict[str, Tau2ToolCall] = {}
    calls: list[Tau2ToolCall] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            made = message.additional_kwargs.get(USER_CALLS) or []
            calls += [_user_call(call) for call in (made if isinstance(made, list) else [])]
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call["id"] or ""
                proposed[call_id] = Tau2ToolCall(call["name"], dict(call["args"]), call_id)
        elif isinstance(message, ToolMessage) and _ran(message):
            made_call = proposed.get(message.tool_call_id)
            if made_call is None:
                continue
            artifact = message.artifact
            if isinstance(artifact, dict):
                made_call = Tau2ToolCall(made_call.name, dict(artifact[RAN]), made_call.id)
            calls.append(made_call)
    return calls
