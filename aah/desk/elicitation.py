"""Questions from MCP servers: an elicitation request, typed, and the person's result.

An MCP server that aah's agent uses may ask the user for input
(``elicitation/create``): in form mode with a ``requestedSchema`` of
primitive properties (MCP 2025-06-18), or in URL mode with a link for the
person to open themselves and an ``elicitationId`` (2025-11-25). The
request becomes an :class:`ElicitationRequest` (the server's name as the
asker, the message, form fields or the URL), which every face and channel
reads; the person's :class:`ElicitationResult` (accept with content,
decline, cancel) goes back to the server.

Whatever a server sends, the request is either one a person can answer
(its schema read by :mod:`aah.desk.elicitation_schema`, its values checked
by :mod:`aah.desk.elicitation_form`) or refused in one line
(:class:`ElicitationRefused`), and the server gets a decline. A link is
taken only over http(s). A request the transport could not read at all
(too deep or too big to parse) reaches the desk as
:func:`unreadable_elicitation` params, and is refused the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, Field

from aah.desk.elicitation_form import (
    MAX_LABEL_CHARS,
    ContentInvalid,
    ElicitationField,
    FieldValue,
    check_fields,
    shown_line,
)
from aah.desk.elicitation_schema import ElicitationRefused, form_fields, shown_value
from aah.terminal_text import printable

ElicitationMode = Literal["form", "url"]
ElicitationAction = Literal["accept", "decline", "cancel"]

MAX_MESSAGE_CHARS = 4_000
MAX_URL_CHARS = 2_048
# Where in a request's ``_meta`` the transport says why it could not read it.
UNREADABLE_KEY = "aah/unreadable"


def unreadable_elicitation(why: str) -> dict[str, Any]:
    """The params to stand in for an ``elicitation/create`` the transport refused to read.

    A server's question past the transport's bounds (nested past what the
    SDK parses, too big) is not dropped: these params, valid form-mode
    params for the SDK, go to the call's elicitor in its place, and the
    desk refuses them with ``why``: the session logs the refusal in one line
    and the server gets its decline at once, never silence.
    """
    return {
        "mode": "form",
        "message": "",
        "requestedSchema": {"type": "object", "properties": {}},
        "_meta": {UNREADABLE_KEY: why},
    }


# The tools the agent was offered, kept beside a form: names only, this many, each this long.
MAX_OFFERED_TOOLS = 200
MAX_TOOL_NAME_CHARS = 120


def offered_tools(names: Iterable[object]) -> list[str]:
    """``names`` as a form keeps them: printable, each cut, at most ``MAX_OFFERED_TOOLS``.

    Anything but a string (a stored row written by hand) is left out.
    """
    kept: list[str] = []
    for name in names:
        if len(kept) >= MAX_OFFERED_TOOLS:
            break
        shown = " ".join(printable(name).split()) if isinstance(name, str) else ""
        if shown:
            kept.append(
                shown
                if len(shown) <= MAX_TOOL_NAME_CHARS
                else shown[: MAX_TOOL_NAME_CHARS - 1] + "…"
            )
    return kept


def link_words(url: str) -> str:
    """What the terminal says of a link to open, as the web page says it: where it leads, then it.

    The address is only shown (never opened by aah): the person reads its
    host and copies it into a browser if they trust it.
    """
    host = printable(urlsplit(url).hostname or "") or "an unnamed host"
    return (
        f"It asks you to open this address yourself (it leads to {host}); copy it into"
        f" your browser if you trust it:\n{printable(url)}"
    )


def _tool_names(value: Any) -> Any:
    """A stored list of tool names, bounded; anything else (an older row) reads as none."""
    return offered_tools(value) if isinstance(value, list) else []


class ElicitationRequest(BaseModel):
    """An MCP server's question for the user, as the desk shows it (context version 1).

    Attributes:
        asker: The server's name, shown as who asks.
        message: What the server says to the person.
        mode: ``form`` (fields to fill) or ``url`` (a link to open, then "done").
        fields: The form's fields, in the schema's order.
        url: The link to open (URL mode); never opened automatically.
        elicitation_id: The server's id of a URL-mode elicitation.
        tools: The tools the asking agent was offered when the form came
            (names, bounded by ``offered_tools``); empty for a row stored
            before aah kept them, or an agent aah does not run.
    """

    version: Literal[1] = 1
    kind: Literal["elicitation"] = "elicitation"
    asker: str
    message: str
    mode: ElicitationMode
    fields: list[ElicitationField] = Field(default_factory=list)
    url: str | None = None
    elicitation_id: str | None = None
    tools: Annotated[list[str], BeforeValidator(_tool_names)] = Field(default_factory=list)

    @classmethod
    def from_params(cls, asker: str, params: Mapping[str, Any]) -> ElicitationRequest:
        """The request a server's ``elicitation/create`` params describe.

        Raises:
            ElicitationRefused: it is not one aah shows; the message says why in one line.
                Nothing else is raised, whatever ``params`` holds.
        """
        if not isinstance(params, Mapping):
            raise ElicitationRefused(f"{asker} sent an elicitation whose params are not an object")
        meta = params.get("_meta")
        if isinstance(meta, Mapping) and UNREADABLE_KEY in meta:
            why = shown_line(meta[UNREADABLE_KEY]) or "no reason given"
            raise ElicitationRefused(f"{asker}'s elicitation could not be read: {why}")
        mode = params.get("mode") or "form"
        message = params.get("message")
        if not isinstance(message, str):
            raise ElicitationRefused(f"{asker} sent an elicitation without a message")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ElicitationRefused(
                f"{asker}'s elicitation message is over {MAX_MESSAGE_CHARS:,} characters"
            )
        message = printable(message)
        if mode == "url":
            url = _checked_url(asker, params.get("url"))
            found_id = params.get("elicitationId", params.get("elicitation_id"))
            return cls(
                asker=asker, message=message, mode="url", url=url,
                elicitation_id=_elicitation_id(found_id),
            )  # fmt: skip
        if mode != "form":
            raise ElicitationRefused(
                f"{asker} asked in mode {shown_value(mode)}: aah knows form, url"
            )
        schema = params.get("requestedSchema", params.get("requested_schema"))
        return cls(asker=asker, message=message, mode="form", fields=form_fields(asker, schema))

    def field(self, name: str) -> ElicitationField | None:
        """The field called ``name``, if the form has one."""
        return next((f for f in self.fields if f.name == name), None)


class ElicitationResult(BaseModel):
    """What the person did: accept (with the form's content), decline or cancel.

    Attributes:
        action: ``accept``, ``decline`` or ``cancel``, as the protocol names them.
        content: The form's values when accepted in form mode; None otherwise.
        answered_by: Who answered (a person, ``oracle``, ``deadline-fallback``...).
        seconds: How long the answer took.
        why: Why aah answered for the person (a refused request, a deadline), if it did.
    """

    action: ElicitationAction
    content: dict[str, FieldValue] | None = None
    answered_by: str = ""
    seconds: float = 0.0
    why: str = ""

    def wire(self) -> dict[str, Any]:
        """The result as the server receives it (``ElicitResult``)."""
        if self.action == "accept" and self.content is not None:
            return {"action": "accept", "content": dict(self.content)}
        return {"action": self.action}


def _elicitation_id(found: Any) -> str | None:
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    return shown_line(str(found) if isinstance(found, str) else shown_value(found), MAX_LABEL_CHARS)


def _checked_url(asker: str, url: Any) -> str:
    if not isinstance(url, str) or not url:
        raise ElicitationRefused(f"{asker} asked to open a link but gave none")
    if len(url) > MAX_URL_CHARS:
        raise ElicitationRefused(f"{asker}'s link is over {MAX_URL_CHARS:,} characters")
    try:
        parts = urlsplit(url)
    except ValueError:  # "https://[": a bracket that opens no IPv6 address
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.netloc or not url.isprintable():
        raise ElicitationRefused(f"{asker}'s link {shown_value(url)} is not an http(s) address")
    return url


def check_content(request: ElicitationRequest, content: Mapping[str, Any]) -> dict[str, FieldValue]:
    """``content`` checked against ``request``'s form: every value of its field's kind and bounds.

    Fields left out stay out (unless required); a value for a field the form
    does not have is refused, as is any value out of its bounds.

    Raises:
        ContentInvalid: one line naming the field and what to give instead.
    """
    if request.mode != "form":
        raise ContentInvalid("a link's result has no content: accept says the person is done")
    return check_fields(request.fields, content)


def stored_answer(result: ElicitationResult) -> str:
    """How a face writes ``result`` into a request's answer: its JSON, the one encoding."""
    return result.model_dump_json(include={"action", "content"}, exclude_none=True)


def read_stored_answer(
    request: ElicitationRequest, text: str | None, *, declined: bool
) -> ElicitationResult:
    """The result a stored answer holds (see :func:`stored_answer`).

    A declined request, an answer that is not a result, or content that does
    not fit the form reads as a decline, saying why: the server never gets
    content its form did not ask for.
    """
    if declined:
        return ElicitationResult(action="decline")
    try:
        found = ElicitationResult.model_validate_json(text or "")
    except ValueError:
        return ElicitationResult(action="decline", why="the stored answer is not a result")
    if found.action != "accept" or request.mode == "url":
        return ElicitationResult(action=found.action)
    try:
        content = check_content(request, found.content or {})
    except ContentInvalid as exc:
        return ElicitationResult(action="decline", why=f"the answer did not fit the form: {exc}")
    return ElicitationResult(action="accept", content=content)
