"""Fault mode: chosen tools fail the way dead APIs fail.

A plan is text such as ``"weather__forecast=404,coinlore__get_ticker=timeout"``.
Each entry is ``NAME=KIND``; ``NAME`` is a qualified tool name, a tool name
(all its endpoints), or a shell pattern (``*`` is every tool). An exact name
wins over a pattern; among patterns the first listed wins. Kinds:

- ``404``: HTTP 404 with a small JSON "Not Found" body.
- ``500``: HTTP 500 with a small JSON "Internal Server Error" body.
- ``timeout``: no response; the text is the one a real timeout produces.
- ``refused``: connection refused; the text is the one a real refusal produces.
- ``deprecated``: HTTP 410 Gone with a body saying the endpoint was retired.
- ``empty``: HTTP 200 with an empty body.

The agent reads exactly what a real failure of that kind would show; nothing
in ``text`` mentions injection. ``error`` and ``fault`` say what was injected,
and ``ok`` is ``False`` for every fault, ``empty`` included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal, get_args

from aah.errors import AahError
from aah.tools.http.request import RequestError, build_request, full_url
from aah.tools.http.results import (
    ToolResult,
    describe_body,
    failure_result,
    refused_message,
    response_result,
    timeout_message,
)
from aah.tools.spec import EndpointSpec, safe_name

if TYPE_CHECKING:
    from aah.tools.http.modes import Executor

FaultKind = Literal["404", "500", "timeout", "refused", "deprecated", "empty"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
_ENTRY_SEPARATORS = re.compile(r"[,;\s]+")

# Bodies like the ones real APIs send for these statuses: short JSON errors.
_STATUS_BODIES: dict[str, tuple[int, dict[str, Any]]] = {
    "404": (404, {"error": "Not Found", "message": "The requested resource was not found."}),
    "500": (500, {"error": "Internal Server Error", "message": "An unexpected error occurred."}),
    "deprecated": (
        410,
        {
            "error": "Gone",
            "message": "This endpoint is deprecated and has been removed from the API.",
        },
    ),
}


@dataclass(frozen=True)
class FaultRule:
    """One plan entry: which tools (name or pattern) fail, and how."""

    pattern: str
    kind: FaultKind

    def matches(self, spec: EndpointSpec) -> bool:
        """Whether the rule covers ``spec`` by qualified name, tool name or pattern."""
        names = (spec.qualified_name, safe_name(spec.tool))
        return any(fnmatchcase(name, self.pattern) for name in names)

    @property
    def exact(self) -> bool:
        """Whether the rule names a tool outright rather than by pattern."""
        return not any(ch in self.pattern for ch in "*?[")


@dataclass(frozen=True)
class FaultPlan:
    """Which tools fail and how; parse it with :meth:`FaultPlan.parse`."""

    rules: tuple[FaultRule, ...] = ()

    @classmethod
    def parse(cls, text: str | Sequence[str]) -> FaultPlan:
        """Read a plan from text, or from several ``--fault`` values.

        Args:
            text: ``NAME=KIND`` entries separated by commas, semicolons or
                spaces; a sequence of such strings is joined.

        Returns:
            The plan.

        Raises:
            AahError: An entry is malformed, names an unknown kind, or gives
                one name two different kinds.
        """
        joined = text if isinstance(text, str) else ",".join(text)
        rules: dict[str, FaultRule] = {}
        for entry in filter(None, _ENTRY_SEPARATORS.split(joined)):
            rule = _parse_entry(entry)
            earlier = rules.get(rule.pattern)
            if earlier is not None and earlier.kind != rule.kind:
                raise AahError(
                    f"fault plan gives {rule.pattern} two kinds ({earlier.kind}, {rule.kind}): "
                    "keep one"
                )
            rules[rule.pattern] = rule
        return cls(tuple(rules.values()))

    def kind_for(self, spec: EndpointSpec) -> FaultKind | None:
        """The fault ``spec`` gets, or ``None`` when it should work normally."""
        matching = [rule for rule in self.rules if rule.matches(spec)]
        exact = [rule for rule in matching if rule.exact]
        chosen = exact or matching
        return chosen[0].kind if chosen else None

    def __str__(self) -> str:
        return ",".join(f"{rule.pattern}={rule.kind}" for rule in self.rules)


def _parse_entry(entry: str) -> FaultRule:
    name, sep, kind = entry.partition("=")
    name, kind = name.strip(), kind.strip().lower()
    if not sep or not name or kind not in FAULT_KINDS:
        raise AahError(
            f"bad fault {entry!r}: write TOOL=KIND with KIND one of {', '.join(FAULT_KINDS)} "
            "(TOOL may be * for all tools)"
        )
    return FaultRule(name, kind)  # type: ignore[arg-type]  # checked against FAULT_KINDS


def fault_result(
    kind: FaultKind, *, url: str, host: str, timeout: float, max_bytes: int
) -> ToolResult:
    """The result a dead API of this kind produces, marked as an injected fault."""
    if kind == "timeout":
        message = timeout_message(host, timeout)
        result = failure_result(message, url=url, latency_ms=0.0, mode="fault")
    elif kind == "refused":
        result = failure_result(refused_message(host), url=url, latency_ms=0.0, mode="fault")
    elif kind == "empty":
        body = describe_body(b"", "application/json", max_bytes=max_bytes)
        result = response_result(
            status=200, reason="", body=body, url=url, latency_ms=0.0, mode="fault"
        )
    else:
        status, payload = _STATUS_BODIES[kind]
        content = json.dumps(payload).encode()
        body = describe_body(content, "application/json", max_bytes=max_bytes)
        result = response_result(
            status=status, reason="", body=body, url=url, latency_ms=0.0, mode="fault"
        )
    what = result.error or "HTTP 200 OK with an empty body"
    return result.model_copy(
        update={"ok": False, "fault": kind, "error": f"injected fault {kind}: {what}"}
    )


class FaultExecutor:
    """Makes the tools in a plan fail; hands every other call to a base executor.

    Args:
        plan: Which tools fail and how.
        base: The executor for tools outside the plan (mock by default).
        timeout: The timeout a ``timeout`` fault reports, as a real one would.
        max_bytes: Size cap for fault bodies, as for real ones.
    """

    mode = "fault"

    def __init__(
        self, plan: FaultPlan, base: Executor, *, timeout: float, max_bytes: int = 200_000
    ) -> None:
        self.plan = plan
        self.base = base
        self.timeout = timeout
        self.max_bytes = max_bytes

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """A fault if the plan names ``spec``, else the base executor's answer."""
        kind = self.plan.kind_for(spec)
        if kind is None:
            return self.base.call(spec, arguments)
        try:
            url = full_url(build_request(spec, arguments))
        except RequestError as exc:
            # A call that could not be sent fails the same way in every mode.
            return failure_result(str(exc), url=spec.url_template, latency_ms=0.0, mode=self.mode)
        return fault_result(
            kind, url=url, host=spec.host, timeout=self.timeout, max_bytes=self.max_bytes
        )

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """A fault at once, or the base executor's asynchronous answer."""
        if self.plan.kind_for(spec) is None:
            return await self.base.acall(spec, arguments)
        return self.call(spec, arguments)

    def close(self) -> None:
        """Close the base executor."""
        self.base.close()
