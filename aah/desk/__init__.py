"""The human desk as one typed domain: what people are asked, what they reply, and how.

Requests (a question, an approval, an elicitation) carry a typed context;
replies (an answer, a decision, an elicitation result) are stored in
columns of their own; one workflow (list, claim, renew, release, answer or
decide, undo, skip, expire) runs on an injected clock. Every face (the web
page, the terminal app, ``aah mcp serve``) and every batch channel goes
through it. Below the runtime, above the store.
"""

from __future__ import annotations

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

__all__: list[str] = [
    "MAX_FIELDS",
    "ContentInvalid",
    "ElicitationAction",
    "ElicitationField",
    "ElicitationMode",
    "ElicitationRefused",
    "ElicitationRequest",
    "ElicitationResult",
    "FieldValue",
    "check_content",
    "check_value",
    "form_fields",
    "read_stored_answer",
    "stored_answer",
]
