"""What the graph carries between steps, and what a session is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from aah.events import AwarenessMode, Event
from aah.llm import ChatClient
from aah.tools.http import Executor
from aah.tools.spec import EndpointSpec

DEFAULT_STEP_LIMIT = 10


class AgentState(TypedDict, total=False):
    """The checkpointed state of one session's graph.

    Everything a resumed session needs lives here, so a process restart loses
    nothing: the conversation, the step count and the calls already made.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    skipped: bool
    skip_reason: str
    steps: int
    step_limit_hit: bool
    seen_calls: list[str]


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
    extra: dict[str, Any] = field(default_factory=dict)
