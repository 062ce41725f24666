"""What a tool call gives back: one result model and how bodies become text.

Every HTTP mode (live, replay, mock, fault) builds its results here, so the
agent reads a 404 the same way whether a server or a fault plan produced it.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any, NamedTuple

from pydantic import BaseModel

_TEXT_MEDIA = ("text/", "application/xml", "application/javascript", "application/x-www-form")
_BINARY_MEDIA = ("image/", "audio/", "video/", "font/", "application/octet-stream")
_BINARY_SUFFIXES = ("/pdf", "/zip", "/gzip", "/x-tar", "/wasm", "/protobuf")


class ToolResult(BaseModel):
    """What one tool call produced, in every HTTP mode.

    Attributes:
        ok: A 2xx response arrived (always ``False`` for an injected fault).
        status: The HTTP status, ``None`` when no response arrived.
        text: What the agent reads: ``HTTP 200 OK`` then the body as compact
            JSON or text, cut at the size cap with ``…[truncated at N bytes]``;
            or ``request failed: <reason>`` when no response arrived.
        data: The parsed JSON body; ``None`` for text, binary or a cut body.
        latency_ms: Wall time of the whole call, retries and redirects included.
        url: The URL called last (query included).
        error: Why the call failed, for logs; ``None`` on success.
        truncated: The body was longer than the cap.
        mode: The HTTP mode that answered (``live``, ``replay``, ``mock``, ...).
        from_cache: The answer came from recorded responses.
        fault: The injected fault kind, if any.
    """

    ok: bool
    status: int | None = None
    text: str
    data: Any = None
    latency_ms: float = 0.0
    url: str = ""
    error: str | None = None
    truncated: bool = False
    mode: str = "live"
    from_cache: bool = False
    fault: str | None = None


class Body(NamedTuple):
    """A response body made readable: text for the agent, parsed JSON if any."""

    text: str
    data: Any
    truncated: bool


def status_line(status: int, reason: str = "") -> str:
    """``HTTP 404 Not Found``: the reason phrase is looked up when missing."""
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    return f"HTTP {status} {reason}".rstrip()


def describe_body(
    content: bytes, content_type: str, *, max_bytes: int, truncated_at: int | None = None
) -> Body:
    """Turn raw body bytes into agent-readable text (and parsed JSON when possible).

    Args:
        content: The body as received (possibly already cut).
        content_type: The ``Content-Type`` header, maybe empty.
        max_bytes: Size cap; a longer body is cut here.
        truncated_at: The cap at which the body was already cut, if it was.

    Returns:
        The body's text, parsed JSON (``None`` unless complete and valid) and
        whether it was truncated.
    """
    if len(content) > max_bytes:
        content, truncated_at = content[:max_bytes], max_bytes
    truncated = truncated_at is not None
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    if not content:
        return Body("(empty body)", None, truncated)
    if _is_binary(media, content):
        size = f"over {truncated_at} bytes" if truncated else f"{len(content)} bytes"
        return Body(f"binary {media or 'application/octet-stream'}, {size}", None, truncated)
    text = content.decode(_charset(params), errors="replace")
    if not truncated and _may_be_json(media, text):
        try:
            data = json.loads(text)
        except ValueError:
            pass
        else:
            return Body(json.dumps(data, ensure_ascii=False, separators=(",", ":")), data, False)
    if truncated:
        text += f"…[truncated at {truncated_at} bytes]"
    return Body(text, None, truncated)


def _charset(params: str) -> str:
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
            try:
                "".encode(charset)
            except LookupError:
                break
            return charset
    return "utf-8"


def _is_binary(media: str, content: bytes) -> bool:
    if media.startswith(_TEXT_MEDIA) or "json" in media or media.endswith("+xml"):
        return False
    if media.startswith(_BINARY_MEDIA) or media.endswith(_BINARY_SUFFIXES):
        return True
    # Unknown or missing type: text never holds NUL bytes, binary formats nearly always do.
    return b"\x00" in content[:2048]


def _may_be_json(media: str, text: str) -> bool:
    return "json" in media or text.lstrip()[:1] in ("{", "[")


def response_result(
    *,
    status: int,
    reason: str,
    body: Body,
    url: str,
    latency_ms: float,
    mode: str,
    from_cache: bool = False,
) -> ToolResult:
    """A result for a response that arrived; ``ok`` means a 2xx status."""
    line = status_line(status, reason)
    ok = 200 <= status < 300
    return ToolResult(
        ok=ok,
        status=status,
        text=f"{line}\n{body.text}",
        data=body.data,
        latency_ms=latency_ms,
        url=url,
        error=None if ok else line,
        truncated=body.truncated,
        mode=mode,
        from_cache=from_cache,
    )


def too_large_result(
    *,
    status: int,
    reason: str,
    max_bytes: int,
    url: str,
    latency_ms: float,
    mode: str,
    from_cache: bool = False,
) -> ToolResult:
    """A compressed response that grew past the cap: a failed call, its body dropped."""
    message = f"response too large (over {max_bytes} bytes decompressed)"
    return ToolResult(
        ok=False,
        status=status,
        text=f"{status_line(status, reason)}\n{message}",
        latency_ms=latency_ms,
        url=url,
        error=message,
        truncated=True,
        mode=mode,
        from_cache=from_cache,
    )


def failure_result(
    message: str, *, url: str, latency_ms: float, mode: str, status: int | None = None
) -> ToolResult:
    """A result for a call that got no usable response (the agent sees the reason)."""
    return ToolResult(
        ok=False,
        status=status,
        text=f"request failed: {message}",
        url=url,
        error=message,
        latency_ms=latency_ms,
        mode=mode,
    )


def timeout_message(host: str, timeout: float) -> str:
    """How a request that got no answer in time is reported."""
    return f"no response from {host} within {timeout:g} s (timeout)"


def refused_message(host: str) -> str:
    """How a request whose connection was refused is reported."""
    return f"connection refused by {host}"
