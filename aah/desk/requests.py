"""What a person is asked, with what they need to see beside it: typed, versioned contexts.

A question's context says who asks, the task and its query, the tools the
agent was given, the steps so far and what the setting took away; an
approval's context says all that too, plus the call to decide on. Both are
stored as JSON in the ``context`` column of ``human_requests`` with a
``version``; a row written before contexts had one (no ``version``) reads as
version 1, its keys being the same (the call was then kept under
``approval``, who asks under ``agent``).

Reading never fails on what a row holds: a value of the wrong shape reads
as empty, so an old or hand-edited row still shows its question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from aah.bounds import OutOfBounds, check_number
from aah.desk.user_tools import UserToolsContext, read_user_tools

C = TypeVar("C", bound="QuestionContext")
# The version this aah writes; a row without one was written as version 1.
CONTEXT_VERSION = 1


def _text(value: Any) -> str:
    """Text as stored: None (a value never given) reads as empty."""
    return "" if value is None else str(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _lines(value: Any) -> list[str]:
    """A list of one-line texts: a list reads line by line, text splits on newlines."""
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list):
        return []
    return [" ".join(str(line).split()) for line in value if str(line).strip()]


def _steps(value: Any) -> list[Any]:
    """The steps that read as steps (objects, or steps already read); anything else is left out."""
    if not isinstance(value, list):
        return []
    return [line for line in value if isinstance(line, Mapping | ConversationLine)]


def _object(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _objects(value: Any) -> list[dict[str, Any]]:
    return (
        [dict(item) for item in value if isinstance(item, Mapping)]
        if isinstance(value, list)
        else []
    )


def _seconds(value: Any) -> float | None:
    """A number of seconds; anything else (text, a boolean, NaN, 400 digits) reads as none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(check_number(value, "seconds", integer=False))
    except OutOfBounds:
        return None


def _version(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else CONTEXT_VERSION


Text = Annotated[str, BeforeValidator(_text)]
OptionalText = Annotated[str | None, BeforeValidator(_optional_text)]
Lines = Annotated[list[str], BeforeValidator(_lines)]


class ConversationLine(BaseModel):
    """One step of the session so far, as a person reads it before answering.

    Attributes:
        role: Who spoke or acted (``user``, ``agent``, ``tool``...).
        text: What they said or did, shortened.
        reasoning_chars: How long the reasoning that came with a reply was (0: none).
    """

    model_config = ConfigDict(frozen=True)

    role: Text = "?"
    text: Text = ""
    reasoning_chars: Annotated[int, BeforeValidator(lambda v: v if isinstance(v, int) else 0)] = 0


class QuestionContext(BaseModel):
    """What a person needs beside a question: who asks, the task, the tools, the steps.

    Attributes:
        version: The context's format (``CONTEXT_VERSION`` when written by this aah).
        asker: Who asks, when it is not the session's agent (an MCP client).
        query: The request the agent got.
        original_query: The user's whole request, when the agent got less of it.
        setting: The task's setting (``interactive`` when none).
        task_id: The task, in a batch run.
        run: The batch run.
        category: The task's category (BFCL).
        tools: What the agent was given, one ``name: summary`` line a tool.
        unavailable: The endpoints the setting took away, one line each.
        conversation: The session's steps so far.
        demo_answer: What the demo user would say (the terminal app's demo tasks).
        fallback_answer: The words an MCP client gave to answer at the deadline.
        content_digest: The digest binding an MCP client's id to its content.
        user_tools: The tools the person holds themselves (a τ² user's phone),
            which they may call instead of answering in words, with the calls
            made since the turn began; None when they hold none.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    version: Annotated[int, BeforeValidator(_version)] = CONTEXT_VERSION
    asker: Text = Field("", validation_alias=AliasChoices("asker", "agent"))
    query: Text = ""
    original_query: Text = ""
    setting: OptionalText = None
    task_id: OptionalText = None
    run: OptionalText = None
    category: OptionalText = None
    tools: Lines = Field(default_factory=list)
    unavailable: Lines = Field(default_factory=list)
    conversation: Annotated[list[ConversationLine], BeforeValidator(_steps)] = Field(
        default_factory=list
    )
    demo_answer: Text = ""
    fallback_answer: OptionalText = Field(
        None, validation_alias=AliasChoices("fallback_answer", "fallback")
    )
    content_digest: OptionalText = None
    user_tools: Annotated[UserToolsContext | None, BeforeValidator(read_user_tools)] = None

    def stored(self) -> dict[str, Any]:
        """The context as the ``context`` column keeps it (JSON values, this version)."""
        return self.model_dump(mode="json", exclude_defaults=True) | {"version": CONTEXT_VERSION}


class CallToApprove(BaseModel):
    """The tool call a person is asked to approve, edit, reject or respond to.

    Attributes:
        request_id: The human request carrying this ask.
        session_id: The calling session.
        call_id: The id the model gave the call.
        tool: The qualified tool name.
        method: The endpoint's HTTP method.
        url: The endpoint's URL template.
        arguments: The arguments the model proposed.
        parameters: The endpoint's parameters (name, type, required, enum...),
            for a face that builds an edit form.
        rule: The policy rule that made the call need approval, in words.
        ask: 1 for the first ask; more when a deadline asked again.
        deadline_seconds: How long a person has for this ask; None: forever.
        fallback: What this ask's deadline brings (``ask_again``, ``reject``, ``approve``).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    request_id: Text = ""
    session_id: Text = ""
    call_id: Text = ""
    tool: Text = ""
    method: Text = ""
    url: Text = ""
    arguments: Annotated[dict[str, Any], BeforeValidator(_object)] = Field(default_factory=dict)
    parameters: Annotated[list[dict[str, Any]], BeforeValidator(_objects)] = Field(
        default_factory=list
    )
    rule: Text = ""
    ask: Annotated[int, BeforeValidator(lambda v: v if isinstance(v, int) and v > 0 else 1)] = 1
    deadline_seconds: Annotated[float | None, BeforeValidator(_seconds)] = None
    fallback: Text = "reject"


def _call(value: Any) -> Any:
    """A call as stored (an object, or the model itself); anything else reads as empty."""
    return value if isinstance(value, Mapping | CallToApprove) else {}


class ApprovalContext(QuestionContext):
    """What a person needs beside a call to decide on: a question's context, and the call.

    Attributes:
        call: The call (stored by older versions under ``approval``).
    """

    call: Annotated[CallToApprove, BeforeValidator(_call)] = Field(
        default_factory=CallToApprove, validation_alias=AliasChoices("call", "approval")
    )


def question_context(stored: Mapping[str, Any]) -> QuestionContext:
    """The context a question's ``context`` column holds (any version, never an error)."""
    return _read(QuestionContext, stored)


def approval_context(stored: Mapping[str, Any]) -> ApprovalContext:
    """The context an approval's ``context`` column holds (any version, never an error)."""
    return _read(ApprovalContext, stored)


def _read(model: type[C], stored: Mapping[str, Any]) -> C:
    try:
        return model.model_validate(dict(stored))
    except ValidationError:
        # A value of a shape no validator above reads (a float deadline as
        # text...): the row still shows its question, without that context.
        return model()
