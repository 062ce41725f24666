"""What a model server does with aah's requests, found out before a run.

Servers that all call themselves OpenAI-compatible differ in ways that
decide whether a run measures anything: some never show the model its tools
(llama.cpp's plain chat formats), some return calls as text, some ignore
``n``, some serve one request at a time, some think aloud before answering.
``probe_server`` sends a handful of small requests through aah's own client
and returns a ``ProbeReport``: what was seen, and what aah will do about it.
A run can store the report in its manifest (it holds no secret).
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import re
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from aah.llm.client import ChatClient
from aah.llm.config import DEFAULT_BASE_URL, ModelConfig
from aah.llm.errors import ModelError, ModelStatusError, ModelTimeoutError
from aah.llm.probe_report import N_ASKED, ProbeReport
from aah.llm.reply import MAX_CALL_TOKENS, token_count
from aah.llm.text_calls import parse_text_tool_calls
from aah.llm.transport import read_limited
from aah.storable import storable

PROBE_TOOL_NAME = "get_weather"
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": PROBE_TOOL_NAME,
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
# Words enough to overflow any context a server on this machine is likely
# to have, yet rejected at once by a server that checks the prompt's length.
OVERFLOW_WORDS = 40_000
OVERFLOW_TIMEOUT = 20.0
# Two requests at once that end by 1.5x one request's time ran side by side.
CONCURRENT_RATIO = 1.5
TOO_FAST_TO_TELL = 0.02
_CONTEXT_SAID = re.compile(
    r"(?:maximum context length|context length|context window|n_ctx)\D{0,40}?(\d[\d,]*)",
    re.IGNORECASE,
)
_CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


async def probe_server(config: ModelConfig, *, overflow_probe: bool | None = None) -> ProbeReport:
    """Probe ``config``'s server with small requests through aah's own client.

    Args:
        config: The role's model settings.
        overflow_probe: Send a prompt too long for the context to read the
            server's limit from its refusal, when ``/models`` does not say it.
            Default: only for a server on this machine or a private network
            (a hosted API is not sent 40,000 words).
    """
    base = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
    report = ProbeReport(
        role=config.role,
        base_url=base,
        model=config.model,
        reachable=False,
        max_connections=config.max_connections,
        checked_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    async with aiohttp.ClientSession(
        headers=_headers(config), timeout=aiohttp.ClientTimeout(total=config.timeout)
    ) as session:
        listing = await _list_models(session, base, report, config.max_reply_bytes)
        if not report.reachable:
            return report
        if report.missing_v1:
            base += "/v1"
            config = config.model_copy(update={"base_url": base})
        if listing is not None:
            _read_listing(listing, report)
        client = ChatClient(config, temperature=0.0)
        try:
            await _probe_tools(client, report)
            await _probe_latency(client, report)
            await _probe_n(client, report)
            await _probe_concurrency(session, base, config, report)
            if report.context_length is None and (
                overflow_probe if overflow_probe is not None else _nearby(base)
            ):
                await _probe_overflow(config, report)
        finally:
            await client.aclose()
    return report


def _headers(config: ModelConfig) -> dict[str, str]:
    if config.username is not None or config.password is not None:
        password = config.password.get_secret_value() if config.password else ""
        pair = f"{config.username or ''}:{password}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    return {"Authorization": f"Bearer {config.api_key.get_secret_value()}"}


async def _list_models(
    session: aiohttp.ClientSession, base: str, report: ProbeReport, max_bytes: int
) -> dict[str, Any] | None:
    """GET ``/models`` (then ``/v1/models`` if the base URL lacks it), up to ``max_bytes``."""
    candidates = [base + "/models"]
    if not base.endswith("/v1"):
        candidates.append(base + "/v1/models")
    for index, url in enumerate(candidates):
        try:
            async with session.get(url) as response:
                status = response.status
                read = await read_limited(response, max_bytes) if status == 200 else None
            body = storable(json.loads(read.data)) if read is not None and read.whole else None
        except (aiohttp.ClientError, TimeoutError) as exc:
            report.error = f"cannot reach {url} ({_said(exc)})"
            return None
        except (ValueError, RecursionError):
            status, body = 200, None
        report.reachable = True
        if status == 200:
            report.missing_v1 = index == 1
            report.error = None
            return body if isinstance(body, dict) else None
        report.error = f"GET {url} answered HTTP {status}"
        if status in (401, 403):
            return None
    return None


def _read_listing(listing: dict[str, Any], report: ProbeReport) -> None:
    entries = [e for e in listing.get("data") or [] if isinstance(e, dict)]
    report.served_models = [str(e["id"]) for e in entries if "id" in e]
    chosen = next(
        (e for e in entries if e.get("id") == report.model), entries[0] if entries else {}
    )
    meta = chosen.get("meta")
    for source in (chosen, meta if isinstance(meta, dict) else {}):
        for field in (*_CONTEXT_FIELDS, "n_ctx"):
            value = token_count(source.get(field))
            if value:
                report.context_length, report.context_source = value, "models"
                return


def _probe_messages() -> list[BaseMessage]:
    # llama.cpp's chatml-function-calling shows the tools only inside a system message.
    return [
        SystemMessage("You are a helpful assistant. Use a tool when one can answer."),
        HumanMessage("What is the weather in Paris right now? Use the tool."),
    ]


async def _probe_tools(client: ChatClient, report: ProbeReport) -> None:
    try:
        reply = await client.complete(_probe_messages(), [PROBE_TOOL], max_tokens=64)
    except ModelError as exc:
        said = exc.server_message if isinstance(exc, ModelStatusError) else ""
        report.tool_calls = "failed"
        report.tool_detail = _short(said or str(exc), 160)
        return
    report.reasoning = report.reasoning or bool(reply.additional_kwargs.get("reasoning"))
    if reply.tool_calls or reply.invalid_tool_calls:
        report.tool_calls = "native"
        names = [c["name"] for c in reply.tool_calls] + [
            str(c["name"]) for c in reply.invalid_tool_calls
        ]
        report.tool_detail = ", ".join(names)
        return
    text = reply.text
    parsed = parse_text_tool_calls(text, [PROBE_TOOL_NAME])
    report.tool_detail = _short(text)
    if parsed.attempted:
        report.tool_calls, report.tool_call_form = "text", parsed.form or "unknown"
    else:
        report.tool_calls = "ignored"


async def _probe_latency(client: ChatClient, report: ProbeReport) -> None:
    started = time.perf_counter()
    try:
        replies = await client.reply_texts([HumanMessage("Say OK.")], max_tokens=8)
    except ModelError:
        return
    report.latency_seconds = round(time.perf_counter() - started, 3)
    report.reasoning = report.reasoning or any(c.reasoning for c in replies.choices)


async def _probe_n(client: ChatClient, report: ProbeReport) -> None:
    try:
        replies = await client.reply_texts(
            [HumanMessage("Name a colour.")], n=N_ASKED, temperature=1.0, max_tokens=8
        )
    except ModelError:
        return
    report.n_returned = len(replies.choices)


async def _probe_concurrency(
    session: aiohttp.ClientSession, base: str, config: ModelConfig, report: ProbeReport
) -> None:
    """Time one request, then two at once: side by side, both end in about one's time.

    Sent outside the model client, whose connection cap must not decide
    what the server itself can do.
    """
    body = {
        "model": config.model,
        "messages": [{"role": "user", "content": "Count from 1 to 50."}],
        "max_tokens": 24,
        "temperature": 0,
    }

    async def timed() -> float:
        started = time.perf_counter()
        async with session.post(base + "/chat/completions", json=body) as response:
            await read_limited(response, config.max_reply_bytes)
            if response.status != 200:
                raise aiohttp.ClientResponseError(response.request_info, (), status=response.status)
        return time.perf_counter() - started

    try:
        single = min([await timed(), await timed()])
        pair_started = time.perf_counter()
        await asyncio.gather(timed(), timed())
        pair = time.perf_counter() - pair_started
    except (aiohttp.ClientError, TimeoutError):
        return
    report.single_seconds, report.pair_seconds = round(single, 3), round(pair, 3)
    if single >= TOO_FAST_TO_TELL:
        report.concurrent = pair < CONCURRENT_RATIO * single


async def _probe_overflow(config: ModelConfig, report: ProbeReport) -> None:
    quick = config.model_copy(update={"retries": 0, "timeout": OVERFLOW_TIMEOUT})
    client = ChatClient(quick, temperature=0.0)
    try:
        await client.reply_texts([HumanMessage("word " * OVERFLOW_WORDS)], max_tokens=1)
    except ModelStatusError as exc:
        found = _CONTEXT_SAID.search(exc.server_message)
        digits = found.group(1).replace(",", "") if found else ""
        # Python refuses to read an integer of thousands of digits.
        if 0 < len(digits) <= len(str(MAX_CALL_TOKENS)) and token_count(int(digits)):
            report.context_length = int(digits)
            report.context_source = "overflow"
    except (ModelTimeoutError, ModelError):
        pass
    finally:
        await client.aclose()


def _nearby(base: str) -> bool:
    host = urlsplit(base).hostname or ""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def _said(exc: BaseException) -> str:
    # A refused connection says so ("Connection refused"), not aiohttp's
    # long wrapper that the cut would end inside an address.
    os_error = getattr(exc, "os_error", None)
    return _short(getattr(os_error, "strerror", None) or str(exc) or type(exc).__name__)


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
