"""One simulation's τ² environment: fresh from τ²'s code, in the task's initial state, fenced.

:class:`Tau2Environment` builds the domain's environment with τ²'s own
``get_environment`` (databases of its own), sets the task's initial state
as τ²'s orchestrator does (initialization data and actions, then the
message history's calls, replayed and checked), and runs each call as τ²
runs it (``Environment.get_response``: the result converted to text by τ²,
an exception becoming ``Error: <message>``).

Everything that runs τ²'s code runs behind a :class:`~aah.benchmark.fence.Fence`:
a time bound per call (``AAH_BENCH_CALL_TIMEOUT``), off the event loop in
the async methods, anything raised or unprintable turned into the result
text, and arguments that could hold the interpreter refused first
(:mod:`aah.benchmark.tau2.guards`). After a call runs out of time the
environment is stopped: its state is not known, so every later call answers
so without running, and the simulation cannot be graded as τ² grades.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from aah.benchmark.fence import Enclosure, Fence
from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.guards import call_refusal
from aah.benchmark.tau2.messages import (
    CallOutcome,
    Tau2Message,
    Tau2ToolCall,
    Tau2ToolResult,
    from_tau2_messages,
    tau2_tool_call,
)
from aah.benchmark.tau2.tasks import Tau2Task
from aah.errors import AahError

# How τ² starts the text of a call that failed (Environment.get_response).
ERROR_PREFIX = "Error: "
# The least time setting a task's initial state may take, whatever a call's
# bound: building airline's database alone takes ~0.3 s.
SETUP_SECONDS = 60.0


def new_fence(seconds: float | None = None) -> Fence:
    """A fence for one simulation's calls, its failures written as τ² writes them."""
    return Fence(seconds, error_prefix=ERROR_PREFIX)


class Tau2Environment:
    """One simulation's environment (see the module); built by :meth:`create` or :meth:`acreate`.

    Attributes:
        domain: The domain.
        task: The task whose initial state it holds.
        history: The task's initial message history (the conversation so far).
    """

    def __init__(self, domain: Tau2Domain, task: Tau2Task, env: Any, enclosure: Enclosure) -> None:
        """Wrap a built τ² environment; use :meth:`create` or :meth:`acreate`."""
        self.domain = domain
        self.task = task
        self._env = env
        self._enclosure = enclosure
        self.history: tuple[Tau2Message, ...] = tuple(from_tau2_messages(_history(task)))

    @classmethod
    def create(
        cls,
        domain: Tau2Domain,
        task: Tau2Task,
        *,
        fence: Fence | None = None,
        setup_seconds: float | None = None,
    ) -> Tau2Environment:
        """A fresh environment in ``task``'s initial state, built in this thread.

        Args:
            domain: The task's domain.
            task: The task.
            fence: The bound on each call (a new :func:`new_fence` when None).
            setup_seconds: The bound on setting the initial state (at least
                :data:`SETUP_SECONDS` unless given).

        Raises:
            AahError: τ²'s code cannot set the task's initial state (the line says why).
        """
        calls = fence or new_fence()
        work, built = _builder(domain, task)
        text = _setup_fence(calls, setup_seconds).enclosure().run(work, label=_SETTING_UP)
        return cls._built(domain, task, built, calls.enclosure(), text)

    @classmethod
    async def acreate(
        cls,
        domain: Tau2Domain,
        task: Tau2Task,
        *,
        fence: Fence | None = None,
        setup_seconds: float | None = None,
    ) -> Tau2Environment:
        """:meth:`create` off the event loop (building airline's database takes ~0.3 s)."""
        calls = fence or new_fence()
        work, built = _builder(domain, task)
        setup = _setup_fence(calls, setup_seconds).enclosure()
        text = await setup.arun(work, label=_SETTING_UP)
        return cls._built(domain, task, built, calls.enclosure(), text)

    @classmethod
    def _built(
        cls, domain: Tau2Domain, task: Tau2Task, built: list[Any], enclosure: Enclosure, text: str
    ) -> Tau2Environment:
        # Setting up answers "" when it ran whole; any text is why it did not (an
        # error, or its time ran out even if the work then ended: its state is unknown).
        if not built or text:
            why = text.removeprefix(ERROR_PREFIX).replace("\n", " ")
            raise AahError(
                f"τ² task {task.id} ({domain.name}): its initial state cannot be set ({why}): "
                "leave the task out"
            )
        return cls(domain, task, built[0], enclosure)

    @property
    def policy(self) -> str:
        """The agent's policy (τ²'s text)."""
        return self.domain.policy

    @property
    def agent_tools(self) -> list[dict[str, Any]]:
        """The agent's tools as OpenAI function specs, as τ² gives them to its agent (a copy)."""
        return copy.deepcopy(self.domain.agent_tools)

    @property
    def user_tools(self) -> list[dict[str, Any]]:
        """The user's tools (telecom's phone) as OpenAI function specs, a copy; empty elsewhere."""
        return copy.deepcopy(self.domain.user_tools)

    @property
    def stopped(self) -> str | None:
        """Why the environment stopped (a call ran out of time), or None."""
        return self._enclosure.stopped

    def execute(self, call: Tau2ToolCall) -> Tau2ToolResult:
        """Run one call in this thread within the time bound; its result as τ² writes it.

        Never raises: a refused, failed or stopped call is its result text.
        """
        refused = call_refusal(call.name, call.arguments)
        if refused is not None:
            return _refused(call, refused)
        work, answered = self._caller(call)
        text = self._enclosure.run(work, label=_label(call), key=lambda: call_key(call))
        return self._result(call, answered, text)

    async def aexecute(self, call: Tau2ToolCall) -> Tau2ToolResult:
        """:meth:`execute` in one of the fence's threads, off the event loop."""
        refused = call_refusal(call.name, call.arguments)
        if refused is not None:
            return _refused(call, refused)
        work, answered = self._caller(call)
        text = await self._enclosure.arun(work, label=_label(call), key=lambda: call_key(call))
        return self._result(call, answered, text)

    def _caller(self, call: Tau2ToolCall) -> tuple[Callable[[], object], list[Any]]:
        answered: list[Any] = []
        code = self.domain.code

        def work() -> object:
            message = self._env.get_response(tau2_tool_call(code, call))
            answered.append(message)
            return message.content

        return work, answered

    def _result(self, call: Tau2ToolCall, answered: list[Any], text: str) -> Tau2ToolResult:
        if answered and isinstance(answered[0].content, str):
            message = answered[0]
            return Tau2ToolResult(call.id, message.content, call.requestor, bool(message.error))
        outcome: CallOutcome = "stopped" if self._enclosure.stopped is not None else "ran"
        return Tau2ToolResult(call.id, text, call.requestor, error=True, outcome=outcome)


_SETTING_UP = "setting the task's initial state"


def _setup_fence(calls: Fence, seconds: float | None) -> Fence:
    return new_fence(seconds if seconds is not None else max(calls.seconds, SETUP_SECONDS))


def _builder(domain: Tau2Domain, task: Tau2Task) -> tuple[Callable[[], object], list[Any]]:
    """τ²'s orchestrator's start: a fresh environment, then the task's initial state."""
    built: list[Any] = []

    def work() -> object:
        env = domain.new_environment()
        state = task.task.initial_state
        env.set_state(
            initialization_data=state.initialization_data if state is not None else None,
            initialization_actions=state.initialization_actions if state is not None else None,
            message_history=copy.deepcopy(_history(task)),
        )
        built.append(env)
        return ""

    return work, built


def _history(task: Tau2Task) -> list[Any]:
    state = task.task.initial_state
    return list(state.message_history or []) if state is not None else []


def _refused(call: Tau2ToolCall, why: str) -> Tau2ToolResult:
    return Tau2ToolResult(call.id, f"{ERROR_PREFIX}{why}", call.requestor, True, "refused")


def _label(call: Tau2ToolCall) -> str:
    return f"the call of {call.name}"


def call_key(call: Tau2ToolCall) -> str:
    """A call's identity (side, name and arguments), for the fence's memory of slow calls."""
    try:
        arguments = json.dumps(call.arguments, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        arguments = repr(call.arguments)
    return f"{call.requestor}:{call.name}:{arguments}"
