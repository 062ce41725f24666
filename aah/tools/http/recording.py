"""Record and replay: requests-cache's SQLite backend under a scrubbing serializer.

The cache key covers the method, the URL with its query, the JSON body and
the headers the call set itself (auth headers and key-like query parameters
are left out of both the key and the stored copy). Every stored response,
with its request, passes through the one scrubber of ``aah.secrets`` before
it is written, so no credential (a key in a URL path, a custom auth header, a
token the API echoes) reaches the file. Redirect hops are stored one by one,
so a replay follows the same chain.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import requests
from requests.adapters import BaseAdapter
from requests_cache import DEFAULT_IGNORED_PARAMS, NEVER_EXPIRE, CachedSession, create_key
from requests_cache.backends.sqlite import SQLiteCache
from requests_cache.serializers import SerializerPipeline, Stage
from requests_cache.serializers.preconf import base_stage

from aah.secrets import scrub_tree
from aah.tools.http.executor import RETRY_STATUSES, HttpExecutor, mount_pool
from aah.tools.http.results import ToolResult
from aah.tools.http.transport import Resolver, resolve_host
from aah.tools.spec import EndpointSpec

# Answers worth replaying: final ones. Transient failures (408, 429, 5xx) are
# not stored, so a retry that succeeds is what ends up in the cache.
RECORDABLE_STATUSES = tuple(s for s in range(200, 500) if s not in RETRY_STATUSES | {408})
# Credentials kept out of cache keys and redacted from stored copies, so a
# recording can be shared. Names match exactly, hence the spelling variants.
_SECRET_NAMES = (
    *DEFAULT_IGNORED_PARAMS,
    "X-RapidAPI-Key",
    "apiKey",
    "api-key",
    "appid",
    "access_key",
)
SECRET_PARAMETERS = tuple(dict.fromkeys([*_SECRET_NAMES, *(n.lower() for n in _SECRET_NAMES)]))
# Headers the transport sets the same way on every call; they stay out of the key.
_TRANSPORT_HEADERS = frozenset(
    {"accept", "accept-encoding", "cache-control", "connection", "content-length"}
    | {"content-type", "user-agent"}
)


def cache_key(request: Any, **kwargs: Any) -> str:
    """requests-cache's key, matching on the headers the call itself chose.

    The default key ignores headers; header parameters can change an API's
    answer, so every header but the transport's own is matched.
    """
    chosen = [name for name in request.headers if name.lower() not in _TRANSPORT_HEADERS]
    kwargs["match_headers"] = chosen or False
    return str(create_key(request, **kwargs))


# requests-cache's pickle serializer with a scrubbing stage between turning a
# response into plain data and pickling it; loading needs no stage back.
SCRUBBING_SERIALIZER = SerializerPipeline(
    [base_stage, Stage(dumps=scrub_tree, loads=lambda value: value), Stage(pickle)],
    name="scrubbed-pickle",
    is_binary=True,
)


class _OfflineAdapter(BaseAdapter):
    """Refuses every request: replay must never reach the network."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        raise requests.ConnectionError(f"network disabled in replay mode ({request.url})")

    def close(self) -> None:
        return None


def open_cache_session(
    path: Path, *, replay: bool, public_only: bool = False, resolve: Resolver = resolve_host
) -> CachedSession:
    """A requests-cache session over the SQLite file at ``path``.

    Args:
        path: The SQLite file (created for recording).
        replay: Read-only and cache-only: a miss is a 504 "Not Cached" answer
            made by requests-cache, and the transport refuses to connect.
        public_only: Recording connects only to public addresses, checked
            here, never through a proxy (as a live call does).
        resolve: How the address guard resolves a host.

    Returns:
        The session; responses never expire.
    """
    session = CachedSession(
        backend=SQLiteCache(path, serializer=SCRUBBING_SERIALIZER),
        expire_after=NEVER_EXPIRE,
        allowable_codes=RECORDABLE_STATUSES,
        allowable_methods=("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"),
        key_fn=cache_key,
        ignored_parameters=SECRET_PARAMETERS,
        only_if_cached=replay,
        read_only=replay,
    )
    if replay:
        session.mount("http://", _OfflineAdapter())
        session.mount("https://", _OfflineAdapter())
        # Proxy and netrc lookups scan the environment on every request (about a
        # third of a replay hit's cost) and mean nothing without a network.
        session.trust_env = False
    else:
        mount_pool(session, pool_size=16, public_only=public_only, resolve=resolve)
    return session


class ReplayExecutor(HttpExecutor):
    """Answers only from recorded responses; a miss says the tool is unavailable."""

    def _check_response(
        self, spec: EndpointSpec, response: requests.Response, started: float
    ) -> ToolResult | None:
        # We never store a 5xx, so a cached 504 can only be requests-cache's miss answer.
        if getattr(response, "from_cache", False) and response.status_code == 504:
            message = f"tool unavailable: no recorded response for {spec.qualified_name}"
            latency = round((time.perf_counter() - started) * 1000.0, 3)
            return ToolResult(
                ok=False,
                text=message,
                error=message,
                url=response.url,
                latency_ms=latency,
                mode=self.mode,
            )
        return None
