"""The human desk as one typed domain: what people are asked, what they reply, and how.

Requests (a question, an approval, an elicitation) carry a typed context;
replies (an answer, a decision, an elicitation result) are stored in
columns of their own; one workflow (list, claim, renew, release, answer or
decide, undo, skip, expire) runs on an injected clock. Every face (the web
page, the terminal app, ``aah mcp serve``) and every batch channel goes
through it. Below the runtime, above the store.
"""

from __future__ import annotations

from aah.clock import SYSTEM_CLOCK, Clock, FakeClock, SystemClock
from aah.desk.elicitation import (
    MAX_FIELDS,
    ContentInvalid,
    ElicitationAction,
    ElicitationField,
    ElicitationMode,
    ElicitationRefused,
    ElicitationRequest,
    ElicitationResult,
    FieldValue,
    check_content,
    check_value,
    form_fields,
    read_stored_answer,
    stored_answer,
)
from aah.desk.workflow import (
    HEARTBEAT_LEASE_S,
    MAX_ANSWER_CHARS,
    UNDO_SECONDS,
    DeskWorkflow,
    Next,
    OpenedRequest,
    Sent,
    SentOutcome,
    Undoable,
)

__all__ = [
    "HEARTBEAT_LEASE_S",
    "MAX_ANSWER_CHARS",
    "MAX_FIELDS",
    "SYSTEM_CLOCK",
    "UNDO_SECONDS",
    "Clock",
    "ContentInvalid",
    "DeskWorkflow",
    "ElicitationAction",
    "ElicitationField",
    "ElicitationMode",
    "ElicitationRefused",
    "ElicitationRequest",
    "ElicitationResult",
    "FakeClock",
    "FieldValue",
    "Next",
    "OpenedRequest",
    "Sent",
    "SentOutcome",
    "SystemClock",
    "Undoable",
    "check_content",
    "check_value",
    "form_fields",
    "read_stored_answer",
    "stored_answer",
]
