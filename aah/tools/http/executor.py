"""One generic HTTP caller that serves every endpoint spec.

A call is built from data only: the spec's URL template, its typed
parameters and the agent's arguments. Arguments whose value is ``None`` are
left out, and parameter defaults are never filled in: what the agent did not
pass is not sent, so the server applies its own defaults and a log shows
exactly what the agent asked for.

Failures never raise. Whatever goes wrong (a bad call, a refused host, a
timeout, a 500) comes back as a :class:`ToolResult` with ``ok=False``, a
``text`` the agent can read and an ``error`` for the logs.
"""

from __future__ import annotations

import asyncio
import http.client
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter

from aah import __version__
from aah.config import get_settings
from aah.peer_read import gather_capped
from aah.retries import Backoff, Outcome, RetryPolicy, call_with_retries
from aah.secrets import remember_named
from aah.tools.http.request import HttpRequest, RequestError, build_request, full_url, same_host
from aah.tools.http.results import (
    ToolResult,
    describe_body,
    failure_result,
    refused_message,
    response_result,
    timeout_message,
    too_large_result,
)
from aah.tools.http.transport import (
    AddressGuard,
    CallDeadline,
    GuardedAdapter,
    RefusedHostError,
    Resolver,
    resolve_host,
)
from aah.tools.spec import EndpointSpec

__all__ = ["BodyCap", "HttpExecutor", "ToolResult", "describe_exception", "new_session"]

# Set on a response whose body was cut, so the cut survives a record/replay trip.
TRUNCATED_HEADER = "X-Aah-Truncated"
# Set instead on a compressed response that grew past the cap once decompressed.
TOO_LARGE_HEADER = "X-Aah-Too-Large"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
USER_AGENT = f"aah/{__version__}"
E = TypeVar("E", bound=BaseException)


class Failure(NamedTuple):
    """A request that got no usable response, and whether trying again may help."""

    message: str
    retryable: bool


def describe_exception(exc: requests.RequestException, *, host: str, timeout: float) -> Failure:
    """Name a transport failure in a few words, the way the agent should read it."""
    refused = find_cause(exc, RefusedHostError)
    if refused is not None:
        return Failure(str(refused), False)
    if _headers_too_large(exc):
        # The same server sends the same headers again: no retry.
        return Failure(headers_too_large_message(host), False)
    if isinstance(exc, requests.ConnectTimeout):
        return Failure(f"could not connect to {host} within {timeout:g} s (timeout)", True)
    if isinstance(exc, requests.ReadTimeout):
        # A slow server stays slow; retrying would only multiply the agent's wait.
        return Failure(timeout_message(host, timeout), False)
    if isinstance(exc, requests.ConnectionError):
        if "refused" in str(exc).lower():
            return Failure(refused_message(host), True)
        return Failure(f"could not connect to {host} ({_root_cause(exc)})", True)
    if isinstance(
        exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError
    ):
        return Failure(f"the response from {host} was cut off or malformed", True)
    return Failure(f"invalid request ({_root_cause(exc)})", False)


def headers_too_large_message(host: str) -> str:
    """How a response whose head ``http.client`` refused to read is reported."""
    return (
        f"the response headers from {host} were too large or malformed (over 64 KB or 100 headers)"
    )


def _headers_too_large(exc: BaseException) -> bool:
    # http.client refuses a header line over 64 KB (LineTooLong) and over 100
    # headers (a bare HTTPException saying so); urllib3 and requests wrap both.
    if find_cause(exc, http.client.LineTooLong) is not None:
        return True
    bare = find_cause(exc, http.client.HTTPException)
    return bare is not None and "got more than" in str(bare)


def find_cause(exc: BaseException, kind: type[E]) -> E | None:
    """The first exception of type ``kind`` in ``exc``'s chain, arguments and reasons.

    requests and urllib3 keep the original error sometimes as the cause,
    sometimes as an argument (``ProtocolError("...", err)``), sometimes as
    ``reason`` (``MaxRetryError``); all three are searched.
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        linked += list(current.args)
        todo += [item for item in linked if isinstance(item, BaseException)]
    return None


def _root_cause(exc: BaseException) -> str:
    while exc.__context__ is not None and exc.__context__ is not exc:
        exc = exc.__context__
    return type(exc).__name__


class BodyCap:
    """A response hook that reads at most ``max_bytes`` of a streamed body.

    Installed on the session, it runs before requests-cache stores a response,
    so a recorded body is capped too. Reading stops at the cap and the
    connection is closed: the rest is never downloaded. The cap counts
    decompressed bytes, read a chunk at a time (urllib3 decompresses no more
    than each read asks for), so a small gzip or br bomb costs no more memory
    than the cap. A compressed body past the cap is dropped, not cut: its
    start is rarely worth reading, and a bomb's never is.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def __call__(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """Read the body up to the cap and keep it as the response's content."""
        # requests-cache dispatches hooks again after storing; the body is read by then.
        if (
            getattr(response, "from_cache", False)
            or getattr(response, "_content", False) is not False
        ):
            return
        chunks = response.iter_content(chunk_size=min(65_536, self.max_bytes + 1))
        body, _, whole = gather_capped(chunks, self.max_bytes)
        if not whole:
            body = body[: self.max_bytes]
            response.headers[TRUNCATED_HEADER] = str(self.max_bytes)
            response.close()
            if _is_compressed(response):
                body = b""
                response.headers[TOO_LARGE_HEADER] = str(self.max_bytes)
        response._content = body
        response._content_consumed = True  # type: ignore[attr-defined]


def _is_compressed(response: requests.Response) -> bool:
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    return encoding not in ("", "identity")


def new_session(
    pool_size: int = 16, *, public_only: bool = False, resolve: Resolver = resolve_host
) -> requests.Session:
    """A pooled session (keep-alive connections reused across calls).

    Args:
        pool_size: Connections kept per host.
        public_only: Connect only to public addresses, checked here, never
            through a proxy.
        resolve: How the address guard resolves a host.
    """
    session = requests.Session()
    mount_pool(session, pool_size, public_only=public_only, resolve=resolve)
    return session


def mount_pool(
    session: requests.Session,
    pool_size: int,
    *,
    public_only: bool = False,
    resolve: Resolver = resolve_host,
) -> None:
    """Give ``session`` a connection pool sized for concurrent tool calls.

    Its connections obey the deadline of the call that uses them, and with
    ``public_only`` go only to public addresses resolved and checked here,
    never through a proxy (see :class:`GuardedAdapter`).
    """
    adapter: HTTPAdapter = GuardedAdapter(
        public_only=public_only,
        resolve=resolve,
        pool_connections=pool_size,
        pool_maxsize=pool_size,
    )
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT


class HttpExecutor:
    """Calls endpoints over HTTP with timeouts, retries, a size cap and a host guard.

    Args:
        timeout: The most seconds a call may take, connect to last body byte,
            retries and redirects included (default: ``Settings.http_timeout``).
        connect_timeout: Connect timeout in seconds (default: the smaller of
            ``timeout`` and 5).
        retries: Extra attempts after a 429, a 5xx or a connection error
            (default: ``Settings.http_retries``).
        max_bytes: Body size cap (default: ``Settings.http_max_bytes``).
        backoff: First retry delay in seconds; it doubles on each retry.
        max_backoff: Longest single retry delay, also the cap on ``Retry-After``.
        session: The session to send through (default: a new pooled one).
        mode: The mode name written on every result.
        request_options: Extra keyword arguments for every ``session.request``.
        allow_private: Call hosts whose addresses are not public (loopback,
            private, link-local...), and hosts that do not resolve here, through
            a proxy if the environment sets one; default:
            ``Settings.http_allow_private``. Without it, calls go only to public
            addresses checked here, never through a proxy.
        resolve: How the address guard resolves a host (default: the system's
            resolver); a session passed in brings its own.
        sleep: How a pause between tries is waited (tests record them).
    """

    def __init__(
        self,
        *,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        retries: int | None = None,
        max_bytes: int | None = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        session: requests.Session | None = None,
        mode: str = "live",
        request_options: Mapping[str, Any] | None = None,
        allow_private: bool | None = None,
        resolve: Resolver = resolve_host,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        settings = get_settings()
        self.allow_private = settings.http_allow_private if allow_private is None else allow_private
        self.timeout = settings.http_timeout if timeout is None else timeout
        self.connect_timeout = connect_timeout or min(self.timeout, 5.0)
        self.retries = max(0, settings.http_retries if retries is None else retries)
        self.max_bytes = settings.http_max_bytes if max_bytes is None else max_bytes
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._backoff = Backoff(backoff, max_backoff)
        self._sleep = sleep
        self.mode = mode
        self.request_options = dict(request_options or {})
        self._guard = AddressGuard(resolve)
        if session is None:
            session = new_session(public_only=not self.allow_private, resolve=resolve)
        self.session = session
        self.session.hooks["response"].append(BodyCap(self.max_bytes))

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Call ``spec`` with ``arguments``; never raises for HTTP failures.

        Args:
            spec: The endpoint to call (an ``EndpointSpec``).
            arguments: Argument values by parameter name; ``None`` values are left out.

        Returns:
            The result, ``ok=False`` with an ``error`` when the call failed.
        """
        started = time.perf_counter()
        # A credential argument's value is a secret wherever it shows up next:
        # in the URL path, a recorded request, a response that echoes it.
        remember_named(arguments)
        try:
            request = build_request(spec, arguments)
        except RequestError as exc:
            return failure_result(str(exc), url=spec.url_template, latency_ms=0.0, mode=self.mode)
        return self._follow(spec, request, started)

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """:meth:`call` in a worker thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.call, spec, arguments)

    def close(self) -> None:
        """Close pooled connections (and the cache, for a cached session)."""
        self.session.close()

    def __enter__(self) -> HttpExecutor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _follow(self, spec: EndpointSpec, request: HttpRequest, started: float) -> ToolResult:
        """Send ``request``, following same-host redirects by hand, all within the timeout."""
        with CallDeadline(self.timeout) as deadline:
            return self._hops(spec, request, started, deadline)

    def _hops(
        self, spec: EndpointSpec, request: HttpRequest, started: float, deadline: CallDeadline
    ) -> ToolResult:
        for _ in range(MAX_REDIRECTS + 1):
            url = full_url(request)
            if not same_host(request.url, spec.host):
                message = (
                    f"refused to call {url}: only {spec.host} is allowed for {spec.qualified_name}"
                )
                return failure_result(message, url=url, latency_ms=_ms(started), mode=self.mode)
            refused = self._refused(request.url)
            if refused is not None:
                return failure_result(refused, url=url, latency_ms=_ms(started), mode=self.mode)
            outcome = self._send(request, spec.host, deadline)
            if isinstance(outcome, Failure):
                return failure_result(
                    outcome.message, url=url, latency_ms=_ms(started), mode=self.mode
                )
            early = self._check_response(spec, outcome, started)
            if early is not None:
                return early
            location = outcome.headers.get("Location")
            if outcome.status_code not in REDIRECT_STATUSES or not location:
                return self._result(outcome, started)
            request = _redirected(request, outcome, location)
            if not same_host(request.url, spec.host):
                target = urlsplit(request.url).netloc
                message = (
                    f"redirect to another host ({target}) refused; only {spec.host} is allowed"
                )
                return failure_result(
                    message,
                    url=outcome.url,
                    latency_ms=_ms(started),
                    mode=self.mode,
                    status=outcome.status_code,
                )
        message = f"too many redirects (more than {MAX_REDIRECTS})"
        return failure_result(message, url=request.url, latency_ms=_ms(started), mode=self.mode)

    def _refused(self, url: str) -> str | None:
        """Why ``url``'s host may not be called (not public, or not checkable), if so.

        The connection checks again, on the addresses it connects to; this
        check also covers a session passed in without a guarded adapter.
        """
        if self.allow_private:
            return None
        parts = urlsplit(url)
        host = parts.hostname
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return None  # a bad port: the request fails on its own, saying so
        if not host:
            return None  # no host: the request fails on its own, saying so
        try:
            self._guard.check(host, port)
        except RefusedHostError as exc:
            return str(exc)
        return None

    def _send(
        self, request: HttpRequest, host: str, deadline: CallDeadline
    ) -> requests.Response | Failure:
        """One request with bounded retries on 429, 5xx and connection errors.

        A retry happens only while the call's deadline leaves time for its wait.
        """
        policy: RetryPolicy[requests.Response | Failure] = RetryPolicy(
            tries=self.retries + 1,
            backoff=self._backoff,
            retry_result=_worth_retrying,
            pause=self._pause,
            time_left=deadline.remaining,
            before_pause=_close_response,
        )
        return call_with_retries(
            policy, lambda attempt: self._send_once(request, host, deadline), sleep=self._sleep
        )

    def _send_once(
        self, request: HttpRequest, host: str, deadline: CallDeadline
    ) -> requests.Response | Failure:
        try:
            response = self.session.request(
                request.method,
                request.url,
                params=request.params,
                headers=request.headers,
                json=request.json_body,
                data=request.form_body,
                timeout=(self.connect_timeout, self.timeout),
                allow_redirects=False,
                stream=True,
                **self.request_options,
            )
        except requests.RequestException as exc:
            if deadline.expired:
                return Failure(timeout_message(host, self.timeout), False)
            return describe_exception(exc, host=host, timeout=self.timeout)
        if deadline.expired:
            # The body may have ended only because its socket was shut.
            response.close()
            return Failure(timeout_message(host, self.timeout), False)
        return response

    def _pause(self, retry: int, outcome: Outcome[requests.Response | Failure]) -> float:
        """The backoff's pause, or the server's ``Retry-After`` seconds if longer; capped."""
        delay = self._backoff.seconds(retry)
        response = outcome.result
        retry_after = ""
        if isinstance(response, requests.Response):
            retry_after = response.headers.get("Retry-After", "")
        if retry_after.strip().isdigit():
            delay = max(delay, float(retry_after))
        return min(delay, self.max_backoff)

    def _check_response(
        self, spec: EndpointSpec, response: requests.Response, started: float
    ) -> ToolResult | None:
        """A hook for subclasses: a result that replaces normal handling, or ``None``."""
        return None

    def _result(self, response: requests.Response, started: float) -> ToolResult:
        too_large = response.headers.get(TOO_LARGE_HEADER, "")
        if too_large.isdigit():
            return too_large_result(
                status=response.status_code,
                reason=response.reason or "",
                max_bytes=int(too_large),
                url=response.url,
                latency_ms=_ms(started),
                mode=self.mode,
                from_cache=bool(getattr(response, "from_cache", False)),
            )
        cut = response.headers.get(TRUNCATED_HEADER, "")
        body = describe_body(
            response.content or b"",
            response.headers.get("Content-Type", ""),
            max_bytes=self.max_bytes,
            truncated_at=int(cut) if cut.isdigit() else None,
        )
        return response_result(
            status=response.status_code,
            reason=response.reason or "",
            body=body,
            url=response.url,
            latency_ms=_ms(started),
            mode=self.mode,
            from_cache=bool(getattr(response, "from_cache", False)),
        )


def _worth_retrying(outcome: requests.Response | Failure) -> bool:
    """A retryable failure, or a busy status that was not answered from a cache.

    A stored answer will not change by asking the cache again.
    """
    if isinstance(outcome, Failure):
        return outcome.retryable
    return outcome.status_code in RETRY_STATUSES and not getattr(outcome, "from_cache", False)


def _close_response(outcome: Outcome[requests.Response | Failure]) -> None:
    """Give a response that will not be read its connection back before the pause."""
    if isinstance(outcome.result, requests.Response):
        outcome.result.close()


def _redirected(request: HttpRequest, response: requests.Response, location: str) -> HttpRequest:
    """The request a redirect asks for: 307/308 keep method and body, others become GET."""
    url = urljoin(response.url, location)
    if response.status_code in (307, 308):
        return request._replace(url=url, params=[])
    return request._replace(method="GET", url=url, params=[], json_body=None, form_body=None)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)
