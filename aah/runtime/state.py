"""What the graph carries between steps, and what a session is given."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from aah.config import DEFAULT_QUESTIONS_PER_REPLY, DEFAULT_QUESTIONS_PER_SESSION
from aah.desk import Answer
from aah.events import AwarenessMode, Event
from aah.llm import ChatClient
from aah.runtime.approval_policy import ApprovalPolicy
from aah.runtime.budget import DEFAULT_TOOL_RESULT_TOKENS
from aah.runtime.discovery import ToolFinder
from aah.runtime.tool_mode import ToolMode, tools_prompt
from aah.runtime.turns import ConversationUser, FollowUp, LimitedConversation
from aah.store import SessionStore
from aah.tools import (
    ASK_HUMAN,
    ASK_HUMAN_PARAMETERS,
    FIND_TOOLS,
    FIND_TOOLS_PARAMETERS,
    EndpointSpec,
    ParameterSpec,
)
from aah.tools.calls import (
    CallChecker,
    arguments_models,
    ask_human_schema,
    find_tools_schema,
    openai_tool,
)
from aah.tools.http import Executor

DEFAULT_STEP_LIMIT = 10
CallChecks = Literal["all", "names"]


class AgentState(TypedDict, total=False):
    """The checkpointed state of one session's graph.

    Everything a resumed session needs lives here, so a process restart loses
    nothing: the conversation, the step count, the calls already made and the
    endpoints ``find_tools`` added to the session's tools (whole specs, as
    JSON, so that they stay callable whatever the registry holds later).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    skipped: bool
    steps: int
    seen_calls: list[str]
    discovered: list[dict[str, Any]]
    # The decision on each call that needed approval, by call id (see approval_gate).
    approvals: dict[str, dict[str, Any]]
    # A person deciding on a call ended the session.
    terminated: bool
    # A conversation of several user turns: the turn under way (0 for the
    # first) and the step count when it began (the step limit is per turn).
    turn: int
    turn_started: int


def steps_in_turn(state: AgentState) -> int:
    """The model replies of the turn under way (of the whole session when it has one turn)."""
    return state.get("steps", 0) - state.get("turn_started", 0)


def offered_schemas(
    specs: Sequence[EndpointSpec], aah: bool, discover: bool = False
) -> list[dict[str, Any]]:
    """The tool definitions the model is sent.

    ``specs``, then ``find_tools`` when ``discover`` is on, then ``ask_human``
    when ``aah`` is on.
    """
    schemas = [openai_tool(spec) for spec in specs]
    schemas += [find_tools_schema()] if discover else []
    return schemas + ([ask_human_schema()] if aah else [])


class SessionTools:
    """The tools one session offers, in the forms its graph nodes need.

    Built once per session, and again each time ``find_tools`` adds
    endpoints: the model's schemas, the parameters each offered name takes
    (``ask_human`` and ``find_tools`` included when on) and their argument
    models.
    """

    def __init__(self, specs: Sequence[EndpointSpec], aah: bool, discover: bool = False) -> None:
        """Offer ``specs``, ``find_tools`` if ``discover`` is on, ``ask_human`` if ``aah`` is."""
        self.specs = {spec.qualified_name: spec for spec in specs}
        offered: dict[str, Sequence[ParameterSpec]] = {
            name: spec.parameters for name, spec in self.specs.items()
        }
        if discover:
            offered[FIND_TOOLS] = FIND_TOOLS_PARAMETERS
        if aah:
            offered[ASK_HUMAN] = ASK_HUMAN_PARAMETERS
        self.schemas = offered_schemas(list(self.specs.values()), aah, discover)
        self.offered = offered
        self.models = arguments_models(offered)

    @cached_property
    def prompt_text(self) -> str:
        """The tools described for the system prompt (``prompt`` tool mode)."""
        return tools_prompt(self.schemas)

    def checker(self, seen: list[str], checks: CallChecks = "all") -> CallChecker:
        """A checker for this session's calls, given the calls already made.

        With ``checks="names"`` the offered endpoints' calls are checked for
        their name only; ``ask_human`` and ``find_tools`` keep every check.
        """
        names_only = self.specs.keys() if checks == "names" else ()
        return CallChecker(self.offered, seen=seen, models=self.models, names_only=names_only)


@dataclass
class SessionContext:
    """What one session's graph is built with (not checkpointed: rebuilt on resume)."""

    session_id: str
    query: str
    specs: Sequence[EndpointSpec]
    model: ChatClient
    model_name: str
    executor: Executor
    emit: Callable[[Event], None]
    aah: bool = True
    awareness: AwarenessMode = "both"
    step_limit: int = DEFAULT_STEP_LIMIT
    http_mode: str = "mock"
    # At the step limit, still answer the last turn's calls (tools run, the
    # person is asked) before ending: a benchmark that scores the calls of a
    # turn (When2Call) needs them recorded.
    answer_calls_at_limit: bool = False
    # Each tool result reaches the model cut to about this many tokens.
    tool_result_tokens: int = DEFAULT_TOOL_RESULT_TOKENS
    tool_mode: ToolMode = "native"
    # Questions to the person past these are not asked; the model is told why.
    max_questions_per_reply: int = DEFAULT_QUESTIONS_PER_REPLY
    max_questions_per_session: int = DEFAULT_QUESTIONS_PER_SESSION
    # Which calls wait for a person's approval (None: none do), and the store
    # that records approved calls as they run, so that none runs twice.
    approvals: ApprovalPolicy | None = None
    store: SessionStore | None = None
    # Discovery on: the agent may call find_tools, which searches with this.
    finder: ToolFinder | None = None
    # Later user turns, in order (none: a conversation of one turn).
    follow_ups: Sequence[FollowUp] = ()
    # ``all``: every call is checked before it runs. ``names``: only that the
    # tool exists (and ask_human's own checks): the tools judge their
    # arguments themselves, and a repeated call runs again (BFCL's stateful APIs).
    check_calls: CallChecks = "all"
    # The other side of a conversation whose turns are not known in advance (τ²).
    conversation: ConversationUser | None = None
    # A human channel that answers at once (an oracle, a script), given a
    # question's call id and text: ``ask_human`` asks it within its step, the
    # question and answer logged with the step; None: the graph pauses for
    # the answer (a person may take hours, in another process).
    answer_now: Callable[[str, str], Awaitable[Answer]] | None = None
    # The awareness questions are a step of their own, saved before the
    # agent's first call (a live view shows their answers at once). Off where
    # steps are saved only when the session pauses or ends (batch runs): the
    # agent's first step asks them, a step fewer with the same outcome.
    awareness_apart: bool = True
    _found: tuple[tuple[str, ...], SessionTools] | None = field(
        default=None, init=False, repr=False
    )

    async def conversation_limit(self, messages: Sequence[AnyMessage]) -> str | None:
        """The limit of its own the conversation reached at ``messages`` (τ²'s); None if none."""
        conversation = self.conversation
        # None first: a protocol's isinstance reads its members each time (every step asks).
        if conversation is not None and isinstance(conversation, LimitedConversation):
            return await conversation.limit_reached(messages)
        return None

    @property
    def discover(self) -> bool:
        """Whether the agent may call ``find_tools``."""
        return self.finder is not None

    @cached_property
    def tools(self) -> SessionTools:
        """The session's tools before any discovery, built on the first step that needs them."""
        return SessionTools(self.specs, self.aah, self.discover)

    @property
    def current_tools(self) -> SessionTools:
        """The tools as of the last state :meth:`tools_now` was given (those offered before).

        For the steps that have no state at hand: running a decided call,
        telling a person which tools the agent has.
        """
        return self._found[1] if self._found is not None else self.tools

    def tools_now(self, state: AgentState) -> SessionTools:
        """The session's tools at ``state``: offered, added by its turns, discovered so far.

        Remembered as :attr:`current_tools`.
        """
        found = [*self.added_by_turn(state.get("turn", 0)), *discovered_specs(state)]
        if not found:
            return self.tools
        key = tuple(spec.qualified_name for spec in found)
        if self._found is None or self._found[0] != key:
            names = set(key)
            given = [s for s in self.specs if s.qualified_name not in names]
            self._found = (key, SessionTools([*given, *found], self.aah, self.discover))
        return self._found[1]

    def added_by_turn(self, turn: int) -> list[EndpointSpec]:
        """The tools the follow-ups up to ``turn`` added, in the order they came."""
        return [spec for follow_up in self.follow_ups[:turn] for spec in follow_up.specs]


def discovered_specs(state: AgentState) -> list[EndpointSpec]:
    """The endpoints ``find_tools`` added to the session's tools, in the order found."""
    return [EndpointSpec.model_validate(spec) for spec in state.get("discovered") or []]
