"""What an annotator reads before answering, the same in the web and terminal apps.

A human request's context (written by the session driver and the batch
runner) says what the agent was given; this module turns it into the
briefing both faces show: the agent's tools, what this setting lets the
annotator do, the words that differ between the user's full request and the
one the agent got, and how long is left before the deadline's fallback
answers instead.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from aah.desk import QuestionContext

# What each setting lets a person answering do; interactive sessions have none.
_RULES = {
    "perfect": "the agent has every tool it needs; answer only what is asked",
    "underspecified": "you know the full request; give only what is asked",
    "notools": "the agent has no tools for this; answer only what is asked",
}
_WORD = re.compile(r"\S+")


def setting_rule(setting: str | None, unavailable: Sequence[str] = ()) -> str:
    """What the annotator may and may not do in ``setting``, in one line ("" if no rule).

    Args:
        setting: The task's setting (``underspecified``, ``replaceable``...).
        unavailable: The endpoints the setting took away, ``name: description``.
    """
    missing = ", ".join(line.split(":", 1)[0] for line in unavailable) or "unnamed"
    if setting == "replaceable":
        return f"the missing tool is {missing}; you may do its simple job"
    if setting == "nonreplaceable":
        return f"you cannot do the missing tool's job ({missing})"
    return _RULES.get(setting or "", "")


@dataclass(frozen=True)
class Briefing:
    """The context an annotator needs, as plain values.

    Attributes:
        setting: The task's setting, or ``interactive``.
        rule: What the annotator may and may not do ("" when no rule applies).
        tools: The agent's tools, one line each.
        unavailable: The endpoints the setting took away, one line each.
        full_request: The user's whole request ("" when the agent got all of it).
        given_request: The request the agent got.
    """

    setting: str
    rule: str
    tools: list[str]
    unavailable: list[str]
    full_request: str
    given_request: str


def briefing(context: QuestionContext, query: str = "") -> Briefing:
    """The briefing a request's ``context`` holds (``query``: the session's, as a fallback)."""
    setting = context.setting or "interactive"
    given = context.query or query
    full = context.original_query
    return Briefing(
        setting=setting,
        rule=setting_rule(setting, context.unavailable),
        tools=list(context.tools),
        unavailable=list(context.unavailable),
        full_request=full if full and full != given else "",
        given_request=given,
    )


def word_diff(full: str, given: str) -> list[tuple[str, str]]:
    """The words of ``full`` and ``given`` in reading order, marked by how they differ.

    Words are compared without case. Returns ``(kind, text)`` runs: ``same``
    (in both), ``changed`` (only the full request has them: what the agent
    was not told) and ``given`` (only the agent's request has them).
    """
    ours, theirs = _WORD.findall(full), _WORD.findall(given)
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in ours], b=[w.lower() for w in theirs])
    parts: list[tuple[str, str]] = []
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(("same", " ".join(ours[a1:a2])))
            continue
        if a2 > a1:
            parts.append(("changed", " ".join(ours[a1:a2])))
        if b2 > b1:
            parts.append(("given", " ".join(theirs[b1:b2])))
    return parts


def word_diff_html(full: str, given: str) -> str:
    """The full request as HTML, the words the agent did not get in ``<mark>``.

    Words only the agent's request has follow, struck through. Every word is
    HTML-escaped: the text comes from a dataset and a model, never trusted.
    """
    pieces = []
    for kind, text in word_diff(full, given):
        escaped = html.escape(text, quote=True)
        if kind == "changed":
            pieces.append(f'<mark class="aah-diff">{escaped}</mark>')
        elif kind == "given":
            pieces.append(f'<del class="aah-diff" title="what the agent got">{escaped}</del>')
        else:
            pieces.append(escaped)
    return " ".join(pieces)


class HasDeadline(Protocol):
    """A request as any list shows it: a full record or a light queue entry."""

    @property
    def deadline(self) -> datetime | None:
        """When the asker stops waiting for a person, if ever."""

    @property
    def fallback(self) -> str | None:
        """Who answers at the deadline."""


def deadline_note(request: HasDeadline, now: datetime | None = None) -> str:
    """How long is left before the fallback answers, e.g. ``idk in 4m 05s`` ("" if none)."""
    if request.deadline is None:
        return ""
    moment = now or datetime.now(UTC)
    deadline = request.deadline if request.deadline.tzinfo else request.deadline.replace(tzinfo=UTC)
    left = int((deadline - moment).total_seconds())
    fallback = request.fallback or "idk"
    if left <= 0:
        return f"{fallback} now"
    return f"{fallback} in {span_text(left)}"


def span_text(seconds: int) -> str:
    """A span of time the way a person says it: ``45s``, ``3m 20s``, ``2h 05m``."""
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"
