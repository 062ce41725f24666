"""What a call to approve or an MCP form is shown beside, read from the asking session.

A question carries its context (the agent's tools, the conversation so far,
its task and run) in its request; a call waiting for approval, or a form an
MCP server sent mid-call, may carry none of it. The person deciding still
needs it: here it is read from the session itself (its record and its
events), so the page never says "(no tools)" or "(nothing yet)" of an agent
that has called tools, nor "task - · run -" of a form whose server is known.
Every text is escaped where it becomes HTML.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from pydantic import ValidationError

from aah.desk import ConversationLine, ElicitationRequest
from aah.event_text import conversation_lines
from aah.events import DiscoveryEvent, ToolCallEvent
from aah.store import HumanRequestRecord, SessionStore

# A long session's tools: enough to recognise it, a line each.
MAX_TOOLS_SHOWN = 30


@dataclass(frozen=True)
class SessionFacts:
    """What the asking session says of itself.

    Attributes:
        task: Its task id ('' when it has none: an interactive session).
        run: Its run's name ('').
        tools: The tools it has used or found so far, first use first.
        conversation: The session so far, as the people's pages show it.
        asker: The MCP server that asks (a form), else ''.
        offered: The tools the agent was offered when the form came, as the
            request keeps them (empty: not kept, an older row).
    """

    task: str = ""
    run: str = ""
    tools: list[str] = field(default_factory=list)
    conversation: list[ConversationLine] = field(default_factory=list)
    asker: str = ""
    offered: list[str] = field(default_factory=list)


def session_facts(store: SessionStore, request: HumanRequestRecord) -> SessionFacts:
    """What ``request``'s session says: task, run, tools used, the conversation so far."""
    asker, offered = "", []
    if request.kind == "elicitation":
        try:
            asked = ElicitationRequest.model_validate(request.context)
            asker, offered = asked.asker, asked.tools
        except ValidationError:
            asker = ""
    session = store.get_session(request.session_id)
    if session is None:  # a form from an agent aah does not run: only its server is known
        return SessionFacts(asker=asker, offered=offered)
    events = store.events(request.session_id)
    tools: list[str] = []
    for event in events:
        if isinstance(event, ToolCallEvent):
            tools.append(event.tool)
        elif isinstance(event, DiscoveryEvent):
            tools += event.added
    return SessionFacts(
        task=session.task_id or "",
        run=session.run or "",
        tools=list(dict.fromkeys(tools)),
        conversation=[
            ConversationLine(role=line.role, text=line.text, reasoning_chars=line.reasoning_chars)
            for line in conversation_lines(events)
        ],
        asker=asker,
        offered=offered,
    )


def used_tools_html(facts: SessionFacts) -> str:
    """The tools the agent was offered, else those it has used (HTML, every name escaped)."""
    if facts.offered:
        shown = facts.offered[:MAX_TOOLS_SHOWN]
        items = "".join(f"<li><code>{html.escape(name)}</code></li>" for name in shown)
        more = len(facts.offered) - len(shown)
        rest = f"<p>and {more:,} more</p>" if more > 0 else ""
        return f'<p><b>The agent was given:</b></p><ul class="aah-tools">{items}</ul>{rest}'
    if not facts.tools:
        return (
            "<p><b>The agent's tools:</b> it has called none yet in this session"
            " (the list of tools it was given is not stored with this request).</p>"
        )
    shown = facts.tools[:MAX_TOOLS_SHOWN]
    items = "".join(f"<li><code>{html.escape(name)}</code></li>" for name in shown)
    more = len(facts.tools) - len(shown)
    rest = f"<p>and {more:,} more</p>" if more > 0 else ""
    return (
        "<p><b>The agent's tools</b> (those it has used so far in this session):</p>"
        f'<ul class="aah-tools">{items}</ul>{rest}'
    )
