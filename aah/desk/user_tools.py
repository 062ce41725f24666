"""Tools a person holds themselves (a τ² user's phone): buttons and forms at the desk, calls back.

In some conversations the person at the desk plays a user who has tools of
their own: in τ²'s telecom domain a phone (check the status bar, toggle
airplane mode, set the network mode...). A question's context then carries
those tools (:class:`UserToolsContext`): each a :class:`UserTool` whose form
is made from the tool's JSON schema by the elicitation form machinery (one
field an argument, an enum a choice; a tool without arguments is a button),
the calls made since the turn began with their results, and the message the
person had typed so far. Instead of answering in words the person may make
one call (:class:`UserToolCall`), checked at the desk against the tool's form
(:func:`check_user_call`; numbers through :func:`aah.bounds.check_number`)
and stored in a column of its own. Whoever asked makes the call and asks
again, the result and the typed message in the new question's context; that
question's id is a function of the turn and of the replies given
(:func:`turn_request_id`), so a resumed conversation finds them all.

What a tool's schema may hold is what pydantic writes: local references (``$ref``),
``anyOf`` with ``null`` (an optional value), an enum or any text (the enum
is offered), an object argument of plain fields (shown as its fields, one
level deep). A schema past that, or past the form's bounds, leaves its tool
off the desk, listed with the reason in one line, never an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from aah.desk.elicitation_form import (
    MAX_NAME_CHARS,
    ContentInvalid,
    ElicitationField,
    FieldValue,
    check_fields,
    shown_line,
)
from aah.desk.elicitation_schema import ElicitationRefused, form_fields, shown_value
from aah.desk.user_tool_schema import form_schema, usable_name
from aah.storable import storable_text

# The most tools one person holds on the desk; more are listed as left off.
MAX_USER_TOOLS = 64
# A call's result as the person reads it (the conversation keeps it whole).
MAX_RESULT_CHARS = 2_000
# The message typed before a call: as long as an answer may be (``MAX_ANSWER_CHARS``).
MAX_DRAFT_CHARS = 4_000


class UserTool(BaseModel):
    """One tool the person holds: its name, what it does, and its form.

    Attributes:
        name: The tool's name, as a call names it.
        description: What it does, one line.
        fields: Its arguments as form fields (none: a button); an object
            argument's fields are named ``argument.field``.
        objects: The required object arguments (given as ``{}`` when none of
            their fields is filled).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    fields: list[ElicitationField] = Field(default_factory=list)
    objects: list[str] = Field(default_factory=list)

    def arguments(self, values: Mapping[str, FieldValue]) -> dict[str, Any]:
        """Checked form ``values`` as the tool's arguments (an object's fields nested back)."""
        out: dict[str, Any] = {name: {} for name in self.objects}
        for key, value in values.items():
            parent, dot, child = key.partition(".")
            if dot:
                out.setdefault(parent, {})[child] = value
            else:
                out[key] = value
        return out

    def values(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The form's values that ``arguments`` fill (an object argument's fields flattened).

        Raises:
            ContentInvalid: an object argument given as something else.
        """
        parents = {f.name.partition(".")[0] for f in self.fields if "." in f.name}
        flat: dict[str, Any] = {}
        for key, value in arguments.items():
            if key not in parents:
                flat[key] = value
                continue
            if not isinstance(value, Mapping):
                raise ContentInvalid(f"{shown_line(key, 40)} is an object of fields")
            flat.update({f"{key}.{child}": inner for child, inner in value.items()})
        return flat


class UserToolCall(BaseModel):
    """A call the person makes with one of their tools, in place of words.

    Attributes:
        tool: The tool's name.
        arguments: Its arguments, checked against the tool's form.
        draft: The message the person had typed so far (shown again with the result).
    """

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    draft: str = ""

    def stored(self) -> dict[str, Any]:
        """The call as the ``user_call`` column keeps it (JSON values)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_stored(cls, value: Any) -> UserToolCall:
        """The call a ``user_call`` column holds.

        One that does not read as a call (damaged by hand) reads as a call of
        no tool: whoever makes it refuses it, and the person is asked again.
        """
        try:
            return cls.model_validate(value)
        except ValidationError:
            return cls(tool="")


class UserToolResult(BaseModel):
    """A call asked for in this turn and what came of it, as the person reads it.

    Attributes:
        tool: The tool's name.
        arguments: Its arguments.
        text: Its result (cut to :data:`MAX_RESULT_CHARS`), or why it was not made.
        error: The call failed, or was not made.
        made: False when it was refused before it reached the tool.
    """

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    text: str = ""
    error: bool = False
    made: bool = True


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class UserToolsContext(BaseModel):
    """The person's own tools beside a question, and the calls made since the turn began.

    Attributes:
        turn: The id of the turn's first question (the next ones derive from it).
        tools: The tools the desk can call.
        unusable: The tools it cannot, one ``name: why`` line each.
        results: The calls asked for since the turn began, in order.
        draft: The message the person had typed before their last call.
        calls_left: How many more calls this turn allows (0: only words now).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    turn: str = ""
    tools: list[UserTool] = Field(default_factory=list)
    unusable: list[str] = Field(default_factory=list)
    results: list[UserToolResult] = Field(default_factory=list)
    draft: str = ""
    calls_left: Annotated[int, BeforeValidator(_count)] = 0

    def tool(self, name: Any) -> UserTool | None:
        """The tool called ``name``, if the person holds it here."""
        return next((t for t in self.tools if t.name == name), None)

    def next_request_id(self) -> str:
        """The id of the question that follows a call replied to this one."""
        return turn_request_id(self.turn, len(self.results) + 1)


def read_user_tools(value: Any) -> UserToolsContext | None:
    """The tools a stored context holds; anything that does not read as them is none."""
    if value is None or isinstance(value, UserToolsContext):
        return value
    try:
        return UserToolsContext.model_validate(value)
    except ValidationError:
        return None


def turn_request_id(turn: str, replies: int) -> str:
    """The id of a turn's question after ``replies`` calls (0: the turn's first question)."""
    return turn if replies <= 0 else f"{turn}.call{replies}"


def result_text(text: str) -> str:
    """A call's result as the person reads it: at most :data:`MAX_RESULT_CHARS`, cut with a note."""
    said = storable_text(text)
    if len(said) <= MAX_RESULT_CHARS:
        return said
    return f"{said[:MAX_RESULT_CHARS]}\n[… {len(said) - MAX_RESULT_CHARS:,} more characters]"


# -- checking a call ------------------------------------------------------------


def check_user_call(
    context: UserToolsContext, tool: Any, values: Any, draft: Any = ""
) -> UserToolCall:
    """The call of ``tool`` with form ``values``, checked against the tool's form.

    Every face checks what the person gave here before it is stored, and the
    asker checks a stored call again (:func:`recheck_user_call`) before it
    makes it. Numbers go through :func:`aah.bounds.check_number`.

    Raises:
        ContentInvalid: one line: no calls left, no such tool, a value that
            does not fit its field, or a message typed too long to keep.
    """
    if context.calls_left <= 0:
        raise ContentInvalid("no more calls in this turn: write your message to the agent")
    if not isinstance(draft, str):
        raise ContentInvalid("the message typed so far is not text")
    if len(draft) > MAX_DRAFT_CHARS:
        raise ContentInvalid(
            f"shorten your message to at most {MAX_DRAFT_CHARS:,} characters before a call"
        )
    found = context.tool(tool) if isinstance(tool, str) else None
    if found is None:
        said = shown_value(tool[:MAX_NAME_CHARS]) if isinstance(tool, str) else shown_value(tool)
        raise ContentInvalid(f"you have no tool {said} here")
    checked = check_fields(found.fields, values)
    return UserToolCall(
        tool=found.name, arguments=found.arguments(checked), draft=storable_text(draft)
    )


def recheck_user_call(context: UserToolsContext, call: UserToolCall) -> UserToolCall:
    """A stored ``call`` checked again against ``context`` (by whoever makes it).

    Raises:
        ContentInvalid: as :func:`check_user_call`.
    """
    found = context.tool(call.tool)
    values = found.values(call.arguments) if found is not None else {}
    return check_user_call(context, call.tool, values, call.draft)


# -- tools from their specs ---------------------------------------------------------


def desk_user_tools(specs: Sequence[Any]) -> tuple[list[UserTool], list[str]]:
    """The desk's tools of ``specs`` (OpenAI function specs), and those it cannot call.

    Never raises: a spec whose name or schema no form can take is listed as
    unusable with why, in one line.
    """
    tools: list[UserTool] = []
    unusable: list[str] = []
    for spec in specs:
        function = spec.get("function", spec) if isinstance(spec, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not usable_name(name):
            unusable.append(f"{shown_value(name)}: not a name a call can use")
            continue
        assert isinstance(name, str) and isinstance(function, Mapping)
        if any(t.name == name for t in tools) or len(tools) >= MAX_USER_TOOLS:
            why = "the same name twice" if any(t.name == name for t in tools) else "too many tools"
            unusable.append(f"{name}: {why} (at most {MAX_USER_TOOLS} tools, one of a name)")
            continue
        try:
            schema, objects = form_schema(name, function.get("parameters"))
            fields = form_fields(name, schema)
        except ElicitationRefused as exc:
            unusable.append(shown_line(str(exc)))
            continue
        description = shown_line(function.get("description"))
        tools.append(UserTool(name=name, description=description, fields=fields, objects=objects))
    return tools, unusable
