"""What a probe of a model server found, and what aah does about each finding."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

N_ASKED = 3

ToolCallMode = Literal["native", "text", "ignored", "failed"]


class ProbeLine(BaseModel):
    """One row of the table: the check, what the server did, what aah will do."""

    check: str
    result: str
    action: str
    warning: bool = False


class ProbeReport(BaseModel):
    """What one server did with aah's probe requests (no secret in it).

    Attributes:
        role: The role whose endpoint was probed.
        base_url: The configured base URL, without credentials.
        model: The configured model name.
        reachable: Whether the server answered at all.
        missing_v1: The base URL lacks ``/v1`` (``/v1/models`` answered instead).
        error: Why probing stopped early, if it did.
        served_models: The ids ``/models`` lists.
        tool_calls: native ``tool_calls``; calls written as ``text``; tools
            ``ignored``; or the request ``failed``.
        tool_call_form: The text format of the calls (``hermes``, ``pythonic`` ...).
        tool_detail: The reply or error behind ``tool_calls``, shortened.
        n_returned: Choices returned when ``n=3`` was asked for (None: failed).
        reasoning: Whether reasoning text came with a reply (field or think tags).
        context_length: The context in tokens, when the server says it.
        context_source: Where ``context_length`` came from.
        concurrent: Whether two requests ran side by side (None: could not tell).
        single_seconds: One request's time in the concurrency check.
        pair_seconds: When the later of two simultaneous requests ended.
        latency_seconds: Time of a short (8-token) request.
        max_connections: The cap on requests in flight already configured
            (``AAH_MAX_CONNECTIONS``), which decides what aah does about a
            server that runs one request at a time.
        checked_at: When the probe ran (UTC, ISO 8601).
    """

    role: str
    base_url: str
    model: str
    reachable: bool
    missing_v1: bool = False
    error: str | None = None
    served_models: list[str] = []
    tool_calls: ToolCallMode | None = None
    tool_call_form: str | None = None
    tool_detail: str | None = None
    n_returned: int | None = None
    reasoning: bool = False
    context_length: int | None = None
    context_source: Literal["models", "overflow"] | None = None
    concurrent: bool | None = None
    single_seconds: float | None = None
    pair_seconds: float | None = None
    latency_seconds: float | None = None
    max_connections: int | None = None
    checked_at: str = ""

    @property
    def n_honoured(self) -> bool | None:
        """Whether the server sent as many choices as ``n`` asked for."""
        return None if self.n_returned is None else self.n_returned == N_ASKED

    @property
    def tools_usable(self) -> bool:
        """Whether the model saw its tools (native or text calls came back)."""
        return self.tool_calls in ("native", "text")

    def lines(self) -> list[ProbeLine]:
        """The table rows, in the order the checks ran."""
        return probe_lines(self)


def probe_lines(report: ProbeReport) -> list[ProbeLine]:
    """What each check found and what aah will do about it."""
    setting = "AAH_BASE_URL" if report.role == "agent" else f"AAH_{report.role.upper()}_BASE_URL"
    if not report.reachable:
        return [
            ProbeLine(
                check="reachable",
                result=f"no: {report.error}",
                action=f"start the server or fix {setting}",
                warning=True,
            )
        ]
    rows = [_reachable_line(report, setting), _model_line(report)]
    rows += [_tools_line(report), _n_line(report), _reasoning_line(report)]
    rows += [_context_line(report), _concurrency_line(report), _latency_line(report)]
    return rows


def _reachable_line(report: ProbeReport, setting: str) -> ProbeLine:
    if report.missing_v1:
        return ProbeLine(
            check="reachable",
            result=f"yes, but the base URL lacks /v1 ({report.base_url}/v1/models answered)",
            action=f"set {setting}={report.base_url}/v1",
            warning=True,
        )
    if report.error:
        return ProbeLine(
            check="reachable",
            result=f"yes; {report.error}",
            action="check the key and the URL",
            warning=True,
        )
    return ProbeLine(check="reachable", result="yes", action="none needed")


def _model_line(report: ProbeReport) -> ProbeLine:
    listed = ", ".join(report.served_models[:3]) or "none listed"
    if report.served_models and report.model not in report.served_models:
        return ProbeLine(
            check="model",
            result=f"{report.model} is not listed (server lists {listed})",
            action="aah sends the configured name; set AAH_MODEL to a listed id",
            warning=True,
        )
    return ProbeLine(check="model", result=f"{report.model} ({listed})", action="none needed")


def _tools_line(report: ProbeReport) -> ProbeLine:
    if report.tool_calls == "native":
        return ProbeLine(
            check="tool calls",
            result=f"native tool_calls ({report.tool_detail})",
            action="aah reads the native calls",
        )
    if report.tool_calls == "text":
        return ProbeLine(
            check="tool calls",
            result=f"written as text, {report.tool_call_form} format",
            action="aah reads the calls from the text (one parser for every format)",
        )
    if report.tool_calls == "ignored":
        return ProbeLine(
            check="tool calls",
            result=f"TOOLS IGNORED: no call, answered {report.tool_detail!r}",
            action="a run would measure a model that never saw its tools: run with "
            "--tool-mode prompt (or auto), or serve the model with a chat format that "
            "renders tools (aah serve llamacpp/vllm)",
            warning=True,
        )
    return ProbeLine(
        check="tool calls",
        result=f"request failed: {report.tool_detail}",
        action="agent turns with tools fail the same way: fix the server's tool setup "
        "or run with --tool-mode prompt (or auto)",
        warning=True,
    )


def _n_line(report: ProbeReport) -> ProbeLine:
    if report.n_returned is None:
        return ProbeLine(
            check="n (several choices)",
            result="request failed",
            action="the grader sends one request per vote",
        )
    if report.n_honoured:
        return ProbeLine(
            check="n (several choices)",
            result=f"honoured ({report.n_returned} of {N_ASKED})",
            action="the grader asks for all votes in one request",
        )
    return ProbeLine(
        check="n (several choices)",
        result=f"ignored ({report.n_returned} of {N_ASKED})",
        action="the grader sends one request per vote",
    )


def _reasoning_line(report: ProbeReport) -> ProbeLine:
    if report.reasoning:
        return ProbeLine(
            check="reasoning",
            result="reasoning text (field or think tags) came with replies",
            action="aah splits it off every reply; raise the roles' max_tokens for thinking",
        )
    return ProbeLine(check="reasoning", result="none seen", action="none needed")


def _context_line(report: ProbeReport) -> ProbeLine:
    if report.context_length is None:
        return ProbeLine(
            check="context length",
            result="not reported",
            action="a prompt over the limit fails with the server's own message",
        )
    source = "/models" if report.context_source == "models" else "its overflow error"
    return ProbeLine(
        check="context length",
        result=f"{report.context_length:,} tokens (from {source})",
        action="a prompt over the limit fails with the server's own message",
    )


def _concurrency_line(report: ProbeReport) -> ProbeLine:
    timing = (
        f" (one {report.single_seconds:.2f} s, two at once {report.pair_seconds:.2f} s)"
        if report.single_seconds is not None and report.pair_seconds is not None
        else ""
    )
    if report.concurrent is None:
        reason = "too fast to tell" if report.single_seconds is not None else "request failed"
        return ProbeLine(
            check="concurrent requests",
            result=f"unknown, {reason}{timing}",
            action="none needed",
        )
    if report.concurrent:
        return ProbeLine(
            check="concurrent requests",
            result=f"served side by side{timing}",
            action="aah may send requests in parallel (--concurrency)",
        )
    if report.max_connections == 1:
        return ProbeLine(
            check="concurrent requests",
            result=f"one at a time{timing}",
            action="none needed: AAH_MAX_CONNECTIONS=1 sends one at a time",
        )
    return ProbeLine(
        check="concurrent requests",
        result=f"one at a time{timing}",
        action="set AAH_MAX_CONNECTIONS=1 so requests are not piled up and timed out",
        warning=True,
    )


def _latency_line(report: ProbeReport) -> ProbeLine:
    if report.latency_seconds is None:
        return ProbeLine(check="latency", result="request failed", action="check the server's log")
    return ProbeLine(
        check="latency",
        result=f"{report.latency_seconds:.2f} s for 8 tokens",
        action="none needed",
    )
