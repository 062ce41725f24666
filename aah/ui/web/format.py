"""Text helpers for the web app: safe Markdown, waits, and conversation lines.

Everything a model, a tool or a user wrote is untrusted. The pages show such
text in text boxes, which never interpret it; where it must go into Markdown
(a status line, a heading), ``plain`` makes it inert first.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from aah.desk import ConversationLine
from aah.ui.briefing import span_text

# Every character Markdown gives a meaning to, so that a name or a question
# shown in a status line can neither format nor link nor load an image. "<",
# ">", "&" and quotes are left to HTML escaping, whose entities a backslash
# would break.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:])")


def plain(text: str) -> str:
    """``text`` made inert for ``gr.Markdown``: no HTML, no Markdown, one line."""
    one_line = " ".join(text.split())
    # Markdown first: escaping after HTML would put a backslash inside the
    # entities ("&\\#x27;"), which then show literally.
    return html.escape(_MARKDOWN_SPECIAL.sub(r"\\\1", one_line), quote=True)


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def waited(since: datetime, now: datetime | None = None) -> str:
    """How long ago ``since`` was, the way a person says it: ``45s``, ``3m 20s``, ``2h 5m``."""
    moment = now or datetime.now(UTC)
    seconds = max(0, int((moment - since).total_seconds()))
    if seconds < 48 * 3600:
        return span_text(seconds)
    hours = seconds // 3600
    return f"{hours // 24}d {hours % 24}h"


def _reasoning_note(line: ConversationLine) -> str:
    chars = line.reasoning_chars
    return f"\n(reasoning: {chars:,} chars, not shown)" if chars else ""


def conversation_text(lines: Iterable[ConversationLine]) -> str:
    """A request's ``conversation`` context as ``role: text`` paragraphs.

    A reply's reasoning is not the conversation: a line only says how long it was.
    """
    paragraphs = [f"{line.role}: {line.text}{_reasoning_note(line)}" for line in lines]
    return "\n\n".join(paragraphs) if paragraphs else "(nothing yet: this is the first step)"
