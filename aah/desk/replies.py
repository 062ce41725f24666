"""What a person replies: an answer to a question, a decision on a call to approve.

An answer's text is ``answer`` from the page to the model: the form's
field, the store's column, this model's field and the value the agent's
graph resumes with (``Answer.resumed``). A decision is stored in columns of
its own (``decision``, ``edited_arguments``, ``reason``; a response's text
in ``answer``); a request settled by an older aah (schema 6 or earlier) kept
it as JSON or words in ``answer``, which :func:`decision_of` still reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from aah.bounds import parse_json
from aah.desk.user_tools import UserToolCall
from aah.events import ApprovalDecision
from aah.storable import storable
from aah.store import APPROVAL_DECISIONS, HumanRequestRecord


class Answer(BaseModel):
    """A person's answer: the text, who gave it, how long it took, or a decline.

    Also the value the agent's graph resumes a question with (``resumed``).

    Attributes:
        answer: What they said (empty when declined).
        answered_by: Who answered (an annotator, ``console``, ``oracle``...).
        seconds: How long they took.
        declined: They chose not to answer.
        flags: Checks on the answer, e.g. a simulated user's leak check.
        call: A call they made with their own tools instead of answering in
            words (``answer`` is then empty); the asker makes it and asks again.
    """

    # A person's text may come from a terminal that sent bytes that are not UTF-8.
    answer: Annotated[str, BeforeValidator(storable)]
    answered_by: str = ""
    seconds: float = 0.0
    declined: bool = False
    flags: list[str] = Field(default_factory=list)
    call: UserToolCall | None = None

    def resumed(self) -> dict[str, Any]:
        """The answer as the graph's interrupt gets it back (JSON values, checkpointed)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_resumed(cls, value: Any) -> Answer:
        """The answer a resumed interrupt got: ``resumed()``'s value, or bare text.

        A value resumed by an older aah named the text ``text``.
        """
        if isinstance(value, Mapping):
            data = dict(value)
            if "answer" not in data:
                data["answer"] = data.pop("text", "")
            return cls.model_validate(data)
        return cls(answer="" if value is None else str(value))


class Decision(BaseModel):
    """A decision on one call waiting for approval.

    Attributes:
        decision: ``approve``, ``edit``, ``reject``, ``respond`` or ``terminate``.
        arguments: An edit's arguments (None for the other decisions).
        reason: Why; a rejection's reason reaches the agent.
        response: A response's text: the tool's result as the agent reads it.
        decided_by: Who decided.
        seconds: How long the decision took, when the approver measured it.
    """

    decision: ApprovalDecision
    arguments: dict[str, Any] | None = None
    reason: str = ""
    response: Annotated[str, BeforeValidator(storable)] = ""
    decided_by: str
    seconds: float = 0.0


def decision_of(record: HumanRequestRecord) -> Decision:
    """The decision that settled an approval request (answered or declined).

    Read from its columns; a request settled by an aah of schema 6 or
    earlier holds it in ``answer`` instead (:func:`decision_from_text`).
    """
    decided_by = record.answered_by or "unknown"
    if record.decision is None:
        return decision_from_text(record.answer or "", record.status == "declined", decided_by)
    return Decision(
        decision=record.decision,
        arguments=record.edited_arguments,
        reason=record.reason or "",
        response=(record.answer or "") if record.decision == "respond" else "",
        decided_by=decided_by,
    )


def decision_from_text(text: str, declined: bool, decided_by: str) -> Decision:
    """The decision an older aah stored as an approval request's ``answer``.

    JSON (``{"decision": ..., "arguments": ..., "reason": ...}``) or words:
    ``approve`` (or a, yes), ``reject[: reason]`` (or r, no), ``terminate``
    (or t), ``edit {json}`` (or e). Anything else, and a declined request,
    is a rejection: a call runs only when a person approved it.
    """
    if declined:
        return Decision(
            decision="reject", reason="the person declined to decide", decided_by=decided_by
        )
    stripped = text.strip()
    try:
        data = parse_json(stripped, "the decision")
    except ValueError:  # not JSON, or past the bounds: read as words
        data = None
    if isinstance(data, dict) and data.get("decision") in APPROVAL_DECISIONS:
        arguments = data.get("arguments")
        return Decision(
            decision=data["decision"],
            arguments=arguments if isinstance(arguments, dict) else None,
            reason=str(data.get("reason") or ""),
            decided_by=decided_by,
        )
    word, _, rest = stripped.partition(" ")
    word = word.rstrip(":").lower()
    rest = rest.strip()
    if word in ("a", "approve", "approved", "yes", "y", "ok"):
        return Decision(decision="approve", decided_by=decided_by)
    if word in ("t", "terminate", "stop"):
        return Decision(decision="terminate", reason=rest, decided_by=decided_by)
    if word in ("e", "edit"):
        try:
            arguments = parse_json(rest, "the edit")
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            return Decision(decision="edit", arguments=arguments, decided_by=decided_by)
    if word in ("r", "reject", "rejected", "no", "n"):
        return Decision(decision="reject", reason=rest, decided_by=decided_by)
    return Decision(decision="reject", reason=stripped, decided_by=decided_by)
