"""JSON over HTTP to an OpenAI-compatible server: the model client's wire.

The agent makes several model calls per task, and a batch run drives dozens
of sessions from one process, so the client's own CPU cost bounds a run's
speed. aiohttp, with its C HTTP parser, spends about a fifth of the CPU per
request that openai's client over httpx does (perf/runtime_cpu.py).

Failures become aah's own ``ModelError`` types, with one-line messages that
carry the server's own explanation. Retries follow the policy the OpenAI
SDK documents: a lost connection, a timeout, and statuses 408, 409, 429 and
5xx are tried again with a growing, jittered pause; a server's
``retry-after-ms``/``retry-after`` (seconds or an HTTP date) sets the pause;
``x-should-retry: true|false`` overrides the status. Other 4xx answers are
final: sending the same request again would only be refused again. The
tries and pauses go through aah's one retry policy (``aah.retries``).

All the pauses of one request share one budget (``retry_budget``,
``AAH_LLM_RETRY_BUDGET``, 60 s by default): a pause that would take the
request past it is not taken, and the request fails at once, with a line
that names the server's rate limit when the server asked for the wait. A
rate-limited batch thus fails its tasks in seconds (a rerun retries them)
instead of sleeping a minute per call.

Each attempt has a total deadline (connect, send, and the whole reply), so a
server trickling bytes cannot hold a request longer than the timeout, and a
reply is read up to a size cap.

``max_connections`` caps the requests in flight to one endpoint, across every
client of the process that uses it. At 1 (a single-slot server such as
llama.cpp's default) a timed-out request is not sent again: the server is
most likely still working on it, and a copy would only queue behind it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from aah import __version__
from aah.llm.config import DEFAULT_BASE_URL, ModelConfig
from aah.llm.errors import (
    ModelConnectionError,
    ModelError,
    ModelReplyError,
    ModelStatusError,
    ModelTimeoutError,
)
from aah.llm.reply import error_text, one_line
from aah.loop_turns import take_turn
from aah.peer_read import CappedBody, aread_capped
from aah.retries import Backoff, Outcome, RetryPolicy, Stopped, retry_async
from aah.secrets import REDACTED, scrub_text
from aah.storable import storable_text

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
# Doubling from half a second up to 8 s, up to a quarter less at random.
MODEL_BACKOFF = Backoff(INITIAL_RETRY_DELAY, MAX_RETRY_DELAY, jitter=0.25)
RETRY_STATUSES = frozenset({408, 409, 429})
READ_CHUNK = 64 * 1024

MIN_SECRET_CHARS = 8

# The request slots of each endpoint, per event loop (a semaphore belongs to one loop).
_SLOTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, int], asyncio.Semaphore]
]
_SLOTS = weakref.WeakKeyDictionary()


def endpoint_slots(base_url: str, limit: int) -> asyncio.Semaphore:
    """The semaphore shared by every request to ``base_url`` in the running loop."""
    per_loop = _SLOTS.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault((base_url, limit), asyncio.Semaphore(limit))


class _Retry(Exception):
    """A failed attempt that may be tried again, after ``asked`` seconds if the server said."""

    def __init__(self, error: ModelError, asked: RequestedWait | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.asked = asked


class RequestedWait(NamedTuple):
    """The wait a server asked for: seconds (None when unreadable), and the header as sent."""

    seconds: float | None
    header: str


class ChatTransport:
    """POSTs JSON bodies to one server and returns the raw bytes it answers with 200."""

    def __init__(self, config: ModelConfig) -> None:
        """Talk to ``config``'s server, with its credentials, timeout and retries."""
        self.config = config
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.where = config.describe()["base_url"]
        credentials = authorization(config)
        # Values a server may echo in an error: the key, the password, and the
        # encoded basic-auth pair. Short ones are placeholders ("x", "fake")
        # that would garble ordinary words.
        candidates = [s.get_secret_value() for s in (config.api_key, config.password) if s]
        candidates.append(credentials.split(" ", 1)[1])
        self._secrets = sorted({c for c in candidates if len(c) >= MIN_SECRET_CHARS}, key=len)[::-1]
        self._headers = {
            "Authorization": credentials,
            "Content-Type": "application/json",
            "Accept": "application/json",
            # What every install decodes (br and zstd need optional libraries);
            # the reply cap counts the bytes after decoding (read_limited).
            "Accept-Encoding": "gzip, deflate",
            "User-Agent": f"aah/{__version__}",
        }
        self._retries: RetryPolicy[bytes] = RetryPolicy(
            tries=config.retries + 1,
            backoff=MODEL_BACKOFF,
            retry_error=lambda error: isinstance(error, _Retry),
            pause=_pause,
            budget=config.retry_budget,
            on_stop=self._give_up,
        )
        self._session: aiohttp.ClientSession | None = None
        # Requests sent and not answered yet (progress displays read it).
        self.in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        # Keeps the generator that closes the session when its loop shuts down.
        self._closer: AsyncIterator[None] | None = None

    async def aclose(self) -> None:
        """Close the connections (inside the event loop that used them)."""
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = self._loop = self._closer = None

    async def post(self, path: str, body: dict[str, Any]) -> bytes:
        """The body the server answers to ``body`` at ``path`` with a 2xx status.

        Raises:
            ModelError: the request failed after the configured retries, or
                the reply was empty or larger than the configured cap.
        """
        url = self.base_url + path
        # A text that came in with half a character (a file's \ud800 escape)
        # must not stop the request: UTF-8 cannot encode it.
        data = storable_text(json.dumps(body, ensure_ascii=False)).encode()
        self.in_flight += 1
        try:
            reply = await retry_async(
                self._retries, lambda attempt: self._slotted(url, data, attempt)
            )
        finally:
            self.in_flight -= 1
        # Replies that land together are read, and their sessions go on, over several turns.
        await take_turn()
        return reply

    async def _slotted(self, url: str, data: bytes, attempt: int) -> bytes:
        async with self._slot():
            return await self._attempt(url, data, attempt)

    def _give_up(self, stopped: Stopped[bytes]) -> bytes:
        """Raise the error of a request that will not be tried again."""
        failure = stopped.last.error
        if not isinstance(failure, _Retry):
            return stopped.last.unwrap()
        if (
            stopped.refused_pause is not None
            and failure.asked is not None
            and _asked_seconds(failure) is not None
        ):
            raise self._rate_limited(failure.error, failure.asked) from None
        raise failure.error from None

    def _rate_limited(self, error: ModelError, asked: RequestedWait) -> ModelError:
        """``error`` when the server asked for a wait longer than the budget left."""
        if not isinstance(error, ModelStatusError):
            return error
        what = "is rate-limiting" if error.status == 429 else "asks aah to wait"
        said = f": {error.server_message.rstrip('.')}" if error.server_message else ""
        return ModelStatusError(
            f"the model server at {self.where} {what} (HTTP {error.status}, "
            f"{one_line(self._scrub(asked.header), 60)}){said}: wait and rerun, or raise "
            f"AAH_LLM_RETRY_BUDGET (now {self.config.retry_budget:g} s)",
            url=self.where,
            status=error.status,
            server_message=error.server_message,
            param=error.param,
            attempts=error.attempts,
        )

    def _slot(self) -> AbstractAsyncContextManager[object]:
        limit = self.config.max_connections
        return nullcontext() if limit is None else endpoint_slots(self.base_url, limit)

    async def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            proxy, proxy_auth = env_proxy(self.base_url)
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                # The deadline is asyncio.timeout's in _attempt, over the whole reply.
                timeout=aiohttp.ClientTimeout(total=None),
                connector=aiohttp.TCPConnector(limit=1000, limit_per_host=0),
                proxy=proxy,
                proxy_auth=proxy_auth,
            )
            self._loop = loop
            # A client shared by many sessions of a run has no single owner to
            # close it: the loop's shutdown finalizes this generator (as
            # asyncio.run and asyncio.Runner do), which closes the session
            # inside the loop that opened it. aclose() closes it earlier.
            self._closer = _close_at_loop_end(self._session)
            await anext(self._closer)
        return self._session

    async def _attempt(self, url: str, data: bytes, attempt: int) -> bytes:
        session = await self._client()
        try:
            async with asyncio.timeout(self.config.timeout):
                # A redirect is not followed: it would carry the credentials to
                # wherever the server points, and a POST may turn into a GET.
                async with session.post(url, data=data, allow_redirects=False) as response:
                    status, headers = response.status, response.headers
                    raw = await self._read(response, status)
        except TimeoutError:
            if self.config.max_connections == 1:
                raise self._timeout_error(attempt) from None
            raise _Retry(self._timeout_error(attempt)) from None
        except aiohttp.ClientError as exc:
            raise _Retry(self._connection_error(exc, attempt)) from None
        if status >= 400:
            error = self._status_error(status, raw, attempt, headers)
            if should_retry(status, headers):
                raise _Retry(error, requested_wait(headers))
            raise error
        if 300 <= status < 400:
            raise self._redirect_error(status, headers, attempt)
        if status == 204 or not raw:
            raise ModelReplyError(
                f"the model server at {self.where} sent an empty reply (HTTP {status}): "
                "check that it is an OpenAI-compatible chat completions endpoint",
                url=self.where,
                attempts=attempt,
            )
        return raw

    async def _read(self, response: aiohttp.ClientResponse, status: int) -> bytes:
        body = await read_limited(response, self.config.max_reply_bytes)
        if not body.whole and status < 400:  # the start of an error page says enough
            raise self._too_large(body.size)
        return body.data

    def _too_large(self, size: int) -> ModelReplyError:
        return ModelReplyError(
            f"the model server at {self.where} sent a reply of more than "
            f"{self.config.max_reply_bytes:,} bytes ({size:,} or more): "
            "lower the role's max_tokens or raise AAH_MAX_REPLY_BYTES",
            url=self.where,
        )

    def _redirect_error(
        self, status: int, headers: Mapping[str, str], attempt: int
    ) -> ModelReplyError:
        location = one_line(self._scrub(headers.get("Location", "")), 200) or "nowhere"
        return ModelReplyError(
            f"the model server at {self.where} redirected the request to {location!r} "
            f"(HTTP {status}), which aah does not follow: set "
            f"{self.config.setting_name('BASE_URL')} to the server's own address",
            url=self.where,
            attempts=attempt,
        )

    def _timeout_error(self, attempt: int) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"the model server at {self.where} did not answer within "
            f"{self.config.timeout:g} s{_tries(attempt)}{_not_resent(self.config)}: check the "
            "server, lower the role's max_tokens or raise AAH_LLM_TIMEOUT",
            url=self.where,
            attempts=attempt,
        )

    def _connection_error(self, exc: aiohttp.ClientError, attempt: int) -> ModelConnectionError:
        os_error = getattr(exc, "os_error", None)
        said = getattr(os_error, "strerror", None) or str(exc) or type(exc).__name__
        reason = self._scrub(one_line(said, 200))
        if isinstance(exc, aiohttp.ClientResponseError):
            # aiohttp's parser refused the response head (a header over 8 KB,
            # too many headers): the server was reached and answered badly.
            reason = self._scrub(one_line(exc.message, 80))
            return ModelConnectionError(
                f"the model server at {self.where} sent response headers that were too large "
                f"or malformed ({reason}){_tries(attempt)}: check the server or the proxy "
                "in front of it",
                url=self.where,
                attempts=attempt,
            )
        return ModelConnectionError(
            f"cannot reach the model endpoint at {self.where} ({reason}){_tries(attempt)}: "
            f"start the server or fix {self.config.setting_name('BASE_URL')}",
            url=self.where,
            attempts=attempt,
        )

    def _status_error(
        self, status: int, raw: bytes, attempt: int, headers: Mapping[str, str]
    ) -> ModelStatusError:
        said, param = server_explanation(raw)
        said = self._scrub(said)
        reason = f": {said.rstrip('.')}" if said else ""
        retried = should_retry(status, headers)
        if status in (401, 403):
            basic = self.config.username is not None or self.config.password is not None
            fix = f"check {self.config.setting_name('BASE_URL' if basic else 'API_KEY')}"
            fix += "'s user name and password" if basic else ""
            head = f"the model server at {self.where} refused the credentials (HTTP {status})"
        elif status == 404 and not self.base_url.rstrip("/").endswith("/v1"):
            fix = f"the base URL may be missing /v1 (try {self.where.rstrip('/')}/v1)"
            head = f"the model server at {self.where} has no chat endpoint there (HTTP 404)"
        elif status == 404:
            fix = (
                f"check {self.config.setting_name('MODEL')} (the server lists its models "
                "at /v1/models)"
            )
            head = f"model {self.config.model!r} not found at {self.where} (HTTP 404)"
        elif retried:
            fix = "try again later"
            head = f"the model server at {self.where} failed with HTTP {status}{_tries(attempt)}"
        else:
            fix = "fix the request settings or the server's configuration"
            head = f"the model server at {self.where} rejected the request (HTTP {status})"
            if status == 429:
                fix = "wait and rerun"
        return ModelStatusError(
            f"{head}{reason}: {fix}",
            url=self.where,
            status=status,
            server_message=said,
            param=param,
            attempts=attempt,
        )

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return scrub_text(text) or ""


LimitedBody = CappedBody


async def read_limited(response: aiohttp.ClientResponse, cap: int) -> LimitedBody:
    """``response``'s body, or its start when it holds more than ``cap`` bytes.

    The cap counts the bytes after decompression: a compressed body's
    length says nothing of what it inflates to (a megabyte of gzip can hold
    a gigabyte), so such a body is read in pieces as aiohttp inflates it
    (aah's one bounded reader, :mod:`aah.peer_read`), and given up as soon
    as it passes the cap. Memory stays bounded whatever the server sent.
    """
    length = response.content_length
    if length is not None and length <= cap and not _encoded(response):
        data = await response.read()
        return LimitedBody(data, len(data), True)
    return await aread_capped(response.content.read, cap, READ_CHUNK)


def _encoded(response: aiohttp.ClientResponse) -> bool:
    """Whether the body comes compressed (any Content-Encoding but identity)."""
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    return encoding not in ("", "identity")


async def _close_at_loop_end(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await session.close()


def _not_resent(config: ModelConfig) -> str:
    if config.max_connections == 1 and config.retries > 0:
        return " (not sent again: AAH_MAX_CONNECTIONS=1, the server may still be on it)"
    return ""


def _tries(attempt: int) -> str:
    return f" after {attempt} attempts" if attempt > 1 else ""


def authorization(config: ModelConfig) -> str:
    """The ``Authorization`` header: basic auth from the URL's credentials, else the key."""
    if config.username is not None or config.password is not None:
        password = config.password.get_secret_value() if config.password else ""
        pair = f"{config.username or ''}:{password}"
        return "Basic " + base64.b64encode(pair.encode()).decode()
    return f"Bearer {config.api_key.get_secret_value()}"


def server_explanation(raw: bytes) -> tuple[str, str | None]:
    """The server's own reason in an error body (one line), and the parameter it blames."""
    try:
        parsed: Any = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        return one_line(raw[:2000].decode("utf-8", "replace")), None
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        param = error.get("param") if isinstance(error, dict) else None
        if isinstance(error, dict) and not (error.get("message") or error.get("detail")):
            error = parsed.get("message") or parsed.get("detail") or error
        return error_text(error), param if isinstance(param, str) else None
    return ("" if parsed is None else one_line(str(parsed))), None


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


def backoff(retry: int) -> float:
    """Seconds to wait before retry number ``retry + 1``: doubling, capped, jittered."""
    return MODEL_BACKOFF.seconds(retry)


def _pause(retry: int, outcome: Outcome[bytes]) -> float:
    """The pause before the next try: the server's, when it asked for a usable one."""
    asked = _asked_seconds(outcome.error)
    return asked if asked is not None else backoff(retry)


def _asked_seconds(failure: BaseException | None) -> float | None:
    """The wait the server asked for after a failed try, when it is a positive number.

    Any other value (none, a word, zero, a date in the past) leaves the
    client to its own backoff.
    """
    asked = failure.asked if isinstance(failure, _Retry) else None
    if asked is None or asked.seconds is None or asked.seconds <= 0:
        return None
    return asked.seconds


def requested_wait(headers: Mapping[str, str]) -> RequestedWait | None:
    """The wait a ``retry-after-ms`` or ``retry-after`` header asks for; None without one.

    The seconds may be negative (a date in the past) or infinite; they are
    None when the value is no number and no HTTP date.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        if name in lowered:
            value = lowered[name]
            return RequestedWait(_seconds(value, scale), f"{name} {value.strip()}")
    return None


def requested_delay(headers: Mapping[str, str]) -> float | None:
    """The seconds a ``retry-after-ms`` or ``retry-after`` header asks for, as sent."""
    asked = requested_wait(headers)
    return asked.seconds if asked else None


def _seconds(value: str, scale: float) -> float | None:
    try:
        seconds = float(value) / scale
    except ValueError:
        if scale != 1.0:
            return None
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # an HTTP date is always GMT
            when = when.replace(tzinfo=UTC)
        return when.timestamp() - time.time()
    return None if math.isnan(seconds) else seconds


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a failed status is worth another attempt (see the module docstring)."""
    hint = {key.lower(): value for key, value in headers.items()}.get("x-should-retry")
    if hint in ("true", "false"):
        return hint == "true"
    return status in RETRY_STATUSES or status >= 500
