"""The human desk as one typed domain: what people are asked, what they reply, and how.

Requests (a question, an approval, an elicitation) carry a typed context;
replies (an answer, a decision, an elicitation result) are stored in
columns of their own; one workflow (list, claim, renew, release, answer or
decide, undo, skip, expire) runs on an injected clock. Every face (the web
page, the terminal app, ``aah mcp serve``) and every batch channel goes
through it. Below the runtime, above the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    desk_user_tools,
    recheck_user_call,
    result_text,
    turn_request_id,
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
from aah.lazy import lazy_getattr

__all__ = [
    "link_words",
    "offered_tools",
    "rule_words",
    "ItemFigures",
    "PersonFigures",
    "ReviewDesk",
    "TeamFigures",
    "set_groups",
    "set_reviewers",
    "set_up_run_team",
    "team_figures",
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
    "desk_user_tools",
]

if TYPE_CHECKING:
    from aah.desk.elicitation import link_words, offered_tools
    from aah.desk.rules_text import rule_words
    from aah.desk.team import (
        ItemFigures,
        PersonFigures,
        ReviewDesk,
        TeamFigures,
        set_groups,
        set_reviewers,
        set_up_run_team,
        team_figures,
    )

# Loaded on first use: they reach the store and scoring.
_LAZY = {
    "link_words": "aah.desk.elicitation",
    "offered_tools": "aah.desk.elicitation",
    "rule_words": "aah.desk.rules_text",
    "ItemFigures": "aah.desk.team",
    "PersonFigures": "aah.desk.team",
    "ReviewDesk": "aah.desk.team",
    "TeamFigures": "aah.desk.team",
    "set_groups": "aah.desk.team",
    "set_reviewers": "aah.desk.team",
    "set_up_run_team": "aah.desk.team",
    "team_figures": "aah.desk.team",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
