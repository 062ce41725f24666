"""Scripted τ² plays, offline: a user who plays the gold plan, and the agent's fake-model script.

The gold plan splits a task's gold actions into user turns: each of the
agent's actions is asked for by one user message (a marker naming the task
and the action), the user's own actions (telecom's phone) are made just
before the message that follows them, and a last marker asks for the
information the task says to communicate; the user then says ``###STOP###``.
:func:`gold_agent_script` is the fake model's rules that answer each marker
with its gold call (``aah fake-llm --script``), and "Done." after a result;
:class:`ScriptedTau2User` is the user. Both are functions of the
conversation so far, so a resumed session goes on as if never stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aah.benchmark.tau2.messages import Tau2Message
from aah.benchmark.tau2.simulation import RunCall
from aah.benchmark.tau2.tasks import Tau2Task

DONE = "Done."
STOP = "###STOP###"
NO_INFO = "I don't know."


def marker(task: Tau2Task, step: int | str) -> str:
    """The user's words asking for ``step`` of ``task``'s plan (unique across tasks and steps)."""
    return f"«tau2 {task.domain}/{task.id} step {step}»"


@dataclass(frozen=True)
class GoldTurn:
    """One user message of a gold plan: the user's own calls first, then the words."""

    calls: tuple[tuple[str, dict[str, Any]], ...]
    text: str
    agent_call: tuple[str, dict[str, Any]] | None = None


def gold_plan(task: Tau2Task) -> list[GoldTurn]:
    """The user messages that have ``task``'s gold actions played (see the module)."""
    turns: list[GoldTurn] = []
    pending: list[tuple[str, dict[str, Any]]] = []
    for index, action in enumerate(task.gold_actions):
        call = (str(action.name), dict(action.arguments or {}))
        if action.requestor == "user":
            pending.append(call)
            continue
        turns.append(GoldTurn(tuple(pending), marker(task, index), call))
        pending = []
    turns.append(GoldTurn(tuple(pending), marker(task, "end")))
    return turns


def communicated(task: Tau2Task) -> str:
    """The agent's last words in a gold play: every piece of information to communicate."""
    criteria = task.task.evaluation_criteria
    info = list(criteria.communicate_info or []) if criteria is not None else []
    return "\n".join(str(item) for item in info) or "Is there anything else I can help with?"


@dataclass
class ScriptedTau2User:
    """A user who plays ``turns`` in order, then stops; answers any question "I don't know".

    ``turn`` (from the simulation) is the user's message index, so the play
    depends on the conversation only, never on this object's history.
    """

    turns: Sequence[GoldTurn]
    after: str = STOP
    said: list[str] = field(default_factory=list)

    async def respond(
        self, turn: int, agent_text: str, run: RunCall, history: Sequence[Tau2Message] = ()
    ) -> str:
        """The plan's ``turn``-th message (its calls made first), or the last words."""
        self.said.append(agent_text)
        if turn < 0:
            return NO_INFO
        if turn >= len(self.turns):
            return self.after
        planned = self.turns[turn]
        for name, arguments in planned.calls:
            await run(name, arguments)
        return planned.text


AgentRule = dict[str, Any]
Mutation = Callable[[Tau2Task, list[GoldTurn]], list[GoldTurn]]


def gold_agent_script(
    tasks: Sequence[Tau2Task],
    *,
    final: Mapping[str, str] | None = None,
    plans: Mapping[str, Sequence[GoldTurn]] | None = None,
) -> dict[str, Any]:
    """The fake model's rules that play ``tasks``' gold actions (a script for ``aah fake-llm``).

    ``final`` replaces a task's last words (by ``domain/id``), ``plans`` its
    plan (a wrong play: a call left out or changed).
    """
    rules: list[AgentRule] = []
    for task in tasks:
        key = f"{task.domain}/{task.id}"
        plan = plans[key] if plans is not None and key in plans else gold_plan(task)
        for planned in plan:
            when = {"last_role": "user", "last_message_contains": planned.text}
            if planned.agent_call is None:
                text = final.get(key) if final is not None and key in final else None
                rules.append({"when": when, "reply": text or communicated(task)})
                continue
            name, arguments = planned.agent_call
            rules.append(
                {"when": when, "reply": {"tool_calls": [{"name": name, "arguments": arguments}]}}
            )
    rules.append({"reply": DONE})
    return {"rules": rules}
