"""What an annotator sent, as the "Your latest answers" table shows it: one readable line.

No Gradio here. A question's answer is its words; a decision on a call says
which (approved as proposed, edited, rejected, responded, terminated) with
the arguments that ran or the reason the agent read; an MCP form's result
is its action and its values as ``label: value`` pairs, never raw JSON.
What cannot be read (a context an older version wrote) is said plainly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from aah.desk import ElicitationRequest, approval_context, read_stored_answer
from aah.store import AnsweredEntry
from aah.ui.web.format import clip

# The cell's length: the table shows 20 rows on a phone too.
SHOWN_CHARS = 120
_DID = {
    "approve": "approved",
    "edit": "edited",
    "reject": "rejected",
    "respond": "responded",
    "terminate": "terminated",
}


def sent_text(given: AnsweredEntry) -> str:
    """What ``given`` sent, in one line of plain text (the table escapes it)."""
    if given.kind == "approval":
        return clip(_decision_text(given), SHOWN_CHARS)
    if given.kind == "elicitation":
        return clip(_form_text(given), SHOWN_CHARS)
    return "(declined)" if given.declined else clip(given.answer, SHOWN_CHARS)


def _arguments(arguments: dict[str, Any] | None) -> str:
    return json.dumps(arguments or {}, ensure_ascii=False)


def _decision_text(given: AnsweredEntry) -> str:
    decision = given.decision or ("decline" if given.declined else "")
    if decision not in _DID:
        return "(declined)" if given.declined else "(no decision stored)"
    reason = f": “{given.reason}”" if given.reason else ""
    if decision == "approve":
        proposed = approval_context(given.context or {}).call.arguments
        return f"approved as proposed: {_arguments(proposed)}"
    if decision == "edit":
        return f"edited: runs with {_arguments(given.edited_arguments)}"
    if decision == "respond":
        return f"responded (the call did not run): “{given.answer}”"
    return f"{_DID[decision]}{reason or ' (no reason given)'}"


def _form_text(given: AnsweredEntry) -> str:
    try:
        request = ElicitationRequest.model_validate(given.context or {})
    except ValidationError:
        return "(declined)" if given.declined else "(a form this version cannot read)"
    result = read_stored_answer(request, given.answer, declined=given.declined)
    action = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}[result.action]
    if result.action != "accept" or not result.content:
        return "done (the link)" if request.mode == "url" and result.action == "accept" else action
    return f"{action}: {content_text(request, result.content)}"


def content_text(request: ElicitationRequest, content: Mapping[str, Any]) -> str:
    """A form's values as ``label: value`` pairs on one line (``Guest name: Ada; Nights: 3``)."""
    labels = {field.name: field.label for field in request.fields}
    return "; ".join(
        f"{labels.get(name, name)}: {_value(value)}" for name, value in content.items()
    )


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)
