"""JSON over HTTP to an OpenAI-compatible endpoint: the model client's wire.

The agent makes several model calls per task, and a batch run drives dozens
of sessions from one process, so the client's own CPU cost bounds a run's
speed. openai's client spends about 1.2 ms of CPU per request in its request
building and in httpx; aiohttp, with its C HTTP parser, about 0.25 ms
(perf/runtime_cpu.py). This module keeps what the openai client gives
callers and drops the rest:

- the same retry policy: connection errors, timeouts, 408, 409, 429 and 5xx
  are retried with exponential backoff and jitter, a server's
  ``retry-after``/``retry-after-ms`` (up to 60 s) and ``x-should-retry`` are
  obeyed;
- the same exceptions: ``openai.APIConnectionError``, ``APITimeoutError``,
  ``APIStatusError`` and its subclasses (``RateLimitError``,
  ``NotFoundError``...), ``APIResponseValidationError``, so callers and
  ``aah.llm.config.model_error`` read failures one way, whichever client made them.

The ``aiohttp`` session belongs to the event loop that opened it; a client
used from a new loop (a second ``asyncio.run``) opens a new one.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import httpx2
import openai
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from aah import __version__
from aah.llm.config import ModelConfig

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
RETRY_STATUSES = frozenset({408, 409, 429})

# The openai exception a status maps to; others are a plain APIStatusError.
_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}


class _Retry(Exception):
    """A failed attempt that may be tried again after ``delay`` seconds."""

    def __init__(self, error: openai.OpenAIError, delay: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.delay = delay


class ChatTransport:
    """POSTs JSON bodies to one endpoint and returns the JSON object it answers."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {config.api_key.get_secret_value()}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"aah/{__version__}",
        }
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def aclose(self) -> None:
        """Close the connections (inside the event loop that used them)."""
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = self._loop = None

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON object the endpoint answers to ``body`` at ``path``.

        Raises:
            openai.OpenAIError: the request failed after the configured retries.
        """
        url = self.base_url + path
        data = json.dumps(body, ensure_ascii=False).encode()
        for attempt in range(self.config.retries + 1):
            try:
                return await self._attempt(url, data)
            except _Retry as failure:
                if attempt == self.config.retries:
                    raise failure.error from None
                await asyncio.sleep(
                    failure.delay if failure.delay is not None else backoff(attempt)
                )
        raise AssertionError("unreachable: the last attempt raises")

    def invalid_reply(
        self, path: str, body: object, message: str
    ) -> openai.APIResponseValidationError:
        """The error for a well-formed answer that is not what was asked for."""
        url = self.base_url + path
        raw = json.dumps(body).encode()
        return openai.APIResponseValidationError(
            response=_response(url, 200, {}, raw), body=body, message=message
        )

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            proxy, proxy_auth = env_proxy(self.base_url)
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self.config.timeout),
                connector=aiohttp.TCPConnector(limit=1000, limit_per_host=0),
                proxy=proxy,
                proxy_auth=proxy_auth,
            )
            self._loop = loop
        return self._session

    async def _attempt(self, url: str, data: bytes) -> dict[str, Any]:
        try:
            async with self._client().post(url, data=data) as response:
                raw = await response.read()
                status, headers = response.status, dict(response.headers)
        except TimeoutError:
            raise _Retry(openai.APITimeoutError(request=_request(url))) from None
        except aiohttp.ClientError as exc:
            message = f"Connection error: {exc}"
            raise _Retry(
                openai.APIConnectionError(message=message, request=_request(url))
            ) from None
        if status >= 400:
            error = status_error(url, status, headers, raw)
            if should_retry(status, headers):
                raise _Retry(error, retry_after(headers))
            raise error
        return _json_object(url, status, headers, raw)


def env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy that ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` name for ``url``.

    Read once per session: aiohttp's ``trust_env`` reads them on every
    request, which costs more CPU than the request itself.
    """
    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None
    return str(proxy), auth


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt + 1``: doubling, capped, jittered."""
    delay = min(INITIAL_RETRY_DELAY * 2.0**attempt, MAX_RETRY_DELAY)
    return delay * (1 - 0.25 * random.random())


def retry_after(headers: dict[str, str]) -> float | None:
    """The server's requested delay in seconds, if it names one we accept."""
    seconds = requested_delay(headers)
    return seconds if seconds is not None and 0 < seconds <= MAX_RETRY_AFTER else None


def requested_delay(headers: dict[str, str]) -> float | None:
    """The delay a ``retry-after-ms`` or ``retry-after`` header asks for, as sent."""
    lowered = {key.lower(): value for key, value in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return float(lowered["retry-after-ms"]) / 1000
        if "retry-after" in lowered:
            value = lowered["retry-after"]
            try:
                return float(value)
            except ValueError:
                return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, IndexError):
        return None
    return None


def should_retry(status: int, headers: dict[str, str]) -> bool:
    """Whether a failed status is worth another attempt (openai's rules)."""
    delay = requested_delay(headers)
    if delay is not None and delay > MAX_RETRY_AFTER:
        return False
    hint = {key.lower(): value for key, value in headers.items()}.get("x-should-retry")
    if hint in ("true", "false"):
        return hint == "true"
    return status in RETRY_STATUSES or status >= 500


def status_error(
    url: str, status: int, headers: dict[str, str], raw: bytes
) -> openai.APIStatusError:
    """The openai exception for an HTTP error answer, with the server's message."""
    try:
        parsed: Any = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode("utf-8", "replace")
    body = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
    message = f"Error code: {status} - {parsed if parsed is not None else ''}"
    cls = _STATUS_ERRORS.get(status)
    if cls is None:
        cls = openai.InternalServerError if status >= 500 else openai.APIStatusError
    return cls(message, response=_response(url, status, headers, raw), body=body)


def _json_object(url: str, status: int, headers: dict[str, str], raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise openai.APIResponseValidationError(
            response=_response(url, status, headers, raw),
            body=raw.decode("utf-8", "replace"),
            message="the model endpoint sent no JSON object",
        )
    return data


def _request(url: str) -> httpx2.Request:
    return httpx2.Request("POST", url)


def _response(url: str, status: int, headers: dict[str, str], raw: bytes) -> httpx2.Response:
    return httpx2.Response(status, headers=headers, content=raw, request=_request(url))
