"""Resuming a session in another process, from its checkpoint and stored recipe.

A session killed while it waited for a person (or mid-step) is a checkpoint
plus the recipe its driver stored when it opened (``session_recipe``): the
tools, the limits and who answers. This module turns the two back into a
``SessionRequest`` for :func:`aah.runtime.run_session`, which continues from
the checkpoint and hands the agent any answer given meanwhile.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from aah.config import get_settings
from aah.errors import AahError
from aah.runtime.approval_policy import ApprovalPolicy
from aah.runtime.discovery import ToolFinder
from aah.runtime.humans import QueueHuman
from aah.runtime.session import SessionRequest
from aah.store import STOPPED_STATUSES, SessionRecord, SessionStore
from aah.tools import EndpointSpec
from aah.tools.registry import Registry

# Statuses a session never leaves: resuming one has nothing to do.
_ENDED = ("finished", "skipped", "cancelled", *STOPPED_STATUSES)


class Resumable(NamedTuple):
    """A stored session and what running it again needs.

    Attributes:
        session: The session as stored.
        request: Its session request, with a queue as its human.
        http_mode: How its tools reached their APIs.
    """

    session: SessionRecord
    request: SessionRequest
    http_mode: str


def find_session(store: SessionStore, prefix: str) -> SessionRecord:
    """The one session whose id starts with ``prefix``.

    Raises:
        AahError: No session, or several, match.
    """
    exact = store.get_session(prefix)
    if exact is not None:
        return exact
    matches = [s for s in store.list_sessions() if s.id.startswith(prefix)] if prefix else []
    if len(matches) != 1:
        found = "no session" if not matches else f"{len(matches)} sessions"
        raise AahError(f"{found} with id {prefix!r}: see `aah sessions list`")
    return matches[0]


def resume_request(store: SessionStore, session_id: str) -> Resumable:
    """What resuming the session ``session_id`` (or a unique prefix) runs.

    Raises:
        AahError: No such session; it has ended (finished, skipped,
            cancelled); or it was answered by a batch human (oracle,
            simulated user), which only its benchmark run can rebuild.
    """
    session = find_session(store, session_id)
    if session.status in _ENDED:
        raise AahError(f"session {session.id} is {session.status}: there is nothing to resume")
    recipe = store.session_recipe(session.id)
    human: dict[str, Any] = recipe.get("human") or {}
    if not recipe or human.get("kind") != "queue":
        rerun = f"`aah bench run --run {session.run}`" if session.run else "`aah run` again"
        raise AahError(
            f"session {session.id} was not answered through the queue"
            f" ({human.get('kind', 'no recipe stored')}): resume it with {rerun}"
        )
    if recipe.get("follow_ups") and session.run:
        # Its tools keep state (BFCL's APIs), which only its benchmark run rebuilds.
        raise AahError(
            f"session {session.id} is a conversation over stateful tools: resume it with "
            f"`aah bench run --run {session.run}` (the same flags)"
        )
    request = SessionRequest(
        query=session.query,
        specs=[EndpointSpec.model_validate(tool) for tool in recipe.get("tools", [])],
        aah=session.aah,
        awareness=recipe.get("awareness", "both"),
        step_limit=int(recipe.get("step_limit", 10)),
        answer_calls_at_limit=bool(recipe.get("answer_calls_at_limit", False)),
        tool_result_tokens=int(recipe["tool_result_tokens"]),
        tool_mode=recipe.get("tool_mode", "native"),
        run=session.run,
        task_id=session.task_id,
        setting=session.setting,
        context=dict(recipe.get("context") or {}),
        human=QueueHuman(
            store,
            deadline_seconds=human.get("deadline_seconds"),
            fallback=human.get("fallback") or "idk",
            annotators=int(human.get("annotators") or 1),
        ),
        retry_errors=True,
        session_id=session.id,
        finder=_finder(recipe.get("discover")),
        approvals=(
            ApprovalPolicy.model_validate(recipe["approvals"]) if recipe.get("approvals") else None
        ),
    )
    return Resumable(session, request, str(recipe.get("http_mode") or "mock"))


def _finder(discover: Any) -> ToolFinder | None:
    """The session's ``find_tools`` search again, over the registry of this process.

    The endpoints it already found are in its checkpoint; only new searches
    read the registry.
    """
    if not isinstance(discover, dict):
        return None
    registry = Registry(get_settings().registry_path())
    return ToolFinder(registry, int(discover.get("k") or 1), discover.get("removed") or ())
