"""A scripted gold player: a simulation that plays a task's gold actions, for grading offline.

:func:`play_gold` starts from the task's initial state (its message history
first), makes each gold action as a call of the side that acts (the agent;
in telecom also the user, on their phone), each followed by its result
from a fresh environment, and ends with one agent message giving every
piece of information the task says to communicate. Graded by τ²'s
evaluator with NL assertions left out, such a play scores 1 on every task
whose criteria its gold actions meet; the few that cannot are τ²'s own
(:data:`GOLD_UNREACHABLE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aah.benchmark.fence import Fence
from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.environment import Tau2Environment
from aah.benchmark.tau2.messages import (
    Tau2AgentMessage,
    Tau2Message,
    Tau2ToolCall,
    Tau2UserMessage,
)
from aah.benchmark.tau2.tasks import Tau2Task

# Tasks whose gold play cannot score 1, and why (τ²'s own evaluator agrees).
GOLD_UNREACHABLE: Mapping[tuple[str, str], str] = {
    ("mock", "update_task_with_history_and_env_assertions"): (
        "its environment assertion wants task_2 completed, and it has no gold action that "
        "completes it"
    ),
    ("mock", "update_task_with_user_tools"): (
        "its initial state calls the user's add_notification, and the mock domain gives the "
        "user no tools"
    ),
}


@dataclass(frozen=True)
class GoldPlay:
    """A played task: the conversation and how it ended (the user's stop)."""

    messages: list[Tau2Message]
    termination: str = "user_stop"


def play_gold(domain: Tau2Domain, task: Tau2Task, *, fence: Fence | None = None) -> GoldPlay:
    """Play ``task``'s gold actions in a fresh environment (see the module).

    Raises:
        AahError: τ²'s code cannot set the task's initial state.
    """
    environment = Tau2Environment.create(domain, task, fence=fence)
    messages: list[Tau2Message] = list(environment.history)
    for index, action in enumerate(task.gold_actions):
        call = Tau2ToolCall(
            name=action.name,
            arguments=action.arguments,
            id=f"gold_{index}",
            requestor=action.requestor,
        )
        side = Tau2UserMessage if action.requestor == "user" else Tau2AgentMessage
        messages.append(side(calls=(call,)))
        messages.append(environment.execute(call))
    criteria = task.task.evaluation_criteria
    communicate = list(criteria.communicate_info or []) if criteria is not None else []
    if communicate:
        messages.append(Tau2AgentMessage(text="\n".join(communicate)))
    return GoldPlay(messages)
