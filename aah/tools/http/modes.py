"""HTTP modes: one setting picks how tool calls are answered.

- ``live``: the real API is called.
- ``record``: the real API is called and every answer is stored.
- ``replay``: only stored answers are used; a call never recorded gets a clear
  "tool unavailable" result and the network is never touched.
- ``mock``: an answer is made up from the spec's response sketch.
- ``fault``: chosen tools fail like dead APIs; the others use a base mode.

Record and replay use requests-cache's SQLite backend (``recording.py``,
imported only by those two modes: requests-cache costs a fifth of a second to
import, and mock, the benchmark's default, never needs it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import requests

from aah.config import get_settings
from aah.errors import AahError
from aah.extensions import BASE_HTTP_MODE_NAMES, BaseHttpModeName, HttpModeName, choose, listed
from aah.tools.http.executor import HttpExecutor
from aah.tools.http.faults import FaultExecutor, FaultPlan
from aah.tools.http.mock import MockExecutor
from aah.tools.http.results import ToolResult
from aah.tools.http.transport import Resolver, resolve_host
from aah.tools.spec import EndpointSpec

# Modes that answer every call themselves; ``fault`` wraps one of them.
BaseHttpMode = BaseHttpModeName
HttpMode = HttpModeName
CACHE_FILE_NAME = "http_cache.sqlite"


class Executor(Protocol):
    """Anything that answers tool calls; every HTTP mode provides one."""

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer one call; never raises for a failed call."""
        ...

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """Answer one call without blocking the event loop."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


def default_cache_path() -> Path:
    """``<cache_dir>/http_cache.sqlite``, the store shared by record and replay."""
    return get_settings().cache_dir / CACHE_FILE_NAME


class HttpLimits(NamedTuple):
    """Timeout, retries, size cap and backoff shared by the executors of one run."""

    timeout: float
    retries: int
    max_bytes: int
    backoff: float


class ExecutorOptions(NamedTuple):
    """What an HTTP mode's factory may need besides its name."""

    limits: HttpLimits
    cache_path: Path | None = None
    fault_plan: FaultPlan | str | Sequence[str] | None = None
    base_mode: str = "mock"
    # How the address guard resolves a tool host (live and record connect).
    resolve: Resolver = resolve_host


ExecutorFactory = Callable[[ExecutorOptions], Executor]


def make_executor(
    mode: str,
    *,
    cache_path: Path | None = None,
    fault_plan: FaultPlan | str | Sequence[str] | None = None,
    base_mode: str = "mock",
    timeout: float | None = None,
    retries: int | None = None,
    max_bytes: int | None = None,
    backoff: float = 0.5,
    resolve: Resolver = resolve_host,
) -> Executor:
    """The executor for an HTTP mode (a name in :data:`HTTP_MODES`).

    Args:
        mode: One of ``live``, ``record``, ``replay``, ``mock``, ``fault``.
        cache_path: SQLite store for record/replay (default: :func:`default_cache_path`).
        fault_plan: Which tools fail and how (``fault`` mode only), e.g.
            ``"weather__forecast=404,*=timeout"``.
        base_mode: How tools outside the fault plan are answered.
        timeout: Seconds a whole call may take (default from settings).
        retries: Retries after 429/5xx/connection errors (default from settings).
        max_bytes: Response size cap (default from settings).
        backoff: First retry delay in seconds.
        resolve: How the address guard resolves a tool host (default: the
            system's resolver; a parameter for tests).

    Returns:
        An object with ``call``, ``acall`` and ``close``.

    Raises:
        AahError: Unknown mode, missing fault plan, or nothing recorded to replay.
    """
    factory = choose(HTTP_MODES, mode, "HTTP mode")
    settings = get_settings()
    limits = HttpLimits(
        timeout=settings.http_timeout if timeout is None else timeout,
        retries=settings.http_retries if retries is None else retries,
        max_bytes=settings.http_max_bytes if max_bytes is None else max_bytes,
        backoff=backoff,
    )
    return factory(ExecutorOptions(limits, cache_path, fault_plan, base_mode, resolve))


def _live_executor(options: ExecutorOptions) -> Executor:
    return _http_executor("live", options)


def _record_executor(options: ExecutorOptions) -> Executor:
    from aah.tools.http.recording import open_cache_session

    path = _cache_path(options.cache_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Always ask the API again and overwrite: a recording is a fresh snapshot.
    public_only = not get_settings().http_allow_private
    session = open_cache_session(
        path, replay=False, public_only=public_only, resolve=options.resolve
    )
    return _http_executor(
        "record", options, session=session, request_options={"force_refresh": True}
    )


def _replay_executor(options: ExecutorOptions) -> Executor:
    from aah.tools.http.recording import ReplayExecutor, open_cache_session

    path = _cache_path(options.cache_path)
    if not path.is_file():
        raise AahError(f"no recorded responses at {path}: record first with `--http record`")
    return ReplayExecutor(
        mode="replay",
        session=open_cache_session(path, replay=True),
        timeout=options.limits.timeout,
        retries=0,
        max_bytes=options.limits.max_bytes,
        allow_private=True,  # a replay never connects: there is no address to check
    )


def _mock_executor(options: ExecutorOptions) -> Executor:
    return MockExecutor(max_bytes=options.limits.max_bytes)


def _fault_executor(options: ExecutorOptions) -> Executor:
    if options.fault_plan is None:
        raise AahError("fault mode needs a fault plan: pass --fault TOOL=KIND (e.g. '*=404')")
    base_factory = next(
        (make for name, make in BASE_HTTP_MODES.items() if name == options.base_mode), None
    )
    if base_factory is None:
        raise AahError(
            f"bad base mode {options.base_mode!r} for fault mode: "
            f"use one of {listed(BASE_HTTP_MODES)}"
        )
    plan = options.fault_plan
    fault_plan = plan if isinstance(plan, FaultPlan) else FaultPlan.parse(plan)
    base = base_factory(options._replace(fault_plan=None))
    limits = options.limits
    return FaultExecutor(fault_plan, base, timeout=limits.timeout, max_bytes=limits.max_bytes)


# Every HTTP mode by name: the one place a mode is added.
HTTP_MODES: dict[HttpMode, ExecutorFactory] = {
    "live": _live_executor,
    "record": _record_executor,
    "replay": _replay_executor,
    "mock": _mock_executor,
    "fault": _fault_executor,
}
# The modes a fault plan can fall back on for the tools it leaves alone.
BASE_HTTP_MODES: dict[BaseHttpMode, ExecutorFactory] = {
    name: HTTP_MODES[name] for name in BASE_HTTP_MODE_NAMES
}


def _http_executor(
    mode: str,
    options: ExecutorOptions,
    *,
    session: requests.Session | None = None,
    request_options: Mapping[str, Any] | None = None,
) -> HttpExecutor:
    limits = options.limits
    return HttpExecutor(
        mode=mode,
        session=session,
        request_options=request_options,
        timeout=limits.timeout,
        retries=limits.retries,
        max_bytes=limits.max_bytes,
        backoff=limits.backoff,
        resolve=options.resolve,
    )


def _cache_path(cache_path: Path | None) -> Path:
    return Path(cache_path) if cache_path is not None else default_cache_path()
