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
    MAX_MESSAGE_CHARS,
    UNREADABLE_KEY,
    ElicitationAction,
    ElicitationMode,
    ElicitationRequest,
    ElicitationResult,
    check_content,
    read_stored_answer,
    stored_answer,
    unreadable_elicitation,
)
from aah.desk.elicitation_form import (
    ContentInvalid,
    ElicitationField,
    FieldValue,
    check_fields,
    check_value,
    fitting_value,
    shown_line,
)
from aah.desk.elicitation_schema import MAX_FIELDS, ElicitationRefused, form_fields
from aah.desk.replies import Answer, Decision, decision_from_text, decision_of
from aah.desk.requests import (
    CONTEXT_VERSION,
    ApprovalContext,
    CallToApprove,
    ConversationLine,
    QuestionContext,
    approval_context,
    question_context,
)
from aah.desk.user_tools import (
    MAX_DRAFT_CHARS,
    MAX_RESULT_CHARS,
    MAX_USER_TOOLS,
    UserTool,
    UserToolCall,
    UserToolResult,
    UserToolsContext,
    check_user_call,
    recheck_user_call,
    result_text,
    turn_request_id,
    user_tools,
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
    "CONTEXT_VERSION",
    "HEARTBEAT_LEASE_S",
    "MAX_ANSWER_CHARS",
    "MAX_DRAFT_CHARS",
    "MAX_FIELDS",
    "MAX_MESSAGE_CHARS",
    "MAX_RESULT_CHARS",
    "MAX_USER_TOOLS",
    "SYSTEM_CLOCK",
    "UNDO_SECONDS",
    "UNREADABLE_KEY",
    "Answer",
    "ApprovalContext",
    "CallToApprove",
    "Clock",
    "ContentInvalid",
    "ConversationLine",
    "Decision",
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
    "QuestionContext",
    "Sent",
    "SentOutcome",
    "SystemClock",
    "Undoable",
    "UserTool",
    "UserToolCall",
    "UserToolResult",
    "UserToolsContext",
    "approval_context",
    "check_content",
    "check_fields",
    "check_user_call",
    "check_value",
    "decision_from_text",
    "decision_of",
    "fitting_value",
    "form_fields",
    "question_context",
    "read_stored_answer",
    "recheck_user_call",
    "result_text",
    "shown_line",
    "stored_answer",
    "turn_request_id",
    "unreadable_elicitation",
    "user_tools",
]
