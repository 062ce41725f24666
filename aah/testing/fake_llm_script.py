"""What the fake model says: scripts of replies or rules, and the player that runs them.

A script is data, loaded from JSON or YAML or built in Python. It is either a
list of replies played in order, or an ordered table of rules whose conditions
look at the request. The HTTP layer (`aah.testing.fake_llm`) asks a
`ScriptPlayer` for the next reply and only shapes it as an OpenAI response.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from aah.errors import AahError

DEFAULT_MODEL = "fake-model"

# A script miss is a bug in the test, not a server fault: 400 makes the
# client fail at once instead of retrying a 5xx with backoff.
NO_REPLY_STATUS = 400

Role = Literal["system", "developer", "user", "assistant", "tool"]


class ScriptedToolCall(BaseModel):
    """One tool call the fake model makes; ``id`` is generated when left out.

    ``arguments`` given as a string is sent as it is: a call whose JSON is
    broken or was cut off, as real servers send them.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class ScriptedError(BaseModel):
    """An HTTP error answered instead of a completion (e.g. 429 or 500).

    ``type`` and ``code`` default to what OpenAI sends for the status.
    ``retry_after_ms`` is sent as the ``retry-after-ms`` header, which the
    openai client obeys; the small default keeps retry tests fast, and
    ``null`` leaves the client to its own backoff.
    """

    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=500, ge=400, le=599)
    message: str = "The fake server had an error while processing your request."
    type: str | None = None
    code: str | None = None
    retry_after_ms: int | None = Field(default=10, ge=0)


class Reply(BaseModel):
    """One step of the fake model: text, tool calls, an error, or n alternatives.

    ``text`` and ``tool_calls`` may come together (an assistant message with
    both content and calls); ``error`` and ``choices`` stand alone. A bare
    string is accepted wherever a reply is expected and means ``text``.
    """

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tool_calls: list[ScriptedToolCall] | None = None
    # Sent as ``reasoning_content``, as vLLM's and llama.cpp's reasoning parsers do.
    reasoning: str | None = None
    error: ScriptedError | None = None
    choices: list[Reply] | None = None
    finish_reason: str | None = None
    delay_ms: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _accept_bare_text(cls, value: Any) -> Any:
        return {"text": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_kind(self) -> Reply:
        has_message = self.text is not None or self.tool_calls is not None
        kinds = [has_message, self.error is not None, self.choices is not None]
        if sum(kinds) != 1:
            raise ValueError("a reply needs exactly one of: text/tool_calls, error, choices")
        if self.choices is not None:
            if not self.choices:
                raise ValueError("'choices' must list at least one reply")
            if any(c.choices is not None or c.error is not None for c in self.choices):
                raise ValueError("each of 'choices' must be text and/or tool_calls")
        return self


class When(BaseModel):
    """Conditions over a request; all that are set must hold (none set: always).

    Text checks are case-insensitive substring tests on the messages' text.
    """

    model_config = ConfigDict(extra="forbid")

    last_message_contains: str | None = None
    any_message_contains: str | None = None
    system_contains: str | None = None
    has_tools: bool | None = None
    tool_offered: str | None = None
    last_role: Role | None = None
    tool_result_present: str | None = None
    last_tool_name: str | None = None
    model: str | None = None

    def matches(self, view: RequestView) -> bool:
        """Whether the request seen through ``view`` meets every set condition."""
        checks: list[tuple[object, Callable[[Any], bool]]] = [
            (self.last_message_contains, lambda v: _contains(view.last_text, v)),
            (self.any_message_contains, lambda v: any(_contains(t, v) for t in view.texts)),
            (self.system_contains, lambda v: any(_contains(t, v) for t in view.system_texts)),
            (self.has_tools, lambda v: bool(view.tool_names) == v),
            (self.tool_offered, lambda v: v in view.tool_names),
            (self.last_role, lambda v: view.last_role == v),
            (self.tool_result_present, lambda v: v in view.tool_results),
            (self.last_tool_name, lambda v: bool(view.tool_results) and view.tool_results[-1] == v),
            (self.model, lambda v: view.model == v),
        ]
        return all(check(expected) for expected, check in checks if expected is not None)


class Rule(BaseModel):
    """Reply with ``reply`` when ``when`` holds, at most ``times`` times."""

    model_config = ConfigDict(extra="forbid")

    when: When = Field(default_factory=When)
    reply: Reply
    times: int | None = Field(default=None, ge=1)


class Script(BaseModel):
    """A list of replies played in order, or a table of rules (exactly one).

    Attributes:
        replies: Played one per step. When they run out, ``exhausted`` decides:
            ``"repeat_last"`` (the default) keeps answering with the last reply,
            ``"error"`` answers HTTP 400 so an unexpected extra call shows up.
        rules: Tried in order for each step; the first whose ``when`` holds and
            whose ``times`` is not used up wins. No match answers HTTP 400.
        models: Model names the server knows. When set, a request for another
            model gets 404 ``model_not_found``; when unset, any name is served
            and ``GET /v1/models`` lists ``fake-model``.
    """

    model_config = ConfigDict(extra="forbid")

    replies: list[Reply] | None = None
    rules: list[Rule] | None = None
    exhausted: Literal["repeat_last", "error"] = "repeat_last"
    models: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_bare_list(cls, value: Any) -> Any:
        return {"replies": value} if isinstance(value, list) else value

    @model_validator(mode="after")
    def _replies_or_rules(self) -> Script:
        if (self.replies is None) == (self.rules is None):
            raise ValueError("a script needs exactly one of 'replies' or 'rules'")
        if not (self.replies or self.rules):
            raise ValueError("a script needs at least one reply or rule")
        return self

    def model_names(self) -> list[str]:
        """The names ``GET /v1/models`` lists."""
        return list(self.models) if self.models else [DEFAULT_MODEL]


ScriptLike = Script | Sequence[Reply | str | Mapping[str, Any]] | Mapping[str, Any] | Path


def as_script(value: ScriptLike) -> Script:
    """Turn a script, a list of replies, a script dict or a file path into a `Script`."""
    if isinstance(value, Script):
        return value
    if isinstance(value, Path):
        return load_script(value)
    if isinstance(value, str):
        # A string is a sequence too; reading it as one reply per character helps no one.
        raise TypeError("pass a Path for a script file, or a list of replies")
    if isinstance(value, Mapping):
        return Script.model_validate(dict(value))
    return Script(replies=[_as_reply(item) for item in value])


def _as_reply(item: Reply | str | Mapping[str, Any]) -> Reply:
    return item if isinstance(item, Reply) else Reply.model_validate(item)


def load_script(path: Path) -> Script:
    """Read a script from a ``.json`` or ``.yaml``/``.yml`` file.

    Raises:
        AahError: The file is missing, does not parse, or is not a valid script.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AahError(f"cannot read fake-LLM script {path}: {exc.strerror}") from exc
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise AahError(f"fake-LLM script {path} does not parse: {_parse_problem(exc)}") from exc
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "top level"
        raise AahError(f"fake-LLM script {path} is invalid at {where}: {problem['msg']}") from exc


def _parse_problem(exc: json.JSONDecodeError | yaml.YAMLError) -> str:
    """One line saying what is wrong and where, from a JSON or YAML parse error."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"{exc.problem} at line {exc.problem_mark.line + 1}"
    return str(exc).splitlines()[0]


def text_reply(text: str) -> Reply:
    """A reply that says ``text``."""
    return Reply(text=text)


def tool_reply(name: str, arguments: Mapping[str, Any] | None = None) -> Reply:
    """A reply that calls one tool with ``arguments``."""
    return Reply(tool_calls=[ScriptedToolCall(name=name, arguments=dict(arguments or {}))])


def error_reply(status: int, message: str | None = None) -> Reply:
    """A reply that fails with HTTP ``status`` (e.g. 429 or 500)."""
    error = ScriptedError(status=status)
    if message is not None:
        error.message = message
    return Reply(error=error)


class ScriptPlayer:
    """Hands out the script's replies one step at a time; safe across threads."""

    def __init__(self, script: Script) -> None:
        """Start at the first reply with every rule's ``times`` unused."""
        self.script = script
        self._lock = threading.Lock()
        self._position = 0
        self._rule_uses = [0] * len(script.rules or [])

    def next_reply(self, request: Mapping[str, Any]) -> Reply:
        """The reply for one step of ``request``, advancing the script."""
        with self._lock:
            return self._step(request)

    def choices_for(self, request: Mapping[str, Any], n: int = 1) -> list[Reply] | ScriptedError:
        """``n`` alternatives for one request (its ``n`` field), or the error to answer.

        The script is stepped until ``n`` alternatives are gathered: a reply
        with ``choices`` gives several at once, extras beyond ``n`` are
        dropped, and an error at any step fails the whole request. The steps
        of one request are never interleaved with another's.
        """
        gathered: list[Reply] = []
        with self._lock:
            while len(gathered) < n:
                reply = self._step(request)
                if reply.error is not None:
                    return reply.error
                gathered.extend(reply.choices or [reply])
        return gathered[:n]

    def _step(self, request: Mapping[str, Any]) -> Reply:
        if self.script.replies is not None:
            return self._next_in_list(self.script.replies)
        return self._first_matching_rule(self.script.rules or [], request)

    def _next_in_list(self, replies: list[Reply]) -> Reply:
        index = self._position
        self._position += 1
        if index < len(replies):
            return replies[index]
        if self.script.exhausted == "repeat_last":
            return replies[-1]
        return _no_reply(f"all {len(replies)} scripted replies were used")

    def _first_matching_rule(self, rules: list[Rule], request: Mapping[str, Any]) -> Reply:
        view = RequestView(request)
        for index, rule in enumerate(rules):
            used_up = rule.times is not None and self._rule_uses[index] >= rule.times
            if not used_up and rule.when.matches(view):
                self._rule_uses[index] += 1
                return rule.reply
        return _no_reply(f"no rule matched; last message: {view.last_text[:80]!r}")


def _no_reply(reason: str) -> Reply:
    message = f"fake-llm script has no reply for this request ({reason})"
    error = ScriptedError(
        status=NO_REPLY_STATUS,
        message=message,
        type="invalid_request_error",
        code="fake_llm_no_reply",
        retry_after_ms=None,
    )
    return Reply(error=error)


def _contains(text: str, needle: str) -> bool:
    return needle.casefold() in text.casefold()


class RequestView:
    """Read-only answers about a chat-completion request body, for rule matching."""

    def __init__(self, request: Mapping[str, Any]) -> None:
        """Index the messages and tools of ``request`` once."""
        self.model = request.get("model")
        raw_messages = request.get("messages")
        self.messages: list[Mapping[str, Any]] = [
            m
            for m in (raw_messages if isinstance(raw_messages, list) else [])
            if isinstance(m, dict)
        ]
        self.texts = [message_text(m) for m in self.messages]
        self.system_texts = [
            text
            for message, text in zip(self.messages, self.texts, strict=True)
            if message.get("role") in ("system", "developer")
        ]
        self.tool_names = _offered_tool_names(request.get("tools"))
        self.tool_results = _tool_result_names(self.messages)

    @property
    def last_text(self) -> str:
        """Text of the last message, or ``""`` when there are none."""
        return self.texts[-1] if self.texts else ""

    @property
    def last_role(self) -> str | None:
        """Role of the last message."""
        return str(self.messages[-1].get("role")) if self.messages else None


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message, whether its content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def _offered_tool_names(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return []
    functions = (t.get("function") for t in tools if isinstance(t, dict))
    return [str(f.get("name")) for f in functions if isinstance(f, dict)]


def _tool_result_names(messages: list[Mapping[str, Any]]) -> list[str]:
    """Tool names of the tool messages, in order.

    A tool message names only its call id, so the name is looked up in the
    assistant messages' tool calls; a ``name`` field on the message wins.
    """
    names_by_call_id: dict[str, str] = {}
    results: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                names_by_call_id[str(call.get("id"))] = str(function.get("name"))
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            results.append(str(message.get("name") or names_by_call_id.get(call_id, "")))
    return results
