"""Checks a tool call passes before it runs (ToolScan patterns, science.md §4).

A call that fails a check sends no request. The agent instead gets feedback
that names the problem and the valid choices, so it can correct itself; the
feedback texts are prompt files (``aah/tools/prompts/check_*.md``).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ValidationError

from aah.tools.calls.arguments import arguments_model
from aah.tools.prompts import tool_prompt
from aah.tools.spec import ParameterSpec

CheckCode = Literal["ok", "IFE", "IFN", "IAN", "IAT", "IAV", "RAC"]

_MAX_LISTED_TOOLS = 40


class CheckResult(NamedTuple):
    """The verdict on one call: ``ok`` or an error-pattern code, with feedback."""

    code: CheckCode
    feedback: str = ""

    @property
    def ok(self) -> bool:
        """Whether the call may run."""
        return self.code == "ok"


def canonical_call(name: str, arguments: Mapping[str, Any]) -> str:
    """One string per distinct call, to spot exact repeats.

    The arguments are hashed: the string is checkpointed with the session,
    and arguments may hold credentials.
    """
    text = json.dumps(arguments, sort_keys=True, default=str)
    return f"{name}:{hashlib.sha256(text.encode()).hexdigest()}"


def describe_parameters(parameters: Sequence[ParameterSpec]) -> str:
    """``name (type, required), ...`` for feedback messages."""
    if not parameters:
        return "none"
    return ", ".join(f"{p.name} ({p.type}{', required' if p.required else ''})" for p in parameters)


def enum_problem(parameters: Sequence[ParameterSpec], arguments: Mapping[str, Any]) -> str | None:
    """One line naming the first argument outside its parameter's enum, or None.

    The call checks leave enums to the API (a model's wrong value is the
    API's to refuse); a person's edit of a call waiting for approval is
    checked against them before it is sent.
    """
    for parameter in parameters:
        if not parameter.enum or parameter.name not in arguments:
            continue
        value = arguments[parameter.name]
        if value not in parameter.enum:
            choices = ", ".join(str(choice)[:30] for choice in parameter.enum[:8])
            more = ", ..." if len(parameter.enum) > 8 else ""
            shown = str(value)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            return f"{parameter.name}: choose one of {choices}{more}, not “{shown}”"
    return None


def arguments_models(
    tools: Mapping[str, Sequence[ParameterSpec]],
) -> dict[str, type[BaseModel]]:
    """Each tool's arguments model, by tool name."""
    return {name: arguments_model(name, list(params)) for name, params in tools.items()}


class CallChecker:
    """Checks calls against the offered tools; remembers calls for repeats.

    One checker lives as long as one session, since an exact repeat is judged
    against the calls made earlier in that session.
    """

    def __init__(
        self,
        tools: Mapping[str, Sequence[ParameterSpec]],
        seen: Sequence[str] = (),
        *,
        models: Mapping[str, type[BaseModel]] | None = None,
        names_only: Collection[str] = (),
    ) -> None:
        """Check calls against ``tools`` (name to parameters).

        Args:
            tools: the offered tools and their parameters.
            seen: canonical forms of calls already run in this session.
            models: the tools' arguments models (``arguments_models``), when
                the caller keeps them between checkers.
            names_only: tools whose calls are only checked for being offered
                and readable: they judge their own arguments, and a repeat
                runs again (a stateful API, where the same call twice is two acts).
        """
        self._tools = {name: list(params) for name, params in tools.items()}
        self._models = dict(models) if models is not None else arguments_models(self._tools)
        self._seen = set(seen)
        self._names_only = frozenset(names_only)

    def check(self, name: str, arguments: Any) -> CheckResult:
        """Judge one call; an ``ok`` call is remembered for repeat detection."""
        parsed = _parse_arguments(arguments)
        if parsed is None:
            return CheckResult("IFE", tool_prompt("check_ife").render(name=name))
        if name not in self._tools:
            return CheckResult("IFN", self._unknown_tool(name))
        if name in self._names_only:
            return CheckResult("ok")
        params = self._tools[name]
        verdict = self._check_arguments(name, params, parsed)
        if not verdict.ok:
            return verdict
        key = canonical_call(name, parsed)
        if key in self._seen:
            return CheckResult("RAC", tool_prompt("check_rac").render(name=name))
        self._seen.add(key)
        return CheckResult("ok")

    def _unknown_tool(self, name: str) -> str:
        names = sorted(self._tools)
        listed = ", ".join(names[:_MAX_LISTED_TOOLS])
        more = (
            f" and {len(names) - _MAX_LISTED_TOOLS} more" if len(names) > _MAX_LISTED_TOOLS else ""
        )
        return tool_prompt("check_ifn").render(name=name, tools=f"{listed}{more}")

    def _check_arguments(
        self, name: str, params: list[ParameterSpec], arguments: dict[str, Any]
    ) -> CheckResult:
        valid = describe_parameters(params)
        known = {p.name for p in params}
        unknown = sorted(set(arguments) - known)
        if unknown:
            named = ", ".join(map(repr, unknown))
            return CheckResult(
                "IAN", tool_prompt("check_ian").render(name=name, unknown=named, valid=valid)
            )
        try:
            self._models[name].model_validate(arguments)
        except ValidationError as exc:
            return _validation_feedback(name, exc, valid)
        # A required text given as spaces only says nothing: an ask_human
        # question of "   " would reach a person who cannot answer it.
        blank = [
            p.name
            for p in params
            if p.required and p.type == "string" and _is_blank(arguments.get(p.name))
        ]
        if blank:
            feedback = tool_prompt("check_blank").render(
                name=name, blank=", ".join(blank), valid=valid
            )
            return CheckResult("IAV", feedback)
        return CheckResult("ok")


def _is_blank(value: Any) -> bool:
    # Zero-width characters (format controls) show nothing either.
    return isinstance(value, str) and all(
        char.isspace() or unicodedata.category(char) == "Cf" for char in value
    )


def _validation_feedback(name: str, exc: ValidationError, valid: str) -> CheckResult:
    missing = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "missing"]
    if missing:
        left_out = ", ".join(missing)
        return CheckResult(
            "IAV", tool_prompt("check_iav").render(name=name, missing=left_out, valid=valid)
        )
    wrong = [f"{e['loc'][0]} ({e['msg']})" for e in exc.errors() if e["loc"]]
    feedback = tool_prompt("check_iat").render(name=name, wrong="; ".join(wrong), valid=valid)
    return CheckResult("IAT", feedback)


def _parse_arguments(arguments: Any) -> dict[str, Any] | None:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    return arguments if isinstance(arguments, dict) else None
