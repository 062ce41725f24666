"""The human desk as one typed domain: what people are asked, what they reply, and how.

Requests (a question, an approval, an elicitation) carry a typed context;
replies (an answer, a decision, an elicitation result) are stored in
columns of their own; one workflow (list, claim, renew, release, answer or
decide, undo, skip, expire) runs on an injected clock. Every face (the web
page, the terminal app, ``aah mcp serve``) and every batch channel goes
through it. Below the runtime, above the store.
"""

from __future__ import annotations

from aah.desk.replies import Answer, Decision, decision_from_text, decision_of
from aah.desk.requests import (
    CONTEXT_VERSION,
    ApprovalCall,
    ApprovalContext,
    ConversationLine,
    QuestionContext,
    approval_context,
    question_context,
)

__all__: list[str] = [
    "CONTEXT_VERSION",
    "Answer",
    "ApprovalCall",
    "ApprovalContext",
    "ConversationLine",
    "Decision",
    "QuestionContext",
    "approval_context",
    "decision_from_text",
    "decision_of",
    "question_context",
]
