"""A finished simulation graded as τ² grades it, by τ²'s own evaluator; NL assertions apart.

:func:`grade_simulation` hands the messages and the termination reason to
τ²'s ``evaluate_simulation`` (``EvaluationType.ALL``): any end but the
agent's or the user's stop is reward 0; otherwise the database check
(the agent's and the user's databases after replaying the conversation's
calls, against the gold replay of the initial state and the gold actions),
the environment assertions, the gold actions and the information to
communicate, multiplied over the task's ``reward_basis``.

τ²'s natural-language assertions go to an LLM judge aah does not run: the
evaluator sees the basis without ``NL_ASSERTION``, and the grade lists the
assertions for aah's grader. Their verdicts, passed in (now or later with
:meth:`Tau2Grade.with_nl_verdicts`), give the NL reward (1 when all hold),
reported apart and, when ``NL_ASSERTION`` is in the basis, multiplied in.

Calls the fence refused never ran, so they are left out of the replay (they
changed nothing and match no gold action); a simulation in which a call
ran out of time has an environment whose state is not known, so it is not
replayed at all: its reward is 0, with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from aah.benchmark.fence import Fence
from aah.benchmark.tau2.domains import Tau2Domain
from aah.benchmark.tau2.environment import ERROR_PREFIX, new_fence
from aah.benchmark.tau2.messages import (
    Tau2AgentMessage,
    Tau2Message,
    Tau2ToolResult,
    Tau2UserMessage,
    to_tau2_messages,
)
from aah.benchmark.tau2.tasks import Tau2Task
from aah.errors import AahError

TerminationReason = Literal[
    "user_stop",
    "agent_stop",
    "judge_stop",
    "max_steps",
    "too_many_errors",
    "agent_error",
    "user_error",
]
NL_ASSERTION = "NL_ASSERTION"
# A success is a reward of 1 within this (science.md §9).
SUCCESS_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Tau2Grade:
    """What τ²'s evaluator made of one simulation.

    Attributes:
        task_id: The task.
        termination: How the simulation ended.
        reward_basis: The task's components (``DB``, ``COMMUNICATE``...).
        tau2_reward: τ²'s reward over the basis without ``NL_ASSERTION``.
        components: Each component's reward (τ²'s breakdown; ``NL_ASSERTION``
            once verdicts are in).
        failures: Why each failed component failed, one line each, as τ²
            reports it (a gold action not taken, information not given...).
        nl_assertions: The task's NL assertions, for aah's grader.
        nl_verdicts: Their verdicts, once given.
        details: τ²'s ``RewardInfo`` as JSON (for the log).
    """

    task_id: str
    termination: str
    reward_basis: tuple[str, ...]
    tau2_reward: float
    components: dict[str, float]
    failures: tuple[str, ...]
    nl_assertions: tuple[str, ...]
    nl_verdicts: tuple[bool, ...] | None = None
    details: dict[str, Any] | None = None

    @property
    def nl_reward(self) -> float | None:
        """1 when every NL assertion holds, 0 when one does not; None before the verdicts."""
        if not self.nl_assertions:
            return 1.0
        if self.nl_verdicts is None:
            return None
        return 1.0 if all(self.nl_verdicts) else 0.0

    @property
    def nl_pending(self) -> bool:
        """Whether the reward waits for NL verdicts (``NL_ASSERTION`` in the basis, none given)."""
        return (
            self.tau2_reward != 0 and NL_ASSERTION in self.reward_basis and self.nl_reward is None
        )

    @property
    def reward(self) -> float | None:
        """The reward over the whole basis; None while it waits for NL verdicts."""
        if NL_ASSERTION not in self.reward_basis or self.tau2_reward == 0:
            return self.tau2_reward
        nl = self.nl_reward
        return None if nl is None else self.tau2_reward * nl

    @property
    def success(self) -> bool:
        """Reward 1 (within 1e-6)."""
        reward = self.reward
        return reward is not None and math.isclose(reward, 1.0, abs_tol=SUCCESS_TOLERANCE)

    def with_nl_verdicts(self, verdicts: Sequence[bool]) -> Tau2Grade:
        """This grade with aah's grader's verdicts on :attr:`nl_assertions`, in their order.

        Raises:
            AahError: not one verdict per assertion.
        """
        if len(verdicts) != len(self.nl_assertions):
            raise AahError(
                f"τ² task {self.task_id} has {len(self.nl_assertions)} NL assertions, "
                f"got {len(verdicts)} verdicts: give one per assertion"
            )
        given = tuple(bool(verdict) for verdict in verdicts)
        components = dict(self.components)
        failures = list(self.failures)
        if NL_ASSERTION in self.reward_basis:
            components[NL_ASSERTION] = 1.0 if all(given) else 0.0
            failures += [
                f"{NL_ASSERTION}: not met: {assertion}"
                for assertion, verdict in zip(self.nl_assertions, given, strict=True)
                if not verdict
            ]
        return replace(self, nl_verdicts=given, components=components, failures=tuple(failures))


def grade_simulation(
    domain: Tau2Domain,
    task: Tau2Task,
    messages: Sequence[Tau2Message],
    termination: TerminationReason | str,
    *,
    nl_verdicts: Sequence[bool] | None = None,
    fence: Fence | None = None,
) -> Tau2Grade:
    """Grade a finished simulation with τ²'s evaluator (see the module), in this thread.

    Args:
        domain: The task's domain.
        task: The task.
        messages: The whole conversation, the task's initial history first
            (as :attr:`Tau2Environment.history` gives it).
        termination: How it ended (τ²'s termination reasons).
        nl_verdicts: aah's grader's verdicts on the task's NL assertions.
        fence: The time bound for τ²'s replay (a fresh one when None).

    Raises:
        AahError: an unknown termination reason, or verdicts that do not fit.
    """
    reason = _termination(domain, termination)
    grade = _grade(domain, task, messages, reason, fence or _grading_fence(messages))
    return grade if nl_verdicts is None else grade.with_nl_verdicts(nl_verdicts)


async def agrade_simulation(
    domain: Tau2Domain,
    task: Tau2Task,
    messages: Sequence[Tau2Message],
    termination: TerminationReason | str,
    *,
    nl_verdicts: Sequence[bool] | None = None,
    fence: Fence | None = None,
) -> Tau2Grade:
    """:func:`grade_simulation` off the event loop (airline's replays take about a second)."""
    reason = _termination(domain, termination)
    enclosure = (fence or _grading_fence(messages)).enclosure()
    graded: list[Tau2Grade] = []

    def work() -> object:
        graded.append(_grade(domain, task, messages, reason, None))
        return ""

    text = await enclosure.arun(work, label="τ²'s evaluator")
    if not graded:
        return _failed(task, termination, _evaluator_failed(text))
    grade = graded[0]
    return grade if nl_verdicts is None else grade.with_nl_verdicts(nl_verdicts)


def _grading_fence(messages: Sequence[Tau2Message]) -> Fence:
    """A bound for a whole replay: a call's bound for each call, and a few more for the rest."""
    base = new_fence()
    calls = sum(isinstance(message, Tau2ToolResult) for message in messages)
    return new_fence(base.seconds * (calls + 4))


def _termination(domain: Tau2Domain, termination: str) -> Any:
    """τ²'s ``TerminationReason`` named ``termination``.

    Raises:
        AahError: τ² has no such reason.
    """
    reasons = domain.code.attribute("tau2.data_model.simulation", "TerminationReason")
    try:
        return reasons(termination)
    except ValueError:
        known = ", ".join(member.value for member in reasons)
        raise AahError(f"unknown termination {termination!r}: use one of {known}") from None


def _grade(
    domain: Tau2Domain,
    task: Tau2Task,
    messages: Sequence[Tau2Message],
    reason: Any,
    fence: Fence | None,
) -> Tau2Grade:
    code = domain.code
    termination = str(reason.value)
    stopped = next(
        (m for m in messages if isinstance(m, Tau2ToolResult) and m.outcome == "stopped"), None
    )
    if stopped is not None and reason.value in ("user_stop", "agent_stop"):
        return _failed(
            task,
            termination,
            f"{stopped.content.removeprefix(ERROR_PREFIX)}: τ² cannot replay the calls",
        )
    simulation = code.attribute("tau2.data_model.simulation", "SimulationRun")(
        id=task.id,
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=reason,
        messages=to_tau2_messages(code, replayable(messages)),
    )
    evaluator = code.module("tau2.evaluator.evaluator")
    without_nl = _without_nl(task)

    def evaluate() -> object:
        return evaluator.evaluate_simulation(
            simulation, without_nl, evaluator.EvaluationType.ALL, False, domain.registry_key
        )

    if fence is None:
        info = evaluate()
    else:
        box: list[Any] = []

        def work() -> object:
            box.append(evaluate())
            return ""

        text = fence.enclosure().run(work, label="τ²'s evaluator")
        if not box:
            return _failed(task, termination, _evaluator_failed(text))
        info = box[0]
    return _from_reward_info(task, termination, info)


def replayable(messages: Sequence[Tau2Message]) -> list[Tau2Message]:
    """``messages`` without the calls the fence refused (and their results): they never ran."""
    refused = {
        m.call_id for m in messages if isinstance(m, Tau2ToolResult) and m.outcome == "refused"
    }
    if not refused:
        return list(messages)
    kept: list[Tau2Message] = []
    for message in messages:
        if isinstance(message, Tau2ToolResult):
            if message.outcome != "refused":
                kept.append(message)
        elif isinstance(message, Tau2AgentMessage | Tau2UserMessage) and message.calls:
            calls = tuple(call for call in message.calls if call.id not in refused)
            if calls or message.text:
                kept.append(replace(message, calls=calls))
        else:
            kept.append(message)
    return kept


def _without_nl(task: Tau2Task) -> Any:
    criteria = task.task.evaluation_criteria
    if criteria is None or NL_ASSERTION not in task.reward_basis:
        return task.task
    trimmed = criteria.model_copy(
        update={"reward_basis": [b for b in criteria.reward_basis if b.value != NL_ASSERTION]}
    )
    return task.task.model_copy(update={"evaluation_criteria": trimmed})


def _evaluator_failed(text: str) -> str:
    return f"τ²'s evaluator failed: {text.removeprefix(ERROR_PREFIX)}"


def _failed(task: Tau2Task, termination: str, why: str) -> Tau2Grade:
    return Tau2Grade(
        task_id=task.id,
        termination=termination,
        reward_basis=task.reward_basis,
        tau2_reward=0.0,
        components={},
        failures=(why.replace("\n", " "),),
        nl_assertions=task.nl_assertions,
    )


def _from_reward_info(task: Tau2Task, termination: str, info: Any) -> Tau2Grade:
    basis = set(task.reward_basis)
    breakdown = {
        getattr(kind, "value", str(kind)): float(value)
        for kind, value in (info.reward_breakdown or {}).items()
    }
    failures: list[str] = []
    note = (info.info or {}).get("note") if info.reward_basis is None else None
    if note and info.reward == 0:
        failures.append(str(note))
    if info.db_check is not None and "DB" in basis and not info.db_check.db_match:
        failures.append(
            "DB: after the conversation's calls the database is not the one the gold actions "
            "make (τ²'s hashes differ)"
        )
    if "ENV_ASSERTION" in basis:
        for check in info.env_assertions or ():
            if not check.met:
                failures.append(f"ENV_ASSERTION: {_assertion_text(check.env_assertion)}")
    if "ACTION" in basis:
        for check in info.action_checks or ():
            if not check.action_match:
                failures.append(f"ACTION: not taken: {check.action.get_func_format()}")
    if "COMMUNICATE" in basis:
        for check in info.communicate_checks or ():
            if not check.met:
                failures.append(f"COMMUNICATE: {check.justification}")
    return Tau2Grade(
        task_id=task.id,
        termination=termination,
        reward_basis=task.reward_basis,
        tau2_reward=float(info.reward),
        components=breakdown,
        failures=tuple(line.replace("\n", " ") for line in failures),
        nl_assertions=task.nl_assertions,
        details=info.model_dump(mode="json"),
    )


def _assertion_text(assertion: Any) -> str:
    """τ²'s message of a failed environment assertion, or what it checked, on one line."""
    if assertion.message:
        return str(assertion.message)
    arguments = ", ".join(f"{key}={value!r}" for key, value in assertion.arguments.items())
    return (
        f"Assertion failed: {assertion.env_type} {assertion.func_name}({arguments}) "
        f"did not return {assertion.assert_value}"
    )
