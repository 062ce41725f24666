"""The users of τ² simulations: the simulated user (an LLM, as τ²'s user simulator) and by name.

:class:`SimulatedTau2User` plays the task's user as τ²'s simulator does: a
system prompt of τ²'s guidelines and the task's scenario (``prompts/
tau2_user.md``, versioned), the conversation with the roles turned round
(the agent's words are what it reads, its own are what it said), the
domain's user tools offered in telecom and made one at a time, temperature
0. It reads only the conversation it is given, so a resumed simulation's
user answers as the first run's would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.messages import (
    Tau2AgentMessage,
    Tau2Message,
    Tau2ToolResult,
    Tau2UserMessage,
)
from aah.benchmark.tau2.simulation import RunCall
from aah.benchmark.tau2.tasks import Tau2Task
from aah.desk import (
    MAX_DRAFT_CHARS,
    ContentInvalid,
    ConversationLine,
    QuestionContext,
    UserTool,
    UserToolCall,
    UserToolResult,
    UserToolsContext,
    desk_user_tools,
    recheck_user_call,
    result_text,
    shown_line,
    turn_request_id,
)
from aah.errors import AahError
from aah.llm import ChatClient, ModelConfig, ModelError
from aah.prompts import PromptFolder
from aah.runtime import HumanChannel, HumanRequest

PROMPTS = PromptFolder(Path(__file__).parent / "prompts")
USER_PROMPT = "tau2_user"
# The user's calls before one message (τ²'s simulator has no own bound; a loop must end).
MAX_USER_CALLS = 20
# What a person at the desk reads of the conversation so far: its latest lines, each cut.
MAX_CONVERSATION_LINES = 40
MAX_LINE_CHARS = 600
_CLIENTS: dict[tuple[int, float], tuple[ModelConfig, ChatClient]] = {}


def user_prompt(domain: Tau2Domain, task: Tau2Task) -> str:
    """The simulated user's system prompt: τ²'s guidelines and the task's scenario."""
    return PROMPTS.load(USER_PROMPT).render(
        guidelines=domain.guidelines.strip(), scenario=task.user_scenario.strip()
    )


def user_prompt_version() -> str:
    """The version of the simulated user's prompt (recorded with the run)."""
    return PROMPTS.load(USER_PROMPT).version


def _client(config: ModelConfig, temperature: float) -> ChatClient:
    key = (id(config), temperature)
    if key not in _CLIENTS:
        _CLIENTS[key] = (config, ChatClient(config, temperature=temperature))
    return _CLIENTS[key][1]


class SimulatedTau2User:
    """The task's user, played by ``config``'s model (see the module)."""

    def __init__(
        self, domain: Tau2Domain, task: Tau2Task, config: ModelConfig, temperature: float = 0.0
    ) -> None:
        """Play ``task``'s user of ``domain`` on ``config``'s model."""
        self.system = user_prompt(domain, task)
        self.tools = list(domain.user_tools)
        self._model = _client(config, temperature)

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> str:
        """The user's next words; their phone calls (one at a time) made through ``run`` first.

        Raises:
            AahError: the user's model failed (one line, saying so).
        """
        messages: list[BaseMessage] = [SystemMessage(self.system), *_seen_by_user(history)]
        if turn < 0:  # a question the agent asked with ask_human
            messages.append(HumanMessage(agent_text))
        for _ in range(MAX_USER_CALLS + 1):
            try:
                reply = await self._model.complete(messages, self.tools)
            except ModelError as exc:
                raise AahError(f"τ² simulated user: {exc}") from exc
            if not reply.tool_calls:
                return reply.text if isinstance(reply.text, str) else ""
            call = reply.tool_calls[0]  # one at a time, as τ²'s user makes them
            result = await run(call["name"], dict(call["args"]))
            call_id = call["id"] or f"user_{len(messages)}"
            messages.append(AIMessage("", tool_calls=[{**call, "id": call_id}]))
            messages.append(ToolMessage(result.text, tool_call_id=call_id))
        return "###STOP###"


class PersonTau2User:
    """A person at the desk plays the user (the web page or the terminal app, through the queue).

    Each of the agent's messages is a question to ``channel`` (normally the
    store's ``QueueHuman``), shown with the scenario as "you are this user"
    and the conversation so far. In telecom the question's context also
    carries the phone's tools (``aah.desk.UserToolsContext``: buttons and
    small forms made from τ²'s schemas): the person may reply with a call
    instead of words. The call, checked again here, is made through ``run``
    exactly as the simulated user's are (one at a time, kept with the
    message), and the person is asked again with its result and the message
    they had typed, until they answer in words or the turn's
    :data:`MAX_USER_CALLS` calls are spent. Every question's id is a function
    of the conversation and of the replies given in the turn, so a resumed
    simulation finds each reply given and makes the same calls again.
    """

    def __init__(
        self, channel: HumanChannel, domain: Tau2Domain, task: Tau2Task, run: str | None = None
    ) -> None:
        """Ask ``channel`` for ``task``'s user of ``domain``."""
        self.channel = channel
        self.session_id = ""
        self.scenario = f"You are this user. {task.user_scenario.strip()}"
        self.phone: tuple[list[UserTool], list[str]] | None = (
            desk_user_tools(domain.user_tools) if domain.user_tools else None
        )
        self.task_id = f"{domain.name}/{task.id}"
        self.run = run

    def bind_session(self, session_id: str) -> None:
        """The session the questions are filed under."""
        self.session_id = session_id

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> str:
        """The person's answer to the agent's message; their phone calls made through ``run``."""
        first = f"tau2-{self.session_id}-{len(history)}-{turn}"
        conversation = _conversation_lines(history)
        if conversation and conversation[-1] == ConversationLine(
            role="agent", text=_short(agent_text)
        ):
            conversation.pop()  # the question itself, shown as the question
        results: list[UserToolResult] = []
        draft = ""
        for replies in range(MAX_USER_CALLS + 1):
            phone = self._phone(first, results, draft, MAX_USER_CALLS - replies)
            request = HumanRequest(
                request_id=turn_request_id(first, replies),
                session_id=self.session_id,
                question=agent_text or "(the agent said nothing)",
                context=QuestionContext(
                    asker="the τ² agent (you are the user)",
                    query=self.scenario,
                    setting="tau2",
                    task_id=self.task_id,
                    run=self.run,
                    conversation=conversation,
                    user_tools=phone,
                ),
            )
            reply = await self.channel.ask(request)
            if reply.call is None or phone is None:
                return reply.answer
            # Within the desk's bound whoever stored it (the faces check it, a raw write may not).
            draft = reply.call.draft[:MAX_DRAFT_CHARS]
            try:
                call = recheck_user_call(phone, reply.call)
            except ContentInvalid as exc:  # stored by something other than the desk's faces
                results.append(_not_made(reply.call, str(exc)))
                continue
            made = await run(call.tool, call.arguments)
            text = result_text(made.text)
            results.append(
                UserToolResult(
                    tool=call.tool, arguments=call.arguments, text=text, error=made.error
                )
            )
        # Every call of the turn spent and still a call: the words typed are the message.
        return draft

    def _phone(
        self, first: str, results: list[UserToolResult], draft: str, calls_left: int
    ) -> UserToolsContext | None:
        if self.phone is None:
            return None
        tools, unusable = self.phone
        return UserToolsContext(
            turn=first,
            tools=tools,
            unusable=unusable,
            results=list(results),
            draft=draft,
            calls_left=calls_left,
        )


def _not_made(call: UserToolCall, why: str) -> UserToolResult:
    tool = shown_line(call.tool, 64)
    return UserToolResult(tool=tool, text=f"Not made: {why}", error=True, made=False)


def _conversation_lines(history: Sequence[Tau2Message]) -> list[ConversationLine]:
    """The conversation as the person reads it: who said what, their phone calls and results."""
    lines: list[ConversationLine] = []
    for message in history:
        if isinstance(message, Tau2AgentMessage) and message.text:
            lines.append(ConversationLine(role="agent", text=_short(message.text)))
        elif isinstance(message, Tau2UserMessage):
            for call in message.calls:
                said = describe_call(call.name, dict(call.arguments))
                lines.append(ConversationLine(role="you (phone)", text=_short(said)))
            if message.text:
                lines.append(ConversationLine(role="you", text=_short(message.text)))
        elif isinstance(message, Tau2ToolResult) and message.requestor == "user":
            lines.append(ConversationLine(role="phone", text=_short(message.text)))
    return lines[-MAX_CONVERSATION_LINES:]


def _short(text: str) -> str:
    said = " ".join(text.split())
    return said if len(said) <= MAX_LINE_CHARS else f"{said[: MAX_LINE_CHARS - 1]}…"


def _seen_by_user(history: Sequence[Tau2Message]) -> list[BaseMessage]:
    """The conversation as the user sees it: the agent's words theirs to read, their own said."""
    out: list[BaseMessage] = []
    for message in history:
        if isinstance(message, Tau2AgentMessage):
            if message.text:
                out.append(HumanMessage(message.text))
        elif isinstance(message, Tau2UserMessage):
            if message.calls:
                calls = [
                    {"name": c.name, "args": dict(c.arguments), "id": c.id or f"user_{i}"}
                    for i, c in enumerate(message.calls)
                ]
                out.append(AIMessage(message.text or "", tool_calls=calls))
            elif message.text is not None:
                out.append(AIMessage(message.text))
        elif isinstance(message, Tau2ToolResult) and message.requestor == "user":
            out.append(ToolMessage(message.text, tool_call_id=message.call_id or "user_0"))
    return out


def describe_call(name: str, arguments: dict[str, Any]) -> str:
    """A call in one line (for a person's view)."""
    return f"{name}({json.dumps(arguments, ensure_ascii=False)})"
