"""The simulated user's answer to an MCP server's form: the question it reads, the reply it gives.

The user reads the server's message and each field (name, title, kind,
options, bounds, whether it is required) in the prompt
``simulated_elicitation`` and replies with a JSON object of values, or
DECLINE. The reply (reasoning already split off) is read here: JSON, an
object, and content the desk's own ``check_content`` accepts, else the
server gets a decline that says why. A link (URL mode) is never opened, so
it is declined without asking the model.
"""

from __future__ import annotations

import json
import re

from aah.bounds import OutOfBounds, parse_json
from aah.desk import (
    ContentInvalid,
    ElicitationField,
    ElicitationRequest,
    ElicitationResult,
    check_content,
)

SIMULATED = "simulated"
# The longest reply read as content: a full form of the longest texts, quoted.
MAX_REPLY_CHARS = 20_000
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def describe_fields(request: ElicitationRequest) -> str:
    """The form's fields as the simulated user reads them, one line each."""
    return "\n".join(_describe(field) for field in request.fields) or "- (no fields)"


def _describe(field: ElicitationField) -> str:
    kind: str = field.kind
    if field.kind == "enum":
        kind = "several of" if field.multiple else "one of"
        kind += " " + ", ".join(_option(field, option) for option in field.options)
    elif field.format:
        kind = f"{kind} ({field.format})"
    details = [
        kind,
        f"at least {field.minimum:g}" if field.minimum is not None else "",
        f"at most {field.maximum:g}" if field.maximum is not None else "",
        f"at least {field.min_length} characters" if field.min_length is not None else "",
        f"at most {field.max_length} characters" if field.max_length is not None else "",
        f"choose at least {field.min_items}" if field.min_items is not None else "",
        f"choose at most {field.max_items}" if field.max_items is not None else "",
        "required" if field.required else "optional",
        field.description,
    ]
    title = f" ({field.title})" if field.title else ""
    return f"- {field.name}{title}: " + "; ".join(d for d in details if d)


def _option(field: ElicitationField, option: str) -> str:
    """An option as the user reads it: its value in quotes, then its title when it has one."""
    title = field.option_title(option)
    return json.dumps(option) + (f" ({title})" if title != option else "")


def read_elicitation_reply(request: ElicitationRequest, text: str) -> ElicitationResult:
    """The result the simulated user's reply ``text`` gives ``request``.

    DECLINE, a reply that is not a JSON object (or is too long or too deep),
    content that does not fit the form, or no field filled is a decline; its
    ``why`` says which.
    """
    reply = text.strip()
    fenced = _FENCE.match(reply)
    if fenced:
        reply = fenced.group(1).strip()
    if reply.strip(" .!*").upper() == "DECLINE":
        return declined("the simulated user declined")
    try:
        content = parse_json(reply, "the simulated user's reply", max_chars=MAX_REPLY_CHARS)
    except OutOfBounds as exc:
        return declined(str(exc))
    except ValueError:
        return declined(f"the simulated user's reply is not JSON: {_excerpt(reply)}")
    if not isinstance(content, dict):
        return declined(f"the simulated user's reply is not a JSON object: {_excerpt(reply)}")
    try:
        checked = check_content(request, content)
    except ContentInvalid as exc:
        return declined(f"the simulated user's content does not fit the form: {exc}")
    if not checked:
        return declined("the simulated user filled no field of the form")
    return ElicitationResult(action="accept", content=checked, answered_by=SIMULATED)


def declined(why: str) -> ElicitationResult:
    """A decline by the simulated user, saying ``why``."""
    return ElicitationResult(action="decline", answered_by=SIMULATED, why=why)


def _excerpt(text: str) -> str:
    return repr(" ".join(text.split())[:80])
