"""The agent: state, prompts, awareness, graph, session driver, humans.

Public names load lazily (PEP 562), so importing one light module of the
package does not load the heavy ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.runtime.awareness import ask_awareness, parse_awareness
    from aah.runtime.environment import open_runtime
    from aah.runtime.graph import build_graph
    from aah.runtime.humans import (
        ConsoleHuman,
        HumanChannel,
        HumanReply,
        HumanRequest,
        QueueHuman,
        ScriptedHuman,
    )
    from aah.runtime.loop import run_async
    from aah.runtime.session import Runtime, SessionOutcome, SessionRequest, run_session

__all__ = [
    "ConsoleHuman",
    "HumanChannel",
    "HumanReply",
    "HumanRequest",
    "QueueHuman",
    "Runtime",
    "ScriptedHuman",
    "SessionOutcome",
    "SessionRequest",
    "ask_awareness",
    "build_graph",
    "open_runtime",
    "parse_awareness",
    "run_async",
    "run_session",
]

_WHERE = {
    "ConsoleHuman": "aah.runtime.humans",
    "HumanChannel": "aah.runtime.humans",
    "HumanReply": "aah.runtime.humans",
    "HumanRequest": "aah.runtime.humans",
    "QueueHuman": "aah.runtime.humans",
    "Runtime": "aah.runtime.session",
    "ScriptedHuman": "aah.runtime.humans",
    "SessionOutcome": "aah.runtime.session",
    "SessionRequest": "aah.runtime.session",
    "ask_awareness": "aah.runtime.awareness",
    "build_graph": "aah.runtime.graph",
    "open_runtime": "aah.runtime.environment",
    "parse_awareness": "aah.runtime.awareness",
    "run_async": "aah.runtime.loop",
    "run_session": "aah.runtime.session",
}


__getattr__ = lazy_getattr(__name__, _WHERE)
