"""Faults that can be switched on and off while a session runs.

``FaultExecutor`` takes its plan once, at the start. A live demo needs more:
someone breaks a tool *now*, while the agent works, and watches it cope. This
executor keeps the broken tools in a table that a user interface changes at
any moment; every call reads the table as it is when the call is made.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from aah.config import get_settings
from aah.errors import AahError
from aah.tools.http.faults import FaultExecutor, FaultKind, FaultPlan, FaultRule
from aah.tools.http.modes import Executor, make_executor
from aah.tools.http.results import ToolResult
from aah.tools.spec import EndpointSpec


class LiveFaultExecutor:
    """Breaks the tools named in a table that may change between two calls.

    A tool is named by its qualified name (``<tool>__<endpoint>``), its tool
    name (every endpoint of it) or a shell pattern, as in a fault plan. Calls
    to tools that are not broken go to the base executor.

    Args:
        base: The executor for working tools (mock, live, replay...).
        faults: Tools broken from the start.
        timeout: The timeout a ``timeout`` fault reports, as a real one would.
        max_bytes: Size cap for fault bodies, as for real ones.
    """

    mode = "fault"

    def __init__(
        self,
        base: Executor,
        faults: Mapping[str, FaultKind] | None = None,
        *,
        timeout: float = 10.0,
        max_bytes: int = 200_000,
    ) -> None:
        self._lock = threading.Lock()
        self._faults: dict[str, FaultKind] = dict(faults or {})
        self._inner = FaultExecutor(_plan(self._faults), base, timeout=timeout, max_bytes=max_bytes)

    @property
    def base(self) -> Executor:
        """The executor that answers calls to working tools."""
        return self._inner.base

    @property
    def faults(self) -> dict[str, FaultKind]:
        """A copy of the table: tool name → how it fails."""
        with self._lock:
            return dict(self._faults)

    def break_tool(self, name: str, kind: FaultKind) -> None:
        """Make ``name`` fail as ``kind`` from the next call on."""
        with self._lock:
            self._faults[name] = kind
            self._publish()

    def fix_tool(self, name: str) -> None:
        """Let ``name`` work again (nothing happens if it was not broken)."""
        with self._lock:
            self._faults.pop(name, None)
            self._publish()

    def fix_all(self) -> None:
        """Let every tool work again."""
        with self._lock:
            self._faults.clear()
            self._publish()

    def _publish(self) -> None:
        # One assignment swaps the whole plan, so a call running in another
        # thread sees either the old table or the new one, never half of each.
        self._inner.plan = _plan(self._faults)

    def call(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """A fault if ``spec`` is broken right now, else the base executor's answer."""
        return self._inner.call(spec, arguments)

    async def acall(self, spec: EndpointSpec, arguments: Mapping[str, Any]) -> ToolResult:
        """The asynchronous :meth:`call`."""
        return await self._inner.acall(spec, arguments)

    def close(self) -> None:
        """Close the base executor."""
        self._inner.close()


def _plan(faults: Mapping[str, FaultKind]) -> FaultPlan:
    return FaultPlan(tuple(FaultRule(name, kind) for name, kind in faults.items()))


def live_fault_executor(
    base_mode: str = "mock", faults: Mapping[str, FaultKind] | None = None
) -> LiveFaultExecutor:
    """A switchable executor over the HTTP mode ``base_mode``, with the configured limits.

    Raises:
        AahError: ``base_mode`` is unknown, or is ``fault`` itself.
    """
    if base_mode == "fault":
        raise AahError("live faults need a working base mode: use mock, live, record or replay")
    settings = get_settings()
    return LiveFaultExecutor(
        make_executor(base_mode),
        faults,
        timeout=settings.http_timeout,
        max_bytes=settings.http_max_bytes,
    )
